/* SPDX-License-Identifier: MIT */
/* prof_leaks.c - a program with known leaks, for check_leaks.py: it leaks
 * from four call sites (malloc, calloc, strdup through libc, a large block
 * through realloc) and frees everything else.  It uses no stdio, so that
 * nothing but its own leaks is still allocated at exit.  With an argument
 * "clean" it leaks nothing. */
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

__attribute__((noinline)) void leak_malloc(void) { sink = malloc(48); }
__attribute__((noinline)) void leak_calloc(void) { sink = calloc(10, 100); }
__attribute__((noinline)) void leak_strdup(void) { sink = strdup("a string that leaks"); }
__attribute__((noinline)) void leak_realloc(void) { sink = realloc(malloc(10), 400000); }
__attribute__((noinline)) void no_leak(void) {
    for (int i = 0; i < 1000; i++) {
        void *p = malloc((size_t)(16 + i));
        p = realloc(p, (size_t)(32 + 2 * i));
        free(p);
    }
}

int main(int argc, char **argv) {
    no_leak();
    if (argc > 1 && !strcmp(argv[1], "clean"))
        return 0;
    for (int i = 0; i < 3; i++)
        leak_malloc();
    leak_calloc();
    leak_strdup();
    leak_realloc();
    no_leak();
    return 0;
}
