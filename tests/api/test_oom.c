/* SPDX-License-Identifier: MIT */
/* test_oom.c - out of address space, then freed: run under `ulimit -v`
 * (tests/api/CMakeLists.txt runs it as sh -c 'ulimit -v 200000; test_oom').
 *
 * Fill memory with 600 KiB blocks until malloc says no (NULL and ENOMEM,
 * never a crash), free them all, then ask for blocks larger than any freed
 * one: 3 MiB and 20 MiB.  They must succeed: the page heap serves them from
 * its free blocks, or gives wholly free blocks back to the OS and maps anew.
 * glibc, jemalloc, mimalloc and TCMalloc all pass this. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "alloy.h"
#include "check.h"

#define MAXB 4096

int main(void) {
    static void *blocks[MAXB];
    unsigned n = 0;
    errno = 0;
    while (n < MAXB) {
        void *p = alloy_malloc(600 << 10);
        if (!p)
            break;
        memset(p, 1, 600 << 10);
        blocks[n++] = p;
    }
    CHECK(n < MAXB && n > 10); /* the limit was reached */
    CHECK_EQ_U(errno, ENOMEM);
    for (unsigned i = 0; i < n; i++)
        alloy_free(blocks[i]);
    size_t sizes[] = {3u << 20, 20u << 20, 600u << 10};
    for (unsigned k = 0; k < 3; k++) {
        char *big = alloy_malloc(sizes[k]);
        CHECK(big != NULL);
        if (big) {
            memset(big, 2, sizes[k]);
            CHECK(big[sizes[k] - 1] == 2);
            alloy_free(big);
        }
    }
    /* and the heap is still usable after all that */
    void *small = alloy_malloc(100);
    CHECK(small != NULL);
    alloy_free(small);
    return CHECK_DONE();
}
