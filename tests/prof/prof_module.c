/* prof_module.c - a module that test_prof loads with dlopen: its blocks
 * must be attributed to its own function. */
#include <stdlib.h>

__attribute__((visibility("default"), noinline)) void *prof_module_alloc(size_t n) {
    void *p = malloc(n);
    __asm__ volatile("" ::: "memory"); /* not a tail call: this frame stays */
    return p;
}
