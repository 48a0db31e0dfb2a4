/* SPDX-License-Identifier: MIT */
/* test_usable.c - alloy_malloc_usable_size: for every size class, a request
 * of the class size minus k reports exactly the class size, and every one of
 * those bytes can be written without touching another block (many blocks of
 * the class live at once, each filled over its whole usable size, then all
 * checked).  Large blocks and direct maps report their pages.  Built against
 * the debug flavour too, whose checks would catch a usable size that runs
 * past the block.  Only the alloy_* names are called. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloy.h"
#include "alloy/heap.h"
#include "check.h"
#include "classes.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

#define MAXLIVE 64
static unsigned char *live[MAXLIVE];
static unsigned char expect[4 * MiB]; /* what a block should hold */

/* `count` blocks of `size` bytes live at once, each filled over its usable
 * size with its own byte, then each checked.  Returns the number of bad
 * blocks; checks that the usable size is `want` (0: at least size). */
static int fill_and_check(alloy_heap_t *h, size_t size, size_t want, int count) {
    int bad = 0;
    for (int i = 0; i < count; i++) {
        live[i] = h ? alloy_heap_malloc(h, size)
                    : (i % 4 == 3 ? alloy_calloc(1, size) : alloy_malloc(size));
        size_t u = live[i] ? alloy_malloc_usable_size(live[i]) : 0;
        if (!live[i] || (want ? u != want : u < size)) {
            if (bad++ < 3)
                fprintf(stderr, "size %zu: usable %zu, expected %zu\n", size, u, want);
            if (!live[i])
                return bad + count;
        }
    }
    /* filled in address order and in the reverse order: a block that ran
     * past its end would clobber a neighbour filled before it in one of them */
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < count; k++) {
            int i = pass ? count - 1 - k : k;
            memset(live[i], 0x40 + i + pass, alloy_malloc_usable_size(live[i]));
        }
        for (int i = 0; i < count; i++) {
            size_t u = alloy_malloc_usable_size(live[i]);
            memset(expect, 0x40 + i + pass, u);
            if (memcmp(live[i], expect, u) == 0)
                continue;
            for (size_t j = 0; j < u; j++)
                if (live[i][j] != (unsigned char)(0x40 + i + pass)) {
                    if (bad++ < 3)
                        fprintf(stderr, "size %zu: block %d byte %zu of %zu overwritten\n", size, i,
                                j, u);
                    break;
                }
        }
    }
    for (int i = 0; i < count; i++) {
        if (i % 2)
            alloy_free_sized(live[i], alloy_malloc_usable_size(
                                          live[i])); /* the debug flavour checks size <= usable */
        else if (h)
            alloy_heap_free(h, live[i]);
        else
            alloy_free(live[i]);
    }
    return bad;
}

static int live_count(size_t size) {
    size_t n = 2 * MiB / size;
    return n < 4 ? 4 : n > MAXLIVE ? MAXLIVE : (int)n;
}

int main(void) {
    make_classes();
    alloy_heap_t *h = alloy_heap_create();
    CHECK(h != NULL);

    CHECK_EQ_U(alloy_malloc_usable_size(NULL), 0);
    unsigned char *z = alloy_malloc(0); /* malloc(0) is a 16-byte block */
    CHECK(z && alloy_malloc_usable_size(z) == 16);
    memset(z, 1, 16);
    alloy_free(z);

    /* every class: the class size minus k, for several k */
    unsigned bad_classes = 0;
    for (unsigned c = 0; c < NBINNED; c++) {
        size_t s = class_size[c], below = c ? class_size[c - 1] : 0, step = s - below;
        const size_t ks[] = {0, 1, 7, 8, step / 2, step - 1};
        int bad = 0;
        for (unsigned i = 0; i < sizeof ks / sizeof ks[0]; i++) {
            if (ks[i] >= step || (i > 0 && ks[i] == ks[i - 1]))
                continue;
            bad += fill_and_check(NULL, s - ks[i], s, i == 0 ? live_count(s) : 4);
        }
        bad += fill_and_check(h, s - (step - 1), s, 4); /* explicit heaps: the same classes */
        if (bad)
            bad_classes++;
    }
    CHECK_EQ_U(bad_classes, 0);

    /* large blocks and direct maps: whole pages; from 8 pages to 1 MiB,
     * rounded up to one of eight lengths per doubling (pageheap.h) */
    const size_t larges[] = {MAX_BINNED + 1, 40000, 100 * KiB, 256 * KiB + 1, 300000,
                             512 * KiB - 1,  MiB,   MiB + 1,   3 * MiB + 5};
    for (unsigned i = 0; i < sizeof larges / sizeof larges[0]; i++) {
        size_t n = (larges[i] + 4095) / 4096;
        if (n >= 8 && n < 256) {
            size_t step = 1, top = n;
            while (top >= 16)
                top >>= 1, step <<= 1; /* a power of two under n, over 8 */
            n = (n + step - 1) / step * step;
        }
        size_t pages = n * 4096;
        CHECK_EQ_U(fill_and_check(NULL, larges[i], pages, 4), 0);
        CHECK_EQ_U(fill_and_check(h, larges[i], pages, 2), 0);
    }

    /* a block's usable size does not change under it: realloc within it,
     * and what other blocks do, leave it alone */
    unsigned char *a = alloy_malloc(1000), *b = alloy_malloc(1000);
    size_t ua = alloy_malloc_usable_size(a);
    CHECK_EQ_U(ua, 1008);
    unsigned char *a2 = alloy_realloc(a, 1005);
    CHECK(a2 == a && alloy_malloc_usable_size(a2) == ua);
    a = a2;
    memset(a, 3, ua);
    memset(b, 4, alloy_malloc_usable_size(b));
    CHECK(a[ua - 1] == 3 && b[0] == 4);
    alloy_free(a);
    alloy_free(b);

    CHECK(alloy_heap_destroy(h) == 0);
    return CHECK_DONE();
}
