/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * test_nccl_mpi.c - libblink-nccl-host.so as a drop-in NCCL for an unmodified NCCL program:
 * tests/nccl/nccl_client (NCCL's API and MPI only) runs under mpirun with the library in
 * LD_PRELOAD, one MPMD app context per rank so that each rank plays a chosen topology device
 * (BLINK_DEVICE). Each run must exit 0 with the client's summary saying the right rank count,
 * no wrong result and no error, within a wall-clock limit (past it, mpirun and its ranks are
 * killed), and leave nothing in /dev/shm. Calls blinkc does not plan must fail with
 * ncclInvalidUsage where there is no NCCL, saying so at BLINK_DEBUG=INFO.
 * Skipped, not failed, where Open MPI or the client is missing.
 */
#define _DEFAULT_SOURCE /* realpath, flock */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The build defines these; the defaults are relative to the build directory. */
#ifndef NCCL_CLIENT
#define NCCL_CLIENT "tests/nccl/nccl_client"
#endif
#ifndef DROPIN_DGX1V
#define DROPIN_DGX1V "runtime/libblink-nccl-host.so"
#endif
#ifndef DROPIN_DGX1P
#define DROPIN_DGX1P "tests/nccl/libblink-nccl-host-dgx1p.so"
#endif
#ifndef DROPIN_DGX2
#define DROPIN_DGX2 "tests/nccl/libblink-nccl-host-dgx2.so"
#endif
#ifndef MPIRUN
#define MPIRUN "mpirun"
#endif
/* Where the drop-in was built with AddressSanitizer: its runtime, to preload first. */
#ifndef SAN_PRELOAD
#define SAN_PRELOAD ""
#endif

#define MAX_RANKS 16
#define MAX_ARGV 512
#define LIMIT_S 240            /* one mpirun, from its start to its exit */
#define INSTALL "install Open MPI (Debian: apt-get install libopenmpi-dev openmpi-bin)"

extern char **environ;

struct job {
    const char *label, *dropin;
    int n;
    const int *devs;             /* the device rank r plays */
    const char *args[12];        /* the client's, NULL-terminated */
    long cases;                  /* what the summary must count, or -1 for any */
    const char *debug;           /* BLINK_DEBUG, or NULL */
    const char *env;             /* one more NAME=VALUE for every rank, or NULL */
};

struct run {
    int status;                  /* exit status; -1 if killed or not started */
    double secs;
    char *out;                   /* stdout and stderr of mpirun and every rank */
};

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* MPIRUN's full path (searched on PATH unless it has a slash), or 0. */
static int find_mpirun(char *path, size_t len)
{
    if (strchr(MPIRUN, '/')) {
        snprintf(path, len, "%s", MPIRUN);
        return access(path, X_OK) == 0;
    }
    const char *p = getenv("PATH");
    while (p && *p) {
        const char *colon = strchr(p, ':');
        int k = colon ? (int)(colon - p) : (int)strlen(p);
        snprintf(path, len, "%.*s/%s", k, k ? p : ".", MPIRUN);
        if (access(path, X_OK) == 0)
            return 1;
        p = colon ? colon + 1 : NULL;
    }
    return 0;
}

static char *slurp(int fd)
{
    size_t cap = 1 << 16, len = 0;
    char *s = malloc(cap);
    ssize_t got;
    cr_assert(s);
    lseek(fd, 0, SEEK_SET);
    while ((got = read(fd, s + len, cap - len - 1)) > 0)
        if ((len += (size_t)got) + 1 == cap)
            cr_assert((s = realloc(s, cap *= 2)) != NULL);
    s[len] = '\0';
    return s;
}

/* ------------------------------------------------------------------ /dev/shm */

#define SHM_MAX 256
struct names {
    int n;
    char v[SHM_MAX][NAME_MAX + 1];
};

static void list_shm(struct names *s)
{
    DIR *d = opendir("/dev/shm");
    s->n = 0;
    cr_assert(d != NULL, "/dev/shm");
    for (struct dirent *e; (e = readdir(d)) != NULL && s->n < SHM_MAX;)
        if (strncmp(e->d_name, "blink-", 6) == 0)
            snprintf(s->v[s->n++], NAME_MAX + 1, "%s", e->d_name);
    closedir(d);
}

static int listed(const struct names *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->v[i], name) == 0)
            return 1;
    return 0;
}

