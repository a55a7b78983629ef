/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_dot.c - Graphviz output of plans (see plan_dot.h).
 */
#include "out/plan_dot.h"

#include <stdio.h>

#include "core/collective.h"

/* A qualitative palette (ColorBrewer Set1 and Dark2): trees past its end reuse it. */
static const char *const palette[] = {"#e41a1c", "#377eb8", "#4daf4a", "#984ea3", "#ff7f00",
                                      "#a65628", "#f781bf", "#1b9e77", "#d95f02", "#7570b3",
                                      "#e7298a", "#66a61e", "#e6ab02", "#666666"};
#define NCOLOURS (sizeof palette / sizeof palette[0])

static void put_nodes(struct strbuf *sb, const struct topo *t, const struct plan *p,
                      int collapse)
{
    for (int v = 0; v < t->nnodes; v++) {
        const struct topo_node *n = &t->nodes[v];
        if (n->kind == TOPO_GPU && v == p->root)
            sb_printf(sb, "  \"%s\" [shape=box, style=\"filled,bold\", penwidth=3, "
                          "fillcolor=\"#ffe08a\", label=\"%s\\nrank %d\\nroot\"];\n", n->id,
                      n->id, n->rank);
        else if (n->kind == TOPO_GPU)
            sb_printf(sb, "  \"%s\" [shape=box, style=filled, fillcolor=\"#f0f0f0\", "
                          "label=\"%s\\nrank %d\"];\n", n->id, n->id, n->rank);
        else if (!collapse)
            sb_printf(sb, "  \"%s\" [shape=ellipse, fontsize=10];\n", n->id);
    }
}

/* Each link pair once (src < dst), faint and without direction; with collapse only the links
 * between two GPUs (the switches and what hangs off them are left out). */
static void put_links(struct strbuf *sb, const struct topo *t, int collapse)
{
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        int gpus = t->nodes[l->src].kind == TOPO_GPU && t->nodes[l->dst].kind == TOPO_GPU;
        if (l->src < l->dst && (gpus || !collapse))
            sb_printf(sb, "  \"%s\" -> \"%s\" [dir=none, color=\"#d0d0d0\", tooltip=\"%s %d\"];\n",
                      t->nodes[l->src].id, t->nodes[l->dst].id, topo_link_kind_name(l->kind),
                      l->count);
    }
}

/* The legend: one row per tree, its colour, root and rate. */
static void put_legend(struct strbuf *sb, const struct topo *t, const struct plan_trees *m)
{
    sb_puts(sb, "  legend [shape=plaintext, label=<<table border=\"0\" cellborder=\"1\" "
                "cellspacing=\"0\"><tr><td colspan=\"3\"><b>trees</b></td></tr>"
                "<tr><td>colour</td><td>root</td><td>GB/s</td></tr>");
    for (int i = 0; i < m->trees.n; i++)
        sb_printf(sb, "<tr><td bgcolor=\"%s\">%d</td><td>%s</td><td>%.4f</td></tr>",
                  palette[(size_t)i % NCOLOURS], i, t->nodes[m->trees.t[i].root].id,
                  m->trees.t[i].rate);
    sb_puts(sb, "</table>>];\n");
}

/* One tree edge: its path arcs, or with collapse one line from parent to child, between the
 * nodes named id + sfx (a panel's copies). Allreduce's undirected trees carry data both ways, so
 * their edges have no arrow. */
static void put_edge(struct strbuf *sb, const struct topo *t, const struct plan_trees *m, int i,
                     int v, double width, int collapse, const char *sfx)
{
    const struct ptree *tr = &m->trees.t[i];
    const char *dir = m->pack == PACK_ALLREDUCE ? ", dir=none" : "";
    const char *colour = palette[(size_t)i % NCOLOURS];
    if (collapse) {
        sb_printf(sb, "  \"%s%s\" -> \"%s%s\" [color=\"%s\", penwidth=%.2f%s, "
                      "tooltip=\"tree %d: %.4f GB/s\"];\n",
                  t->nodes[tr->parent[v]].id, sfx, t->nodes[v].id, sfx, colour, width, dir, i,
                  tr->rate);
        return;
    }
    for (int k = tr->path_off[v]; k < tr->path_off[v + 1]; k++) {
        int a = tr->path_arc[k];
        sb_printf(sb, "  \"%s%s\" -> \"%s%s\" [color=\"%s\", penwidth=%.2f%s, "
                      "tooltip=\"tree %d: %.4f GB/s\"];\n",
                  t->nodes[pgraph_node(m->g, m->g->src[a])].id, sfx,
                  t->nodes[pgraph_node(m->g, m->g->dst[a])].id, sfx, colour, width,
                  dir, i, tr->rate);
    }
}

