/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * log.h - the runtime's diagnostics on standard error, NCCL_DEBUG's way (blink(3),
 * ENVIRONMENT): BLINK_DEBUG picks a level (VERSION, WARN, INFO, TRACE, any case),
 * BLINK_DEBUG_SUBSYS the subsystems (INIT,COLL,NET,ENV,ALL; a leading ^ excludes), and every
 * line reads "HOST:PID:TID [DEV] blink LEVEL message" like NCCL's "host:pid:tid [dev] NCCL
 * INFO". The levels and masks are read at each init into the communicator's environment
 * (struct bk_env), so a disabled line costs a compare; only printing touches the process-wide
 * sink (BLINK_DEBUG_FILE or stderr). The runtime never prints anything else.
 */
#ifndef BK_LOG_H
#define BK_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's order (NCCL_LOG_NONE .. NCCL_LOG_TRACE): each level prints every level before it.
 * ABORT is accepted as NCCL accepts it; it prints what INFO prints. */
enum bk_log_level {
    BK_LOG_NONE = 0,
    BK_LOG_VERSION,
    BK_LOG_WARN,
    BK_LOG_INFO,
    BK_LOG_ABORT,
    BK_LOG_TRACE
};

/* Subsystems, a bit each. WARN lines are BK_SUB_ALL (as NCCL's WARN is NCCL_ALL): only an
 * empty mask hides them. */
#define BK_SUB_INIT 0x1u  /* a communicator's init: plan, devices, staging, NCCL's init */
#define BK_SUB_COLL 0x2u  /* what a collective runs: trees, rings or NCCL, and each call */
#define BK_SUB_NET 0x4u   /* bytes over MPI between servers */
#define BK_SUB_ENV 0x8u   /* BLINK_* variables set by the environment */
#define BK_SUB_ALL 0xffffffffu
/* Unset BLINK_DEBUG_SUBSYS: every subsystem (NCCL's default is INIT,BOOTSTRAP,ENV; blink's
 * INFO says what runs once per collective and size range, few lines, so it keeps them all). */
#define BK_SUB_DEFAULT BK_SUB_ALL

/* BLINK_DEBUG's value, any case; NULL, "" or an unknown word is BK_LOG_NONE (NCCL ignores an
 * unknown NCCL_DEBUG the same way: nothing is printed, and it is no error). */
int bk_log_parse_level(const char *s);
/* BLINK_DEBUG_SUBSYS's value: names separated by commas, any case; a leading ^ keeps every
 * subsystem but those named; unknown names are ignored (NCCL's rule). NULL: BK_SUB_DEFAULT. */
unsigned bk_log_parse_subsys(const char *s);

/* Print one line at level (WARN, INFO or TRACE) for device dev: the prefix, "blink LEVEL ",
 * the message and a newline, in one write. Callers test the level and mask first. */
void bk_log(int level, int dev, const char *fmt, ...)
#ifdef __GNUC__
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* The runtime's version, once per process: at VERSION and WARN a bare line ("blink version
 * 0.1.0 (host backend)", as NCCL prints "NCCL version ..."), from INFO up an INFO line. */
void bk_log_version(int level, unsigned mask, int dev, const char *backend);

/* Once per process at INFO with ENV: each BLINK_* variable the runtime reads that is set
 * ("BLINK_CHUNK_BYTES set by environment to 65536", NCCL's wording). */
void bk_log_env(int level, unsigned mask, int dev);

#ifdef __cplusplus
}
#endif

#endif
