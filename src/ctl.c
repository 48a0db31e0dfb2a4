/* ctl.c - alloy_ctl: one plain table of names.  Each entry is either a
 * counter read out of the stats structs by offset, or a pair of small
 * get/set functions.  Indices in names ("stats.heaps.3.allocated") match
 * "<i>" and "<j>" in the patterns. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "conf.h"
#include "heap.h"
#include "init.h"
#include "tcache.h"

typedef enum { T_U64, T_I64, T_UNS, T_BOOL, T_STR, T_VOID } ctl_type_t;
typedef enum { S_FUNC, S_TOTAL, S_HEAP, S_CLASS } ctl_src_t;

typedef struct ctl_entry {
    const char *name;
    ctl_type_t type;
    ctl_src_t src;
    size_t offset;                                 /* S_TOTAL/S_HEAP/S_CLASS */
    int (*get)(const unsigned *idx, void *out);    /* S_FUNC; NULL: write-only */
    int (*set)(const unsigned *idx, const void *in); /* NULL: read-only */
} ctl_entry_t;

static const size_t type_size[] = {sizeof(uint64_t), sizeof(int64_t), sizeof(unsigned),
                                   sizeof(bool), sizeof(const char *), 0};

static uint64_t epoch = 1;

/* ---- functions behind names ---- */

#define GETTER(fn, T, expr)                              \
    static int fn(const unsigned *idx, void *out) {      \
        (void)idx;                                       \
        *(T *)out = (expr);                              \
        return 0;                                        \
    }
GETTER(get_version, const char *, ALLOY_VERSION_STRING)
GETTER(get_epoch, uint64_t, epoch)
GETTER(get_decay, int64_t, ay_conf.decay_ms)
GETTER(get_policy, const char *, ay_policy_name(ay_conf.batch.policy))
GETTER(get_bg, bool, ay_background_running())
GETTER(opt_policy, const char *, ay_policy_name(ay_conf.batch.policy))
GETTER(opt_budget, uint64_t, ay_conf.batch.byte_budget)
GETTER(opt_cap, uint64_t, ay_conf.batch.object_cap)
GETTER(opt_threshold, unsigned, ay_conf.return_k_halves)
GETTER(opt_tcache, bool, ay_conf.tcache)
GETTER(opt_tcache_max, uint64_t, ay_conf.tcache_max_bytes)
GETTER(opt_decay, int64_t, ay_conf.decay_ms)
GETTER(opt_heaps, unsigned, ay_heaps_auto)
GETTER(opt_bg, bool, ay_conf.background_thread)
GETTER(opt_junk, bool, ay_conf.junk)
GETTER(opt_zero, bool, ay_conf.zero)
GETTER(opt_abort, bool, ay_conf.abort_on_error)
GETTER(opt_stats_print, bool, ay_conf.stats_print)
GETTER(get_heaps_count, unsigned, ay_heaps_auto)
#undef GETTER

static int set_epoch(const unsigned *idx, const void *in) {
    (void)in; /* counters are read live: the epoch only counts refreshes */
    __atomic_add_fetch(&epoch, 1, __ATOMIC_RELAXED);
    return 0;
}

static int set_decay(const unsigned *idx, const void *in) {
    int64_t v = *(const int64_t *)in;
    if (v < -1)
        return EINVAL;
    ay_conf.decay_ms = v;
    return 0;
}

static int set_policy(const unsigned *idx, const void *in) {
    const char *s = *(const char *const *)in;
    ay_batch_policy_t p;
    if (!s || ay_policy_parse(s, strlen(s), &p) != 0)
        return EINVAL;
    ay_conf.batch.policy = p; /* takes effect at the next batch growth */
    return 0;
}

static int set_bg(const unsigned *idx, const void *in) {
    if (*(const bool *)in)
        return ay_background_start() ? EAGAIN : 0;
    ay_background_stop();
    return 0;
}

static int do_purge(const unsigned *idx, const void *in) {
    alloy_purge();
    return 0;
}

static int do_flush(const unsigned *idx, const void *in) {
    alloy_thread_flush();
    return 0;
}

static int get_thread_bytes(const unsigned *idx, void *out) {
    ay_tcache_t *tc = ay_tcache_get();
    uint64_t sum = 0;
    for (unsigned b = 1; tc && b < AY_NUM_BINS; b++)
        sum += ay_tcache_bytes(tc, b);
    *(uint64_t *)out = sum;
    return 0;
}

