/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * figures_cluster.c - Figure 9b: allreduce across servers as the cross-server bandwidth
 * varies, blinkc's three phases against NCCL's rings and double binary trees.
 *
 * The clusters are gen_cluster.h's. DGX-1V (Figure 9b itself): four NICs per server, each
 * behind a PCIe switch with two GPUs; only the NICs' line rate changes, and the NIC's own PCIe
 * slot is given the same rate so the port and not its slot is what varies. The GPUs' PCIe Gen3
 * x16 links (12 GB/s, two GPUs per switch) stay, so above about 24 GB/s per NIC the servers'
 * PCIe, not the network, limits. HGX H100 (its extension): eight NICs per server, one per PCIe
 * Gen5 switch beside one GPU; the NICs' line rate changes and everything else is the server's,
 * so a NIC moves at most its Gen5 x16 slot's 48 GB/s.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "alloc_util.h"
#include "figures.h"
#include "gen_cluster.h"
#include "plan/plan.h"

/*
 * Best-chunk time in us over sim_best_chunk's sizes, searched from the largest down and stopped
 * once a size is over 2% slower than the best so far: time against chunk size falls while
 * pipelining gains and rises once launches dominate (with small bumps, hence the margin), and
 * the small chunks are the costly ones to simulate (16 ranks at 100 Gb/s: about 7 s of CPU for
 * the full scan, 2 s this way). min_chunk > 0 also stops the search there (a floor, for
 * clusters where the smallest sizes take the simulator too long); *chunk gets the best size.
 * For double binary trees NCCL could not build, *us = 0.
 */
static int best_time(const struct sim_job *j, double bytes, size_t min_chunk,
                     const struct sim_params *p, double *us, size_t *chunk, struct strbuf *err)
{
    size_t lo = SIM_CHUNK_MIN, hi = SIM_CHUNK_MIN;
    while (hi < SIM_CHUNK_MAX && (double)hi < bytes)
        hi *= 2;
    while (lo < hi && ((double)lo * SIM_MAX_CHUNKS < bytes || lo < min_chunk))
        lo *= 2;
    struct diag d;
    diag_init(&d);
    enum bk_status st = BK_OK;
    *us = INFINITY;
    *chunk = 0;
    for (size_t c = hi; c >= lo; c /= 2) {
        double t;
        st = sim_run(j, bytes, c, p, &t, &d);
        if (st != BK_OK || t > *us * 1.02)
            break;
        if (t < *us)
            *chunk = c;
        *us = fmin(*us, t);
    }
    if (st == BK_EUSAGE && j->algo == SIM_DBT) {
        *us = 0;
        *chunk = 0;
        st = BK_OK;
    } else if (st != BK_OK) {
        sb_printf(err, "simulating: %s\n", diag_first_error(&d));
    }
    diag_free(&d);
    return st == BK_OK;
}

int fig9_kind_point(enum gen_server kind, int servers, double nic_gbps, double bytes,
                    int simulate, size_t min_chunk, const struct sim_params *p,
                    struct fig9_row *row, struct strbuf *err)
{
    struct strbuf text;
    sb_init(&text);
    gen_cluster(&text, kind, servers, nic_gbps);
    struct topo t;
    char label[32];
    snprintf(label, sizeof label, "%dx-%s", servers, gen_server_name(kind));
    int ok = alloc_read_text(label, text.data, text.len, NULL, &t);
    sb_free(&text);
    if (!ok) {
        sb_printf(err, "cannot read the generated %d-server %s cluster\n", servers,
                  gen_server_name(kind));
        return 0;
    }
    struct plan_opts o;
    plan_opts_default(&o);
    o.collectives = 1u << COLL_ALLREDUCE;
    struct plan_set ps;
    struct diag d;
    diag_init(&d);
    ok = plan_all(&t, &o, &ps, &d) == BK_OK && ps.n == 1;
    if (!ok)
        sb_printf(err, "planning allreduce on %d %s servers: %s\n", servers,
                  gen_server_name(kind), diag_first_error(&d));
    diag_free(&d);
    if (!ok) {
        topo_free(&t);
        return 0;
    }
    const struct plan *pl = &ps.v[0];
    memset(row, 0, sizeof *row);
    row->kind = kind;
    row->servers = servers;
    row->nics = servers * gen_server_nics(kind);
    row->gpus = t.ngpus;
    row->nic_gbps = nic_gbps;
    row->simulated = simulate;
    row->min_chunk = simulate ? min_chunk : 0;
    row->plan_gbps = pl->main.algbw;
    row->plan_ring_gbps = pl->ring_algbw;
    if (simulate) {
        struct sim_job j;
        double tree_us, ring_us, dbt_us;
        sim_job_plan(&j, &ps, pl);
        ok = best_time(&j, bytes, min_chunk, p, &tree_us, &row->trees_chunk, err);
        sim_job_rings(&j, &ps, COLL_ALLREDUCE, -1, SIM_RING);
        ok = ok && best_time(&j, bytes, min_chunk, p, &ring_us, &row->ring_chunk, err);
        sim_job_rings(&j, &ps, COLL_ALLREDUCE, -1, SIM_DBT);
        ok = ok && best_time(&j, bytes, min_chunk, p, &dbt_us, &row->dbt_chunk, err);
        if (ok) {
            double nccl = dbt_us > 0 && dbt_us < ring_us ? dbt_us : ring_us;
            row->trees_gbps = bytes / tree_us / 1e3;
            row->ring_gbps = bytes / ring_us / 1e3;
            row->dbt_gbps = dbt_us > 0 ? bytes / dbt_us / 1e3 : 0;
            row->speedup = nccl / tree_us;
            row->speedup_ring = ring_us / tree_us;
            row->speedup_dbt = dbt_us / tree_us;
        }
    } else {
        /* The fluid model: the plans' own rates, NCCL's as its rings. */
        row->trees_gbps = row->plan_gbps;
        row->ring_gbps = row->plan_ring_gbps;
        row->speedup = row->ring_gbps > 0 ? row->trees_gbps / row->ring_gbps : 0;
        row->speedup_ring = row->speedup;
    }
    plan_set_free(&ps);
    topo_free(&t);
    return ok;
}

int fig9_point(int servers, double nic_gbps, double bytes, int simulate,
               const struct sim_params *p, struct fig9_row *row, struct strbuf *err)
{
    return fig9_kind_point(GEN_DGX1V, servers, nic_gbps, bytes, simulate, 0, p, row, err);
}
