/* SPDX-License-Identifier: MIT */
/* classes.h - the 208 size classes as the docs give them, for tests that walk
 * every class: 8..128 step 8, 144..1024 step 16, 1152..8192 step 128,
 * 9216..65536 step 1024, 73728..262144 step 8192.  Written here from the
 * documented bands, not read from the library, so a test that compares the
 * two can fail.  Include after check.h; call make_classes() first. */
#ifndef ALLOY_TEST_CLASSES_H
#define ALLOY_TEST_CLASSES_H
#include <stddef.h>

#define NCLASSES 208
/* The classes malloc serves, in every flavour: those up to 32 KiB
 * (src/tcache.h, AY_MAX_BINNED_SIZE); larger requests are page-heap blocks
 * of whole pages, and the classes above stay only in the policy and the
 * simulator. */
#define NBINNED 152
#define MAX_BINNED ((size_t)32768)

static size_t class_size[NCLASSES];

static void make_classes(void) {
    static const size_t band_end[] = {128, 1024, 8192, 65536, 262144};
    static const size_t band_step[] = {8, 16, 128, 1024, 8192};
    unsigned n = 0;
    size_t start = 0;
    for (unsigned b = 0; b < 5; b++) {
        for (size_t s = start + band_step[b]; s <= band_end[b] && n < NCLASSES; s += band_step[b])
            class_size[n++] = s;
        start = band_end[b];
    }
    CHECK_EQ_U(n, NCLASSES);
    CHECK_EQ_U(class_size[NBINNED - 1], MAX_BINNED);
}

#endif
