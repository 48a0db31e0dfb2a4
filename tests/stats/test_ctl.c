/* SPDX-License-Identifier: MIT */
/* test_ctl.c - alloy_ctl: every name can be read, the values read are the
 * right ones (settings, class geometry, exact byte counts, sums over heaps),
 * the writable ones round trip, and the error codes are the documented ones.
 * ctest runs it with ALLOY_CONF=heaps:3,tcache_max_bytes:3m,
 * return_threshold:3 (see EXPECTED_*).  Only the alloy_* names are called. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "check.h"
#include "ctl_read.h"
#include "classes.h"

#define EXPECTED_HEAPS 3
#define EXPECTED_TCACHE_MAX ((uint64_t)3 << 20)
#define EXPECTED_THRESHOLD_HALVES 6

/* alloy_ctl reads of a string and of a formatted name (the others: ctl_read.h) */
static const char *rd_str(const char *name) {
    const char *v = "";
    size_t len = sizeof v;
    CHECK(alloy_ctl(name, &v, &len, NULL, 0) == 0);
    return v ? v : "";
}

static uint64_t rd_fmt(const char *fmt, unsigned i, const char *field) {
    char name[96];
    snprintf(name, sizeof name, fmt, i, field);
    return rd_u64(name);
}

/* The settings, as ALLOY_CONF set them, and the defaults for the rest. */
static void check_settings(void) {
    CHECK(!strcmp(rd_str("version"), alloy_version()));
    CHECK(!strcmp(rd_str("opt.batch_policy"), "compact"));
    CHECK(!strcmp(rd_str("batch_policy"), "compact"));
    CHECK_EQ_U(rd_u64("opt.batch_budget"), 256 * 1024);
    CHECK_EQ_U(rd_u64("opt.batch_cap"), 1024);
    CHECK_EQ_U(rd_uns("opt.return_threshold_halves"), EXPECTED_THRESHOLD_HALVES);
    CHECK(rd_bool("opt.tcache"));
    CHECK_EQ_U(rd_u64("opt.tcache_max_bytes"), EXPECTED_TCACHE_MAX);
    CHECK_EQ_U(rd_i64("opt.decay_ms"), 1000);
    CHECK_EQ_U(rd_i64("decay_ms"), 1000);
    CHECK_EQ_U(rd_uns("opt.heaps"), EXPECTED_HEAPS);
    CHECK_EQ_U(rd_uns("heaps.count"), EXPECTED_HEAPS);
    CHECK(!rd_bool("opt.background_thread"));
    CHECK(!rd_bool("background_thread"));
    CHECK(!rd_bool("opt.junk"));
    CHECK(!rd_bool("opt.zero"));
    CHECK(!rd_bool("opt.abort_on_error"));
    CHECK(!rd_bool("opt.stats_print"));
    /* the automatic heaps exist, and nothing beyond them yet */
    for (unsigned i = 0; i < EXPECTED_HEAPS; i++)
        CHECK(alloy_heap_from_id(i) != NULL);
    CHECK(alloy_heap_from_id(EXPECTED_HEAPS) == NULL);
}

/* Every class: its size, L(S) under the default policy (compact: min(256
 * KiB / S, 1024) up to 1 KiB, a sixteenth of that budget above), a terminal
 * batch within it, and the other counters equal to alloy_class_stats_read's. */
