/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_emit_golden.c - generated/: the committed sources for DGX-1P, DGX-1V and DGX-2 are
 * regenerated with the built blinkc and must match byte for byte (BLINKC_UPDATE_GOLDEN=1
 * rewrites them); the plan file written in the same run renders them again with --from-plan;
 * and each compiles as C against the host runtime headers and, where nvcc is
 * on PATH and the build was configured with it, as CUDA for sm_90 and for sm_70 when that nvcc
 * still supports it; so do the other
 * fixtures' sources, which make writes into the build tree. The same run writes the MSCCL
 * algorithm files of DGX-1V and DGX-2 (--msccl-xml), compared with generated/msccl/NAME/ file
 * by file (test_msccl runs them in its interpreter); DGX-1V has files only for the small sizes
 * where its trees run the LL protocol (NCCL runs the rest).
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/strbuf.h"
#include "testutil.h"

static const char *const goldens[] = {"dgx1p", "dgx1v", "dgx2"};
static const int with_msccl[] = {0, 1, 1};

/* The first differing line, for the failure message. */
static int first_diff_line(const char *a, const char *b)
{
    int line = 1;
    for (; *a && *a == *b; a++, b++)
        line += *a == '\n';
    return line;
}

/* got/ and want/ hold the same files byte for byte (update: got/'s files are copied into
 * want/); got/ is removed. */
static void compare_dirs(const char *want, const char *got, int update)
{
    DIR *dg = opendir(got);
    cr_assert_not_null(dg, "%s", got);
    struct dirent *e;
    int ngot = 0, nwant = 0;
    while ((e = readdir(dg))) {
        if (e->d_name[0] == '.')
            continue;
        ngot++;
        char *g = bk_asprintf("%s/%s", got, e->d_name), *w = bk_asprintf("%s/%s", want, e->d_name);
        size_t ng = 0, nw = 0;
        char *gd = tu_slurp(g, &ng), *wd = update ? NULL : tu_slurp(w, &nw);
        cr_assert_not_null(gd);
        if (update) {
            FILE *f = fopen(w, "wb");
            cr_assert_not_null(f, "%s", w);
            cr_assert_eq(fwrite(gd, 1, ng, f), ng);
            cr_assert_eq(fclose(f), 0);
        } else {
            cr_expect(wd && nw == ng && memcmp(gd, wd, ng) == 0,
                      "%s differs from what blinkc --msccl-xml writes now (or is missing); rerun "
                      "with BLINKC_UPDATE_GOLDEN=1 if the change is intended", w);
        }
        unlink(g);
        free(g), free(w), free(gd), free(wd);
    }
    closedir(dg);
    rmdir(got);
    DIR *dw = opendir(want); /* git keeps no empty directory: none is no file */
    cr_assert(dw || ngot == 0, "%s is missing (BLINKC_UPDATE_GOLDEN=1 writes it)", want);
    while (dw && (e = readdir(dw)))
        nwant += e->d_name[0] != '.';
    if (dw)
        closedir(dw);
    cr_expect_eq(nwant, ngot, "%s holds %d files, blinkc writes %d (remove stale ones)", want,
                 nwant, ngot);
}

Test(golden, generated_sources_are_up_to_date)
{
    int update = getenv("BLINKC_UPDATE_GOLDEN") && strcmp(getenv("BLINKC_UPDATE_GOLDEN"), "1") == 0;
    for (size_t i = 0; i < BK_ARRAY_LEN(goldens); i++) {
        char *want_path = bk_asprintf("generated/%s.cu", goldens[i]);
        char *golden = tu_src_path(want_path);
        char *out = bk_asprintf("/tmp/blinkc-golden-%d-%s.cu", (int)getpid(), goldens[i]);
        char *input = bk_asprintf("builtin:%s", goldens[i]);
        char *plan = bk_asprintf("/tmp/blinkc-golden-%d-%s.json", (int)getpid(), goldens[i]);
        char *again = bk_asprintf("/tmp/blinkc-golden-%d-%s-again.cu", (int)getpid(), goldens[i]);
        char xml[] = "/tmp/blinkc-golden-msccl-XXXXXX";
        cr_assert_not_null(mkdtemp(xml));
        struct tu_run r;
        tu_run_blinkc(&r, (const char *const[]){input, "-o", update ? golden : out,
                                                "--plan-json", plan,
                                                with_msccl[i] ? "--msccl-xml" : NULL, xml, NULL});
        cr_assert_eq(r.status, 0, "blinkc %s: %s", input, r.err);
        cr_expect_str_empty(r.out, "-o and --plan-json to files print nothing");
        tu_run_free(&r);
        tu_run_blinkc(&r, (const char *const[]){"--from-plan", plan, "-o", again, NULL});
        cr_assert_eq(r.status, 0, "blinkc --from-plan %s: %s", plan, r.err);
        tu_run_free(&r);
        size_t ng = 0, no = 0;
        char *g = tu_slurp(golden, &ng);
        char *o = update ? tu_slurp(golden, &no) : tu_slurp(out, &no);
        cr_assert_not_null(g, "%s is missing (BLINKC_UPDATE_GOLDEN=1 writes it)", golden);
        cr_assert_not_null(o);
        cr_expect(ng == no && memcmp(g, o, ng) == 0,
                  "%s differs from what blinkc generates now (first at line %d); rerun with "
                  "BLINKC_UPDATE_GOLDEN=1 if the change is intended", golden,
                  first_diff_line(g, o));
        size_t na = 0;
        char *a = tu_slurp(again, &na);
        cr_assert_not_null(a);
        cr_expect(na == ng && memcmp(a, g, ng) == 0,
                  "--from-plan %s renders other code than %s (first at line %d)", plan, golden,
                  first_diff_line(g, a));
        if (with_msccl[i]) {
            char *rel = bk_asprintf("generated/msccl/%s", goldens[i]);
            char *dir = tu_src_path(rel);
            compare_dirs(dir, xml, update);
            free(rel), free(dir);
        } else {
            rmdir(xml);
        }
        unlink(out), unlink(plan), unlink(again);
        free(g), free(o), free(a), free(want_path), free(golden), free(out), free(input);
        free(plan), free(again);
    }
}

