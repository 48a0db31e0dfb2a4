/* SPDX-License-Identifier: MIT */
/* fmt.c - the text formatter (fmt.h): strings, decimal integers (right-
 * aligned in a field when asked) and hexadecimal into a fixed buffer,
 * handed to the write callback (or written to stderr) whenever it fills
 * and at the end.
 *
 * Invariants: len <= sizeof buf (a full buffer goes out before the next
 * byte is added); nothing is allocated and no stdio is used, so it can run
 * inside malloc, in a fork child, and at exit.
 * A write that fails is dropped: the formatter never blocks its caller on
 * an error. */
#include "fmt.h"

#include <string.h>

#include "os.h"
#include "unchecked.h"

void ay_fmt_init(ay_fmt_t *f, alloy_write_cb *cb, void *opaque) {
    f->len = 0;
    f->cb = cb;
    f->opaque = opaque;
    f->escape = false;
}

void ay_fmt_flush(ay_fmt_t *f) {
    if (f->len == 0)
        return;
    if (f->cb)
        f->cb(f->opaque, f->buf, f->len);
    else
        ay_os_write(2, f->buf, f->len);
    f->len = 0;
}

static void put(ay_fmt_t *f, const char *s, size_t n) {
    while (n > 0) {
        if (f->len == sizeof f->buf)
            ay_fmt_flush(f);
        size_t k = sizeof f->buf - f->len;
        if (k > n)
            k = n;
        memcpy(f->buf + f->len, s, k);
        f->len += k;
        s += k;
        n -= k;
    }
}

void ay_fmt_mem(ay_fmt_t *f, const char *s, size_t n) {
    if (!f->escape)
        return put(f, s, n);
    static const char hex[] = "0123456789abcdef";
    size_t plain = 0; /* bytes of s before i that need no escape */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != 0x7f)
            continue;
        put(f, s + plain, i - plain);
        char esc[4] = {'\\', 'x', hex[c >> 4], hex[c & 15]};
        put(f, esc, 4);
        plain = i + 1;
    }
    put(f, s + plain, n - plain);
}

void ay_fmt_str(ay_fmt_t *f, const char *s) { ay_fmt_mem(f, s, strlen(s)); }

void ay_fmt_u64w(ay_fmt_t *f, uint64_t v, unsigned width) {
    char tmp[24];
    unsigned n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < width && n < sizeof tmp)
        tmp[sizeof tmp - 1 - n++] = ' ';
    ay_fmt_mem(f, tmp + sizeof tmp - n, n);
}

void ay_fmt_u64(ay_fmt_t *f, uint64_t v) { ay_fmt_u64w(f, v, 0); }

void ay_fmt_hex(ay_fmt_t *f, uint64_t v) {
    char tmp[18];
    unsigned n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    tmp[sizeof tmp - 1 - n++] = 'x';
    tmp[sizeof tmp - 1 - n++] = '0';
    ay_fmt_mem(f, tmp + sizeof tmp - n, n);
}
