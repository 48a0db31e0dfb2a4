/* SPDX-License-Identifier: MIT */
/* checker.h - what the hot-path allocators tell memory checkers, so that
 * memory they hand out, take back or reset is seen as such:
 *
 *   AddressSanitizer  when src/hot is compiled with -fsanitize=address
 *                     (alloy_hot_san): freed slots, reset or rewound arena
 *                     memory, and never-used chunk memory are poisoned, and
 *                     unpoisoned when handed out;
 *   Valgrind memcheck when src/hot is compiled with ALLOY_VALGRIND=1 (the
 *                     CMake option -DALLOY_VALGRIND=ON; Debian's valgrind
 *                     package has the header) and runs under valgrind:
 *                     every pool and every region of an arena is a memcheck
 *                     memory pool (VALGRIND_CREATE_MEMPOOL, _ALLOC, _FREE,
 *                     _TRIM), so memcheck reports a read of a freed pool
 *                     slot or of arena memory after a reset or a rewind.
 *
 * When either is on (ay_hot_checked()), the inline fast paths of the
 * headers always miss into the library, where the annotations are: a pool
 * becomes a checked pool (ALLOY_POOL_CHECKED, whose `free` is NULL), and an
 * arena keeps `end` equal to `next`.  Otherwise everything here compiles to
 * nothing (memcheck's requests cost a few instructions when not under
 * valgrind, and are only compiled in with ALLOY_VALGRIND).
 *
 * The allocators' own reads and writes of the links they keep in free
 * slots go through ay_hot_link_get/set, which are exempt from the checks.
 */
#ifndef ALLOY_HOT_CHECKER_H
#define ALLOY_HOT_CHECKER_H

#include <stdbool.h>
#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__)
#define AY_HOT_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AY_HOT_ASAN 1
#endif
#endif
#ifndef AY_HOT_ASAN
#define AY_HOT_ASAN 0
#endif

#ifndef ALLOY_VALGRIND
#define ALLOY_VALGRIND 0
#endif

#if AY_HOT_ASAN
#include <sanitizer/asan_interface.h>
#endif
#if ALLOY_VALGRIND
#include <valgrind/memcheck.h>
#endif

/* Are the allocators telling a checker: always under ASan, and under
 * memcheck when running on valgrind. */
static inline bool ay_hot_checked(void) {
#if ALLOY_VALGRIND
    if (RUNNING_ON_VALGRIND)
        return true;
#endif
    return AY_HOT_ASAN;
}

/* n bytes at p may not be touched (freed, reset, never handed out). */
static inline void ay_hot_forbid(const void *p, size_t n) {
#if AY_HOT_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#endif
#if ALLOY_VALGRIND
    VALGRIND_MAKE_MEM_NOACCESS(p, n);
#endif
    (void)p;
    (void)n;
}

/* n bytes at p belong to someone again (handed back upstream, or to the
 * caller whose buffer they are): accessible, contents undefined. */
static inline void ay_hot_allow(const void *p, size_t n) {
#if AY_HOT_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
#if ALLOY_VALGRIND
    VALGRIND_MAKE_MEM_UNDEFINED(p, n);
#endif
    (void)p;
    (void)n;
}

/* ---- memory pools: `anchor` names one (a pool, an arena region) ---- */

static inline void ay_hot_pool_create(const void *anchor) {
#if ALLOY_VALGRIND
    VALGRIND_CREATE_MEMPOOL(anchor, 0, 0);
#endif
    (void)anchor;
}

/* The pool is gone: its blocks become inaccessible. */
static inline void ay_hot_pool_destroy(const void *anchor) {
#if ALLOY_VALGRIND
    VALGRIND_DESTROY_MEMPOOL(anchor);
#endif
    (void)anchor;
}

/* n bytes at p handed out from the pool (accessible, undefined). */
static inline void ay_hot_pool_alloc(const void *anchor, const void *p, size_t n) {
#if ALLOY_VALGRIND
    VALGRIND_MEMPOOL_ALLOC(anchor, p, n);
#endif
#if AY_HOT_ASAN
    ASAN_UNPOISON_MEMORY_REGION(p, n);
#endif
    (void)anchor;
    (void)p;
    (void)n;
}

/* The block of n bytes at p given back to the pool (inaccessible). */
static inline void ay_hot_pool_free(const void *anchor, const void *p, size_t n) {
#if ALLOY_VALGRIND
    VALGRIND_MEMPOOL_FREE(anchor, p);
#endif
#if AY_HOT_ASAN
    ASAN_POISON_MEMORY_REGION(p, n);
#endif
    (void)anchor;
    (void)p;
    (void)n;
}

/* Every block of the pool outside [p, p + n) is freed (memcheck's trim);
 * the caller forbids the memory itself. */
static inline void ay_hot_pool_trim(const void *anchor, const void *p, size_t n) {
#if ALLOY_VALGRIND
    VALGRIND_MEMPOOL_TRIM(anchor, p, n);
#endif
    (void)anchor;
    (void)p;
    (void)n;
}

/* ---- links in free slots, read and written by the allocator itself ---- */

void *ay_hot_link_get(const void *slot);
void ay_hot_link_set(void *slot, void *next);

#endif
