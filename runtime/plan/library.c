/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * library.c - choosing a plan from a generated source's library by the set of devices a job
 * was given (on each of its servers), in whatever order its ranks hold them, and relabelling
 * the ranks onto the plan's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static void list(char *buf, size_t len, const int *v, int n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && at + 16 < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%d", i ? "," : "", v[i]);
    if (n > 0 && at + 16 >= len)
        snprintf(buf + at, len - at, ",...");
}

/* Whether server s of plan p has exactly the devices of the user ranks in group g. */
static int same_devices(const struct blink_plan *p, int s, int n, const int *topo_dev,
                        const int *group, int g)
{
    int mine = 0, theirs = 0;
    for (int r = 0; r < n; r++)
        if (group[r] == g) {
            mine++;
            int found = 0;
            for (int q = 0; q < p->nranks && !found; q++)
                found = (p->servers ? p->servers[q] : 0) == s && p->devices[q] == topo_dev[r];
            if (!found)
                return 0;
        }
    for (int q = 0; q < p->nranks; q++)
        theirs += (p->servers ? p->servers[q] : 0) == s;
    return mine == theirs;
}

/* plan_of[r] = the plan rank of user rank r, if p's servers and devices are exactly the ranks'
 * groups and devices: each group (0..ngroups-1) plays the first server left whose devices are
 * its own (identical servers are interchangeable). */
static int match(const struct blink_plan *p, int n, const int *topo_dev, const int *group,
                 int ngroups, int *plan_of)
{
    int nservers = p && p->nservers > 1 ? p->nservers : 1;
    if (!p || p->nranks != n || !p->devices || ngroups != nservers)
        return 0;
    int server_of[BK_MAX_SERVERS];
    unsigned char taken[BK_MAX_SERVERS] = {0};
    for (int g = 0; g < ngroups; g++) {
        server_of[g] = -1;
        for (int s = 0; s < nservers && server_of[g] < 0; s++)
            if (!taken[s] && same_devices(p, s, n, topo_dev, group, g))
                server_of[g] = s;
        if (server_of[g] < 0)
            return 0;
        taken[server_of[g]] = 1;
    }
    for (int r = 0; r < n; r++) {
        plan_of[r] = -1;
        for (int q = 0; q < n; q++)
            if ((p->servers ? p->servers[q] : 0) == server_of[group[r]] &&
                p->devices[q] == topo_dev[r])
                plan_of[r] = q;
    }
    return 1;
}

/* blocks[0..nblocks): the blocks of the server that hold devices of the set, most first
 * (ties: lower block first), held[b] of them in block b. Returns nblocks. */
static int sorted_blocks(const int *held, int nb, int *blocks)
{
    int k = 0;
    for (int b = 0; b < nb; b++) {
        if (!held[b])
            continue;
        int at = k++;
        for (; at > 0 && held[blocks[at - 1]] < held[b]; at--)
            blocks[at] = blocks[at - 1];
        blocks[at] = b;
    }
    return k;
}

/* Where a library by classes has p for the devices topo_dev[n] (one server): the job's i-th
 * block by count plays p's i-th, its devices in ascending order p's in ascending order. */
static int match_class(const struct blink_plan_library *lib, const struct blink_plan *p, int n,
                       const int *topo_dev, int *plan_of)
{
    int nd = lib->ndevices;
    if (!p || p->nranks != n || !p->devices || p->nservers > 1)
        return 0;
    /* [nd] each: block counts of the job and of p, then sorted blocks, then device -> rank */
    int *mem = malloc(6 * (size_t)nd * sizeof *mem), ok = mem != NULL;
    int *held_j = mem, *held_p = mem + nd, *bj = mem + 2 * nd, *bp = mem + 3 * nd;
    int *rank_j = mem + 4 * nd, *rank_p = mem + 5 * nd;
    for (int d = 0; ok && d < nd; d++) {
        held_j[d] = held_p[d] = 0;
        rank_j[d] = rank_p[d] = -1;
    }
    for (int r = 0; ok && r < n; r++) {
        int dj = topo_dev[r], dp = p->devices[r];
        ok = dj >= 0 && dj < nd && dp >= 0 && dp < nd && rank_p[dp] < 0;
        if (ok) {
            held_j[lib->block[dj]]++;
            held_p[lib->block[dp]]++;
            rank_j[dj] = r;
            rank_p[dp] = r;
        }
    }
    int nbj = ok ? sorted_blocks(held_j, nd, bj) : 0, nbp = ok ? sorted_blocks(held_p, nd, bp) : 0;
    ok = ok && nbj == nbp;
    for (int i = 0; ok && i < nbj; i++) {
        ok = held_j[bj[i]] == held_p[bp[i]];
        for (int dj = 0, dp = 0; ok; dj++, dp++) {
            while (dj < nd && !(lib->block[dj] == bj[i] && rank_j[dj] >= 0))
                dj++;
            while (dp < nd && !(lib->block[dp] == bp[i] && rank_p[dp] >= 0))
                dp++;
            if (dj >= nd || dp >= nd)
                break;
            plan_of[rank_j[dj]] = rank_p[dp];
        }
    }
    free(mem);
    return ok;
}

