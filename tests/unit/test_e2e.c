/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_e2e.c - the schedules blinkc generates, run by the host backend and checked element by
 * element: every fixture's generated source, and the DGX-1V library of every allocation
 * (blinkc --all-allocations) for each allocation of 3 to 8 GPUs, and a library by classes (18
 * GPUs in 9 Grace pairs) on sets of every shape, in any device order.
 *
 * The generated sources are built by make (templates/local.mk), each compiled with its
 * blinkCommInitAll renamed to e2e_init_NAME so that all of them link into this one program.
 * Each case is every collective x datatype x op, with counts drawn (seeded, so a failure
 * repeats) from 0, 1, primes and counts of many chunks, in place or not, thread per rank or
 * group style, NULL or user streams; rt_testutil.c poisons the outputs and computes the
 * reference independently (integers bit-exact, floats within its stated tolerance).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_testutil.h"
#include "sanitized.h"

typedef blinkResult_t (*init_fn)(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_dgx1p(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_dgx1v(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_dgx2(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_dgx_a100(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_hgx_h100(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_pcie8(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_cluster(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_dgx1v_all(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_nvl18_pairs(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_rtx4090x8(blinkComm_t *, int, const int *);
blinkResult_t e2e_init_pcie8_no_p2p(blinkComm_t *, int, const int *);
const struct blink_plan_library *e2e_lib_nvl18_pairs(void);

/* 4-byte chunks of a float are 16 bytes: a count of a few hundred crosses dozens of chunks. */
#define CHUNK_BYTES "64"
static const size_t counts[] = {0, 1, 2, 3, 7, 13, 31, 97, 251, 509, 1021};
#define NCOUNTS (sizeof counts / sizeof counts[0])

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;
static unsigned next_random(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state >> 32);
}

/* Every collective x datatype x op on comms[n], roots, counts and calling styles drawn. */
static int sweep(blinkComm_t *comms, int n, const char *label)
{
    int runs = 0;
    for (int coll = 0; coll < BLINK_PLAN_COLLS; coll++) {
        int has_op = coll != BLINK_PLAN_BROADCAST && coll != BLINK_PLAN_ALLGATHER;
        for (int dt = 0; dt < blinkNumTypes; dt++)
            for (int op = 0; op < (has_op ? blinkNumOps : 1); op++) {
                unsigned r = next_random();
                struct rt_case c = {coll, (int)(r % (unsigned)n), (blinkDataType_t)dt,
                                    (blinkRedOp_t)op, counts[(r >> 8) % NCOUNTS],
                                    (int)((r >> 16) & 1), (r >> 17) & 1 ? RT_GROUP : RT_THREADS,
                                    (int)((r >> 18) & 1)};
                char why[512] = "";
                cr_assert_eq(rt_run_check(comms, n, &c, why, sizeof why), 0,
                             "%s: coll %d dt %d op %d count %zu root %d inplace %d style %d "
                             "streams %d: %s", label, coll, dt, op, c.count, c.root, c.inplace,
                             c.style, c.streams, why);
                runs++;
            }
    }
    return runs;
}

/* A fixture runs its trees, then the rings it hands small sizes to, as chains, since the host
 * runtime has no NCCL (plans of several servers have no rings, plan_tune.h), then the hybrid:
 * its trees with its PCIe trees (where it has none, the trees again). */
enum { TREES = 1, RINGS = 2, HYBRID = 4 };
static void run_fixture(const char *name, init_fn init, int n, unsigned algos)
{
    static const char *const algo[] = {"trees", "rings", "hybrid"};
    blinkComm_t comms[32];
    setenv("BLINK_CHUNK_BYTES", CHUNK_BYTES, 1);
    for (int a = 0; a < 3; a++) {
        if (!(algos & (1u << a)))
            continue;
        char label[64];
        snprintf(label, sizeof label, "%s, %s", name, algo[a]);
        setenv("BLINK_ALGO", algo[a], 1);
        cr_assert_eq(init(comms, n, NULL), blinkSuccess, "%s: %s", label,
                     blinkGetLastError(NULL));
        cr_expect_eq(sweep(comms, n, label),
                     2 * blinkNumTypes + 3 * blinkNumTypes * blinkNumOps);
        for (int v = 0; v < n; v++)
            cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    }
}

Test(e2e, dgx1p, .timeout = 120)
{
    run_fixture("dgx1p", e2e_init_dgx1p, 8, TREES | RINGS | HYBRID);
}
Test(e2e, dgx1v, .timeout = 120)
{
    run_fixture("dgx1v", e2e_init_dgx1v, 8, TREES | RINGS | HYBRID);
}
Test(e2e, dgx2, .timeout = 300)
{
    run_fixture("dgx2", e2e_init_dgx2, 16, TREES | RINGS);
}
Test(e2e, dgx_a100, .timeout = 120)
{
    run_fixture("dgx-a100", e2e_init_dgx_a100, 8, TREES | RINGS);
}
Test(e2e, hgx_h100, .timeout = 120)
{
    run_fixture("hgx-h100", e2e_init_hgx_h100, 8, TREES | RINGS);
}
Test(e2e, pcie8, .timeout = 120)
{
    run_fixture("pcie8", e2e_init_pcie8, 8, TREES | RINGS);
}
/* GPUs without peer access: every PCIe path between GPUs planned through host memory. */
Test(e2e, rtx4090x8, .timeout = 120)
{
    run_fixture("rtx4090x8", e2e_init_rtx4090x8, 8, TREES | RINGS);
}
Test(e2e, pcie8_no_p2p, .timeout = 120)
{
    run_fixture("pcie8 --no-p2p", e2e_init_pcie8_no_p2p, 8, TREES | RINGS);
}
Test(e2e, cluster_4x_dgx1v, .timeout = 300)
{
    run_fixture("cluster", e2e_init_cluster, 32, TREES);
}

/* The committed DGX-1V source carries blinkc's per-size choice: on the full machine rings
 * cannot be beaten for allreduce's bandwidth (test_tune.c), and NCCL 2.18 and later (the
 * model's NCCL) costs less per call than the trees' launch, so every size goes to NCCL's rings,
 * in chunks the runtime can stage (at most 4 MiB). */
Test(e2e, dgx1v_golden_hands_allreduce_to_rings)
{
    blinkComm_t comms[8];
    unsetenv("BLINK_ALGO");
    unsetenv("BLINK_CHUNK_BYTES");
    cr_assert_eq(e2e_init_dgx1v(comms, 8, NULL), blinkSuccess, "%s", blinkGetLastError(NULL));
    for (size_t count = 1; count <= ((size_t)1 << 28); count *= 16) {
        int algo = -1;
        size_t chunk = 0;
        cr_assert_eq(blinkrtCommChoice(comms[0], BLINK_PLAN_ALLREDUCE, -1, count, blinkFloat32,
                                       &algo, &chunk), blinkSuccess);
        cr_expect_eq(algo, BLINK_PLAN_RINGS, "%zu floats", count);
        cr_expect(chunk >= 4096 && chunk <= ((size_t)4 << 20), "chunk %zu", chunk);
    }
    for (int v = 0; v < 8; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
}

/* The library: each allocation of k GPUs finds its own plan by its device list (a test per k,
 * so they run in parallel); returns how many there were. Under ASan and UBSan, whose cost is
 * many times the plain build's, every third allocation runs the sweep (trees and rings in turn);
 * the plain build runs every one. */
#define SWEEP_EVERY (TU_SANITIZED ? 3 : 1)
static int run_allocations(int k)
{
    setenv("BLINK_CHUNK_BYTES", CHUNK_BYTES, 1);
    int allocations = 0;
    for (unsigned mask = 0; mask < 256; mask++) {
        int dev[8], n = 0;
        for (int g = 0; g < 8; g++)
            if (mask & (1u << g))
                dev[n++] = g;
        if (n != k)
            continue;
        blinkComm_t comms[8];
        char label[64];
        /* In turn, allocations run their trees, their rings (as chains) and their hybrid (the
         * trees with the PCIe trees, where the allocation has a PCIe set). */
        const char *algo = (const char *[]){"trees", "rings", "hybrid"}[allocations % 3];
        setenv("BLINK_ALGO", algo, 1);
        snprintf(label, sizeof label, "DGX-1V GPUs 0x%02x, %s", mask, algo);
        cr_assert_eq(e2e_init_dgx1v_all(comms, n, dev), blinkSuccess, "%s: %s", label,
                     blinkGetLastError(NULL));
        if (allocations % SWEEP_EVERY == 0)
            sweep(comms, n, label);
        for (int v = 0; v < n; v++)
            cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
        allocations++;
    }
    return allocations;
}

/* C(8, k) allocations of k GPUs: every one is connected on DGX-1V. */
Test(e2e, dgx1v_allocations_of_3, .timeout = 600) { cr_expect_eq(run_allocations(3), 56); }
Test(e2e, dgx1v_allocations_of_4, .timeout = 600) { cr_expect_eq(run_allocations(4), 70); }
Test(e2e, dgx1v_allocations_of_5, .timeout = 600) { cr_expect_eq(run_allocations(5), 56); }
Test(e2e, dgx1v_allocations_of_6, .timeout = 600) { cr_expect_eq(run_allocations(6), 28); }
Test(e2e, dgx1v_allocations_of_7_and_8, .timeout = 600)
{
    cr_expect_eq(run_allocations(7) + run_allocations(8), 9);
}

/* A device list in another order than the library's plans runs that plan with the ranks
 * relabelled; a set of devices with no plan is refused with the devices named. */
Test(e2e, dgx1v_library_relabels_any_order, .timeout = 120)
{
    int reversed[3] = {3, 2, 0}, unknown[3] = {3, 2, 9};
    blinkComm_t comms[3];
    setenv("BLINK_CHUNK_BYTES", CHUNK_BYTES, 1);
    unsetenv("BLINK_ALGO");
    cr_assert_eq(e2e_init_dgx1v_all(comms, 3, reversed), blinkSuccess, "%s",
                 blinkGetLastError(NULL));
    for (int v = 0; v < 3; v++) {
        int dev = -1;
        cr_expect_eq(blinkCommCuDevice(comms[v], &dev), blinkSuccess);
        cr_expect_eq(dev, reversed[v]);
    }
    sweep(comms, 3, "DGX-1V GPUs 3,2,0");
    for (int v = 0; v < 3; v++)
        cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    cr_expect_eq(e2e_init_dgx1v_all(comms, 3, unknown), blinkInvalidUsage);
    cr_expect(strstr(blinkGetLastError(NULL), "3,2,9") != NULL, "%s", blinkGetLastError(NULL));
}

/* A library by classes (tests/data/nvl18-pairs.topo, 53 plans): a set of devices in any order
 * runs its class's plan, each of its pairs and single GPUs taken onto the plan's; roots that the
 * source writes as relabellings run the trees init builds from them. A device the server does
 * not have, or a device twice, finds no plan. */
Test(e2e, library_by_classes_runs_any_set, .timeout = 600)
{
    static const int sizes[] = {2, 3, 5, 8, 9, 18};
    static const int sets[][18] = {
        {17, 4},                                  /* two singles */
        {3, 2, 9},                                /* a pair and a single */
        {16, 1, 17, 0, 8},                        /* two pairs and a single */
        {11, 5, 10, 4, 15, 14, 13, 7},            /* three pairs and two singles */
        {1, 3, 5, 7, 9, 11, 13, 15, 17},          /* nine singles */
        {17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0},
    };
    setenv("BLINK_CHUNK_BYTES", CHUNK_BYTES, 1);
    unsetenv("BLINK_ALGO");
    blinkComm_t comms[18];
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        int n = sizes[k];
        cr_assert_eq(e2e_init_nvl18_pairs(comms, n, sets[k]), blinkSuccess, "set %zu: %s", k,
                     blinkGetLastError(NULL));
        for (int v = 0; v < n; v++) {
            int dev = -1;
            cr_expect_eq(blinkCommCuDevice(comms[v], &dev), blinkSuccess);
            cr_expect_eq(dev, sets[k][v]);
        }
        /* The class's plan: as many full pairs and single GPUs as the set. */
        struct blinkrt_stats st;
        cr_assert_eq(blinkrtCommStats(comms[0], &st), blinkSuccess);
        const struct blink_plan_library *lib = e2e_lib_nvl18_pairs();
        cr_assert(st.plan_index >= 0 && st.plan_index < lib->nplans, "plan %d", st.plan_index);
        const struct blink_plan *p = lib->plans[st.plan_index];
        cr_assert_eq(p->nranks, n);
        int mine[9] = {0}, theirs[9] = {0}, shape[2][3] = {{0}};
        for (int v = 0; v < n; v++) {
            mine[sets[k][v] / 2]++;
            theirs[p->devices[v] / 2]++;
        }
        for (int b = 0; b < 9; b++) {
            shape[0][mine[b]]++;
            shape[1][theirs[b]]++;
        }
        cr_expect(shape[0][1] == shape[1][1] && shape[0][2] == shape[1][2],
                  "set %zu: %d pairs and %d singles, plan %d: %d and %d", k, shape[0][2],
                  shape[0][1], st.plan_index, shape[1][2], shape[1][1]);
        char label[64];
        snprintf(label, sizeof label, "nvl18-pairs, set %zu of %d GPUs", k, n);
        sweep(comms, n, label);
        for (int v = 0; v < n; v++)
            cr_expect_eq(blinkCommDestroy(comms[v]), blinkSuccess);
    }
    static const int outside[2] = {3, 18}, twice[3] = {3, 3, 4};
    cr_expect_eq(e2e_init_nvl18_pairs(comms, 2, outside), blinkInvalidUsage);
    cr_expect(strstr(blinkGetLastError(NULL), "3,18") != NULL, "%s", blinkGetLastError(NULL));
    cr_expect_neq(e2e_init_nvl18_pairs(comms, 3, twice), blinkSuccess);
}
