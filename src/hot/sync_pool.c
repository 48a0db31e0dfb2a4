/* SPDX-License-Identifier: MIT */
/* sync_pool.c - the thread-safe fixed-size pool: a per-thread cache in
 * front of a central alloy_pool_t, so the fast path takes no lock and no
 * atomic instruction.
 *
 * Each thread has SYNC_WAYS cache entries, in an array that malloc gives it
 * on its first use of any synchronized pool; thread-local storage holds only
 * a pointer to it, so that liballoy's static TLS block stays small (that is
 * what decides whether a late dlopen of liballoy works).  Before the first
 * use the pointer names sync_tc_none, whose entries are all empty and never
 * written, so the fast paths need no extra test.  A thread whose array
 * cannot be allocated works on the central pool under its lock.  Pool
 * number `id` (unique for the life of the process, never reused) uses entry
 * id % SYNC_WAYS.  An entry holds a free list of at most SYNC_TC_MAX slots
 * of one pool:
 *   alloc  pops the entry's list; when it is empty (or the entry belongs to
 *          another pool) the slow path takes ALLOY_SYNC_POOL_BATCH slots
 *          from the central pool under the pool's lock;
 *   free   pushes on the entry's list; when it is full, a batch goes back to
 *          the central pool, so memory freed by one thread returns to the
 *          others.
 * An entry that another pool needs is flushed to its own pool first, and
 * so are all of a thread's entries when it exits (pthread key destructor).
 *
 * Pools that no longer exist: entries may outlive their pool.  A registry
 * of live pools (pointer and id, under one mutex taken only by init,
 * destroy and flushes) decides whether an entry's slots go back or are
 * simply forgotten; an entry's pool pointer is never followed unless the
 * registry holds that pool with that id.
 *
 * The checked flavour never gets cache entries: every call works on the
 * central pool under its lock, so the central pool sees every free.
 *
 * Lock order: registry, then a pool's lock.  No lock is held while calling
 * the upstream resource except the pool's own lock (the central pool grows
 * under it).
 *
 * Invariants: every free slot is in exactly one thread's entry or in the
 * central pool; an entry with id 0 is empty; entry.count is the length of
 * entry.free and <= SYNC_TC_MAX.
 */
#include <alloy/pool.h>
#include <alloy/resource.h>

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hot.h"

#define SYNC_WAYS 16u                           /* cache entries per thread */
#define SYNC_TC_MAX (2 * ALLOY_SYNC_POOL_BATCH) /* slots one entry may hold */

struct ay_sync_pool_state {
    pthread_mutex_t lock;           /* guards central */
    alloy_pool_t central;           /* where slots come from and go back to */
    alloy_resource_t *upstream;     /* allocated this struct */
    uint64_t id;                    /* names the pool in thread caches; never 0 */
    ay_sync_pool_state_t *reg_next; /* registry of live pools */
};

typedef struct sync_tcache {
    ay_sync_pool_state_t *pool; /* valid only while the registry holds (pool, id) */
    uint64_t id;                /* 0: empty */
    void *free;                 /* intrusive list of this thread's free slots */
    size_t count;               /* its length */
} sync_tcache_t;

static sync_tcache_t sync_tc_none[SYNC_WAYS];          /* all empty (id 0): never written */
static __thread sync_tcache_t *sync_tc = sync_tc_none; /* this thread's entries */

static pthread_mutex_t sync_registry_lock = PTHREAD_MUTEX_INITIALIZER;
static ay_sync_pool_state_t *sync_registry; /* live pools */
static uint64_t sync_next_id = 1;           /* under sync_registry_lock */
static pthread_key_t sync_key;
static bool sync_key_ok;
static pthread_once_t sync_once = PTHREAD_ONCE_INIT;

static sync_tcache_t *sync_entry(const ay_sync_pool_state_t *st) {
    return &sync_tc[st->id % SYNC_WAYS];
}

