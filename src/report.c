/* SPDX-License-Identifier: MIT */
/* report.c - the statistics report's layout (report.h): the summary, the
 * full report with its tables, the JSON document and the comparison of two
 * reports, all from the public stats structs through tables of fields.
 *
 * Invariants: every stored figure the report prints comes from one of two
 * field tables (ay_report_total_fields, built with TOT, for the totals, the
 * heaps and the nodes; ay_report_class_fields, built with CLS, for the
 * classes), so text, JSON and `alloy stats` read back the same names; every
 * derived value is computed here and nowhere else (the list is in
 * report.h); nothing is allocated. */
#include "report.h"
#include "unchecked.h"

#include <stddef.h>
#include <string.h>

#define B AY_FIELD_BYTES
#define T AY_FIELD_TEXT
#define V AY_FIELD_EVENT
#define A AY_FIELD_ALIAS
#define TOT(k, f, fl)                                                                              \
    { k, offsetof(alloy_stats_t, f), sizeof(((alloy_stats_t *)0)->f), fl }
#define CLS(k, f, fl)                                                                              \
    { k, offsetof(alloy_class_stats_t, f), sizeof(((alloy_class_stats_t *)0)->f), fl }

const ay_report_field_t ay_report_total_fields[] = {
    TOT("allocated", allocated, B | T),
    TOT("active", active, B | T),
    TOT("resident", resident, B | T),
    TOT("mapped", mapped, B | T),
    TOT("retained", pageheap_purged_bytes, B | T | A),
    TOT("metadata", metadata, B),
    TOT("peak_active", peak_active, B | T),
    TOT("large_allocated", large_allocated, B),
    TOT("tcache_bytes", tcache_bytes, B),
    TOT("central_bytes", central_bytes, B),
    TOT("pageheap_free_bytes", pageheap_free_bytes, B),
    TOT("pageheap_purged_bytes", pageheap_purged_bytes, B),
    TOT("slow_path_calls", slow_path_calls, V),
    TOT("short_fetches", short_fetches, V),
    TOT("objects_fetched", objects_fetched, V),
    TOT("objects_released", objects_released, V),
    TOT("spans_allocated", spans_allocated, V),
    TOT("spans_freed", spans_freed, V),
    TOT("central_lock_contended", central_lock_contended, V),
    TOT("purges", purges, V),
    TOT("threads", threads_live, V),
    TOT("tcache_overflows", tcache_overflows, V),
    TOT("tcache_scavenges", tcache_scavenges, V),
    TOT("span_tail_bytes", span_tail_bytes, B),
    TOT("metadata_resident", metadata_resident, B),
    TOT("transfer_inserted", transfer_inserted, V),
    TOT("transfer_bytes", transfer_bytes, B),
    TOT("os_failures", os_failures, V),
    TOT("huge_blocks", huge_blocks, V),
    TOT("sparse_bytes", sparse_bytes, B),
    TOT("percpu_bytes", percpu_bytes, B),
    TOT("percpu_caches", percpu_caches, 0),
    TOT("percpu_misses", percpu_misses, 0),
    TOT("percpu_overflows", percpu_overflows, 0),
    TOT("percpu_scavenges", percpu_scavenges, 0),
    TOT("percpu_drains", percpu_drains, 0),
    TOT("percpu_moves", percpu_moves, 0),
};
const unsigned ay_report_ntotal_fields =
    sizeof ay_report_total_fields / sizeof ay_report_total_fields[0];

const ay_report_field_t ay_report_class_fields[] = {
    CLS("size", class_size, 0),
    CLS("batch_limit", batch_limit, 0),
    CLS("terminal_batch", terminal_batch, 0),
    CLS("slow_path_calls", slow_path_calls, 0),
    CLS("short_fetches", short_fetches, 0),
    CLS("objects_fetched", objects_fetched, 0),
    CLS("objects_released", objects_released, 0),
    CLS("spans_allocated", spans_allocated, 0),
    CLS("spans_freed", spans_freed, 0),
    CLS("lock_contended", lock_contended, 0),
    CLS("tcache_bytes", tcache_bytes, B),
    CLS("central_bytes", central_bytes, B),
    CLS("allocated", allocated, B),
    CLS("spans", spans, 0),
    CLS("capacity", capacity, 0),
    CLS("span_bytes", span_bytes, B),
    CLS("transfer_inserted", transfer_inserted, 0),
    CLS("transfer_bytes", transfer_bytes, B),
    CLS("sparse_bytes", sparse_bytes, B),
};
const unsigned ay_report_nclass_fields =
    sizeof ay_report_class_fields / sizeof ay_report_class_fields[0];
#undef B
#undef T
#undef V
#undef A

