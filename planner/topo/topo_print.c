/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * topo_print.c - the --print-topology matrix and the run summary.
 *
 * Relations use nvidia-smi's legend so users can compare with `nvidia-smi topo -m` on the real
 * box, and blinkc reads the print back as `nvidia-smi topo -m` text to the same matrix
 * (test_print_roundtrip): NV# is the direct NVLink count, or for a pair joined through
 * NVSwitches the smaller of the two GPUs' links into the switch fabric (what nvidia-smi prints
 * behind NVSwitch); otherwise the PCIe path decides: PIX (one switch), PXB (several switches, no
 * CPU), NODE (through one CPU: the model has no host bridges, and a CPU's devices sit behind
 * different root ports, which nvidia-smi calls NODE), SYS (across CPUs). NET marks ends on
 * different servers. The affinity columns give each GPU's NUMA node (its CPU's socket) and N/A
 * for the CPU cores, which the model does not know.
 */
#include "topo/topo_print.h"

#include <stdlib.h>
#include <string.h>

/* Every matrix cell is a path search over the whole graph (about nnodes^2 + nnodes * nlinks
 * steps), so past these a matrix would take minutes and be unreadable anyway: it is left out
 * with a note, and the link list still follows. 128 columns of 128 GPUs under one switch take
 * about 0.1 s; MATRIX_MAX_WORK is some 20 times that. */
#define MATRIX_MAX_COLUMNS 128
#define MATRIX_MAX_WORK 2e10

/* Total NVLinks from node u into NVSwitches. */
static int switch_links(const struct topo *t, int u)
{
    int n = 0;
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        if (l->src == u && l->kind == TOPO_NVLINK && t->nodes[l->dst].kind == TOPO_NVSWITCH)
            n += l->count;
    }
    return n;
}

/* Can a reach b through NVSwitches only? */
static int via_switches(const struct topo *t, int a, int b, char *seen, int *queue)
{
    memset(seen, 0, (size_t)t->nnodes);
    int head = 0, tail = 0;
    queue[tail++] = a;
    seen[a] = 1;
    while (head < tail) {
        int u = queue[head++];
        for (int i = 0; i < t->nlinks; i++) {
            const struct topo_link *l = &t->links[i];
            if (l->src != u || l->kind != TOPO_NVLINK || seen[l->dst])
                continue;
            if (l->dst == b)
                return 1;
            if (t->nodes[l->dst].kind == TOPO_NVSWITCH) {
                seen[l->dst] = 1;
                queue[tail++] = l->dst;
            }
        }
    }
    return 0;
}

/*
 * Fewest CPUs, then fewest hops, on a PCIe/SMP path from a to b through switches and CPUs only.
 * A small Dijkstra with weight 1000 per CPU entered and 1 per hop; returns -1 if unreachable.
 */
static int pcie_cost(const struct topo *t, int a, int b, int *dist, char *done)
{
    for (int i = 0; i < t->nnodes; i++) {
        dist[i] = -1;
        done[i] = 0;
    }
    dist[a] = 0;
    for (;;) {
        int u = -1;
        for (int i = 0; i < t->nnodes; i++)
            if (!done[i] && dist[i] >= 0 && (u < 0 || dist[i] < dist[u]))
                u = i;
        if (u < 0)
            return -1;
        if (u == b)
            return dist[u];
        done[u] = 1;
        if (u != a && (t->nodes[u].kind == TOPO_GPU || t->nodes[u].kind == TOPO_NIC))
            continue; /* endpoints never relay */
        for (int i = 0; i < t->nlinks; i++) {
            const struct topo_link *l = &t->links[i];
            if (l->src != u || (l->kind != TOPO_PCIE && l->kind != TOPO_SMP))
                continue;
            int w = 1 + (t->nodes[l->dst].kind == TOPO_CPU ? 1000 : 0);
            if (dist[l->dst] < 0 || dist[u] + w < dist[l->dst])
                dist[l->dst] = dist[u] + w;
        }
    }
}

