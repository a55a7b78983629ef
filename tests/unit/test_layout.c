/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_layout.c - the planner's folders are its stages, in the order data flows through them
 * (docs/architecture.md), and a file includes only from its own stage or an earlier one:
 * no include points back. Every source file is in a stage folder, and none is longer than
 * MAX_LINES: a file that grows past it does two jobs. And no file of the planner or the runtime
 * calls into one that calls it (tools/circles on the built libraries): a helper two files need
 * lives below both.
 */
#define _DEFAULT_SOURCE /* DT_DIR, DT_REG */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "testutil.h"

static const char *const stages[] = {"core", "topo", "read", "graph", "pack", "ilp", "ring",
                                     "plan", "sim",  "tune", "out",  "emit",  "cli"};
#define NSTAGES ((int)(sizeof stages / sizeof stages[0]))
#define MAX_LINES 800

static int stage_index(const char *name, size_t len)
{
    for (int i = 0; i < NSTAGES; i++)
        if (strlen(stages[i]) == len && strncmp(stages[i], name, len) == 0)
            return i;
    return -1;
}

static int is_source(const char *name)
{
    size_t n = strlen(name);
    return n > 2 && name[n - 2] == '.' && (name[n - 1] == 'c' || name[n - 1] == 'h');
}

/* Every `#include "STAGE/..."` of path, checked against stage `me`; returns the count. */
static int check_includes(const char *path, int me, int *back)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot open %s", path);
    char line[1024];
    int n = 0, lines = 0;
    while (fgets(line, sizeof line, f)) {
        lines++;
        const char *p = line;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, "#include \"", 10) != 0)
            continue;
        p += 10;
        const char *slash = strchr(p, '/'), *quote = strchr(p, '"');
        if (!slash || !quote || slash > quote)
            continue; /* config.h, or a header of this folder's own tests */
        int st = stage_index(p, (size_t)(slash - p));
        cr_expect(st >= 0, "%s includes \"%.*s\", which is no stage", path, (int)(quote - p), p);
        if (st > me) {
            cr_expect_leq(st, me, "%s (stage %s) includes \"%.*s\" of a later stage", path,
                          stages[me], (int)(quote - p), p);
            (*back)++;
        }
        n++;
    }
    fclose(f);
    cr_expect_leq(lines, MAX_LINES, "%s has %d lines: split it by job", path, lines);
    return n;
}

Test(layout, includes_point_only_to_earlier_stages_and_files_stay_small)
{
    char *root = tu_src_path("planner");
    DIR *d = opendir(root);
    cr_assert_not_null(d, "cannot open %s", root);
    int files = 0, includes = 0, back = 0, seen[NSTAGES] = {0};
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char *path = bk_asprintf("%s/%s", root, e->d_name);
        cr_expect(!is_source(e->d_name), "%s is outside every stage folder", path);
        int me = stage_index(e->d_name, strlen(e->d_name));
        DIR *sub = me >= 0 ? opendir(path) : NULL;
        struct dirent *s;
        while (sub && (s = readdir(sub)) != NULL) {
            if (!is_source(s->d_name))
                continue;
            char *file = bk_asprintf("%s/%s", path, s->d_name);
            includes += check_includes(file, me, &back);
            files++;
            seen[me]++;
            free(file);
        }
        if (sub)
            closedir(sub);
        free(path);
    }
    closedir(d);
    free(root);
    for (int i = 0; i < NSTAGES; i++)
        cr_expect_gt(seen[i], 0, "stage %s has no files", stages[i]);
    cr_expect_gt(files, 90, "only %d planner sources found", files);
    cr_expect_gt(includes, 200, "only %d stage includes found", includes);
    cr_expect_eq(back, 0, "%d includes point back to a later stage", back);
}

/* tools/circles on an archive of the build: no output, exit 0. */
static void expect_no_circles(const char *archive)
{
    const char *build = getenv("BLINKC_BUILDDIR");
    char *lib = bk_asprintf("%s/%s", build ? build : ".", archive);
    char *tool = tu_src_path("tools/circles");
    const char *argv[] = {tool, lib, NULL};
    struct tu_run r;
    tu_run_argv(&r, argv);
    cr_expect_eq(r.status, 0, "%s: files that call each other (exit %d):\n%s%s", archive, r.status,
                 r.out, r.err);
    cr_expect_str_empty(r.out, "%s: circles:\n%s", archive, r.out);
    tu_run_free(&r);
    free(tool);
    free(lib);
}

Test(layout, no_planner_file_calls_into_one_that_calls_it)
{
    expect_no_circles("planner/libblinkc.a");
}

