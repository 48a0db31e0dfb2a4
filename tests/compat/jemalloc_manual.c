/* SPDX-License-Identifier: MIT */
/* jemalloc_manual.c - what jemalloc's manual (jemalloc(3), 5.3) specifies
 * for its non-standard API, checked case by case.  The same program runs
 * against Debian's libjemalloc.so.2, which it is linked with, and against
 * alloy, preloaded (or linked, built with ALLOY_HEADER): every check must
 * pass on both, so a check that alloy passes and jemalloc fails is a
 * misreading of the manual, and the other way round a deviation of alloy's.
 *
 * Only what the manual states is checked: return values, the error codes
 * of mallctl* (ENOENT, EINVAL, EPERM), alignment, zeroing, the real sizes
 * (sallocx, nallocx, xallocx) agreeing with each other, mallctl's names for
 * totals and their order (allocated <= active <= resident, active <=
 * mapped), MIBs (partial, integer components), malloc_stats_print.  Sizes
 * and numbers that differ between allocators (class sizes, arena counts)
 * are never compared with fixed values.
 *
 * usage: jemalloc_manual PROVIDER  (a substring of the library file that
 * must provide mallocx, so that a preload that did not take fails)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ALLOY_HEADER
#include <alloy/jemalloc.h>
#else
#include <jemalloc/jemalloc.h>
#endif

#include "check.h"

static const size_t sizes[] = {1,    8,     15,    16,     17,     100,     1000,
                               4096, 10000, 65536, 100000, 300000, 1 << 20, 5 << 20};

/* Fill, free and fill again so that a later block is likely to reuse dirty
 * memory, which MALLOCX_ZERO must clear. */
static void dirty(size_t size) {
    for (int i = 0; i < 4; i++) {
        unsigned char *p = malloc(size);
        if (p) {
            memset(p, 0xa5, size);
            free(p);
        }
    }
}

static bool all_zero(const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return false;
    return true;
}

static void sizes_agree(void) {
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        for (int lg = 0; lg <= 16; lg += 4) {
            int flags = lg ? MALLOCX_LG_ALIGN(lg) : 0;
            unsigned char *p = mallocx(n, flags);
            CHECK(p != NULL);
            if (!p)
                continue;
            size_t real = sallocx(p, 0);
            CHECK(real >= n);
            CHECK_EQ_U(real, nallocx(n, flags)); /* the same size computation */
            CHECK(((uintptr_t)p & ((1u << lg) - 1)) == 0);
            CHECK_EQ_U(xallocx(p, n, 0, flags), sallocx(p, 0)); /* fits: the real size */
            memset(p, 1, real);                                 /* all of it is usable */
            if (i % 2)
                sdallocx(p, n, flags); /* the size asked for ... */
            else
                sdallocx(p, real, flags); /* ... or the real size: both valid */
        }
        unsigned char *q = mallocx(n, MALLOCX_ALIGN(64));
        CHECK(q && ((uintptr_t)q & 63) == 0);
        dallocx(q, 0);
    }
}

static void zeroing(void) {
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        dirty(n);
        unsigned char *p = mallocx(n, MALLOCX_ZERO);
        CHECK(p != NULL && all_zero(p, sallocx(p, 0))); /* newly allocated memory: all of it */
        if (!p)
            continue;
        size_t old = sallocx(p, 0);
        memset(p, 7, old);
        dirty(4 * n);
        /* growing with MALLOCX_ZERO: bytes past the old real size are zero,
         * the old ones untouched */
        unsigned char *q = rallocx(p, 4 * n, MALLOCX_ZERO);
        CHECK(q != NULL);
        if (!q) {
            dallocx(p, 0);
            continue;
        }
        size_t real = sallocx(q, 0), keep = old < 4 * n ? old : 4 * n;
        CHECK(real >= 4 * n);
        bool kept = true;
        for (size_t k = 0; k < keep; k++)
            kept &= q[k] == 7;
        CHECK(kept);
        CHECK(real <= old || all_zero(q + old, real - old));
        dallocx(q, 0);
    }
}

