/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * hostile_fixtures.h - every topology fixture blinkc reads (topologies/ and the real hwloc files
 * in ../shared/fixtures), for the tests that must cover all of them (test_hostile_emit,
 * test_determinism). hf_check_complete fails when topologies/ holds a file this list lacks, so a
 * new fixture cannot be skipped silently.
 */
#ifndef BK_HOSTILE_FIXTURES_H
#define BK_HOSTILE_FIXTURES_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "sanitized.h"
#include "testutil.h"

struct hf_fixture {
    const char *rel; /* relative to the source tree, or to ../shared when shared */
    int shared;
    int heavy; /* planning takes over a second (plain build); 2: several seconds, and its
                  per-size tuning minutes */
};

static const struct hf_fixture hf_fixtures[] = {
    {"topologies/cluster-4x-a100-forestcoll.topo", 0, 0},
    {"topologies/cluster-4x-dgx1v.topo", 0, 0},
    {"topologies/cluster-8x-hgx-h100.topo", 0, 2},
    {"topologies/dgx-a100.topo", 0, 0},
    {"topologies/dgx1p.topo", 0, 0},
    {"topologies/dgx1v.hwloc.xml", 0, 0},
    {"topologies/dgx1v.nccl.xml", 0, 0},
    {"topologies/dgx1v.smi.txt", 0, 0},
    {"topologies/dgx1v.topo", 0, 0},
    {"topologies/dgx2.topo", 0, 1},
    {"topologies/gb200-nvl72.topo", 0, 2},
    {"topologies/hgx-b200.topo", 0, 0},
    {"topologies/hgx-h100.topo", 0, 0},
    {"topologies/hgx-h200.topo", 0, 0},
    {"topologies/mi250.topo", 0, 2},
    {"topologies/pcie8.topo", 0, 0},
    {"topologies/rtx4090x8.topo", 0, 0},
    {"fixtures/hwloc/nvidiaDGX2.xml", 1, 1},
    {"fixtures/hwloc/power8gpudistances.xml", 1, 0},
};

/* X(name, k) for every fixture above, in order: one Criterion test per fixture, so they run
 * side by side (k indexes hf_fixtures). */
#define HF_EACH(X)                                                                                 \
    X(cluster_4x_a100_forestcoll, 0) X(cluster_4x_dgx1v, 1) X(cluster_8x_hgx_h100, 2)              \
    X(dgx_a100, 3) X(dgx1p, 4) X(dgx1v_hwloc, 5) X(dgx1v_nccl, 6) X(dgx1v_smi, 7) X(dgx1v, 8)      \
    X(dgx2, 9) X(gb200_nvl72, 10) X(hgx_b200, 11) X(hgx_h100, 12) X(hgx_h200, 13) X(mi250, 14)     \
    X(pcie8, 15) X(rtx4090x8, 16) X(shared_nvidia_dgx2, 17) X(shared_power8, 18)
#define HF_NFIXTURES ((int)(sizeof hf_fixtures / sizeof hf_fixtures[0]))
/* How many HF_EACH names; the tests check it against HF_NFIXTURES. */
#define HF_COUNT_ONE(name, k) +1
#define HF_EACH_N (0 HF_EACH(HF_COUNT_ONE))

/* The sanitizer build checks memory: the huge fixtures (heavy 2) run no code the others do not,
 * at many times their cost, so it skips them. */
#define HF_SKIP_HUGE_UNDER_SANITIZERS(f)                                                           \
    do {                                                                                           \
        if (TU_SANITIZED && (f)->heavy > 1)                                                        \
            cr_skip_test("%s: the plain build covers the huge fixtures", (f)->rel);              \
    } while (0)

/* The fixture's path (caller frees). */
static inline char *hf_path(const struct hf_fixture *f)
{
    return f->shared ? tu_shared_path(f->rel) : tu_src_path(f->rel);
}

/* Every regular file in topologies/ is in the list above. */
static inline void hf_check_complete(void)
{
    char *dir = tu_src_path("topologies");
    DIR *dp = opendir(dir);
    cr_assert_not_null(dp, "cannot list %s", dir);
    struct dirent *e;
    while ((e = readdir(dp))) {
        if (e->d_name[0] == '.')
            continue;
        int found = 0;
        for (int i = 0; i < HF_NFIXTURES && !found; i++)
            found = !hf_fixtures[i].shared &&
                    strcmp(hf_fixtures[i].rel + strlen("topologies/"), e->d_name) == 0;
        cr_expect(found, "topologies/%s is not in tests/unit/hostile_fixtures.h", e->d_name);
    }
    closedir(dp);
    free(dir);
}

#endif
