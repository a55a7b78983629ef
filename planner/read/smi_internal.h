/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * smi_internal.h - what the `nvidia-smi topo -m` reader's files share (topo_smi.c has the rules):
 * the parsed matrix (smi_parse.c reads and checks it) and the inference of the graph from it
 * (smi_infer.c).
 */
#ifndef BK_SMI_INTERNAL_H
#define BK_SMI_INTERNAL_H

#include <stddef.h>
#include <string.h>

#include "read/reader.h"
#include "read/topo_read.h"

#define MAX_COLS 1024          /* GPU + NIC columns: real boxes have under 64 */
#define MAX_LINE (1u << 20)    /* longer lines are not nvidia-smi output */
#define MAX_NV 64              /* no GPU has more NVLinks than this */
#define MAX_HDR_LINES 4        /* a header wrapped onto at most 3 more lines */
#define QUOTE 40               /* longest input text quoted in a message */

enum code { C_NONE, C_X, C_NV, C_PIX, C_PXB, C_PHB, C_NODE, C_SYS };

enum trail { T_CPU, T_NUMA, T_GPUNUMA, T_KINDS };

struct cell {
    unsigned char code, nv;
    struct diag_loc loc;
};

struct col {
    char *label;          /* header label */
    int gpu;              /* k of GPUk, else -1 (a NIC) */
    struct diag_loc loc;  /* the label in the header */
    int has_row;
    struct diag_loc row_loc;
    char *trail[T_KINDS]; /* this row's affinity values, NULL when absent */
    char *dev;            /* device name from the NIC Legend */
    int no_p2p;           /* a GPU that nvidia-smi topo -p2p shows without peer access to some
                             other (smi_p2p.c) */
    struct diag_loc dev_loc;
    int node;             /* topo node index */
};

/* One input line with escapes and CRs removed; col[i] is the input column of s[i]. */
struct line {
    char *s;
    int *col;
    size_t n, cap;
    int no;
    int too_long;
};

/* A "GPU k: NAME (UUID: ...)" line of `nvidia-smi -L` pasted above the matrix. */
struct listed_gpu {
    int gpu;
    char *name;
    struct diag_loc loc;
};

struct smi {
    struct reader rd; /* the input, options, topology and diagnostics (reader.h) */
    size_t off;
    int lineno;
    struct line ln;
    struct line hdr[MAX_HDR_LINES];
    int nhdr;
    char **dict; /* row labels seen below the header, for splitting a collapsed header */
    int ndict;
    struct col *cols;
    int ncols;
    int trail[T_KINDS]; /* trailing columns in header order */
    int ntrail;
    struct cell *m;     /* ncols x ncols: m[r * ncols + c] is row r's cell in column c */
    struct listed_gpu *listed; /* nvidia-smi -L lines before the header */
    int nlisted, listed_cap;
};

static inline struct cell *cell(const struct smi *s, int r, int c)
{
    return &s->m[(size_t)r * s->ncols + c];
}

BK_MUST_USE
enum bk_status smi_read_header(struct smi *s);
BK_MUST_USE
enum bk_status smi_read_rows(struct smi *s, int *nic_legend);
BK_MUST_USE
enum bk_status smi_read_legend(struct smi *s, int in_nic_legend);
BK_MUST_USE
enum bk_status smi_check_matrix(struct smi *s);
/* The column of label p[0..n), or -1. */
static inline int smi_find_col(const struct smi *s, const char *p, size_t n)
{
    for (int i = 0; i < s->ncols; i++)
        if (strlen(s->cols[i].label) == n && memcmp(s->cols[i].label, p, n) == 0)
            return i;
    return -1;
}

/* A pasted `nvidia-smi topo -p2p` matrix (smi_p2p.c): its columns, read from its header. */
#define SMI_P2P_MAX 256
struct smi_p2p {
    int ncols;
    int col[SMI_P2P_MAX]; /* the topology matrix's column of each */
};
/* One line below the matrix: a P2P matrix's header or row (1; rows mark the GPUs of pairs
 * without peer access), or anything else (0). */
int smi_p2p_line(struct smi *s, const struct line *l, struct smi_p2p *p);
/* The graph (smi_infer.c): NVLink, PCIe switches, CPUs. */
BK_MUST_USE
enum bk_status smi_build(struct smi *s);

#endif
