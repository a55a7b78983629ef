/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * smi_p2p.c - `nvidia-smi topo -p2p r` (or w, rw, n, a) pasted below the topology matrix: a
 * matrix over the same GPU labels whose cells say whether each pair has peer access (OK) or not
 * (NS, CNS, GNS, TNS, DR or U; X on the diagonal). Both GPUs of a pair without it are marked, so
 * the planner sends their PCIe traffic through host memory (topo_node.no_p2p). Lines of any
 * other shape are left to the legend reader.
 */
#include <string.h>

#include "read/smi_internal.h"

static const char *const p2p_codes[] = {"OK", "X", "NS", "CNS", "GNS", "TNS", "DR", "U"};

/* The whitespace-separated words of l, at most max, into w and len; returns how many (max + 1
 * where there are more). */
static int words(const struct line *l, const char **w, size_t *len, int max)
{
    int n = 0;
    for (size_t i = 0; i < l->n;) {
        while (i < l->n && (l->s[i] == ' ' || l->s[i] == '\t'))
            i++;
        if (i >= l->n)
            break;
        size_t st = i;
        while (i < l->n && l->s[i] != ' ' && l->s[i] != '\t')
            i++;
        if (n == max)
            return max + 1;
        w[n] = l->s + st;
        len[n++] = i - st;
    }
    return n;
}

/* The matrix's GPU column of word p, or -1. */
static int gpu_col(const struct smi *s, const char *p, size_t n)
{
    int c = smi_find_col(s, p, n);
    return c >= 0 && s->cols[c].gpu >= 0 ? c : -1;
}

static int p2p_code(const char *p, size_t n)
{
    for (size_t k = 0; k < sizeof p2p_codes / sizeof p2p_codes[0]; k++)
        if (strlen(p2p_codes[k]) == n && memcmp(p2p_codes[k], p, n) == 0)
            return (int)k;
    return -1;
}

int smi_p2p_line(struct smi *s, const struct line *l, struct smi_p2p *p)
{
    const char *w[SMI_P2P_MAX + 2];
    size_t len[SMI_P2P_MAX + 2];
    int n = words(l, w, len, SMI_P2P_MAX + 1), head = n >= 2 && n <= SMI_P2P_MAX;
    for (int i = 0; head && i < n; i++)
        head = gpu_col(s, w[i], len[i]) >= 0;
    if (head) { /* "GPU0 GPU1 ...": the columns of a P2P matrix */
        p->ncols = n;
        for (int i = 0; i < n; i++)
            p->col[i] = gpu_col(s, w[i], len[i]);
        return 1;
    }
    int row = n == p->ncols + 1 && p->ncols > 0 ? gpu_col(s, w[0], len[0]) : -1;
    for (int i = 1; row >= 0 && i < n; i++)
        if (p2p_code(w[i], len[i]) < 0)
            row = -1;
    if (row < 0)
        return 0;
    for (int i = 1; i < n; i++) {
        int code = p2p_code(w[i], len[i]);
        if (code >= 2) { /* neither OK nor X: this pair has no peer access */
            s->cols[row].no_p2p = 1;
            s->cols[p->col[i - 1]].no_p2p = 1;
        }
    }
    return 1;
}