/* Give every slot of `list` back to st's central pool. */
static void sync_return(ay_sync_pool_state_t *st, void *list) {
    pthread_mutex_lock(&st->lock);
    while (list != NULL) {
        void *q = list;
        list = *(void **)q;
        alloy_pool_free(&st->central, q);
    }
    pthread_mutex_unlock(&st->lock);
}

/* Empty one entry: its slots go back to its pool if that pool still
 * exists, and are forgotten if it does not. */
static void sync_flush_entry(sync_tcache_t *tc) {
    if (tc->id == 0)
        return;
    pthread_mutex_lock(&sync_registry_lock);
    for (ay_sync_pool_state_t *st = sync_registry; st != NULL; st = st->reg_next)
        if (st == tc->pool && st->id == tc->id) {
            sync_return(st, tc->free);
            break;
        }
    pthread_mutex_unlock(&sync_registry_lock);
    memset(tc, 0, sizeof *tc);
}

static void sync_at_thread_exit(void *arg) {
    sync_tcache_t *entries = arg;
    for (unsigned i = 0; i < SYNC_WAYS; i++)
        sync_flush_entry(&entries[i]);
    sync_tc = sync_tc_none; /* a later use starts again */
    free(entries);
}

static void sync_make_key(void) {
    sync_key_ok = pthread_key_create(&sync_key, sync_at_thread_exit) == 0;
}

/* Make the calling thread's entry for st serve st, flushing whatever pool
 * it served before, and return it; NULL when the thread has no entries and
 * none can be allocated. */
static sync_tcache_t *sync_claim(ay_sync_pool_state_t *st) {
    if (sync_tc == sync_tc_none) {
        pthread_once(&sync_once, sync_make_key);
        sync_tcache_t *entries = calloc(SYNC_WAYS, sizeof *entries);
        if (entries == NULL)
            return NULL;
        if (!sync_key_ok || pthread_setspecific(sync_key, entries) != 0) {
            free(entries); /* no way to flush it at thread exit */
            return NULL;
        }
        sync_tc = entries;
    }
    sync_tcache_t *tc = sync_entry(st);
    sync_flush_entry(tc);
    tc->pool = st;
    tc->id = st->id;
    return tc;
}

ALLOY_API int alloy_sync_pool_init(alloy_sync_pool_t *sp, const alloy_pool_config_t *cfg) {
    sp->state = NULL;
    alloy_resource_t *up = cfg->upstream != NULL ? cfg->upstream : alloy_default_resource();
    ay_sync_pool_state_t *st =
        alloy_resource_allocate(up, sizeof *st, _Alignof(ay_sync_pool_state_t));
    if (st == NULL)
        return ENOMEM;
    memset(st, 0, sizeof *st);
    int err = alloy_pool_init(&st->central, cfg);
    if (err != 0) {
        alloy_resource_deallocate(up, st, sizeof *st, _Alignof(ay_sync_pool_state_t));
        return err;
    }
    pthread_mutex_init(&st->lock, NULL);
    st->upstream = up;
    pthread_mutex_lock(&sync_registry_lock);
    st->id = sync_next_id++;
    st->reg_next = sync_registry;
    sync_registry = st;
    pthread_mutex_unlock(&sync_registry_lock);
    sp->state = st;
    return 0;
}

ALLOY_API void alloy_sync_pool_destroy(alloy_sync_pool_t *sp) {
    ay_sync_pool_state_t *st = sp->state;
    if (st == NULL)
        return;
    pthread_mutex_lock(&sync_registry_lock);
    for (ay_sync_pool_state_t **at = &sync_registry; *at != NULL; at = &(*at)->reg_next)
        if (*at == st) {
            *at = st->reg_next;
            break;
        }
    pthread_mutex_unlock(&sync_registry_lock);
    /* The calling thread's entry would be forgotten later anyway; drop it
     * now so its slots do not linger. */
    sync_tcache_t *tc = sync_entry(st);
    if (tc->id == st->id)
        memset(tc, 0, sizeof *tc);
    alloy_pool_destroy(&st->central); /* cached slots point into its chunks */
    pthread_mutex_destroy(&st->lock);
    alloy_resource_deallocate(st->upstream, st, sizeof *st, _Alignof(ay_sync_pool_state_t));
    sp->state = NULL;
}

