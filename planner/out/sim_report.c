/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * sim_report.c - the --simulate table (see sim_report.h).
 */
#include "out/sim_report.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/collective.h"
#include "tune/plan_tune.h"

void sim_report_opts_default(struct sim_report_opts *o)
{
    o->min_bytes = (size_t)1 << 20;
    o->max_bytes = (size_t)256 << 20;
    o->factor = 4;
    sim_params_default(&o->params);
}

int sim_params_set(struct sim_params *p, const char *kv, const char **why)
{
    const struct {
        const char *key;
        double *at;
    } keys[] = {
        {"call", &p->call_us},
        {"eff-volta", &p->eff[0]},
        {"eff-ampere", &p->eff[1]},
        {"eff-hopper", &p->eff[2]},
        {"eff-blackwell", &p->eff[3]},
        {"alpha-nvlink", &p->alpha_us[TOPO_NVLINK]},
        {"alpha-pcie", &p->alpha_us[TOPO_PCIE]},
        {"alpha-smp", &p->alpha_us[TOPO_SMP]},
        {"alpha-net", &p->alpha_us[TOPO_NET]},
        {"launch", &p->launch_us},
        {"step", &p->step_us},
        {"ll-step", &p->ll_step_us},
        {"reduce-gbps", &p->reduce_gbps},
        {"nccl-launch", &p->nccl_launch_us},
        {"nccl-step-nvlink", &p->nccl_step_us[TOPO_NVLINK]},
        {"nccl-step-pcie", &p->nccl_step_us[TOPO_PCIE]},
        {"nccl-step-smp", &p->nccl_step_us[TOPO_SMP]},
        {"nccl-step-net", &p->nccl_step_us[TOPO_NET]},
        {"nccl-latency-scale", &p->nccl_lat_scale},
        {"nccl-nvls-eff", &p->nccl_nvls_eff},
    };
    const char *eq = strchr(kv, '=');
    if (!eq) {
        *why = "expected KEY=VALUE";
        return 0;
    }
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (strlen(keys[i].key) != (size_t)(eq - kv) || strncmp(kv, keys[i].key, (size_t)(eq - kv)))
            continue;
        char *end;
        errno = 0;
        double v = strtod(eq + 1, &end);
        int rate = keys[i].at == &p->reduce_gbps;
        int fraction = keys[i].at == &p->nccl_nvls_eff ||
                       (keys[i].at >= p->eff && keys[i].at < p->eff + SIM_GENERATIONS);
        if (errno || end == eq + 1 || *end || !(v >= 0 && v <= 1e6) || (rate && v <= 0) ||
            (fraction && !(v > 0 && v <= 1))) {
            *why = rate       ? "the value is not a rate above 0 GB/s"
                   : fraction ? "the value is not a fraction above 0 and at most 1"
                              : "the value is not 0 to 1e6";
            return 0;
        }
        *keys[i].at = v;
        return 1;
    }
    *why = "unknown parameter (call, eff-volta, eff-ampere, eff-hopper, eff-blackwell, "
           "alpha-nvlink, alpha-pcie, alpha-smp, alpha-net, launch, step, ll-step, reduce-gbps, "
           "nccl-launch, nccl-step-nvlink, nccl-step-pcie, nccl-step-smp, nccl-step-net, "
           "nccl-latency-scale, nccl-nvls-eff)";
    return 0;
}

static void put_header(struct strbuf *sb, const struct plan_set *ps,
                       const struct sim_report_opts *o)
{
    const struct sim_params *p = &o->params;
    const struct topo *t = ps->topo;
    sb_printf(sb, "# blinkc --simulate: %d GPUs, flow-level model (blinkc(1), SIMULATION)\n",
              t->ngpus);
    sb_puts(sb, "# ranks:");
    for (int r = 0; r < t->ngpus; r++)
        sb_printf(sb, " %d=%s", r, t->nodes[topo_gpu_node(t, r)].id);
    sb_putc(sb, '\n');
    sb_printf(sb, "# both: call %g us of host work per call; copy efficiency (of a link's "
                  "rate): volta %.3f ampere %.3f hopper %.3f blackwell %.3f\n",
              p->call_us, p->eff[0], p->eff[1], p->eff[2], p->eff[3]);
    sb_printf(sb, "# trees: alpha us nvlink %g pcie %g smp %g net %g; launch %g us per call; "
                  "step %g us per chunk and edge (LL %g, at twice the bytes); reduce %g GB/s\n",
              p->alpha_us[TOPO_NVLINK], p->alpha_us[TOPO_PCIE], p->alpha_us[TOPO_SMP],
              p->alpha_us[TOPO_NET], p->launch_us, p->step_us, p->ll_step_us, p->reduce_gbps);
    sb_printf(sb, "# NCCL (its own cost model, calibrated): its latencies x %g; NVLS %.3f of a "
                  "GPU's NVLink rate\n",
              p->nccl_lat_scale, p->nccl_nvls_eff);
    sb_puts(sb, "# sizes in bytes (nccl-tests' S), times in us, bandwidths in GB/s; algo: what the "
                "plan runs at this size (trees, ll for trees on the LL protocol, hyb for the NVLink "
                "and PCIe trees together, or nccl where rings win), time_us its time, "
                "tree_time_us the trees' at the plan's chunk; speedup = NCCL's faster time / "
                "time_us\n");
    /* The last header line names the columns, aligned over them. */
    sb_printf(sb, "#%11s %14s %5s %5s %9s %12s %9s %9s %12s %12s %10s %12s %8s\n", "size",
              "collective", "root", "algo", "chunk", "time_us", "algbw", "busbw", "tree_time_us",
              "ring_time_us", "ring_algbw", "dbt_time_us", "speedup");
}