void topo_relation(const struct topo *t, int a, int b, char *buf, size_t cap)
{
    if (a == b) {
        snprintf(buf, cap, "X");
        return;
    }
    if (t->nodes[a].server != t->nodes[b].server) {
        snprintf(buf, cap, "NET");
        return;
    }
    int direct = 0;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src == a && t->links[i].dst == b && t->links[i].kind == TOPO_NVLINK)
            direct = t->links[i].count;
    int *ibuf = malloc((size_t)t->nnodes * sizeof *ibuf);
    char *cbuf = malloc((size_t)t->nnodes);
    if (!ibuf || !cbuf) {
        free(ibuf), free(cbuf);
        snprintf(buf, cap, "?");
        return;
    }
    if (direct) {
        snprintf(buf, cap, "NV%d", direct);
    } else if (t->nodes[a].kind == TOPO_GPU && t->nodes[b].kind == TOPO_GPU &&
               via_switches(t, a, b, cbuf, ibuf)) {
        int la = switch_links(t, a), lb = switch_links(t, b);
        snprintf(buf, cap, "NV%d", la < lb ? la : lb);
    } else {
        int c = pcie_cost(t, a, b, ibuf, cbuf);
        if (c < 0)
            snprintf(buf, cap, "-");
        else if (c >= 2000)
            snprintf(buf, cap, "SYS");
        else if (c >= 1000)
            snprintf(buf, cap, "NODE");
        else if (c == 2)
            snprintf(buf, cap, "PIX");
        else
            snprintf(buf, cap, "PXB");
    }
    free(ibuf), free(cbuf);
}

/* The NUMA node of the CPU a GPU hangs under (the nearest CPU by PCIe hops): its socket, else
 * its position among its server's CPUs; -1 when no CPU is reachable. */
static int home_numa(const struct topo *t, int u, int *dist, char *done)
{
    int best = -1, bestd = -1, k = 0;
    for (int c = 0; c < t->nnodes; c++) {
        if (t->nodes[c].kind != TOPO_CPU || t->nodes[c].server != t->nodes[u].server)
            continue;
        int d = pcie_cost(t, u, c, dist, done);
        if (d >= 0 && (bestd < 0 || d < bestd)) {
            bestd = d;
            best = t->nodes[c].socket >= 0 ? t->nodes[c].socket : k;
        }
        k++;
    }
    return best;
}

/* GPUs are labelled by rank, as nvidia-smi does; NICs NIC0.. in order (GPUs come first). */
static const char *matrix_label(const struct topo *t, const int *cols, int j, char *buf,
                                size_t cap)
{
    const struct topo_node *c = &t->nodes[cols[j]];
    if (c->kind == TOPO_GPU)
        snprintf(buf, cap, "GPU%d", c->rank);
    else
        snprintf(buf, cap, "NIC%d", j - t->ngpus);
    return buf;
}

void topo_print_matrix(struct strbuf *sb, const struct topo *t)
{
    int *cols = malloc((size_t)t->nnodes * sizeof *cols);
    int *dist = malloc((size_t)t->nnodes * sizeof *dist);
    char *done = malloc((size_t)t->nnodes);
    if (!cols || !dist || !done) {
        sb->failed = 1;
        free(cols), free(dist), free(done);
        return;
    }
    int n = 0;
    for (int i = 0; i < t->nnodes; i++)
        if (t->nodes[i].kind == TOPO_GPU || t->nodes[i].kind == TOPO_NIC)
            cols[n++] = i;
    double nn = t->nnodes, work = (double)n * n * (nn * nn + nn * t->nlinks);
    if (n > MATRIX_MAX_COLUMNS || work > MATRIX_MAX_WORK) {
        sb_printf(sb, "(matrix left out: %d GPUs and NICs among %d nodes and %d links; blinkc "
                      "prints it for at most %d columns on a smaller graph)\n",
                  n, t->nnodes, t->nlinks, MATRIX_MAX_COLUMNS);
        goto links;
    }
    char label[32];
    sb_printf(sb, "%-8s", "");
    for (int j = 0; j < n; j++)
        sb_printf(sb, "%-8s", matrix_label(t, cols, j, label, sizeof label));
    sb_puts(sb, "CPU Affinity    NUMA Affinity\n");
    for (int i = 0; i < n; i++) {
        sb_printf(sb, "%-8s", matrix_label(t, cols, i, label, sizeof label));
        for (int j = 0; j < n; j++) {
            char rel[16];
            topo_relation(t, cols[i], cols[j], rel, sizeof rel);
            sb_printf(sb, "%-8s", rel);
        }
        int numa = t->nodes[cols[i]].kind == TOPO_GPU ? home_numa(t, cols[i], dist, done) : -2;
        if (numa >= 0)
            sb_printf(sb, "%-16s%d", "N/A", numa);
        else if (numa == -1)
            sb_printf(sb, "%-16s%s", "N/A", "N/A");
        while (sb->len > 0 && sb->data[sb->len - 1] == ' ')
            sb->data[--sb->len] = '\0';
        sb_putc(sb, '\n');
    }
    sb_puts(sb, "\nLegend:\n\n"
                "  X    = Self\n"
                "  NET  = Ends on different servers (through NICs and the network)\n"
                "  SYS  = Connection traversing PCIe and the link between CPUs (QPI/UPI)\n"
                "  NODE = Connection traversing PCIe and a CPU's host bridges (one NUMA node)\n"
                "  PHB  = Connection traversing PCIe and one host bridge (blinkc prints NODE)\n"
                "  PXB  = Connection traversing multiple PCIe switches (no CPU)\n"
                "  PIX  = Connection traversing a single PCIe switch\n"
                "  NV#  = Connection traversing a bonded set of # NVLinks\n");
    int nic = 0;
    for (int j = t->ngpus; j < n; j++) {
        sb_printf(sb, "%s  NIC%d: ", nic++ ? "" : "\nNIC Legend:\n\n", j - t->ngpus);
        for (const char *c = t->nodes[cols[j]].name; *c; c++) /* input text: no control bytes */
            sb_putc(sb, (unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c);
        sb_putc(sb, '\n');
    }
links:
    sb_puts(sb, "\nLinks (each direction; GB/s = 1e9 B/s):\n\n");
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        sb_printf(sb, "  %-8s -> %-8s %-7s x%-3d ", t->nodes[l->src].id, t->nodes[l->dst].id,
                  topo_link_kind_name(l->kind), l->count);
        sb_put_decimal(sb, l->gbps, 3);
        sb_puts(sb, " GB/s\n");
    }
    free(cols), free(dist), free(done);
}

