/* conf.h - run-time settings, read once at start-up from ALLOY_CONF and the
 * link-time default string `alloy_malloc_conf`, without allocating.
 *
 * Format: "key:value,key:value".  An unknown key or a malformed value prints
 * one warning naming the key and keeps the default.  The keys and their
 * defaults are listed in the table in conf.c and in the README.
 */
#ifndef ALLOY_CONF_H
#define ALLOY_CONF_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"

typedef struct ay_conf {
    ay_batch_params_t batch;   /* batch_policy, batch_budget, batch_cap */
    uint32_t return_k_halves;  /* return_threshold k in halves: 4 = 2n */
    bool tcache;               /* thread caches on */
    size_t tcache_max_bytes;   /* per-thread cache limit; scavenged above it */
    int64_t decay_ms;          /* purge free pages after this; 0 at once, -1 never */
    bool stats_print;          /* print stats at exit */
    uint32_t heaps;            /* automatic heaps; 0: one per CPU */
    bool background_thread;    /* purge from a background thread */
    bool junk;                 /* fill new blocks with 0xa5, freed ones with 0x5a */
    bool zero;                 /* fill new blocks with zeros */
    bool abort_on_error;       /* abort on out-of-memory and on a bad setting */
} ay_conf_t;

extern ay_conf_t ay_conf;

/* Reset to the defaults, then apply `str` (may be NULL).  `source` names the
 * string in warnings ("ALLOY_CONF"). */
void ay_conf_apply(ay_conf_t *c, const char *str, const char *source);
/* The defaults, then alloy_malloc_conf, then the ALLOY_CONF variable. */
void ay_conf_init(ay_conf_t *c);

#endif
