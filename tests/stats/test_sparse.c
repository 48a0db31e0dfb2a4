/* SPDX-License-Identifier: MIT */
/* test_sparse.c - sparse_bytes: the free bytes of the small spans with under
 * a quarter of their objects in use (used * 4 < capacity), a part of
 * central_bytes.
 *
 * One thread fills at least 64 spans of the 256-byte class and keeps only
 * the full ones (the others are freed whole, and leave), then frees objects
 * span by span and reads the figure each time: per class (the struct and
 * alloy_ctl), in the totals (struct and alloy_ctl) and summed over the heaps.
 * After each step the thread cache is flushed and alloy_purge sends the
 * transfer caches' batches to their spans, so a span's used objects are
 * exactly those the test holds, and the expected figure is computed here
 * from the test's own counts:
 *   fresh:    one object taken: its span is sparse, and its free objects are
 *             the never-used bump region (checked), which the figure counts;
 *   full:     every span full: none is on a list, sparse_bytes = 0;
 *   boundary: a third of the spans keep 1 object, a third ceil(cap / 4) - 1
 *             (sparse), a third ceil(cap / 4) (not sparse: used * 4 >= cap);
 *   one each: every span keeps 1 object: every freed byte is sparse;
 *   all freed: the spans leave, sparse_bytes = 0.
 * The other classes do not move meanwhile (nothing else allocates), so the
 * totals change exactly as the class does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "check.h"
#include "pagemap.h"
#include "tcache.h"

#define SIZE 256
#define MIN_SPANS 64
#define CHUNK 4096
#define MAX_OBJS (1u << 19) /* 64 spans of the largest (256 pages) fit */
#define MAX_SPANS 4096

static void *objs[MAX_OBJS];
static unsigned nobjs;

/* The spans of the objects held, with how many each holds. */
typedef struct held_span {
    const ay_span_t *s;
    uint32_t capacity, held;
} held_span_t;
static held_span_t spans[MAX_SPANS];
static unsigned nspans;

static void settle(void) {
    alloy_thread_flush();
    alloy_purge(); /* the transfer caches' batches back to their spans */
}

static unsigned span_of(const void *p) {
    static unsigned last;
    const ay_span_t *s = ay_pagemap_span(p);
    if (last < nspans && spans[last].s == s)
        return last;
    for (unsigned i = 0; i < nspans; i++)
        if (spans[i].s == s)
            return last = i;
    if (nspans == MAX_SPANS) {
        fprintf(stderr, "more than %u spans\n", MAX_SPANS);
        exit(1);
    }
    spans[nspans] = (held_span_t){s, s->capacity, 0};
    return last = nspans++;
}

static void group(void) {
    nspans = 0;
    for (unsigned i = 0; i < nobjs; i++)
        spans[span_of(objs[i])].held++;
}

static unsigned full_spans(void) {
    unsigned n = 0;
    for (unsigned i = 0; i < nspans; i++)
        n += spans[i].held == spans[i].capacity;
    return n;
}

/* Free the objects held in span k beyond the first `keep`. */
static void keep_in_span(unsigned k, uint32_t keep) {
    unsigned n = 0, kept = 0;
    for (unsigned i = 0; i < nobjs; i++) {
        if (span_of(objs[i]) == k && kept++ >= keep)
            alloy_free(objs[i]);
        else
            objs[n++] = objs[i];
    }
    nobjs = n;
    spans[k].held = keep < spans[k].held ? keep : spans[k].held;
}

/* What sparse_bytes must be, from the test's own counts. */
static uint64_t expected(uint64_t *central) {
    uint64_t sparse = 0;
    *central = 0;
    for (unsigned i = 0; i < nspans; i++) {
        uint64_t free_bytes = (uint64_t)(spans[i].capacity - spans[i].held) * SIZE;
        *central += free_bytes;
        if ((uint64_t)spans[i].held * 4 < spans[i].capacity)
            sparse += free_bytes;
    }
    return sparse;
}

static uint64_t ctl_u64(const char *name) {
    uint64_t v = 0;
    size_t len = sizeof v;
    CHECK(alloy_ctl(name, &v, &len, NULL, 0) == 0);
    return v;
}