/* Whether a live process maps /dev/shm/NAME: then it is another test's, still in use. */
static int mapped(const char *name)
{
    char want[NAME_MAX + 16], path[NAME_MAX + 16], line[1024];
    size_t k = (size_t)snprintf(want, sizeof want, "/dev/shm/%s", name);
    DIR *d = opendir("/proc");
    int found = 0;
    for (struct dirent *e; d && !found && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/maps", e->d_name);
        FILE *f = fopen(path, "r");
        while (f && !found && fgets(line, sizeof line, f)) {
            const char *at = strstr(line, want);
            found = at && (at[k] == '\n' || at[k] == ' ' || at[k] == '\0');
        }
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

/*
 * The names that this run left: new since `before` and mapped by no live process, on three
 * looks a second apart (make check runs other programs beside this one, whose communicators
 * come and go). Their count; the names go into out.
 */
static int shm_left(const struct names *before, char *out, size_t len)
{
    static struct names after;
    int left = 0;
    for (int look = 0; look < 3; look++) {
        if (look)
            sleep(1);
        list_shm(&after);
        left = 0;
        out[0] = '\0';
        for (int i = 0; i < after.n; i++)
            if (!listed(before, after.v[i]) && !mapped(after.v[i])) {
                size_t at = strlen(out);
                snprintf(out + at, len - at, " %s", after.v[i]);
                left++;
            }
        if (!left)
            break;
    }
    return left;
}

/* ------------------------------------------------------------------ running mpirun */

/* mpirun with one app context per rank, its output in a file; killed (its whole process
 * group) past LIMIT_S. */
static void run_job(const struct job *j, struct run *r)
{
    static char mpirun[PATH_MAX], client[PATH_MAX], dropin[PATH_MAX];
    static char preload[2 * PATH_MAX + 16];
    static char dev[MAX_RANKS][32], debug[64];
    const char *argv[MAX_ARGV];
    int a = 0;

    if (!find_mpirun(mpirun, sizeof mpirun))
        cr_skip_test("%s not found: %s", MPIRUN, INSTALL);
    if (!realpath(NCCL_CLIENT, client))
        cr_skip_test("%s not built (it needs mpicc): %s", NCCL_CLIENT, INSTALL);
    cr_assert(realpath(j->dropin, dropin) != NULL, "%s: the drop-in is not built", j->dropin);
    cr_assert(j->n <= MAX_RANKS);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s%s%s", SAN_PRELOAD, SAN_PRELOAD[0] ? " " : "",
             dropin);
    snprintf(debug, sizeof debug, "BLINK_DEBUG=%s", j->debug ? j->debug : "");  /* if set */

    argv[a++] = mpirun;
    static const char *const common[] = {"--oversubscribe", "--bind-to", "none", "--mca", "btl",
                                         "self,vader"};
    for (size_t i = 0; i < sizeof common / sizeof common[0]; i++)
        argv[a++] = common[i];

    for (int rank = 0; rank < j->n; rank++) {
        snprintf(dev[rank], sizeof dev[rank], "BLINK_DEVICE=%d", j->devs[rank]);
        /* Far below LIMIT_S: a rank that waits in vain says for whom, rather than be killed. */
        const char *ctx[] = {"-np", "1", "-x", preload, "-x", dev[rank], "-x",
                             "BLINK_TIMEOUT_S=60"};
        if (rank)
            argv[a++] = ":";
        for (size_t i = 0; i < sizeof ctx / sizeof ctx[0]; i++)
            argv[a++] = ctx[i];
        if (j->debug) {
            argv[a++] = "-x";
            argv[a++] = debug;
        }
        if (j->env) {
            argv[a++] = "-x";
            argv[a++] = j->env;
        }
        argv[a++] = client;
        for (int i = 0; j->args[i]; i++)
            argv[a++] = j->args[i];
        cr_assert(a < MAX_ARGV - 16);
    }
    argv[a] = NULL;

    /* The ranks inherit mpirun's environment: nothing of the caller's may steer them. */
    static const char *const unset[] = {"BLINK_ALGO", "BLINK_NCCL_LIB", "BLINK_CHUNK_BYTES",
                                        "BLINK_STAGING_BYTES", "BLINK_DEVICE_MAP", "LD_PRELOAD"};
    for (size_t i = 0; i < sizeof unset / sizeof unset[0]; i++)
        unsetenv(unset[i]);
    if (SAN_PRELOAD[0]) /* Open MPI's own allocations are not the drop-in's leaks */
        setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);

    char out_path[] = "/tmp/blinkc-test-mpi-XXXXXX";
    int fd = mkstemp(out_path);
    cr_assert(fd >= 0);
    unlink(out_path);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, fd, 1);
    posix_spawn_file_actions_adddup2(&fa, fd, 2);
    posix_spawnattr_init(&at);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&at, 0);
    pid_t pid;
    double start = now();
    int ws = 0, done = 0;
    r->status = -1;
    cr_assert_eq(posix_spawn(&pid, mpirun, &fa, &at, (char *const *)argv, environ), 0);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    struct timespec tick = {0, 50 * 1000 * 1000};
    while (!(done = waitpid(pid, &ws, WNOHANG) == pid) && now() - start < LIMIT_S)
        nanosleep(&tick, NULL);
    if (!done) {
        /* mpirun passes SIGTERM on to its ranks; SIGKILL for whatever is left. */
        kill(-pid, SIGTERM);
        sleep(5);
        kill(-pid, SIGKILL);
        waitpid(pid, &ws, 0);
    } else if (WIFEXITED(ws)) {
        r->status = WEXITSTATUS(ws);
    }
    r->secs = now() - start;
    r->out = slurp(fd);
    close(fd);
}

