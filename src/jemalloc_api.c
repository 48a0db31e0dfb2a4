/* SPDX-License-Identifier: MIT */
/* jemalloc_api.c - jemalloc's non-standard API under its own names
 * (include/alloy/jemalloc.h), so that programs written for jemalloc (Redis,
 * for one) get alloy's answers instead of silently calling a jemalloc that
 * manages none of their memory.
 *
 * The *allocx family sits on the front end (alloc.h).  Invariant:
 * nallocx(n, flags) is sallocx(mallocx(n, flags)) for every block but the
 * heap profiler's and guard_sample's samples, which are whole pages.
 *
 * mallctl answers jemalloc's names from the table below, then every
 * alloy_ctl name.  A jemalloc name that means what an alloy name means is an
 * alias of it: alloy_ctl's entry gives the value, so no figure has two
 * definitions; the table's own functions are for what alloy_ctl has no
 * name for (constants, jemalloc's types, "all arenas").  The arguments are
 * checked by jemalloc's rules, not alloy_ctl's: an action with any argument
 * is EPERM, a write to a read-only name EPERM, a length that is not the
 * value's EINVAL (a short read still copies what fits), and a value is
 * written only when newp is not NULL.
 *
 * A MIB has one number per component of the name: the number itself for
 * an index ("arena.3.purge": 3), else the component's rank among the
 * distinct components that follow the same prefix, in table order.
 * mallctlbymib rebuilds the name from it and calls mallctl, so a MIB saves
 * nothing over a name here; it exists so that jemalloc's programs run.
 */
#include <errno.h>
#include <string.h>

#include "aligned.h"
#include "alloc.h"
#include "alloy.h"
#include "alloy/ctl.h"
#include "alloy/heap.h"
#include "alloy/jemalloc.h"
#include "conf.h"
#include "free.h"
#include "ctl.h"
#include "guard.h"
#include "heap.h"
#include "init.h"
#include "large.h"
#include "prof.h"
#include "prof_out.h"
#include "prof_store.h"
#include "realloc.h"

/* ---- flags ---- */

#define JM_LG_ALIGN_MASK 0x3f
#define JM_TCACHE_SHIFT 8
#define JM_TCACHE_MASK 0xfffu
#define JM_ARENA_SHIFT 20

static size_t jemalloc_align(int flags) {
    unsigned lg = (unsigned)flags & JM_LG_ALIGN_MASK;
    return lg ? (size_t)1 << lg : 0;
}

/* MALLOCX_TCACHE_NONE, or an explicit cache (alloy has none): no cache. */
static bool jemalloc_uncached(int flags) {
    return ((unsigned)flags >> JM_TCACHE_SHIFT & JM_TCACHE_MASK) != 0;
}

/* The heap MALLOCX_ARENA names: 0 with *h NULL when there is no such flag,
 * EINVAL when no heap has that id. */
static int jemalloc_heap(int flags, ay_heap_t **h) {
    unsigned a = (unsigned)flags >> JM_ARENA_SHIFT;
    *h = a ? ay_heap_use(a - 1) : NULL;
    return a && !*h ? EINVAL : 0;
}

/* Can a block of `size` bytes aligned to align (0: none) exist at all? */
static bool jemalloc_possible(size_t size, size_t align) {
    if (align > AY_MAX_REQUEST)
        return false;
    return size <= AY_MAX_REQUEST - AY_PAGE_SIZE - align;
}

/* A small block of heap h, without the thread cache (sampled like
 * ay_alloc_in's uncached blocks). */
static void *jemalloc_uncached_small(ay_heap_t *h, size_t request) {
    void *p = ay_prof_count(request) ? ay_alloc_sampled(h, request, 1, false)
                                     : ay_alloc_uncached(h, request, false);
    return p ? p : ay_oom();
}

