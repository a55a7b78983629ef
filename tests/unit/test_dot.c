/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_dot.c - --dot: one digraph per plan, every tree's path arcs drawn in its own colour,
 * widths by rate, nothing but ids and numbers; and Graphviz accepts it where dot is installed.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/plan.h"
#include "core/strbuf.h"
#include "out/plan_dot.h"
#include "testutil.h"

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

Test(dot, trees_in_colours)
{
    static const int gpus[] = {0, 2, 3};
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx1v.topo", gpus, 3, 1u << COLL_BROADCAST, 0, &t, &ps);
    struct strbuf sb;
    sb_init(&sb);
    plan_dot(&sb, &ps, 0);
    cr_assert_eq(ps.n, 1);
    cr_expect_eq(count(sb.data, "digraph "), 1);
    /* Every path arc of every tree is one coloured edge; links are the grey ones. */
    int arcs = 0;
    for (int i = 0; i < ps.v[0].main.trees.n; i++)
        arcs += ps.v[0].main.trees.t[i].path_off[3];
    cr_expect_eq(count(sb.data, "tooltip=\"tree "), arcs);
    cr_expect_eq(count(sb.data, "color=\"#d0d0d0\""), t.nlinks / 2);
    cr_expect(strstr(sb.data, "75.0 GB/s of a 75.0 GB/s bound"), "%s", sb.data);
    /* {0,2,3}: a 50 GB/s tree and a 25 GB/s tree: widths 5 and 3. */
    cr_expect(strstr(sb.data, "penwidth=5.00") && strstr(sb.data, "penwidth=3.00"));
    char path[] = "/tmp/blinkc-dot-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, sb.data, sb.len), (ssize_t)sb.len);
    close(fd);
    struct tu_run r;
    tu_run_argv(&r, (const char *const[]){"dot", "-Tsvg", "-o", "/dev/null", path, NULL});
    if (r.status != -1 || r.err[0]) /* -1 and nothing said: dot is not installed */
        cr_expect_eq(r.status, 0, "dot: %s", r.err);
    else
        fprintf(stderr, "Graphviz's dot is not installed: the file's syntax is not checked\n");
    tu_run_free(&r);
    unlink(path);
    sb_free(&sb);
    plan_set_free(&ps);
    topo_free(&t);
}

/* The legend lists every tree; broadcast's root stands out; allreduce's undirected trees have no
 * arrows; collapsed switches leave one line per tree edge and no switch. */
Test(dot, legend_root_undirected_and_collapsed)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx2.topo", NULL, 0, (1u << COLL_BROADCAST) | (1u << COLL_ALLREDUCE), 0, &t,
                  &ps);
    cr_assert_eq(ps.n, 2);
    for (int k = 0; k < 2; k++) {
        const struct plan *p = &ps.v[k];
        struct strbuf full, flat;
        sb_init(&full);
        sb_init(&flat);
        plan_dot_one(&full, &ps, k, 0);
        plan_dot_one(&flat, &ps, k, 1);
        cr_expect_eq(count(full.data, "<tr><td bgcolor="), p->main.trees.n, "legend rows");
        cr_expect_eq(count(full.data, "\\nroot\""), p->root >= 0, "the root is marked");
        int edges = p->main.trees.n * (t.ngpus - 1);
        cr_expect_eq(count(flat.data, "tooltip=\"tree "), edges);
        cr_expect_null(strstr(flat.data, "\"nvs"), "a switch in the collapsed drawing");
        cr_expect_not_null(strstr(full.data, "\"nvs0\""));
        int undirected = p->main.pack == PACK_ALLREDUCE;
        cr_expect_eq(count(flat.data, "dir=none, tooltip=\"tree "), undirected ? edges : 0,
                     "%s: arrows", collective_name(p->coll));
        sb_free(&full);
        sb_free(&flat);
    }
    char name[64];
    plan_dot_name(name, sizeof name, &ps, 0);
    cr_expect_str_eq(name, "broadcast-gpu0.dot");
    plan_set_free(&ps);
    topo_free(&t);
}

/* --dot DIR: one file per plan, named after it, each a digraph of its own. */
Test(dot, a_directory_gets_a_file_per_plan)
{
    char dir[] = "/tmp/blinkc-dotdir-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--gpus", "0,2,3", "--collective", "broadcast",
                                            "--collective", "allreduce", "--dot", dir,
                                            "builtin:dgx1v", NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    const char *names[] = {"broadcast-gpu0.dot", "broadcast-gpu2.dot", "broadcast-gpu3.dot",
                           "allreduce.dot"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *path = bk_asprintf("%s/%s", dir, names[i]);
        char *text = tu_slurp(path, NULL);
        cr_expect(text && count(text, "digraph ") == 1, "%s", path);
        unlink(path);
        free(text), free(path);
    }
    cr_expect_eq(rmdir(dir), 0, "%s holds other files", dir);
}

/* Past six trees each gets a panel: a cluster with its own GPUs, bold at its root. */
Test(dot, many_trees_get_a_panel_each)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx1v.topo", NULL, 0, 1u << COLL_ALLGATHER, -1, &t, &ps);
    cr_assert_eq(ps.n, 1);
    int n = ps.v[0].main.trees.n;
    cr_assert_gt(n, 6, "the DGX-1V allgather has many trees");
    struct strbuf sb;
    sb_init(&sb);
    plan_dot_one(&sb, &ps, 0, 0);
    cr_expect_eq(count(sb.data, "subgraph cluster_t"), n);
    cr_expect_eq(count(sb.data, "style=bold, penwidth=3"), n, "one root per panel");
    cr_expect_eq(count(sb.data, "[shape=box, label="), n * t.ngpus, "every GPU in every panel");
    cr_expect_null(strstr(sb.data, "color=\"#d0d0d0\""), "no background links in panels");
    sb_free(&sb);
    plan_set_free(&ps);
    topo_free(&t);
}
