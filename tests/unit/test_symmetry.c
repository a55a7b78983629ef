/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_symmetry.c - symmetries of an allocation (topo_auto.h) and the plans they share.
 *
 * Orbits are checked against ones worked out by hand; every relabelling the search returns is
 * checked link by link here, without the search's own checker. Plans relabelled onto a root are
 * checked as packings on the allocation (tu_check_trees), root by root, and against the same
 * root planned directly (--root: no symmetry is used): the same rate and bound. Their tuning,
 * copied from the plan they relabel, must be what tuning them directly gives. A library's
 * allocation that runs another's plans must hold them: its devices are its own GPUs, every
 * tree edge that is one link there is a link of the same kind and rate between the devices it
 * lands on, and planning it directly gives each collective and root the same rate and bound.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/plan.h"
#include "sim/sim.h"
#include "core/strbuf.h"
#include "testutil.h"
#include "topo/topo_auto.h"
#include "tune/allocations.h"
#include "tune/plan_tune.h"

#define ROOTED ((1u << COLL_BROADCAST) | (1u << COLL_REDUCE))

/* Every link of t maps under perm onto a link of the same kind, count and rate. */
static void expect_automorphism(const struct topo *t, const int *perm)
{
    for (int l = 0; l < t->nlinks; l++) {
        const struct topo_link *a = &t->links[l];
        int hit = 0;
        for (int k = 0; k < t->nlinks && !hit; k++) {
            const struct topo_link *b = &t->links[k];
            hit = b->src == perm[a->src] && b->dst == perm[a->dst] && b->kind == a->kind &&
                  b->count == a->count && b->gbps == a->gbps;
        }
        cr_assert(hit, "link %s->%s has no image", t->nodes[a->src].id, t->nodes[a->dst].id);
    }
    for (int v = 0; v < t->nnodes; v++) {
        cr_assert_eq(t->nodes[perm[v]].kind, t->nodes[v].kind);
        for (int u = 0; u < v; u++)
            cr_assert_neq(perm[u], perm[v], "not one to one");
    }
}

static void expect_orbits(const struct topo *t, const int *want_rep)
{
    struct topo_orbits o;
    cr_assert_eq(topo_gpu_orbits(t, &o), BK_OK);
    for (int g = 0; g < t->ngpus; g++) {
        cr_expect_eq(o.rep[g], want_rep[g], "gpu%d: orbit of gpu%d, not gpu%d", g, o.rep[g],
                     want_rep[g]);
        const int *p = o.perm + (size_t)g * t->nnodes;
        cr_expect_eq(p[o.rep[g]], g);
        expect_automorphism(t, p);
    }
    topo_orbits_free(&o);
}

/* A ring of four GPUs whose one double link (gpu0-gpu1) leaves one symmetry, the mirror that
 * swaps 0 with 1 and 2 with 3; and the same ring with every link single (all one orbit). */
Test(symmetry, orbits_worked_out_by_hand)
{
    const char *head = "topology ring4\n"
                       "gpu gpu0 model=\"Tesla V100-SXM2-16GB\"\n"
                       "gpu gpu1 model=\"Tesla V100-SXM2-16GB\"\n"
                       "gpu gpu2 model=\"Tesla V100-SXM2-16GB\"\n"
                       "gpu gpu3 model=\"Tesla V100-SXM2-16GB\"\n";
    const char *links[] = {"link gpu0 gpu1 count=2\nlink gpu1 gpu2\nlink gpu2 gpu3\n"
                           "link gpu3 gpu0\n",
                           "link gpu0 gpu1\nlink gpu1 gpu2\nlink gpu2 gpu3\nlink gpu3 gpu0\n"};
    const int want[][4] = {{0, 0, 2, 2}, {0, 0, 0, 0}};
    for (int k = 0; k < 2; k++) {
        char *text = bk_asprintf("%s%s", head, links[k]);
        struct topo t;
        struct diag d;
        diag_init(&d);
        cr_assert_eq(tu_read_string("ring4.topo", text, TOPO_FMT_TEXT, NULL, &t, &d), BK_OK);
        expect_orbits(&t, want[k]);
        topo_free(&t);
        diag_free(&d);
        free(text);
    }
    /* NVSwitch servers: every GPU is every other's image. */
    struct topo t;
    tu_load_alloc("dgx2.topo", NULL, 0, &t);
    int zeros[16] = {0};
    expect_orbits(&t, zeros);
    topo_free(&t);
}

