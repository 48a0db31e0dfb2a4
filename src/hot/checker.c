/* SPDX-License-Identifier: MIT */
/* checker.c - the allocators' own accesses to links in free slots, exempt
 * from the checks that checker.h sets up: AddressSanitizer does not
 * instrument these two functions, and under memcheck the link is made
 * readable for the access only.
 *
 * Invariant: under memcheck a free slot's link word is inaccessible again
 * when either function returns, so that only these two ever touch it; they
 * are not inlined, so the sanitizer's exemption holds. */
#include "checker.h"

__attribute__((noinline, no_sanitize_address)) void *ay_hot_link_get(const void *slot) {
#if ALLOY_VALGRIND
    VALGRIND_MAKE_MEM_DEFINED(slot, sizeof(void *));
#endif
    void *next = *(void *const *)slot;
#if ALLOY_VALGRIND
    VALGRIND_MAKE_MEM_NOACCESS(slot, sizeof(void *));
#endif
    return next;
}

__attribute__((noinline, no_sanitize_address)) void ay_hot_link_set(void *slot, void *next) {
#if ALLOY_VALGRIND
    VALGRIND_MAKE_MEM_UNDEFINED(slot, sizeof(void *));
#endif
    *(void **)slot = next;
#if ALLOY_VALGRIND
    VALGRIND_MAKE_MEM_NOACCESS(slot, sizeof(void *));
#endif
}
