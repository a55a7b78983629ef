/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * shim.h - libblink-nccl's communicator and its hand-offs. An ncclComm wraps one blink
 * communicator (rt.h), which holds this rank's plan, if its devices have one, and its real
 * NCCL communicator, where NCCL is there (nccl_call.c). Each NCCL call either runs on the plan
 * (through the blink runtime, which itself hands the sizes the plan gives to rings to NCCL) or
 * is handed to the real NCCL for a reason (enum shim_why), said once per communicator,
 * collective and reason under BLINK_DEBUG=INFO.
 */
#ifndef BK_SHIM_H
#define BK_SHIM_H

/* The drop-in is built with hidden visibility: exactly NCCL's names are exported. */
#pragma GCC visibility push(default)
#include "nccl.h"
#pragma GCC visibility pop
#include "nccl_real.h"
#include "rt.h"

/* Before each NCCL function the drop-in defines: NCCL's profiling interface, as libnccl has it.
 * pncclX and the weak ncclX are one function, so a tool that wraps ncclX and calls
 * pncclX reaches the drop-in's communicator, not the real NCCL's (which would take ours for its
 * own). The real NCCL's functions are found through dlopen's handle of its library
 * (nccl_real.c), never by name in the global scope, so they never resolve to these. */
#define SHIM_API(name) \
    extern __typeof__(name) name __attribute__((weak)); \
    extern __typeof__(name) p##name __attribute__((alias(#name), visibility("default")))

enum shim_why {
    WHY_PLAN,          /* runs on the plan */
    WHY_NO_PLAN,       /* the devices have no plan, or the config asked for NCCL */
    WHY_TYPE,          /* a datatype the runtime does not reduce or move (fp8) */
    WHY_OP,            /* an operation of NCCL's own (ncclRedOpCreatePreMulSum) */
    WHY_NO_SCHEDULE,   /* the plan has no schedule for this root */
    WHY_NOT_PLANNED,   /* a call blinkc does not plan: point-to-point, all-to-all, ... */
    WHY_COUNT
};

/* What the drop-in's calls are, for messages and the said-once table. */
enum shim_call {
    CALL_BROADCAST, CALL_REDUCE, CALL_ALLREDUCE, CALL_ALLGATHER, CALL_REDUCESCATTER,
    CALL_SEND, CALL_RECV, CALL_ALLTOALL, CALL_GATHER, CALL_SCATTER, CALL_PREMULSUM,
    CALL_COUNT
};

struct ncclComm {
    blinkComm_t bk;
    int blocking;                      /* the config's blocking (1 unless it said 0) */
    unsigned char said[CALL_COUNT][WHY_COUNT];
};

/* The real NCCL's communicator of c, or NULL. */
ncclComm_t shim_real_comm(const struct ncclComm *c);
/* Say once (rank 0, BLINK_DEBUG=INFO) that `call` goes to NCCL and why, then return whether
 * there is an NCCL to take it; where there is none, the error is stored (ncclInvalidUsage). */
int shim_hand_off(struct ncclComm *c, enum shim_call call, enum shim_why why,
                  const char *detail, const char *fn);
/* The name of an NCCL datatype (fp8 included). */
const char *shim_type_name(ncclDataType_t t);
/* ncclResult_t of a blink result (the same numbers). */
static inline ncclResult_t shim_result(blinkResult_t r) { return (ncclResult_t)r; }

#endif
