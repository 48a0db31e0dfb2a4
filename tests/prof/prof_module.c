/* SPDX-License-Identifier: MIT */
/* prof_module.c - a module that test_prof loads with dlopen: its blocks
 * must be attributed to its own function. */
#include <stdlib.h>

__attribute__((visibility("default"), noinline)) void *prof_module_alloc(size_t n) {
    void *p = malloc(n);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays */
    return p;
}

/* For test_unwind: a frame of this module between two of the caller's. */
__attribute__((visibility("default"), noinline)) void unwind_module_call(void (*fn)(void *),
                                                                         void *arg) {
    fn(arg);
    __asm__ volatile("" ::: "memory");
}
