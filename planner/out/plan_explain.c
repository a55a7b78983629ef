/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_explain.c - the --explain table: what each plan achieves against its bound and rings,
 * how the solver stages got there, and every tree.
 */
#include "out/plan_explain.h"

#include <stdio.h>

#include "out/sim_report.h"
#include "topo/topo_rates.h"

static const char *kinds_text(unsigned kinds)
{
    if (kinds == PG_NVLINK)
        return "NVLink";
    if (kinds == PG_PCIE_TIER)
        return "PCIe and CPU links";
    return "every link kind";
}

static void put_root(struct strbuf *sb, const struct plan_set *ps, const struct plan *p)
{
    sb_printf(sb, "%-7s", p->root >= 0 ? ps->topo->nodes[p->root].id : "-");
}

/* b in binary units: the scaled value, and 0..3 for B, Ki, Mi, Gi in *unit. */
static double binary_scaled(double b, int *unit)
{
    for (*unit = 0; *unit < 3 && b >= 1024; (*unit)++)
        b /= 1024;
    return b;
}

/* A size as nccl-tests prints its arguments: 0, 64K, 1.5M, 1G. */
static void put_short_size(struct strbuf *sb, double b)
{
    int u;
    b = binary_scaled(b, &u);
    sb_printf(sb, "%g%s", b, (const char *[]){"", "K", "M", "G"}[u]);
}

/* What the generated code runs, by message size: the tuned ranges with neighbours of one
 * algorithm and protocol merged ("trees LL to 256K, trees to 8M, NCCL from 8M"). */
static void put_runs(struct strbuf *sb, const struct plan_set *ps, const struct plan *p)
{
    if (p->tune.n == 0) {
        sb_puts(sb, ps->cluster ? "trees (clusters are not tuned yet)" : "trees (not tuned)");
        return;
    }
    for (int i = 0; i < p->tune.n;) {
        enum plan_algo a = p->tune.r[i].algo;
        enum plan_proto pr = p->tune.r[i].proto;
        int j = i;
        while (j < p->tune.n && p->tune.r[j].algo == a &&
               (a == PLAN_ALGO_RINGS || p->tune.r[j].proto == pr))
            j++;
        const char *name = a == PLAN_ALGO_RINGS    ? "NCCL"
                           : a == PLAN_ALGO_HYBRID ? "hybrid"
                           : pr == PLAN_PROTO_LL   ? "trees LL"
                                                   : "trees";
        if (i == 0 && j == p->tune.n) {
            sb_printf(sb, "%s at every size", name);
        } else if (j == p->tune.n) {
            sb_printf(sb, "%s from ", name);
            put_short_size(sb, p->tune.r[i].min_bytes);
        } else {
            sb_printf(sb, "%s to ", name);
            put_short_size(sb, p->tune.r[j].min_bytes);
            sb_puts(sb, ", ");
        }
        i = j;
    }
}

static void put_row(struct strbuf *sb, const struct plan_set *ps, const struct plan *p)
{
    const struct plan_trees *m = &p->main;
    double ratio = m->bound > 0 ? m->algbw / m->bound : 0;
    double speedup = p->ring_algbw > 0 ? m->algbw / p->ring_algbw : 0;
    double busbw = m->algbw * sim_bus_factor(p->coll, ps->topo->ngpus);
    sb_printf(sb, "%-14s ", collective_name(p->coll));
    put_root(sb, ps, p);
    sb_printf(sb, "%5d %9.1f %9.1f %9.1f %6.3f %9.1f %7.2fx  ", plan_tree_count(ps, p), m->algbw,
              busbw,
              m->bound, ratio, p->ring_algbw, speedup);
    put_runs(sb, ps, p);
    sb_putc(sb, '\n');
}

/* Allgather and reduce-scatter pack one tree set per root (ForestColl): the solver's values are
 * each root's rate, and the plan moves that from every root at once. */
static int per_root(const struct plan *p)
{
    return p->coll == COLL_ALLGATHER || p->coll == COLL_REDUCESCATTER;
}

/* "37.5 GB/s per root (112.5 in all)" where the solver's value is per root. */
static void put_solver_rate(struct strbuf *sb, const struct plan *p, int ngpus, double v)
{
    if (per_root(p) && p->main.stats.partitions == 0)
        sb_printf(sb, "%.1f GB/s per root (%.1f in all)", v, v * ngpus);
    else
        sb_printf(sb, "%.1f GB/s", v);
}

