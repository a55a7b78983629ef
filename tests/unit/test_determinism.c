/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_determinism.c - blinkc's outputs are a function of its input alone: every fixture, read,
 * planned and rendered (plan JSON, -o source, --explain) 10 times in one process (the DGX-2s 5,
 * NVL72 and 8 HGX H100 servers 3), gives the same bytes each time; and the blinkc binary under a decimal-comma locale (de_DE.UTF-8, built with
 * localedef when the system lacks it) writes exactly what it writes under LC_ALL=C.
 *
 * In-process repetitions cost a plan each but no process start. The sanitizer build checks
 * memory, not determinism (see RUNS). BLINKC_DETERMINISM_RUNS sets the count for every fixture.
 *
 * The fewest-trees ILP stops on a budget of GLPK's own work counts, not on the clock
 * (ilp_mip.c), so no difference is excused: under load the plan must not change either.
 */
#define _DEFAULT_SOURCE /* mkdtemp, setenv */
#include <criterion/criterion.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emit/emit.h"
#include "hostile_fixtures.h"
#include "core/input.h"
#include "out/plan_explain.h"
#include "out/plan_json.h"
#include "testutil.h"

/* The sanitizer build checks memory, not determinism: it runs each fixture twice (the DGX-2s
 * once) and leaves the locale checks, a tuned blinkc run twice per fixture, to the plain build
 * (together they took 14 of CI's 30 minutes under ASan). */
/* Ten runs, not the twenty of before: 74 of CI's plain-stage seconds went here. */
#define RUNS (TU_SANITIZED ? 2 : 10)
#define HEAVY_RUNS (TU_SANITIZED ? 1 : 5) /* the DGX-2s: 1.7 s a run */
#define HUGE_RUNS 3 /* GB200 NVL72: 4 s a run, 8 HGX H100 servers 13 s */

struct outputs {
    char *json, *code, *explain;
};

/* What `blinkc --plan-json J -o C --explain FILE` computes, in process (main.c's order). */
static void run_once(const char *path, struct outputs *o)
{
    struct topo t;
    struct diag d;
    diag_init(&d);
    cr_assert_eq(tu_read_file(path, TOPO_FMT_AUTO, NULL, &t, &d), BK_OK, "%s: %s", path,
                 diag_first_error(&d) ? diag_first_error(&d) : "?");
    struct plan_opts po;
    plan_opts_default(&po);
    struct plan_set ps;
    cr_assert_eq(plan_all(&t, &po, &ps, &d), BK_OK, "%s: plan failed", path);
    struct strbuf js, code, ex;
    sb_init(&js), sb_init(&code), sb_init(&ex);
    cr_assert_eq(emit_render(&code, &(struct emit_alloc){&t, &ps, 0, NULL}, 1, NULL, &d), BK_OK);
    plan_json_render(&js, &t, &ps);
    plan_explain(&ex, &ps, 1);
    cr_assert(!js.failed && !code.failed && !ex.failed);
    o->json = sb_take(&js), o->code = sb_take(&code), o->explain = sb_take(&ex);
    plan_set_free(&ps);
    topo_free(&t);
    diag_free(&d);
}

static void outputs_free(struct outputs *o)
{
    free(o->json), free(o->code), free(o->explain);
}

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    return *end || v < 1 || v > 100000 ? dflt : (int)v;
}

/* Byte-identical, or the first difference. */
static void compare(const char *what, const char *rel, int run, const char *ref, const char *got)
{
    if (strcmp(ref, got) == 0)
        return;
    size_t k = 0;
    while (ref[k] && ref[k] == got[k])
        k++;
    cr_assert_fail("%s: %s differs in run %d at byte %zu: ...%.60s... vs ...%.60s...", rel, what,
                   run, k, ref + k, got + k);
}

