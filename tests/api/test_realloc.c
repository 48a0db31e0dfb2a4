/* SPDX-License-Identifier: MIT */
/* test_realloc.c - realloc across every size-class boundary, from large
 * blocks and direct maps down, the extra eighth a moving grow gets, blocks
 * that move between heaps, and a failed grow that must leave the block as it
 * was.  Every step checks the pattern bytes up to min(old, new).
 * Only the alloy_* names are called, so that the same test can be built
 * against a flavour of the library that does not export the libc names. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "alloy.h"
#include "alloy/heap.h"
#include "check.h"
#include "classes.h"
#include "pattern.h"
#include "os.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define DIRECT_MIN                                                                                 \
    (32 * MiB) /* blocks above this are direct maps (mremap); below, the page heap's */
#define MAX_SMALL MAX_BINNED /* above: page-heap blocks (classes.h) */

static size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

static int reported;

/* realloc p (holding `old` pattern bytes of `seed`) to `size`; check the
 * contents, the usable size, the in-place rule and the extra eighth; fill the
 * new bytes.  Returns the new block. */
static unsigned char *resize(unsigned char *p, size_t old, size_t size, unsigned seed) {
    size_t usable = alloy_malloc_usable_size(p);
    int was_direct = usable > DIRECT_MIN; /* direct maps are resized with mremap */
    unsigned char *q = alloy_realloc(p, size);
    CHECK(q != NULL);
    if (!q)
        return p;
    size_t keep = min_sz(old, size), bad = first_bad(q, keep, seed);
    size_t got = alloy_malloc_usable_size(q);
    int ok = bad == keep && got >= size;
    /* README: a block is resized in place while the new size fits and fills
     * more than half of it (small blocks; large blocks that stay large) */
    if (size <= usable && size > usable / 2 && (usable <= MAX_SMALL || size > MAX_SMALL) &&
        !was_direct)
        ok &= q == p;
    /* README: a block that has to move to grow gets an eighth more room */
    if (size > usable && !was_direct)
        ok &= got >= size + size / 8;
    if (!ok && reported++ < 10)
        fprintf(
            stderr,
            "realloc %zu (usable %zu) -> %zu: moved %d, usable %zu, first bad byte %zu of %zu\n",
            old, usable, size, q != p, got, bad, keep);
    CHECK(ok);
    if (size > old)
        fill(q, old, size, seed);
    return q;
}

/* Growing through every class, one class at a time, then shrinking back. */
static void walk_classes(void) {
    unsigned char *p = alloy_malloc(1);
    fill(p, 0, 1, 1);
    size_t cur = 1;
    for (unsigned c = 0; c < NBINNED; c++) {
        p = resize(p, cur, class_size[c], 1);
        cur = class_size[c];
    }
    p = resize(p, cur, MAX_SMALL + 1, 1); /* and out of the classes */
    cur = MAX_SMALL + 1;
    for (unsigned c = NBINNED; c-- > 0;) {
        p = resize(p, cur, class_size[c], 1);
        cur = class_size[c];
    }
    p = resize(p, cur, 1, 1);
    alloy_free(p);
}

/* Each boundary on its own: a block of exactly class c crosses into c+1 and
 * comes back, and goes down into c-1; sizes inside the class stay put. */
static void each_boundary(void) {
    for (unsigned c = 0; c < NBINNED; c++) {
        size_t s = class_size[c], below = c ? class_size[c - 1] : 0;
        unsigned seed = 100 + c;
        unsigned char *p = alloy_malloc(s);
        CHECK(p && alloy_malloc_usable_size(p) == s);
        if (!p)
            return;
        fill(p, 0, s, seed);
        p = resize(p, s, below + 1, seed); /* smallest size of the same class: in place */
        p = resize(p, below + 1, s, seed);
        p = resize(p, s, s + 1, seed); /* next class (or a large block): moves */
        p = resize(p, s + 1, s, seed); /* back down */
        if (below) {
            unsigned char *q = alloy_malloc(s);
            fill(q, 0, s, seed + 1);
            q = resize(q, s, below, seed + 1); /* into the class below */
            alloy_free(q);
        }
        alloy_free(p);
    }
}

