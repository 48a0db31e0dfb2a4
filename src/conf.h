/* SPDX-License-Identifier: MIT */
/* conf.h - run-time settings, read once at start-up from the link-time
 * default string `alloy_malloc_conf` and then the ALLOY_CONF variable,
 * without allocating.
 *
 * Format: "key:value,key:value".  Every key is a row of one table
 * (`keys[]`, static in conf.c, read through ay_conf_key): its name, its
 * type, where it is stored, its bounds, its default and its help text.  The
 * parser, the warnings, the defaults, alloy_setting_describe() (and through
 * it `alloy settings`, the README's settings table and the manual page) all
 * read that table.  An unknown key prints one warning naming it and is
 * ignored; a malformed value prints one warning naming the key and what it
 * accepts, and the key keeps the value it had.
 */
#ifndef ALLOY_CONF_H
#define ALLOY_CONF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fmt.h"
#include "policy.h"

#define AY_CONF_PATH_MAX 256 /* bytes of a PATH setting, its NUL included */

typedef struct ay_conf {
    ay_batch_params_t batch;            /* batch_policy, batch_budget, batch_cap */
    uint32_t return_k_halves;           /* return_threshold k in halves: 4 = 2n */
    bool tcache;                        /* thread caches on */
    size_t tcache_max_bytes;            /* per-thread cache limit; scavenged above it */
    size_t tcache_total_bytes;          /* all thread caches: divided among the threads */
    size_t transfer_bytes;              /* one class's transfer cache, per node, at most */
    int64_t decay_ms;                   /* purge free pages after this; 0 at once, -1 never */
    bool stats_print;                   /* print stats at exit */
    char stats_print_opts[8];           /* alloy_stats_print's opts for that report */
    char stats_file[AY_CONF_PATH_MAX];  /* that report's file; "" for stderr */
    uint32_t stats_print_pid;           /* only this process prints it; 0 every process */
    uint32_t heaps;                     /* automatic heaps; 0: one per CPU */
    bool numa;                          /* node-aware heaps and pages, when there are nodes */
    uint8_t background_thread;          /* an ay_bg_t: purge from a background thread */
    uint8_t thp;                        /* an ay_thp_t: which page-heap blocks get huge pages */
    bool junk;                          /* fill new blocks with 0xa5, freed ones with 0x5a */
    bool zero;                          /* fill new blocks with zeros */
    bool abort_on_error;                /* abort on out-of-memory and on a bad setting */
    uint32_t guard_sample;              /* one allocation in this many gets a guarded page; 0 off */
    bool secure_tags;                   /* secure flavour: a tag after every small block */
    size_t quarantine;                  /* secure flavour: a thread's quarantine's bytes; 0 off */
    uint32_t guard_slots;               /* guarded pages that can be live or resting at once */
    bool prof;                          /* heap profiling (prof.h) */
    bool prof_active;                   /* sampling on at start-up (prof.active) */
    size_t prof_sample;                 /* mean bytes between samples; 1: every allocation */
    char prof_prefix[AY_CONF_PATH_MAX]; /* dump files: <prefix>.<pid>.<seq>.<kind>.heap */
    bool prof_final;                    /* dump at exit */
    size_t prof_interval;    /* dump each time this many more bytes were allocated; 0 never */
    bool prof_leak;          /* the leak report at exit (turns profiling on) */
    uint32_t leak_exit_code; /* exit status when the leak report found leaks; 0 keeps it */
    uint32_t timeline_ms;    /* the timeline's and the live snapshot's period (timeline.h) */
    char timeline_file[AY_CONF_PATH_MAX]; /* the timeline's file; "" records none */
    bool stats_shm;                       /* publish the live snapshot (shm.h) */
    uint8_t percpu;                       /* per-CPU caches: auto or off (cpucache.h) */
} ay_conf_t;

extern ay_conf_t ay_conf;

