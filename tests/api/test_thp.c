/* SPDX-License-Identifier: MIT */
/* test_thp.c - the thp setting (pageblock.h): which page-heap blocks are
 * mapped with MADV_HUGEPAGE.  What the kernel was told shows in the
 * mapping's VmFlags in /proc/self/smaps ("hg": MADV_HUGEPAGE, "nh":
 * MADV_NOHUGEPAGE), whatever the kernel then gives; huge_blocks counts the
 * blocks so marked.  Run with ALLOY_CONF=heaps:1,thp:MODE and MODE as the
 * argument:
 *
 *   auto    the blocks for small spans are left to the kernel (neither
 *           mark), even past 64 MiB of small spans (a heap that busy was
 *           once given huge blocks: docs/HISTORY.md, "Huge pages for
 *           busy heaps, removed"); a block of 4 MiB is marked;
 *   always  the first small block's mapping is marked, and the later ones
 *           are 2 MiB blocks, marked;
 *   never   nothing is marked (nh on small and large blocks alike).
 * Exit 77 (skipped) when the kernel has no transparent huge pages. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "check.h"

#define MiB ((size_t)1 << 20)
#define BLOCK 1024              /* a small class */
#define MANY (70 * MiB / BLOCK) /* past 64 MiB of small spans */

static uintptr_t vma_lo, vma_hi; /* the bounds of the last mapping flags_of found */

/* The VmFlags of the mapping that holds p: "hg" and "nh" found or not. */
static void flags_of(const void *p, int *hg, int *nh) {
    FILE *f = fopen("/proc/self/smaps", "r");
    CHECK(f != NULL);
    char line[512];
    int inside = 0;
    *hg = *nh = -1;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
            if (inside) {
                vma_lo = lo;
                vma_hi = hi;
            }
            continue;
        }
        if (inside && !strncmp(line, "VmFlags:", 8)) {
            *hg = strstr(line, " hg") != NULL;
            *nh = strstr(line, " nh") != NULL;
            break;
        }
    }
    if (f)
        fclose(f);
    CHECK(*hg >= 0); /* the mapping was found */
}

static uint64_t huge_blocks(void) {
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    return s.huge_blocks;
}

static void expect(const char *what, const void *p, int want_hg, int want_nh) {
    int hg, nh;
    flags_of(p, &hg, &nh);
    if (hg != want_hg || nh != want_nh)
        fprintf(stderr, "%s at %p: hg %d nh %d, expected hg %d nh %d\n", what, p, hg, nh, want_hg,
                want_nh);
    CHECK(hg == want_hg && nh == want_nh);
}

int main(int argc, char **argv) {
    CHECK(argc == 2);
    const char *mode = argv[1];
    /* a kernel without transparent huge pages refuses the advice */
    void *probe = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(probe != MAP_FAILED);
    if (madvise(probe, 2 * MiB, MADV_HUGEPAGE) != 0 && errno == EINVAL) {
        printf("skipped: this kernel has no transparent huge pages\n");
        return 77;
    }
    munmap(probe, 2 * MiB);

    const char *opt = NULL;
    size_t len = sizeof opt;
    CHECK(alloy_ctl("opt.thp", &opt, &len, NULL, 0) == 0);
    CHECK(opt && !strcmp(opt, mode));
    int is_auto = !strcmp(mode, "auto"), always = !strcmp(mode, "always");
    int never = !strcmp(mode, "never");
    CHECK(is_auto || always || never);

    char *first = alloy_malloc(BLOCK);
    CHECK(first != NULL);
    first[0] = 1;
    expect("the first small block", first, always, never);
    CHECK(always ? huge_blocks() >= 1 : huge_blocks() == 0);

    static char *keep[MANY];
    for (size_t i = 0; i < MANY; i++) {
        keep[i] = alloy_malloc(BLOCK);
        CHECK(keep[i] != NULL);
        keep[i][0] = (char)i;
    }
    /* the last blocks came from spans carved after the heap held 64 MiB of
     * small spans: marked under always only */
    expect("a small block past 64 MiB of small spans", keep[MANY - 1], always, never);
    if (always) {
        CHECK(huge_blocks() >= 2); /* 70 MiB in 2 MiB blocks: many */
        /* marked blocks are 2 MiB aligned and 2 MiB long, so the kernel's
         * mapping of adjacent ones starts and ends on 2 MiB boundaries */
        CHECK(vma_lo % (2 * MiB) == 0 && vma_hi % (2 * MiB) == 0);
    } else {
        CHECK(huge_blocks() == 0); /* auto: only blocks of their own, and none yet */
    }

    char *big = alloy_malloc(4 * MiB); /* a block of its own */
    CHECK(big != NULL);
    CHECK(((uintptr_t)big & (2 * MiB - 1)) == 0);
    big[0] = 1;
    expect("a 4 MiB block", big, !never, never);
    if (is_auto)
        CHECK(huge_blocks() == 1);

    alloy_free(big);
    for (size_t i = 0; i < MANY; i++)
        alloy_free(keep[i]);
    alloy_free(first);
    printf("thp:%s: %llu blocks marked MADV_HUGEPAGE\n", mode, (unsigned long long)huge_blocks());
    return CHECK_DONE();
}
