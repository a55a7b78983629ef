/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_json_plans.c - the "plans" array of the plan file (shared/spec/plan-json.md).
 *
 * One tree per line. Paths are written as node ids walked along the arcs of the graph the trees
 * were packed on; for reduce-like plans that is the reversed graph, which gives the spec's
 * parent-to-child order while the data flows child to parent. Extra keys beyond the contract
 * ("method", "solver", "relabels", "hybrid", "ring_chains", "ranges") only add information;
 * checkers may ignore them. "relabels", the ring chains and the ranges, with the trees, are what
 * the code generator renders, so that blinkc --from-plan (plan_load.h) renders the same code
 * again: "relabels" names the earlier plan whose trees a symmetry carried onto this one's root
 * and the GPU each of its GPUs became, ring chains have no paths (NCCL or the runtime routes
 * them), and "ranges" appears when the run tuned the plan.
 */
#include "out/plan_json.h"

#include "core/json.h"

/* Rates print with 4 decimals: the planner snaps them down to 1e-4 (plan_snap_rate). */
static void put_gbps(struct strbuf *sb, double v)
{
    sb_put_decimal(sb, v, 4);
}

static const char *node_id(const struct topo *t, int v)
{
    return t->nodes[v].id;
}

/* The link kinds present in a tier graph, as a JSON array in kind order. */
static void put_kinds(struct strbuf *sb, const struct topo *t, const struct pgraph *g)
{
    unsigned seen = 0;
    for (int a = 0; a < g->narcs; a++)
        seen |= PG_KIND(t->links[g->link[a]].kind);
    sb_putc(sb, '[');
    int first = 1;
    for (int k = 0; k < TOPO_LINK_KINDS; k++)
        if (seen & PG_KIND(k)) {
            if (!first)
                sb_puts(sb, ", ");
            json_put_string(sb, topo_link_kind_name((enum topo_link_kind)k));
            first = 0;
        }
    sb_putc(sb, ']');
}

/* A tree with its edges; with g NULL (ring chains) the edges have no paths. */
static void put_tree(struct strbuf *sb, const struct topo *t, const struct pgraph *g,
                     const struct ptree *tr)
{
    sb_puts(sb, "{\"root\": ");
    json_put_string(sb, node_id(t, tr->root));
    sb_puts(sb, ", \"gbps\": ");
    put_gbps(sb, tr->rate);
    sb_puts(sb, ", \"edges\": [");
    int first = 1;
    for (int v = 0; v < tr->ngpus; v++) {
        if (v == tr->root)
            continue;
        sb_puts(sb, first ? "{\"parent\": " : ", {\"parent\": ");
        first = 0;
        json_put_string(sb, node_id(t, tr->parent[v]));
        sb_puts(sb, ", \"child\": ");
        json_put_string(sb, node_id(t, v));
        if (!g) {
            sb_putc(sb, '}');
            continue;
        }
        sb_puts(sb, ", \"path\": [");
        json_put_string(sb, node_id(t, tr->parent[v]));
        for (int i = tr->path_off[v]; i < tr->path_off[v + 1]; i++) {
            sb_puts(sb, ", ");
            json_put_string(sb, node_id(t, pgraph_node(g, g->dst[tr->path_arc[i]])));
        }
        sb_puts(sb, "]}");
    }
    sb_puts(sb, "]}");
}

static void put_trees(struct strbuf *sb, const struct topo *t, const struct pgraph *g,
                      const struct ptree_set *ts, const char *pad)
{
    sb_puts(sb, "[");
    for (int i = 0; i < ts->n; i++) {
        sb_puts(sb, i ? ",\n" : "\n");
        sb_puts(sb, pad);
        sb_puts(sb, "  ");
        put_tree(sb, t, g, &ts->t[i]);
    }
    if (ts->n) {
        sb_putc(sb, '\n');
        sb_puts(sb, pad);
    }
    sb_puts(sb, "]");
}

/* Times with the one decimal the generated code's comments show. */
static void put_ranges(struct strbuf *sb, const struct plan_tuning *tu)
{
    sb_puts(sb, "[");
    for (int i = 0; i < tu->n; i++) {
        const struct plan_range *r = &tu->r[i];
        sb_printf(sb, "%s\n        {\"min_bytes\": %lld, \"algo\": \"%s\", \"chunk_bytes\": %zu, "
                  "\"proto\": \"%s\", \"tree_us\": ", i ? "," : "", (long long)r->min_bytes,
                  r->algo == PLAN_ALGO_RINGS    ? "rings"
                  : r->algo == PLAN_ALGO_HYBRID ? "hybrid"
                                                : "trees",
                  r->chunk_bytes,
                  r->proto == PLAN_PROTO_LL ? "ll" : "simple");
        sb_put_decimal(sb, r->tree_us, 1);
        sb_puts(sb, ", \"ring_us\": ");
        sb_put_decimal(sb, r->ring_us, 1);
        if (r->algo == PLAN_ALGO_HYBRID)
            sb_printf(sb, ", \"fallback\": \"%s\"",
                      r->fallback == PLAN_ALGO_TREES ? "trees" : "rings");
        sb_putc(sb, '}');
    }
    sb_puts(sb, tu->n ? "\n      ]" : "]");
}