uint64_t ay_report_field_get(const void *s, const ay_report_field_t *f) {
    const char *p = (const char *)s + f->offset;
    if (f->width == 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        return v;
    }
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

void ay_report_field_set(void *s, const ay_report_field_t *f, uint64_t v) {
    char *p = (char *)s + f->offset;
    if (f->width == 4) {
        uint32_t w = (uint32_t)v;
        memcpy(p, &w, 4);
    } else {
        memcpy(p, &v, 8);
    }
}

unsigned ay_report_flags(const char *opts) {
    unsigned fl = 0;
    if (opts && strchr(opts, 'f'))
        fl |= AY_REPORT_FULL;
    if (opts && strchr(opts, 'h'))
        fl |= AY_REPORT_NO_HEAPS;
    if (opts && strchr(opts, 'c'))
        fl |= AY_REPORT_NO_CLASSES;
    return fl;
}

/* ---- derived values ---- */

static uint64_t in_use(const alloy_class_stats_t *c) {
    return c->class_size ? c->allocated / c->class_size : 0;
}

static uint64_t waste(const alloy_class_stats_t *c) {
    return c->span_bytes > c->allocated ? c->span_bytes - c->allocated : 0;
}

static uint64_t spans(const alloy_stats_t *s) {
    return s->spans_allocated > s->spans_freed ? s->spans_allocated - s->spans_freed : 0;
}

/* A small string builder on the caller's stack. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf_t;

static void sb_str(sbuf_t *b, const char *s) {
    size_t n = strlen(s);
    if (n > b->cap - 1 - b->len)
        n = b->cap - 1 - b->len;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void sb_u64(sbuf_t *b, uint64_t v) {
    char tmp[24];
    ay_emit_fmt_count(tmp, v);
    sb_str(b, tmp);
}

/* ---- the columns of the tables ---- */

static const ay_emit_col_t heap_cols[] = {
    {"id", "heap", 4},
    {"kind", "kind", 4},
    {"node", "node", 4},
    {"threads", "threads", 7},
    {"allocated", "in use", 6},
    {"active", "active", 6},
    {"resident", "resident", 8},
    {"utilisation", "util", 6},
    {"tcache_bytes", "tcache", 6},
    {"central_bytes", "central", 7},
    {"pageheap_free_bytes", "free", 6},
    {"spans", "spans", 5},
    {"slow_path_calls", "slow", 6},
    {"short_fetches", "short", 5},
    {"central_lock_contended", "waits", 5},
};
#define NHEAP_COLS (sizeof heap_cols / sizeof heap_cols[0])

static const ay_emit_col_t node_cols[] = {
    {"node", "node", 4},
    {"heaps", "heaps", 5},
    {"threads", "threads", 7},
    {"allocated", "in use", 6},
    {"active", "active", 6},
    {"resident", "resident", 8},
    {"utilisation", "util", 6},
    {"tcache_bytes", "tcache", 6},
    {"central_bytes", "central", 7},
    {"pageheap_free_bytes", "free", 6},
    {"mapped", "mapped", 6},
};
#define NNODE_COLS (sizeof node_cols / sizeof node_cols[0])
#define MAX_NODES 64 /* distinct nodes the nodes table shows at most */

static const ay_emit_col_t class_cols[] = {
    {"class", "class", 5},           {"size", "size", 6},
    {"objects_in_use", "in use", 8}, {"capacity", "capacity", 8},
    {"spans", "spans", 5},           {"utilisation", "util", 6},
    {"tcache_bytes", "tcache", 6},   {"central_bytes", "central", 7},
    {"sparse_bytes", "sparse", 6},   {"waste", "waste", 6},
    {"slow_path_calls", "slow", 7},  {"short_fetches", "short", 6},
    {"lock_contended", "waits", 6},
};
#define NCLASS_COLS (sizeof class_cols / sizeof class_cols[0])

static const ay_emit_col_t waste_cols[] = {
    {"class", "class", 5},           {"size", "size", 6},
    {"objects_in_use", "in use", 8}, {"capacity", "capacity", 8},
    {"utilisation", "util", 6},      {"waste", "waste", 6},
    {"tcache_bytes", "tcache", 6},   {"central_bytes", "central", 7},
};
#define NWASTE_COLS (sizeof waste_cols / sizeof waste_cols[0])

#define TOP_WASTE 5
#define SUMMARY_LINES 30 /* the summary's lines at most, whatever its figures' widths */

/* ---- the report ---- */

/* A count of halves as the setting is written: 4 -> "2", 5 -> "2.5". */
static void fmt_halves(char out[24], uint64_t halves) {
    sbuf_t b = {out, 0, 24};
    out[0] = 0;
    sb_u64(&b, halves / 2);
    if (halves % 2)
        sb_str(&b, ".5");
}

static void emit_opt(ay_emit_t *e, const ay_report_opt_t *o) {
    ay_emit_begin_inline(e, "opt");
    ay_emit_str(e, "batch_policy", o->batch_policy);
    ay_emit_bytes(e, "batch_budget", o->batch_budget);
    ay_emit_u64(e, "batch_cap", o->batch_cap);
    /* text: the setting as ALLOY_CONF writes it (2.5); JSON: its halves (5) */
    char k[24];
    fmt_halves(k, o->return_threshold_halves);
    ay_emit_only(e, AY_EMIT_TEXT);
    ay_emit_str(e, "return_threshold", k);
    ay_emit_only(e, AY_EMIT_JSON);
    ay_emit_u64(e, "return_threshold_halves", o->return_threshold_halves);
    ay_emit_only(e, AY_EMIT_BOTH);
    ay_emit_bool(e, "tcache", o->tcache);
    ay_emit_bytes(e, "tcache_max_bytes", o->tcache_max_bytes);
    ay_emit_i64(e, "decay_ms", o->decay_ms);
    ay_emit_u64(e, "heaps", o->heaps);
    ay_emit_bool(e, "background_thread", o->background_thread);
    ay_emit_bool(e, "numa", o->numa);
    /* text: the first tier's line says it (emit_percpu) */
    ay_emit_only(e, AY_EMIT_JSON);
    if (o->percpu[0])
        ay_emit_str(e, "percpu", o->percpu);
    ay_emit_only(e, AY_EMIT_BOTH);
    ay_emit_end(e);
}

/* Text: "prefix" then the words of `rest`, on lines broken at spaces before
 * LINE_WRAP columns (emit.c), the lines after the first indented four
 * spaces, as an inline object's. */
static void emit_wrapped(ay_emit_t *e, const char *prefix, const char *rest) {
    enum { WRAP = 100 };
    char line[WRAP + 1];
    sbuf_t b = {line, 0, sizeof line};
    line[0] = 0;
    sb_str(&b, prefix);
    while (*rest) {
        while (*rest == ' ')
            rest++;
        size_t n = strcspn(rest, " ");
        if (!n)
            break;
        bool fresh = b.len == 0 || line[b.len - 1] == ' ';
        if (b.len + !fresh + n >= WRAP && b.len > 4) { /* the word goes on the next line */
            ay_emit_line(e, line);
            b.len = 0;
            line[0] = 0;
            sb_str(&b, "    ");
            fresh = true;
        }
        if (!fresh)
            sb_str(&b, " ");
        char word[WRAP];
        if (n >= sizeof word) /* a word longer than a line is cut */
            n = sizeof word - 1;
        memcpy(word, rest, n);
        word[n] = 0;
        sb_str(&b, word);
        rest += strcspn(rest, " ");
    }
    ay_emit_line(e, line);
}

/* The first tier: which mode runs and, with thread caches, why not per CPU
 * (percpu.mode, percpu.why); per CPU, its caches' figures (the totals'
 * percpu_* fields, which JSON has in "stats").  Nothing for a saved report
 * that has no mode. */
static void emit_percpu(ay_emit_t *e, const ay_report_src_t *src) {
    const alloy_stats_t *s = &src->totals;
    if (!src->percpu_mode[0])
        return;
    ay_emit_only(e, AY_EMIT_JSON);
    ay_emit_begin_inline(e, "percpu");
    ay_emit_str(e, "mode", src->percpu_mode);
    ay_emit_str(e, "why", src->percpu_why);
    ay_emit_end(e);
    ay_emit_only(e, AY_EMIT_TEXT);
    if (!strcmp(src->percpu_mode, "percpu")) {
        ay_emit_begin_inline(e, "percpu");
        ay_emit_str(e, "mode", src->percpu_mode);
        ay_emit_u64(e, "caches", s->percpu_caches);
        ay_emit_bytes(e, "bytes", s->percpu_bytes);
        ay_emit_u64(e, "misses", s->percpu_misses);
        ay_emit_u64(e, "overflows", s->percpu_overflows);
        ay_emit_u64(e, "scavenges", s->percpu_scavenges);
        ay_emit_u64(e, "drains", s->percpu_drains);
        ay_emit_u64(e, "moves", s->percpu_moves);
        ay_emit_end(e);
    } else {
        char head[48];
        sbuf_t b = {head, 0, sizeof head};
        head[0] = 0;
        sb_str(&b, "percpu: mode ");
        sb_str(&b, src->percpu_mode);
        sb_str(&b, src->percpu_why[0] ? ", not per CPU: " : "");
        emit_wrapped(e, head, src->percpu_why);
    }
    ay_emit_only(e, AY_EMIT_BOTH);
}

/* Every field of s: text sees those with `text_flag` (0: none). */
static void emit_fields(ay_emit_t *e, const alloy_stats_t *s, unsigned text_flag) {
    for (unsigned i = 0; i < ay_report_ntotal_fields; i++) {
        const ay_report_field_t *f = &ay_report_total_fields[i];
        ay_emit_only(e, f->flags & text_flag ? AY_EMIT_BOTH : AY_EMIT_JSON);
        uint64_t v = ay_report_field_get(s, f);
        if (f->flags & AY_FIELD_BYTES)
            ay_emit_bytes(e, f->key, v);
        else
            ay_emit_u64(e, f->key, v);
    }
    ay_emit_only(e, AY_EMIT_BOTH);
}

static void emit_breakdown(ay_emit_t *e, const alloy_stats_t *s) {
    ay_emit_begin(e, "resident_breakdown");
    ay_emit_share(e, "in_use", s->allocated, s->resident);
    ay_emit_share(e, "tcache", s->tcache_bytes, s->resident);
    /* the part of central in sparse spans, on central's line (the summary
     * keeps to 30 lines) and only when there are some; JSON has it in
     * stats.sparse_bytes, not here, where the members add up to the total */
    char note[64] = "";
    if (s->sparse_bytes) {
        sbuf_t b = {note, 0, sizeof note};
        char v[24];
        ay_emit_fmt_bytes(v, s->sparse_bytes);
        sb_str(&b, v);
        sb_str(&b, " of it in spans <25% used");
    }
    ay_emit_share_note(e, "central", s->central_bytes, s->resident, note[0] ? note : NULL);
    /* spans are sized to hold whole objects (policy.c), so tails are rare:
     * text shows them only when there are some */
    ay_emit_only(e, s->span_tail_bytes ? AY_EMIT_BOTH : AY_EMIT_JSON);
    ay_emit_share(e, "span_tails", s->span_tail_bytes, s->resident);
    ay_emit_only(e, AY_EMIT_BOTH);
    ay_emit_share(e, "pageheap_free", s->pageheap_free_bytes, s->resident);
    ay_emit_share(e, "metadata", s->metadata_resident, s->resident);
    ay_emit_share(e, "total", s->resident, s->resident);
    ay_emit_end(e);
}

static void emit_counters(ay_emit_t *e, const alloy_stats_t *s) {
    ay_emit_only(e, AY_EMIT_TEXT);
    ay_emit_begin_inline(e, "counters");
    for (unsigned i = 0; i < ay_report_ntotal_fields; i++) {
        const ay_report_field_t *f = &ay_report_total_fields[i];
        if (f->flags & AY_FIELD_EVENT)
            ay_emit_u64(e, f->key, ay_report_field_get(s, f));
    }
    ay_emit_end(e);
    ay_emit_only(e, AY_EMIT_BOTH);
}

static void emit_heap_row(ay_emit_t *e, unsigned id, bool is_explicit, unsigned node,
                          const alloy_stats_t *s) {
    ay_emit_begin(e, NULL);
    ay_emit_u64(e, "id", id);
    ay_emit_bool(e, "explicit", is_explicit);
    ay_emit_only(e, AY_EMIT_TEXT);
    ay_emit_str(e, "kind", is_explicit ? "expl" : "auto");
    ay_emit_only(e, AY_EMIT_BOTH);
    ay_emit_u64(e, "node", node);
    emit_fields(e, s, AY_FIELD_BYTES | AY_FIELD_EVENT); /* the columns pick theirs */
    ay_emit_u64(e, "spans", spans(s));
    ay_emit_ratio(e, "utilisation", s->allocated, s->active);
    ay_emit_end(e);
}

static void emit_class_row(ay_emit_t *e, unsigned cls, const alloy_class_stats_t *c) {
    ay_emit_begin(e, NULL);
    ay_emit_u64(e, "class", cls);
    for (unsigned i = 0; i < ay_report_nclass_fields; i++) {
        const ay_report_field_t *f = &ay_report_class_fields[i];
        uint64_t v = ay_report_field_get(c, f);
        if (f->flags & AY_FIELD_BYTES)
            ay_emit_bytes(e, f->key, v);
        else
            ay_emit_u64(e, f->key, v);
    }
    ay_emit_u64(e, "objects_in_use", in_use(c));
    ay_emit_ratio(e, "utilisation", in_use(c), c->capacity);
    ay_emit_bytes(e, "waste", waste(c));
    ay_emit_end(e);
}

/* The classes that waste the most, at most `rows` of them (0 to TOP_WASTE;
 * 0: one line that says there is no room for them). */
static void emit_top_waste(ay_emit_t *e, const ay_report_src_t *src, unsigned rows) {
    unsigned top[TOP_WASTE], n = 0;
    if (rows == 0) {
        ay_emit_only(e, AY_EMIT_TEXT);
        ay_emit_line(e, "waste: no size class shown, no room left in the summary (opts \"f\": "
                        "the classes table)");
        ay_emit_only(e, AY_EMIT_BOTH);
        return;
    }
    uint64_t topw[TOP_WASTE];
    alloy_class_stats_t c;
    for (unsigned cls = 0; cls < src->nclasses; cls++) {
        c.size = sizeof c;
        if (!src->cls(src, cls, &c))
            continue;
        uint64_t w = waste(&c);
        if (w == 0)
            continue;
        unsigned at = n < TOP_WASTE ? n++ : TOP_WASTE;
        while (at > 0 && topw[at - 1] < w) { /* insertion into a sorted top list */
            if (at < TOP_WASTE) {
                top[at] = top[at - 1];
                topw[at] = topw[at - 1];
            }
            at--;
        }
        if (at < TOP_WASTE) {
            top[at] = cls;
            topw[at] = w;
        }
    }
    if (n > rows)
        n = rows;
    char caption[96];
    sbuf_t b = {caption, 0, sizeof caption};
    caption[0] = 0;
    sb_str(&b, "the ");
    sb_u64(&b, n);
    sb_str(&b, n == 1 ? " size class" : " size classes");
    sb_str(&b, " holding most bytes not in use (waste = span bytes - in use)");
    ay_emit_only(e, AY_EMIT_TEXT);
    if (n == 0) {
        ay_emit_line(e, "waste: no size class holds memory it does not use");
        ay_emit_only(e, AY_EMIT_BOTH);
        return;
    }
    ay_emit_begin_table(e, "waste", caption, waste_cols, NWASTE_COLS);
    for (unsigned i = 0; i < n; i++) {
        c.size = sizeof c;
        src->cls(src, top[i], &c);
        emit_class_row(e, top[i], &c);
    }
    ay_emit_end_table(e);
    ay_emit_only(e, AY_EMIT_BOTH);
}

/* The heaps table; the distinct nodes of the heaps go to nodes[] (at most
 * MAX_NODES, ascending), and their number is returned. */
static unsigned emit_heaps(ay_emit_t *e, const ay_report_src_t *src, unsigned nodes[MAX_NODES]) {
    ay_emit_begin_table(e, "heaps", NULL, heap_cols, NHEAP_COLS);
    alloy_stats_t s;
    unsigned id, node, n = 0;
    bool ex;
    for (unsigned k = 0; (s.size = sizeof s, src->heap(src, k, &id, &ex, &node, &s)); k++) {
        emit_heap_row(e, id, ex, node, &s);
        unsigned at = 0;
        while (at < n && nodes[at] < node)
            at++;
        if ((at < n && nodes[at] == node) || n == MAX_NODES)
            continue;
        memmove(&nodes[at + 1], &nodes[at], (n - at) * sizeof nodes[0]);
        nodes[at] = node;
        n++;
    }
    ay_emit_end_table(e);
    return n;
}

/* Per-node totals: each field (but aliases) summed over the node's heaps. */
static void emit_nodes(ay_emit_t *e, const ay_report_src_t *src, const unsigned *nodes,
                       unsigned n) {
    char caption[64];
    sbuf_t b = {caption, 0, sizeof caption};
    caption[0] = 0;
    sb_u64(&b, n);
    sb_str(&b,
           n == 1 ? " NUMA node, the sums of its heaps" : " NUMA nodes, the sums of their heaps");
    ay_emit_begin_table(e, "nodes", caption, node_cols, NNODE_COLS);
    for (unsigned i = 0; i < n; i++) {
        alloy_stats_t sum, s;
        unsigned id, node, heaps = 0;
        bool ex;
        memset(&sum, 0, sizeof sum);
        for (unsigned k = 0; (s.size = sizeof s, src->heap(src, k, &id, &ex, &node, &s)); k++) {
            if (node != nodes[i])
                continue;
            heaps++;
            for (unsigned f = 0; f < ay_report_ntotal_fields; f++) {
                const ay_report_field_t *fl = &ay_report_total_fields[f];
                if (!(fl->flags & AY_FIELD_ALIAS))
                    ay_report_field_set(
                        &sum, fl, ay_report_field_get(&sum, fl) + ay_report_field_get(&s, fl));
            }
        }
        ay_emit_begin(e, NULL);
        ay_emit_u64(e, "node", nodes[i]);
        ay_emit_u64(e, "heaps", heaps);
        emit_fields(e, &sum, AY_FIELD_BYTES | AY_FIELD_EVENT); /* the columns pick theirs */
        ay_emit_u64(e, "spans", spans(&sum));
        ay_emit_ratio(e, "utilisation", sum.allocated, sum.active);
        ay_emit_end(e);
    }
    ay_emit_end_table(e);
}

static void emit_classes(ay_emit_t *e, const ay_report_src_t *src) {
    alloy_class_stats_t c;
    unsigned used = 0;
    for (unsigned cls = 0; cls < src->nclasses; cls++)
        used += (c.size = sizeof c, src->cls(src, cls, &c));
    char caption[64];
    sbuf_t b = {caption, 0, sizeof caption};
    caption[0] = 0;
    sb_u64(&b, used);
    sb_str(&b, " of ");
    sb_u64(&b, src->nclasses);
    sb_str(&b, " size classes used (util = objects in use / capacity)");
    ay_emit_begin_table(e, "classes", caption, class_cols, NCLASS_COLS);
    for (unsigned cls = 0; cls < src->nclasses; cls++) {
        c.size = sizeof c;
        if (src->cls(src, cls, &c))
            emit_class_row(e, cls, &c);
    }
    ay_emit_end_table(e);
}

void ay_report_print(ay_emit_t *e, const ay_report_src_t *src, unsigned flags) {
    bool full = e->json || (flags & AY_REPORT_FULL);
    /* "___ alloy V statistics[ (full)], pid P (CMD) ___": the process, for
     * the reports of a tree of processes (alloy run --follow-children) */
    char title[160];
    sbuf_t b = {title, 0, sizeof title};
    title[0] = 0;
    sb_str(&b, "___ alloy ");
    sb_str(&b, src->version);
    sb_str(&b, full ? " statistics (full)" : " statistics");
    if (src->pid) {
        sb_str(&b, ", pid ");
        sb_u64(&b, src->pid);
        sb_str(&b, " (");
        for (const char *c = src->cmd; *c && b.len + 1 < b.cap; c++) /* control bytes as ? */
            sb_str(&b, (unsigned char)*c < 0x20 || *c == 0x7f ? "?" : (char[2]){*c, 0});
        sb_str(&b, ")");
    }
    sb_str(&b, " ___");
    ay_emit_line(e, title);
    ay_emit_only(e, AY_EMIT_JSON);
    ay_emit_begin(e, "alloy");
    ay_emit_str(e, "version", src->version);
    if (src->pid) {
        ay_emit_u64(e, "pid", src->pid);
        ay_emit_str(e, "cmd", src->cmd);
    }
    ay_emit_u64(e, "nclasses", src->nclasses);
    ay_emit_only(e, AY_EMIT_BOTH);
    emit_opt(e, &src->opt);
    emit_percpu(e, src);
    ay_emit_begin(e, "stats");
    emit_fields(e, &src->totals, AY_FIELD_TEXT);
    ay_emit_only(e, AY_EMIT_JSON);
    ay_emit_u64(e, "spans", spans(&src->totals));
    ay_emit_only(e, AY_EMIT_BOTH);
    ay_emit_end(e);
    emit_breakdown(e, &src->totals);
    emit_counters(e, &src->totals);
    if (!e->json) {
        /* the summary keeps to SUMMARY_LINES: the waste table (a caption, a
         * header, its rows) and the last line get what the lines above it,
         * whose count depends on the widths of the counters, leave (with no
         * room for a row, the caption alone says so) */
        unsigned used = e->lines + 3, rows = TOP_WASTE;
        if (!full)
            rows = used >= SUMMARY_LINES ? 0 : SUMMARY_LINES - used;
        emit_top_waste(e, src, rows < TOP_WASTE ? rows : TOP_WASTE);
    }
    if (full && !(flags & AY_REPORT_NO_HEAPS)) {
        unsigned nodes[MAX_NODES];
        emit_nodes(e, src, nodes, emit_heaps(e, src, nodes));
    }
    if (full && !(flags & AY_REPORT_NO_CLASSES))
        emit_classes(e, src);
    ay_emit_line(e, full ? "(sizes in bytes, K = 1024; fields: docs/STATS.md)"
                         : "(sizes in bytes, K = 1024; opts \"f\" for tables, \"J\" for JSON: "
                           "docs/STATS.md)");
    ay_emit_only(e, AY_EMIT_JSON);
    ay_emit_end(e);
    ay_emit_only(e, AY_EMIT_BOTH);
}

/* ---- the difference of two reports ---- */

static bool find_heap(const ay_report_src_t *src, unsigned want, bool *ex, unsigned *node,
                      alloy_stats_t *out) {
    unsigned id;
    for (unsigned k = 0; (out->size = sizeof *out, src->heap(src, k, &id, ex, node, out)); k++)
        if (id == want)
            return true;
    memset(out, 0, sizeof *out);
    *ex = false;
    *node = 0;
    return false;
}

static unsigned total_changes(const alloy_stats_t *a, const alloy_stats_t *b) {
    unsigned n = 0;
    for (unsigned i = 0; i < ay_report_ntotal_fields; i++) {
        const ay_report_field_t *f = &ay_report_total_fields[i];
        if (!(f->flags & AY_FIELD_ALIAS))
            n += ay_report_field_get(a, f) != ay_report_field_get(b, f);
    }
    return n;
}

static unsigned class_changes(const alloy_class_stats_t *a, const alloy_class_stats_t *b) {
    unsigned n = 0;
    for (unsigned i = 0; i < ay_report_nclass_fields; i++)
        n += ay_report_field_get(a, &ay_report_class_fields[i]) !=
             ay_report_field_get(b, &ay_report_class_fields[i]);
    return n;
}

static bool class_or_zero(const ay_report_src_t *src, unsigned cls, alloy_class_stats_t *c) {
    c->size = sizeof *c;
    if (cls < src->nclasses && src->cls(src, cls, c))
        return true;
    memset(c, 0, sizeof *c);
    return false;
}

#define D(x, y) ((int64_t)((uint64_t)(y) - (uint64_t)(x)))

static void diff_heap_row(ay_emit_t *e, unsigned id, bool ex, unsigned node, const alloy_stats_t *a,
                          const alloy_stats_t *b) {
    ay_emit_begin(e, NULL);
    ay_emit_u64(e, "id", id);
    ay_emit_str(e, "kind", ex ? "expl" : "auto");
    ay_emit_u64(e, "node", node);
    ay_emit_dcount(e, "threads", D(a->threads_live, b->threads_live));
    ay_emit_dbytes(e, "allocated", D(a->allocated, b->allocated));
    ay_emit_dbytes(e, "active", D(a->active, b->active));
    ay_emit_dbytes(e, "resident", D(a->resident, b->resident));
    ay_emit_dratio(e, "utilisation", a->allocated, a->active, b->allocated, b->active);
    ay_emit_dbytes(e, "tcache_bytes", D(a->tcache_bytes, b->tcache_bytes));
    ay_emit_dbytes(e, "central_bytes", D(a->central_bytes, b->central_bytes));
    ay_emit_dbytes(e, "pageheap_free_bytes", D(a->pageheap_free_bytes, b->pageheap_free_bytes));
    ay_emit_dcount(e, "spans", D(spans(a), spans(b)));
    ay_emit_dcount(e, "slow_path_calls", D(a->slow_path_calls, b->slow_path_calls));
    ay_emit_dcount(e, "short_fetches", D(a->short_fetches, b->short_fetches));
    ay_emit_dcount(e, "central_lock_contended",
                   D(a->central_lock_contended, b->central_lock_contended));
    ay_emit_end(e);
}

static void diff_class_row(ay_emit_t *e, unsigned cls, const alloy_class_stats_t *a,
                           const alloy_class_stats_t *b) {
    ay_emit_begin(e, NULL);
    ay_emit_u64(e, "class", cls);
    ay_emit_u64(e, "size", b->class_size ? b->class_size : a->class_size);
    ay_emit_dcount(e, "objects_in_use", D(in_use(a), in_use(b)));
    ay_emit_dcount(e, "capacity", D(a->capacity, b->capacity));
    ay_emit_dcount(e, "spans", D(a->spans, b->spans));
    ay_emit_dratio(e, "utilisation", in_use(a), a->capacity, in_use(b), b->capacity);
    ay_emit_dbytes(e, "tcache_bytes", D(a->tcache_bytes, b->tcache_bytes));
    ay_emit_dbytes(e, "central_bytes", D(a->central_bytes, b->central_bytes));
    ay_emit_dbytes(e, "sparse_bytes", D(a->sparse_bytes, b->sparse_bytes));
    ay_emit_dbytes(e, "waste", D(waste(a), waste(b)));
    ay_emit_dcount(e, "slow_path_calls", D(a->slow_path_calls, b->slow_path_calls));
    ay_emit_dcount(e, "short_fetches", D(a->short_fetches, b->short_fetches));
    ay_emit_dcount(e, "lock_contended", D(a->lock_contended, b->lock_contended));
    ay_emit_end(e);
}

/* The settings that differ, as "name A -> B" members of an inline object. */
static unsigned diff_opt(ay_emit_t *e, const ay_report_opt_t *a, const ay_report_opt_t *b,
                         bool write) {
    struct {
        const char *key;
        uint64_t x, y;
        bool bytes;
    } num[] = {
        {"batch_budget", a->batch_budget, b->batch_budget, true},
        {"batch_cap", a->batch_cap, b->batch_cap, false},
        {"return_threshold", a->return_threshold_halves, b->return_threshold_halves, false},
        {"tcache", a->tcache, b->tcache, false},
        {"tcache_max_bytes", a->tcache_max_bytes, b->tcache_max_bytes, true},
        {"decay_ms", (uint64_t)a->decay_ms, (uint64_t)b->decay_ms, false},
        {"heaps", a->heaps, b->heaps, false},
        {"background_thread", a->background_thread, b->background_thread, false},
        {"numa", a->numa, b->numa, false},
    };
    const struct {
        const char *key, *x, *y;
    } str[] = {
        {"batch_policy", a->batch_policy, b->batch_policy},
        {"percpu", a->percpu[0] ? a->percpu : "-", b->percpu[0] ? b->percpu : "-"},
    };
    unsigned n = 0;
    char buf[80];
    for (unsigned i = 0; i < sizeof str / sizeof str[0]; i++) {
        if (!strcmp(str[i].x, str[i].y))
            continue;
        n++;
        if (write) {
            sbuf_t s = {buf, 0, sizeof buf};
            buf[0] = 0;
            sb_str(&s, str[i].x);
            sb_str(&s, " -> ");
            sb_str(&s, str[i].y);
            ay_emit_str(e, str[i].key, buf);
        }
    }
    for (unsigned i = 0; i < sizeof num / sizeof num[0]; i++) {
        if (num[i].x == num[i].y)
            continue;
        n++;
        if (!write)
            continue;
        char x[24], y[24];
        bool is_bool = !strcmp(num[i].key, "tcache") || !strcmp(num[i].key, "background_thread") ||
                       !strcmp(num[i].key, "numa");
        bool is_ms = !strcmp(num[i].key, "decay_ms");
        bool is_halves = !strcmp(num[i].key, "return_threshold");
        for (int side = 0; side < 2; side++) {
            uint64_t v = side ? num[i].y : num[i].x;
            char *out = side ? y : x;
            if (is_bool)
                strcpy(out, v ? "true" : "false");
            else if (is_halves)
                fmt_halves(out, v);
            else if (is_ms && (int64_t)v < 0)
                strcpy(out, "-1");
            else if (num[i].bytes)
                ay_emit_fmt_bytes(out, v);
            else
                ay_emit_fmt_count(out, v);
        }
        sbuf_t s = {buf, 0, sizeof buf};
        buf[0] = 0;
        sb_str(&s, x);
        sb_str(&s, " -> ");
        sb_str(&s, y);
        ay_emit_str(e, num[i].key, buf);
    }
    return n;
}

/* The diff's options object (the settings that differ); their number. */
static unsigned diff_opts(ay_emit_t *e, const ay_report_src_t *a, const ay_report_src_t *b) {
    unsigned n = diff_opt(e, &a->opt, &b->opt, false);
    if (n) {
        ay_emit_begin_inline(e, "opt");
        diff_opt(e, &a->opt, &b->opt, true);
        ay_emit_end(e);
    }
    return n;
}

/* The totals that changed, then where the resident bytes went; the number
 * of totals that changed. */
static unsigned diff_totals(ay_emit_t *e, const alloy_stats_t *ta, const alloy_stats_t *tb) {
    unsigned n = total_changes(ta, tb);
    if (!n)
        return 0;
    ay_emit_begin(e, "stats");
    for (unsigned i = 0; i < ay_report_ntotal_fields; i++) {
        const ay_report_field_t *f = &ay_report_total_fields[i];
        uint64_t x = ay_report_field_get(ta, f), y = ay_report_field_get(tb, f);
        if (x != y && !(f->flags & AY_FIELD_ALIAS))
            ay_emit_change(e, f->key, f->flags & AY_FIELD_BYTES, x, y);
    }
    ay_emit_end(e);
    ay_emit_begin(e, "resident_breakdown");
    struct {
        const char *key;
        uint64_t x, y;
    } parts[] = {
        {"in_use", ta->allocated, tb->allocated},
        {"tcache", ta->tcache_bytes, tb->tcache_bytes},
        {"central", ta->central_bytes, tb->central_bytes},
        {"span_tails", ta->span_tail_bytes, tb->span_tail_bytes},
        {"pageheap_free", ta->pageheap_free_bytes, tb->pageheap_free_bytes},
        {"metadata", ta->metadata_resident, tb->metadata_resident},
        {"total", ta->resident, tb->resident},
    };
    for (unsigned i = 0; i < sizeof parts / sizeof parts[0]; i++)
        if (parts[i].x != parts[i].y || !strcmp(parts[i].key, "total"))
            ay_emit_change(e, parts[i].key, true, parts[i].x, parts[i].y);
    ay_emit_end(e);
    return n;
}

/* The heaps table: a row per heap that changed, the heaps of B first (with
 * A's of the same id, or zeros), then those only in A; the number of values
 * that changed. */
static unsigned diff_heaps(ay_emit_t *e, const ay_report_src_t *a, const ay_report_src_t *b) {
    alloy_stats_t ha, hb;
    unsigned id, node, nodea, rows = 0, changes = 0, n;
    bool ex, exa;
    for (int pass = 0; pass < 2; pass++) {
        const ay_report_src_t *p = pass ? a : b, *q = pass ? b : a;
        for (unsigned k = 0; (hb.size = sizeof hb, p->heap(p, k, &id, &ex, &node, &hb)); k++) {
            bool both = find_heap(q, id, &exa, &nodea, &ha);
            if (pass && both)
                continue;
            const alloy_stats_t *x = pass ? &hb : &ha, *y = pass ? &ha : &hb;
            if (!(n = total_changes(x, y)))
                continue;
            changes += n;
            if (!rows++)
                ay_emit_begin_table(e, "heaps", "the change in each heap that changed", heap_cols,
                                    NHEAP_COLS);
            diff_heap_row(e, id, ex, node, x, y);
        }
    }
    if (rows)
        ay_emit_end_table(e);
    return changes;
}

/* The classes table: a row per size class that changed; the number of
 * values that changed. */
static unsigned diff_classes(ay_emit_t *e, const ay_report_src_t *a, const ay_report_src_t *b) {
    alloy_class_stats_t ca, cb;
    unsigned rows = 0, changes = 0, n;
    unsigned nmax = a->nclasses > b->nclasses ? a->nclasses : b->nclasses;
    for (unsigned cls = 0; cls < nmax; cls++) {
        bool ina = class_or_zero(a, cls, &ca), inb = class_or_zero(b, cls, &cb);
        if ((!ina && !inb) || !(n = class_changes(&ca, &cb)))
            continue;
        changes += n;
        if (!rows++)
            ay_emit_begin_table(e, "classes", "the change in each size class that changed",
                                class_cols, NCLASS_COLS);
        diff_class_row(e, cls, &ca, &cb);
    }
    if (rows)
        ay_emit_end_table(e);
    return changes;
}

unsigned ay_report_diff(ay_emit_t *e, const ay_report_src_t *a, const ay_report_src_t *b,
                        unsigned flags) {
    unsigned changes = 0;
    char line[128];
    sbuf_t sb = {line, 0, sizeof line};
    line[0] = 0;
    sb_str(&sb, "___ alloy statistics: the change from A (alloy ");
    sb_str(&sb, a->version);
    sb_str(&sb, ") to B (alloy ");
    sb_str(&sb, b->version);
    sb_str(&sb, ") ___");
    ay_emit_line(e, line);

    changes += diff_opts(e, a, b);
    if (strcmp(a->percpu_mode, b->percpu_mode)) { /* the first tier that runs */
        sb.len = 0;
        line[0] = 0;
        sb_str(&sb, "percpu: mode ");
        sb_str(&sb, a->percpu_mode[0] ? a->percpu_mode : "-");
        sb_str(&sb, " -> ");
        sb_str(&sb, b->percpu_mode[0] ? b->percpu_mode : "-");
        ay_emit_line(e, line);
        changes++;
    }
    changes += diff_totals(e, &a->totals, &b->totals);
    if (!(flags & AY_REPORT_NO_HEAPS))
        changes += diff_heaps(e, a, b);
    if (!(flags & AY_REPORT_NO_CLASSES))
        changes += diff_classes(e, a, b);

    sb.len = 0;
    line[0] = 0;
    if (changes) {
        sb_u64(&sb, changes);
        sb_str(&sb, changes == 1 ? " value changed" : " values changed");
    } else {
        sb_str(&sb, "no change");
    }
    ay_emit_line(e, line);
    return changes;
}
