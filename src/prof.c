/* SPDX-License-Identifier: MIT */
/* prof.c - the heap profiler's sampling (see prof.h): the byte countdown's
 * random intervals, the record of a sampled block with its stack, and what
 * its resize and free do to the record.  The records and stacks themselves
 * are prof_store.c's; writing profiles and the leak report is prof_out.c's.
 *
 * Invariants: span.prof is set (under the store's lock) only here, when a
 * sample's record is made, and cleared only here, when the block is freed;
 * a thread's generator is 0 until its first allocation arms it; without
 * prof:true the countdown is re-armed to PROF_NEVER, so it does not run out
 * again; the stack is captured before the store's lock is taken, and the
 * thread is inside a busy section (never sampled) from the capture until
 * its record is made; the stash holds only one-page LARGE spans of
 * automatic heaps, still mapped in the pagemap, and nstash changes only
 * under the lock. */
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
#include "prof_out.h"
#include "prof_store.h"
#include "unwind.h"

void *const ay_prof_null = AY_LIST_END;

#define PROF_NEVER (INT64_MAX / 4) /* a countdown that never runs out */

/* The thread's own generator (whether it is inside the profiler is
 * prof_store.h's ay_prof_busy). */
typedef struct prof_thread {
    uint64_t rng; /* xorshift64* state; 0 until the thread is armed */
} prof_thread_t;
static __thread prof_thread_t prof_thr __attribute__((tls_model("initial-exec")));

#define S ay_prof_store

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
    uint64_t mean = AY_LOAD(&S.sample_mean);
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

AY_STARTUP_TEXT bool ay_prof_tick(size_t size) {
    prof_thread_t *t = &prof_thr;
    if (!S.enabled) {
        ay_tls.prof_left = PROF_NEVER;
        return false;
    }
    if (ay_prof_busy.busy) { /* an allocation inside the profiler: count it, never sample it */
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
    return AY_LOAD(&S.active);
}

void ay_prof_record(ay_span_t *s, size_t size, const void *heap) {
    uintptr_t pcs[AY_UNWIND_MAX];
    ay_prof_enter();
    unsigned n = ay_unwind(pcs, AY_UNWIND_MAX, self_lo, self_hi);
    /* the weights: 1/p allocations (in 1/AY_PROF_FIX units) and size/p bytes */
    uint64_t mean = AY_LOAD(&S.sample_mean);
    double p = mean <= 1 ? 1 : prof_one_minus_exp_neg((double)(size ? size : 1) / (double)mean);
    uint64_t est_n = (uint64_t)((double)AY_PROF_FIX / p + 0.5);
    uint64_t est_bytes = (uint64_t)((double)size / p + 0.5);
    bool dump = false;
    pthread_mutex_lock(&S.lock);
    ay_prof_rec_t *r = ay_prof_store_add(pcs, n, heap, size, est_n, est_bytes);
    if (!r) {
        pthread_mutex_unlock(&S.lock);
        ay_prof_leave();
        return;
    }
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
    ay_prof_store_unlink(r);
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

/* ---- set-up ---- */

AY_STARTUP_TEXT void ay_prof_init(void) {
    bool enabled = ay_conf.prof || ay_conf.prof_leak;
    ay_prof_store_init(enabled, ay_conf.prof_active, ay_conf.prof_sample, ay_conf.prof_interval);
    if (!enabled)
        return;
    int is_main = 0;
    if (ay_unwind_object_range((uintptr_t)&ay_prof_record, &self_lo, &self_hi, &is_main) != 0 ||
        is_main)
        self_lo = self_hi = 0; /* linked into the program: its frames stay (see PROFILING.md) */
}