/* Every root's broadcast and reduce on the DGX-2 is root 0's relabelled: a packing on the
 * server rooted where it says, at the bound, as fast as that root planned directly. */
/* Root r's plan p of collective c on t: relabelled or not, as expected; a packing on t; every
 * tree rooted at r. */
static void expect_root_plan(const struct topo *t, const struct plan *p, int c, int r,
                             int relabelled)
{
    cr_expect_eq(p->relabels != 0, relabelled, "root %d: relabels %d", r, p->relabels);
    tu_check_trees(t, &p->main, c);
    for (int i = 0; i < p->main.trees.n; i++)
        cr_expect_eq(p->main.trees.t[i].root, r);
}

/* p, root r's plan of collective c on fixture, has the rate and bound of the same root planned
 * directly (--root: no symmetry is used). */
static void expect_direct_rate(const char *fixture, int c, int r, const struct plan *p)
{
    struct topo t;
    struct plan_set direct;
    tu_plan_alloc(fixture, NULL, 0, 1u << c, r, &t, &direct);
    const struct plan *q = tu_find_plan(&direct, c, r);
    cr_expect_eq(q->relabels, 0);
    cr_expect(fabs(q->main.algbw - p->main.algbw) <= 1e-9 * q->main.algbw,
              "%s root %d: %g GB/s directly, %g relabelled", fixture, r, q->main.algbw,
              p->main.algbw);
    cr_expect(fabs(q->main.bound - p->main.bound) <= 1e-9 * q->main.bound);
    plan_set_free(&direct);
    topo_free(&t);
}

Test(symmetry, relabelled_roots_are_packings_at_the_direct_rate, .timeout = 120)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx2.topo", NULL, 0, ROOTED, -1, &t, &ps);
    for (int c = COLL_BROADCAST; c <= COLL_REDUCE; c++)
        for (int r = 0; r < t.ngpus; r++) {
            const struct plan *p = tu_find_plan(&ps, c, r);
            expect_root_plan(&t, p, c, r, r != 0);
            cr_expect(fabs(p->main.algbw - p->main.bound) <= 1e-6 * p->main.bound,
                      "root %d: %g of %g GB/s", r, p->main.algbw, p->main.bound);
            if (r % 5 == 3) /* roots 3, 8, 13 */
                expect_direct_rate("dgx2.topo", c, r, p);
        }
    plan_set_free(&ps);
    topo_free(&t);
}

/* A relabelled plan's copied tuning is the one tuning it directly finds, and its simulated
 * time is the original's. DGX-1V: two orbits of roots, {0,1,4,5} and {2,3,6,7}. */
Test(symmetry, copied_tuning_is_the_direct_tuning, .timeout = 120)
{
    struct topo t;
    struct plan_set ps;
    tu_plan_alloc("dgx1v.topo", NULL, 0, 1u << COLL_BROADCAST, -1, &t, &ps);
    struct sim_params sp;
    sim_params_default(&sp);
    struct diag d;
    diag_init(&d);
    cr_assert_eq(plan_tune(&ps, &sp, &d), BK_OK);
    const int rep[8] = {0, 0, 2, 2, 0, 0, 2, 2};
    for (int r = 0; r < 8; r++) {
        struct plan *p = (struct plan *)tu_find_plan(&ps, COLL_BROADCAST, r);
        cr_expect_eq(p->relabels ? ps.v[p->relabels - 1].root : r, rep[r], "root %d", r);
        tu_check_trees(&t, &p->main, COLL_BROADCAST);
        if (r != 5 && r != 7)
            continue;
        const struct plan *o = &ps.v[p->relabels - 1];
        for (double bytes = 1 << 16; bytes <= 1 << 28; bytes *= 16) {
            double a, b;
            cr_assert_eq(sim_tree_plan(&ps, o, bytes, 1 << 18, &sp, &a, &d), BK_OK);
            cr_assert_eq(sim_tree_plan(&ps, p, bytes, 1 << 18, &sp, &b, &d), BK_OK);
            cr_expect(fabs(a - b) <= 1e-9 * a, "root %d, %g B: %g us, its original %g", r,
                      bytes, b, a);
        }
        struct plan_tuning copied = p->tune;
        p->tune = (struct plan_tuning){0};
        int was = p->relabels;
        p->relabels = 0;
        cr_assert_eq(plan_tune(&ps, &sp, &d), BK_OK); /* tunes p (and copies the rest again) */
        cr_expect_eq(p->tune.n, copied.n, "root %d: %d ranges directly, %d copied", r,
                     p->tune.n, copied.n);
        for (int i = 0; i < copied.n && i < p->tune.n; i++) {
            cr_expect_eq(p->tune.r[i].algo, copied.r[i].algo);
            cr_expect_eq(p->tune.r[i].chunk_bytes, copied.r[i].chunk_bytes);
            cr_expect(p->tune.r[i].min_bytes == copied.r[i].min_bytes);
        }
        free(copied.r);
        p->relabels = was;
    }
    diag_free(&d);
    plan_set_free(&ps);
    topo_free(&t);
}