static void reallocation(void) {
    unsigned char *p = mallocx(100, 0);
    CHECK(p != NULL);
    memset(p, 3, 100);
    /* to an alignment: the block moves if it must, the contents stay */
    unsigned char *q = rallocx(p, 200, MALLOCX_ALIGN(4096));
    CHECK(q != NULL && ((uintptr_t)q & 4095) == 0);
    bool kept = true;
    for (int k = 0; q && k < 100; k++)
        kept &= q[k] == 3;
    CHECK(kept);
    p = q;
    /* failures: NULL, and the block left as it was */
    errno = 0;
    volatile size_t half = SIZE_MAX / 2;
    CHECK(rallocx(p, half, 0) == NULL);
    CHECK(rallocx(p, 200, MALLOCX_LG_ALIGN(63)) == NULL);
    kept = true;
    for (int k = 0; k < 100; k++)
        kept &= p[k] == 3;
    CHECK(kept);
    CHECK(sallocx(p, 0) >= 200);
    /* in place only: never moves, returns the real size, which is below
     * the size when it could not grow there */
    size_t before = sallocx(p, 0);
    size_t r = xallocx(p, 64 << 20, 0, 0);
    CHECK_EQ_U(r, sallocx(p, 0));
    CHECK(r >= 64 << 20 || r == before);
    CHECK(p[0] == 3 && p[99] == 3);
    /* extra that cannot be had does not make it fail */
    CHECK(xallocx(p, 10, SIZE_MAX / 4, 0) >= 10);
    dallocx(p, 0);
}

static void impossible(void) {
    volatile size_t half = SIZE_MAX / 2, almost = SIZE_MAX - 4096; /* (no compile-time warning) */
    CHECK(mallocx(half, 0) == NULL);
    CHECK(mallocx(almost, 0) == NULL);
    CHECK(mallocx(1, MALLOCX_LG_ALIGN(63)) == NULL);
    CHECK(mallocx(half, MALLOCX_ZERO) == NULL);
    CHECK_EQ_U(nallocx(half, 0), 0);
    CHECK_EQ_U(nallocx(almost, 0), 0);
    CHECK_EQ_U(nallocx(1, MALLOCX_LG_ALIGN(63)), 0);
}