/* Many trees drawn over one another are a tangle: past this many, each tree gets a panel of its
 * own (a Graphviz cluster with its own copies of the GPUs and of the switches it crosses). */
#define DOT_PANEL_TREES 6

static void put_panel(struct strbuf *sb, const struct topo *t, const struct plan_trees *m, int i,
                      double width, int collapse)
{
    const struct ptree *tr = &m->trees.t[i];
    char sfx[16];
    snprintf(sfx, sizeof sfx, ".t%d", i);
    sb_printf(sb, "  subgraph cluster_t%d {\n  label=\"tree %d from %s: %.4f GB/s\"; "
                  "color=\"%s\";\n", i, i, t->nodes[tr->root].id, tr->rate,
              palette[(size_t)i % NCOLOURS]);
    for (int v = 0; v < tr->ngpus; v++)
        sb_printf(sb, "  \"%s%s\" [shape=box, label=\"%s\"%s];\n", t->nodes[v].id, sfx,
                  t->nodes[v].id, v == tr->root ? ", style=bold, penwidth=3" : "");
    for (int k = 0; !collapse && k < tr->path_off[tr->ngpus]; k++) {
        int u = pgraph_node(m->g, m->g->dst[tr->path_arc[k]]);
        if (t->nodes[u].kind != TOPO_GPU) /* a relay on this tree's paths */
            sb_printf(sb, "  \"%s%s\" [shape=ellipse, fontsize=10, label=\"%s\"];\n",
                      t->nodes[u].id, sfx, t->nodes[u].id);
    }
    for (int v = 0; v < tr->ngpus; v++)
        if (v != tr->root)
            put_edge(sb, t, m, i, v, width, collapse, sfx);
    sb_puts(sb, "  }\n");
}

void plan_dot_one(struct strbuf *sb, const struct plan_set *ps, int k, int collapse)
{
    const struct topo *t = ps->topo;
    const struct plan *p = &ps->v[k];
    const struct plan_trees *m = &p->main;
    sb_printf(sb, "digraph plan%d {\n  graph [label=\"%s", k, collective_name(p->coll));
    if (p->root >= 0)
        sb_printf(sb, " from %s", t->nodes[p->root].id);
    sb_printf(sb, ": %d trees, %.1f GB/s of a %.1f GB/s bound\", labelloc=t, overlap=false];\n",
              m->trees.n, m->algbw, m->bound);
    int panels = m->trees.n > DOT_PANEL_TREES;
    if (!panels) {
        put_nodes(sb, t, p, collapse);
        put_links(sb, t, collapse);
    }
    put_legend(sb, t, m);
    double widest = 0;
    for (int i = 0; i < m->trees.n; i++)
        widest = m->trees.t[i].rate > widest ? m->trees.t[i].rate : widest;
    for (int i = 0; i < m->trees.n; i++) {
        const struct ptree *tr = &m->trees.t[i];
        double width = widest > 0 ? 1 + 4 * tr->rate / widest : 1;
        if (panels) {
            put_panel(sb, t, m, i, width, collapse);
            continue;
        }
        for (int v = 0; v < tr->ngpus; v++)
            if (v != tr->root)
                put_edge(sb, t, m, i, v, width, collapse, "");
    }
    sb_puts(sb, "}\n");
}

void plan_dot(struct strbuf *sb, const struct plan_set *ps, int collapse)
{
    for (int k = 0; k < ps->n; k++)
        plan_dot_one(sb, ps, k, collapse);
}

void plan_dot_name(char *out, size_t cap, const struct plan_set *ps, int k)
{
    const struct plan *p = &ps->v[k];
    if (p->root >= 0)
        snprintf(out, cap, "%s-%s.dot", collective_name(p->coll), ps->topo->nodes[p->root].id);
    else
        snprintf(out, cap, "%s.dot", collective_name(p->coll));
}
