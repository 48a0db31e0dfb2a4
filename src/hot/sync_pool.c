/* sync_pool.c - the thread-safe fixed-size pool: per-thread shards over a
 * central alloy_pool_t, with no lock shared by all threads on the fast path.
 *
 * A thread gets a small index once (ay_hot_thread_index) and always works on
 * shard index & mask.  A shard is a free list with its own mutex on its own
 * cache line; with no more threads than shards, its lock is never
 * contended.  A shard that runs dry takes ALLOY_SYNC_POOL_BATCH slots from
 * the central pool; one that holds more than twice that gives a batch back,
 * so memory freed by one thread becomes available to the others.  When the
 * central pool cannot grow (fixed capacity, or upstream failure) the thread
 * takes the slots of the other shards, one shard at a time, before it
 * gives up.  The checked flavour skips the shards and works on the central
 * pool under its lock, so the central pool sees every alloc and free.
 *
 * Lock order: a shard lock may be held while taking the central lock; the
 * central lock is never held while taking a shard lock, and no thread holds
 * two shard locks.
 *
 * Invariants: every free slot is on exactly one shard list or in the
 * central pool; shard->count is the length of shard->free.
 */
#include <alloy/pool.h>
#include <alloy/resource.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "hot.h"

#define SYNC_CACHE_LINE 64
#define SYNC_MAX_SHARDS 64u

typedef struct sync_shard {
    _Alignas(SYNC_CACHE_LINE) pthread_mutex_t lock;
    void *free;   /* intrusive list of free slots */
    size_t count; /* slots on it */
} sync_shard_t;

struct ay_sync_pool_state {
    pthread_mutex_t lock;       /* guards central */
    alloy_pool_t central;       /* where slots come from and go back to */
    alloy_resource_t *upstream; /* allocated this struct */
    size_t bytes;               /* size of this struct, shards included */
    unsigned mask;              /* shards - 1 */
    sync_shard_t shards[];      /* a power of two of them */
};

static atomic_uint sync_next_index;
static __thread unsigned sync_index_plus1; /* 0: not given yet */

unsigned ay_hot_thread_index(void)
{
    if (ALLOY_UNLIKELY(sync_index_plus1 == 0))
        sync_index_plus1 = atomic_fetch_add_explicit(&sync_next_index, 1, memory_order_relaxed) + 1;
    return sync_index_plus1 - 1;
}

static unsigned sync_shard_count(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned want = n > 0 ? (unsigned)n * 2 : 4, shards = 4;
    while (shards < want && shards < SYNC_MAX_SHARDS)
        shards *= 2;
    return shards;
}

ALLOY_API int alloy_sync_pool_init(alloy_sync_pool_t *sp, const alloy_pool_config_t *cfg)
{
    sp->state = NULL;
    alloy_resource_t *up = cfg->upstream != NULL ? cfg->upstream : alloy_default_resource();
    unsigned nshards = sync_shard_count();
    size_t bytes = sizeof(struct ay_sync_pool_state) + nshards * sizeof(sync_shard_t);
    struct ay_sync_pool_state *st = alloy_resource_allocate(up, bytes, SYNC_CACHE_LINE);
    if (st == NULL)
        return ENOMEM;
    memset(st, 0, bytes);
    int err = alloy_pool_init(&st->central, cfg);
    if (err != 0) {
        alloy_resource_deallocate(up, st, bytes, SYNC_CACHE_LINE);
        return err;
    }
    pthread_mutex_init(&st->lock, NULL);
    st->upstream = up;
    st->bytes = bytes;
    st->mask = nshards - 1;
    for (unsigned i = 0; i < nshards; i++)
        pthread_mutex_init(&st->shards[i].lock, NULL);
    sp->state = st;
    return 0;
}

ALLOY_API void alloy_sync_pool_destroy(alloy_sync_pool_t *sp)
{
    struct ay_sync_pool_state *st = sp->state;
    if (st == NULL)
        return;
    alloy_pool_destroy(&st->central); /* the shard lists point into its chunks */
    for (unsigned i = 0; i <= st->mask; i++)
        pthread_mutex_destroy(&st->shards[i].lock);
    pthread_mutex_destroy(&st->lock);
    alloy_resource_deallocate(st->upstream, st, st->bytes, SYNC_CACHE_LINE);
    sp->state = NULL;
}

/* Take up to ALLOY_SYNC_POOL_BATCH slots from the central pool: one is
 * returned, the rest pushed on shard sh (whose lock the caller holds). */