static void check_classes(void) {
    for (unsigned j = 0; j < NCLASSES; j++) {
        char name[64];
        snprintf(name, sizeof name, "stats.classes.%u.size", j);
        CHECK_EQ_U(rd_u64(name), class_size[j]);
        snprintf(name, sizeof name, "stats.classes.%u.batch_limit", j);
        unsigned budget = class_size[j] <= 1024 ? 262144 : 262144 / 16;
        unsigned limit = rd_uns(name), want = (unsigned)(budget / class_size[j]);
        want = want > 1024 ? 1024 : want < 1 ? 1 : want;
        CHECK_EQ_U(limit, want);
        snprintf(name, sizeof name, "stats.classes.%u.terminal_batch", j);
        unsigned terminal = rd_uns(name);
        CHECK(terminal >= 1 && terminal <= limit);
        alloy_class_stats_t c = {.size = sizeof c};
        CHECK(alloy_class_stats_read(j, &c) == 0);
        CHECK(c.class_size == class_size[j] && c.batch_limit == limit &&
              c.terminal_batch == terminal);
        CHECK_EQ_U(rd_fmt("stats.classes.%u.%s", j, "objects_fetched"), c.objects_fetched);
        CHECK_EQ_U(rd_fmt("stats.classes.%u.%s", j, "objects_released"), c.objects_released);
        CHECK_EQ_U(rd_fmt("stats.classes.%u.%s", j, "spans_allocated"), c.spans_allocated);
        CHECK_EQ_U(rd_fmt("stats.classes.%u.%s", j, "tcache_bytes"), c.tcache_bytes);
        CHECK_EQ_U(rd_fmt("stats.classes.%u.%s", j, "central_bytes"), c.central_bytes);
        CHECK_EQ_U(rd_fmt("stats.classes.%u.%s", j, "allocated"), c.allocated);
    }
    /* the policy in force shows in the terminal batch (384 bytes: 682 under
     * clip, 512 under guard and pow2) */
    const char *pols[] = {"clip", "pow2", "guard"};
    const unsigned terminal[] = {682, 512, 512};
    for (int k = 0; k < 3; k++) {
        CHECK(alloy_ctl("batch_policy", NULL, NULL, &pols[k], sizeof pols[k]) == 0);
        CHECK_EQ_U(rd_uns("stats.classes.31.terminal_batch"), terminal[k]);
        CHECK_EQ_U(rd_uns("stats.classes.31.batch_limit"), 682);
    }
}

/* The totals by name equal alloy_stats_read's fields, and each is the sum
 * over the heaps (plus metadata for mapped). */
static void check_totals(void) {
    static const char *const names[] = {"allocated",       "active",
                                        "resident",        "mapped",
                                        "retained",        "metadata",
                                        "large_allocated", "tcache_bytes",
                                        "central_bytes",   "pageheap_free_bytes",
                                        "slow_path_calls", "short_fetches",
                                        "objects_fetched", "objects_released",
                                        "spans_allocated", "spans_freed",
                                        "purges",          "threads"};
    enum { N = sizeof names / sizeof names[0] };
    uint64_t total[N], sum[N] = {0};
    for (unsigned k = 0; k < N; k++) {
        char name[64];
        snprintf(name, sizeof name, "stats.%s", names[k]);
        total[k] = rd_u64(name);
    }
    alloy_stats_t s = {.size = sizeof s};
    CHECK(alloy_stats_read(&s) == 0);
    const uint64_t fields[N] = {s.allocated,
                                s.active,
                                s.resident,
                                s.mapped,
                                s.pageheap_purged_bytes,
                                s.metadata,
                                s.large_allocated,
                                s.tcache_bytes,
                                s.central_bytes,
                                s.pageheap_free_bytes,
                                s.slow_path_calls,
                                s.short_fetches,
                                s.objects_fetched,
                                s.objects_released,
                                s.spans_allocated,
                                s.spans_freed,
                                s.purges,
                                s.threads_live};
    for (unsigned k = 0; k < N; k++) {
        if (total[k] != fields[k])
            fprintf(stderr, "stats.%s: %llu by name, %llu in the struct\n", names[k],
                    (unsigned long long)total[k], (unsigned long long)fields[k]);
        CHECK(total[k] == fields[k]);
    }
    for (unsigned i = 0; i < 256; i++) {
        if (!alloy_heap_from_id(i))
            continue;
        for (unsigned k = 0; k < N; k++)
            sum[k] += rd_fmt("stats.heaps.%u.%s", i, names[k]);
    }
    for (unsigned k = 0; k < N; k++) {
        uint64_t want = total[k];
        if (!strcmp(names[k], "metadata"))
            want = 0; /* no heap owns it */
        if (!strcmp(names[k], "mapped"))
            want -= total[5];
        if (!strcmp(names[k], "resident"))
            continue; /* the metadata's resident part: not exposed */
        if (sum[k] != want)
            fprintf(stderr, "stats.heaps.*.%s sums to %llu, total %llu\n", names[k],
                    (unsigned long long)sum[k], (unsigned long long)want);
        CHECK(sum[k] == want);
    }
    CHECK(total[0] <= total[1] && total[1] <= total[2] && total[2] <= total[3]);
}

/* In a fresh thread with its cache flushed, K objects of class j add exactly
 * K x size to stats.allocated, to stats.classes.<j>.allocated and to the
 * thread's heap; freeing them takes exactly that away again. */
/* (classes malloc serves: up to class 151, 32 KiB; above, page-heap blocks) */
static const unsigned probe_classes[] = {0, 1, 15, 31, 71, 100, 140, 150, 151};
#define K 300
static void *probe[K];

