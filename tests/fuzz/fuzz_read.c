/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * fuzz_read.c - the body every reader harness shares: one input through topo_read with the
 * format forced (reader + topo_finalize), and the same bytes through format detection.
 *
 * Besides what the sanitizers catch, it checks the readers' contract (topo_read.h, bk.h): a
 * reader returns BK_OK with no error recorded, or BK_EINPUT with at least one error (a clear
 * message, never a silent failure), or BK_ENOMEM; anything else (BK_EINTERNAL) is a bug. A
 * cluster file's server that cannot be opened is BK_EINPUT too, at its server line.
 */
#include <stdlib.h>

#include "core/diag.h"
#include "fuzz_util.h"
#include "core/input.h"
#include "topo/topo.h"
#include "read/topo_read.h"

int fuzz_read_check(const struct input *in, const struct topo_read_opts *o)
{
    struct diag dd;
    diag_init(&dd);
    (void)topo_detect_format(in, &dd); /* any answer is fine; it must not crash or leak */
    diag_free(&dd);

    struct diag d;
    diag_init(&d);
    struct topo t;
    enum bk_status st = topo_read(in, o, &t, &d);
    int bad = 0;
    if (st == BK_OK) {
        if (d.nerrors != 0)
            bad = 1; /* success, yet an error was recorded */
        topo_free(&t); /* topo_read freed it already on failure */
    } else if (st == BK_EINPUT) {
        if (d.nerrors == 0 || !diag_first_error(&d))
            bad = 2; /* refused without saying why */
    } else if (st != BK_ENOMEM) {
        bad = 3; /* BK_EINTERNAL or a status a reader never returns */
    }
    diag_free(&d);
    return bad;
}

int fuzz_read_as(const uint8_t *data, size_t size, int fmt)
{
    struct input in;
    if (input_from_memory("fuzz-input", (const char *)data, size, &in) != BK_OK)
        return 0; /* out of memory: nothing to test */
    struct topo_read_opts o;
    topo_read_opts_default(&o);
    o.format = (enum topo_format)fmt;
    int bad = fuzz_read_check(&in, &o);
    input_free(&in);
    return bad;
}