/* Large blocks and direct maps down to every class, and direct maps to large
 * blocks and back up. */
static void from_large(void) {
    const size_t larges[] = {MAX_SMALL + 1, 300000, 512 * KiB, MiB};
    for (unsigned k = 0; k < sizeof larges / sizeof larges[0]; k++) {
        for (unsigned c = 0; c < NBINNED; c += k < 2 ? 1 : 7) {
            size_t n = larges[k];
            unsigned seed = 7 * k + c;
            unsigned char *p = alloy_malloc(n);
            CHECK(p != NULL);
            if (!p)
                return;
            fill(p, 0, n, seed);
            p = resize(p, n, class_size[c], seed);
            CHECK_EQ_U(alloy_malloc_usable_size(p),
                       class_size[c]); /* large -> small always moves */
            alloy_free(p);
        }
    }
    const size_t directs[] = {DIRECT_MIN + 1, DIRECT_MIN + 4 * MiB + 123};
    const size_t targets[] = {MAX_SMALL + 1, 300000, 512 * KiB, MiB, MAX_SMALL, 4000, 100, 1};
    for (unsigned k = 0; k < sizeof directs / sizeof directs[0]; k++) {
        for (unsigned t = 0; t < sizeof targets / sizeof targets[0]; t++) {
            size_t n = directs[k];
            unsigned seed = 50 + 10 * k + t;
            unsigned char *p = alloy_malloc(n);
            CHECK(p && (uintptr_t)p % 4096 == 0);
            if (!p)
                return;
            fill(p, 0, n, seed);
            p = resize(p, n, targets[t], seed);
            p = resize(p, targets[t], n + 5000, seed); /* and up again, past where it started */
            alloy_free(p);
        }
    }
    /* a direct map grown and shrunk in place (mremap) and back into the page heap */
    unsigned char *d = alloy_malloc(DIRECT_MIN + MiB);
    fill(d, 0, DIRECT_MIN + MiB, 77);
    d = resize(d, DIRECT_MIN + MiB, 64 * MiB, 77);
    d = resize(d, 64 * MiB, DIRECT_MIN + 4096, 77);
    d = resize(d, DIRECT_MIN + 4096, 3 * MiB + 1, 77);
    d = resize(d, 3 * MiB + 1, 700 * KiB, 77);
    d = resize(d, 700 * KiB, DIRECT_MIN + 5 * MiB,
               77); /* large -> direct: moves, with the eighth */
    alloy_free(d);
}

/* Grows of every kind get at least an eighth more than asked. */
static void extra_eighth(void) {
    const size_t from[] = {1, 8, 100, 1000, 1024, 5000, 60000, 200000, 262144, 300000, 900000};
    for (unsigned i = 0; i < sizeof from / sizeof from[0]; i++) {
        for (unsigned j = 0; j < sizeof from / sizeof from[0]; j++) {
            unsigned char *p = alloy_malloc(from[i]);
            fill(p, 0, from[i], i + j);
            size_t usable = alloy_malloc_usable_size(p);
            size_t want = usable + 1 + from[j]; /* strictly more than fits */
            unsigned char *q = alloy_realloc(p, want);
            /* (a large block that stays large may grow where it is, into the
             * free pages after it) */
            CHECK(q && (q != p || (usable > MAX_SMALL && want > MAX_SMALL)));
            CHECK(q && alloy_malloc_usable_size(q) >= want + want / 8);
            CHECK(q && first_bad(q, from[i], i + j) == from[i]);
            alloy_free(q);
        }
    }
}

/* A large block grows where it is into the free pages after it, and gives
 * its tail back when it shrinks below half; with a live block after it, it
 * moves.  A fresh explicit heap lays its first blocks out one after the
 * other, at the start of its first block of pages (256 KiB is 64 pages, a
 * length the page heap does not round: pageheap.h). */