static void put_solver_line(struct strbuf *sb, const struct plan *p, int ngpus)
{
    const struct plan_trees *m = &p->main;
    const struct plan_stats *s = &m->stats;
    static const char *const ilp[] = {"ILP optimal", "ILP spent its work budget (best kept)",
                                      "ILP failed: LP trees kept"};
    if (s->partitions > 0) {
        sb_printf(sb, "    %d partitions composed from each server's own plan across %d servers, "
                      "scaled to the narrowest link\n",
                  s->partitions, s->servers);
        return;
    }
    if (s->mwu_rounds == 0 && s->integral_trees > 0) {
        sb_printf(sb, "    exact integral packing reaches the bound with %d unit trees (MWU not "
                      "needed); %s: %d trees\n",
                  s->integral_trees, ilp[s->ilp_status % 3], m->trees.n);
        return;
    }
    if (s->mwu_rounds == 0) {
        sb_puts(sb, "    structured trees (one-hop stars, balanced switch-plane trees or chains) "
                    "reach the bound: LP ");
        put_solver_rate(sb, p, ngpus, s->lp_value);
        sb_printf(sb, " over %d of them; %s\n", s->lp_columns, ilp[s->ilp_status % 3]);
        return;
    }
    sb_printf(sb, "    MWU %ld rounds: ", s->mwu_rounds);
    put_solver_rate(sb, p, ngpus, s->mwu_value);
    sb_printf(sb, " in %d trees", s->mwu_trees);
    if (s->integral_trees)
        sb_printf(sb, "; integral packing %d trees", s->integral_trees);
    sb_puts(sb, "; exact LP ");
    put_solver_rate(sb, p, ngpus, s->lp_value);
    sb_printf(sb, " over %d columns (%d trees); %s: %d trees\n", s->lp_columns, s->trees_before,
              ilp[s->ilp_status % 3], m->trees.n);
}

static void put_trees(struct strbuf *sb, const struct plan_set *ps, const struct plan_trees *m)
{
    const struct topo *t = ps->topo;
    sb_puts(sb, "    trees: GB/s of each tree, its root, then its edges (parent>child; a path "
                "through switches)\n");
    for (int i = 0; i < m->trees.n; i++) {
        const struct ptree *tr = &m->trees.t[i];
        sb_printf(sb, "    %8.4f  %s:", tr->rate, t->nodes[tr->root].id);
        for (int v = 0; v < tr->ngpus; v++) {
            if (v == tr->root)
                continue;
            sb_printf(sb, " %s", t->nodes[tr->parent[v]].id);
            for (int k = tr->path_off[v]; k < tr->path_off[v + 1]; k++)
                sb_printf(sb, ">%s", t->nodes[pgraph_node(m->g, m->g->dst[tr->path_arc[k]])].id);
        }
        sb_putc(sb, '\n');
    }
}

static void put_hybrid(struct strbuf *sb, const struct plan *p)
{
    double share = plan_hybrid_share(p);
    sb_printf(sb, "    hybrid: %d PCIe tree%s at %.1f GB/s (bound %.1f), edges host-staged, with "
                  "%.1f%% of the data: ",
              p->pcie.trees.n, p->pcie.trees.n == 1 ? "" : "s", p->pcie.algbw, p->pcie.bound,
              100 * share);
    int from = -1;
    for (int i = 0; i < p->tune.n && from < 0; i++)
        from = p->tune.r[i].algo == PLAN_ALGO_HYBRID ? i : -1;
    if (from >= 0) {
        sb_puts(sb, "emitted, runs from ");
        put_short_size(sb, p->tune.r[from].min_bytes);
        sb_puts(sb, " (simulated)\n");
    } else {
        sb_printf(sb, "emitted, runs only with BLINK_ALGO=hybrid (%s)\n",
                  p->tune.n ? "never faster on the simulator" : "not tuned");
    }
}

/* A byte count in binary units, as the runtime's sizes are given (0, 768 KiB, 1.5 MiB),
 * left-aligned in `width` columns. */
static void put_size(struct strbuf *sb, double b, int width)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB"};
    int u;
    b = binary_scaled(b, &u);
    char text[32];
    snprintf(text, sizeof text, b == 0 ? "0" : "%g %s", b, unit[u]);
    sb_printf(sb, "%-*s", width, text);
}

static void put_tuning(struct strbuf *sb, const struct plan_set *ps, const struct plan *p)
{
    if (p->tune.n == 0) {
        sb_printf(sb, "    per size: not tuned (%s); trees at every size with 1 MiB chunks\n",
                  ps->cluster ? "several servers" : "--no-tune, or no output that needs it");
        return;
    }
    sb_puts(sb, "    per size (simulated; the runtime picks by message size):\n");
    sb_printf(sb, "      %-11s%-12s%-10s%-10s%12s %12s\n", "from", "runs", "chunk", "at", "trees us",
              "NCCL us");
    for (int i = 0; i < p->tune.n; i++) {
        const struct plan_range *r = &p->tune.r[i];
        sb_puts(sb, "      ");
        put_size(sb, r->min_bytes, 11);
        sb_printf(sb, "%-12s", r->algo == PLAN_ALGO_RINGS    ? "NCCL rings"
                               : r->algo == PLAN_ALGO_HYBRID ? "hybrid"
                               : r->proto == PLAN_PROTO_LL   ? "trees LL"
                                                             : "trees");
        put_size(sb, (double)r->chunk_bytes, 10);
        put_size(sb, r->at_bytes, 10);
        sb_printf(sb, "%12.1f ", r->tree_us);
        if (r->ring_us > 0)
            sb_printf(sb, "%12.1f\n", r->ring_us);
        else
            sb_printf(sb, "%12s\n", "-");
    }
}