/* Every reading of sparse_bytes agrees with the expected figure; the totals
 * moved from base_total exactly as the class did from 0. */
static void check_step(const char *step, unsigned cls, uint64_t base_total) {
    uint64_t want_central, want = expected(&want_central);
    alloy_class_stats_t c = {.size = sizeof c};
    alloy_stats_t t = {.size = sizeof t};
    CHECK(alloy_class_stats_read(cls, &c) == 0);
    CHECK(alloy_stats_read(&t) == 0);
    fprintf(stderr,
            "%-9s %3u spans: sparse_bytes %llu (want %llu), central_bytes %llu (want %llu)\n", step,
            nspans, (unsigned long long)c.sparse_bytes, (unsigned long long)want,
            (unsigned long long)c.central_bytes, (unsigned long long)want_central);
    CHECK_EQ_U(c.spans, nspans); /* the class's spans are the test's */
    CHECK_EQ_U(c.transfer_bytes, 0);
    CHECK_EQ_U(c.central_bytes, want_central);
    CHECK_EQ_U(c.sparse_bytes, want);
    char name[64];
    snprintf(name, sizeof name, "stats.classes.%u.sparse_bytes", cls);
    CHECK_EQ_U(ctl_u64(name), want);
    CHECK_EQ_U(t.sparse_bytes - base_total, want);
    CHECK_EQ_U(ctl_u64("stats.sparse_bytes") - base_total, want);
    CHECK(t.sparse_bytes <= t.central_bytes - t.transfer_bytes);
    uint64_t heaps = 0;
    alloy_stats_t h = {.size = sizeof h};
    for (unsigned id = 0; alloy_heap_stats_read(id, &h) != ENOENT; id++, h.size = sizeof h)
        heaps += h.sparse_bytes;
    CHECK_EQ_U(heaps, t.sparse_bytes);
}

int main(void) {
    unsigned cls = ay_size_bin(SIZE) - 1;
    alloy_class_stats_t c = {.size = sizeof c};
    CHECK(alloy_class_stats_read(cls, &c) == 0);
    CHECK_EQ_U(c.class_size, SIZE);
    if (c.spans) {
        fprintf(stderr, "class %u (%u bytes) in use before the test\n", cls, SIZE);
        return 1;
    }

    settle();
    alloy_stats_t t = {.size = sizeof t};
    CHECK(alloy_stats_read(&t) == 0);
    uint64_t base_total = t.sparse_bytes; /* the other classes' (they stay as they are) */

    /* one object: the rest of its span is never-used bump region */
    CHECK((objs[nobjs++] = alloy_malloc(SIZE)) != NULL);
    settle();
    group();
    CHECK(nspans == 1 && spans[0].capacity >= 5);
    CHECK(spans[0].s->bump < spans[0].s->limit);
    check_step("fresh", cls, base_total);

    /* fill until MIN_SPANS spans are full, then keep only the full ones */
    while (nobjs + CHUNK <= MAX_OBJS) {
        for (unsigned i = 0; i < CHUNK; i++)
            CHECK((objs[nobjs++] = alloy_malloc(SIZE)) != NULL);
        settle();
        group();
        if (full_spans() >= MIN_SPANS)
            break;
    }
    for (unsigned k = 0; k < nspans; k++)
        if (spans[k].held != spans[k].capacity)
            keep_in_span(k, 0);
    settle();
    group();
    CHECK(nspans >= MIN_SPANS && full_spans() == nspans);
    check_step("full", cls, base_total);

    /* a third keep 1, a third just under a quarter, a third a quarter */
    for (unsigned k = 0; k < nspans; k++) {
        uint32_t quarter = (spans[k].capacity + 3) / 4; /* the least that is not sparse */
        CHECK(quarter >= 2);
        keep_in_span(k, k % 3 == 0 ? 1 : k % 3 == 1 ? quarter - 1 : quarter);
    }
    settle();
    check_step("boundary", cls, base_total);

    for (unsigned k = 0; k < nspans; k++)
        keep_in_span(k, 1);
    settle();
    check_step("one each", cls, base_total);

    for (unsigned i = 0; i < nobjs; i++)
        alloy_free(objs[i]);
    nobjs = nspans = 0;
    settle();
    check_step("all freed", cls, base_total);
    return CHECK_DONE();
}