static int nvcc_has(const char *list, const char *arch)
{
    const char *p = list;
    size_t n = strlen(arch);
    while ((p = strstr(p, arch))) {
        if ((p == list || p[-1] == '\n') && (p[n] == '\n' || p[n] == '\0'))
            return 1;
        p += n;
    }
    return 0;
}

/* Compile one generated source as C against the host headers and, with nvcc, as CUDA. */
static void compile_one(const char *src, const char *label, const char *inc, int nvcc, int sm70)
{
    struct tu_run r;
    char *obj = bk_asprintf("/tmp/blinkc-cc-%d-%s.o", (int)getpid(), label);
    tu_run_argv(&r, (const char *const[]){"cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-x",
                                          "c", "-c", "-I", inc, "-o", obj, src, NULL});
    cr_expect_eq(r.status, 0, "cc %s: %s", label, r.err);
    tu_run_free(&r);
    const char *archs[] = {"-arch=sm_90", sm70 ? "-arch=sm_70" : NULL};
    for (size_t a = 0; nvcc && a < BK_ARRAY_LEN(archs) && archs[a]; a++) {
        tu_run_argv(&r, (const char *const[]){"nvcc", "-c", archs[a], "-DBLINK_BACKEND_CUDA=1",
                                              "-I", inc, "-x", "cu", "-o", obj, src, NULL});
        cr_expect_eq(r.status, 0, "nvcc %s %s: %s", archs[a], label, r.err);
        tu_run_free(&r);
    }
    unlink(obj);
    free(obj);
}

/* The other fixtures' sources, which make writes into the build tree for test_e2e. */
static const char *const built[] = {"dgx_a100", "hgx_h100", "pcie8", "cluster"};

Test(golden, generated_sources_compile, .timeout = 300)
{
    char *inc = tu_src_path("runtime/include");
    const char *build = getenv("BLINKC_BUILDDIR");
    struct tu_run r;
    /* make check says which nvcc configure found: none in a build configured --without-cuda
     * (the sanitizer stages), which leaves these compiles to the CUDA build. */
    const char *configured = getenv("BLINKC_NVCC");
    int without = configured && !*configured, nvcc = 0, sm70 = 0;
    if (!without) {
        tu_run_argv(&r, (const char *const[]){"nvcc", "--list-gpu-code", NULL});
        nvcc = r.status == 0;
        sm70 = nvcc && nvcc_has(r.out, "sm_70");
        tu_run_free(&r);
    }
    if (!nvcc)
        fprintf(stderr, "%s: skipping the CUDA compiles of generated sources\n",
                without ? "this build was configured without CUDA" : "nvcc is not on PATH");
    else if (!sm70)
        fprintf(stderr, "this nvcc no longer supports sm_70: compiling generated sources for "
                        "sm_90 only\n");
    for (size_t i = 0; i < BK_ARRAY_LEN(goldens); i++) {
        char *rel = bk_asprintf("generated/%s.cu", goldens[i]);
        char *src = tu_src_path(rel);
        compile_one(src, goldens[i], inc, nvcc, sm70);
        free(rel), free(src);
    }
    for (size_t i = 0; i < BK_ARRAY_LEN(built); i++) {
        char *src = bk_asprintf("%s/tests/e2e/%s.cu", build ? build : ".", built[i]);
        compile_one(src, built[i], inc, nvcc, sm70);
        free(src);
    }
    free(inc);
}