static void *jemalloc_alloc(size_t size, int flags) {
    ay_heap_t *h;
    ay_ensure_init();
    if (jemalloc_heap(flags, &h)) {
        errno = EINVAL;
        return NULL;
    }
    size_t align = jemalloc_align(flags);
    bool uncached = jemalloc_uncached(flags), zero = flags & MALLOCX_ZERO;
    if (align <= 8 && !uncached && !zero)
        return ay_alloc_in(h, size);
    if (!jemalloc_possible(size, align))
        return ay_oom();
    size_t request = align > 8 ? ay_aligned_request(size, align) : size;
    if ((request || align <= 8) && ay_size_bin(request)) {
        void *p = uncached ? jemalloc_uncached_small(h ? h : ay_tcache_heap(), request)
                           : ay_alloc_in(h, request);
        if (p && zero) /* the whole block: a growing rallocx relies on it */
            memset(p, 0, alloy_malloc_usable_size(p));
        return p;
    }
    size_t rounded = align > 8 ? (size + align - 1) & ~(align - 1) : size;
    ay_heap_t *in = h ? h : ay_tcache_heap();
    size_t a = align ? align : 1;
    void *p = ay_prof_count(rounded) ? ay_alloc_sampled(in, rounded, a, zero)
                                     : ay_large_alloc(in, rounded, a, zero);
    return p ? p : ay_oom();
}

/* The real size of block p, checked as free checks it. */
static size_t jemalloc_usable(const void *p, const char *fn) {
    if (AY_UNLIKELY(ay_guard_owns(p)))
        return ay_guard_usable(p, fn);
    ay_span_t *s = ay_block_span(p, fn);
    return ay_block_usable(s, p);
}

ALLOY_API void *mallocx(size_t size, int flags) { return jemalloc_alloc(size, flags); }

ALLOY_API void *rallocx(void *ptr, size_t size, int flags) {
    if (!ptr)
        return jemalloc_alloc(size, flags);
    size = size ? size : 1; /* never realloc's free */
    ay_heap_t *h;
    if (jemalloc_heap(flags, &h)) {
        errno = EINVAL;
        return NULL;
    }
    size_t align = jemalloc_align(flags);
    bool zero = flags & MALLOCX_ZERO;
    if (align <= 8 && !zero && !jemalloc_uncached(flags))
        return ay_realloc_in(h, ptr, size);
    size_t old = jemalloc_usable(ptr, "rallocx()");
    if (size <= old && size > old / 2 && !((uintptr_t)ptr & (align ? align - 1 : 0)))
        return ptr; /* nothing new to zero */
    void *q = jemalloc_alloc(size, flags);
    if (!q)
        return NULL; /* ptr is untouched */
    memcpy(q, ptr, old < size ? old : size);
    alloy_free(ptr);
    return q;
}

ALLOY_API size_t xallocx(void *ptr, size_t size, size_t extra, int flags) {
    return jemalloc_usable(ptr, "xallocx()"); /* in place is where it is */
}

ALLOY_API size_t sallocx(const void *ptr, int flags) { return alloy_malloc_usable_size(ptr); }

ALLOY_API void dallocx(void *ptr, int flags) { alloy_free(ptr); }

ALLOY_API void sdallocx(void *ptr, size_t size, int flags) { alloy_free_sized(ptr, size); }

ALLOY_API size_t nallocx(size_t size, int flags) {
    size_t align = jemalloc_align(flags);
    if (!jemalloc_possible(size, align))
        return 0;
    ay_ensure_init();
    size_t request = align > 8 ? ay_aligned_request(size, align) : size;
    unsigned b = request || align <= 8 ? ay_size_bin(request) : 0;
    if (b)
        return ay_bin_size[b] - AY_TAG_BYTES;
    size_t rounded = align > 8 ? (size + align - 1) & ~(align - 1) : size;
    size_t pages = (rounded + AY_PAGE_SIZE - 1) >> AY_PAGE_SHIFT;
    if (align <= AY_PAGE_SIZE && pages <= AY_LARGE_MAX_PAGES)
        pages = ay_pageheap_large_pages(pages); /* the page heap's lengths (pageheap.h) */
    return AY_PAGES_BYTES(pages ? pages : 1);
}

