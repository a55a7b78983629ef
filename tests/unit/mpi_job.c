/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * mpi_job.c - mpi_job.h: mpirun with one app context per rank, killed past LIMIT_S, and the
 * /dev/shm checks.
 */
#define _DEFAULT_SOURCE /* realpath */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mpi_job.h"
#include "mpirun_util.h"

/* The build defines these; the defaults are relative to the build directory. */
#ifndef NCCL_CLIENT
#define NCCL_CLIENT "tests/nccl/nccl_client"
#endif
#ifndef MPIRUN
#define MPIRUN "mpirun"
#endif
/* Where the drop-in was built with AddressSanitizer: its runtime, to preload first. */
#ifndef SAN_PRELOAD
#define SAN_PRELOAD ""
#endif

#define MAX_ARGV 768

extern char **environ;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
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
void run_job(const struct job *j, struct run *r)
{
    static char mpirun[PATH_MAX], client[PATH_MAX], dropin[PATH_MAX];
    static char preload[2 * PATH_MAX + 16];
    static char dev[MAX_RANKS][32], server[MAX_RANKS][32], debug[64], fault[64];
    const char *argv[MAX_ARGV];
    int a = 0;

    if (!mu_find_mpirun(MPIRUN, mpirun, sizeof mpirun))
        cr_skip_test("%s not found: %s", MPIRUN, INSTALL);
    if (!realpath(NCCL_CLIENT, client))
        cr_skip_test("%s not built (it needs mpicc): %s", NCCL_CLIENT, INSTALL);
    cr_assert(realpath(j->dropin, dropin) != NULL, "%s: the drop-in is not built", j->dropin);
    cr_assert(j->n <= MAX_RANKS);
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s%s%s", SAN_PRELOAD, SAN_PRELOAD[0] ? " " : "",
             dropin);
    snprintf(debug, sizeof debug, "BLINK_DEBUG=%s", j->debug ? j->debug : "");  /* if set */

    /* j->env: NAME=VALUE words apart by spaces. */
    static char env_buf[256];
    char *env[8];
    int envs = 0;
    snprintf(env_buf, sizeof env_buf, "%s", j->env ? j->env : "");
    for (char *save = NULL, *w = strtok_r(env_buf, " ", &save); w && envs < 8;
         w = strtok_r(NULL, " ", &save))
        env[envs++] = w;

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
        for (int i = 0; i < envs; i++) {
            argv[a++] = "-x";
            argv[a++] = env[i];
        }
        if (j->servers) {
            /* The client calls MPI_Init, and MPI itself between calls while the runtime's
             * threads may still finish a call's messages: MPI_THREAD_MULTIPLE. */
            snprintf(server[rank], sizeof server[rank], "BLINK_SERVER=s%d", j->servers[rank]);
            argv[a++] = "-x";
            argv[a++] = server[rank];
            argv[a++] = "-x";
            argv[a++] = "OMPI_MPI_THREAD_LEVEL=3";
        }
        if (j->fault && rank == j->fault_rank) {
            snprintf(fault, sizeof fault, "NCCL_CLIENT_FAULT=%s", j->fault);
            argv[a++] = "-x";
            argv[a++] = fault;
        }
        argv[a++] = client;
        for (int i = 0; j->args[i]; i++)
            argv[a++] = j->args[i];
        cr_assert(a < MAX_ARGV - 16);
    }
    argv[a] = NULL;

    /* The ranks inherit mpirun's environment: nothing of the caller's may steer them. */
    static const char *const unset[] = {"BLINK_ALGO", "BLINK_NCCL_LIB", "BLINK_CHUNK_BYTES",
                                        "BLINK_STAGING_BYTES", "BLINK_DEVICE_MAP", "LD_PRELOAD",
                                        "BLINK_SERVER", "NCCL_CLIENT_FAULT", "BLINK_PROTO"};
    for (size_t i = 0; i < sizeof unset / sizeof unset[0]; i++)
        unsetenv(unset[i]);
    if (SAN_PRELOAD[0]) /* Open MPI's own allocations are not the drop-in's leaks */
        setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);

    int lock = mu_lock();
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
    mu_unlock(lock);
}

/* The output's last 3000 bytes, for messages. */
const char *tail(const char *s)
{
    size_t len = strlen(s);
    return len > 3000 ? s + len - 3000 : s;
}

/* The number of lines that start with `start` and contain `has`. */
int count_lines(const char *s, const char *start, const char *has)
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

int count_log_lines(const char *s, const char *level, const char *has)
{
    int n = 0;
    for (const char *line = s; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char text[4096], got[16];
        int pid, tid, dev, at = 0;
        snprintf(text, sizeof text, "%.*s", (int)len, line);
        if (sscanf(text, "%*[^: ]:%d:%d [%d] blink %15s %n", &pid, &tid, &dev, got, &at) == 4 &&
            at > 0 && (!level || strcmp(got, level) == 0) && strstr(text + at, has))
            n++;
        line = end ? end + 1 : NULL;
    }
    return n;
}

static struct names marked;
void shm_mark(void) { list_shm(&marked); }
int shm_left_since_mark(char *out, size_t len) { return shm_left(&marked, out, len); }

/* Run j, then the checks every run has: in time, exit 0, nothing left in /dev/shm. */
void run_checked(const struct job *j, struct run *r)
{
    char left[2048];
    shm_mark();
    run_job(j, r);
    cr_expect(r->secs < LIMIT_S, "%s: still running after %d s (killed):\n%s", j->label,
              LIMIT_S, tail(r->out));
    cr_expect_eq(r->status, 0, "%s: exit status %d after %.1f s:\n%s", j->label, r->status,
                 r->secs, tail(r->out));
    cr_expect_eq(shm_left_since_mark(left, sizeof left), 0, "%s: left in /dev/shm:%s", j->label,
                 left);
}

/* A sweep: the summary with the job's rank count, no wrong result and no error. */
void run_sweep(const struct job *j)
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