static void large_in_place(void) {
    alloy_heap_t *h = alloy_heap_create();
    CHECK(h != NULL);
    if (!h)
        return;
    unsigned char *a = alloy_heap_malloc(h, 256 * KiB), *b = alloy_heap_malloc(h, 256 * KiB);
    CHECK(a && b && b == a + 256 * KiB);
    if (!a || !b)
        return;
    fill(a, 0, 256 * KiB, 41);
    alloy_heap_free(h, b);
    unsigned char *q = alloy_heap_realloc(h, a, 600 * KiB); /* into b's pages */
    CHECK(q == a);
    CHECK(alloy_malloc_usable_size(q) >= 600 * KiB + 600 * KiB / 8);
    CHECK_EQ_U(first_bad(q, 256 * KiB, 41), 256 * KiB);
    fill(q, 256 * KiB, 600 * KiB, 41);
    q = alloy_heap_realloc(h, q, 280 * KiB); /* below half: the tail goes back */
    CHECK(q == a);
    CHECK_EQ_U(alloy_malloc_usable_size(q), 280 * KiB);
    CHECK_EQ_U(first_bad(q, 280 * KiB, 41), 280 * KiB);
    b = alloy_heap_malloc(h, 256 * KiB); /* the tail's pages serve it */
    CHECK(b == a + 280 * KiB);
    q = alloy_heap_realloc(h, a, 700 * KiB); /* b is live after it: a moves */
    CHECK(q && q != a);
    CHECK(q && first_bad(q, 280 * KiB, 41) == 280 * KiB);
    alloy_heap_free(h, q);
    alloy_heap_free(h, b);
    CHECK(alloy_heap_destroy(h) == 0);
}

/* ---- heaps ---- */

static size_t heap_allocated(alloy_heap_t *h) {
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_heap_stats_read(alloy_heap_id(h), &s) == 0);
    return s.allocated;
}

static size_t total_allocated(void) {
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    return s.allocated;
}

/* totals = sums over heaps; allocated <= active <= resident <= mapped */
static int stats_add_up(void) {
    alloy_stats_t t = {.size = sizeof t};
    if (alloy_stats_read(&t) != 0)
        return 0;
    size_t allocated = 0, active = 0, mapped = 0, large = 0;
    for (unsigned id = 0; id < 256; id++) {
        alloy_stats_t h = {.size = sizeof h};
        if (alloy_heap_stats_read(id, &h) != 0)
            continue;
        if (!(h.allocated <= h.active && h.active <= h.resident && h.resident <= h.mapped))
            return 0;
        allocated += h.allocated;
        active += h.active;
        mapped += h.mapped;
        large += h.large_allocated;
    }
    return t.allocated == allocated && t.active == active && t.mapped == mapped + t.metadata &&
           t.large_allocated == large && t.allocated <= t.active && t.active <= t.resident &&
           t.resident <= t.mapped;
}

#define NH 12
static const size_t heap_sizes[NH] = {1,     24,     100,    1000,   4000,       9000,
                                      70000, 262144, 300000, 600000, MiB + 4096, 3 * MiB};
static unsigned char *hp[NH];    /* the blocks */
static size_t hsize[NH];         /* their pattern bytes */
static alloy_heap_t *howner[NH]; /* the explicit heap that owns each, or NULL */

/* The bytes the blocks owned by h (NULL: by the automatic heaps) account for. */
static size_t owned_by(alloy_heap_t *h) {
    size_t sum = 0;
    for (unsigned i = 0; i < NH; i++)
        if (howner[i] == h)
            sum += alloy_malloc_usable_size(hp[i]);
    return sum;
}

/* Resize every block with alloy_heap_realloc(to, ...) (to NULL: alloy_realloc)
 * to size(i); `dflt` is the thread's default heap (NULL: automatic).  Where
 * each block must end up:
 *   alloy_heap_realloc(to, p):  in `to`, unless p is already there and the
 *                               new size fits in place;
 *   alloy_realloc(p):           a direct map growing or shrinking above 32 MiB
 *                               is resized with mremap and stays in its heap;
 *                               a block that fits in place stays, and so may
 *                               a large block that stays large (it grows into
 *                               the free pages after it, or gives its tail
 *                               back); everything else moves to the default
 *                               heap. */