static __attribute__((noinline)) void *sync_alloc_slow(ay_sync_pool_state_t *st,
                                                       sync_tcache_t *tc) {
    void *first = NULL;
    if (!(st->central.flags & ALLOY_POOL_CHECKED) && tc->id != st->id)
        tc = sync_claim(st);
    if ((st->central.flags & ALLOY_POOL_CHECKED) || tc == NULL) {
        pthread_mutex_lock(&st->lock);
        first = alloy_pool_alloc(&st->central);
        pthread_mutex_unlock(&st->lock);
        return first;
    }
    pthread_mutex_lock(&st->lock);
    for (int i = 0; i < ALLOY_SYNC_POOL_BATCH; i++) {
        void *q = alloy_pool_alloc(&st->central);
        if (q == NULL)
            break;
        if (first == NULL) {
            first = q;
        } else {
            *(void **)q = tc->free;
            tc->free = q;
            tc->count++;
        }
    }
    pthread_mutex_unlock(&st->lock);
    return first;
}

ALLOY_API void *alloy_sync_pool_alloc(alloy_sync_pool_t *sp) {
    ay_sync_pool_state_t *st = sp->state;
    sync_tcache_t *tc = sync_entry(st);
    void *p = tc->free;
    if (ALLOY_UNLIKELY(tc->id != st->id || p == NULL))
        return sync_alloc_slow(st, tc);
    tc->free = *(void **)p;
    tc->count--;
    return p;
}

static __attribute__((noinline)) void sync_free_slow(ay_sync_pool_state_t *st, sync_tcache_t *tc,
                                                     void *p) {
    if (!(st->central.flags & ALLOY_POOL_CHECKED) && tc->id != st->id)
        tc = sync_claim(st);
    if ((st->central.flags & ALLOY_POOL_CHECKED) || tc == NULL) {
        pthread_mutex_lock(&st->lock);
        alloy_pool_free(&st->central, p);
        pthread_mutex_unlock(&st->lock);
        return;
    }
    if (tc->count >= SYNC_TC_MAX) {
        /* Detach a batch and give it back to the centre. */
        void *batch = tc->free, *last = batch;
        for (int i = 1; i < ALLOY_SYNC_POOL_BATCH; i++)
            last = *(void **)last;
        tc->free = *(void **)last;
        *(void **)last = NULL;
        tc->count -= ALLOY_SYNC_POOL_BATCH;
        sync_return(st, batch);
    }
    *(void **)p = tc->free;
    tc->free = p;
    tc->count++;
}

ALLOY_API void alloy_sync_pool_free(alloy_sync_pool_t *sp, void *p) {
    ay_sync_pool_state_t *st = sp->state;
    sync_tcache_t *tc = sync_entry(st);
    if (ALLOY_UNLIKELY(tc->id != st->id || tc->count >= SYNC_TC_MAX))
        return sync_free_slow(st, tc, p);
    *(void **)p = tc->free;
    tc->free = p;
    tc->count++;
}

ALLOY_API void alloy_sync_pool_thread_flush(alloy_sync_pool_t *sp) {
    ay_sync_pool_state_t *st = sp->state;
    sync_tcache_t *tc = sync_entry(st);
    if (tc->id == st->id) {
        sync_return(st, tc->free);
        tc->free = NULL;
        tc->count = 0;
    }
}

ALLOY_API unsigned alloy_sync_pool_errors(const alloy_sync_pool_t *sp) {
    ay_sync_pool_state_t *st = sp->state;
    pthread_mutex_lock(&st->lock);
    unsigned n = alloy_pool_errors(&st->central);
    pthread_mutex_unlock(&st->lock);
    return n;
}

ALLOY_API size_t alloy_sync_pool_slot_size(const alloy_sync_pool_t *sp) {
    return sp->state->central.slot_size;
}
