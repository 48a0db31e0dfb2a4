/* SPDX-License-Identifier: MIT */
/* transfer.c - the cross-thread path (transfer.h): batches cut and checked
 * in one walk, inserted into and taken from a node's transfer caches in O(1)
 * under a short lock, released to their spans when a transfer cache
 * overflows or its batches sit unused.
 *
 * Invariants: transfer.h's for each transfer cache; a node's set is mapped on its
 * first use and never unmapped (node 0's is static, so a process whose
 * metadata cannot be mapped still has one); a set's bit `used` c is set
 * before its transfer cache of class c first holds anything, and never cleared. */
#include "transfer.h"

#include "central.h"
#include "conf.h"
#include "error.h"
#include "lock.h"
#include "meta.h"
#include "os.h"
#include "pagemap.h"
#include "secure.h"
#include "topology.h"

static ay_transfer_set_t set0;
static ay_transfer_set_t *sets[AY_MAX_NODES] = {&set0};

ay_transfer_set_t *ay_transfer_set(unsigned node) {
    ay_transfer_set_t *set = __atomic_load_n(&sets[node], __ATOMIC_ACQUIRE);
    if (AY_LIKELY(set))
        return set;
    set = ay_meta_alloc(sizeof *set); /* zero: every transfer cache empty and unlocked */
    if (!set)
        return NULL;
    ay_transfer_set_t *none = NULL;
    if (!__atomic_compare_exchange_n(&sets[node], &none, set, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
        return none; /* another thread mapped it first (ours stays unused: metadata) */
    return set;
}

static void transfer_lock(ay_transfer_t *x) {
    if (AY_UNLIKELY(ay_lock_take(&x->lock)))
        AY_STORE(&x->contended, x->contended + 1);
}

/* Batches taken off a transfer cache, to be released to their spans once
 * its lock is dropped. */
typedef struct to_release {
    unsigned n;
    ay_batch_t b[AY_TRANSFER_SLOTS];
} to_release_t;

static void take_oldest(ay_transfer_t *x, to_release_t *out) {
    ay_batch_t *b = &x->slot[x->first];
    out->b[out->n++] = *b;
    x->first = (x->first + 1) % AY_TRANSFER_SLOTS;
    AY_STORE(&x->count, x->count - 1);
    AY_STORE(&x->objects, x->objects - b->n);
    AY_STORE(&x->released, x->released + b->n);
    AY_STORE(&x->low, ay_policy_transfer_low(x->low, x->count));
}

/* The blocks of a batch with owners o are no longer in a transfer cache:
 * their owners' `lent` counts go down (central.h). */
static void lent_sub(const ay_batch_owners_t *o) {
    for (uint32_t k = 0; k < o->n; k++)
        __atomic_sub_fetch(&o->c[k]->lent, o->count[k], __ATOMIC_RELAXED);
}

/* Batch b's blocks to their spans, which its walk recorded: no block is
 * looked up or checked again but those of spans beyond the record. */
static void batch_release(unsigned cls, const ay_batch_t *b) {
    ay_central_release_checked(cls, b->head, b->n, b->run_span, b->run_end, b->nrun);
}

static void release_all(unsigned cls, const to_release_t *s) {
    for (unsigned i = 0; i < s->n; i++) {
        lent_sub(&s->b[i].own);
        batch_release(cls, &s->b[i]);
    }
}

/* Insert batch b into set's transfer cache of class cls; what no longer
 * fits (the oldest batches first) is released to its spans: beyond its
 * bytes and slots, or, when no take reached it for AY_TRANSFER_IDLE_MS, beyond
 * AY_TRANSFER_IDLE_BATCHES batches. */
static void insert(ay_transfer_set_t *set, unsigned cls, const ay_batch_t *b, uint32_t size) {
    ay_transfer_t *x = &set->c[cls];
    uint64_t bound = ay_conf.transfer_bytes / size, n = b->n;
    to_release_t s;
    s.n = 0;
    for (uint32_t k = 0; k < b->own.n; k++) /* (before: stats never miss them) */
        __atomic_add_fetch(&b->own.c[k]->lent, b->own.count[k], __ATOMIC_RELAXED);
    uint64_t bit = (uint64_t)1 << (cls % 64);
    if (AY_UNLIKELY(!(__atomic_load_n(&set->used[cls / 64], __ATOMIC_ACQUIRE) & bit))) {
        /* its first insert: the decay rounds, the stats and fork see it from
         * now on (fork holds use_lock while it locks the transfer caches in use) */
        pthread_mutex_lock(&set->use_lock);
        __atomic_or_fetch(&set->used[cls / 64], bit, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&set->use_lock);
    }
    uint64_t now = ay_os_now_ms();
    int64_t decay_ms = ay_conf.decay_ms;
    transfer_lock(x);
    /* beyond the slots (a few only for a transfer cache no thread took from lately)
     * or the bound: the oldest go (policy.h) */
    while (ay_policy_transfer_evicts(x->count, x->objects, b->n, bound, now, x->take_ms, decay_ms))
        take_oldest(x, &s);
    x->slot[(x->first + x->count) % AY_TRANSFER_SLOTS] = *b;
    AY_STORE(&x->count, x->count + 1);
    AY_STORE(&x->objects, x->objects + n);
    AY_STORE(&x->inserted, x->inserted + n);
    pthread_mutex_unlock(&x->lock);
    release_all(cls, &s);
}

/* The index of owner c in batch b's owners, added when new; -1 when b
 * records AY_BATCH_OWNERS already. */
static int owner_index(ay_batch_t *b, ay_central_t *c) {
    ay_batch_owners_t *o = &b->own;
    for (uint32_t k = 0; k < o->n; k++)
        if (o->c[k] == c)
            return (int)k;
    if (o->n == AY_BATCH_OWNERS)
        return -1;
    o->c[o->n] = c;
    o->count[o->n] = 0;
    return (int)o->n++;
}

void *ay_transfer_give(ay_transfer_set_t *set, unsigned node, unsigned cls, void *head,
                       uint32_t n) {
    const uint64_t magic = ay_class_magic[cls];
    const uint32_t size = (uint32_t)ay_policy_class_size(cls);
    bool here = set && ay_conf.transfer_bytes >= size;
    uintptr_t lo = 0, hi = 0; /* the objects of the last block's span */
    void *last = head, *mark = head;
    ay_batch_t b;
    b.head = head;
    b.n = n;
    b.own.n = b.nrun = 0;
    bool record = true;        /* runs are still recorded */
    const ay_span_t *s = NULL; /* the last block's span */
    int own = 0;               /* its owner in b */
    /* one walk: each block's place (its span looked up and checked only when
     * it leaves the last one's: a run, recorded), its link, and Brent's cycle
     * detection as it goes */
    for (uint32_t i = 1, power = 1, lam = 0;; i++) {
        uintptr_t a = (uintptr_t)last;
        if (a - lo >= hi - lo) {
            s = ay_central_block_span(last, cls);
            const ay_central_t *c = s->owner.central;
            if (AY_UNLIKELY(!c->bin || (ay_numa && (unsigned)c->pages->node != node)))
                here = false; /* an uncached heap's, or another node's: to the spans */
            if ((own = owner_index(&b, s->owner.central)) < 0) {
                here = false; /* blocks of too many heaps: to their spans */
                own = 0;
            }
            lo = s->start;
            hi = s->limit;
            if (record) { /* block i - 1 starts a run */
                if (b.nrun)
                    b.run_end[b.nrun - 1] = i - 1;
                if (b.nrun < AY_BATCH_RUNS)
                    b.run_span[b.nrun++] = s;
                else
                    record = false;
            }
        }
        b.own.count[own]++;
        ay_central_check_offset(s, last, magic, size);
        if (i == n)
            break;
        void *next = ay_link_get(last); /* not the end yet: an address */
        if (AY_UNLIKELY(!ay_link_plausible(next)))
            ay_fatal("free list corrupted: a block was written to after it was freed", last);
        last = next;
        if (AY_UNLIKELY(last == mark))
            ay_fatal("free(): double free (a block is twice in a thread cache)", last);
        if (++lam == power) {
            mark = last;
            power *= 2;
            lam = 0;
        }
    }
    if (record)
        b.run_end[b.nrun - 1] = n;
    void *rest = ay_link_get(last); /* read before the batch is anyone else's */
    if (AY_UNLIKELY(rest && !ay_link_plausible(rest)))
        ay_fatal_bad_link(last);
    ay_link_set(last, NULL);
    if (here)
        insert(set, cls, &b, size);
    else
        batch_release(cls, &b);
    return rest;
}

uint32_t ay_transfer_take(ay_transfer_set_t *set, unsigned cls, void **head) {
    ay_transfer_t *x = set ? &set->c[cls] : NULL;
    if (!x || AY_LOAD(&x->count) == 0) /* a racy peek: an empty one costs no lock */
        return 0;
    uint64_t now = ay_os_now_ms();
    transfer_lock(x);
    uint32_t n = 0;
    ay_batch_owners_t got; /* the batch's owners, for lent_sub */
    x->take_ms = now;
    if (x->count) {
        uint32_t at = ay_policy_transfer_take(x->count);
        ay_batch_t *b = &x->slot[(x->first + at) % AY_TRANSFER_SLOTS];
        got = b->own;
        *head = b->head;
        n = b->n;
        AY_STORE(&x->count, x->count - 1);
        AY_STORE(&x->objects, x->objects - n);
        AY_STORE(&x->taken, x->taken + n);
        AY_STORE(&x->takes, x->takes + 1);
        AY_STORE(&x->low, ay_policy_transfer_low(x->low, x->count));
    }
    pthread_mutex_unlock(&x->lock);
    if (n)
        lent_sub(&got);
    return n;
}

/* One round on one transfer cache: the batches below its low-water mark
 * (every batch when `all`) are released to their spans. */
static void decay_one(ay_transfer_t *x, unsigned cls, bool all) {
    if (AY_LOAD(&x->count) == 0 && AY_LOAD(&x->low) == 0)
        return;
    to_release_t s;
    s.n = 0;
    transfer_lock(x);
    ay_transfer_round_t round = ay_policy_transfer_decay(x->count, x->low, all);
    for (uint32_t k = round.release; k > 0; k--)
        take_oldest(x, &s);
    AY_STORE(&x->low, round.low);
    pthread_mutex_unlock(&x->lock);
    release_all(cls, &s);
}

/* Call f on every used transfer cache, in node and class order. */
static void each_used(void (*f)(ay_transfer_t *, unsigned, bool), bool arg) {
    for (unsigned n = 0; n < AY_MAX_NODES; n++) {
        ay_transfer_set_t *set = AY_LOAD(&sets[n]);
        for (unsigned w = 0; set && w < (AY_NUM_CLASSES + 63) / 64; w++)
            for (uint64_t m = AY_LOAD(&set->used[w]); m; m &= m - 1) {
                unsigned cls = w * 64 + (unsigned)__builtin_ctzll(m);
                f(&set->c[cls], cls, arg);
            }
    }
}

void ay_transfer_decay(bool all) { each_used(decay_one, all); }

bool ay_transfer_hold_any(void) {
    for (unsigned n = 0; n < AY_MAX_NODES; n++) {
        ay_transfer_set_t *set = AY_LOAD(&sets[n]);
        for (unsigned w = 0; set && w < (AY_NUM_CLASSES + 63) / 64; w++)
            for (uint64_t m = AY_LOAD(&set->used[w]); m; m &= m - 1)
                if (AY_LOAD(&set->c[w * 64 + (unsigned)__builtin_ctzll(m)].count))
                    return true;
    }
    return false;
}

/* Node's transfer cache of class cls, or NULL when it never came into use (one never
 * used is not read: its page may not be resident). */
static ay_transfer_t *used_transfer(unsigned node, unsigned cls) {
    ay_transfer_set_t *set = node < AY_MAX_NODES ? AY_LOAD(&sets[node]) : NULL;
    if (!set || !(AY_LOAD(&set->used[cls / 64]) >> (cls % 64) & 1))
        return NULL;
    return &set->c[cls];
}

void ay_transfer_read(unsigned node, unsigned cls, ay_transfer_counts_t *out) {
    *out = (ay_transfer_counts_t){0, 0, 0, 0, 0, 0};
    const ay_transfer_t *x = used_transfer(node, cls);
    if (!x)
        return;
    out->objects = AY_LOAD(&x->objects);
    out->inserted = AY_LOAD(&x->inserted);
    out->taken = AY_LOAD(&x->taken);
    out->takes = AY_LOAD(&x->takes);
    out->released = AY_LOAD(&x->released);
    out->contended = AY_LOAD(&x->contended);
}

bool ay_transfer_holds(unsigned node, unsigned cls, const void *p) {
    ay_transfer_t *x = used_transfer(node, cls);
    if (!x)
        return false;
    bool found = false;
    transfer_lock(x);
    for (uint32_t i = 0; i < x->count && !found; i++) {
        const ay_batch_t *b = &x->slot[(x->first + i) % AY_TRANSFER_SLOTS];
        const void *q = b->head;
        for (uint32_t k = 0; k < b->n && q && !found; k++, q = ay_link_get(q))
            found = q == p;
    }
    pthread_mutex_unlock(&x->lock);
    return found;
}

static void lock_one(ay_transfer_t *x, unsigned cls, bool arg) {
    (void)cls;
    (void)arg;
    pthread_mutex_lock(&x->lock);
}
static void unlock_one(ay_transfer_t *x, unsigned cls, bool arg) {
    (void)cls;
    (void)arg;
    pthread_mutex_unlock(&x->lock);
}
static void reset_one(ay_transfer_t *x, unsigned cls, bool arg) {
    (void)cls;
    (void)arg;
    pthread_mutex_init(&x->lock, NULL);
}

/* Every set's use_lock, in node order: held, no transfer cache comes into use. */
static void each_set(int (*f)(pthread_mutex_t *)) {
    for (unsigned n = 0; n < AY_MAX_NODES; n++) {
        ay_transfer_set_t *set = AY_LOAD(&sets[n]);
        if (set)
            f(&set->use_lock);
    }
}

static int reset_mutex(pthread_mutex_t *m) { return pthread_mutex_init(m, NULL); }

void ay_transfer_lock_all(void) {
    each_set(pthread_mutex_lock);
    each_used(lock_one, false);
}
void ay_transfer_unlock_all(void) {
    each_used(unlock_one, false);
    each_set(pthread_mutex_unlock);
}
void ay_transfer_after_fork_child(void) {
    each_used(reset_one, false);
    each_set(reset_mutex);
}