/* The output's last 3000 bytes, for messages. */
static const char *tail(const char *s)
{
    size_t len = strlen(s);
    return len > 3000 ? s + len - 3000 : s;
}

/* The number of lines that start with `start` and contain `has`. */
static int count_lines(const char *s, const char *start, const char *has)
{
    int n = 0;
    for (const char *line = s; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, has);
        n += strncmp(line, start, strlen(start)) == 0 && hit && hit < line + len;
        line = end ? end + 1 : NULL;
    }
    return n;
}

/* Run j, then the checks every run has: in time, exit 0, nothing left in /dev/shm. */
static void run_checked(const struct job *j, struct run *r)
{
    static struct names before;
    char left[2048];
    /* One mpirun at a time, in this program: 16 ranks beside 8 others on two cores would
     * only share out the time limit. */
    int lock = open("/tmp/blinkc-test-nccl-mpi.lock", O_RDWR | O_CREAT, 0600);
    cr_assert(lock >= 0 && flock(lock, LOCK_EX) == 0, "lock");
    list_shm(&before);
    run_job(j, r);
    cr_expect(r->secs < LIMIT_S, "%s: still running after %d s (killed):\n%s", j->label,
              LIMIT_S, tail(r->out));
    cr_expect_eq(r->status, 0, "%s: exit status %d after %.1f s:\n%s", j->label, r->status,
                 r->secs, tail(r->out));
    cr_expect_eq(shm_left(&before, left, sizeof left), 0, "%s: left in /dev/shm:%s", j->label,
                 left);
    close(lock);
}