/* The full topology's GPU number of rank r of an allocation (its canonical id gpuN). */
static int gpu_number(const struct topo *t, int r)
{
    cr_assert(strncmp(t->nodes[r].id, "gpu", 3) == 0);
    return atoi(t->nodes[r].id + 3);
}

static int rank_of(const struct topo *t, int gpu)
{
    for (int r = 0; r < t->ngpus; r++)
        if (gpu_number(t, r) == gpu)
            return r;
    cr_assert_fail("gpu%d is not in the allocation", gpu);
    return -1;
}

/* Every tree edge of shared plan set ps that is one GPU-to-GPU link of ps's allocation is a
 * link of the same kind, count and rate between the full topology's GPUs dev[] it maps to. */
static void expect_edges_on(const struct topo *full, const struct plan_set *ps, const int *dev)
{
    const struct topo *t = ps->topo;
    for (int k = 0; k < ps->n; k++) {
        const struct plan_trees *pt = &ps->v[k].main;
        for (int i = 0; i < pt->trees.n; i++) {
            const struct ptree *tr = &pt->trees.t[i];
            for (int v = 0; v < t->ngpus; v++) {
                if (v == tr->root || tr->path_off[v + 1] - tr->path_off[v] != 1)
                    continue;
                const struct topo_link *l = &t->links[pt->g->link[tr->path_arc[tr->path_off[v]]]];
                if (l->src >= t->ngpus || l->dst >= t->ngpus)
                    continue;
                int hit = 0;
                for (int m = 0; m < full->nlinks && !hit; m++) {
                    const struct topo_link *f = &full->links[m];
                    hit = f->src == dev[l->src] && f->dst == dev[l->dst] && f->kind == l->kind &&
                          f->count == l->count && f->gbps == l->gbps;
                }
                cr_assert(hit, "no link gpu%d-gpu%d like %s-%s", dev[l->src], dev[l->dst],
                          t->nodes[l->src].id, t->nodes[l->dst].id);
            }
        }
    }
}

