/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_dot.c - Graphviz output of plans (see plan_dot.h).
 */
#include "out/plan_dot.h"

#include "core/collective.h"

/* A qualitative palette (ColorBrewer Set1 and Dark2): trees past its end reuse it. */
static const char *const palette[] = {"#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00",
                                      "#a65628", "#f781bf", "#1b9e77", "#d95f02", "#7570b3",
                                      "#e7298a", "#66a61e", "#e6ab02", "#666666"};
#define NCOLOURS (sizeof palette / sizeof palette[0])

static void put_nodes(struct strbuf *sb, const struct topo *t)
{
    for (int v = 0; v < t->nnodes; v++) {
        const struct topo_node *n = &t->nodes[v];
        if (n->kind == TOPO_GPU)
            sb_printf(sb, "  \"%s\" [shape=box, style=filled, fillcolor=\"#f0f0f0\", "
                          "label=\"%s\\nrank %d\"];\n", n->id, n->id, n->rank);
        else
            sb_printf(sb, "  \"%s\" [shape=ellipse, fontsize=10];\n", n->id);
    }
}

/* Each link pair once (src < dst), faint and without direction. */
static void put_links(struct strbuf *sb, const struct topo *t)
{
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        if (l->src < l->dst)
            sb_printf(sb, "  \"%s\" -> \"%s\" [dir=none, color=\"#d0d0d0\", tooltip=\"%s %d\"];\n",
                      t->nodes[l->src].id, t->nodes[l->dst].id, topo_link_kind_name(l->kind),
                      l->count);
    }
}

static void put_plan(struct strbuf *sb, const struct plan_set *ps, const struct plan *p, int k)
{
    const struct topo *t = ps->topo;
    const struct plan_trees *m = &p->main;
    sb_printf(sb, "digraph plan%d {\n  graph [label=\"%s", k, collective_name(p->coll));
    if (p->root >= 0)
        sb_printf(sb, " from %s", t->nodes[p->root].id);
    sb_printf(sb, ": %d trees, %.1f GB/s of a %.1f GB/s bound\", labelloc=t, overlap=false];\n",
              m->trees.n, m->algbw, m->bound);
    put_nodes(sb, t);
    put_links(sb, t);
    double widest = 0;
    for (int i = 0; i < m->trees.n; i++)
        widest = m->trees.t[i].rate > widest ? m->trees.t[i].rate : widest;
    for (int i = 0; i < m->trees.n; i++) {
        const struct ptree *tr = &m->trees.t[i];
        double width = widest > 0 ? 1 + 4 * tr->rate / widest : 1;
        for (int k2 = 0; k2 < tr->path_off[tr->ngpus]; k2++) {
            int a = tr->path_arc[k2];
            sb_printf(sb, "  \"%s\" -> \"%s\" [color=\"%s\", penwidth=%.2f, "
                          "tooltip=\"tree %d: %.4f GB/s\"];\n",
                      t->nodes[m->g->src[a]].id, t->nodes[m->g->dst[a]].id,
                      palette[(size_t)i % NCOLOURS], width, i, tr->rate);
        }
    }
    sb_puts(sb, "}\n");
}

void plan_dot(struct strbuf *sb, const struct plan_set *ps)
{
    for (int k = 0; k < ps->n; k++)
        put_plan(sb, ps, &ps->v[k], k);
}