typedef enum ay_conf_type {
    AY_CONF_BOOL,    /* true/false (or 1/0); a bool */
    AY_CONF_COUNT,   /* a whole number, k/m/g suffixes accepted; a uint32_t */
    AY_CONF_BYTES,   /* bytes, k/m/g suffixes accepted; a uint32_t or size_t (width) */
    AY_CONF_MS,      /* milliseconds, or -1 for never; an int64_t */
    AY_CONF_POLICY,  /* compact, clip, guard, pow2 or lean; an ay_batch_policy_t */
    AY_CONF_RATIO,   /* 1.5, 2, 2.5, ... stored in halves; a uint32_t */
    AY_CONF_LETTERS, /* letters of AY_CONF_LETTERS_SET, each at most once; a char[8] */
    AY_CONF_PATH,    /* a file path, copied into a char[AY_CONF_PATH_MAX] (no allocation) */
    AY_CONF_THP,     /* never, auto or always (true and false: auto and never); a uint8_t */
    AY_CONF_PERCPU,  /* auto or off; a uint8_t (rseq.h, ay_percpu_setting_t) */
    AY_CONF_BG,      /* false, true or auto (1 and 0 too); a uint8_t, an ay_bg_t */
} ay_conf_type_t;

/* The background_thread setting (background.h). */
typedef enum ay_bg {
    AY_BG_FALSE, /* no background thread unless alloy_ctl starts one */
    AY_BG_TRUE,  /* one from start-up, always */
    AY_BG_AUTO,  /* one while a slow path left memory to give back, and until it is given */
} ay_bg_t;

/* The thp setting: which blocks of the page heap are given transparent
 * huge pages (pageblock.h says how). */
typedef enum ay_thp {
    AY_THP_NEVER,  /* none: every block is marked MADV_NOHUGEPAGE */
    AY_THP_AUTO,   /* blocks of 2 MiB or more */
    AY_THP_ALWAYS, /* every block: 2 MiB blocks from a heap's first small span */
} ay_thp_t;

/* "never", "auto" or "always". */
const char *ay_thp_name(unsigned thp);
/* "auto" or "off". */
const char *ay_percpu_name(unsigned percpu);
/* "false", "true" or "auto". */
const char *ay_bg_name(unsigned bg);

/* The letters an AY_CONF_LETTERS key accepts (stats_print_opts, the only
 * one: alloy_stats_print's opts). */
#define AY_CONF_LETTERS_SET "fJhc"

typedef struct ay_conf_key {
    const char *name;
    ay_conf_type_t type;
    size_t offset;      /* of the value in ay_conf_t */
    uint8_t width;      /* AY_CONF_BYTES: 4 or 8 */
    uint64_t min, max;  /* bounds of numbers (RATIO: in halves) */
    const char *defval; /* the default, as written in ALLOY_CONF; NULL: see defdoc */
    const char *defdoc; /* the default in words, when defval cannot say all of it */
    const char *help;
} ay_conf_key_t;

/* The k-th key, or NULL past the end. */
const ay_conf_key_t *ay_conf_key(unsigned k);
/* What a key accepts, in words ("an integer from 1 to 128"). */
void ay_conf_describe_range(const ay_conf_key_t *key, ay_fmt_t *f);
/* Reset *c to the defaults. */
void ay_conf_defaults(ay_conf_t *c);
/* Apply `str` (may be NULL) on top of *c.  `source` names the string in
 * warnings ("ALLOY_CONF").  Returns the number of bad items. */
unsigned ay_conf_apply(ay_conf_t *c, const char *str, const char *source);
/* The defaults, then alloy_malloc_conf, then the ALLOY_CONF variable.  With
 * abort_on_error:true, a bad item aborts. */
void ay_conf_init(ay_conf_t *c);
/* The value of environment variable `name`, or NULL; read through
 * `environ`, without allocating. */
const char *ay_conf_getenv(const char *name);

#endif
