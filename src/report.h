/* SPDX-License-Identifier: MIT */
/* report.h - the statistics report's layout: what the summary, the full
 * report, the JSON document and a comparison of two reports show, written
 * through the emitter from the public stats structs (alloy.h).
 *
 * It knows nothing of heaps or caches.  stats.c hands it live counters; the
 * `alloy stats` command (which compiles this file with emit.c, fmt.c and
 * os.c, and does not link liballoy) hands it counters read back from a saved
 * JSON report through the same field tables.  So a saved report renders as
 * the library would have printed it.  docs/STATS.md describes every section,
 * column and field.
 *
 * Derived values, computed here and nowhere else:
 *   objects in use (class) = allocated / size
 *   utilisation (class)    = objects in use / capacity   (0..1; 0 with no span)
 *   utilisation (heap)     = allocated / active          (a node's too)
 *   waste (class)          = span bytes - allocated     (cached, free or tail)
 *   spans (heap, total)    = spans_allocated - spans_freed
 *   a node's totals        = the sums of its heaps' values (full report, JSON)
 *   resident breakdown     = allocated + tcache + central + span tails
 *                            + page-heap free + resident metadata = resident
 * No allocation: everything is on the stack.
 */
#ifndef ALLOY_REPORT_H
#define ALLOY_REPORT_H
#include <stdbool.h>
#include <stdint.h>

#include "alloy.h"
#include "emit.h"

/* ay_report_print / ay_report_diff flags */
#define AY_REPORT_FULL 1u       /* text: the tables of heaps, nodes and classes */
#define AY_REPORT_NO_HEAPS 2u   /* leave the heaps (and the nodes) out */
#define AY_REPORT_NO_CLASSES 4u /* leave the classes out */

/* From alloy_stats_print's opts: "f" full, "h" no heaps, "c" no classes. */
unsigned ay_report_flags(const char *opts);

typedef struct ay_report_opt {
    char batch_policy[16];
    uint64_t batch_budget, batch_cap, return_threshold_halves, tcache_max_bytes, heaps;
    int64_t decay_ms;
    bool tcache, background_thread;
    bool numa;      /* NUMA awareness in effect */
    char percpu[8]; /* the percpu setting, "auto" or "off" ("" for a saved report that has none) */
} ay_report_opt_t;

typedef struct ay_report_src ay_report_src_t;
struct ay_report_src {
    char version[32];
    unsigned pid; /* the process reported on, and its name (/proc/PID/comm); */
    char cmd[64]; /* 0 and "" for a saved report that has none */
    unsigned nclasses;
    ay_report_opt_t opt;
    /* The first tier that runs, "percpu" or "thread" (percpu.mode), and why
     * not per CPU ("" in per-CPU mode: percpu.why); "" and "" for a saved
     * report that has none. */
    char percpu_mode[8];
    char percpu_why[160];
    alloy_stats_t totals;
    /* The k-th heap (k = 0, 1, ...): its id, whether it is explicit, its
     * NUMA node, its counters.  false past the last. */
    bool (*heap)(const ay_report_src_t *src, unsigned k, unsigned *id, bool *is_explicit,
                 unsigned *node, alloy_stats_t *out);
    /* Class cls (0 .. nclasses-1), summed over heaps; false when the class
     * was never used (it is left out). */
    bool (*cls)(const ay_report_src_t *src, unsigned cls, alloy_class_stats_t *out);
    void *ctx;
};

/* The report: text (summary, or full with AY_REPORT_FULL) or JSON, as e was
 * set up.  JSON always holds every section but those flags leave out. */
void ay_report_print(ay_emit_t *e, const ay_report_src_t *src, unsigned flags);
/* The change from a to b, in text: every setting, total, heap and class
 * value that differs.  Returns how many values differ (0: "no change"). */
unsigned ay_report_diff(ay_emit_t *e, const ay_report_src_t *a, const ay_report_src_t *b,
                        unsigned flags);

/* The fields of the JSON's "stats" and heap objects (alloy_stats_t) and of
 * its class objects (alloy_class_stats_t), in the order they are written.
 * A reader of a saved report fills the structs from them. */
#define AY_FIELD_BYTES 1u /* a number of bytes (else a count) */
#define AY_FIELD_TEXT 2u  /* totals: shown in the text's "stats" block */
#define AY_FIELD_EVENT 4u /* totals: shown in the text's "counters" line */
#define AY_FIELD_ALIAS 8u /* another name of a field listed too (not compared) */
typedef struct ay_report_field {
    const char *key;
    uint16_t offset;
    uint8_t width; /* 4 or 8 bytes */
    uint8_t flags;
} ay_report_field_t;

extern const ay_report_field_t ay_report_total_fields[];
extern const unsigned ay_report_ntotal_fields;
extern const ay_report_field_t ay_report_class_fields[];
extern const unsigned ay_report_nclass_fields;

uint64_t ay_report_field_get(const void *s, const ay_report_field_t *f);
void ay_report_field_set(void *s, const ay_report_field_t *f, uint64_t v);

#endif