static void move_all(alloy_heap_t *to, alloy_heap_t *dflt, int grow) {
    for (unsigned i = 0; i < NH; i++) {
        size_t old = hsize[i], usable = alloy_malloc_usable_size(hp[i]);
        size_t size = grow ? usable + 1 + heap_sizes[i] : (i % 2 ? old : old / 2 + 1);
        unsigned char *q = to ? alloy_heap_realloc(to, hp[i], size) : alloy_realloc(hp[i], size);
        CHECK(q != NULL);
        if (!q)
            return;
        CHECK_EQ_U(first_bad(q, min_sz(old, size), 200 + i), min_sz(old, size));
        fill(q, old, size, 200 + i);
        int direct_stays = usable > DIRECT_MIN && size > DIRECT_MIN;
        int fits = size <= usable && size > usable / 2 &&
                   (usable <= MAX_SMALL || size > MAX_SMALL) && usable <= DIRECT_MIN;
        if (to) {
            if (howner[i] != to)
                CHECK(q != hp[i]);
            howner[i] = to;
        } else if (!direct_stays && !fits) {
            int large = usable > MAX_SMALL && size > MAX_SMALL && usable <= DIRECT_MIN;
            if (q == hp[i]) /* resized where it was: only a large block */
                CHECK(large);
            else
                howner[i] = dflt;
        }
        hp[i] = q;
        hsize[i] = size;
    }
}

static void across_heaps(void) {
    alloy_thread_flush();
    size_t base = total_allocated();
    alloy_heap_t *h1 = alloy_heap_create(), *h2 = alloy_heap_create();
    CHECK(h1 && h2 && h1 != h2);
    if (!h1 || !h2)
        return;
    for (unsigned i = 0; i < NH; i++) {
        hp[i] = alloy_heap_malloc(h1, heap_sizes[i]);
        CHECK(hp[i] != NULL);
        if (!hp[i])
            return;
        hsize[i] = heap_sizes[i];
        howner[i] = h1;
        fill(hp[i], 0, hsize[i], 200 + i);
    }
    /* explicit heaps are uncached: their allocated bytes are exactly the
     * usable sizes of their live blocks */
    CHECK_EQ_U(heap_allocated(h1), owned_by(h1));
    CHECK_EQ_U(heap_allocated(h2), 0);

    /* alloy_heap_realloc into another heap moves every block there, also
     * those resized to their own size */
    move_all(h2, NULL, 0);
    CHECK_EQ_U(heap_allocated(h1), 0);
    CHECK_EQ_U(heap_allocated(h2), owned_by(h2));
    CHECK(stats_add_up());
    move_all(h2, NULL, 1); /* already there: grows stay in h2 */
    CHECK_EQ_U(heap_allocated(h1), 0);
    CHECK_EQ_U(heap_allocated(h2), owned_by(h2));

    /* plain alloy_realloc of an explicit heap's blocks: those that move go
     * to the thread's automatic heap */
    move_all(NULL, NULL, 1);
    CHECK(owned_by(NULL) > 0);
    CHECK_EQ_U(heap_allocated(h2), owned_by(h2));
    CHECK_EQ_U(total_allocated() - base, owned_by(NULL) + owned_by(h2));
    CHECK(stats_add_up());
    move_all(NULL, NULL, 0);
    CHECK_EQ_U(heap_allocated(h2), owned_by(h2));
    CHECK_EQ_U(total_allocated() - base, owned_by(NULL) + owned_by(h2));

    /* from wherever they are into an explicit heap */
    move_all(h1, NULL, 0);
    CHECK_EQ_U(owned_by(h1), owned_by(NULL) + owned_by(h1) + owned_by(h2));
    CHECK_EQ_U(heap_allocated(h1), owned_by(h1));
    CHECK_EQ_U(heap_allocated(h2), 0);
    alloy_thread_flush();
    CHECK_EQ_U(total_allocated() - base, owned_by(h1));

    /* with an explicit heap as the thread's default, alloy_realloc moves a
     * block of another heap into the default heap */
    CHECK(alloy_heap_set_default(h2) == 0);
    move_all(NULL, h2, 1);
    CHECK(owned_by(h2) > 0);
    CHECK_EQ_U(heap_allocated(h1), owned_by(h1));
    CHECK_EQ_U(heap_allocated(h2), owned_by(h2));
    CHECK(alloy_heap_set_default(NULL) == 0);
    CHECK(stats_add_up());

    /* every result can be freed, to the heap that owns it (the debug flavour
     * checks the owner in alloy_heap_free) */
    for (unsigned i = 0; i < NH; i++) {
        if (howner[i])
            alloy_heap_free(howner[i], hp[i]);
        else
            alloy_free(hp[i]);
    }
    CHECK_EQ_U(heap_allocated(h1), 0);
    CHECK_EQ_U(heap_allocated(h2), 0);
    alloy_thread_flush();
    CHECK_EQ_U(total_allocated(), base);
    CHECK(stats_add_up());
    CHECK(alloy_heap_destroy(h1) == 0);
    CHECK(alloy_heap_destroy(h2) == 0);
    CHECK(stats_add_up());
}