/* A library by classes names a block in [0, ndevices) for each of its ndevices devices. */
static int classes_sound(const struct blink_plan_library *lib)
{
    if (!lib->block)
        return 1;
    if (lib->ndevices < 1)
        return 0;
    for (int d = 0; d < lib->ndevices; d++)
        if (lib->block[d] < 0 || lib->block[d] >= lib->ndevices)
            return 0;
    return 1;
}

blinkResult_t bk_pick_plan(const struct blink_plan_library *lib, int n, const int *topo_dev,
                           const int *group, int ngroups, const struct blink_plan **plan,
                           int *plan_of)
{
    char got[256], want[256];
    if (!lib || lib->abi != BLINK_PLAN_ABI || lib->nplans < 1 || !lib->plans || !lib->plans[0])
        return bk_error(blinkInvalidUsage, "blinkCommInitRank: the generated plan library is "
                        "missing or was built for another runtime (ABI %d, runtime %d)",
                        lib ? lib->abi : -1, BLINK_PLAN_ABI);
    if (!classes_sound(lib))
        return bk_error(blinkInvalidUsage, "blinkCommInitRank: the generated plan library's "
                        "blocks of devices are not numbered within its %d devices",
                        lib->ndevices);
    *plan = NULL;
    for (int r = 0; r < n; r++)
        for (int q = 0; q < r; q++)
            if (topo_dev[q] == topo_dev[r] && group[q] == group[r]) {
                bk_error(blinkInvalidUsage, "blinkCommInitRank: ranks %d and %d are both device "
                         "%d%s (give each rank its own device, or set BLINK_DEVICE to the device "
                         "of the plan each rank plays)", q, r, topo_dev[r],
                         ngroups > 1 ? " of one server" : "");
                return blinkSuccess;
            }
    if (ngroups > BK_MAX_SERVERS)
        return bk_error(blinkInvalidUsage, "blinkCommInitRank: the ranks are on %d servers; "
                        "this runtime plans at most %d", ngroups, BK_MAX_SERVERS);
    for (int k = 0; k < lib->nplans; k++)
        if (lib->block ? ngroups == 1 && match_class(lib, lib->plans[k], n, topo_dev, plan_of)
                       : match(lib->plans[k], n, topo_dev, group, ngroups, plan_of)) {
            *plan = lib->plans[k];
            return blinkSuccess;
        }
    const struct blink_plan *p0 = lib->plans[0];
    const char *topo = p0->topology ? p0->topology : "?";
    list(got, sizeof got, topo_dev, n);
    int p0_servers = p0->nservers > 1 ? p0->nservers : 1;
    if (lib->nplans == 1 && p0_servers != ngroups) {
        bk_error(blinkInvalidUsage, "blinkCommInitRank: the plan for topology '%s' "
                 "(fingerprint %s) is for %d server%s; the ranks are on %d (ranks share a "
                 "server when their BLINK_SERVER, else their host name, is the same)", topo,
                 p0->fingerprint ? p0->fingerprint : "?", p0_servers,
                 p0_servers == 1 ? "" : "s", ngroups);
        return blinkSuccess;
    }
    if (lib->nplans == 1) {
        list(want, sizeof want, p0->devices, p0->nranks);
        bk_error(blinkInvalidUsage, "blinkCommInitRank: the plan for topology '%s' "
                 "(fingerprint %s) was compiled for %d ranks on devices %s; the ranks are on "
                 "devices %s (compile a plan for this allocation, or set BLINK_DEVICE)",
                 topo, p0->fingerprint ? p0->fingerprint : "?", p0->nranks, want, got);
        return blinkSuccess;
    }
    bk_error(blinkInvalidUsage, "blinkCommInitRank: none of the %d plans for topology '%s' is "
             "for devices {%s} (plans cover every connected set of devices)", lib->nplans, topo,
             got);
    return blinkSuccess;
}
