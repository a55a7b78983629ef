/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * log.c - BLINK_DEBUG, BLINK_DEBUG_SUBSYS and BLINK_DEBUG_FILE (log.h): parse them as NCCL
 * parses NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE, and write each line with NCCL's
 * prefix, "HOST:PID:TID [DEV] blink LEVEL ": HOST cut at its first '.', TID the kernel's
 * thread id (gettid, as NCCL prints it), DEV the device the line's rank runs on.
 *
 * Lines go to standard error (NCCL writes to standard output; blink keeps a program's own
 * output, such as blink-perf's table, clean), or to BLINK_DEBUG_FILE, opened at the first line
 * (above VERSION, as NCCL does) with %h the host, %p the pid and %% a '%'. A line is formatted
 * whole and written with one call under a lock, so ranks' threads never interleave within a
 * line. This file never decides what is said: callers test the level and mask first.
 */
#define _GNU_SOURCE /* syscall(SYS_gettid) */
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "blink.h"
#include "log.h"
#include "rt.h"

#define LINE_MAX_BYTES 2048

int bk_log_parse_level(const char *s)
{
    static const struct { const char *name; int level; } levels[] = {
        {"VERSION", BK_LOG_VERSION}, {"WARN", BK_LOG_WARN}, {"INFO", BK_LOG_INFO},
        {"ABORT", BK_LOG_ABORT}, {"TRACE", BK_LOG_TRACE}};
    for (size_t i = 0; s && i < sizeof levels / sizeof levels[0]; i++)
        if (!strcasecmp(s, levels[i].name))
            return levels[i].level;
    return BK_LOG_NONE;
}

unsigned bk_log_parse_subsys(const char *s)
{
    static const struct { const char *name; unsigned bit; } subs[] = {
        {"INIT", BK_SUB_INIT}, {"COLL", BK_SUB_COLL}, {"NET", BK_SUB_NET}, {"ENV", BK_SUB_ENV},
        {"ALL", BK_SUB_ALL}};
    if (!s)
        return BK_SUB_DEFAULT;
    int invert = *s == '^';
    unsigned mask = invert ? BK_SUB_ALL : 0;
    for (const char *p = s + invert; *p;) {
        size_t n = strcspn(p, ",");
        for (size_t i = 0; i < sizeof subs / sizeof subs[0]; i++)
            if (strlen(subs[i].name) == n && !strncasecmp(p, subs[i].name, n))
                mask = invert ? mask & ~subs[i].bit : mask | subs[i].bit;
        p += n + (p[n] == ',');
    }
    return mask;
}

/* ------------------------------------------------------------------ the sink */

static pthread_mutex_t sink_mu = PTHREAD_MUTEX_INITIALIZER;
static FILE *sink;          /* chosen at the first line above VERSION; NULL until then */
static pid_t sink_pid;      /* the process that chose it */
static int sink_per_pid;    /* BLINK_DEBUG_FILE names the pid: a forked child opens its own */
static char host[256];

/* The host name as NCCL logs it: up to the first '.'. */
static void read_host(void)
{
    if (host[0])
        return;
    if (gethostname(host, sizeof host - 1) != 0)
        snprintf(host, sizeof host, "unknown");
    host[strcspn(host, ".")] = '\0';
}

/* BLINK_DEBUG_FILE with %h, %p and %% expanded (anything else after '%' is kept as is),
 * cut to len - 1 bytes. */
static void expand_file(const char *pattern, char *out, size_t len, int *per_pid)
{
    size_t o = 0;
    *per_pid = 0;
    for (const char *p = pattern; *p && o + 1 < len; p++) {
        char piece[32];
        const char *add = piece;
        if (*p != '%' || !p[1])
            snprintf(piece, sizeof piece, "%c", *p);
        else if (*++p == 'h')
            add = host;
        else if (*p == 'p')
            snprintf(piece, sizeof piece, "%d", (int)getpid()), *per_pid = 1;
        else if (*p == '%')
            add = "%";
        else
            snprintf(piece, sizeof piece, "%%%c", *p);
        int w = snprintf(out + o, len - o, "%s", add);
        o = w > 0 && (size_t)w < len - o ? o + (size_t)w : len - 1;
    }
    out[o] = '\0';
}

/* Under sink_mu: the stream this process writes to. A file that cannot be opened leaves
 * stderr (NCCL keeps stdout then). */
static FILE *the_sink(int level)
{
    pid_t me = getpid();
    if (sink && (sink_pid == me || !sink_per_pid))
        return sink;
    read_host();
    const char *pattern = getenv("BLINK_DEBUG_FILE");
    sink = stderr;
    sink_pid = me;
    sink_per_pid = 0;
    if (level > BK_LOG_VERSION && pattern && *pattern) {
        char path[PATH_MAX];
        expand_file(pattern, path, sizeof path, &sink_per_pid);
        FILE *f = path[0] ? fopen(path, "w") : NULL;
        if (f) {
            setvbuf(f, NULL, _IOLBF, 0);
            sink = f;
        }
    }
    return sink;
}

static void write_line(int level, const char *line, size_t len)
{
    pthread_mutex_lock(&sink_mu);
    FILE *f = the_sink(level);
    fwrite(line, 1, len, f);
    fflush(f);
    pthread_mutex_unlock(&sink_mu);
}

/* ------------------------------------------------------------------ lines */

static void vlog(int level, int dev, const char *fmt, va_list ap)
{
    static const char *const names[] = {"NONE", "VERSION", "WARN", "INFO", "ABORT", "TRACE"};
    char line[LINE_MAX_BYTES];
    pthread_mutex_lock(&sink_mu);
    read_host();
    pthread_mutex_unlock(&sink_mu);
    int n = snprintf(line, sizeof line, "%s:%d:%ld [%d] blink %s ", host, (int)getpid(),
                     (long)syscall(SYS_gettid), dev,
                     level > BK_LOG_NONE && level <= BK_LOG_TRACE ? names[level] : "INFO");
    size_t len = n > 0 && (size_t)n < sizeof line ? (size_t)n : 0;
    n = vsnprintf(line + len, sizeof line - len, fmt, ap);
    len = n < 0 ? len : len + (size_t)n < sizeof line - 1 ? len + (size_t)n : sizeof line - 2;
    line[len++] = '\n'; /* a cut line still ends its line */
    write_line(level, line, len);
}

void bk_log(int level, int dev, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, dev, fmt, ap);
    va_end(ap);
}

