/* SPDX-License-Identifier: MIT */
/* prof.c - the heap profiler's sampling and record store (see prof.h).
 * Writing profiles and the leak report is prof_out.c's. */
#define _GNU_SOURCE
#include "prof.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conf.h"
#include "error.h"
#include "heap.h"
#include "os.h"
#include "prof_store.h"
#include "unwind.h"

void *const ay_prof_null = NULL;

#define PROF_NEVER (INT64_MAX / 4) /* a countdown that never runs out */

/* The thread's own state: its generator, and whether it is inside the
 * profiler (so that an allocation made there is never sampled). */
typedef struct prof_thread {
    uint64_t rng;       /* xorshift64* state; 0 until the thread is armed */
    int64_t saved_left; /* the countdown while busy */
    uint8_t busy;
} prof_thread_t;
static __thread prof_thread_t prof_thr __attribute__((tls_model("initial-exec")));

ay_prof_store_t ay_prof_store = {.lock = PTHREAD_MUTEX_INITIALIZER};
#define S ay_prof_store

static bool enabled;               /* prof:true at start-up */
static bool active;                /* sampling (prof_active, prof.active); relaxed */
static uint64_t sample_mean;       /* prof_sample, prof.sample; relaxed */
static uintptr_t self_lo, self_hi; /* liballoy's own code: frames left out */

/* ---- arithmetic without libm ---- */

/* ln(x) for x in (0, 1]: x = m * 2^e, ln m by the atanh series. */
static double prof_ln(double x) {
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    int e = (int)((bits >> 52) & 0x7ff) - 1023;
    bits = (bits & ~((uint64_t)0x7ff << 52)) | ((uint64_t)1023 << 52);
    double m;
    memcpy(&m, &bits, sizeof m); /* in [1, 2) */
    if (m > 1.4142135623730951) {
        m /= 2;
        e++;
    }
    double z = (m - 1) / (m + 1), z2 = z * z, term = z, sum = 0;
    for (int k = 1; k < 14; k += 2) { /* |z| < 0.172: seven terms, exact to 1e-12 */
        sum += term / k;
        term *= z2;
    }
    return 2 * sum + e * 0.6931471805599453;
}

/* 1 - exp(-x) for x >= 0. */
static double prof_one_minus_exp_neg(double x) {
    if (x > 40)
        return 1;
    if (x < 1e-3)
        return x * (1 - x / 2 * (1 - x / 3 * (1 - x / 4)));
    /* exp(-x) = exp(-x / 2^k)^(2^k), with x / 2^k small */
    int k = 0;
    double y = x;
    while (y > 1e-3) {
        y /= 2;
        k++;
    }
    double e = 1, term = 1;
    for (int i = 1; i < 8; i++) {
        term *= -y / i;
        e += term;
    }
    while (k--)
        e *= e;
    return 1 - e;
}