/* A GB/s value right-aligned in `width` columns (locale-free, like every number we print). */
static void put_column(struct strbuf *sb, double v, int width)
{
    struct strbuf num;
    sb_init(&num);
    sb_put_decimal(&num, v, 1);
    sb_printf(sb, "%*s", width, num.data ? num.data : "?");
    sb_free(&num);
}

void topo_print_summary(struct strbuf *sb, const struct topo *t)
{
    int nodes[TOPO_NODE_KINDS] = {0}, pairs[TOPO_LINK_KINDS] = {0}, links[TOPO_LINK_KINDS] = {0};
    for (int i = 0; i < t->nnodes; i++)
        nodes[t->nodes[i].kind]++;
    for (int i = 0; i < t->nlinks; i++)
        if (t->links[i].src < t->links[i].dst) {
            pairs[t->links[i].kind]++;
            links[t->links[i].kind] += t->links[i].count;
        }
    sb_puts(sb, "topology ");
    sb_puts(sb, t->name ? t->name : "");
    sb_printf(sb, " (%s format): %d server%s\n", t->format ? t->format : "?", t->nservers,
              t->nservers == 1 ? "" : "s");
    sb_printf(sb, "  nodes: %d gpu, %d nvswitch, %d pcie-switch, %d cpu, %d nic, %d net-switch\n",
              nodes[TOPO_GPU], nodes[TOPO_NVSWITCH], nodes[TOPO_PCIE_SWITCH], nodes[TOPO_CPU],
              nodes[TOPO_NIC], nodes[TOPO_NET_SWITCH]);
    sb_printf(sb,
              "  links: %d nvlink pairs (%d NVLinks), %d pcie, %d smp, %d net (full duplex)\n",
              pairs[TOPO_NVLINK], links[TOPO_NVLINK], pairs[TOPO_PCIE], pairs[TOPO_SMP],
              pairs[TOPO_NET]);
    int no_p2p = 0;
    for (int i = 0; i < t->nnodes; i++)
        no_p2p += t->nodes[i].kind == TOPO_GPU && t->nodes[i].no_p2p;
    if (no_p2p)
        sb_printf(sb, "  peer access: none over PCIe for %d of %d GPUs: PCIe paths between GPUs "
                      "turn in host memory (host-staged)\n", no_p2p, nodes[TOPO_GPU]);
    sb_puts(sb, "  GPU      model                        NVLinks  NVLink GB/s out  PCIe GB/s out\n");
    for (int g = 0; g < t->nnodes; g++) {
        const struct topo_node *n = &t->nodes[g];
        if (n->kind != TOPO_GPU)
            continue;
        int nv = 0;
        double nvbw = 0, pcbw = 0;
        for (int i = 0; i < t->nlinks; i++) {
            const struct topo_link *l = &t->links[i];
            if (l->src != g)
                continue;
            if (l->kind == TOPO_NVLINK) {
                nv += l->count;
                nvbw += l->gbps;
            } else if (l->kind == TOPO_PCIE) {
                pcbw += l->gbps;
            }
        }
        char model[29];
        snprintf(model, sizeof model, "%s", n->model ? n->model : "-");
        for (char *p = model; *p; p++)
            if ((unsigned char)*p < 0x20 || *p == 0x7f)
                *p = '?';
        sb_printf(sb, "  %-8s %-28s %7d", n->id, model, nv);
        put_column(sb, nvbw, 17);
        put_column(sb, pcbw, 15);
        sb_putc(sb, '\n');
    }
}