static int get_thread_heap(const unsigned *idx, void *out) {
    *(unsigned *)out = alloy_heap_id(alloy_heap_get_default());
    return 0;
}

static int set_thread_heap(const unsigned *idx, const void *in) {
    alloy_heap_t *h = alloy_heap_from_id(*(const unsigned *)in);
    return h ? alloy_heap_set_default(h) : ENOENT;
}

static int heaps_create(const unsigned *idx, void *out) {
    alloy_heap_t *h = alloy_heap_create();
    if (!h)
        return EAGAIN;
    *(unsigned *)out = alloy_heap_id(h);
    return 0;
}

static int heap_destroy(const unsigned *idx, const void *in) {
    return alloy_heap_destroy(alloy_heap_from_id(idx[0]));
}

static int heap_purge(const unsigned *idx, const void *in) {
    ay_heap_t *h = ay_heap_get(idx[0]);
    ay_pageheap_purge(&h->pages, 1);
    return 0;
}

/* ---- the table ---- */

#define TOTAL(n, f) {"stats." n, T_U64, S_TOTAL, offsetof(alloy_stats_t, f), NULL, NULL}
#define HEAP(n, f) {"stats.heaps.<i>." n, T_U64, S_HEAP, offsetof(alloy_stats_t, f), NULL, NULL}
#define CLASS(n, f) {"stats.classes.<j>." n, T_U64, S_CLASS, offsetof(alloy_class_stats_t, f), NULL, NULL}
#define FUNC(n, t, g, s) {n, t, S_FUNC, 0, g, s}
#define BOTH(n, f) TOTAL(n, f), HEAP(n, f)

static const ctl_entry_t table[] = {
    FUNC("version", T_STR, get_version, NULL),
    FUNC("epoch", T_U64, get_epoch, set_epoch),
    FUNC("purge", T_VOID, NULL, do_purge),
    FUNC("decay_ms", T_I64, get_decay, set_decay),
    FUNC("batch_policy", T_STR, get_policy, set_policy),
    FUNC("background_thread", T_BOOL, get_bg, set_bg),
    BOTH("allocated", allocated),
    BOTH("active", active),
    BOTH("resident", resident),
    BOTH("mapped", mapped),
    BOTH("retained", pageheap_purged_bytes),
    BOTH("metadata", metadata),
    BOTH("peak_active", peak_active),
    BOTH("large_allocated", large_allocated),
    BOTH("tcache_bytes", tcache_bytes),
    BOTH("central_bytes", central_bytes),
    BOTH("pageheap_free_bytes", pageheap_free_bytes),
    BOTH("slow_path_calls", slow_path_calls),
    BOTH("short_fetches", short_fetches),
    BOTH("objects_fetched", objects_fetched),
    BOTH("objects_released", objects_released),
    BOTH("spans_allocated", spans_allocated),
    BOTH("spans_freed", spans_freed),
    BOTH("central_lock_contended", central_lock_contended),
    BOTH("purges", purges),
    BOTH("threads", threads_live),
    CLASS("size", class_size),
    {"stats.classes.<j>.batch_limit", T_UNS, S_CLASS, offsetof(alloy_class_stats_t, batch_limit), NULL, NULL},
    {"stats.classes.<j>.terminal_batch", T_UNS, S_CLASS, offsetof(alloy_class_stats_t, terminal_batch), NULL, NULL},
    CLASS("slow_path_calls", slow_path_calls),
    CLASS("short_fetches", short_fetches),
    CLASS("objects_fetched", objects_fetched),
    CLASS("objects_released", objects_released),
    CLASS("spans_allocated", spans_allocated),
    CLASS("spans_freed", spans_freed),
    CLASS("lock_contended", lock_contended),
    CLASS("tcache_bytes", tcache_bytes),
    CLASS("central_bytes", central_bytes),
    CLASS("allocated", allocated),
    FUNC("opt.batch_policy", T_STR, opt_policy, NULL),
    FUNC("opt.batch_budget", T_U64, opt_budget, NULL),
    FUNC("opt.batch_cap", T_U64, opt_cap, NULL),
    FUNC("opt.return_threshold_halves", T_UNS, opt_threshold, NULL),
    FUNC("opt.tcache", T_BOOL, opt_tcache, NULL),
    FUNC("opt.tcache_max_bytes", T_U64, opt_tcache_max, NULL),
    FUNC("opt.decay_ms", T_I64, opt_decay, NULL),
    FUNC("opt.heaps", T_UNS, opt_heaps, NULL),
    FUNC("opt.background_thread", T_BOOL, opt_bg, NULL),
    FUNC("opt.junk", T_BOOL, opt_junk, NULL),
    FUNC("opt.zero", T_BOOL, opt_zero, NULL),
    FUNC("opt.abort_on_error", T_BOOL, opt_abort, NULL),
    FUNC("opt.stats_print", T_BOOL, opt_stats_print, NULL),
    FUNC("thread.tcache.flush", T_VOID, NULL, do_flush),
    FUNC("thread.tcache.bytes", T_U64, get_thread_bytes, NULL),
    FUNC("thread.heap", T_UNS, get_thread_heap, set_thread_heap),
    FUNC("heaps.count", T_UNS, get_heaps_count, NULL),
    FUNC("heaps.create", T_UNS, heaps_create, NULL),
    FUNC("heap.<i>.destroy", T_VOID, NULL, heap_destroy),
    FUNC("heap.<i>.purge", T_VOID, NULL, heap_purge),
};
#define NENTRIES (sizeof table / sizeof table[0])

