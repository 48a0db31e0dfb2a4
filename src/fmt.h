/* SPDX-License-Identifier: MIT */
/* fmt.h - a tiny text formatter with no allocation and no stdio: it fills
 * the buffer of an ay_fmt_t (the caller's, usually on its stack) and hands
 * full chunks to a write callback (or to stderr).
 *
 * Invariants: len <= sizeof buf; text reaches the callback in order, in
 * chunks of at most 512 bytes, and only on a full buffer or ay_fmt_flush;
 * the caller must flush before the ay_fmt_t goes. */
#ifndef ALLOY_FMT_H
#define ALLOY_FMT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloy.h"

typedef struct ay_fmt {
    char buf[512];
    size_t len;
    alloy_write_cb *cb; /* NULL: write(2) to stderr */
    void *opaque;
    bool escape; /* control bytes go out as \xNN (a message's text, error.h) */
} ay_fmt_t;

void ay_fmt_init(ay_fmt_t *f, alloy_write_cb *cb, void *opaque);
/* n bytes of s; with f->escape, each control byte (below 0x20, and 0x7f)
 * as the four characters \xNN, so that text from outside (ALLOY_CONF, a
 * file name) cannot move a terminal's cursor or end a line. */
void ay_fmt_mem(ay_fmt_t *f, const char *s, size_t n);
void ay_fmt_str(ay_fmt_t *f, const char *s);
void ay_fmt_u64(ay_fmt_t *f, uint64_t v);
/* v right-aligned in a field of `width` characters */
void ay_fmt_u64w(ay_fmt_t *f, uint64_t v, unsigned width);
void ay_fmt_hex(ay_fmt_t *f, uint64_t v);
void ay_fmt_flush(ay_fmt_t *f);

#endif