/* ---- mallctl's own names ---- */

typedef enum { J_U64, J_UNS, J_BOOL, J_STR, J_VOID } jemalloc_type_t;
static const size_t jemalloc_type_size[] = {sizeof(uint64_t), sizeof(unsigned), sizeof(bool),
                                            sizeof(const char *), 0};

typedef struct jemalloc_entry {
    const char *name;  /* jemalloc's pattern; <i> is a number */
    const char *alias; /* alloy_ctl's name for the same thing (its <i> filled in), or NULL */
    jemalloc_type_t type;
    int (*get)(const unsigned *idx, void *out);      /* NULL: not readable */
    int (*set)(const unsigned *idx, const void *in); /* NULL: read-only */
    bool (*valid)(const unsigned *idx);              /* does the index exist?  NULL: yes */
    bool write_first; /* a read and a write in one call: the read sees the new value */
} jemalloc_entry_t;

#define CONST(fn, T, v)                                                                            \
    static int fn(const unsigned *idx, void *out) {                                                \
        *(T *)out = (v);                                                                           \
        return 0;                                                                                  \
    }
CONST(get_narenas, unsigned, ay_heaps_limit)
CONST(get_nbins, unsigned, AY_NUM_CLASSES)
CONST(get_page, uint64_t, AY_PAGE_SIZE)
CONST(get_quantum, uint64_t, 16)
CONST(get_tcache_max, uint64_t, AY_MAX_BINNED_SIZE)
CONST(get_true, bool, true)
CONST(get_false, bool, false)
CONST(get_debug, bool, ay_debug >= 3)
CONST(get_empty, const char *, "")
CONST(get_junk, const char *, ay_conf.junk ? "true" : "false")
CONST(get_lg_prof_sample, uint64_t, 63 - (unsigned)__builtin_clzll(ay_conf.prof_sample | 1))
CONST(get_prof_lg_sample, uint64_t, 63 - (unsigned)__builtin_clzll(ay_prof_sample_mean() | 1))
#undef CONST

/* alloy_ctl's name `pattern` with idx's numbers in place of <i> and <j>;
 * false when it does not fit in cap bytes. */
static bool jemalloc_fill(const char *pattern, const unsigned *idx, char *out, size_t cap) {
    size_t n = 0;
    unsigned used = 0;
    for (const char *p = pattern; *p; p++) {
        if (*p == '<') {
            char digits[12];
            unsigned v = idx[used < 2 ? used++ : 1], k = 0;
            do
                digits[k++] = (char)('0' + v % 10);
            while ((v /= 10) != 0);
            while (k && n + 1 < cap)
                out[n++] = digits[--k];
            p += 2; /* "<i>" */
            continue;
        }
        if (n + 1 >= cap)
            return false;
        out[n++] = *p;
    }
    out[n] = 0;
    return n + 1 < cap;
}

static bool arena_any(const unsigned *idx) {
    return idx[0] == MALLCTL_ARENAS_ALL || idx[0] == ay_heaps_limit || ay_heap_exists(idx[0]);
}

static bool arena_exists(const unsigned *idx) { return ay_heap_exists(idx[0]); }

static int arena_purge(const unsigned *idx, const void *in) {
    if (idx[0] == MALLCTL_ARENAS_ALL || idx[0] == ay_heaps_limit) {
        alloy_thread_flush(); /* the caller's cached blocks may free whole spans */
        alloy_purge();
        return 0;
    }
    char name[40];
    jemalloc_fill("heap.<i>.purge", idx, name, sizeof name);
    return alloy_ctl(name, NULL, NULL, NULL, 0);
}

