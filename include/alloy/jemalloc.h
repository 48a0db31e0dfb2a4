/* SPDX-License-Identifier: MIT */
/* alloy/jemalloc.h - jemalloc's non-standard API, as liballoy exports it:
 * the same names, flags and binary interface as jemalloc 5's
 * <jemalloc/jemalloc.h>, so that a program written for jemalloc runs on
 * alloy unchanged, preloaded or linked.  Include this header (or jemalloc's
 * own: the flag values are the same) and link -lalloy.
 *
 * What alloy does with them (docs/COMPATIBILITY.md):
 *   mallocx, rallocx   as jemalloc's manual says; NULL (errno ENOMEM) when
 *                      the size or alignment cannot be met; size 0 is
 *                      served as malloc(0), never freed
 *   xallocx            never moves or resizes a block: it returns the
 *                      block's real size, which is below `size` when the
 *                      block would have to grow
 *   sallocx            malloc_usable_size
 *   dallocx, sdallocx  free; the size given to sdallocx is not trusted
 *                      (the debug flavour aborts when it is larger than
 *                      the block)
 *   nallocx            the real size mallocx would give, or 0 when it
 *                      would fail
 *   flags              MALLOCX_LG_ALIGN / MALLOCX_ALIGN, MALLOCX_ZERO,
 *                      MALLOCX_ARENA(i) (alloy's heap i: mallocx returns
 *                      NULL with errno EINVAL when there is no heap i),
 *                      MALLOCX_TCACHE_NONE and MALLOCX_TCACHE(tc) (alloy
 *                      has no explicit thread caches: both bypass the
 *                      thread's cache)
 *   mallctl, mallctlnametomib, mallctlbymib
 *                      jemalloc's names where alloy has the same thing
 *                      (docs/STATS.md lists them), and every alloy_ctl
 *                      name (alloy/ctl.h); jemalloc's rules for the
 *                      arguments and its errors: ENOENT for an unknown
 *                      name, EINVAL for a wrong length, EPERM to write a
 *                      read-only name or to read or write an action
 *   malloc_stats_print alloy's report (alloy_stats_print): the full text
 *                      report, or JSON with "J"; "a" leaves out the heaps,
 *                      "b" or "l" the size classes, other letters are
 *                      ignored
 */
#ifndef ALLOY_JEMALLOC_H
#define ALLOY_JEMALLOC_H

#include <stddef.h>

#include "../alloy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The flags: the low 6 bits are log2 of the alignment (0: none), bit 6
 * asks for zeroed memory, bits 8-19 a thread cache (1: none), and bits 20
 * and up an arena (alloy's heap) plus one. */
#define MALLOCX_LG_ALIGN(la) ((int)(la))
#define MALLOCX_ALIGN(a) ((int)__builtin_ctzll((unsigned long long)(a)))
#define MALLOCX_ZERO ((int)0x40)
#define MALLOCX_TCACHE(tc) ((int)(((tc) + 2) << 8))
#define MALLOCX_TCACHE_NONE MALLOCX_TCACHE(-1)
#define MALLOCX_ARENA(a) ((((int)(a)) + 1) << 20)

/* "arena.<i>.purge" with i = MALLCTL_ARENAS_ALL (or arenas.narenas) purges
 * every heap; there are no destroyed arenas to sum over. */
#define MALLCTL_ARENAS_ALL 4096
#define MALLCTL_ARENAS_DESTROYED 4097

ALLOY_API void *mallocx(size_t size, int flags);
ALLOY_API void *rallocx(void *ptr, size_t size, int flags);
ALLOY_API size_t xallocx(void *ptr, size_t size, size_t extra, int flags);
ALLOY_API size_t sallocx(const void *ptr, int flags);
ALLOY_API void dallocx(void *ptr, int flags);
ALLOY_API void sdallocx(void *ptr, size_t size, int flags);
ALLOY_API size_t nallocx(size_t size, int flags);

ALLOY_API int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
ALLOY_API int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp);
ALLOY_API int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
                           void *newp, size_t newlen);

ALLOY_API void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
                                  const char *opts);

#ifdef __cplusplus
}
#endif
#endif
