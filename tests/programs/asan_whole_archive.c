/* SPDX-License-Identifier: MIT */
/* asan_whole_archive.c - built with -fsanitize=address and liballoy.a linked
 * with --whole-archive, so that alloy's malloc replaces ASan's: alloy must
 * stop at the first malloc with a message that says why (test
 * asan-whole-archive), instead of crashing inside ASan's start-up. */
#include <stdio.h>
#include <stdlib.h>

int main(void) {
    char *p = malloc(10);
    p[0] = 1;
    printf("not reached: %d\n", p[0]);
    free(p);
    return 0;
}