static void check_repeats(int i)
{
    const struct hf_fixture *f = &hf_fixtures[i];
    HF_SKIP_HUGE_UNDER_SANITIZERS(f);
    int runs = env_int("BLINKC_DETERMINISM_RUNS",
                       f->heavy > 1 ? HUGE_RUNS : f->heavy ? HEAVY_RUNS : RUNS);
    char *path = hf_path(f);
    struct outputs ref, o;
    run_once(path, &ref);
    for (int r = 1; r < runs; r++) {
        run_once(path, &o);
        compare("the -o source", f->rel, r, ref.code, o.code);
        compare("the plan JSON", f->rel, r, ref.json, o.json);
        compare("--explain", f->rel, r, ref.explain, o.explain);
        outputs_free(&o);
    }
    outputs_free(&ref);
    free(path);
}

#define FIXTURE_TEST(name, k)                                                                      \
    Test(determinism, name, .timeout = 300) { check_repeats(k); }
HF_EACH(FIXTURE_TEST)

Test(determinism, every_fixture_is_covered)
{
    cr_assert_eq(HF_NFIXTURES, HF_EACH_N, "add the new fixture to HF_EACH (hostile_fixtures.h)");
    hf_check_complete();
}

/* ---------------------------------------------------------------- locale */

/* Make a decimal-comma locale usable: the system's de_DE.UTF-8 if installed, else one compiled
 * by localedef (package locales) into dir, found through LOCPATH. Returns its name. */
static const char *comma_locale(char *dir)
{
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8"};
    for (size_t i = 0; i < BK_ARRAY_LEN(names); i++)
        if (setlocale(LC_ALL, names[i])) {
            setlocale(LC_ALL, "C");
            return names[i];
        }
    cr_assert_not_null(mkdtemp(dir));
    char *out = bk_asprintf("%s/de_DE.UTF-8", dir);
    struct tu_run r;
    tu_run_argv(&r, (const char *const[]){"localedef", "-i", "de_DE", "-f", "UTF-8", out, NULL});
    cr_assert_eq(r.status, 0,
                 "no decimal-comma locale is installed and localedef could not build one (install "
                 "the Debian package 'locales'; build.sh does): %s",
                 r.err);
    tu_run_free(&r);
    free(out);
    cr_assert_eq(setenv("LOCPATH", dir, 1), 0);
    cr_assert_not_null(setlocale(LC_ALL, "de_DE.UTF-8"), "localedef's locale does not load");
    setlocale(LC_ALL, "C");
    return "de_DE.UTF-8";
}

/* blinkc's three outputs for one fixture under LC_ALL=loc: code, then JSON, then --explain.
 * Broadcast and reduce from rank 0 only: the code and --explain carry the per-size choice, which
 * simulates every plan, and the formatting it exercises is the same for every root. */
static char *cli_outputs(const char *path, int tune, const char *loc, const char *tmp)
{
    cr_assert_eq(setenv("LC_ALL", loc, 1), 0);
    char *json = bk_asprintf("%s/plan.json", tmp), *code = bk_asprintf("%s/code.cu", tmp);
    struct tu_run r;
    tu_run_blinkc(&r, (const char *const[]){"-q", "--root", "0", "--explain", "--plan-json",
                                            json, "-o", code, path, tune ? NULL : "--no-tune",
                                            NULL});
    cr_assert_eq(r.status, 0, "%s under %s: %s", path, loc, r.err);
    char *cj = tu_slurp(json, NULL), *cc = tu_slurp(code, NULL);
    cr_assert(cj && cc);
    char *all = bk_asprintf("%s\n--- json\n%s\n--- explain\n%s", cc, cj, r.out);
    tu_run_free(&r);
    unlink(json), unlink(code);
    free(json), free(code), free(cj), free(cc);
    return all;
}

/* One fixture's outputs under a decimal-comma locale are the C locale's. One test per
 * fixture, as for the repeats above: together they take most of 300 s under ASan. */