/* A grow that cannot get memory returns NULL, sets ENOMEM and leaves the
 * block as it was: contents, size, and freeable. */
static void failed_grow(void) {
    const size_t sizes[] = {100, 300000, 2 * MiB};
    for (unsigned i = 0; i < 3; i++) {
        unsigned char *p = alloy_malloc(sizes[i]);
        fill(p, 0, sizes[i], 300 + i);
        size_t usable = alloy_malloc_usable_size(p);
        ay_os_fail_next_maps(1000);
        errno = 0;
        unsigned char *q = alloy_realloc(p, 512 * MiB); /* needs a new mapping */
        int err = errno;
        ay_os_fail_next_maps(0);
        CHECK(q == NULL && err == ENOMEM);
        CHECK_EQ_U(alloy_malloc_usable_size(p), usable);
        CHECK_EQ_U(first_bad(p, sizes[i], 300 + i), sizes[i]);
        p = resize(p, sizes[i], sizes[i] * 3, 300 + i); /* and it still grows later */
        alloy_free(p);
    }
}

/* README: "A block is aligned to 16 bytes when the requested size is a
 * multiple of 16".  realloc to such a size, from smaller and larger blocks,
 * in place or not, must give a 16-aligned block.  (Run as "align16".) */
static void realloc_align16(void) {
    unsigned bad = 0, total = 0;
    for (size_t to = 16; to <= 2048; to += 16) {
        const size_t from[] = {1, 8, to / 2 + 1, to - 8, to + 8, to + 24, to * 2};
        for (unsigned f = 0; f < sizeof from / sizeof from[0]; f++) {
            void *keep[8];
            for (int i = 0; i < 8; i++) { /* 8 live at once: every slot of a span */
                unsigned char *p = alloy_malloc(from[f]);
                fill(p, 0, from[f], 9);
                unsigned char *q = alloy_realloc(p, to);
                keep[i] = q;
                total++;
                if (!q || (uintptr_t)q % 16 != 0) {
                    if (bad++ < 8)
                        fprintf(stderr, "realloc(malloc(%zu), %zu) = %p: usable %zu, %s\n", from[f],
                                to, (void *)q, q ? alloy_malloc_usable_size(q) : 0,
                                q == p ? "in place" : "moved");
                }
                CHECK(q && first_bad(q, min_sz(from[f], to), 9) == min_sz(from[f], to));
            }
            for (int i = 0; i < 8; i++)
                alloy_free(keep[i]);
        }
    }
    if (bad)
        fprintf(stderr, "%u of %u reallocs to a multiple of 16 gave a block not aligned to 16\n",
                bad, total);
    CHECK_EQ_U(bad, 0);
}

int main(int argc, char **argv) {
    make_classes();
    make_pattern();
    if (argc > 1 && !strcmp(argv[1], "align16")) {
        realloc_align16();
        return CHECK_DONE();
    }
    for (unsigned c = 0; c < NCLASSES; c++) {
        alloy_class_stats_t cs = {.size = sizeof cs};
        CHECK(alloy_class_stats_read(c, &cs) == 0);
        CHECK_EQ_U(cs.class_size, class_size[c]);
    }
    walk_classes();
    each_boundary();
    from_large();
    extra_eighth();
    large_in_place();
    across_heaps();
    failed_grow();
    alloy_thread_flush();
    CHECK(stats_add_up());
    return CHECK_DONE();
}
