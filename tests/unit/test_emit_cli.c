/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_emit_cli.c - blinkc -o and --templates: the output file appears only on success, a
 * template error names its FILE:LINE:COL and leaves no file, an override directory replaces
 * just the templates it holds, and the generated source links with the host runtime and starts.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef BK_SAN_CFLAGS
#define BK_SAN_CFLAGS ""
#endif
#ifndef BK_RT_NET_LIBS
#define BK_RT_NET_LIBS ""
#endif

#include "core/strbuf.h"
#include "testutil.h"

static char *tmp_dir(void)
{
    char *dir = bk_asprintf("/tmp/blinkc-tmpl-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    return dir;
}

static void put_file(const char *dir, const char *name, const char *text)
{
    char *path = bk_asprintf("%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    free(path);
}

static void remove_dir(const char *dir, const char *const *names)
{
    for (; *names; names++) {
        char *p = bk_asprintf("%s/%s", dir, *names);
        unlink(p);
        free(p);
    }
    rmdir(dir);
}

Test(emit_cli, templates_override_and_errors_leave_no_file)
{
    char *dir = tmp_dir();
    char *out = bk_asprintf("%s/out.cu", dir);
    struct tu_run r;
    /* Only header.tmpl is replaced; the others stay built in. */
    put_file(dir, "header.tmpl", "/* custom header {{blinkc_version|raw}} */\n");
    tu_run_blinkc(&r, (const char *const[]){"builtin:dgx1v", "--gpus", "0-3", "--templates", dir,
                                            "-o", out, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    struct stat st;
    cr_assert_eq(stat(out, &st), 0);
    unlink(out);
    /* A broken template: exit 1, a FILE:LINE:COL diagnostic, and no file. */
    put_file(dir, "header.tmpl", "/* fine */\n  {{topology}}\n");
    tu_run_blinkc(&r, (const char *const[]){"builtin:dgx1v", "--gpus", "0-3", "--templates", dir,
                                            "-o", out, NULL});
    cr_expect_eq(r.status, 1);
    char *where = bk_asprintf("%s/header.tmpl:2:3: error:", dir);
    cr_expect(strstr(r.err, where), "%s", r.err);
    cr_expect_neq(stat(out, &st), 0, "a failed run left %s", out);
    tu_run_free(&r);
    /* An unknown key is found at render time, with its position too. */
    put_file(dir, "header.tmpl", "{{#if nplans}}\n{{nope|int}}\n{{/if}}\n");
    tu_run_blinkc(&r, (const char *const[]){"builtin:dgx1v", "--gpus", "0-3", "--templates", dir,
                                            "-o", out, NULL});
    cr_expect_eq(r.status, 1);
    free(where);
    where = bk_asprintf("%s/header.tmpl:2:1: error: 'nope': unknown key", dir);
    cr_expect(strstr(r.err, where), "%s", r.err);
    cr_expect_neq(stat(out, &st), 0);
    tu_run_free(&r);
    /* --templates without -o is a usage error, and so is --all-allocations without -o or
     * with --gpus. */
    tu_run_blinkc(&r, (const char *const[]){"--templates", dir, NULL});
    cr_expect_eq(r.status, 2);
    tu_run_free(&r);
    tu_run_blinkc(&r, (const char *const[]){"--all-allocations", NULL});
    cr_expect_eq(r.status, 2);
    tu_run_free(&r);
    tu_run_blinkc(&r, (const char *const[]){"--all-allocations", "--gpus", "0,1", "-o", out,
                                            NULL});
    cr_expect_eq(r.status, 2);
    cr_expect_neq(stat(out, &st), 0);
    tu_run_free(&r);
    /* A server past 16 GPUs without interchangeable blocks (17 GPUs in a chain) is refused,
     * with the way out, and no source is left. */
    struct strbuf chain;
    sb_init(&chain);
    sb_puts(&chain, "topology chain17\n");
    for (int g = 0; g < 17; g++)
        sb_printf(&chain, "gpu gpu%d model=V100\n", g);
    for (int g = 0; g + 1 < 17; g++)
        sb_printf(&chain, "link gpu%d gpu%d\n", g, g + 1);
    char *topo = tu_temp_file(".topo", chain.data, chain.len);
    tu_run_blinkc(&r, (const char *const[]){"--all-allocations", "-o", out, topo, NULL});
    cr_expect_eq(r.status, 2);
    cr_expect(strstr(r.err, "17 GPUs; above 16 a library holds one plan per class") &&
                  strstr(r.err, "this server has none") && strstr(r.err, "--gpus"),
              "%s", r.err);
    cr_expect_neq(stat(out, &st), 0);
    tu_run_free(&r);
    unlink(topo);
    free(topo);
    sb_free(&chain);
    remove_dir(dir, (const char *const[]){"header.tmpl", "out.cu", NULL});
    free(where), free(out), free(dir);
}

/* Counts the lines of text that contain needle. */
static int lines_with(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

/* --all-allocations says once, not once per set, which sets no ring joins: on a line of four
 * GPUs with nothing but their links, the pairs have rings, the 3 longer sets none. */
Test(emit_cli, all_allocations_sum_up_the_sets_without_a_ring)
{
    static const char line[] = "topology line\n"
                               "gpu a model=V100\ngpu b model=V100\ngpu c model=V100\n"
                               "gpu d model=V100\n"
                               "link a b count=2\nlink b c count=2\nlink c d count=2\n";
    char *dir = tmp_dir();
    put_file(dir, "line.topo", line);
    char *topo = bk_asprintf("%s/line.topo", dir), *out = bk_asprintf("%s/out.cu", dir);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"--all-allocations", "--no-tune", "-o", out, topo,
                                            NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect_eq(lines_with(r.err, "no ring connects"), 1, "%s", r.err);
    cr_expect(strstr(r.err, "no ring connects all the GPUs of 3 of the 6 GPU sets (the first: "
                            "a, b, c)"),
              "%s", r.err);
    tu_run_free(&r);
    /* One allocation still gets its own warning. */
    tu_run_blinkc(&r, (const char *const[]){"--gpus", "0-2", "--no-tune", topo, NULL});
    cr_expect_eq(r.status, 0, "%s", r.err);
    cr_expect(strstr(r.err, "no ring connects all 3 GPUs"), "%s", r.err);
    tu_run_free(&r);
    remove_dir(dir, (const char *const[]){"line.topo", "out.cu", NULL});
    free(topo), free(out), free(dir);
}

/* The generated source, linked with the host runtime, initialises exactly its allocation. */
Test(emit_cli, generated_source_links_with_the_host_runtime)
{
    const char *build = getenv("BLINKC_BUILDDIR");
    char *lib = bk_asprintf("%s/runtime/libblinkrt-host.a", build ? build : ".");
    struct stat st;
    if (stat(lib, &st) != 0) {
        fprintf(stderr, "%s is not built: skipping the link test\n", lib);
        free(lib);
        return;
    }
    char *dir = tmp_dir();
    char *gen = bk_asprintf("%s/gen.cu", dir), *exe = bk_asprintf("%s/prog", dir);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"builtin:dgx1v", "--gpus", "4,5,6", "-o", gen, NULL});
    cr_assert_eq(r.status, 0, "%s", r.err);
    tu_run_free(&r);
    put_file(dir, "main.c",
             "#include <blink.h>\n#include <stdio.h>\n"
             "int main(void) {\n  blinkComm_t c[3];\n  int dev[3] = {4, 5, 6}, bad[3] = {0, 1, 2};\n"
             "  if (blinkCommInitAll(c, 3, bad) == blinkSuccess) return 1;\n"
             "  if (blinkCommInitAll(c, 3, dev) != blinkSuccess) return 2;\n"
             "  int d;\n  if (blinkCommCuDevice(c[2], &d) != blinkSuccess || d != 6) return 3;\n"
             "  for (int i = 0; i < 3; i++) blinkCommDestroy(c[i]);\n  return 0;\n}\n");
    char *main_c = bk_asprintf("%s/main.c", dir), *inc = tu_src_path("runtime/include");
    /* The runtime was built with the build's sanitizer flags (if any): link with them too,
     * and with the MPI it moves data between servers with. */
    const char *argv[48] = {"cc", "-std=c11", "-x", "c", gen, "-x", "none", main_c, "-I", inc,
                            lib, "-lpthread", "-lm", "-o", exe};
    char *san = bk_asprintf("%s %s", BK_RT_NET_LIBS, BK_SAN_CFLAGS);
    int n = 15;
    for (char *p = san, *e; *p && n < 47; p = e) {
        while (*p == ' ')
            *p++ = '\0';
        if (!*p)
            break;
        argv[n++] = p;
        for (e = p; *e && *e != ' '; e++)
            ;
    }
    argv[n] = NULL;
    tu_run_argv(&r, argv);
    cr_assert_eq(r.status, 0, "cc: %s", r.err);
    tu_run_free(&r);
    tu_run_argv(&r, (const char *const[]){exe, NULL});
    cr_expect_eq(r.status, 0, "the program failed at step %d: %s", r.status, r.err);
    tu_run_free(&r);
    remove_dir(dir, (const char *const[]){"gen.cu", "prog", "main.c", NULL});
    free(lib), free(dir), free(gen), free(exe), free(main_c), free(inc), free(san);
}
