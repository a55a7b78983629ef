/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * plan_json.c - rendering the plan file (shared/spec/plan-json.md).
 *
 * One node or link per line keeps large files readable and makes golden diffs point at the
 * change. Node extras (name, busid, model) appear only when known; ids are canonical ASCII, the
 * input's own label goes in "name".
 */
#include "out/plan_json.h"

#include "config.h"
#include "core/json.h"
#include "topo/topo_rates.h"

static void indent_to(struct strbuf *sb, int level)
{
    for (int i = 0; i < level; i++)
        sb_puts(sb, "  ");
}

/* In a cluster a GPU's "local_gpu" is its number within its server: the device it runs on.
 * "p2p": false marks a GPU without peer access over PCIe.
 * "part" names the GPU part of the parts table whose NVLink rate was used, and "part_assumed"
 * says the input named none, so the rate rests on the reader's guess (blinkc-topology(5)). */
static void put_node(struct strbuf *sb, const struct topo *t, const struct topo_node *n)
{
    sb_puts(sb, "{\"id\": ");
    json_put_string(sb, n->id);
    sb_puts(sb, ", \"kind\": ");
    json_put_string(sb, topo_node_kind_name(n->kind));
    if (n->kind == TOPO_GPU)
        sb_printf(sb, ", \"rank\": %d", n->rank);
    if (n->kind == TOPO_GPU && t->nservers > 1)
        sb_printf(sb, ", \"local_gpu\": %d", n->local_gpu);
    if (n->kind == TOPO_GPU && n->no_p2p) /* PCIe traffic to other GPUs through host memory */
        sb_puts(sb, ", \"p2p\": false");
    sb_printf(sb, ", \"server\": %d, \"name\": ", n->server);
    json_put_string(sb, n->name);
    if (n->busid) {
        sb_puts(sb, ", \"busid\": ");
        json_put_string(sb, n->busid);
    }
    if (n->model) {
        sb_puts(sb, ", \"model\": ");
        json_put_string(sb, n->model);
    }
    if (n->kind == TOPO_GPU && n->part) { /* the part whose link rate the plan used */
        sb_puts(sb, ", \"part\": ");
        json_put_string(sb, n->part->name);
        if (n->part_assumed)
            sb_puts(sb, ", \"part_assumed\": true");
    }
    sb_putc(sb, '}');
}

void plan_json_topology(struct strbuf *sb, const struct topo *t, int indent)
{
    sb_puts(sb, "{\n");
    indent_to(sb, indent + 1);
    sb_puts(sb, "\"name\": ");
    json_put_string(sb, t->name ? t->name : "");
    sb_puts(sb, ",\n");
    indent_to(sb, indent + 1);
    sb_puts(sb, "\"nodes\": [\n");
    for (int i = 0; i < t->nnodes; i++) {
        indent_to(sb, indent + 2);
        put_node(sb, t, &t->nodes[i]);
        sb_puts(sb, i + 1 < t->nnodes ? ",\n" : "\n");
    }
    indent_to(sb, indent + 1);
    sb_puts(sb, "],\n");
    indent_to(sb, indent + 1);
    sb_puts(sb, "\"links\": [\n");
    for (int i = 0; i < t->nlinks; i++) {
        const struct topo_link *l = &t->links[i];
        indent_to(sb, indent + 2);
        sb_puts(sb, "{\"src\": ");
        json_put_string(sb, t->nodes[l->src].id);
        sb_puts(sb, ", \"dst\": ");
        json_put_string(sb, t->nodes[l->dst].id);
        sb_puts(sb, ", \"kind\": ");
        json_put_string(sb, topo_link_kind_name(l->kind));
        sb_printf(sb, ", \"count\": %d, \"gbps\": ", l->count);
        json_put_number(sb, l->gbps);
        sb_puts(sb, i + 1 < t->nlinks ? "},\n" : "}\n");
    }
    indent_to(sb, indent + 1);
    sb_puts(sb, "]\n");
    indent_to(sb, indent);
    sb_putc(sb, '}');
}

void plan_json_render(struct strbuf *sb, const struct topo *t, const struct plan_set *ps)
{
    sb_puts(sb, "{\n  \"format\": \"blink-plan\",\n  \"version\": 1,\n  \"generator\": ");
    json_put_string(sb, "blinkc " PACKAGE_VERSION);
    sb_puts(sb, ",\n  \"topology\": ");
    plan_json_topology(sb, t, 1);
    sb_puts(sb, ",\n  \"plans\": ");
    plan_json_plans(sb, ps);
    sb_puts(sb, "\n}\n");
}
