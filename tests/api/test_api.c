/* SPDX-License-Identifier: MIT */
/* test_api.c - conformance of the malloc family: sizes, alignment, realloc,
 * calloc, errors and errno, out-of-memory.  Linked against liballoy.a, so
 * the plain names below are alloy's. */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "check.h"
#include "os.h"

void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);

static int all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* the README's promise: 16-byte alignment for sizes that are multiples of 16,
 * at least 8 for the rest */
static void check_alignment(size_t size, void *p) {
    uintptr_t a = (uintptr_t)p;
    if (size % 16 == 0)
        CHECK(a % 16 == 0);
    else
        CHECK(a % 8 == 0);
}

/* sizes hidden from the compiler, which would otherwise reject the calls */
static volatile size_t v_max = SIZE_MAX, v_2_33 = (size_t)1 << 33;

int main(void) {
    const size_t max = v_max, b33 = v_2_33;
    /* malloc(0): unique, freeable */
    void *z1 = malloc(0), *z2 = malloc(0);
    CHECK(z1 && z2 && z1 != z2);
    free(z1);
    free(z2);
    free(NULL);

    /* impossible sizes: NULL + ENOMEM, no overflow */
    size_t huge[] = {max, max - 1, max - 4095, max / 2 + 1, (size_t)PTRDIFF_MAX + 1};
    for (unsigned i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        errno = 0;
        CHECK(malloc(huge[i]) == NULL && errno == ENOMEM);
        errno = 0;
        CHECK(aligned_alloc(64, huge[i]) == NULL && errno == ENOMEM);
        void *q = (void *)1;
        CHECK(posix_memalign(&q, 4096, huge[i]) == ENOMEM && q == (void *)1);
    }
    errno = 0;
    CHECK(calloc(max / 2, 3) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(b33, b33) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(reallocarray(NULL, max / 4, 8) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(valloc(max) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(pvalloc(max - 10) == NULL && errno == ENOMEM);

    /* every size up to 4 KiB and a spread above: alignment, usable size, writable */
    for (size_t size = 0; size <= 70000; size += size < 4096 ? 1 : 997) {
        unsigned char *p = malloc(size);
        CHECK(p != NULL);
        if (!p)
            break;
        check_alignment(size, p);
        CHECK(malloc_usable_size(p) >= size);
        memset(p, 0x5a, size);
        free(p);
    }
    /* above 32 KiB, whole pages in every flavour (README, "Guarantees and bad input") */
    size_t bigs[] = {32769, 40000, 262144, 262145, 300000, 1 << 20, (1 << 20) + 1, 5u << 20};
    for (unsigned i = 0; i < sizeof bigs / sizeof bigs[0]; i++) {
        unsigned char *p = malloc(bigs[i]);
        CHECK(p && (uintptr_t)p % 4096 == 0);
        CHECK(malloc_usable_size(p) >= bigs[i]);
        memset(p, 1, bigs[i]);
        free(p);
    }

    /* calloc memory is zero, even when recycled from dirty blocks */
    for (int round = 0; round < 3; round++) {
        size_t sizes[] = {1, 24, 100, 4000, 70000, 262144, 400000, 3u << 20};
        for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            unsigned char *d = malloc(sizes[i]);
            memset(d, 0xff, sizes[i]);
            free(d);
            unsigned char *c = calloc(1, sizes[i]);
            CHECK(c && all_zero(c, sizes[i]));
            free(c);
        }
    }

    /* posix_memalign / aligned_alloc / memalign / valloc / pvalloc */
    void *q = (void *)1;
    CHECK(posix_memalign(&q, 3, 16) == EINVAL && q == (void *)1);
    CHECK(posix_memalign(&q, 4, 16) == EINVAL); /* below sizeof(void *) */
    CHECK(posix_memalign(&q, 0, 16) == EINVAL);
    CHECK(posix_memalign(&q, 24, 16) == EINVAL);
    errno = 0;
    CHECK(aligned_alloc(3, 16) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(aligned_alloc(0, 16) == NULL && errno == EINVAL);
    errno = 0;
    CHECK(aligned_alloc(48, 96) == NULL && errno == EINVAL);
    for (size_t align = 1; align <= ((size_t)1 << 22); align <<= 1) {
        size_t sizes[] = {0, 1, 7, align, 3 * align + 5, 100000};
        for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            void *p = aligned_alloc(align, sizes[i]);
            CHECK(p && (uintptr_t)p % align == 0);
            memset(p, 3, sizes[i]);
            free(p);
            if (align >= sizeof(void *)) {
                void *r = NULL;
                CHECK(posix_memalign(&r, align, sizes[i]) == 0 && (uintptr_t)r % align == 0);
                free_aligned_sized(r, align, sizes[i]);
            }
            void *m = memalign(align, sizes[i]);
            CHECK(m && (uintptr_t)m % align == 0);
            free(m);
        }
    }
    void *m = memalign(48, 10); /* glibc rounds 48 up to 64 */
    CHECK(m && (uintptr_t)m % 64 == 0);
    free(m);
    void *v = valloc(10);
    CHECK(v && (uintptr_t)v % 4096 == 0);
    free(v);
    void *pv = pvalloc(10);
    CHECK(pv && (uintptr_t)pv % 4096 == 0 && malloc_usable_size(pv) >= 4096);
    free(pv);

    /* realloc follows glibc */
    char *r = realloc(NULL, 40);
    CHECK(r != NULL);
    memcpy(r, "0123456789012345678901234567890123456789", 40);
    char *r2 = realloc(r, 36); /* same class (40): in place */
    CHECK(r2 == r);
    char *r3 = realloc(r2, 40); /* grows back in place */
    CHECK(r3 == r && !memcmp(r3, "0123456789012345678901234567890123456789", 40));
    char *r4 = realloc(r3, 5000); /* moves, keeps contents */
    CHECK(r4 && !memcmp(r4, "0123456789012345678901234567890123456789", 40));
    char *r5 = realloc(r4, 9); /* shrinks to a smaller class, keeps the prefix */
    CHECK(r5 && !memcmp(r5, "012345678", 9));
    errno = 0;
    CHECK(realloc(r5, max) == NULL && errno == ENOMEM);
    CHECK(r5[0] == '0');           /* the block survives a failed realloc */
    CHECK(realloc(r5, 0) == NULL); /* frees */
    /* large blocks: in place within the span, mremap above 1 MiB */
    char *g = malloc(300000);
    memset(g, 9, 300000);
    char *g2 = realloc(g, 290000);
    CHECK(g2 == g);
    char *g3 = realloc(g2, 2u << 20);
    CHECK(g3 && g3[289999] == 9);
    char *g4 = realloc(g3, 64u << 20);
    CHECK(g4 && g4[289999] == 9 && g4[0] == 9);
    g4[(64u << 20) - 1] = 1;
    free(g4);
    char *ra = reallocarray(NULL, 10, 10);
    CHECK(ra && malloc_usable_size(ra) >= 100);
    free_sized(ra, 100);

    /* out of memory is reported, never a crash: fail the next OS maps */
    void *hold = malloc(8); /* a thread cache exists already */
    ay_os_fail_next_maps(1000);
    errno = 0;
    void *oom_big = malloc(64u << 20);
    CHECK(oom_big == NULL && errno == ENOMEM);
    errno = 0;
    int failed_small = 0;
    for (int i = 0; i < 200000; i++) { /* exhaust what is cached, then fail */
        void *p = malloc(1000);
        if (!p) {
            failed_small = errno == ENOMEM;
            break;
        }
    }
    CHECK(failed_small);
    /* the page heap's own paths for large blocks: a block of its own (3 MiB,
     * huge-page aligned), and 600 KiB from a 1 MiB block; calloc's path;
     * each gives NULL and ENOMEM while the OS refuses, loses nothing, and
     * works again after */
    size_t large_sizes[] = {3u << 20, 600u << 10, 20u << 20};
    for (unsigned k = 0; k < 3; k++) {
        errno = 0;
        CHECK(malloc(large_sizes[k]) == NULL && errno == ENOMEM);
        errno = 0;
        CHECK(calloc(1, large_sizes[k]) == NULL && errno == ENOMEM);
    }
    ay_os_fail_next_maps(0);
    void *after = malloc(1000);
    CHECK(after != NULL); /* recovers once the OS gives memory again */
    free(after);
    for (unsigned k = 0; k < 3; k++) {
        char *ok = calloc(1, large_sizes[k]);
        CHECK(ok && ok[large_sizes[k] - 1] == 0);
        free(ok);
    }
    free(hold);

    /* the alloy_* names are the same allocator */
    void *x = alloy_malloc(100);
    CHECK(x && alloy_malloc_usable_size(x) >= 100);
    free(x);
    CHECK(!strcmp(alloy_version(), ALLOY_VERSION_STRING));
    return CHECK_DONE();
}
