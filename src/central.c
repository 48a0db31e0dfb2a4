/* SPDX-License-Identifier: MIT */
/* central.c - the central caches (central.h): one per size class and heap,
 * each a list of the spans of its class that have free objects, and a
 * span's free objects as an intrusive list, then a bump region.
 *
 * Invariants (under the cache's lock): a span is on `nonempty` exactly
 * when it has a free object (on its list, or in its bump region); `used` is
 * the span's objects out in thread caches or in use, and a span whose
 * `used` reaches 0 leaves for its page heap, which is called only after the
 * lock is dropped; free_objects and span_pages are the sums over the
 * class's spans.  A fetch writes the links of never-used objects after the
 * lock is dropped, so no thread waits on another's page faults; every object
 * that comes back is checked (its span, its class, its offset) before it is
 * linked: by the transfer path's walk (transfer.c) for the spans its batch
 * recorded, here for every other. */
#include "central.h"

#include "conf.h"
#include "error.h"
#include "lock.h"
#include "pagemap.h"
#include "secure.h"

void ay_central_init(ay_central_t *c, ay_pageheap_t *pages, unsigned cls, bool cached) {
    pthread_mutex_init(&c->lock, NULL);
    ay_list_init(&c->nonempty);
    c->pages = pages;
    c->cls = cls;
    c->bin = cached ? (uint8_t)(cls + 1) : 0;
    c->list = (uint16_t)(c->bin * AY_BIN_BYTES);
    /* last, published: a size that is not 0 says the rest is set */
    __atomic_store_n(&c->size, (uint32_t)ay_policy_class_size(cls), __ATOMIC_RELEASE);
}

void ay_central_lock(ay_central_t *c) {
    if (AY_UNLIKELY(ay_lock_take(&c->lock)))
        c->contended++;
}

void ay_central_unlock(ay_central_t *c) { pthread_mutex_unlock(&c->lock); }
void ay_central_reset_lock(ay_central_t *c) { pthread_mutex_init(&c->lock, NULL); }

/* A run of never-used objects taken from a span's bump region, whose links
 * are written after the central lock is dropped: writing a link into each
 * object is what faults a fresh span's pages in, and other threads should
 * not wait for that.  Under the lock nothing of the run is written: the
 * list goes on from `after`, a word of the record, and the link into the
 * run's first object (`before`) and out of its last are written with the
 * run's own, in the run's order (address order; the secure flavour's is
 * random, drawn then: secure.h). */
typedef struct bump_run {
    uintptr_t start; /* first object */
    uint32_t count;  /* objects, at least 2 */
    uint32_t size;   /* object size */
    void **before;   /* the link that is to point at the run's first object */
    void *after;     /* the link its last object is to hold (encoded, at this word) */
} bump_run_t;

#define FETCH_RUNS 8 /* runs a fetch defers; more are linked under the lock */

typedef struct fetch {
    void *first;  /* the list (an encoded link, as every link: secure.h) */
    void **link;  /* where the next object goes: &first, or the last object */
    uint32_t got; /* objects on the list */
    unsigned nruns;
    bump_run_t runs[FETCH_RUNS];
} fetch_t;

static void fetch_append(fetch_t *f, void *o) {
    ay_link_set(f->link, o);
    f->link = (void **)o;
    f->got++;
}

/* Take up to `want` objects from span s onto the list: its returned objects
 * first (the whole list at once when it fits, for a thread cache, whose
 * malloc checks each link as it hands the object out: secure.h), then
 * never-used ones from its bump region.  An object taken alone has its link
 * checked here, and so has the last of a list taken whole, whose link the
 * fetch is about to write: it must be the list's end.  One that holds no
 * link was handed out already: it was freed twice, and is live. */