/* jemalloc says EFAULT for an automatic arena; alloy_ctl says EINVAL. */
static int arena_destroy(const unsigned *idx, const void *in) {
    char name[40];
    jemalloc_fill("heap.<i>.destroy", idx, name, sizeof name);
    int err = alloy_ctl(name, NULL, NULL, NULL, 0);
    return err == EINVAL ? EFAULT : err;
}

static int get_thread_arena(const unsigned *idx, void *out) {
    size_t len = sizeof(unsigned);
    return alloy_ctl("thread.heap", out, &len, NULL, 0);
}

/* jemalloc says EFAULT for an arena that does not exist. */
static int set_thread_arena(const unsigned *idx, const void *in) {
    int err = alloy_ctl("thread.heap", NULL, NULL, (void *)in, sizeof(unsigned));
    return err == ENOENT ? EFAULT : err;
}

/* epoch: alloy's counter, and a write refreshes (it counts refreshes) */
static int get_epoch(const unsigned *idx, void *out) {
    size_t len = sizeof(uint64_t);
    return alloy_ctl("epoch", out, &len, NULL, 0);
}

static int set_epoch(const unsigned *idx, const void *in) {
    return alloy_ctl("epoch", NULL, NULL, (void *)in, sizeof(uint64_t));
}

/* jemalloc's prof.dump and prof.reset are write-only, and ENOENT when
 * profiling is off. */
static int prof_dump(const unsigned *idx, const void *in) {
    if (!ay_prof_enabled())
        return ENOENT;
    return ay_prof_dump(in ? *(const char *const *)in : NULL);
}

static int prof_reset(const unsigned *idx, const void *in) {
    if (!ay_prof_enabled())
        return ENOENT;
    if (in) {
        uint64_t lg = *(const uint64_t *)in;
        int err = lg < 63 ? ay_prof_set_sample_mean((uint64_t)1 << lg) : EINVAL;
        if (err)
            return err;
    }
    ay_prof_reset();
    return 0;
}

#define ALIAS(n, a)                                                                                \
    { n, a, J_VOID, NULL, NULL, NULL, false }
#define GET(n, t, g)                                                                               \
    { n, NULL, t, g, NULL, NULL, false }

static const jemalloc_entry_t jemalloc_table[] = {
    {"epoch", NULL, J_U64, get_epoch, set_epoch, NULL, true},
    ALIAS("opt.abort", "opt.abort_on_error"),
    ALIAS("opt.narenas", "opt.heaps"),
    ALIAS("opt.dirty_decay_ms", "opt.decay_ms"),
    ALIAS("arenas.dirty_decay_ms", "decay_ms"),
    ALIAS("arenas.create", "heaps.create"),
    ALIAS("arenas.bin.<i>.size", "stats.classes.<i>.size"),
    GET("arenas.narenas", J_UNS, get_narenas),
    GET("arenas.nbins", J_UNS, get_nbins),
    GET("arenas.page", J_U64, get_page),
    GET("arenas.quantum", J_U64, get_quantum),
    GET("arenas.tcache_max", J_U64, get_tcache_max),
    GET("opt.tcache_max", J_U64, get_tcache_max),
    GET("opt.junk", J_STR, get_junk),
    GET("opt.lg_prof_sample", J_U64, get_lg_prof_sample),
    GET("prof.lg_sample", J_U64, get_prof_lg_sample),
    GET("config.cache_oblivious", J_BOOL, get_false),
    GET("config.debug", J_BOOL, get_debug),
    GET("config.fill", J_BOOL, get_true),
    GET("config.lazy_lock", J_BOOL, get_false),
    GET("config.malloc_conf", J_STR, get_empty),
    GET("config.prof", J_BOOL, get_true),
    GET("config.prof_libgcc", J_BOOL, get_true),
    GET("config.prof_libunwind", J_BOOL, get_false),
    GET("config.stats", J_BOOL, get_true),
    GET("config.utrace", J_BOOL, get_false),
    GET("config.xmalloc", J_BOOL, get_false),
    {"arena.<i>.purge", NULL, J_VOID, NULL, arena_purge, arena_any, false},
    {"arena.<i>.destroy", NULL, J_VOID, NULL, arena_destroy, arena_exists, false},
    {"thread.arena", NULL, J_UNS, get_thread_arena, set_thread_arena, NULL, false},
    {"prof.dump", NULL, J_STR, NULL, prof_dump, NULL, false},
    {"prof.reset", NULL, J_U64, NULL, prof_reset, NULL, false},
};
#define JEMALLOC_NENTRIES (sizeof jemalloc_table / sizeof jemalloc_table[0])