/* A sweep: the summary with the job's rank count, no wrong result and no error. */
static void run_sweep(const struct job *j)
{
    struct run r;
    int n = -1;
    long cases = -1, wrong = -1, errors = -1;
    run_checked(j, &r);
    const char *sum = strstr(r.out, "# nccl-client: ranks ");
    cr_expect(sum && sscanf(sum, "# nccl-client: ranks %d, cases %ld, wrong %ld, errors %ld",
                            &n, &cases, &wrong, &errors) == 4,
              "%s: no summary line:\n%s", j->label, tail(r.out));
    cr_expect(n == j->n && wrong == 0 && errors == 0 && cases > 0,
              "%s: ranks %d (want %d), cases %ld, wrong %ld, errors %ld:\n%s", j->label, n,
              j->n, cases, wrong, errors, tail(r.out));
    cr_expect(j->cases < 0 || cases == j->cases, "%s: %ld cases, want %ld", j->label, cases,
              j->cases);
    free(r.out);
}

/* ------------------------------------------------------------------ the matrix */

static const int d023[] = {0, 2, 3}, d302[] = {3, 0, 2}, d0123[] = {0, 1, 2, 3},
                 d4567[] = {4, 5, 6, 7}, d0125[] = {0, 1, 2, 5},
                 d8[] = {0, 1, 2, 3, 4, 5, 6, 7},
                 d16[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/* Case counts per type and count, with R roots, O ops and both places: 2 (R + R O + O + 1 + O)
 * (broadcast, reduce, allreduce, allgather, reduce-scatter). */

/* Everything: the default counts, 1000003 for float32, every root, in and out of place. */
Test(nccl_mpi, dgx1v_3_gpus_everything, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 0,2,3", DROPIN_DGX1V, 3, d023, {"-q", NULL}, 5278, NULL};
    run_sweep(&j);
}

/* Ranks 0-2 on GPUs 3, 0, 2: the plan's rank order is not the communicator's. */
Test(nccl_mpi, dgx1v_3_gpus_shuffled, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 3,0,2", DROPIN_DGX1V, 3, d302, {"-q", "-Q", "-s", "7", NULL},
                    2900, NULL};
    run_sweep(&j);
}

Test(nccl_mpi, dgx1v_4_gpus_ring, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 0-3", DROPIN_DGX1V, 4, d0123,
                    {"-q", "-n", "0,1,2,3,7,31,1021,4096,65537", NULL}, 6300, NULL};
    run_sweep(&j);
}

Test(nccl_mpi, dgx1v_4_gpus_other_half, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 4-7", DROPIN_DGX1V, 4, d4567, {"-q", "-Q", "-s", "3", NULL},
                    3500, NULL};
    run_sweep(&j);
}

/* No NVLink ring: 0-1-2 a triangle and 5 hanging off 1. */
Test(nccl_mpi, dgx1v_4_gpus_irregular, .timeout = 600)
{
    struct job j = {"DGX-1V GPUs 0,1,2,5", DROPIN_DGX1V, 4, d0125, {"-q", "-Q", NULL}, 3500,
                    NULL};
    run_sweep(&j);
}

Test(nccl_mpi, dgx1v_8_gpus, .timeout = 600)
{
    struct job j = {"DGX-1V all GPUs", DROPIN_DGX1V, 8, d8, {"-q", "-Q", NULL}, 5900, NULL};
    run_sweep(&j);
}

Test(nccl_mpi, dgx1p_8_gpus, .timeout = 600)
{
    struct job j = {"DGX-1P all GPUs", DROPIN_DGX1P, 8, d8, {"-q", "-Q", "-s", "5", NULL},
                    5900, NULL};
    run_sweep(&j);
}

/* 16 processes on however few cores: fewer types. */
Test(nccl_mpi, dgx2_16_gpus, .timeout = 600)
{
    struct job j = {"DGX-2 all GPUs", DROPIN_DGX2, 16, d16,
                    {"-q", "-Q", "-d", "int8,uint64,float16,float32,bfloat16", NULL}, 5350,
                    NULL};
    run_sweep(&j);
}

/* ncclCommSplit by parity, then allreduce on each half. */
Test(nccl_mpi, dgx1v_split, .timeout = 600)
{
    struct job j = {"DGX-1V split", DROPIN_DGX1V, 8, d8, {"-q", "--split", "-C", "none", NULL},
                    10, NULL};
    run_sweep(&j);
}

