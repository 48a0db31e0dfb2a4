/* SPDX-License-Identifier: MIT */
/* test_fixed_costs.c - what a heap costs a program that uses a few size
 * classes: its records are resident only where they are used.  A heap's
 * 208 central caches start as zeros that nothing writes; each is set up on
 * its first fetch (ay_heap_central), and code that visits every class
 * (purging, stats, fork) skips those never set up.  The page heap's size
 * lists are two pointers a length.
 *
 * The test allocates from three small classes and a few span lengths, forks
 * (the prepare handler takes every central lock), reads the stats and
 * purges (both visit every class), then counts the resident pages of heap
 * 0's central caches with mincore: they must be the pages of the classes
 * used, not the array's 20 pages (which heap_init wrote whole before). */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "check.h"
#include "heap.h"

/* Resident pages of [p, p + len). */
static unsigned resident_pages(const void *p, size_t len) {
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(AY_PAGE_SIZE - 1);
    uintptr_t hi = ((uintptr_t)p + len + AY_PAGE_SIZE - 1) & ~(uintptr_t)(AY_PAGE_SIZE - 1);
    unsigned char v[64];
    size_t n = (hi - lo) >> AY_PAGE_SHIFT;
    CHECK(n <= sizeof v);
    if (n > sizeof v || mincore((void *)lo, hi - lo, v) != 0)
        return ~0u;
    unsigned r = 0;
    for (size_t i = 0; i < n; i++)
        r += v[i] & 1;
    return r;
}

int main(void) {
    static void *p[300];
    for (unsigned i = 0; i < 300; i++) /* classes of 16, 48 and 96 bytes */
        p[i] = malloc(i % 3 == 0 ? 16 : i % 3 == 1 ? 48 : 96);
    ay_heap_t *h = ay_heap_get(0);
    CHECK(h != NULL);
    if (!h)
        return CHECK_DONE();
    unsigned used = 0;
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
        used += ay_heap_central_ready(h, c);
    CHECK(used >= 3);

    pid_t pid = fork(); /* lock_all, unlock_all, and the child's reset */
    if (pid == 0)
        _exit(0);
    int st = 0;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    alloy_stats_t s = {.size = sizeof s}; /* reads every class of every heap */
    CHECK(alloy_stats_read(&s) == 0);
    CHECK(alloy_ctl("purge", NULL, NULL, NULL, 0) == 0);

    /* each class set up touches its record's page(s): at most two pages a
     * class (a record may straddle two), and the array has 20 */
    unsigned r = resident_pages(h->central, sizeof h->central);
    size_t array_pages = sizeof h->central >> AY_PAGE_SHIFT;
    CHECK(r <= 2 * used);
    CHECK(r < array_pages / 2);
    fprintf(stderr, "central caches set up: %u; resident pages of the array: %u of %zu\n", used, r,
            array_pages);
    /* the page heap's lists: two pointers a length */
    CHECK(sizeof h->pages <= 8192);
    for (unsigned i = 0; i < 300; i++)
        free(p[i]);
    return CHECK_DONE();
}