/* ---- mallctl ---- */

/* What a name stands for: one of the table's entries (e), or an alloy_ctl
 * name (e NULL, `name`). */
typedef struct jemalloc_target {
    const jemalloc_entry_t *e;
    unsigned idx[2];
    char name[96];
    size_t size; /* of the value; 0 for an action */
    bool readable, writable;
} jemalloc_target_t;

static int jemalloc_resolve(const char *name, jemalloc_target_t *t) {
    memset(t, 0, sizeof *t);
    const jemalloc_entry_t *e = NULL;
    for (unsigned k = 0; k < JEMALLOC_NENTRIES && !e; k++)
        if (ay_ctl_match(jemalloc_table[k].name, name, t->idx))
            e = &jemalloc_table[k];
    if (e && !e->alias) {
        if (e->valid && !e->valid(t->idx))
            return ENOENT;
        t->e = e;
        t->size = jemalloc_type_size[e->type];
        t->readable = e->get != NULL;
        t->writable = e->set != NULL;
        return 0;
    }
    if (e ? !jemalloc_fill(e->alias, t->idx, t->name, sizeof t->name)
          : strlen(name) >= sizeof t->name)
        return ENOENT;
    if (!e)
        strcpy(t->name, name);
    unsigned k, idx[2];
    alloy_ctl_info_t info;
    if (ay_ctl_lookup(t->name, &k, idx) || alloy_ctl_describe(k, &info))
        return ENOENT;
    t->size = ay_ctl_value_size(k);
    t->readable = t->size != 0;
    t->writable = info.writable;
    return 0;
}

/* Read t's value into value (t->size bytes), then write newp if given. */
static int jemalloc_access(const jemalloc_target_t *t, void *value, bool read, void *newp) {
    if (t->e && t->e->write_first) {
        int err = newp ? t->e->set(t->idx, newp) : 0;
        return err ? err : read ? t->e->get(t->idx, value) : 0;
    }
    if (t->e) {
        int err = read ? t->e->get(t->idx, value) : 0;
        return err ? err : newp ? t->e->set(t->idx, newp) : 0;
    }
    size_t len = t->size;
    return alloy_ctl(t->name, read ? value : NULL, read ? &len : NULL, newp, newp ? t->size : 0);
}

ALLOY_API int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen) {
    jemalloc_target_t t;
    if (!name || jemalloc_resolve(name, &t))
        return ENOENT;
    if (t.size == 0) { /* an action */
        if (oldp || oldlenp || newp || newlen)
            return EPERM;
        return t.e ? t.e->set(t.idx, NULL) : alloy_ctl(t.name, NULL, NULL, NULL, 0);
    }
    if ((!t.writable && (newp || newlen)) || (!t.readable && (oldp || oldlenp)))
        return EPERM;
    if (!t.readable && !newp) /* a write-only name run without a value */
        return t.e->set(t.idx, NULL);
    if (newp && newlen != t.size)
        return EINVAL;
    bool read = oldp && oldlenp;
    char value[sizeof(uint64_t)];
    if (read && *oldlenp != t.size) { /* copy what fits, and say so */
        int err = jemalloc_access(&t, value, true, NULL);
        size_t n = *oldlenp < t.size ? *oldlenp : t.size;
        if (!err)
            memcpy(oldp, value, n);
        *oldlenp = n;
        return err ? err : EINVAL;
    }
    int err = jemalloc_access(&t, value, read, newp);
    if (!err && read)
        memcpy(oldp, value, t.size);
    return err;
}

