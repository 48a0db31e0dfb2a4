/* SPDX-License-Identifier: MIT */
/* test_large_space.c SIZE - the address space a large block costs: 64
 * blocks of SIZE bytes kept live (one byte of each written) must add at most
 * 1.15 times their pages to `stats.mapped` (the metadata aside).  A block
 * between half of the page heap's 1 MiB blocks and one gets a block of about
 * its size (a 600,000-byte block once took a 1 MiB slot: 1.75x, and under
 * `ulimit -v` far fewer of them fitted than under glibc).  One size per process, so that
 * no earlier size's freed blocks serve it.  Linked with liballoy.a. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "ctl_read.h"

#define NBLOCKS 64

/* The page heaps' and direct maps' address space: stats.mapped without
 * the metadata (span records, the address map), which grows by steps of
 * its own. */
static uint64_t mapped(void) {
    uint64_t epoch = 1;
    alloy_ctl("epoch", NULL, NULL, &epoch, sizeof epoch);
    return rd_u64("stats.mapped") - rd_u64("stats.metadata");
}

int main(int argc, char **argv) {
    if (argc != 2)
        return 2;
    size_t size = (size_t)strtoull(argv[1], NULL, 10);
    static char *blocks[NBLOCKS];
    uint64_t before = mapped();
    for (int i = 0; i < NBLOCKS; i++) {
        blocks[i] = malloc(size);
        CHECK(blocks[i] != NULL);
        if (blocks[i])
            blocks[i][size - 1] = 1;
    }
    uint64_t grew = mapped() - before, pages = (size + 4095) / 4096 * 4096 * (uint64_t)NBLOCKS;
    double ratio = (double)grew / (double)pages;
    printf("%zu bytes x %d: mapped grew %llu bytes, %.3f times their pages\n", size, NBLOCKS,
           (unsigned long long)grew, ratio);
    CHECK(ratio <= 1.15);
    for (int i = 0; i < NBLOCKS; i++)
        free(blocks[i]);
    return CHECK_DONE();
}
