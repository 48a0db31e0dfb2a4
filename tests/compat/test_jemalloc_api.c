/* SPDX-License-Identifier: MIT */
/* test_jemalloc_api.c - alloy's side of jemalloc's API, beyond what
 * jemalloc's manual says (jemalloc_manual.c has that): mallctl's names are
 * alloy_ctl's figures (an alias reads what alloy_ctl reads), every
 * alloy_ctl name is reachable through mallctl and through a MIB, nallocx
 * is sallocx(mallocx()) for every size class and alignment, and alloy's
 * answers to what jemalloc leaves undefined (a heap that does not exist,
 * rallocx to 0, sdallocx with a wrong size, the report's letters).
 *
 * usage: test_jemalloc_api [all | wrong-size]
 *   wrong-size: sdallocx with a size larger than the block (the debug
 *   flavour aborts, the release flavour frees the block)
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "alloy/jemalloc.h"

static uint64_t ctl_u64(const char *name) {
    uint64_t v = 0;
    size_t len = sizeof v;
    CHECK_EQ_U(alloy_ctl(name, &v, &len, NULL, 0), 0);
    return v;
}

static uint64_t mallctl_u64(const char *name) {
    uint64_t v = 0;
    size_t len = sizeof v;
    CHECK_EQ_U(mallctl(name, &v, &len, NULL, 0), 0);
    return v;
}

/* jemalloc's names read alloy_ctl's figures (one thread, nothing moves) */
static void aliases(void) {
    char *volatile keep = malloc(3 << 20);
    memset(keep, 1, 3 << 20);
    const char *same[] = {"stats.allocated", "stats.active",   "stats.resident",
                          "stats.mapped",    "stats.retained", "stats.metadata"};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        CHECK_EQ_U(mallctl_u64(same[i]), ctl_u64(same[i]));
    CHECK(mallctl_u64("stats.allocated") >= 3 << 20);
    unsigned a = 0, b = 0;
    size_t len = sizeof a;
    CHECK_EQ_U(mallctl("opt.narenas", &a, &len, NULL, 0), 0);
    CHECK_EQ_U(alloy_ctl("opt.heaps", &b, &len, NULL, 0), 0);
    CHECK_EQ_U(a, b);
    CHECK_EQ_U(mallctl("arenas.nbins", &a, &len, NULL, 0), 0);
    CHECK_EQ_U(a, 208);
    CHECK_EQ_U(mallctl_u64("arenas.bin.5.size"), ctl_u64("stats.classes.5.size"));
    CHECK_EQ_U(mallctl_u64("arenas.bin.207.size"), ctl_u64("stats.classes.207.size"));
    CHECK_EQ_U(mallctl("arenas.bin.208.size", &a, &len, NULL, 0), ENOENT);
    int64_t d1, d2;
    len = sizeof d1;
    CHECK_EQ_U(mallctl("opt.dirty_decay_ms", &d1, &len, NULL, 0), 0);
    CHECK_EQ_U(alloy_ctl("opt.decay_ms", &d2, &len, NULL, 0), 0);
    CHECK_EQ_U(d1, d2);
    const char *junk = NULL;
    len = sizeof junk;
    CHECK_EQ_U(mallctl("opt.junk", &junk, &len, NULL, 0), 0);
    CHECK(junk && !strcmp(junk, "false"));
    const char *thp = NULL; /* a string, as jemalloc's */
    CHECK_EQ_U(mallctl("opt.thp", &thp, &len, NULL, 0), 0);
    CHECK(thp && !strcmp(thp, "auto"));
    CHECK_EQ_U(mallctl("tcache.create", &a, &len, NULL, 0), ENOENT);
    /* alloy's own names answer too, with jemalloc's rules */
    CHECK_EQ_U(mallctl_u64("stats.tcache_bytes"), ctl_u64("stats.tcache_bytes"));
    CHECK_EQ_U(mallctl("purge", NULL, NULL, NULL, 0), 0);
    CHECK_EQ_U(mallctl("purge", NULL, &len, NULL, 0), EPERM); /* alloy_ctl: EINVAL */
    free(keep);
}

/* A pattern's name with 0 for each index: the smallest that exists. */
static void instance(const char *pattern, char *out, size_t cap) {
    size_t n = 0;
    for (const char *p = pattern; *p && n + 2 < cap; p++) {
        if (*p == '<') {
            out[n++] = '0';
            p += 2;
        } else {
            out[n++] = *p;
        }
    }
    out[n] = 0;
}