/* ---- MIBs ---- */

/* The k-th pattern mallctl knows (jemalloc's table, then alloy_ctl's names
 * that the table does not shadow); "" for one to skip, NULL past the end. */
static const char *jemalloc_pattern(unsigned k) {
    if (k < JEMALLOC_NENTRIES)
        return jemalloc_table[k].name;
    const char *p = alloy_ctl_name(k - (unsigned)JEMALLOC_NENTRIES);
    for (unsigned j = 0; p && j < JEMALLOC_NENTRIES; j++)
        if (!strcmp(p, jemalloc_table[j].name))
            return "";
    return p;
}

/* Component d of dotted s: its start and length; false when s has fewer. */
static bool jemalloc_component(const char *s, unsigned d, const char **c, size_t *len) {
    for (; d > 0; d--) {
        s = strchr(s, '.');
        if (!s++)
            return false;
    }
    const char *dot = strchr(s, '.');
    *c = s;
    *len = dot ? (size_t)(dot - s) : strlen(s);
    return true;
}

static bool jemalloc_is_index(const char *c, size_t len) { return len == 3 && c[0] == '<'; }

/* Does pattern p's component match name component c (a number for <i>)? */
static bool jemalloc_same(const char *p, size_t plen, const char *c, size_t len) {
    if (jemalloc_is_index(p, plen)) {
        for (size_t i = 0; i < len; i++)
            if (c[i] < '0' || c[i] > '9')
                return false;
        return len > 0 && len <= 7;
    }
    return plen == len && !memcmp(p, c, len);
}

/* Does pattern p begin with the first d components of name? */
static bool jemalloc_prefix(const char *p, const char *name, unsigned d) {
    for (unsigned i = 0; i < d; i++) {
        const char *pc, *c;
        size_t plen, len;
        if (!jemalloc_component(p, i, &pc, &plen) || !jemalloc_component(name, i, &c, &len) ||
            !jemalloc_same(pc, plen, c, len))
            return false;
    }
    return true;
}

/* The children of name's first d components (the patterns that start
 * with them and have a component d): whether one is an index (*index), and
 * the distinct named ones, ranked by first appearance.  Given a component
 * (rank < 0, *want and *wlen), it returns that component's rank; given a
 * rank, it sets *want and *wlen to the component of that rank and returns
 * the rank; -1 when there is none. */
#define JEMALLOC_MAX_CHILDREN 256
static long jemalloc_child(const char *name, unsigned d, const char **want, size_t *wlen, long rank,
                           bool *index) {
    const char *seen[JEMALLOC_MAX_CHILDREN];
    size_t seen_len[JEMALLOC_MAX_CHILDREN];
    unsigned n = 0;
    *index = false;
    for (unsigned k = 0; n < JEMALLOC_MAX_CHILDREN; k++) {
        const char *p = jemalloc_pattern(k), *c;
        size_t len;
        if (!p)
            break;
        if (!*p || !jemalloc_prefix(p, name, d) || !jemalloc_component(p, d, &c, &len))
            continue;
        if (jemalloc_is_index(c, len)) {
            *index = true;
            continue;
        }
        bool dup = false;
        for (unsigned j = 0; j < n && !dup; j++)
            dup = seen_len[j] == len && !memcmp(seen[j], c, len);
        if (dup)
            continue;
        if (rank < 0 && len == *wlen && !memcmp(c, *want, len))
            return n;
        if (rank == (long)n) {
            *want = c;
            *wlen = len;
            return n;
        }
        seen[n] = c;
        seen_len[n++] = len;
    }
    return -1;
}

