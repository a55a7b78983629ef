/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * library.c - choosing a plan from a generated source's library by the devices a job was given.
 */
#include <stdio.h>
#include <string.h>

#include "rt.h"

static int matches(const struct blink_plan *p, int ndev, const int *devlist)
{
    if (!p || p->nranks != ndev)
        return 0;
    for (int i = 0; i < ndev; i++)
        if (p->devices[i] != (devlist ? devlist[i] : i))
            return 0;
    return 1;
}

blinkResult_t blinkrtCommInitAllFrom(const struct blink_plan_library *lib, blinkComm_t *comms,
                                     int ndev, const int *devlist)
{
    if (!lib || lib->abi != BLINK_PLAN_ABI || lib->nplans < 1 || !lib->plans)
        return bk_error(blinkInvalidArgument, "blinkCommInitAll: the generated plan library is "
                        "missing or was built for another runtime (ABI %d, runtime %d)",
                        lib ? lib->abi : -1, BLINK_PLAN_ABI);
    if (lib->nplans == 1)
        return blinkrtCommInitAll(lib->plans[0], comms, ndev, devlist);
    for (int k = 0; k < lib->nplans; k++)
        if (matches(lib->plans[k], ndev, devlist))
            return blinkrtCommInitAll(lib->plans[k], comms, ndev, devlist);
    char got[256] = "";
    size_t used = 0;
    for (int i = 0; i < ndev && used + 16 < sizeof got; i++)
        used += (size_t)snprintf(got + used, sizeof got - used, "%s%d", i ? "," : "",
                                 devlist ? devlist[i] : i);
    return bk_error(blinkInvalidUsage, "blinkCommInitAll: none of the %d plans for topology "
                    "'%s' is for devices %s in this order (plans cover every connected set of "
                    "devices, listed in ascending order)",
                    lib->nplans, lib->plans[0] && lib->plans[0]->topology
                                     ? lib->plans[0]->topology : "?", got);
}
