/* SPDX-License-Identifier: GPL-3.0-or-later */
/* abi_facts.h - one fact of an nccl.h (abi_facts.c): its name and its value. */
#ifndef ABI_FACTS_H
#define ABI_FACTS_H

struct abi_fact {
    const char *name;
    long long value;
};

/* NVIDIA's header and libblink-nccl's; each ends with a NULL name. */
extern const struct abi_fact abi_real[];
extern const struct abi_fact abi_ours[];

#endif