Test(symmetry, library_allocations_hold_the_plans_they_share, .timeout = 300)
{
    struct topo full;
    tu_load_alloc("dgx1v.topo", NULL, 0, &full);
    struct plan_opts o;
    plan_opts_default(&o);
    struct allocations a;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(plan_allocations(&full, &o, NULL, 1, &a, &d), BK_OK);
    cr_expect_eq(a.n, 247);
    cr_expect(a.classes > 7 && a.classes < a.n, "%d classes", a.classes);
    int members = 0;
    for (int i = 0; i < a.n; i++) {
        if (a.same[i] == i) {
            cr_expect_gt(a.sets[i].n, 0);
            continue;
        }
        int j = a.same[i], n = a.topos[i].ngpus;
        cr_assert(j < i && a.same[j] == j && a.topos[j].ngpus == n && a.sets[i].n == 0);
        const int *dev = a.devices + (size_t)i * ALLOCATIONS_MAX_GPUS;
        unsigned mine = 0, got = 0;
        for (int r = 0; r < n; r++) {
            mine |= 1u << gpu_number(&a.topos[i], r);
            got |= 1u << dev[r];
        }
        cr_expect_eq(got, mine, "allocation %d: devices are not its GPUs", i);
        expect_edges_on(&full, &a.sets[j], dev);
        if (members++ % 6 != 0) /* a sample is planned directly */
            continue;
        struct plan_set direct;
        cr_assert_eq(plan_all(&a.topos[i], &o, &direct, &d), BK_OK);
        for (int k = 0; k < a.sets[j].n; k++) {
            const struct plan *p = &a.sets[j].v[k];
            int root = p->root < 0 ? -1 : rank_of(&a.topos[i], dev[p->root]);
            const struct plan *q = tu_find_plan(&direct, p->coll, root);
            cr_expect(fabs(q->main.algbw - p->main.algbw) <= 1e-6 * q->main.algbw &&
                      fabs(q->main.bound - p->main.bound) <= 1e-6 * q->main.bound,
                      "allocation %d, %s root %d: %g of %g GB/s directly, %g of %g shared", i,
                      collective_name(p->coll), root, q->main.algbw, q->main.bound,
                      p->main.algbw, p->main.bound);
        }
        plan_set_free(&direct);
    }
    cr_expect_gt(members, 0);
    allocations_free(&a);
    diag_free(&d);
    topo_free(&full);
}

/* Past the old limit of 12 GPUs: 13 GPUs on one NVSwitch are 8178 GPU sets of 12 sizes, and
 * the library holds 8178 plans but one schedule table per size. */
Test(symmetry, library_of_thirteen_gpus_plans_one_class_per_size, .timeout = 120)
{
    char *text = tu_nvswitch_text("sw13", 13, 2);
    char *topo = tu_temp_file(".topo", text, strlen(text)), *out = tu_temp_file(".cu", "", 0);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--all-allocations", "--no-tune", "-o", out,
                                            topo, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    char *code = tu_slurp(out, NULL);
    cr_assert_not_null(code);
    int plans = 0, tables = 0;
    for (const char *p = code; (p = strstr(p, "static const struct blink_plan blinkgen_")); p++)
        plans++;
    for (const char *p = code; (p = strstr(p, "static const struct blink_plan_schedule ")); p++)
        tables++;
    cr_expect_eq(plans, (1 << 13) - 13 - 1);
    cr_expect_eq(tables, 12);
    free(code);
    tu_run_free(&r);
    unlink(topo);
    unlink(out);
    free(topo);
    free(out);
    free(text);
}

static void expect_twins(const struct topo *t, const int *want)
{
    int twin[8];
    cr_assert_leq(t->nservers, 8);
    cr_assert_eq(topo_server_twins(t, twin), BK_OK);
    for (int s = 0; s < t->nservers; s++)
        cr_expect_eq(twin[s], want[s], "server %d: twin %d, not %d", s, twin[s], want[s]);
}

/* Four DGX-1V servers on one switch: swapping the first with any other takes GPU k of one onto
 * GPU k of the other, fixes the switch, and is an automorphism (checked link by link here). A
 * NIC of server 2 with a double link to the switch, or an allocation of half of server 1, leave
 * that server alike no other. */
