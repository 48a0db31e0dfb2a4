/* SPDX-License-Identifier: MIT */
/* error.c - fatal errors and warnings (see error.h).
 *
 * Invariants: every message is one line, "alloy: ...\n" (control bytes in
 * its text, which may come from ALLOY_CONF or a path, written as \xNN), built in an
 * ay_fmt_t on the stack (more than its 512 bytes go out in more than one
 * write); nothing here allocates, takes a lock or uses stdio, so it can run
 * inside malloc, before initialisation and in a fork child; ay_fatal and
 * ay_fatal_in (and ay_fatal_msg) write the whole message before they abort(). */
#include "error.h"

#include <stdint.h>
#include <stdlib.h>

void ay_msg_begin(ay_fmt_t *f) {
    ay_fmt_init(f, NULL, NULL);
    ay_fmt_str(f, "alloy: ");
    f->escape = true; /* the text may come from outside (ALLOY_CONF, a path) */
}

void ay_msg_end(ay_fmt_t *f) {
    f->escape = false;
    ay_fmt_str(f, "\n");
    ay_fmt_flush(f);
}

void ay_fatal(const char *what, const void *ptr) { ay_fatal_in(NULL, what, ptr); }

void ay_fatal_msg(const char *what) {
    ay_fmt_t f;
    ay_msg_begin(&f);
    ay_fmt_str(&f, what);
    ay_msg_end(&f);
    abort();
}

void ay_fatal_in(const char *fn, const char *what, const void *ptr) {
    ay_fmt_t f;
    ay_msg_begin(&f);
    if (fn) {
        ay_fmt_str(&f, fn);
        ay_fmt_str(&f, ": ");
    }
    ay_fmt_str(&f, what);
    ay_fmt_str(&f, " (pointer ");
    ay_fmt_hex(&f, (uintptr_t)ptr);
    ay_fmt_str(&f, ")");
    ay_msg_end(&f);
    abort();
}

void ay_fatal_bad_link(const void *p) {
    if (*(const uintptr_t *)p == 0)
        ay_fatal_in("malloc()",
                    "double free: a block on a free list was handed out already (it was freed "
                    "twice)",
                    p);
    ay_fatal_in("malloc()", "free list corrupted: a block was written to after it was freed", p);
}

void ay_warn(const char *msg) {
    ay_fmt_t f;
    ay_msg_begin(&f);
    ay_fmt_str(&f, msg);
    ay_msg_end(&f);
}