/* A call that goes to NCCL, with none loaded, fails with ncclInvalidUsage on every rank; rank
 * 0 says so once at INFO, with `says` in the line; every rank's error message has `error`. */
static void expect_invalid_usage(const char *what, const char *env, const char *says,
                                 const char *error)
{
    struct job j = {what, DROPIN_DGX1V, 4, d0123, {"-q", "-X", what, "--expect", "5", NULL}, -1,
                    "INFO", env};
    struct run r;
    char result[64];
    run_checked(&j, &r);
    snprintf(result, sizeof result, ": %s: result 5 (", what);
    cr_expect_eq(count_lines(r.out, "rank ", result), 4, "%s: not every rank got 5:\n%s", what,
                 tail(r.out));
    cr_expect_eq(count_lines(r.out, "rank ", error), 4, "%s: not every rank says '%s':\n%s",
                 what, error, tail(r.out));
    cr_expect_geq(count_lines(r.out, "blink ", says), 1, "%s: no line with '%s':\n%s", what,
                  says, tail(r.out));
    free(r.out);
}

Test(nccl_mpi, p2p_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("p2p", NULL, "point-to-point", "goes to NCCL");
}

Test(nccl_mpi, fp8_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("fp8", NULL, "float8e4m3", "goes to NCCL");
}

Test(nccl_mpi, alltoall_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("alltoall", NULL, "all-to-all", "goes to NCCL");
}

Test(nccl_mpi, premulsum_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("premulsum", NULL, "reduction ops", "goes to NCCL");
}

/* BLINK_ALGO=nccl forces a planned collective to NCCL too. */
Test(nccl_mpi, algo_nccl_invalid_usage, .timeout = 600)
{
    expect_invalid_usage("allreduce", "BLINK_ALGO=nccl", "BLINK_ALGO=nccl", "goes to NCCL");
}

/* The drop-in named as the real NCCL is refused, not called in a loop. */
Test(nccl_mpi, dropin_as_its_own_nccl_is_refused, .timeout = 600)
{
    char env[PATH_MAX + 32], path[PATH_MAX];
    cr_assert(realpath(DROPIN_DGX1V, path) != NULL);
    snprintf(env, sizeof env, "BLINK_NCCL_LIB=%s", path);
    expect_invalid_usage("p2p", env, "point-to-point", "libblink-nccl itself");
}

/* One rank: no plan and no NCCL needed, every collective a copy. */
Test(nccl_mpi, one_rank, .timeout = 600)
{
    static const int d5[] = {5};
    struct job j = {"DGX-1V GPU 5 alone", DROPIN_DGX1V, 1, d5, {"-q", "-Q", NULL}, -1, NULL, NULL};
    run_sweep(&j);
}

/* Split 3 ranks by parity: a pair with a plan and a rank alone. */
Test(nccl_mpi, dgx1v_split_odd, .timeout = 600)
{
    struct job j = {"DGX-1V split of 0,2,3", DROPIN_DGX1V, 3, d023,
                    {"-q", "--split", "-C", "none", NULL}, 10, NULL, NULL};
    run_sweep(&j);
}

#ifdef REAL_NCCL
/* NVIDIA's NCCL loaded, its init failing (no GPU here): a warning, and the plan still runs. */
Test(nccl_mpi, real_nccl_that_cannot_start, .timeout = 600)
{
    struct job j = {"DGX-1V 0-3 with NCCL", DROPIN_DGX1V, 4, d0123,
                    {"-q", "-Q", "-d", "float32,int8", NULL}, 700, "WARN",
                    "BLINK_NCCL_LIB=" REAL_NCCL};
    struct run r;
    run_checked(&j, &r);
    cr_expect(strstr(r.out, "# nccl-client: ranks 4, cases 700, wrong 0, errors 0"), "%s",
              tail(r.out));
    cr_expect_eq(count_lines(r.out, "blink WARN", "NCCL's init failed"), 4, "%s", tail(r.out));
    free(r.out);
}
#endif