static uint32_t span_take(ay_span_t *s, uint32_t want, fetch_t *f) {
    uint32_t got = 0;
    if (s->nfree && s->nfree <= want && want > 1) {
        if (AY_UNLIKELY(ay_link_get_raw(s->free_tail) != AY_LIST_END))
            ay_fatal_in("malloc()", "double free, or a block written to after it was freed",
                        s->free_tail);
        ay_link_set(f->link, s->free);
        f->link = (void **)s->free_tail;
        f->got += s->nfree;
        got = s->nfree;
        s->free = s->free_tail = NULL;
        s->nfree = 0;
    }
    while (got < want && s->free) {
        void *o = s->free;
        s->free = ay_link_get(o);
        if (AY_UNLIKELY(s->free && !ay_link_plausible(s->free)))
            ay_fatal_in("malloc()", "double free, or a block written to after it was freed", o);
        s->nfree--;
        fetch_append(f, o);
        got++;
    }
    uint32_t room = (uint32_t)((s->limit - s->bump) / s->size), k = want - got;
    if (k > room)
        k = room;
    if (k >= 2 && f->nruns < FETCH_RUNS) {
        bump_run_t *r = &f->runs[f->nruns++];
        r->start = s->bump;
        r->count = k;
        r->size = s->size;
        r->before = f->link;
        f->link = &r->after;
        f->got += k;
        s->bump += (uintptr_t)k * s->size;
        got += k;
    } else if (ay_secure_random && k >= 2) {
        void *last, *first = ay_link_shuffled(s->bump, k, s->size, ay_random(), &last);
        ay_link_set(f->link, first);
        f->link = (void **)last;
        f->got += k;
        s->bump += (uintptr_t)k * s->size;
        got += k;
    } else {
        for (; k > 0; k--, got++) {
            fetch_append(f, (void *)s->bump);
            s->bump += s->size;
        }
    }
    s->used += got;
    return got;
}

/* After the lock: link each deferred run, its objects and the links into
 * and out of it.  From the last run back: a run's `before` may be the
 * `after` of the run just before it, which must hold its link first. */
static void fetch_link_runs(fetch_t *f) {
    for (unsigned i = f->nruns; i-- > 0;) {
        bump_run_t *r = &f->runs[i];
        void *first, *last;
        if (ay_secure_random) {
            first = ay_link_shuffled(r->start, r->count, r->size, ay_random(), &last);
        } else {
            uintptr_t o = r->start;
            for (uint32_t k = 1; k < r->count; k++, o += r->size)
                ay_link_set((void *)o, (void *)(o + r->size));
            first = (void *)r->start;
            last = (void *)o;
        }
        ay_link_set(last, ay_link_get(&r->after));
        ay_link_set(r->before, first);
    }
}

static bool span_exhausted(const ay_span_t *s) { return !s->free && s->bump >= s->limit; }

/* A new span for a batch of `want`, carved for c's class.  Called without
 * c's lock: the span is the caller's alone until it joins c's list. */
static ay_span_t *span_new(ay_central_t *c, uint32_t want) {
    uint32_t pages = ay_policy_span_pages_for(&ay_conf.batch, c->size, want);
    ay_span_t *s = ay_pageheap_alloc(c->pages, pages, 1, AY_SPAN_SMALL, c->list);
    if (!s)
        return NULL;
    s->owner.central = c;
    s->cls = (uint16_t)c->cls;
    s->size = c->size;
    s->capacity = ay_policy_span_objects(c->size, pages);
    s->used = 0;
    s->free = s->free_tail = NULL;
    s->nfree = 0;
    s->bump = s->start;
    s->limit = s->start + (uintptr_t)s->capacity * c->size;
    return s;
}

/* The span a fetch takes from next: the fullest of the first AY_SPAN_SCAN
 * on the list (policy.h).  The list is not empty. */
static ay_span_t *fullest(ay_central_t *c) {
    ay_span_t *best = c->nonempty.next, *s = best->next;
    for (unsigned k = 1; k < AY_SPAN_SCAN && s != &c->nonempty; k++, s = s->next)
        if (ay_policy_span_fuller(s->used, s->capacity, best->used, best->capacity))
            best = s;
    return best;
}

