/* SPDX-License-Identifier: MIT */
/* prof_store.c - the heap profiler's store (see prof_store.h): its memory,
 * the table of stacks, the live records, the settings the sampler reads, the
 * busy sections, and the counts alloy_ctl reads.  Every function that
 * changes the store takes its lock, or says that its caller holds it. */
#include "prof_store.h"

#include <errno.h>
#include <string.h>

#include "os.h"
#include "tcache.h"

ay_prof_store_t ay_prof_store = {.lock = PTHREAD_MUTEX_INITIALIZER};
#define S ay_prof_store

__thread ay_prof_busy_t ay_prof_busy __attribute__((tls_model("initial-exec")));

AY_STARTUP_TEXT void ay_prof_store_init(bool enabled, bool active, uint64_t sample_mean,
                                        uint64_t interval) {
    S.enabled = enabled;
    S.active = active;
    S.sample_mean = sample_mean;
    S.next_interval = interval;
    S.full.depth = 0;
}

/* ---- busy sections: allocations made inside are never sampled ---- */

void ay_prof_enter(void) {
    ay_prof_busy_t *t = &ay_prof_busy;
    if (t->busy++ == 0) {
        t->saved_left = ay_tls.prof_left;
        ay_tls.prof_left = -1; /* so that each nested allocation is counted */
    }
}

void ay_prof_leave(void) {
    ay_prof_busy_t *t = &ay_prof_busy;
    if (--t->busy == 0)
        ay_tls.prof_left = t->saved_left;
}

/* ---- memory, stacks and records (the caller holds the lock) ---- */

/* Memory for the store, in chunks from the OS; NULL when it cannot grow. */
static void *store_alloc(size_t size) {
    size = (size + 15) & ~(size_t)15;
    if ((size_t)(S.arena_end - S.arena_cur) < size) {
        size_t chunk =
            size > AY_PROF_CHUNK ? (size + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1) : AY_PROF_CHUNK;
        char *c = ay_os_map(chunk, AY_PAGE_SIZE);
        if (!c)
            return NULL;
        S.store_bytes += chunk;
        S.arena_cur = c;
        S.arena_end = c + chunk;
    }
    void *p = S.arena_cur;
    S.arena_cur += size;
    return p;
}

static uint64_t stack_hash(const uintptr_t *pcs, unsigned n) {
    uint64_t h = 0xcbf29ce484222325ULL ^ n;
    for (unsigned i = 0; i < n; i++) {
        h ^= pcs[i];
        h *= 0x100000001b3ULL;
        h ^= h >> 29;
    }
    return h;
}

/* The stack entry for pcs[0..n), created if new (under the lock). */
static ay_prof_stack_t *stack_get(const uintptr_t *pcs, unsigned n) {
    if (!S.buckets) {
        S.buckets = ay_os_map(AY_PROF_BUCKETS * sizeof *S.buckets, AY_PAGE_SIZE);
        if (!S.buckets)
            return &S.full;
        S.store_bytes += AY_PROF_BUCKETS * sizeof *S.buckets;
    }
    uint64_t h = stack_hash(pcs, n);
    ay_prof_stack_t **b = &S.buckets[h & (AY_PROF_BUCKETS - 1)];
    for (ay_prof_stack_t *st = *b; st; st = st->chain)
        if (st->hash == h && st->depth == n && !memcmp(st->pcs, pcs, n * sizeof *pcs))
            return st;
    size_t bytes = sizeof(ay_prof_stack_t) + n * sizeof *pcs;
    if (S.stack_bytes + bytes > AY_PROF_STACK_STORE)
        return &S.full;
    ay_prof_stack_t *st = store_alloc(bytes);
    if (!st)
        return &S.full;
    memset(st, 0, sizeof *st);
    st->hash = h;
    st->depth = n;
    memcpy(st->pcs, pcs, n * sizeof *pcs);
    st->chain = *b;
    *b = st;
    st->all = S.stacks;
    S.stacks = st;
    S.nstacks++;
    S.stack_bytes += bytes;
    return st;
}