BK_MUST_USE
static enum bk_status put_row(struct strbuf *sb, const struct plan_set *ps, const struct plan *pl,
                              double bytes, const struct sim_report_opts *o, struct diag *d)
{
    struct sim_job j;
    size_t chunk;
    double tree_us;
    /* At the plan's chunk for this size where it was tuned; else the best chunk here. */
    const struct plan_range *pr = plan_range_at(pl, bytes);
    int hybrid = pr && pr->algo == PLAN_ALGO_HYBRID;
    struct ptree_set both;
    ptree_set_init(&both);
    sim_job_plan(&j, ps, pl);
    if (hybrid) { /* both tree sets, as the runtime runs them in this range */
        BK_CHECK(plan_hybrid_set(ps, pl, &j.g, &both));
        j.trees = &both;
    }
    enum bk_status st;
    if (pr) {
        chunk = pr->chunk_bytes;
        j.proto = pr->proto == PLAN_PROTO_LL ? SIM_LL : SIM_SIMPLE;
        st = sim_run(&j, bytes, chunk, &o->params, &tree_us, d);
    } else {
        st = sim_best_chunk(&j, bytes, &o->params, &chunk, &tree_us, d);
    }
    ptree_set_free(&both);
    BK_CHECK(st);
    struct sim_nccl nc;
    BK_CHECK(sim_rings(ps, pl->coll, bytes, &o->params, &nc, d));
    /* The dbt_time_us column: NCCL's tree, or NVLS where it is faster. */
    double ring_us = nc.ring_us, nccl = nc.best_us;
    double dbt_us = nc.nvls_us > 0 && (nc.dbt_us <= 0 || nc.nvls_us < nc.dbt_us) ? nc.nvls_us
                                                                                 : nc.dbt_us;
    int rings = pr && pr->algo == PLAN_ALGO_RINGS;
    double us = rings ? nccl : tree_us;
    double algbw = bytes / us / 1e3, n = ps->topo->ngpus;
    sb_printf(sb, "%12.0f %14s ", bytes, collective_name(pl->coll));
    if (pl->root >= 0)
        sb_printf(sb, "%5d ", pl->root);
    else
        sb_printf(sb, "%5s ", "-");
    sb_printf(sb, "%5s %9zu %12.2f %9.2f %9.2f %12.2f %12.2f %10.2f ",
              rings ? "nccl" : hybrid ? "hyb" : j.proto == SIM_LL ? "ll" : "trees",
              chunk, us, algbw, algbw * sim_bus_factor(pl->coll, (int)n), tree_us, ring_us,
              bytes / ring_us / 1e3);
    if (dbt_us > 0)
        sb_printf(sb, "%12.2f ", dbt_us);
    else
        sb_printf(sb, "%12s ", "-");
    sb_printf(sb, "%8.3f\n", nccl / us);
    return BK_OK;
}

enum bk_status sim_report(struct strbuf *sb, const struct plan_set *ps,
                          const struct sim_report_opts *o, struct diag *d)
{
    put_header(sb, ps, o);
    enum bk_status st = BK_OK;
    for (int i = 0; st == BK_OK && i < ps->n; i++)
        for (double b = (double)o->min_bytes; st == BK_OK && b <= (double)o->max_bytes;
             b *= o->factor) {
            st = put_row(sb, ps, &ps->v[i], b, o, d);
            if (b <= 0)
                break; /* a zero size never grows */
        }
    return st;
}