static void *fresh_thread(void *arg) {
    alloy_free(alloy_malloc(8)); /* the thread's cache exists */
    CHECK(alloy_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
    CHECK_EQ_U(rd_u64("thread.tcache.bytes"), 0);
    unsigned heap = rd_uns("thread.heap");
    CHECK(heap < EXPECTED_HEAPS);
    for (unsigned k = 0; k < sizeof probe_classes / sizeof probe_classes[0]; k++) {
        unsigned j = probe_classes[k];
        size_t size = class_size[j], n = j >= 140 ? 20 : K, bytes = n * size;
        uint64_t total0 = rd_u64("stats.allocated"),
                 class0 = rd_fmt("stats.classes.%u.%s", j, "allocated");
        uint64_t heap0 = rd_fmt("stats.heaps.%u.%s", heap, "allocated");
        for (size_t i = 0; i < n; i++)
            probe[i] = alloy_malloc(size - (i % 8)); /* same class */
        uint64_t total1 = rd_u64("stats.allocated"),
                 class1 = rd_fmt("stats.classes.%u.%s", j, "allocated");
        uint64_t heap1 = rd_fmt("stats.heaps.%u.%s", heap, "allocated");
        if (total1 - total0 != bytes || class1 - class0 != bytes || heap1 - heap0 != bytes)
            fprintf(stderr,
                    "class %u: %zu x %zu bytes: stats.allocated +%llu, class +%llu, heap +%llu\n",
                    j, n, size, (unsigned long long)(total1 - total0),
                    (unsigned long long)(class1 - class0), (unsigned long long)(heap1 - heap0));
        CHECK_EQ_U(total1 - total0, bytes);
        CHECK_EQ_U(class1 - class0, bytes);
        CHECK_EQ_U(heap1 - heap0, bytes);
        /* what the cache holds now is what this thread's cache holds */
        CHECK_EQ_U(rd_fmt("stats.classes.%u.%s", j, "tcache_bytes"), rd_u64("thread.tcache.bytes"));
        for (size_t i = 0; i < n; i++)
            alloy_free(probe[i]);
        CHECK_EQ_U(rd_u64("stats.allocated"), total0);
        CHECK_EQ_U(rd_fmt("stats.classes.%u.%s", j, "allocated"), class0);
        CHECK(alloy_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
        CHECK_EQ_U(rd_u64("thread.tcache.bytes"), 0);
        CHECK_EQ_U(rd_fmt("stats.classes.%u.%s", j, "tcache_bytes"), 0);
        CHECK_EQ_U(rd_u64("stats.allocated"), total0);
    }
    /* large blocks: whole pages (below 1 MiB, one of eight lengths per
     * doubling: 300000 bytes are 74 pages, a span of 80), in large_allocated
     * as well */
    uint64_t total0 = rd_u64("stats.allocated"), large0 = rd_u64("stats.large_allocated");
    void *big[3] = {alloy_malloc(300000), alloy_malloc(300001), alloy_malloc(3u << 20)};
    uint64_t pages = 2 * (80 * 4096) + (3u << 20);
    CHECK_EQ_U(rd_u64("stats.allocated") - total0, pages);
    CHECK_EQ_U(rd_u64("stats.large_allocated") - large0, pages);
    for (int i = 0; i < 3; i++)
        alloy_free(big[i]);
    CHECK_EQ_U(rd_u64("stats.allocated"), total0);
    CHECK_EQ_U(rd_u64("stats.large_allocated"), large0);

    /* thread.heap round trips through every automatic heap, and that
     * thread's allocations land in the heap it names.  Each heap gets a
     * class no thread has freed into yet: a block another heap's thread
     * freed sits in the node's transfer cache, which the node's heaps share
     * (transfer.h), and a miss would take it from there. */
    for (unsigned i = 0; i < EXPECTED_HEAPS; i++) {
        CHECK(alloy_ctl("thread.heap", NULL, NULL, &i, sizeof i) == 0);
        CHECK_EQ_U(rd_uns("thread.heap"), i);
        CHECK_EQ_U(alloy_heap_id(alloy_heap_get_default()), i);
        uint64_t before = rd_fmt("stats.heaps.%u.%s", i, "allocated");
        size_t size = 40000 + 8192 * i; /* classes of 40 KiB and up: unused so far */
        void *p = alloy_malloc(size);
        CHECK_EQ_U(rd_fmt("stats.heaps.%u.%s", i, "allocated") - before,
                   alloy_malloc_usable_size(p));
        alloy_free(p);
    }
    unsigned missing = 250;
    CHECK(alloy_ctl("thread.heap", NULL, NULL, &missing, sizeof missing) == ENOENT);
    CHECK_EQ_U(rd_uns("thread.heap"), EXPECTED_HEAPS - 1);
    return arg;
}

/* "stats.heaps.<i>.x" -> "stats.heaps.0.x" */
static void instantiate(const char *pat, char *out, size_t n) {
    size_t o = 0;
    for (const char *p = pat; *p && o + 2 < n;) {
        if (*p == '<') {
            out[o++] = '0';
            p += 3;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = 0;
}

int main(void) {
    void *warm = alloy_malloc(100); /* something to count */
    make_classes();
    check_settings();
    check_classes();
    alloy_thread_flush();
    check_totals();
    pthread_t t;
    CHECK(pthread_create(&t, NULL, fresh_thread, NULL) == 0);
    pthread_join(t, NULL);
    alloy_thread_flush();
    check_totals();

    /* every name is readable (actions take no value and are run instead) */
    unsigned names = 0;
    for (unsigned k = 0; alloy_ctl_name(k); k++, names++) {
        char name[128];
        instantiate(alloy_ctl_name(k), name, sizeof name);
        size_t len = 0;
        int r = alloy_ctl(name, NULL, &len, NULL, 0);
        if (r == EINVAL && len == 0) { /* an action */
            if (strstr(name, "destroy"))
                continue; /* heap 0 is automatic: tested below */
            CHECK(alloy_ctl(name, NULL, NULL, NULL, 0) == 0);
            continue;
        }
        CHECK(r == 0 && len >= 1 && len <= 8);
        uint64_t value[1] = {0};
        int rr = alloy_ctl(name, value, &len, NULL, 0);
        if (rr != 0)
            fprintf(stderr, "reading %s: %d\n", name, rr);
        CHECK(rr == 0);
    }
    CHECK(names > 60);

    /* values that mean something */
    const char *version;
    size_t len = sizeof version;
    CHECK(alloy_ctl("version", &version, &len, NULL, 0) == 0 &&
          !strcmp(version, ALLOY_VERSION_STRING));
    uint64_t allocated = 0, active = 0, resident = 0, mapped = 0;
    len = sizeof(uint64_t);
    CHECK(alloy_ctl("stats.allocated", &allocated, &len, NULL, 0) == 0);
    CHECK(alloy_ctl("stats.active", &active, &len, NULL, 0) == 0);
    CHECK(alloy_ctl("stats.resident", &resident, &len, NULL, 0) == 0);
    CHECK(alloy_ctl("stats.mapped", &mapped, &len, NULL, 0) == 0);
    CHECK(allocated >= 100 && allocated <= active && active <= resident && resident <= mapped);
    uint64_t size = 0;
    CHECK(alloy_ctl("stats.classes.31.size", &size, &len, NULL, 0) == 0 && size == 384);
    unsigned limit = 0;
    size_t ulen = sizeof limit;
    CHECK(alloy_ctl("stats.classes.31.batch_limit", &limit, &ulen, NULL, 0) == 0 && limit == 682);

    /* writable names round-trip */
    int64_t decay = 250, got = 0;
    size_t ilen = sizeof got;
    CHECK(alloy_ctl("decay_ms", NULL, NULL, &decay, sizeof decay) == 0);
    CHECK(alloy_ctl("decay_ms", &got, &ilen, NULL, 0) == 0 && got == 250);
    decay = -1;
    CHECK(alloy_ctl("decay_ms", NULL, NULL, &decay, sizeof decay) == 0);
    CHECK(alloy_ctl("decay_ms", &got, &ilen, NULL, 0) == 0 && got == -1);
    decay = -7;
    CHECK(alloy_ctl("decay_ms", NULL, NULL, &decay, sizeof decay) == EINVAL);
    const char *pol = "clip", *pol_got = NULL;
    size_t plen = sizeof pol_got;
    CHECK(alloy_ctl("batch_policy", NULL, NULL, &pol, sizeof pol) == 0);
    CHECK(alloy_ctl("batch_policy", &pol_got, &plen, NULL, 0) == 0 && !strcmp(pol_got, "clip"));
    pol = "nonsense";
    CHECK(alloy_ctl("batch_policy", NULL, NULL, &pol, sizeof pol) == EINVAL);
    pol = "guard";
    CHECK(alloy_ctl("batch_policy", NULL, NULL, &pol, sizeof pol) == 0);
    bool on = true, on_got = false;
    size_t blen = sizeof on_got;
    CHECK(alloy_ctl("background_thread", NULL, NULL, &on, sizeof on) == 0);
    CHECK(alloy_ctl("background_thread", &on_got, &blen, NULL, 0) == 0 && on_got);
    on = false;
    CHECK(alloy_ctl("background_thread", NULL, NULL, &on, sizeof on) == 0);
    CHECK(alloy_ctl("background_thread", &on_got, &blen, NULL, 0) == 0 && !on_got);
    uint64_t e1 = 0, e2 = 0, one = 1;
    CHECK(alloy_ctl("epoch", &e1, &len, &one, sizeof one) == 0);
    CHECK(alloy_ctl("epoch", &e2, &len, NULL, 0) == 0 && e2 == e1 + 1);

    /* heaps: create, use, bind, destroy */
    unsigned id = 0, heap_now = 99;
    CHECK(alloy_ctl("heaps.create", &id, &ulen, NULL, 0) == 0 && id > 0);
    char name[64];
    snprintf(name, sizeof name, "stats.heaps.%u.allocated", id);
    CHECK(alloy_ctl(name, &allocated, &len, NULL, 0) == 0 && allocated == 0);
    CHECK(alloy_ctl("thread.heap", NULL, NULL, &id, sizeof id) == 0);
    CHECK(alloy_ctl("thread.heap", &heap_now, &ulen, NULL, 0) == 0 && heap_now == id);
    void *in_heap = alloy_malloc(1000);
    CHECK(alloy_ctl(name, &allocated, &len, NULL, 0) == 0 && allocated >= 1000);
    alloy_free(in_heap);
    unsigned zero = 0;
    CHECK(alloy_ctl("thread.heap", NULL, NULL, &zero, sizeof zero) == 0);
    snprintf(name, sizeof name, "heap.%u.destroy", id);
    CHECK(alloy_ctl(name, NULL, NULL, NULL, 0) == 0);
    CHECK(alloy_ctl(name, NULL, NULL, NULL, 0) == ENOENT);             /* gone */
    CHECK(alloy_ctl("heap.0.destroy", NULL, NULL, NULL, 0) == EINVAL); /* automatic */
    CHECK(alloy_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
    uint64_t tbytes = 1;
    CHECK(alloy_ctl("thread.tcache.bytes", &tbytes, &len, NULL, 0) == 0 && tbytes == 0);

    /* the error codes */
    CHECK(alloy_ctl("no.such.name", &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats", &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats.allocatedx", &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl(NULL, &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats.heaps.200.allocated", &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats.classes.208.size", &size, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats.classes.01.size", &size, &len, NULL, 0) == ENOENT);
    size_t short_len = 4;
    CHECK(alloy_ctl("stats.allocated", &allocated, &short_len, NULL, 0) == EINVAL);
    CHECK(alloy_ctl("decay_ms", NULL, NULL, &decay, 4) == EINVAL);
    CHECK(alloy_ctl("stats.allocated", NULL, NULL, &allocated, sizeof allocated) == EPERM);
    CHECK(alloy_ctl("opt.decay_ms", NULL, NULL, &decay, sizeof decay) == EPERM);
    CHECK(alloy_ctl("version", NULL, NULL, &version, sizeof version) == EPERM);
    CHECK(alloy_ctl("thread.tcache.flush", &allocated, &len, NULL, 0) == EINVAL);
    alloy_free(warm);
    /* every ALLOY_CONF key can be read back as opt.<key> (a ratio in halves) */
    alloy_setting_info_t info;
    unsigned keys = 0;
    for (unsigned k = 0; alloy_setting_describe(k, &info) == 0; k++, keys++) {
        char opt[96];
        size_t optlen = 0;
        snprintf(opt, sizeof opt, "opt.%s", info.name);
        int r = alloy_ctl(opt, NULL, &optlen, NULL, 0);
        if (r == ENOENT) {
            snprintf(opt, sizeof opt, "opt.%s_halves", info.name);
            r = alloy_ctl(opt, NULL, &optlen, NULL, 0);
        }
        if (r != 0)
            fprintf(stderr, "setting %s has no opt. name\n", info.name);
        CHECK(r == 0 && optlen > 0);
    }
    CHECK(keys >= 14);
    return CHECK_DONE();
}