static void *sync_refill(struct ay_sync_pool_state *st, sync_shard_t *sh)
{
    void *first = NULL;
    pthread_mutex_lock(&st->lock);
    for (int i = 0; i < ALLOY_SYNC_POOL_BATCH; i++) {
        void *q = alloy_pool_alloc(&st->central);
        if (q == NULL)
            break;
        if (first == NULL) {
            first = q;
        } else {
            *(void **)q = sh->free;
            sh->free = q;
            sh->count++;
        }
    }
    pthread_mutex_unlock(&st->lock);
    return first;
}

/* The central pool is dry: take the free slots of the other shards, one
 * shard at a time.  Returns one slot or NULL. */
static void *sync_steal(struct ay_sync_pool_state *st, sync_shard_t *mine)
{
    for (unsigned i = 0; i <= st->mask; i++) {
        sync_shard_t *sh = &st->shards[i];
        if (sh == mine)
            continue;
        pthread_mutex_lock(&sh->lock);
        void *list = sh->free;
        sh->free = NULL;
        sh->count = 0;
        pthread_mutex_unlock(&sh->lock);
        if (list == NULL)
            continue;
        void *p = list;
        list = *(void **)p;
        /* The rest goes to our own shard. */
        pthread_mutex_lock(&mine->lock);
        while (list != NULL) {
            void *q = list;
            list = *(void **)q;
            *(void **)q = mine->free;
            mine->free = q;
            mine->count++;
        }
        pthread_mutex_unlock(&mine->lock);
        return p;
    }
    return NULL;
}

ALLOY_API void *alloy_sync_pool_alloc(alloy_sync_pool_t *sp)
{
    struct ay_sync_pool_state *st = sp->state;
    if (ALLOY_UNLIKELY(st->central.flags & ALLOY_POOL_CHECKED)) {
        pthread_mutex_lock(&st->lock);
        void *p = alloy_pool_alloc(&st->central);
        pthread_mutex_unlock(&st->lock);
        return p;
    }
    sync_shard_t *sh = &st->shards[ay_hot_thread_index() & st->mask];
    pthread_mutex_lock(&sh->lock);
    void *p = sh->free;
    if (ALLOY_LIKELY(p != NULL)) {
        sh->free = *(void **)p;
        sh->count--;
    } else {
        p = sync_refill(st, sh);
    }
    pthread_mutex_unlock(&sh->lock);
    if (ALLOY_UNLIKELY(p == NULL))
        p = sync_steal(st, sh);
    return p;
}

ALLOY_API void alloy_sync_pool_free(alloy_sync_pool_t *sp, void *p)
{
    struct ay_sync_pool_state *st = sp->state;
    if (ALLOY_UNLIKELY(st->central.flags & ALLOY_POOL_CHECKED)) {
        pthread_mutex_lock(&st->lock);
        alloy_pool_free(&st->central, p);
        pthread_mutex_unlock(&st->lock);
        return;
    }
    sync_shard_t *sh = &st->shards[ay_hot_thread_index() & st->mask];
    void *spill = NULL;
    pthread_mutex_lock(&sh->lock);
    *(void **)p = sh->free;
    sh->free = p;
    if (ALLOY_UNLIKELY(++sh->count > 2 * ALLOY_SYNC_POOL_BATCH)) {
        /* Detach a batch to give back to the centre outside this lock. */
        spill = sh->free;
        void *last = spill;
        for (int i = 1; i < ALLOY_SYNC_POOL_BATCH; i++)
            last = *(void **)last;
        sh->free = *(void **)last;
        *(void **)last = NULL;
        sh->count -= ALLOY_SYNC_POOL_BATCH;
    }
    pthread_mutex_unlock(&sh->lock);
    if (spill != NULL) {
        pthread_mutex_lock(&st->lock);
        while (spill != NULL) {
            void *q = spill;
            spill = *(void **)q;
            alloy_pool_free(&st->central, q);
        }
        pthread_mutex_unlock(&st->lock);
    }
}

ALLOY_API unsigned alloy_sync_pool_errors(const alloy_sync_pool_t *sp)
{
    struct ay_sync_pool_state *st = sp->state;
    pthread_mutex_lock(&st->lock);
    unsigned n = alloy_pool_errors(&st->central);
    pthread_mutex_unlock(&st->lock);
    return n;
}

ALLOY_API size_t alloy_sync_pool_slot_size(const alloy_sync_pool_t *sp)
{
    return sp->state->central.slot_size;
}
