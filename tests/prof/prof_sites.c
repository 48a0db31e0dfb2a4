/* SPDX-License-Identifier: MIT */
/* prof_sites.c - allocation sites of known sizes, for check_pprof.py.
 * Built with -O2 -fomit-frame-pointer: the stacks must come from the
 * unwind tables, not from frame pointers.  Each site is its own function;
 * what it leaves live is printed on stdout as "site bytes count size". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP 400000
static void *keep[KEEP];
static int nkeep;

#define SITE(name, call)                                                                           \
    __attribute__((noinline)) void *name(size_t n) {                                               \
        void *p = call;                                                                            \
        __asm__ volatile("" : : "r"(p) : "memory");                                                \
        return p;                                                                                  \
    }
SITE(site_small, malloc(n))
SITE(site_medium, malloc(n))
SITE(site_calloc, calloc(1, n))
SITE(site_large, malloc(n))
SITE(site_freed, malloc(n))

static void run(const char *name, void *(*fn)(size_t), size_t size, int count, int live) {
    for (int i = 0; i < count; i++) {
        void *p = fn(size);
        memset(p, 1, size < 64 ? size : 64);
        if (live && nkeep < KEEP)
            keep[nkeep++] = p;
        else
            free(p);
    }
    printf("%s %llu %d %zu\n", name, live ? (unsigned long long)size * (unsigned)count : 0ull,
           live ? count : 0, size);
}

int main(void) {
    run("site_small", site_small, 48, 300000, 1);    /* 14.4 MB of 48-byte blocks */
    run("site_medium", site_medium, 1000, 20000, 1); /* 20 MB */
    run("site_calloc", site_calloc, 160, 60000, 1);  /*  9.6 MB */
    run("site_large", site_large, 300000, 40, 1);    /* 12 MB of large blocks */
    run("site_freed", site_freed, 200, 100000, 0);   /* none live */
    fflush(stdout);
    return 0;
}