void bk_log_version(int level, unsigned mask, int dev, const char *backend)
{
    static int shown;
    if (level < BK_LOG_VERSION || !mask || __atomic_exchange_n(&shown, 1, __ATOMIC_RELAXED))
        return;
    if (level >= BK_LOG_INFO) {
        bk_log(BK_LOG_INFO, dev, "blink version %d.%d.%d (%s backend)", BLINK_MAJOR,
               BLINK_MINOR, BLINK_PATCH, backend);
        return;
    }
    char line[128];
    int n = snprintf(line, sizeof line, "blink version %d.%d.%d (%s backend)\n", BLINK_MAJOR,
                     BLINK_MINOR, BLINK_PATCH, backend);
    if (n > 0 && (size_t)n < sizeof line)
        write_line(level, line, (size_t)n);
}

void bk_log_env(int level, unsigned mask, int dev)
{
    /* Every variable the runtime reads (blink(3), ENVIRONMENT). */
    static const char *const vars[] = {
        "BLINK_DEBUG", "BLINK_DEBUG_SUBSYS", "BLINK_DEBUG_FILE", "BLINK_ALGO",
        "BLINK_CHUNK_BYTES", "BLINK_STAGING_BYTES", "BLINK_TIMEOUT_S", "BLINK_DEVICE",
        "BLINK_DEVICE_MAP", "BLINK_SERVER", "BLINK_NCCL_LIB", "BLINK_HOST_THREADS",
        "BLINK_HOST_FAIL_COPY", "BLINK_TRACE", "BLINK_TRACE_RECORDS", "BLINK_CHECK_CALLS",
        "BLINK_DEBUG_SEQ_START"};
    static int shown;
    if (level < BK_LOG_INFO || !(mask & BK_SUB_ENV) ||
        __atomic_exchange_n(&shown, 1, __ATOMIC_RELAXED))
        return;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v)
            bk_log(BK_LOG_INFO, dev, "%s set by environment to %s", vars[i], v);
    }
}

int bk_log_dev(blinkComm_t c)
{
    return c->peer ? c->peer[c->prank].phys_dev : -1;
}
