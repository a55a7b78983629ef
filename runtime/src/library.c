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

blinkResult_t bk_pick_plan(const struct blink_plan_library *lib, int n, const int *topo_dev,
                           const int *group, int ngroups, const struct blink_plan **plan,
                           int *plan_of)
{
    char got[256], want[256];
    if (!lib || lib->abi != BLINK_PLAN_ABI || lib->nplans < 1 || !lib->plans || !lib->plans[0])
        return bk_error(blinkInvalidUsage, "blinkCommInitRank: the generated plan library is "
                        "missing or was built for another runtime (ABI %d, runtime %d)",
                        lib ? lib->abi : -1, BLINK_PLAN_ABI);
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
        if (match(lib->plans[k], n, topo_dev, group, ngroups, plan_of)) {
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