Test(layout, no_runtime_file_calls_into_one_that_calls_it)
{
    expect_no_circles("runtime/libblinkrt-host.a");
    expect_no_circles("runtime/libblink-nccl-host.a");
    /* The CUDA archives where nvcc built them. */
    const char *build = getenv("BLINKC_BUILDDIR");
    char *cuda = bk_asprintf("%s/runtime/libblinkrt-cuda.a", build ? build : ".");
    if (access(cuda, R_OK) == 0) {
        expect_no_circles("runtime/libblinkrt-cuda.a");
        expect_no_circles("runtime/libblink-nccl-cuda.a");
    }
    free(cuda);
}

/* ------------------------------------------------------------------ the runtime */

/* runtime/'s folders in the order a call flows up through them: a file includes only from its
 * own folder or an earlier one. host and cuda, the two executors, share a place and never
 * include each other. nccl/nccl.h is NCCL's API, public as include/ is. */
static const char *const rt_dirs[] = {"include", "core", "plan", "net", "host",
                                      "cuda",    "handoff", "comm", "nccl"};
#define RT_NDIRS ((int)(sizeof rt_dirs / sizeof rt_dirs[0]))
static int rt_rank(int dir) { return dir >= 5 ? dir - 1 : dir; } /* cuda beside host */

static int is_rt_source(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot && (!strcmp(dot, ".c") || !strcmp(dot, ".h") || !strcmp(dot, ".cu") ||
                   !strcmp(dot, ".cuh") || !strcmp(dot, ".cc"));
}

/* The runtime folder that holds header name, or -1 (a system or test header). */
static int rt_dir_of(const char *name)
{
    int found = -1;
    for (int i = 0; i < RT_NDIRS; i++) {
        char *rel = bk_asprintf("runtime/%s/%s", rt_dirs[i], name);
        char *path = tu_src_path(rel);
        FILE *f = fopen(path, "r");
        if (f) {
            fclose(f);
            cr_expect_eq(found, -1, "two runtime headers are called %s", name);
            found = i;
        }
        free(path);
        free(rel);
    }
    return found;
}

/* Runtime layer d's includes of path (named rel): each from layer d or an earlier one. */
static int check_layer_includes(const char *path, const char *rel, int d)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "cannot read %s", path);
    char line[512];
    int includes = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128];
        if (sscanf(line, " #include \"%127[^\"]\"", name) != 1)
            continue;
        int to = strcmp(name, "nccl.h") == 0 ? 0 : rt_dir_of(name);
        if (to < 0)
            continue;
        includes++;
        cr_expect(rt_rank(to) < rt_rank(d) || to == d, "%s includes %s from runtime/%s, a later "
                  "layer", rel, name, rt_dirs[to]);
    }
    fclose(f);
    return includes;
}

/* Every source file of folder rel (from the source tree's root): at most MAX_LINES lines, and,
 * where layer >= 0 (runtime/'s layer), its includes from that layer or an earlier one (counted
 * into *includes). The files seen. */
static int check_folder(const char *rel, int layer, int *includes)
{
    char *dir = tu_src_path(rel);
    DIR *dh = opendir(dir);
    cr_assert_not_null(dh, "cannot open %s", dir);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        if (!is_rt_source(e->d_name))
            continue;
        char *path = bk_asprintf("%s/%s", dir, e->d_name);
        char *name = bk_asprintf("%s/%s", rel, e->d_name);
        if (layer >= 0)
            *includes += check_layer_includes(path, name, layer);
        FILE *f = fopen(path, "r");
        cr_assert_not_null(f, "cannot read %s", path);
        int lines = 0, ch;
        while ((ch = fgetc(f)) != EOF)
            lines += ch == '\n';
        fclose(f);
        cr_expect_leq(lines, MAX_LINES, "%s has %d lines (at most %d): split it by job", name,
                      lines, MAX_LINES);
        files++;
        free(name);
        free(path);
    }
    closedir(dh);
    free(dir);
    return files;
}

Test(layout, runtime_folders_include_only_from_earlier_ones)
{
    int files = 0, includes = 0;
    for (int d = 0; d < RT_NDIRS; d++) {
        char *rel = bk_asprintf("runtime/%s", rt_dirs[d]);
        files += check_folder(rel, d, &includes);
        free(rel);
    }
    cr_expect_gt(files, 50, "only %d runtime sources found", files);
    cr_expect_gt(includes, 100, "only %d runtime includes found", includes);
    char *old = tu_src_path("runtime/src");
    DIR *gone = opendir(old);
    cr_expect_null(gone, "runtime/src is back: every runtime file has a layer");
    if (gone)
        closedir(gone);
    free(old);
}

/* bench/ and tests/: files stay small too. */
Test(layout, bench_and_test_files_stay_small)
{
    const char *const dirs[] = {"bench", "tests/unit", "tests/nccl", "tests/shim", "tests/gpu",
                                "tests/fuzz"};
    int files = 0, none = 0;
    for (size_t d = 0; d < sizeof dirs / sizeof dirs[0]; d++)
        files += check_folder(dirs[d], -1, &none);
    cr_expect_gt(files, 60, "only %d bench and test sources found", files);
}
