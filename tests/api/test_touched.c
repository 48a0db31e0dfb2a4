/* SPDX-License-Identifier: MIT */
/* test_touched.c - touched pages serve any size (issue 33): blocks above
 * 32 KiB are page-heap blocks, and a freed one's pages serve the next
 * request of a neighbouring size, not only of its own class.
 *
 *   - a 100 KiB block written at its two ends, freed, then a 90 KiB request:
 *     the same address, and its first page faults no more (before issue 33
 *     the two sizes were classes 102400 and 90112, with spans of their own);
 *   - a kept block (written at its ends) is not merged with the free pages
 *     beside it, and the next request of its length gets it back whole;
 *   - out of memory on this path: NULL with errno ENOMEM, and the next
 *     request succeeds.
 * Single-threaded, on the calling thread's heap, then on an explicit heap
 * (whose page heap starts empty). */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>

#include "alloy.h"
#include "alloy/heap.h"
#include "check.h"
#include "os.h"

#define KiB ((size_t)1 << 10)

static long minor_faults(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

int main(void) {
    /* warm up: the thread's cache and heap exist, their pages touched */
    alloy_free(alloy_malloc(64));

    /* sparse: only the ends written */
    char *p = alloy_malloc(100 * KiB);
    CHECK(p != NULL);
    p[0] = 1;
    p[100 * KiB - 1] = 1;
    alloy_free(p);
    char *q = alloy_malloc(90 * KiB);
    CHECK(q == p);
    long f0 = minor_faults();
    q[0] = 2; /* the page p's first write faulted in */
    CHECK(minor_faults() == f0);
    alloy_free(q);

    /* on an explicit heap: a kept span stays whole beside free pages */
    alloy_heap_t *h = alloy_heap_create();
    CHECK(h != NULL);
    if (!h)
        return CHECK_DONE();
    char *a = alloy_heap_malloc(h, 40 * KiB), *b = alloy_heap_malloc(h, 40 * KiB);
    CHECK(a && b && b > a);
    a[0] = 1;
    a[40 * KiB - 1] = 1;
    alloy_heap_free(h, a); /* kept: 2 of its 10 pages resident */
    char *c = alloy_heap_malloc(h, 40 * KiB);
    CHECK(c == a);
    alloy_heap_free(h, c);

    /* out of memory: the OS refuses new blocks; once the heap's free pages
     * are used up, a request gets NULL and ENOMEM, and loses nothing */
    char *held[64];
    int n = 0, failed = 0;
    ay_os_fail_next_maps(1000);
    while (n < 64) {
        errno = 0;
        held[n] = alloy_heap_malloc(h, 200 * KiB);
        if (!held[n]) {
            failed = errno == ENOMEM;
            break;
        }
        held[n++][0] = 1;
    }
    ay_os_fail_next_maps(0);
    CHECK(failed && n < 64);
    char *some = alloy_heap_malloc(h, 200 * KiB); /* the OS gives again */
    CHECK(some != NULL);
    alloy_heap_free(h, some);
    for (int i = 0; i < n; i++)
        alloy_heap_free(h, held[i]);
    alloy_heap_free(h, b);
    CHECK(alloy_heap_destroy(h) == 0);
    return CHECK_DONE();
}
