/* SPDX-License-Identifier: MIT */
/* unchecked.h - alloy's own copies: memcpy, memmove, memset, strcpy,
 * strcat, strncpy, read and recv as alloy's code calls them.
 *
 * The secure flavour exports checked copies under those names (checked.c,
 * layer 14): each looks up its destination's block in the pagemap and
 * aborts through the error module when the write would run past it.  A
 * program's calls should reach them; alloy's own should not: its copies
 * stay inside the blocks it sized (calloc's zeroing, realloc's copy, the
 * reports' buffers), a lookup for each would be paid twice, and a call from
 * any layer into the front end's checked copies, which report through the
 * error module, which copies again, would run against the layer order.  So,
 * in the secure flavour, this header renames them for every module that
 * includes it (internal.h does, so every module of src/ but src/hot): a
 * declaration with an asm label makes each call, and each copy GCC emits
 * for a struct assignment or an initialiser, a call of ay_unchecked_NAME,
 * which unchecked.c defines, hidden, on glibc's entry points that copy
 * without a check (__memcpy_chk with no bound, ...).  The names keep their
 * builtin meaning: a copy of a small constant size is still inlined.
 *
 * checked.c, which defines the exported names, defines
 * AY_DEFINES_CHECKED_COPIES first and is not renamed.  The release and
 * debug flavours export no copy of their own, and rename nothing.  The test internal-copies-secure reads liballoy_secure.so's
 * disassembly: no function of alloy's but the hot-path allocators (src/hot,
 * which use whatever the process has, as a program does) calls an
 * exported checked copy. */
#ifndef ALLOY_UNCHECKED_H
#define ALLOY_UNCHECKED_H

#if defined(AY_SECURE) && AY_SECURE && !defined(AY_DEFINES_CHECKED_COPIES)
/* (types spelled as the compiler knows them, so that the header needs no
 * system header before a file's own _GNU_SOURCE) */
extern void *memcpy(void *restrict dst, const void *restrict src,
                    __SIZE_TYPE__ n) __asm__("ay_unchecked_memcpy");
extern void *memmove(void *dst, const void *src, __SIZE_TYPE__ n) __asm__("ay_unchecked_memmove");
extern void *memset(void *dst, int c, __SIZE_TYPE__ n) __asm__("ay_unchecked_memset");
extern char *strcpy(char *restrict dst, const char *restrict src) __asm__("ay_unchecked_strcpy");
extern char *strcat(char *restrict dst, const char *restrict src) __asm__("ay_unchecked_strcat");
extern char *strncpy(char *restrict dst, const char *restrict src,
                     __SIZE_TYPE__ n) __asm__("ay_unchecked_strncpy");
extern long read(int fd, void *buf, __SIZE_TYPE__ n) __asm__("ay_unchecked_read");
extern long recv(int fd, void *buf, __SIZE_TYPE__ n, int flags) __asm__("ay_unchecked_recv");
#endif

#endif