/* Every alloy_ctl name: mallctl knows it (unless jemalloc's own name
 * shadows it), its MIB leads back to it, and a partial MIB extends. */
static void every_name_by_mib(void) {
    unsigned checked = 0;
    for (unsigned k = 0; alloy_ctl_name(k); k++) {
        char name[96];
        instance(alloy_ctl_name(k), name, sizeof name);
        if (!strcmp(name, "opt.junk") || !strcmp(name, "prof.dump") ||
            !strcmp(name, "prof.reset") || !strcmp(name, "heaps.create") ||
            !strcmp(name, "heap.0.destroy"))
            continue; /* shadowed by jemalloc's name, or a read with effects */
        alloy_ctl_info_t info;
        CHECK_EQ_U(alloy_ctl_describe(k, &info), 0);
        size_t mib[8], miblen = 8;
        int err = mallctlnametomib(name, mib, &miblen);
        CHECK_EQ_U(err, 0);
        if (err)
            continue;
        char value[8], again[8];
        size_t len = 3, len2 = 3; /* no value is 3 bytes long */
        bool action = !strcmp(info.type, "action");
        if (action)
            continue; /* running every action is not this test's business */
        /* the same length error by name and by MIB: the value's size */
        int e1 = mallctl(name, value, &len, NULL, 0);
        int e2 = mallctlbymib(mib, miblen, again, &len2, NULL, 0);
        CHECK_EQ_U(e1, EINVAL);
        CHECK_EQ_U(e2, EINVAL);
        size_t want = !strcmp(info.type, "bool") ? 1 : !strcmp(info.type, "unsigned") ? 4 : 8;
        len = want;
        err = mallctl(name, value, &len, NULL, 0);
        if (err)
            fprintf(stderr, "mallctl(\"%s\") of %zu bytes: %d\n", name, want, err);
        CHECK_EQ_U(err, 0);
        checked++;
    }
    CHECK(checked > 100);
    /* jemalloc's own names by MIB, and an index component changed */
    size_t mib[8], miblen = 8, v, len = sizeof v;
    CHECK_EQ_U(mallctlnametomib("stats.classes.0.size", mib, &miblen), 0);
    CHECK_EQ_U(miblen, 4);
    mib[2] = 100;
    CHECK_EQ_U(mallctlbymib(mib, miblen, &v, &len, NULL, 0), 0);
    CHECK_EQ_U(v, ctl_u64("stats.classes.100.size"));
    miblen = 1;
    CHECK_EQ_U(mallctlnametomib("arena.0.purge", mib, &miblen), 0);
    CHECK_EQ_U(miblen, 1);
    mib[1] = 0;
    mib[2] = 0;
    miblen = 8;
    size_t full[8];
    CHECK_EQ_U(mallctlnametomib("arena.0.purge", full, &miblen), 0);
    CHECK_EQ_U(miblen, 3);
    CHECK_EQ_U(mallctlbymib(full, 3, NULL, NULL, NULL, 0), 0);
    full[1] = 4096; /* MALLCTL_ARENAS_ALL */
    CHECK_EQ_U(mallctlbymib(full, 3, NULL, NULL, NULL, 0), 0);
    full[1] = 100000;
    CHECK_EQ_U(mallctlbymib(full, 3, NULL, NULL, NULL, 0), ENOENT);
    CHECK_EQ_U(mallctlbymib(full, 0, NULL, NULL, NULL, 0), ENOENT);
    size_t bad[2] = {999, 0};
    CHECK_EQ_U(mallctlbymib(bad, 2, &v, &len, NULL, 0), ENOENT);
}

/* nallocx is what mallocx gives, for every class and alignment */
static void nallocx_exact(void) {
    unsigned mismatches = 0, tried = 0;
    for (size_t n = 1; n <= (1u << 19); n += n < 2048 ? 1 : n < 65536 ? 61 : 4093) {
        for (int lg = 0; lg <= 13; lg += (n < 4096 ? 1 : 13)) {
            int flags = lg ? MALLOCX_LG_ALIGN(lg) : 0;
            void *p = mallocx(n, flags);
            tried++;
            if (!p || sallocx(p, 0) != nallocx(n, flags) || ((uintptr_t)p & ((1u << lg) - 1)))
                mismatches++;
            dallocx(p, 0);
        }
    }
    CHECK(tried > 10000);
    CHECK_EQ_U(mismatches, 0);
    void *zero = mallocx(0, 0); /* malloc(0)'s block, 16 bytes */
    CHECK_EQ_U(nallocx(0, 0), sallocx(zero, 0));
#ifndef SECURE_FLAVOUR /* (whose blocks end with an 8-byte tag) */
    CHECK_EQ_U(nallocx(0, 0), 16);
#endif
    dallocx(zero, 0);
}