static uint64_t rng_next(prof_thread_t *t) {
    uint64_t x = t->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t->rng = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Bytes to the next sample: exponential, of mean sample_mean; -1 (every
 * allocation) for a mean of 1. */
static int64_t draw(prof_thread_t *t) {
    uint64_t mean = AY_LOAD(&sample_mean);
    if (mean <= 1)
        return -1;
    double u = (double)((rng_next(t) >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
    double v = -prof_ln(u) * (double)mean;
    return v < (double)PROF_NEVER ? (int64_t)v : PROF_NEVER;
}

static void arm(prof_thread_t *t) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t seed = (uint64_t)(uintptr_t)t ^ ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec;
    seed ^= (uint64_t)getpid() << 40;
    t->rng = seed ? seed : 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 4; i++)
        rng_next(t);
}

bool ay_prof_tick(size_t size) {
    prof_thread_t *t = &prof_thr;
    if (!enabled) {
        ay_tls.prof_left = PROF_NEVER;
        return false;
    }
    if (t->busy) { /* an allocation inside the profiler: count it, never sample it */
        __atomic_add_fetch(&S.nested, 1, __ATOMIC_RELAXED);
        ay_tls.prof_left = -1;
        return false;
    }
    if (!t->rng) { /* the thread's first allocation: its first interval starts here */
        arm(t);
        int64_t left = draw(t);
        if (left >= 0 && (uint64_t)left >= size) {
            ay_tls.prof_left = left - (int64_t)size;
            return false;
        }
    }
    ay_tls.prof_left = draw(t);
    return AY_LOAD(&active);
}

/* ---- busy sections: allocations made inside are never sampled ---- */

void ay_prof_enter(void) {
    prof_thread_t *t = &prof_thr;
    if (t->busy++ == 0) {
        t->saved_left = ay_tls.prof_left;
        ay_tls.prof_left = -1; /* so that each nested allocation is counted */
    }
}

void ay_prof_leave(void) {
    prof_thread_t *t = &prof_thr;
    if (--t->busy == 0)
        ay_tls.prof_left = t->saved_left;
}

/* ---- the store ---- */

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

static void live_unlink(ay_prof_rec_t *r) {
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

void ay_prof_record(ay_span_t *s, size_t size, const void *heap) {
    uintptr_t pcs[AY_UNWIND_MAX];
    ay_prof_enter();
    unsigned n = ay_unwind(pcs, AY_UNWIND_MAX, self_lo, self_hi);
    /* the weights: 1/p allocations (in 1/AY_PROF_FIX units) and size/p bytes */
    uint64_t mean = AY_LOAD(&sample_mean);
    double p = mean <= 1 ? 1 : prof_one_minus_exp_neg((double)(size ? size : 1) / (double)mean);
    uint64_t est_n = (uint64_t)((double)AY_PROF_FIX / p + 0.5);
    uint64_t est_bytes = (uint64_t)((double)size / p + 0.5);
    bool dump = false;
    pthread_mutex_lock(&S.lock);
    ay_prof_rec_t *r = rec_new();
    if (!r) {
        S.lost++;
        pthread_mutex_unlock(&S.lock);
        ay_prof_leave();
        return;
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
    if (ay_conf.prof_interval && S.est_allocated >= S.next_interval) {
        S.next_interval = S.est_allocated + ay_conf.prof_interval;
        dump = true;
    }
    s->prof = r;
    pthread_mutex_unlock(&S.lock);
    if (dump)
        ay_prof_dump_kind('i');
    ay_prof_leave();
}

void ay_prof_resize(ay_span_t *s, size_t size) {
    ay_prof_rec_t *r = s->prof;
    pthread_mutex_lock(&S.lock);
    ay_prof_stack_t *st = r->stack;
    /* the same weight (1/p of the size that was counted), the new size */
    uint64_t est_bytes =
        r->size ? (uint64_t)((double)r->est_bytes * (double)size / (double)r->size + 0.5)
                : (uint64_t)size * r->est_n / AY_PROF_FIX;
    st->live_bytes += size - r->size;
    st->live_est_bytes += est_bytes - r->est_bytes;
    st->alloc_bytes += size - r->size;
    st->alloc_est_bytes += est_bytes - r->est_bytes;
    r->size = size;
    r->est_bytes = est_bytes;
    pthread_mutex_unlock(&S.lock);
}

bool ay_prof_release(ay_span_t *s) {
    ay_prof_rec_t *r = s->prof;
    s->prof = NULL;
    /* a one-page block of an automatic heap (never destroyed) is kept for
     * the next sample, which saves two trips through the page heap */
    bool keep = s->state == AY_SPAN_LARGE && s->npages == 1 && ay_span_heap(s)->cached;
    pthread_mutex_lock(&S.lock);
    live_unlink(r);
    keep = keep && S.nstash < AY_PROF_STASH;
    if (keep) {
        S.stash[S.nstash] = s;
        AY_STORE(&S.nstash, S.nstash + 1); /* read without the lock, below */
    }
    pthread_mutex_unlock(&S.lock);
    return keep;
}

ay_span_t *ay_prof_stash_take(void) {
    ay_span_t *s = NULL;
    if (!AY_LOAD(&S.nstash))
        return NULL;
    pthread_mutex_lock(&S.lock);
    if (S.nstash) {
        s = S.stash[S.nstash - 1];
        AY_STORE(&S.nstash, S.nstash - 1);
    }
    pthread_mutex_unlock(&S.lock);
    return s;
}

void ay_prof_forget_heap(const void *heap) {
    if (!enabled)
        return;
    pthread_mutex_lock(&S.lock);
    if (S.live.next) {
        for (ay_prof_rec_t *r = S.live.next, *next; r != &S.live; r = next) {
            next = r->next;
            if (r->heap == heap)
                live_unlink(r);
        }
    }
    pthread_mutex_unlock(&S.lock);
}

/* ---- set-up ---- */

void ay_prof_init(void) {
    enabled = ay_conf.prof || ay_conf.prof_leak;
    active = ay_conf.prof_active;
    sample_mean = ay_conf.prof_sample;
    S.next_interval = ay_conf.prof_interval;
    S.full.depth = 0;
    if (!enabled)
        return;
    int is_main = 0;
    if (ay_unwind_object_range((uintptr_t)&ay_prof_record, &self_lo, &self_hi, &is_main) != 0 ||
        is_main)
        self_lo = self_hi = 0; /* linked into the program: its frames stay (see PROFILING.md) */
}

void ay_prof_fork_prepare(void) { pthread_mutex_lock(&S.lock); }
void ay_prof_fork_parent(void) { pthread_mutex_unlock(&S.lock); }
void ay_prof_fork_child(void) {
    pthread_mutex_init(&S.lock, NULL);
    S.dump_seq = 0; /* the child's files carry its own pid */
}

/* ---- control ---- */

bool ay_prof_enabled(void) { return enabled; }
bool ay_prof_is_active(void) { return enabled && AY_LOAD(&active); }
void ay_prof_set_active(bool on) { AY_STORE(&active, on); }
uint64_t ay_prof_sample_mean(void) { return AY_LOAD(&sample_mean); }

int ay_prof_set_sample_mean(uint64_t mean) {
    if (mean == 0)
        return EINVAL;
    AY_STORE(&sample_mean, mean);
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