Test(symmetry, identical_servers_are_swapped)
{
    struct topo t;
    tu_load_alloc("cluster-4x-dgx1v.topo", NULL, 0, &t);
    cr_assert_eq(t.nservers, 4);
    expect_twins(&t, (const int[]){0, 0, 0, 0});
    int *perm = malloc((size_t)t.nnodes * sizeof *perm), ib0 = -1;
    for (int v = 0; v < t.nnodes; v++)
        if (t.nodes[v].kind == TOPO_NET_SWITCH)
            ib0 = v;
    cr_assert_geq(ib0, 0);
    for (int s = 1; s < 4; s++) {
        topo_server_swap(&t, 0, s, perm);
        expect_automorphism(&t, perm);
        cr_expect_eq(perm[ib0], ib0);
        for (int k = 0; k < 8; k++)
            cr_expect(perm[k] == 8 * s + k && perm[8 * s + k] == k, "server %d, GPU %d", s, k);
    }
    free(perm);
    topo_free(&t);

    char *path = tu_src_path("topologies/cluster-4x-dgx1v.topo");
    char *text = tu_slurp(path, NULL);
    cr_assert_not_null(text);
    const char *line = "link s2.mlx5_1 ib0 kind=net\n";
    char *at = strstr(text, line);
    cr_assert_not_null(at);
    char *edited = bk_asprintf("%.*slink s2.mlx5_1 ib0 kind=net count=2\n%s", (int)(at - text),
                               text, at + strlen(line));
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("c4.topo", edited, TOPO_FMT_TEXT, NULL, &t, &d), BK_OK);
    expect_twins(&t, (const int[]){0, 0, 2, 0});
    topo_free(&t);
    diag_free(&d);
    free(edited);
    free(text);
    free(path);

    int half[28];
    for (int k = 0; k < 28; k++)
        half[k] = k < 12 ? k : k + 4; /* GPUs 0-11 and 16-31 */
    tu_load_alloc("cluster-4x-dgx1v.topo", half, 28, &t);
    expect_twins(&t, (const int[]){0, 1, 0, 0});
    topo_free(&t);
}

/* Clusters plan the roots of their first server and relabel the rest by server swaps: every
 * copy is a packing rooted where it says, as fast as that root planned directly, and with
 * numbers_only_copies the copies keep those numbers and no trees. */
Test(symmetry, cluster_roots_relabelled_by_server_swaps, .timeout = 120)
{
    struct topo t;
    struct plan_set ps, lean;
    tu_plan_alloc("cluster-4x-dgx1v.topo", NULL, 0, ROOTED, -1, &t, &ps);
    cr_assert_not_null(ps.cluster);
    struct plan_opts o;
    plan_opts_default(&o);
    o.collectives = ROOTED;
    o.numbers_only_copies = 1;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(plan_all(&t, &o, &lean, &d), BK_OK);
    cr_assert_eq(lean.n, ps.n);
    for (int c = COLL_BROADCAST; c <= COLL_REDUCE; c++)
        for (int r = 0; r < t.ngpus; r++) {
            const struct plan *p = tu_find_plan(&ps, c, r), *q = tu_find_plan(&lean, c, r);
            expect_root_plan(&t, p, c, r, r >= 8);
            cr_expect_eq(q->relabels, p->relabels);
            cr_expect_eq(q->main.trees.n, r >= 8 ? 0 : p->main.trees.n);
            cr_expect_eq(plan_tree_count(&lean, q), p->main.trees.n);
            cr_expect(q->main.algbw == p->main.algbw && q->main.bound == p->main.bound);
            if (r % 9 == 4) /* roots 4, 13, 22, 31 */
                expect_direct_rate("cluster-4x-dgx1v.topo", c, r, p);
        }
    plan_set_free(&lean);
    plan_set_free(&ps);
    diag_free(&d);
    topo_free(&t);
}

/* tests/data/nvl18-pairs.topo, with `extra` lines appended, read into t. */
static void load_pairs(const char *extra, struct topo *t)
{
    char *path = tu_src_path("tests/data/nvl18-pairs.topo");
    char *text = tu_slurp(path, NULL);
    cr_assert_not_null(text, "%s", path);
    struct strbuf sb;
    sb_init(&sb);
    sb_puts(&sb, text);
    sb_puts(&sb, extra);
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("nvl18-pairs.topo", sb.data, TOPO_FMT_TEXT, NULL, t, &d), BK_OK);
    diag_free(&d);
    sb_free(&sb);
    free(text);
    free(path);
}

/* The GB200 NVL72's GPUs come in 36 Grace pairs that its symmetries permute, the pairs and the
 * two GPUs of each; 13 GPUs on one NVSwitch are one block. The DGX-1V's hybrid cube mesh has no
 * such blocks, and one NVLink more inside one pair of the quarter NVL72 breaks its blocks. */