static void check_locale(int k)
{
    if (TU_SANITIZED)
        cr_skip_test("the plain build checks locales; this one checks memory");
    char locdir[] = "/tmp/blinkc-locale-XXXXXX";
    const char *loc = comma_locale(locdir);
    /* The locale really writes a comma (so the comparison below means something). */
    cr_assert_not_null(setlocale(LC_NUMERIC, loc));
    char buf[16];
    snprintf(buf, sizeof buf, "%.1f", 2.5);
    setlocale(LC_ALL, "C");
    cr_assert_str_eq(buf, "2,5", "%s does not use a decimal comma", loc);

    char tmp[] = "/tmp/blinkc-det-XXXXXX";
    cr_assert_not_null(mkdtemp(tmp));
    char *path = hf_path(&hf_fixtures[k]);
    int tune = hf_fixtures[k].heavy < 2; /* tuning NVL72's plans takes minutes */
    char *c = cli_outputs(path, tune, "C", tmp), *l = cli_outputs(path, tune, loc, tmp);
    compare("the output under a decimal-comma locale", hf_fixtures[k].rel, 1, c, l);
    free(c), free(l), free(path);
    unsetenv("LC_ALL");
    rmdir(tmp);
    if (strncmp(locdir, "/tmp/blinkc-locale-XXXXXX", sizeof locdir) != 0) {
        struct tu_run r;
        tu_run_argv(&r, (const char *const[]){"rm", "-rf", "--", locdir, NULL});
        tu_run_free(&r);
    }
}

#define LOCALE_TEST(name, k)                                                                       \
    Test(determinism, decimal_comma_locale_never_leaks_##name, .timeout = 300) { check_locale(k); }
HF_EACH(LOCALE_TEST)

/* `blinkc -j N ARGS -o OUT` run with OUT in dir: its standard output, then OUT's bytes. */
static char *run_jobs(const char *jobs, const char *const *args, int nargs, const char *dir)
{
    char *out = bk_asprintf("%s/out-%s.cu", dir, jobs);
    const char *argv[16] = {"-q", "-j", jobs, "-o", out};
    cr_assert_leq(nargs + 6, 16);
    for (int i = 0; i < nargs; i++)
        argv[5 + i] = args[i];
    argv[5 + nargs] = NULL;
    struct tu_run r;
    tu_run_blinkc(&r, argv);
    cr_assert_eq(r.status, 0, "-j %s: %s", jobs, r.err);
    char *code = tu_slurp(out, NULL);
    cr_assert_not_null(code);
    char *all = bk_asprintf("%s\n--- code\n%s", r.out, code);
    tu_run_free(&r);
    unlink(out);
    free(out), free(code);
    return all;
}

/* The simulations' threads (-j) change nothing: a tuned source with --explain, and a tuned
 * library of every allocation of a 6-GPU NVSwitch box, are the same bytes on 1 thread and 3. */
Test(determinism, simulation_threads_change_nothing, .timeout = 300)
{
    char dir[] = "/tmp/blinkc-jobs-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char *text = tu_nvswitch_text("sw6", 6, 3);
    char *topo = bk_asprintf("%s/sw6.topo", dir);
    FILE *f = fopen(topo, "w");
    cr_assert(f && fputs(text, f) >= 0 && fclose(f) == 0);
    const char *one[] = {"--explain", "--gpus", "0,1,2,4,5", "builtin:dgx1v"};
    const char *lib[] = {"--all-allocations", topo};
    char *a1 = run_jobs("1", one, 4, dir), *a3 = run_jobs("3", one, 4, dir);
    compare("a tuned source and --explain on 3 threads", "builtin:dgx1v", 1, a1, a3);
    char *l1 = run_jobs("1", lib, 2, dir), *l3 = run_jobs("3", lib, 2, dir);
    compare("a tuned library on 3 threads", "sw6.topo", 1, l1, l3);
    cr_expect(strstr(l1, "blinkgen_") != NULL, "the library holds no plans");
    free(a1), free(a3), free(l1), free(l3);
    unlink(topo);
    free(topo);
    rmdir(dir);
    free(text);
}
