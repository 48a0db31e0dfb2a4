/* SPDX-License-Identifier: MIT */
/* asan_link.c - a program built with -fsanitize=address that calls
 * alloy_malloc, then reads past a block from malloc.  Linked with
 * liballoy.so (test asan-shared), ASan's malloc serves malloc, alloy's
 * serves alloy_malloc, and ASan reports the read past the block.  Linked
 * with liballoy.a (test asan-static), which is one object that defines
 * malloc too, alloy's malloc replaces ASan's, and alloy stops at the first
 * malloc with a message that says so. */
#include <stdio.h>
#include <stdlib.h>

#include "alloy.h"

int main(void) {
    void *a = alloy_malloc(32);
    printf("alloy_malloc: %s\n", a ? "ok" : "NULL");
    fflush(stdout);
    alloy_free(a);
    char *p = calloc(1, 16);
    volatile int i = 16; /* one past the end */
    printf("read past the block: %d\n", p[i]);
    free(p);
    return 0;
}