ALLOY_API const char *alloy_ctl_name(unsigned k) {
    return k < NENTRIES ? table[k].name : NULL;
}

/* Does name match pattern?  Numbers standing for <i>/<j> go to idx[]. */
static bool match(const char *pat, const char *name, unsigned *idx) {
    unsigned n = 0;
    while (*pat) {
        if (*pat == '<') {
            uint64_t v = 0;
            const char *start = name;
            while (*name >= '0' && *name <= '9' && v < 1u << 20)
                v = v * 10 + (uint64_t)(*name++ - '0');
            if (name == start || (name - start > 1 && *start == '0') || v >= 1u << 20)
                return false;
            idx[n < 2 ? n++ : 1] = (unsigned)v;
            pat += 3; /* "<i>" */
            continue;
        }
        if (*pat++ != *name++)
            return false;
    }
    return *name == 0;
}

/* Does the index in the name name something that exists? */
static bool index_ok(const ctl_entry_t *e, const unsigned *idx) {
    if (e->src == S_CLASS)
        return idx[0] < AY_NUM_CLASSES;
    if (e->src == S_HEAP || strstr(e->name, "<i>"))
        return ay_heap_get(idx[0]) != NULL;
    return true;
}

static int read_value(const ctl_entry_t *e, const unsigned *idx, void *out) {
    if (e->src == S_FUNC)
        return e->get(idx, out);
    if (e->src == S_CLASS) {
        alloy_class_stats_t c = {.size = sizeof c};
        int err = alloy_class_stats_read(idx[0], &c);
        memcpy(out, (const char *)&c + e->offset, type_size[e->type]);
        return err;
    }
    alloy_stats_t s = {.size = sizeof s};
    int err = e->src == S_TOTAL ? alloy_stats_read(&s) : alloy_heap_stats_read(idx[0], &s);
    memcpy(out, (const char *)&s + e->offset, type_size[e->type]);
    return err;
}

ALLOY_API int alloy_ctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
    if (!name)
        return ENOENT;
    ay_ensure_init();
    unsigned idx[2] = {0, 0};
    const ctl_entry_t *e = NULL;
    for (size_t k = 0; k < NENTRIES && !e; k++)
        if (match(table[k].name, name, idx))
            e = &table[k];
    if (!e || !index_ok(e, idx))
        return ENOENT;
    size_t size = type_size[e->type];
    bool reading = oldlenp != NULL, writing = newp != NULL || newlen != 0;
    if (e->type == T_VOID) { /* an action: no value either way */
        if (reading || writing)
            return EINVAL;
        return e->set(idx, NULL);
    }
    if (writing) {
        if (!e->set || e->src != S_FUNC)
            return EPERM;
        if (!newp || newlen != size)
            return EINVAL;
    }
    if (reading) {
        if (!oldp) {
            *oldlenp = size;
        } else {
            if (*oldlenp != size || (!e->get && e->src == S_FUNC))
                return EINVAL;
            char value[sizeof(uint64_t)];
            int err = read_value(e, idx, value);
            if (err)
                return err;
            memcpy(oldp, value, size);
        }
    }
    return writing ? e->set(idx, newp) : 0;
}