static const char *ilp_status_name(int s)
{
    return s == 0 ? "optimal" : s == 1 ? "time limit" : "lp fallback";
}

static void put_solver(struct strbuf *sb, const struct plan_stats *st)
{
    if (st->partitions > 0) {
        sb_printf(sb, "{\"servers\": %d, \"partitions\": %d}", st->servers, st->partitions);
        return;
    }
    sb_printf(sb, "{\"mwu_rounds\": %ld, \"mwu_trees\": %d, \"mwu_gbps\": ", st->mwu_rounds,
              st->mwu_trees);
    put_gbps(sb, st->mwu_value);
    sb_printf(sb, ", \"integral_trees\": %d, \"lp_columns\": %d, \"lp_gbps\": ", st->integral_trees,
              st->lp_columns);
    put_gbps(sb, st->lp_value);
    sb_printf(sb, ", \"lp_trees\": %d, \"ilp\": ", st->trees_before);
    json_put_string(sb, ilp_status_name(st->ilp_status));
    sb_putc(sb, '}');
}

/* "link_kinds", "algbw_gbps" and "bound_gbps" of one tree set, separated by sep. */
static void put_tier(struct strbuf *sb, const struct topo *t, const struct plan_trees *pt,
                     const char *sep)
{
    sb_puts(sb, "\"link_kinds\": ");
    put_kinds(sb, t, pt->g);
    sb_printf(sb, "%s\"algbw_gbps\": ", sep);
    put_gbps(sb, pt->algbw);
    sb_printf(sb, "%s\"bound_gbps\": ", sep);
    put_gbps(sb, pt->bound);
}

static void put_plan(struct strbuf *sb, const struct plan_set *ps, const struct plan *p)
{
    const struct topo *t = ps->topo;
    sb_puts(sb, "    {\n      \"collective\": ");
    json_put_string(sb, collective_name(p->coll));
    if (p->root >= 0) {
        sb_puts(sb, ",\n      \"root\": ");
        json_put_string(sb, node_id(t, p->root));
    }
    sb_puts(sb, ",\n      ");
    put_tier(sb, t, &p->main, ",\n      ");
    sb_puts(sb, ",\n      \"ring_algbw_gbps\": ");
    put_gbps(sb, p->ring_algbw);
    sb_puts(sb, ",\n      \"method\": ");
    json_put_string(sb, p->method);
    sb_puts(sb, ",\n      \"solver\": ");
    put_solver(sb, &p->main.stats);
    if (p->relabels > 0 && p->relabel_map) {
        sb_printf(sb, ",\n      \"relabels\": {\"plan\": %d, \"gpus\": [", p->relabels - 1);
        for (int g = 0; g < t->ngpus; g++) {
            sb_puts(sb, g ? ", " : "");
            json_put_string(sb, node_id(t, p->relabel_map[g]));
        }
        sb_puts(sb, "]}");
    }
    if (p->has_hybrid) {
        sb_puts(sb, ",\n      \"hybrid\": {");
        put_tier(sb, t, &p->pcie, ", ");
        sb_puts(sb, ", \"tdpa_us\": ");
        json_put_number(sb, ps->tdpa_us);
        sb_printf(sb, ", \"switchover_bytes\": %.0f,\n        \"trees\": ", p->switchover_bytes);
        put_trees(sb, t, p->pcie.g, &p->pcie.trees, "        ");
        sb_puts(sb, "}");
    }
    sb_puts(sb, ",\n      \"trees\": ");
    put_trees(sb, t, p->main.g, &p->main.trees, "      ");
    sb_puts(sb, ",\n      \"ring_chains\": ");
    put_trees(sb, t, NULL, &p->ring_chains, "      ");
    if (p->tune.n > 0) {
        sb_puts(sb, ",\n      \"ranges\": ");
        put_ranges(sb, &p->tune);
    }
    sb_puts(sb, "\n    }");
}

void plan_json_plans(struct strbuf *sb, const struct plan_set *ps)
{
    if (!ps || ps->n == 0) {
        sb_puts(sb, "[]");
        return;
    }
    sb_puts(sb, "[\n");
    for (int i = 0; i < ps->n; i++) {
        put_plan(sb, ps, &ps->v[i]);
        sb_puts(sb, i + 1 < ps->n ? ",\n" : "\n");
    }
    sb_puts(sb, "  ]");
}