/* What jemalloc leaves undefined, alloy answers */
static void undefined(void) {
    errno = 0;
    CHECK(mallocx(16, MALLOCX_ARENA(250)) == NULL); /* no heap 250 */
    CHECK_EQ_U(errno, EINVAL);
    void *p = mallocx(100, 0);
    void *q = rallocx(p, 0, 0); /* not realloc's free */
    CHECK(q != NULL && sallocx(q, 0) >= 1);
    q = rallocx(q, 300, MALLOCX_ARENA(250));
    CHECK(q == NULL && errno == EINVAL);
    dallocx(rallocx(NULL, 50, 0), 0); /* NULL: a new block */
    /* an explicit heap as an arena */
    alloy_heap_t *h = alloy_heap_create();
    unsigned id = alloy_heap_id(h);
    void *a = mallocx(5000, MALLOCX_ARENA(id));
    void *b = mallocx(100, MALLOCX_ARENA(id) | MALLOCX_ALIGN(256) | MALLOCX_ZERO);
    CHECK(a && b && ((uintptr_t)b & 255) == 0);
    alloy_stats_t s = {.size = sizeof s};
    CHECK_EQ_U(alloy_heap_stats_read(id, &s), 0);
    CHECK(s.allocated >= 5000 + 256);
    dallocx(a, 0);
    dallocx(b, 0);
    CHECK_EQ_U(alloy_heap_destroy(h), 0);
    /* an uncached allocation does not take the block freed last, which
     * heads the thread's list; a cached one does */
    void *u = mallocx(4000, 0);
    dallocx(u, 0);
    void *v = mallocx(4000, MALLOCX_TCACHE_NONE);
    CHECK(v != NULL && v != u);
    void *w = mallocx(4000, 0);
#ifndef SECURE_FLAVOUR /* (its lists are in random order, behind a quarantine) */
    CHECK(w == u);
#endif
    dallocx(v, MALLOCX_TCACHE_NONE);
    dallocx(w, 0);
    /* xallocx never moves: the real size, whatever is asked */
    void *x = mallocx(1000, 0);
    size_t real = sallocx(x, 0);
    CHECK_EQ_U(xallocx(x, 100000, 0, 0), real);
    CHECK_EQ_U(xallocx(x, 10, 0, 0), real);
    dallocx(x, 0);
}

typedef struct text {
    char buf[1 << 16];
    size_t len;
} text_t;

static void take(void *opaque, const char *s) {
    text_t *t = opaque;
    size_t n = strlen(s);
    if (t->len + n < sizeof t->buf) {
        memcpy(t->buf + t->len, s, n + 1);
        t->len += n;
    }
}

/* malloc_stats_print is alloy's report: the full one by default, and
 * jemalloc's letters for leaving parts out */
static void report(void) {
    static text_t t;
    t.len = 0;
    malloc_stats_print(take, &t, NULL);
    CHECK(strstr(t.buf, "alloy") && strstr(t.buf, "\nheaps:") && strstr(t.buf, "\nclasses:"));
    t.len = 0;
    malloc_stats_print(take, &t, "a");
    CHECK(!strstr(t.buf, "\nheaps:") && strstr(t.buf, "\nclasses:"));
    t.len = 0;
    malloc_stats_print(take, &t, "bl");
    CHECK(strstr(t.buf, "\nheaps:") && !strstr(t.buf, "\nclasses:"));
    t.len = 0;
    malloc_stats_print(take, &t, "Jgmdx");
    CHECK(t.buf[0] == '{' && strstr(t.buf, "\"allocated\""));
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "all";
    if (!strcmp(mode, "wrong-size")) {
        char *p = mallocx(100, 0);
        sdallocx(p, 5000, 0); /* larger than the block */
        void *q = mallocx(100, 0);
        CHECK(q != NULL);
        dallocx(q, 0);
        return CHECK_DONE();
    }
    aliases();
    every_name_by_mib();
    nallocx_exact();
    undefined();
    report();
    return CHECK_DONE();
}