static ay_prof_rec_t *rec_new(void) {
    ay_prof_rec_t *r = S.rec_free;
    if (r) {
        S.rec_free = r->next;
        return r;
    }
    return store_alloc(sizeof *r);
}

static void live_link(ay_prof_rec_t *r) {
    ay_prof_rec_t *head = &S.live;
    if (!head->next)
        head->next = head->prev = head;
    r->next = head->next;
    r->prev = head;
    head->next->prev = r;
    head->next = r;
}

void ay_prof_store_unlink(ay_prof_rec_t *r) {
    r->prev->next = r->next;
    r->next->prev = r->prev;
    ay_prof_stack_t *st = r->stack;
    st->live_n--;
    st->live_bytes -= r->size;
    st->live_est_n -= r->est_n;
    st->live_est_bytes -= r->est_bytes;
    S.live_count--;
    r->next = S.rec_free;
    S.rec_free = r;
}

ay_prof_rec_t *ay_prof_store_add(const uintptr_t *pcs, unsigned n, const void *heap, uint64_t size,
                                 uint64_t est_n, uint64_t est_bytes) {
    ay_prof_rec_t *r = rec_new();
    if (!r) {
        S.lost++;
        return NULL;
    }
    ay_prof_stack_t *st = stack_get(pcs, n);
    r->stack = st;
    r->heap = heap;
    r->size = size;
    r->est_n = est_n;
    r->est_bytes = est_bytes;
    live_link(r);
    st->live_n++;
    st->live_bytes += size;
    st->live_est_n += est_n;
    st->live_est_bytes += est_bytes;
    st->alloc_n++;
    st->alloc_bytes += size;
    st->alloc_est_n += est_n;
    st->alloc_est_bytes += est_bytes;
    S.samples++;
    S.live_count++;
    S.est_allocated += est_bytes;
    return r;
}

void ay_prof_forget_heap(const void *heap) {
    if (!S.enabled)
        return;
    pthread_mutex_lock(&S.lock);
    if (S.live.next) {
        for (ay_prof_rec_t *r = S.live.next, *next; r != &S.live; r = next) {
            next = r->next;
            if (r->heap == heap)
                ay_prof_store_unlink(r);
        }
    }
    pthread_mutex_unlock(&S.lock);
}

/* ---- fork ---- */

void ay_prof_fork_prepare(void) { pthread_mutex_lock(&S.lock); }
void ay_prof_fork_parent(void) { pthread_mutex_unlock(&S.lock); }
void ay_prof_fork_child(void) {
    pthread_mutex_init(&S.lock, NULL);
    S.dump_seq = 0; /* the child's files carry its own pid */
}

/* ---- control ---- */

bool ay_prof_is_active(void) { return S.enabled && AY_LOAD(&S.active); }
void ay_prof_set_active(bool on) { AY_STORE(&S.active, on); }
uint64_t ay_prof_sample_mean(void) { return AY_LOAD(&S.sample_mean); }

int ay_prof_set_sample_mean(uint64_t mean) {
    if (mean == 0)
        return EINVAL;
    AY_STORE(&S.sample_mean, mean);
    return 0;
}

void ay_prof_reset(void) {
    pthread_mutex_lock(&S.lock);
    for (ay_prof_stack_t *st = S.stacks; st; st = st->all) {
        st->alloc_n = st->live_n;
        st->alloc_bytes = st->live_bytes;
        st->alloc_est_n = st->live_est_n;
        st->alloc_est_bytes = st->live_est_bytes;
    }
    S.full.alloc_n = S.full.live_n;
    S.full.alloc_bytes = S.full.live_bytes;
    S.full.alloc_est_n = S.full.live_est_n;
    S.full.alloc_est_bytes = S.full.live_est_bytes;
    pthread_mutex_unlock(&S.lock);
}

void ay_prof_read_counts(ay_prof_counts_t *c) {
    pthread_mutex_lock(&S.lock);
    c->samples = S.samples;
    c->live = S.live_count;
    c->stacks = S.nstacks;
    c->store_bytes = S.store_bytes;
    c->nested = AY_LOAD(&S.nested);
    c->lost = S.lost;
    pthread_mutex_unlock(&S.lock);
}
