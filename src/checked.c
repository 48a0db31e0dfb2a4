/* SPDX-License-Identifier: MIT */
/* checked.c - the secure flavour's checked copies: memcpy, memmove, memset,
 * strcpy, strcat, strncpy, read and recv, when the destination is a block
 * of alloy's heap, check that the bytes they are about to write end inside
 * it, and abort with a message naming the function when they would not, so
 * that an overflow through them never lands (snmalloc checks the same
 * functions the same way).  One pagemap lookup and the class size
 * (ay_block_room); a destination that is not alloy's (the stack, globals,
 * another allocator's memory, a guard_sample block, whose guard pages
 * catch it) is not checked.  The copy itself is glibc's: its fortified
 * entry points (__memcpy_chk, ...), which run the same code as memcpy, with
 * no bound of their own.
 *
 * A copy the compiler inlines (a small constant size) is not a call, and is
 * not checked; a write by plain stores is not either: with secure_tags:true
 * the tag after the block catches those that reach it, at the block's free
 * (README, "What happens on bad input").  Only the destination is checked,
 * not the source (an over-read).
 *
 * Only the secure flavour defines these names (AY_SECURE); the release and
 * debug libraries leave them to libc, and so does a secure build with
 * -DAY_SECURE_CHECKED=0 (to measure what the checks cost). */
#define AY_DEFINES_CHECKED_COPIES 1 /* (memcpy here is the exported one: unchecked.h) */
#include "secure.h"

#ifndef AY_SECURE_CHECKED
#define AY_SECURE_CHECKED 1
#endif
#if AY_SECURE && AY_SECURE_CHECKED
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

#include "error.h"
#include "large.h"
#include "pagemap.h"
#include "span.h"

/* glibc's fortified entry points (not in its headers without
 * _FORTIFY_SOURCE): each copies as its plain name does, after checking
 * against `destlen`, which is SIZE_MAX here (the check is ours). */
extern void *__memcpy_chk(void *dst, const void *src, size_t n, size_t destlen);
extern void *__memmove_chk(void *dst, const void *src, size_t n, size_t destlen);
extern void *__memset_chk(void *dst, int c, size_t n, size_t destlen);
extern char *__strcpy_chk(char *dst, const char *src, size_t destlen);
extern char *__strcat_chk(char *dst, const char *src, size_t destlen);
extern char *__strncpy_chk(char *dst, const char *src, size_t n, size_t destlen);
extern ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
extern ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);

/* Bytes from p to the end of the block of alloy's heap that holds it
 * (malloc_usable_size's end: without the tag); SIZE_MAX when p is in no
 * small or large block of alloy's.  A pointer past a span's last whole
 * object is in no block: 0. */
AY_INLINE size_t ay_block_room(const void *p) {
    uintptr_t a = (uintptr_t)p;
    const ay_span_t *s = ay_pagemap_span(p);
    if (!s)
        return SIZE_MAX;
    switch (AY_LOAD(&s->state)) {
    case AY_SPAN_SMALL: {
        if (a >= s->limit)
            return 0;
        uintptr_t d = a - s->start;
        uintptr_t end =
            s->start + (((d * ay_class_magic[s->cls]) >> 40) + 1) * s->size - AY_TAG_BYTES;
        return end > a ? end - a : 0;
    }
    case AY_SPAN_LARGE:
    case AY_SPAN_DIRECT: {
        uintptr_t start = ay_large_start(s);
        uintptr_t end = s->start + AY_PAGES_BYTES(s->npages);
        return a < start ? SIZE_MAX : end > a ? end - a : 0;
    }
    default: return SIZE_MAX;
    }
}

/* n bytes written from dst by fn must end in dst's block.  (dst as a
 * number: read's buffer is declared write-only, and the message reads
 * nothing from it.) */
AY_INLINE void check_write_at(const char *fn, uintptr_t dst, size_t n) {
    __asm__("" : "+r"(dst)); /* (GCC would still see read's buffer in it) */
    if (n && AY_UNLIKELY(n > ay_block_room((const void *)dst)))
        ay_fatal_in(fn, "heap overflow: the write runs past the end of the block",
                    (const void *)dst);
}
#define check_write(fn, dst, n) check_write_at(fn, (uintptr_t)(dst), n)

#define CHECKED __attribute__((visibility("default")))

CHECKED void *memcpy(void *restrict dst, const void *restrict src, size_t n) {
    check_write("memcpy()", dst, n);
    return __memcpy_chk(dst, src, n, SIZE_MAX);
}

CHECKED void *memmove(void *dst, const void *src, size_t n) {
    check_write("memmove()", dst, n);
    return __memmove_chk(dst, src, n, SIZE_MAX);
}

CHECKED void *memset(void *dst, int c, size_t n) {
    check_write("memset()", dst, n);
    return __memset_chk(dst, c, n, SIZE_MAX);
}

CHECKED char *strcpy(char *restrict dst, const char *restrict src) {
    check_write("strcpy()", dst, strlen(src) + 1);
    return __strcpy_chk(dst, src, SIZE_MAX);
}

CHECKED char *strcat(char *restrict dst, const char *restrict src) {
    check_write("strcat()", dst, strlen(dst) + strlen(src) + 1);
    return __strcat_chk(dst, src, SIZE_MAX);
}

CHECKED char *strncpy(char *restrict dst, const char *restrict src, size_t n) {
    check_write("strncpy()", dst, n); /* it pads with zeros to n */
    return __strncpy_chk(dst, src, n, SIZE_MAX);
}

CHECKED ssize_t read(int fd, void *buf, size_t n) {
    check_write("read()", buf, n);
    return __read_chk(fd, buf, n, SIZE_MAX);
}

CHECKED ssize_t recv(int fd, void *buf, size_t n, int flags) {
    check_write("recv()", buf, n);
    return __recv_chk(fd, buf, n, SIZE_MAX, flags);
}
#endif