Test(symmetry, gpu_blocks_are_proven_by_automorphisms)
{
    struct topo t;
    int block[72], nb = -1;
    tu_load_alloc("gb200-nvl72.topo", NULL, 0, &t);
    cr_assert_eq(topo_gpu_blocks(&t, block, &nb), BK_OK);
    cr_expect_eq(nb, 36);
    for (int g = 0; g < 72; g++)
        cr_expect_eq(block[g], g / 2, "gpu%d: block %d", g, block[g]);
    topo_free(&t);

    tu_load_alloc("dgx1v.topo", NULL, 0, &t);
    cr_assert_eq(topo_gpu_blocks(&t, block, &nb), BK_OK);
    cr_expect_eq(nb, 0);
    topo_free(&t);

    load_pairs("", &t);
    cr_assert_eq(topo_gpu_blocks(&t, block, &nb), BK_OK);
    cr_expect_eq(nb, 9);
    topo_free(&t);
    load_pairs("link gpu4 gpu5\n", &t);
    cr_assert_eq(topo_gpu_blocks(&t, block, &nb), BK_OK);
    cr_expect_eq(nb, 0, "pair 2 is unlike the others");
    topo_free(&t);

    char *text = tu_nvswitch_text("sw13", 13, 2);
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_string("sw13.topo", text, TOPO_FMT_TEXT, NULL, &t, &d), BK_OK);
    cr_assert_eq(topo_gpu_blocks(&t, block, &nb), BK_OK);
    cr_expect_eq(nb, 1);
    for (int g = 0; g < 13; g++)
        cr_expect_eq(block[g], 0);
    topo_free(&t);
    diag_free(&d);
    free(text);
}

/* Above 16 GPUs a library holds one plan per class: on 9 Grace pairs, p full pairs and s single
 * GPUs with p + s <= 9 and 2p + s >= 2, 53 classes of its 2^18 sets. Each class's plan is that
 * of the set taking the first GPUs of the first pairs, and a root its symmetries copy keeps its
 * numbers and the map that takes its source's root onto it. */
Test(symmetry, a_library_above_16_gpus_plans_each_class_of_blocks, .timeout = 300)
{
    struct topo full;
    load_pairs("", &full);
    struct plan_opts o;
    plan_opts_default(&o);
    struct allocations a;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(plan_allocations(&full, &o, NULL, 1, &a, &d), BK_OK, "%s",
                 diag_first_error(&d) ? diag_first_error(&d) : "");
    cr_expect_eq(a.n, 53);
    cr_expect_eq(a.classes, 53);
    cr_assert_eq(a.ndevices, 18);
    cr_assert_not_null(a.block);
    for (int dv = 0; dv < 18; dv++)
        cr_expect_eq(a.block[dv], dv / 2);
    int seen[10][10] = {{0}}, copies = 0;
    for (int i = 0; i < a.n; i++) {
        const struct topo *t = &a.topos[i];
        int held[9] = {0}, p = 0, s = 0;
        for (int r = 0; r < t->ngpus; r++)
            held[gpu_number(t, r) / 2]++;
        for (int b = 0; b < 9; b++) { /* full pairs, then singles, then none */
            cr_expect(b == 0 || held[b] <= held[b - 1], "class %d: pair %d", i, b);
            p += held[b] == 2;
            s += held[b] == 1;
        }
        cr_expect_eq(seen[p][s]++, 0, "class %d: %d pairs and %d singles twice", i, p, s);
        cr_expect(i == 0 || a.topos[i - 1].ngpus <= t->ngpus, "classes by size");
        for (int k = 0; k < a.sets[i].n; k++) {
            const struct plan *q = &a.sets[i].v[k];
            if (!q->relabels)
                continue;
            const struct plan *src = &a.sets[i].v[q->relabels - 1];
            cr_assert_not_null(q->relabel_map);
            cr_expect_eq(q->relabel_map[src->root], q->root);
            cr_expect_eq(q->main.trees.n, 0, "a copy keeps numbers only");
            cr_expect(fabs(q->main.algbw - src->main.algbw) <= 1e-9 * src->main.algbw);
            copies++;
        }
    }
    cr_expect_gt(copies, 500, "%d roots copied", copies);
    allocations_free(&a);
    diag_free(&d);
    topo_free(&full);
}