ALLOY_API int mallctlnametomib(const char *name, size_t *mibp, size_t *miblenp) {
    if (!name || !mibp || !miblenp)
        return EINVAL;
    ay_ensure_init();
    size_t depth = 0;
    for (unsigned d = 0; depth < *miblenp; d++) {
        const char *c;
        size_t len;
        bool index;
        if (!jemalloc_component(name, d, &c, &len))
            break;
        long rank = jemalloc_child(name, d, &c, &len, -1, &index);
        if (rank >= 0) {
            mibp[d] = (size_t)rank;
        } else if (index && jemalloc_same("<i>", 3, c, len)) {
            mibp[d] = 0;
            for (size_t i = 0; i < len; i++)
                mibp[d] = mibp[d] * 10 + (size_t)(c[i] - '0');
        } else {
            return ENOENT;
        }
        depth++;
    }
    const char *c = NULL;
    size_t len = 0;
    jemalloc_target_t t;
    bool index;
    /* a whole name must exist (its index too), unless it is a prefix */
    if (!jemalloc_component(name, (unsigned)depth, &c, &len) && jemalloc_resolve(name, &t) &&
        jemalloc_child(name, (unsigned)depth, &c, &len, 0, &index) < 0 && !index)
        return ENOENT;
    *miblenp = depth;
    return 0;
}

ALLOY_API int mallctlbymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
                           void *newp, size_t newlen) {
    char name[128];
    size_t n = 0;
    if (!mib || miblen == 0)
        return ENOENT;
    name[0] = 0;
    for (unsigned d = 0; d < miblen; d++) {
        const char *c = NULL;
        size_t len = 0;
        bool index;
        char digits[24];
        if (jemalloc_child(name, d, &c, &len, (long)mib[d], &index) < 0) {
            if (!index || mib[d] >= 1u << 20)
                return ENOENT;
            unsigned v = (unsigned)mib[d], k = sizeof digits;
            do
                digits[--k] = (char)('0' + v % 10);
            while ((v /= 10) != 0);
            c = digits + k;
            len = sizeof digits - k;
        }
        if (n + len + 2 > sizeof name)
            return ENOENT;
        if (d)
            name[n++] = '.';
        memcpy(name + n, c, len);
        n += len;
        name[n] = 0;
    }
    return mallctl(name, oldp, oldlenp, newp, newlen);
}

/* ---- malloc_stats_print ---- */

/* jemalloc's callback takes NUL-terminated text: alloy's report goes
 * through this buffer on the stack (the report never allocates). */
typedef struct jemalloc_out {
    void (*cb)(void *, const char *);
    void *opaque;
    size_t len;
    char buf[1024];
} jemalloc_out_t;

static void jemalloc_out_flush(jemalloc_out_t *o) {
    if (o->len) {
        o->buf[o->len] = 0;
        o->cb(o->opaque, o->buf);
        o->len = 0;
    }
}

static void jemalloc_out_write(void *opaque, const char *text, size_t len) {
    jemalloc_out_t *o = opaque;
    while (len) {
        size_t n = sizeof o->buf - 1 - o->len;
        n = n < len ? n : len;
        memcpy(o->buf + o->len, text, n);
        o->len += n;
        text += n;
        len -= n;
        if (o->len == sizeof o->buf - 1)
            jemalloc_out_flush(o);
    }
}

ALLOY_API void malloc_stats_print(void (*write_cb)(void *, const char *), void *cbopaque,
                                  const char *opts) {
    char ours[4];
    size_t n = 0;
    opts = opts ? opts : "";
    ours[n++] = strchr(opts, 'J') ? 'J' : 'f'; /* jemalloc prints everything by default */
    if (strchr(opts, 'a'))
        ours[n++] = 'h';
    if (strchr(opts, 'b') || strchr(opts, 'l'))
        ours[n++] = 'c';
    ours[n] = 0;
    if (!write_cb) {
        alloy_stats_print(NULL, NULL, ours);
        return;
    }
    jemalloc_out_t o = {write_cb, cbopaque, 0, {0}};
    alloy_stats_print(jemalloc_out_write, &o, ours);
    jemalloc_out_flush(&o);
}