uint32_t ay_central_fetch(ay_central_t *c, uint32_t want, void **head, ay_run_t *run) {
    fetch_t f;
    f.first = NULL;
    f.link = &f.first;
    f.got = 0;
    f.nruns = 0;
    ay_central_lock(c);
    c->fetches++;
    while (f.got < want && !ay_list_empty(&c->nonempty)) {
        ay_span_t *s = fullest(c);
        span_take(s, want - f.got, &f);
        if (span_exhausted(s))
            ay_list_remove(s);
    }
    if (f.got < want) {
        ay_central_unlock(c);
        ay_span_t *s = span_new(c, want);
        ay_central_lock(c);
        if (s) {
            c->spans_allocated++;
            c->span_pages += s->npages;
            c->free_objects += s->capacity;
            span_take(s, want - f.got, &f);
            if (!span_exhausted(s))
                ay_list_push(&c->nonempty, s);
        }
    }
    /* a last run, after which nothing was taken, goes to the caller as it is */
    bump_run_t *last = f.nruns ? &f.runs[f.nruns - 1] : NULL;
    if (run && last && f.link == &last->after) {
        ay_link_set(last->before, NULL);
        run->next = last->start;
        run->end = last->start + (uintptr_t)last->count * last->size;
        f.nruns--;
    } else {
        ay_link_set(f.link, NULL);
        if (run)
            run->next = run->end = 0;
    }
    if (f.got < want)
        c->short_fetches++;
    c->objects_out += f.got;
    c->free_objects -= f.got;
    ay_central_unlock(c);
    fetch_link_runs(&f);
    *head = ay_link_get(&f.first);
    return f.got;
}

/* Span s of c took n of its objects back (onto its free list or its bump
 * region; was_exhausted: it had none free before): the counts follow, and
 * the span goes back on the list of spans with free objects, or, when no
 * object of it is out any more, leaves the class (true: the caller gives it
 * to its page heap once c's lock is dropped).  Under c's lock. */
static bool span_took_back(ay_central_t *c, ay_span_t *s, uint32_t n, bool was_exhausted) {
    s->used -= n;
    c->objects_in += n;
    c->free_objects += n;
    if (s->used == 0) {
        if (!was_exhausted)
            ay_list_remove(s);
        c->free_objects -= s->capacity;
        c->spans_freed++;
        c->span_pages -= s->npages;
        return true;
    }
    if (was_exhausted)
        ay_list_push(&c->nonempty, s);
    return false;
}

/* Objects of one span in a batch being released: a chain in the order the
 * objects would have been pushed one by one (the last one first). */
typedef struct release_group {
    ay_span_t *span;
    void *head, *tail;
    uint32_t count;
    uint32_t last; /* index in the batch of the group's last object */
    uintptr_t top; /* the highest object of the group */
} release_group_t;

#define RELEASE_GROUPS 16 /* spans a release handles per lock round */

/* Give each group back to its span, under the owning central caches' locks
 * (one at a time), then the spans left with no object out to their page
 * heaps, in the order they became empty, with no lock held. */
static void release_groups(release_group_t *g, unsigned ng) {
    ay_central_t *c = NULL; /* the central cache whose lock is held */
    release_group_t *empty[RELEASE_GROUPS];
    unsigned nempty = 0;
    for (unsigned i = 0; i < ng; i++) {
        ay_span_t *s = g[i].span;
        ay_central_t *owner = s->owner.central;
        if (owner != c) { /* a span of another heap: switch locks */
            if (c)
                ay_central_unlock(c);
            c = owner;
            ay_central_lock(c);
        }
        /* more objects back than the span handed out, or one it never
         * handed out: a double free, or a pointer that is not a block */
        if (AY_UNLIKELY(s->used < g[i].count))
            ay_fatal("free(): double free (more blocks returned to a span than it handed out)",
                     g[i].head);
        if (AY_UNLIKELY(g[i].top >= s->bump))
            ay_fatal("free(): invalid pointer (a block that was never allocated)",
                     (void *)g[i].top);
        bool was_exhausted = span_exhausted(s);
        ay_link_set(g[i].tail, s->free);
        if (!s->free)
            s->free_tail = g[i].tail;
        s->free = g[i].head;
        s->nfree += g[i].count;
        if (span_took_back(c, s, g[i].count, was_exhausted))
            empty[nempty++] = &g[i];
    }
    if (c)
        ay_central_unlock(c);
    for (unsigned i = 1; i < nempty; i++) /* insertion sort by `last`: a few entries */
        for (unsigned j = i; j > 0 && empty[j - 1]->last > empty[j]->last; j--) {
            release_group_t *t = empty[j];
            empty[j] = empty[j - 1];
            empty[j - 1] = t;
        }
    for (unsigned i = 0; i < nempty; i++)
        ay_pageheap_free(empty[i]->span->owner.central->pages, empty[i]->span);
}