static void uncached_and_arenas(void) {
    void *p = mallocx(64, MALLOCX_TCACHE_NONE);
    CHECK(p != NULL && sallocx(p, 0) >= 64);
    dallocx(p, MALLOCX_TCACHE_NONE);
    unsigned arena, narenas;
    size_t len = sizeof arena;
    CHECK_EQ_U(mallctl("arenas.create", &arena, &len, NULL, 0), 0);
    len = sizeof narenas;
    CHECK_EQ_U(mallctl("arenas.narenas", &narenas, &len, NULL, 0), 0);
    CHECK(arena < narenas);
    void *a = mallocx(1000, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
    void *b = mallocx(1 << 20, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE | MALLOCX_ZERO);
    CHECK(a != NULL && b != NULL && all_zero(b, 1 << 20));
    if (a)
        memset(a, 1, 1000);
    char name[64];
    snprintf(name, sizeof name, "arena.%u.purge", arena);
    CHECK_EQ_U(mallctl(name, NULL, NULL, NULL, 0), 0);
    /* destroy discards the arena's allocations */
    snprintf(name, sizeof name, "arena.%u.destroy", arena);
    CHECK_EQ_U(mallctl(name, NULL, NULL, NULL, 0), 0);
    /* every arena at once: MALLCTL_ARENAS_ALL, and arenas.narenas */
    snprintf(name, sizeof name, "arena.%u.purge", MALLCTL_ARENAS_ALL);
    CHECK_EQ_U(mallctl(name, NULL, NULL, NULL, 0), 0);
    len = sizeof narenas;
    CHECK_EQ_U(mallctl("arenas.narenas", &narenas, &len, NULL, 0), 0);
    snprintf(name, sizeof name, "arena.%u.purge", narenas);
    CHECK_EQ_U(mallctl(name, NULL, NULL, NULL, 0), 0);
    snprintf(name, sizeof name, "arena.%u.purge", narenas + 1);
    CHECK_EQ_U(mallctl(name, NULL, NULL, NULL, 0), ENOENT);
}

static size_t read_size(const char *name) {
    size_t v = 0, len = sizeof v;
    CHECK_EQ_U(mallctl(name, &v, &len, NULL, 0), 0);
    CHECK_EQ_U(len, sizeof v);
    return v;
}

static void refresh(void) {
    uint64_t e = 1;
    size_t len = sizeof e;
    CHECK_EQ_U(mallctl("epoch", &e, &len, &e, sizeof e), 0);
}

static void totals(void) {
    refresh();
    size_t before = read_size("stats.allocated");
    void *big = malloc(8 << 20);
    memset(big, 1, 8 << 20);
    refresh();
    size_t allocated = read_size("stats.allocated"), active = read_size("stats.active");
    size_t resident = read_size("stats.resident"), mapped = read_size("stats.mapped");
    (void)read_size("stats.retained");
    (void)read_size("stats.metadata");
    CHECK(allocated >= before + (8 << 20) - (1 << 20)); /* the block is counted */
    CHECK(allocated <= active);
    CHECK(active <= resident);
    CHECK(active <= mapped);
    free(big);
    refresh();
    CHECK(read_size("stats.allocated") + (7 << 20) <= allocated); /* and uncounted */
}

static void errors(void) {
    size_t v, len;
    uint64_t e0, e1;
    /* unknown names, partial names, names past a leaf */
    CHECK_EQ_U(mallctl("no.such.name", NULL, NULL, NULL, 0), ENOENT);
    CHECK_EQ_U(mallctl("stats", NULL, NULL, NULL, 0), ENOENT);
    CHECK_EQ_U(mallctl("stats.allocated.more", NULL, NULL, NULL, 0), ENOENT);
    CHECK_EQ_U(mallctl("", NULL, NULL, NULL, 0), ENOENT);
    /* lengths: a short read copies what fits and says how much */
    len = 4;
    v = 0;
    CHECK_EQ_U(mallctl("stats.allocated", &v, &len, NULL, 0), EINVAL);
    CHECK_EQ_U(len, 4);
    len = 16;
    CHECK_EQ_U(mallctl("stats.allocated", &v, &len, NULL, 0), EINVAL);
    e0 = 1;
    CHECK_EQ_U(mallctl("epoch", NULL, NULL, &e0, 4), EINVAL);
    bool on = false;
    CHECK_EQ_U(mallctl("background_thread", NULL, NULL, &on, 8), EINVAL);
    /* a read-only name cannot be written, not even without a value */
    v = 1;
    CHECK_EQ_U(mallctl("stats.allocated", NULL, NULL, &v, sizeof v), EPERM);
    CHECK_EQ_U(mallctl("stats.allocated", NULL, NULL, NULL, sizeof v), EPERM);
    const char *s = "x";
    CHECK_EQ_U(mallctl("version", NULL, NULL, &s, sizeof s), EPERM);
    /* an action (void) can be neither read nor written */
    len = sizeof v;
    CHECK_EQ_U(mallctl("thread.tcache.flush", &v, &len, NULL, 0), EPERM);
    CHECK_EQ_U(mallctl("thread.tcache.flush", NULL, &len, NULL, 0), EPERM);
    CHECK_EQ_U(mallctl("thread.tcache.flush", NULL, NULL, &v, sizeof v), EPERM);
    CHECK_EQ_U(mallctl("thread.tcache.flush", NULL, NULL, NULL, 0), 0);
    /* the epoch: a write refreshes and increments it, a read returns it */
    len = sizeof e0;
    CHECK_EQ_U(mallctl("epoch", &e0, &len, NULL, 0), 0);
    e1 = 1;
    CHECK_EQ_U(mallctl("epoch", &e1, &len, &e1, sizeof e1), 0);
    CHECK(e1 > e0);
    /* value types from the manual */
    len = sizeof s;
    CHECK_EQ_U(mallctl("version", &s, &len, NULL, 0), 0);
    CHECK(s != NULL && *s);
    len = sizeof on;
    CHECK_EQ_U(mallctl("opt.tcache", &on, &len, NULL, 0), 0);
    CHECK_EQ_U(mallctl("background_thread", &on, &len, NULL, 0), 0);
    CHECK_EQ_U(mallctl("config.stats", &on, &len, NULL, 0), 0);
    unsigned u;
    len = sizeof u;
    CHECK_EQ_U(mallctl("opt.narenas", &u, &len, NULL, 0), 0);
    CHECK(u >= 1);
    CHECK_EQ_U(mallctl("thread.arena", &u, &len, NULL, 0), 0);
    CHECK_EQ_U(mallctl("thread.arena", NULL, NULL, &u, sizeof u), 0); /* its own: fine */
    ssize_t ms;
    len = sizeof ms;
    CHECK_EQ_U(mallctl("arenas.dirty_decay_ms", &ms, &len, NULL, 0), 0);
    CHECK_EQ_U(mallctl("arenas.dirty_decay_ms", NULL, NULL, &ms, sizeof ms), 0);
    len = sizeof v;
    CHECK_EQ_U(mallctl("arenas.page", &v, &len, NULL, 0), 0);
    CHECK(v >= 4096 && !(v & (v - 1)));
    CHECK_EQ_U(mallctl("arenas.quantum", &v, &len, NULL, 0), 0);
    CHECK(v >= 8 && !(v & (v - 1)));
}

static void mibs(void) {
    unsigned nbins;
    size_t len = sizeof nbins, mib[8], miblen;
    CHECK_EQ_U(mallctl("arenas.nbins", &nbins, &len, NULL, 0), 0);
    CHECK(nbins > 0);
    /* a partial MIB, then the whole one */
    miblen = 2;
    CHECK_EQ_U(mallctlnametomib("arenas.bin.0.size", mib, &miblen), 0);
    CHECK_EQ_U(miblen, 2);
    miblen = 8;
    CHECK_EQ_U(mallctlnametomib("arenas.bin.0.size", mib, &miblen), 0);
    CHECK_EQ_U(miblen, 4);
    CHECK_EQ_U(mib[2], 0); /* an integer component is that integer */
    size_t prev = 0;
    bool ascending = true, read_all = true;
    for (unsigned i = 0; i < nbins; i++) { /* the manual's example */
        size_t bin_size;
        mib[2] = i;
        len = sizeof bin_size;
        read_all &= mallctlbymib(mib, miblen, &bin_size, &len, NULL, 0) == 0;
        ascending &= bin_size > prev;
        prev = bin_size;
    }
    CHECK(read_all && ascending);
    size_t first;
    mib[2] = 0;
    len = sizeof first;
    CHECK_EQ_U(mallctlbymib(mib, miblen, &first, &len, NULL, 0), 0);
    len = sizeof first;
    CHECK_EQ_U(mallctl("arenas.bin.0.size", &prev, &len, NULL, 0), 0);
    CHECK_EQ_U(first, prev);
    mib[2] = nbins + 100; /* past the last bin (jemalloc 5.3 takes nbins itself) */
    CHECK_EQ_U(mallctlbymib(mib, miblen, &first, &len, NULL, 0), ENOENT);
    mib[2] = 0;
    CHECK_EQ_U(mallctlbymib(mib, 3, &first, &len, NULL, 0), ENOENT); /* partial */
    /* a prefix is a name; unknown names are not */
    miblen = 8;
    CHECK_EQ_U(mallctlnametomib("stats", mib, &miblen), 0);
    CHECK_EQ_U(miblen, 1);
    miblen = 8;
    CHECK_EQ_U(mallctlnametomib("no.such.name", mib, &miblen), ENOENT);
    miblen = 8;
    CHECK_EQ_U(mallctlnametomib("stats.allocated.more", mib, &miblen), ENOENT);
    /* the same answers by MIB as by name */
    miblen = 8;
    CHECK_EQ_U(mallctlnametomib("stats.allocated", mib, &miblen), 0);
    CHECK_EQ_U(miblen, 2);
    size_t v = 1;
    char *volatile live = malloc(1 << 20); /* so that stats.allocated is not 0 */
    memset(live, 1, 1 << 20);
    refresh(); /* jemalloc's figures change at an epoch */
    CHECK_EQ_U(mallctlbymib(mib, miblen, NULL, NULL, &v, sizeof v), EPERM);
    len = 4;
    CHECK_EQ_U(mallctlbymib(mib, miblen, &v, &len, NULL, 0), EINVAL);
    len = sizeof v;
    CHECK_EQ_U(mallctlbymib(mib, miblen, &v, &len, NULL, 0), 0);
    CHECK(v >= 1 << 20);
    free(live);
    miblen = 8;
    CHECK_EQ_U(mallctlnametomib("thread.tcache.flush", mib, &miblen), 0);
    CHECK_EQ_U(mallctlbymib(mib, miblen, NULL, NULL, NULL, 0), 0);
    CHECK_EQ_U(mallctlbymib(mib, miblen, &v, &len, NULL, 0), EPERM);
}

typedef struct out {
    size_t calls, bytes;
    char first, last;
} out_t;

static void collect(void *opaque, const char *s) {
    out_t *o = opaque;
    size_t n = strlen(s);
    o->calls++;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ' ' && s[i] != '\n') {
            if (!o->first)
                o->first = s[i];
            o->last = s[i];
        }
    }
    o->bytes += n;
}

static void stats_print(void) {
    out_t text = {0}, json = {0};
    malloc_stats_print(collect, &text, NULL);
    CHECK(text.calls > 0 && text.bytes > 100);
    malloc_stats_print(collect, &json, "J");
    CHECK(json.calls > 0 && json.first == '{' && json.last == '}');
}

int main(int argc, char **argv) {
    Dl_info info;
    void *sym = dlsym(RTLD_DEFAULT, "mallocx");
    const char *from = sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "nothing";
    fprintf(stderr, "mallocx comes from %s\n", from);
    if (argc != 2 || !strstr(from, argv[1])) {
        fprintf(stderr, "FAIL: expected mallocx from %s\n", argc == 2 ? argv[1] : "(no argument)");
        return 1;
    }
    sizes_agree();
    zeroing();
    reallocation();
    impossible();
    uncached_and_arenas();
    totals();
    errors();
    mibs();
    stats_print();
    return CHECK_DONE();
}