/* Where the input named no GPU model, the NVLink rate of every plan rests on the part the reader
 * assumed: say which, so the numbers are read for what they are. */
static void put_assumed_part(struct strbuf *sb, const struct topo *t)
{
    const struct topo_gpu_part *part = NULL;
    int n = 0;
    for (int v = 0; v < t->nnodes; v++)
        if (t->nodes[v].kind == TOPO_GPU && t->nodes[v].part_assumed && t->nodes[v].part) {
            part = part ? part : t->nodes[v].part;
            n++;
        }
    if (part)
        sb_printf(sb, "assumed: %d GPU%s %s (%d NVLinks at %.4g GB/s each way): the input names "
                      "no model; --gpu-model sets it\n",
                  n, n == 1 ? " is" : "s are", part->name, part->links, part->link_gbps);
}

void plan_explain(struct strbuf *sb, const struct plan_set *ps, int detail)
{
    const struct topo *t = ps->topo;
    if (ps->n == 0) {
        sb_puts(sb, "no plans\n");
        return;
    }
    sb_printf(sb, "%s: %d GPUs, %d server%s; trees over %s\n", t->name ? t->name : "topology",
              t->ngpus, t->nservers, t->nservers == 1 ? "" : "s", kinds_text(ps->kinds));
    put_assumed_part(sb, t);
    sb_printf(sb, "rings: %d %s ring%s, %.1f GB/s in all%s\n", ps->ring.nrings,
              ps->ring.kinds == PG_NVLINK ? "NVLink" : "PCIe/CPU/network",
              ps->ring.nrings == 1 ? "" : "s", ps->ring.gbps,
              ps->ring.exhaustive ? " (best over every Hamiltonian cycle)" : "");
    sb_puts(sb, "\ncollective     root   trees     algbw     busbw     bound  ratio     rings  speedup  "
                "the code runs\n");
    int gains = 0;
    for (int i = 0; i < ps->n; i++) {
        put_row(sb, ps, &ps->v[i]);
        gains |= !(ps->v[i].ring_algbw > 0) || ps->v[i].main.algbw > 1.005 * ps->v[i].ring_algbw;
    }
    if (!gains) /* a new user's first run (the full DGX-1V) must not read as "blinkc does nothing" */
        sb_puts(sb, "\nEvery speedup is 1.00x: NCCL's rings already reach the bound on these GPUs, "
                    "so trees gain nothing\nhere; they win where a job's GPUs leave links idle "
                    "to rings (--gpus, --all-allocations).\n");
    sb_puts(sb, "\nGB/s per direction for large messages; algbw and busbw as nccl-tests counts "
                "them;\nratio = algbw / bound; speedup = algbw / the best NCCL-style ring set on "
                "the same links;\nthe code runs: by message size, the trees or NCCL (the simulated "
                "choice);\n--explain shows each plan's method, solver stages, sizes and "
                "trees.\n");
    for (int i = 0; detail && i < ps->n; i++) {
        const struct plan *p = &ps->v[i];
        sb_printf(sb, "\n%s", collective_name(p->coll));
        if (p->root >= 0)
            sb_printf(sb, " from %s", t->nodes[p->root].id);
        sb_printf(sb, ": %s\n", p->method);
        if (p->alt_algbw > 0)
            sb_printf(sb, "    chosen as %s candidate: the other reaches %.1f GB/s\n", p->why,
                      p->alt_algbw);
        if (p->relabels > 0 && p->relabels <= ps->n && ps->v[p->relabels - 1].root >= 0)
            sb_printf(sb, "    the plan from %s, relabelled by a symmetry of the allocation that "
                      "takes %s to %s (its solver stages and per-size choice):\n",
                      t->nodes[ps->v[p->relabels - 1].root].id,
                      t->nodes[ps->v[p->relabels - 1].root].id, t->nodes[p->root].id);
        put_solver_line(sb, p, t->ngpus);
        if (p->has_hybrid)
            put_hybrid(sb, p);
        put_tuning(sb, ps, p);
        put_trees(sb, ps, &p->main);
    }
}