ay_span_t *ay_central_block_span(const void *o, unsigned cls) {
    ay_span_t *s = ay_pagemap_span(o);
    if (AY_UNLIKELY(!s || s->state != AY_SPAN_SMALL))
        ay_fatal("free(): invalid pointer in a thread cache (not a small block)", o);
    if (AY_UNLIKELY(s->cls != cls))
        ay_fatal("free(): object returned to the wrong size class", o);
    return s;
}

void ay_central_release(unsigned cls, void *head, uint32_t n) {
    ay_central_release_checked(cls, head, n, NULL, NULL, 0);
}

void ay_central_release_checked(unsigned cls, void *head, uint32_t n,
                                const ay_span_t *const *run_span, const uint32_t *run_end,
                                unsigned nrun) {
    /* the lookups (of the blocks the caller did not check) and the grouping
     * by span happen before any lock is taken; under the lock each span then
     * takes its objects at once */
    release_group_t g[RELEASE_GROUPS];
    unsigned ng = 0;
    const uint64_t magic = ay_class_magic[cls];
    const uint32_t size = (uint32_t)ay_policy_class_size(cls);
    unsigned r = 0; /* the run of block i, while r < nrun */
    for (uint32_t i = 0; i < n; i++) {
        void *o = head;
        head = ay_link_get(o);
        while (r < nrun && i >= run_end[r])
            r++;
        ay_span_t *s;
        if (r < nrun) { /* checked by the caller */
            s = (ay_span_t *)run_span[r];
        } else {
            s = ay_central_block_span(o, cls);
            ay_central_check_offset(s, o, magic, size);
        }
        unsigned k = 0;
        while (k < ng && g[k].span != s)
            k++;
        if (k == ng) {
            if (ng == RELEASE_GROUPS) {
                release_groups(g, ng);
                k = ng = 0;
            }
            g[k].span = s;
            g[k].tail = o;
            g[k].head = NULL;
            g[k].count = 0;
            g[k].top = 0;
            ng++;
        }
        if ((uintptr_t)o > g[k].top)
            g[k].top = (uintptr_t)o;
        ay_link_set(o, g[k].head); /* pushed in front, as one by one */
        g[k].head = o;
        g[k].count++;
        g[k].last = i;
    }
    release_groups(g, ng);
}

void ay_central_release_run(unsigned cls, ay_run_t *run) {
    if (run->next == run->end)
        return;
    ay_span_t *s = ay_pagemap_span((void *)run->next);
    ay_central_t *c = s->owner.central;
    uint32_t n = (uint32_t)((run->end - run->next) / s->size);
    ay_central_lock(c);
    bool back = s->bump == run->end; /* nothing was handed out after the run */
    bool empty = false;
    if (back) {
        bool was_exhausted = span_exhausted(s);
        s->bump = run->next;
        empty = span_took_back(c, s, n, was_exhausted);
    }
    ay_central_unlock(c);
    if (back) {
        if (empty)
            ay_pageheap_free(c->pages, s);
    } else {
        /* the region moved on: the objects go back one by one, linked now */
        for (uintptr_t o = run->next; o + s->size < run->end; o += s->size)
            ay_link_set((void *)o, (void *)(o + s->size));
        ay_link_set((void *)(run->end - s->size), NULL);
        ay_central_release(cls, (void *)run->next, n);
    }
    run->next = run->end = 0;
}

uint64_t ay_central_sparse_bytes(ay_central_t *c) {
    /* a size of 0: never set up (its lock is not initialised); else the
     * acquire pairs with ay_central_init's release: the list head is set */
    uint32_t size = __atomic_load_n(&c->size, __ATOMIC_ACQUIRE);
    if (!size)
        return 0;
    uint64_t objects = 0;
    ay_central_lock(c); /* the statistics' one lock: the list is walked under it */
    for (const ay_span_t *s = c->nonempty.next; s != &c->nonempty; s = s->next)
        if ((uint64_t)s->used * 4 < s->capacity)
            objects += s->capacity - s->used;
    ay_central_unlock(c);
    return objects * size;
}

bool ay_central_holds(ay_span_t *s, const void *p) {
    ay_central_t *c = s->owner.central;
    ay_central_lock(c);
    bool found = (uintptr_t)p >= s->bump;
    void *q = s->free;
    for (uint32_t i = 0; i < s->nfree && !found; i++, q = ay_link_get(q))
        found = q == p;
    ay_central_unlock(c);
    return found;
}
