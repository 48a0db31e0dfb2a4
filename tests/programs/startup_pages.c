/* SPDX-License-Identifier: MIT */
/* startup_pages.c - run under LD_PRELOAD=liballoy.so: one allocation of
 * each kind (malloc, calloc, realloc, posix_memalign, aligned_alloc, a
 * medium and a large block, the frees), then counts the pages of liballoy's
 * text that the process has mapped (/proc/self/pagemap's present bits over
 * the r-xp mapping), and fails if they are more than the bound given
 * (argv[1]).  The kernel maps the 64 KiB around each page fault of a file
 * ("fault-around"), so code that the start-up runs from all over the text
 * maps all of it; gathered at the text's front (CMakeLists.txt,
 * ALLOY_STARTUP_MODULES, and cmake/startup-text.ld), it maps one 64 KiB
 * window.  Reads /proc with open and read: stdio would allocate. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib_pages.h"

int main(int argc, char **argv) {
    long bound = argc > 1 ? atol(argv[1]) : 0;
    char *volatile p = malloc(16);
    char *volatile c = calloc(3, 40);
    void *a = NULL;
    if (!p || !c || posix_memalign(&a, 256, 100))
        return 2;
    char *volatile b = aligned_alloc(64, 128);
    char *volatile m = malloc(100000);
    char *volatile l = malloc((size_t)1 << 20);
    p[0] = 1;
    p = realloc(p, 100);
    if (!p || !b || !m || !l)
        return 2;
    free(l);
    free(m);
    free(b);
    free(a);
    free(c);
    long pages = 0, present = lib_pages(getpid(), "r-xp", &pages);
    if (present < 0)
        return 2;
    free(p);
    char msg[160];
    int n = snprintf(msg, sizeof msg, "liballoy text: %ld of %ld pages mapped (bound %ld)\n",
                     present, pages, bound);
    if (write(1, msg, (size_t)n) < 0)
        return 2;
    if (!pages)
        return 3; /* not run under liballoy.so */
    return present > bound;
}
