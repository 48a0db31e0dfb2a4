/* SPDX-License-Identifier: MIT */
/* guard_first_uaf.c - the simplest use after free: one malloc of 32 bytes,
 * freed, then read.  A plain PIE program that links no alloy (the test
 * preloads it): under guard_sample:1 the read must fault in a guarded page
 * and be reported, with the stack of the access (check_guard_first.sh). */
#include <stdlib.h>

static char *volatile hidden;

/* The faulting read, in a function of its own so that the access's stack
 * has two frames to check: read_byte, then main. */
__attribute__((noinline)) static int read_byte(const char *p) {
    hidden = (char *)p; /* the compiler must not see that p was freed */
    return hidden[0];
}

int main(void) {
    char *p = malloc(32);
    free(p);
    int c = read_byte(p);
    return c == 0x7f ? 3 : 0; /* the byte is used; exit 0 when the read went unnoticed */
}
