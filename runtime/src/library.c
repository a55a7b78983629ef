/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * library.c - choosing a plan from a generated source's library by the set of devices a job
 * was given, in whatever order its ranks hold them, and relabelling the ranks onto the plan's.
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

/* plan_of[r] = the plan rank on topo_dev[r], if p's devices are exactly that set. */
static int match(const struct blink_plan *p, int n, const int *topo_dev, int *plan_of)
{
    if (!p || p->nranks != n || !p->devices)
        return 0;
    for (int r = 0; r < n; r++) {
        plan_of[r] = -1;
        for (int q = 0; q < n; q++)
            if (p->devices[q] == topo_dev[r])
                plan_of[r] = q;
        if (plan_of[r] < 0)
            return 0;
    }
    return 1;
}

blinkResult_t bk_pick_plan(const struct blink_plan_library *lib, int n, const int *topo_dev,
                           const struct blink_plan **plan, int *plan_of)
{
    char got[256], want[256];
    if (!lib || lib->abi != BLINK_PLAN_ABI || lib->nplans < 1 || !lib->plans || !lib->plans[0])
        return bk_error(blinkInvalidUsage, "blinkCommInitRank: the generated plan library is "
                        "missing or was built for another runtime (ABI %d, runtime %d)",
                        lib ? lib->abi : -1, BLINK_PLAN_ABI);
    *plan = NULL;
    for (int r = 0; r < n; r++)
        for (int q = 0; q < r; q++)
            if (topo_dev[q] == topo_dev[r]) {
                bk_error(blinkInvalidUsage, "blinkCommInitRank: ranks %d and %d are both device "
                         "%d (give each rank its own device, or set BLINK_DEVICE to the device "
                         "of the plan each rank plays)", q, r, topo_dev[r]);
                return blinkSuccess;
            }
    for (int k = 0; k < lib->nplans; k++)
        if (match(lib->plans[k], n, topo_dev, plan_of)) {
            *plan = lib->plans[k];
            return blinkSuccess;
        }
    const struct blink_plan *p0 = lib->plans[0];
    const char *topo = p0->topology ? p0->topology : "?";
    list(got, sizeof got, topo_dev, n);
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
