/* SPDX-License-Identifier: MIT */
/* model.c - the discrete-event model of the thread cache, central cache and
 * page heap.  See model.h for the conservation law it checks.
 *
 * Layout of the simulated address space: system blocks of 256 pages are
 * numbered in the order they are taken; page p lives at address p << 12.  An
 * object is its address: span start page << 12 plus slot * class size.
 *
 * Invariants (the conservation check verifies their sum at every sample):
 *  - every page taken from the "OS" belongs to exactly one span record, FREE
 *    (in a page-heap bucket by page count) or USED (owned by one class), and
 *    pagemap[page] names it;
 *  - a USED span's capacity = its free slots (in central) + its objects in
 *    the thread cache + its live objects;
 *  - a USED span is on its class's central list iff it has a free slot; a span
 *    whose slots are all free is given back to the page heap at once;
 *  - FREE spans never touch each other inside a block (they are merged).
 * Behaviour follows Appendix A of seed 002 as alloy implements it, through
 * the state machine of src/policy.h (ay_policy_on_miss, _on_overflow,
 * _on_scavenge, _list_limit, _scavenge_due), the same calls src/tcache.c
 * makes, and the transfer cache's rules (ay_policy_transfer_*), the calls
 * src/transfer.c makes:
 *  - miss: fetch n (current batch) from central, then the batch grows;
 *    the fetched objects are handed out in the order central took them;
 *  - free: push; a free that finds the list at its limit overflows: the
 *    most recently pushed objects go back, and the batch grows;
 *  - what goes back (overflow, scavenge) is one batch: with a transfer
 *    cache (cfg.transfer_bytes), it is inserted whole into the class's transfer cache
 *    of at most AY_TRANSFER_SLOTS batches and transfer_bytes, whose oldest
 *    batches go to their spans to make room, and a miss takes the batch
 *    inserted last before it fetches from the spans; with cfg.clock, the
 *    rules on the clock too (sim_clock_ms): a transfer cache no miss took from for
 *    AY_TRANSFER_IDLE_MS keeps AY_TRANSFER_IDLE_BATCHES on an insert, and
 *    at every miss and overflow a decay round, when one is due, releases each transfer cache's batches below its low-water mark (all
 *    of these are policy.h's ay_policy_transfer_* calls, as in
 *    src/transfer.c); without a transfer cache, each object goes back to its
 *    own span;
 *  - every AY_SCAVENGE_PERIOD misses and overflows, when the lists hold more
 *    than tcache_max_bytes (if set), every list gives back half and halves
 *    its batch;
 *  - central fetch: take from spans with free slots (the fullest of the
 *    first AY_SPAN_SCAN on the class's list first); if still short take ONE new span of span_pages(S, want) pages,
 *    take what fits, and stop (a short fetch);
 *  - page heap: best fit over free spans, split off the tail, merge
 *    neighbours inside the block, never give blocks back.
 */
#include "model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NIL UINT32_MAX
#define BLOCK_PAGES AY_MAX_SPAN_PAGES
#define BLOCK_BYTES ((uint64_t)BLOCK_PAGES << AY_PAGE_SHIFT)

enum { SPAN_UNUSED = 0, SPAN_FREE = 1, SPAN_USED = 2 };

typedef struct model_span {
    uint32_t start, pages; /* first page, page count */
    uint32_t cap, nfree;   /* objects it holds, of which free in central */
    uint32_t fresh;        /* of those, never used: the bottom of the slot stack */
    uint32_t *slots;       /* stack of free slot numbers (USED only) */
    uint32_t prev, next;   /* central list (USED) or page-heap bucket (FREE) */
    uint32_t cls, size;    /* class and object size (USED only) */
    uint32_t state;        /* SPAN_* */
} model_span_t;

typedef struct model_list {
    uint64_t *objs; /* stack: objs[len-1] is the head of the intrusive list */
    uint32_t len, cap;
    uint32_t n;           /* current batch */
    uint32_t run;         /* of len, the never-used objects liballoy keeps unlinked (its run:
                     tcache.h), at the bottom of the stack */
    uint64_t rnext, rend; /* per-CPU: the bin's reserve, never-used objects [rnext, rend) of
                             one span, not in the list (cpucache.c) */
} model_list_t;

/* A batch in a transfer cache: objs[0] is its list's head (handed out first). */
typedef struct model_batch {
    uint64_t *objs;
    uint32_t n;
} model_batch_t;

typedef struct model_transfer {
    model_batch_t slot[AY_TRANSFER_SLOTS];
    uint32_t first, count; /* oldest batch, batches held */
    uint32_t low;          /* the fewest batches held since the last decay round */
    uint64_t objects;      /* objects held */
    uint64_t take_ms;      /* when a take last reached it */
} model_transfer_t;

typedef struct model {
    const sim_config_t *cfg;
    model_span_t *spans; /* span records, indexed */
    uint32_t nspans, spans_cap;
    uint32_t *unused; /* recycled record indices */
    uint32_t nunused, unused_cap;
    uint32_t *pagemap; /* page -> span record */
    uint32_t npages, pagemap_cap;
    uint32_t bucket[BLOCK_PAGES + 1]; /* free spans by page count */
    uint32_t central[AY_NUM_CLASSES]; /* spans with free slots, per class */
    model_list_t tc[AY_NUM_CLASSES];
    model_transfer_t transfer[AY_NUM_CLASSES]; /* the transfer caches (cfg.transfer_bytes) */
    uint32_t k_halves;
    ay_tc_clock_t clock;    /* misses and overflows since the last byte-limit check */
    uint64_t now_ms;        /* the time of the op being replayed (sim_clock_ms) */
    uint64_t last_round_ms; /* when the last decay round ran */
    uint64_t committed;
    /* the per-CPU cache (cfg.percpu), indexed by bin (class + 1), as
     * src/cpucache.c's state: capacity and batch, the used marks, the clock
     * hand, the capacity in bytes and its limit */
    uint32_t cpu_cap[AY_NUM_CLASSES + 1], cpu_batch[AY_NUM_CLASSES + 1];
    uint32_t cpu_slot_max[AY_NUM_CLASSES + 1], cpu_size[AY_NUM_CLASSES + 1];
    uint8_t cpu_used[AY_NUM_CLASSES + 1];
    unsigned cpu_hand;
    uint64_t cpu_cap_bytes, cpu_limit;
    uint32_t cpu_room[AY_NUM_CLASSES + 1];      /* the slots of the bin's chunk (0: none yet) */
    uint32_t cpu_bump;                          /* the region's slots never given */
    uint32_t cpu_nfree[AY_POLICY_CHUNK_ORDERS]; /* chunks given back, by order */
    model_list_t scratch; /* a fetch's objects on their way to a per-CPU list */
    int measuring;
    int oom;
    sim_metrics_t *met;
} model_t;

/* ---- span records and lists ---------------------------------------------- */

static uint32_t model_span_new(model_t *m) {
    if (m->nunused)
        return m->unused[--m->nunused];
    if (m->nspans == m->spans_cap) {
        uint32_t nc = m->spans_cap ? 2 * m->spans_cap : 1024;
        model_span_t *ns = realloc(m->spans, sizeof *ns * nc);
        uint32_t *nu = realloc(m->unused, sizeof *nu * nc);
        if (!ns || !nu) {
            if (ns)
                m->spans = ns;
            if (nu)
                m->unused = nu;
            m->oom = 1;
            return NIL;
        }
        m->spans = ns;
        m->unused = nu;
        m->spans_cap = m->unused_cap = nc;
    }
    memset(&m->spans[m->nspans], 0, sizeof m->spans[0]);
    return m->nspans++;
}

static void model_span_recycle(model_t *m, uint32_t i) {
    m->spans[i].state = SPAN_UNUSED;
    m->unused[m->nunused++] = i;
}

static void model_list_push(model_t *m, uint32_t *head, uint32_t i) {
    model_span_t *s = &m->spans[i];
    s->prev = NIL;
    s->next = *head;
    if (*head != NIL)
        m->spans[*head].prev = i;
    *head = i;
}

static void model_list_remove(model_t *m, uint32_t *head, uint32_t i) {
    model_span_t *s = &m->spans[i];
    if (s->prev != NIL)
        m->spans[s->prev].next = s->next;
    else
        *head = s->next;
    if (s->next != NIL)
        m->spans[s->next].prev = s->prev;
    s->prev = s->next = NIL;
}

static void model_map(model_t *m, uint32_t start, uint32_t pages, uint32_t i) {
    for (uint32_t p = 0; p < pages; p++)
        m->pagemap[start + p] = i;
}

/* ---- page heap ------------------------------------------------------------- */

static uint32_t pageheap_grow(model_t *m) {
    if (m->npages + BLOCK_PAGES > m->pagemap_cap) {
        uint32_t nc = m->pagemap_cap ? 2 * m->pagemap_cap : 64 * BLOCK_PAGES;
        uint32_t *np = realloc(m->pagemap, sizeof *np * nc);
        if (!np) {
            m->oom = 1;
            return NIL;
        }
        m->pagemap = np;
        m->pagemap_cap = nc;
    }
    uint32_t i = model_span_new(m);
    if (i == NIL)
        return NIL;
    model_span_t *s = &m->spans[i];
    s->start = m->npages;
    s->pages = BLOCK_PAGES;
    s->state = SPAN_FREE;
    s->prev = s->next = NIL;
    model_map(m, s->start, s->pages, i);
    m->npages += BLOCK_PAGES;
    m->committed += BLOCK_BYTES;
    return i;
}

static uint32_t pageheap_alloc(model_t *m, uint32_t pages) {
    uint32_t i = NIL;
    for (uint32_t p = pages; p <= BLOCK_PAGES; p++) {
        if (m->bucket[p] != NIL) {
            i = m->bucket[p];
            model_list_remove(m, &m->bucket[p], i);
            break;
        }
    }
    if (i == NIL && (i = pageheap_grow(m)) == NIL)
        return NIL;
    if (m->spans[i].pages > pages) {
        uint32_t t = model_span_new(m); /* may move m->spans */
        if (t == NIL)
            return NIL;
        model_span_t *s = &m->spans[i], *tail = &m->spans[t];
        tail->start = s->start + pages;
        tail->pages = s->pages - pages;
        tail->state = SPAN_FREE;
        s->pages = pages;
        model_map(m, tail->start, tail->pages, t);
        model_list_push(m, &m->bucket[tail->pages], t);
    }
    m->spans[i].state = SPAN_USED;
    return i;
}

static void pageheap_free(model_t *m, uint32_t i) {
    model_span_t *s = &m->spans[i];
    s->state = SPAN_FREE;
    if (s->start % BLOCK_PAGES != 0) {
        uint32_t l = m->pagemap[s->start - 1];
        if (m->spans[l].state == SPAN_FREE) {
            model_span_t *ls = &m->spans[l];
            model_list_remove(m, &m->bucket[ls->pages], l);
            model_map(m, s->start, s->pages, l);
            ls->pages += s->pages;
            model_span_recycle(m, i);
            i = l;
            s = ls;
        }
    }
    uint32_t end = s->start + s->pages;
    if (end % BLOCK_PAGES != 0) {
        uint32_t r = m->pagemap[end];
        if (m->spans[r].state == SPAN_FREE) {
            model_span_t *rs = &m->spans[r];
            model_list_remove(m, &m->bucket[rs->pages], r);
            model_map(m, rs->start, rs->pages, i);
            s->pages += rs->pages;
            model_span_recycle(m, r);
        }
    }
    model_list_push(m, &m->bucket[s->pages], i);
}

/* ---- central cache --------------------------------------------------------- */

static int tcache_push(model_t *m, model_list_t *l, uint64_t obj) {
    if (l->len == l->cap) {
        uint32_t nc = l->cap ? 2 * l->cap : 64;
        uint64_t *no = realloc(l->objs, sizeof *no * nc);
        if (!no) {
            m->oom = 1;
            return -1;
        }
        l->objs = no;
        l->cap = nc;
    }
    l->objs[l->len++] = obj;
    return 0;
}

/* Moves up to `want` objects of span i onto l, its returned ones first;
 * *bump gets how many of them were never used (liballoy's bump region). */
static uint32_t central_take(model_t *m, uint32_t i, uint32_t want, model_list_t *l,
                             uint32_t *bump) {
    model_span_t *s = &m->spans[i];
    uint32_t take = s->nfree < want ? s->nfree : want, returned = s->nfree - s->fresh;
    *bump = take > returned ? take - returned : 0;
    s->fresh -= *bump;
    uint64_t base = (uint64_t)s->start << AY_PAGE_SHIFT;
    for (uint32_t k = 0; k < take; k++) {
        uint32_t slot = s->slots[--s->nfree];
        if (tcache_push(m, l, base + (uint64_t)slot * s->size))
            return k;
    }
    return take;
}

/* The span a fetch takes from next: the fullest of the first AY_SPAN_SCAN
 * on the class's list, as liballoy's central cache chooses (policy.h). */
static uint32_t central_fullest(model_t *m, unsigned cls) {
    uint32_t best = m->central[cls];
    const model_span_t *b = &m->spans[best];
    uint32_t k = 1;
    for (uint32_t i = b->next; i != NIL && k < AY_SPAN_SCAN; i = m->spans[i].next, k++) {
        const model_span_t *s = &m->spans[i];
        if (ay_policy_span_fuller(s->cap - s->nfree, s->cap, b->cap - b->nfree, b->cap)) {
            best = i;
            b = s;
        }
    }
    return best;
}

/* liballoy's fetch (central.c) defers the linking of up to FETCH_RUNS runs
 * of two or more never-used objects, and the last one, when nothing was
 * taken after it, goes to the thread cache unlinked (its run).  After one
 * take of `bump` never-used objects among `took`: the run at the fetch's
 * end so far (0: none). */
#define MODEL_FETCH_RUNS 8
#define MODEL_CARVE_BATCH AY_CARVE_BATCH /* run objects a thread cache links at a time */
static uint32_t fetch_run_after(uint32_t took, uint32_t bump, unsigned *runs, uint32_t run) {
    if (took == 0)
        return run; /* nothing appended */
    if (bump >= 2 && *runs < MODEL_FETCH_RUNS) {
        ++*runs;
        return bump;
    }
    return 0; /* linked one by one: the fetch's end is not a run */
}

/* Moves up to `want` objects of class cls into l; returns how many, and
 * sets l->run to the never-used objects at the fetch's end that liballoy
 * leaves unlinked. */
static uint32_t central_fetch(model_t *m, unsigned cls, uint32_t want, model_list_t *l) {
    uint32_t got = 0, run = 0, bump, took;
    unsigned runs = 0;
    while (got < want && m->central[cls] != NIL) {
        uint32_t i =
            m->cfg->diverge & SIM_DIVERGE_FULLNESS ? m->central[cls] : central_fullest(m, cls);
        got += took = central_take(m, i, want - got, l, &bump);
        run = fetch_run_after(took, bump, &runs, run);
        if (m->spans[i].nfree == 0)
            model_list_remove(m, &m->central[cls], i);
        if (m->oom)
            return got;
    }
    if (got < want) {
        size_t S = ay_policy_class_size(cls);
        uint32_t pages = m->cfg->diverge & SIM_DIVERGE_GEOMETRY
                             ? ay_policy_span_pages(S, want)
                             : ay_policy_span_pages_for(&m->cfg->bp, S, want);
        uint32_t i = pageheap_alloc(m, pages);
        if (i == NIL)
            return got;
        model_span_t *s = &m->spans[i];
        s->cls = cls;
        s->size = (uint32_t)S;
        s->cap = ay_policy_span_objects(S, pages);
        s->slots = malloc(sizeof(uint32_t) * s->cap);
        if (!s->slots) {
            m->oom = 1;
            return got;
        }
        for (uint32_t k = 0; k < s->cap; k++)
            s->slots[k] = s->cap - 1 - k; /* slot 0 on top */
        s->nfree = s->fresh = s->cap;
        if (m->measuring)
            m->met->spans_allocated++;
        got += took = central_take(m, i, want - got, l, &bump);
        run = fetch_run_after(took, bump, &runs, run);
        if (m->spans[i].nfree > 0)
            model_list_push(m, &m->central[cls], i);
    }
    l->run = run;
    return got;
}

/* Span i took slots back, and had `was` free before: it rejoins its
 * class's list, or, with every slot free, goes back to the page heap. */
static void span_took_back(model_t *m, uint32_t i, uint32_t was) {
    model_span_t *s = &m->spans[i];
    if (was == 0)
        model_list_push(m, &m->central[s->cls], i);
    if (s->nfree == s->cap) {
        model_list_remove(m, &m->central[s->cls], i);
        free(s->slots);
        s->slots = NULL;
        if (m->measuring)
            m->met->spans_freed++;
        pageheap_free(m, i);
    }
}

static void central_release(model_t *m, uint64_t obj) {
    uint32_t i = m->pagemap[obj >> AY_PAGE_SHIFT];
    model_span_t *s = &m->spans[i];
    uint32_t slot = (uint32_t)((obj - ((uint64_t)s->start << AY_PAGE_SHIFT)) / s->size);
    s->slots[s->nfree++] = slot;
    span_took_back(m, i, s->nfree - 1);
}

/* ---- thread cache ---------------------------------------------------------- */

/* ---- transfer caches --------------------------------------------------------- */

static int transfer_on(const model_t *m, unsigned cls) {
    return !(m->cfg->diverge & SIM_DIVERGE_TRANSFER) &&
           m->cfg->transfer_bytes >= ay_policy_class_size(cls);
}

/* liballoy's decay_ms as the rules on the clock see it: only whether it is
 * -1 (never) matters to them. */
static int64_t model_decay_ms(const model_t *m) { return m->cfg->clock ? 0 : -1; }

/* The transfer cache's oldest batch, released to its spans in its list's
 * order. */
static void transfer_release_oldest(model_t *m, model_transfer_t *r) {
    model_batch_t *b = &r->slot[r->first];
    for (uint32_t k = 0; k < b->n; k++)
        central_release(m, b->objs[k]);
    free(b->objs);
    r->objects -= b->n;
    r->first = (r->first + 1) % AY_TRANSFER_SLOTS;
    r->count--;
    r->low = ay_policy_transfer_low(r->low, r->count);
}

/* Insert the batch; the oldest make room first (src/transfer.c, insert). */
static void transfer_insert(model_t *m, unsigned cls, model_batch_t b) {
    model_transfer_t *r = &m->transfer[cls];
    uint64_t bound = m->cfg->transfer_bytes / ay_policy_class_size(cls);
    /* SIM_DIVERGE_IDLE: as if a take had just reached it */
    uint64_t take_ms = m->cfg->diverge & SIM_DIVERGE_IDLE ? m->now_ms : r->take_ms;
    while (ay_policy_transfer_evicts(r->count, r->objects, b.n, bound, m->now_ms, take_ms,
                                     model_decay_ms(m)))
        transfer_release_oldest(m, r);
    r->slot[(r->first + r->count) % AY_TRANSFER_SLOTS] = b;
    r->count++;
    r->objects += b.n;
}

/* One miss or overflow: the decay round when it is due, as liballoy's
 * thread cache looks at each of them (src/heap.c, ay_heaps_decay_tick):
 * every transfer cache releases the batches below its low-water mark, in
 * class order. */
static void transfer_tick(model_t *m) {
    if (!ay_policy_decay_round_due(m->now_ms, m->last_round_ms, model_decay_ms(m)))
        return;
    m->last_round_ms = m->now_ms;
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
        model_transfer_t *r = &m->transfer[c];
        ay_transfer_round_t round = ay_policy_transfer_decay(r->count, r->low, 0);
        for (uint32_t k = round.release; k > 0; k--)
            transfer_release_oldest(m, r);
        r->low = round.low;
    }
}

/* A miss: the batch inserted last onto l, so that l pops its head first;
 * how many (0: the transfer cache was empty). */
static uint32_t transfer_take(model_t *m, unsigned cls, model_list_t *l) {
    model_transfer_t *r = &m->transfer[cls];
    if (!r->count)
        return 0;
    r->take_ms = m->now_ms;
    model_batch_t *b = &r->slot[(r->first + ay_policy_transfer_take(r->count)) % AY_TRANSFER_SLOTS];
    uint32_t n = b->n;
    for (uint32_t k = n; k > 0; k--)
        if (tcache_push(m, l, b->objs[k - 1]))
            return n - k;
    free(b->objs);
    r->count--;
    r->objects -= n;
    r->low = ay_policy_transfer_low(r->low, r->count);
    return n;
}

/* The k never-used slots top, top - 1, ..., top - k + 1 of span i go back
 * to its bump region, as ay_central_release_run's, when nothing was taken
 * from that region since (its next fresh slot is top + 1, or it has none
 * and top is its last); returns whether they did. */
static int span_run_back(model_t *m, uint32_t i, uint32_t top, uint32_t k) {
    model_span_t *s = &m->spans[i];
    if (!(s->fresh ? s->slots[s->fresh - 1] == top + 1 : top + 1 == s->cap))
        return 0;
    uint32_t was = s->nfree;
    memmove(&s->slots[s->fresh + k], &s->slots[s->fresh], sizeof(uint32_t) * (s->nfree - s->fresh));
    for (uint32_t j = 0; j < k; j++)
        s->slots[s->fresh + j] = top - j;
    s->fresh += k;
    s->nfree += k;
    span_took_back(m, i, was);
    return 1;
}

/* Give the last k objects of l's run back, as liballoy's
 * ay_central_release_run does: they are the bottom of the stack (objs[0] the
 * run's last), all of one span; while nothing was taken from that span's
 * bump region since, it takes them back as never used, else they go back as
 * returned objects, the lowest first. */
static void run_release(model_t *m, model_list_t *l, uint32_t k) {
    if (k == 0)
        return;
    uint32_t i = m->pagemap[l->objs[0] >> AY_PAGE_SHIFT];
    model_span_t *s = &m->spans[i];
    uint64_t base = (uint64_t)s->start << AY_PAGE_SHIFT;
    uint32_t top = (uint32_t)((l->objs[0] - base) / s->size); /* the run's last slot */
    if (!span_run_back(m, i, top,
                       k)) /* (a run's objects are consecutive: objs[j] is slot top - j) */
        for (uint32_t j = k; j > 0; j--)
            central_release(m, l->objs[j - 1]);
    memmove(&l->objs[0], &l->objs[k], sizeof(uint64_t) * (l->len - k));
    l->len -= k;
    l->run -= k;
}

/* Give the n most recently pushed objects of list l (of class cls) back:
 * those liballoy has linked as one batch, to the transfer cache (or each to
 * its span), and those of its run, never used, to their span. */
static void tcache_release(model_t *m, model_list_t *l, unsigned cls, uint32_t n) {
    if (m->measuring)
        m->met->objects_released += n;
    uint32_t linked = l->len - l->run, from_run = n > linked ? n - linked : 0;
    n -= from_run;
    if (!transfer_on(m, cls)) {
        for (uint32_t k = 0; k < n; k++)
            central_release(m, l->objs[--l->len]);
    } else if (n) {
        model_batch_t b = {malloc(sizeof(uint64_t) * n), n};
        if (!b.objs) {
            m->oom = 1;
            return;
        }
        for (uint32_t k = 0; k < n; k++) /* the list's head first */
            b.objs[k] = l->objs[--l->len];
        transfer_insert(m, cls, b);
    }
    run_release(m, l, from_run);
}

/* One slow-path event, which brought bytes_in bytes in; the byte-limit check
 * and scavenge when it is due. */
static void tcache_scavenge_maybe(model_t *m, uint64_t bytes_in) {
    uint64_t limit = m->cfg->tcache_max_bytes ? m->cfg->tcache_max_bytes : UINT64_MAX;
    if (!ay_policy_scavenge_due(&m->clock, bytes_in, limit) || !m->cfg->tcache_max_bytes ||
        (m->cfg->diverge & SIM_DIVERGE_SCAVENGE))
        return;
    uint64_t bytes = 0;
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
        bytes += (uint64_t)m->tc[c].len * ay_policy_class_size(c);
    if (bytes <= m->cfg->tcache_max_bytes)
        return;
    if (m->measuring)
        m->met->scavenges++;
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
        ay_tc_step_t step = ay_policy_on_scavenge(m->tc[c].n, m->tc[c].len);
        tcache_release(m, &m->tc[c], c, step.move);
        m->tc[c].n = step.batch;
    }
}

/* Reverse list l's stack of objects in place. */
static void list_reverse(model_list_t *l) {
    for (uint32_t a = 0, z = l->len; z > 1 && a < z - 1; a++, z--) {
        uint64_t x = l->objs[a];
        l->objs[a] = l->objs[z - 1];
        l->objs[z - 1] = x;
    }
}

/* A refill's counters: a slow-path call that took `got` objects, from a
 * fetch of `move` (short when it got fewer) or from the transfer cache. */
static void count_refill(model_t *m, uint32_t got, int fetched, uint32_t move) {
    if (!m->measuring)
        return;
    m->met->slow_path_calls++;
    m->met->objects_fetched += got;
    if (fetched && got < move)
        m->met->short_fetches++;
}

static uint64_t tcache_alloc(model_t *m, size_t size, unsigned *cls_out) {
    unsigned cls = ay_policy_size_class(size);
    model_list_t *l = &m->tc[cls];
    *cls_out = cls;
    if (l->len == 0) {
        size_t S = ay_policy_class_size(cls);
        ay_tc_step_t step = ay_policy_on_miss(&m->cfg->bp, S, l->n);
        uint32_t got = transfer_take(m, cls, l); /* a whole batch: never short */
        int fetched = !got;
        if (fetched) {
            got = central_fetch(m, cls, step.move, l);
            /* the real fetch links objects in the order it takes them, first
             * taken at the head: reverse our stack so that it pops in that
             * order */
            list_reverse(l);
        }
        count_refill(m, got, fetched, step.move);
        if (l->len == 0) {
            m->oom = 1;
            return 0;
        }
        l->n = step.batch;
        if (l->len == l->run) /* liballoy carves the first objects of its run */
            l->run -= l->run < MODEL_CARVE_BATCH ? l->run : MODEL_CARVE_BATCH;
        uint64_t obj = l->objs[--l->len];
        tcache_scavenge_maybe(m, (uint64_t)got * S);
        transfer_tick(m);
        return obj;
    }
    if (l->len == l->run) /* the linked objects are gone: carve (no miss) */
        l->run -= l->run < MODEL_CARVE_BATCH ? l->run : MODEL_CARVE_BATCH;
    return l->objs[--l->len];
}

static void tcache_free(model_t *m, uint64_t obj) {
    uint32_t i = m->pagemap[obj >> AY_PAGE_SHIFT];
    unsigned cls = m->spans[i].cls;
    model_list_t *l = &m->tc[cls];
    int overflow = l->len >= ay_policy_list_limit(l->n, m->k_halves);
    if (tcache_push(m, l, obj) || !overflow)
        return;
    ay_tc_step_t step = ay_policy_on_overflow(&m->cfg->bp, ay_policy_class_size(cls), l->n, l->len);
    if (m->measuring)
        m->met->overflows++;
    tcache_release(m, l, cls, step.move);
    if (!(m->cfg->diverge & SIM_DIVERGE_OVERFLOW_GROWTH))
        l->n = step.batch;
    tcache_scavenge_maybe(m, 0);
    transfer_tick(m);
}

/* ---- the per-CPU cache ------------------------------------------------------- */

/* One per-CPU cache, as src/cpucache.c runs it for a single thread on one
 * CPU (one cache in use), through policy.h's rules for it (the capacity,
 * ay_policy_cpu_*, and the batch steps, ay_policy_on_*):
 *  - a bin's list holds at most its capacity cap[b] (0 at first, batch 1);
 *    a malloc that finds it empty takes the transfer cache's newest batch
 *    (a miss), else a carve of the bin's reserve (not a miss) when it has
 *    one and the bin has capacity, else misses: a fetch of the batch; then
 *    the step: the batch, the capacity it gives within the byte limit (the
 *    clock hand's steal, and the cut), the byte limit's check; then the
 *    fetched objects: the first handed out, the linked ones into the list,
 *    what has no room to the transfer cache as one batch, up to
 *    AY_CARVE_BATCH never-used ones (a page's worth of small ones) carved
 *    in, the rest of the run the bin's reserve (or back to its span when
 *    the reserve is taken);
 *  - a list's capacity is also bounded by its chunk of the region's slots
 *    (cpucache.c): one that finds no chunk as large keeps the one it has;
 *  - a free that finds the list full overflows: the batch's newest objects
 *    go straight to their spans (one cache in use), the step, then the push
 *    (to the transfer cache when there is still no room);
 *  - a scavenge gives every list's step back to the spans and sets every
 *    bin's batch (and capacity) by it, as a step does;
 *  - a capacity cut gives the newest objects beyond it back to the spans.
 * Not modelled: drains (of a cache no slow path used for decay_ms: a
 * validate trace never leaves it idle that long; liballoy's percpu.drains
 * is compared, and must stay 0) and more than one cache. */
#define MODEL_NBINS (AY_NUM_CLASSES + 1)
/* a region's slots (cpucache.h: 1 << (AY_CPU_SHIFT - 3) slots of 8 bytes,
 * the first AY_CPU_SLOT0 the headers') */
#define MODEL_REGION_SLOTS ((uint32_t)1 << 17)
#define MODEL_CPU_SLOT0 512u
#define MODEL_CPU_ROOM ((uint64_t)MODEL_REGION_SLOTS - MODEL_CPU_SLOT0)
/* cpucache.c's chunks: a list's slots are a chunk of 8, 16, 32, ... slots
 * (or the bin's largest capacity, when less), exchanged for a larger one as
 * it grows; chunks of 8 to 4096 slots left behind are reused by lists that
 * need their size, and when the region has no chunk left, a list keeps the
 * capacity its chunk has.  Only how many there are matters here. */

static void cpu_init(model_t *m) {
    for (unsigned b = 1; b < MODEL_NBINS; b++) {
        m->cpu_size[b] = (uint32_t)ay_policy_class_size(b - 1);
        m->cpu_batch[b] = 1;
    }
    ay_policy_cpu_slots(&m->cfg->bp, m->k_halves, m->cpu_size, MODEL_NBINS, MODEL_CPU_ROOM,
                        m->cpu_slot_max);
    m->cpu_limit = m->cfg->tcache_max_bytes ? m->cfg->tcache_max_bytes : (uint64_t)1 << 40;
    m->cpu_bump = MODEL_CPU_SLOT0;
}

/* Bin b's list moves to a chunk for a capacity of cap (cpucache.c's
 * move_list); 0 when the region has none left. */
static int cpu_chunk_move(model_t *m, unsigned b, uint32_t cap) {
    uint32_t n = ay_policy_cpu_chunk(cap, m->cpu_slot_max[b]);
    unsigned o = ay_policy_chunk_order(n);
    if (o < AY_POLICY_CHUNK_ORDERS && m->cpu_nfree[o])
        m->cpu_nfree[o]--;
    else if (n > MODEL_REGION_SLOTS - m->cpu_bump)
        return 0;
    else
        m->cpu_bump += n;
    if (m->cpu_room[b]) { /* the old chunk waits for the next list of its size */
        unsigned old = ay_policy_chunk_order(m->cpu_room[b]);
        if (old < AY_POLICY_CHUNK_ORDERS && m->cpu_nfree[old] < MODEL_NBINS)
            m->cpu_nfree[old]++;
    }
    m->cpu_room[b] = n;
    return 1;
}

/* The objs[0..n) of class cls, in list order, back: to the transfer cache
 * as one batch (cpucache.c, give_back), or with to_spans (give_back_overflow,
 * one cache in use) or no transfer cache, each to its span. */
static void cpu_give_back(model_t *m, unsigned cls, const uint64_t *objs, uint32_t n,
                          int to_spans) {
    if (!n)
        return;
    if (m->measuring)
        m->met->objects_released += n;
    if (to_spans || !transfer_on(m, cls)) {
        for (uint32_t k = 0; k < n; k++)
            central_release(m, objs[k]);
        return;
    }
    model_batch_t b = {malloc(sizeof(uint64_t) * n), n};
    if (!b.objs) {
        m->oom = 1;
        return;
    }
    memcpy(b.objs, objs, sizeof(uint64_t) * n);
    transfer_insert(m, cls, b);
}

/* The k newest objects of list l to their spans (cpucache.c's take, then
 * give_back_overflow), in the order take links them: it pops MODEL_TAKE_MAX
 * at a time, the newest first, and links each chunk, newest first, in
 * front of those before it, so the oldest chunk goes back first. */
#define MODEL_TAKE_MAX AY_POLICY_CPU_TAKE_MAX
static void cpu_take_to_spans(model_t *m, model_list_t *l, uint32_t k) {
    k = k < l->len ? k : l->len;
    if (m->measuring)
        m->met->objects_released += k;
    uint32_t top = l->len, base = top - k;
    for (uint32_t chunks = (k + MODEL_TAKE_MAX - 1) / MODEL_TAKE_MAX; chunks > 0; chunks--) {
        uint32_t hi = top - (chunks - 1) * MODEL_TAKE_MAX, lo = hi - MODEL_TAKE_MAX;
        lo = hi - base < MODEL_TAKE_MAX ? base : lo;
        for (uint32_t p = hi; p > lo; p--)
            central_release(m, l->objs[p - 1]);
    }
    l->len = base;
}

/* Bin b's capacity becomes cap: what the list holds beyond it goes back. */
static void cpu_set_cap(model_t *m, unsigned b, uint32_t cap) {
    model_list_t *l = &m->tc[b - 1];
    if (cap > m->cpu_room[b] && !cpu_chunk_move(m, b, cap))
        cap = m->cpu_room[b]; /* no chunk that large: the capacity its chunk has */
    if (l->len > cap)
        cpu_take_to_spans(m, l, l->len - cap);
    m->cpu_cap_bytes = m->cpu_cap_bytes - (uint64_t)m->cpu_cap[b] * m->cpu_size[b] +
                       (uint64_t)cap * m->cpu_size[b];
    m->cpu_cap[b] = cap;
}

static void cpu_steal(model_t *m, unsigned b, uint64_t need) {
    unsigned steps = 0;
    ay_cpu_victim_t v;
    while (need && (v = ay_policy_cpu_victim(m->cpu_cap, m->cpu_batch, m->cpu_used, MODEL_NBINS, b,
                                             &m->cpu_hand, &steps))
                       .bin) {
        uint64_t got = (uint64_t)(m->cpu_cap[v.bin] - v.cap) * m->cpu_size[v.bin];
        cpu_set_cap(m, v.bin, v.cap);
        m->cpu_batch[v.bin] = v.batch;
        if (m->measuring)
            m->met->moves++;
        need = got < need ? need - got : 0;
    }
}

static void cpu_set_batch(model_t *m, unsigned b, uint32_t n) {
    uint32_t want = ay_policy_cpu_capacity(n, m->k_halves, m->cpu_slot_max[b]),
             have = m->cpu_cap[b];
    uint64_t size = m->cpu_size[b];
    uint64_t need = ay_policy_cpu_need(have, want, size, m->cpu_cap_bytes, m->cpu_limit);
    if (need && !(m->cfg->diverge & SIM_DIVERGE_STEAL))
        cpu_steal(m, b, need);
    ay_cpu_grant_t g =
        m->cfg->diverge & SIM_DIVERGE_BUDGET
            ? (ay_cpu_grant_t){want, n}
            : ay_policy_cpu_grant(n, have, want, size, m->cpu_cap_bytes, m->cpu_limit);
    m->cpu_batch[b] = g.batch;
    cpu_set_cap(m, b, g.cap);
}

static void cpu_scavenge_maybe(model_t *m, uint64_t bytes_in) {
    if (!ay_policy_scavenge_due(&m->clock, bytes_in, m->cpu_limit) ||
        (m->cfg->diverge & SIM_DIVERGE_SCAVENGE))
        return;
    uint64_t bytes = 0;
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
        bytes += (uint64_t)m->tc[c].len * ay_policy_class_size(c);
    if (bytes <= m->cpu_limit)
        return;
    if (m->measuring)
        m->met->scavenges++;
    for (unsigned b = 1; b < MODEL_NBINS; b++) {
        model_list_t *l = &m->tc[b - 1];
        ay_tc_step_t step = ay_policy_on_scavenge(m->cpu_batch[b], l->len);
        cpu_take_to_spans(m, l, step.move);
        cpu_set_batch(m, b, step.batch);
    }
}

/* After a miss or an overflow of bin b (cpucache.c, after_event); counter,
 * if any, counts it. */
static void cpu_after_event(model_t *m, unsigned b, ay_tc_step_t step, uint64_t bytes_in,
                            uint64_t *counter) {
    m->cpu_used[b] = 1;
    cpu_set_batch(m, b, step.batch);
    if (m->measuring && counter)
        ++*counter;
    cpu_scavenge_maybe(m, bytes_in);
}

/* Up to AY_CARVE_BATCH never-used objects of [*next, end) onto list l, or
 * a page's worth of small ones, 256 at most (as many as it has room for),
 * the lowest first (popped last). */
static void cpu_carve(model_t *m, unsigned b, model_list_t *l, uint64_t *next, uint64_t end) {
    uint64_t size = m->cpu_size[b];
    uint32_t k = 0, room = m->cpu_cap[b] > l->len ? m->cpu_cap[b] - l->len : 0;
    uint32_t n = ay_policy_cpu_carve((uint32_t)size);
    for (uint64_t o = *next; k < n && o < end; o += size)
        k++;
    k = k < room ? k : room;
    for (uint32_t i = 0; i < k; i++)
        if (tcache_push(m, l, *next + i * size))
            return;
    *next += k * size;
}

/* The never-used objects [next, end) of one span back to it (liballoy's
 * ay_central_release_run): as never used while nothing was taken from its
 * bump region since, else one by one, the lowest first. */
static void cpu_run_release(model_t *m, uint64_t next, uint64_t end) {
    if (next == end)
        return;
    uint32_t i = m->pagemap[next >> AY_PAGE_SHIFT];
    model_span_t *s = &m->spans[i];
    uint64_t base = (uint64_t)s->start << AY_PAGE_SHIFT;
    uint32_t first = (uint32_t)((next - base) / s->size),
             top = (uint32_t)((end - base) / s->size) - 1;
    uint32_t k = top - first + 1;
    if (m->measuring)
        m->met->objects_released += k;
    if (!span_run_back(m, i, top, k))
        for (uint64_t o = next; o < end; o += s->size)
            central_release(m, o);
}

/* The linked objects objs[0..n) (list order) into list l, as cpucache.c's
 * fill: 256 at a time, each chunk's last at the bottom; what has no room
 * (a chunk's first ones, and every chunk after) to the transfer cache. */
static void cpu_fill(model_t *m, unsigned b, model_list_t *l, const uint64_t *objs, uint32_t n) {
    uint32_t i = 0;
    while (n) {
        uint32_t k = n < 256 ? n : 256, room = m->cpu_cap[b] > l->len ? m->cpu_cap[b] - l->len : 0;
        uint32_t pushed = k < room ? k : room;
        for (uint32_t j = 0; j < pushed; j++)
            if (tcache_push(m, l, objs[i + k - 1 - j]))
                return;
        n -= pushed;
        if (pushed < k) { /* the chunk's first k - pushed, then the rest */
            uint64_t *rest = malloc(sizeof(uint64_t) * n);
            if (!rest) {
                m->oom = 1;
                return;
            }
            memcpy(rest, objs + i, sizeof(uint64_t) * (k - pushed));
            memcpy(rest + (k - pushed), objs + i + k, sizeof(uint64_t) * (n - (k - pushed)));
            cpu_give_back(m, b - 1, rest, n, 0);
            free(rest);
            return;
        }
        i += k;
    }
}

static uint64_t cpu_alloc(model_t *m, size_t size, unsigned *cls_out) {
    unsigned cls = ay_policy_size_class(size), b = cls + 1;
    model_list_t *l = &m->tc[cls];
    uint64_t S = m->cpu_size[b];
    *cls_out = cls;
    if (l->len)
        return l->objs[--l->len];
    ay_tc_step_t step = ay_policy_on_miss(&m->cfg->bp, S, m->cpu_batch[b]);
    model_list_t *f = &m->scratch;
    f->len = f->run = 0;
    /* the transfer cache's newest batch, else a carve of the reserve (no
     * miss), else a fetch */
    uint32_t got = transfer_take(m, cls, f), linked = got; /* a whole batch: never short */
    if (!got && l->rnext != l->rend && m->cpu_cap[b]) {
        uint64_t p = l->rnext;
        l->rnext += S;
        cpu_carve(m, b, l, &l->rnext, l->rend);
        if (l->rnext == l->rend)
            l->rnext = l->rend = 0;
        return p;
    }
    int fetched = !got;
    if (fetched) {
        got = central_fetch(m, cls, step.move, f); /* in the order taken: the list's */
        linked = got - f->run;
    } else { /* pushed so as to pop its head first: the list's order is the reverse */
        list_reverse(f);
    }
    count_refill(m, got, fetched, step.move);
    if (!got || m->oom) {
        m->oom = 1;
        return 0;
    }
    /* the run, [run, run_end) (the first span's first object is at 0) */
    uint64_t run = linked < got ? f->objs[linked] : 0,
             run_end = linked < got ? f->objs[got - 1] + S : 0;
    cpu_after_event(m, b, step, got * S, NULL); /* (the miss: counted above) */
    uint64_t p;
    if (!linked) {
        p = run;
        run += S;
    } else {
        p = f->objs[0];
        if (linked > 1)
            cpu_fill(m, b, l, f->objs + 1, linked - 1);
    }
    cpu_carve(m, b, l, &run, run_end);
    if (run < run_end) { /* keep_run */
        if (l->rnext == l->rend) {
            l->rnext = run;
            l->rend = run_end;
        } else {
            cpu_run_release(m, run, run_end);
        }
    }
    transfer_tick(m);
    return p;
}

static void cpu_free(model_t *m, uint64_t obj) {
    uint32_t i = m->pagemap[obj >> AY_PAGE_SHIFT];
    unsigned cls = m->spans[i].cls, b = cls + 1;
    model_list_t *l = &m->tc[cls];
    if (l->len < m->cpu_cap[b]) {
        tcache_push(m, l, obj);
        return;
    }
    ay_tc_step_t step = ay_policy_on_overflow(&m->cfg->bp, m->cpu_size[b], m->cpu_batch[b], l->len);
    if (m->cfg->diverge & SIM_DIVERGE_OVERFLOW_GROWTH)
        step.batch = m->cpu_batch[b];
    cpu_take_to_spans(m, l, step.move ? step.move : 1);
    cpu_after_event(m, b, step, 0, &m->met->overflows);
    if (l->len < m->cpu_cap[b])
        tcache_push(m, l, obj);
    else
        cpu_give_back(m, cls, &obj, 1, 0);
    transfer_tick(m);
}

/* ---- conservation ------------------------------------------------------------ */

typedef struct model_tally {
    uint64_t tcache, central, tails, pageheap;
} model_tally_t;

static int model_check(model_t *m, uint64_t live, uint64_t op, model_tally_t *t, char *err,
                       size_t errlen) {
    memset(t, 0, sizeof *t);
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
        t->tcache +=
            ((uint64_t)m->tc[c].len + (m->tc[c].rend - m->tc[c].rnext) / ay_policy_class_size(c)) *
            ay_policy_class_size(c);
        t->central += m->transfer[c].objects * ay_policy_class_size(c);
    }
    uint64_t pages = 0;
    for (uint32_t i = 0; i < m->nspans; i++) {
        const model_span_t *s = &m->spans[i];
        if (s->state == SPAN_USED) {
            t->central += (uint64_t)s->nfree * s->size;
            t->tails += ((uint64_t)s->pages << AY_PAGE_SHIFT) - (uint64_t)s->cap * s->size;
            pages += s->pages;
        } else if (s->state == SPAN_FREE) {
            pages += s->pages;
        }
    }
    for (uint32_t p = 1; p <= BLOCK_PAGES; p++)
        for (uint32_t i = m->bucket[p]; i != NIL; i = m->spans[i].next)
            t->pageheap += (uint64_t)m->spans[i].pages << AY_PAGE_SHIFT;
    uint64_t rhs = live + t->tcache + t->central + t->tails + t->pageheap;
    if (rhs != m->committed || (pages << AY_PAGE_SHIFT) != m->committed) {
        snprintf(err, errlen,
                 "conservation violated after op %" PRIu64 ": committed %" PRIu64
                 " != live %" PRIu64 " + thread cache %" PRIu64 " + central %" PRIu64
                 " + span tails %" PRIu64 " + page heap %" PRIu64 " (= %" PRIu64
                 "); pages in spans %" PRIu64,
                 op, m->committed, live, t->tcache, t->central, t->tails, t->pageheap, rhs, pages);
        return -1;
    }
    return 0;
}

static void model_leak_one(model_t *m) {
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
        if (m->tc[c].len) {
            m->tc[c].len--;
            return;
        }
    }
}

static void model_destroy(model_t *m) {
    for (uint32_t i = 0; i < m->nspans; i++)
        if (m->spans[i].state == SPAN_USED)
            free(m->spans[i].slots);
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
        free(m->tc[c].objs);
        for (uint32_t i = 0; i < m->transfer[c].count; i++)
            free(m->transfer[c].slot[(m->transfer[c].first + i) % AY_TRANSFER_SLOTS].objs);
    }
    free(m->scratch.objs);
    free(m->spans);
    free(m->unused);
    free(m->pagemap);
}

int sim_model_run(const sim_run_spec_t *spec, sim_metrics_t *out, char *err, size_t errlen) {
    static model_t zero;
    model_t m = zero;
    sim_trace_t t;
    int rc = 0;
    memset(out, 0, sizeof *out);
    err[0] = 0;
    if (sim_trace_init(&t, spec->wl, spec->seed, &spec->tp)) {
        snprintf(err, errlen, "bad trace parameters or out of memory");
        return -1;
    }
    uint64_t *addr = calloc(t.max_live, sizeof *addr);
    if (!addr) {
        sim_trace_destroy(&t);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    m.cfg = &spec->cfg;
    m.k_halves = spec->cfg.k_halves;
    m.met = out;
    for (unsigned p = 0; p <= BLOCK_PAGES; p++)
        m.bucket[p] = NIL;
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++) {
        m.central[c] = NIL;
        m.tc[c].n = 1;
    }
    if (spec->cfg.percpu)
        cpu_init(&m);

    uint64_t total = sim_trace_total_ops(&spec->tp), live = 0, measured_samples = 0;
    double sum_cached = 0, sum_tc = 0, sum_central = 0, sum_ph = 0;
    for (uint64_t op_i = 0; op_i < total && !rc; op_i++) {
        sim_op_t op;
        m.measuring = op_i >= spec->tp.warmup_ops;
        m.now_ms = sim_clock_ms(op_i);
        sim_trace_next(&t, &op);
        if (op.kind == SIM_OP_ALLOC && spec->cfg.binned_max && op.size > spec->cfg.binned_max) {
            addr[op.slot] =
                UINT64_MAX; /* liballoy's page-heap block: no compared counter sees it */
        } else if (op.kind == SIM_OP_ALLOC) {
            unsigned cls;
            addr[op.slot] =
                spec->cfg.percpu ? cpu_alloc(&m, op.size, &cls) : tcache_alloc(&m, op.size, &cls);
            live += ay_policy_class_size(cls);
        } else if (addr[op.slot] != UINT64_MAX) {
            uint64_t a = addr[op.slot];
            live -= m.spans[m.pagemap[a >> AY_PAGE_SHIFT]].size;
            if (spec->cfg.percpu)
                cpu_free(&m, a);
            else
                tcache_free(&m, a);
        }
        if (m.oom) {
            snprintf(err, errlen, "out of memory in the model after op %" PRIu64, op_i + 1);
            rc = -1;
            break;
        }
        if (spec->fault_at && op_i + 1 == spec->fault_at)
            model_leak_one(&m);
        if ((op_i + 1) % spec->tp.sample_every == 0 || op_i + 1 == total) {
            model_tally_t tally;
            out->samples++;
            if (model_check(&m, live, op_i + 1, &tally, err, errlen)) {
                rc = -1;
                break;
            }
            if (m.measuring) {
                measured_samples++;
                sum_cached += (double)(tally.tcache + tally.central + tally.tails);
                sum_tc += (double)tally.tcache;
                sum_central += (double)(tally.central + tally.tails);
                sum_ph += (double)tally.pageheap;
            }
        }
    }
    if (measured_samples) {
        out->mean_cached_bytes = sum_cached / (double)measured_samples;
        out->mean_tcache_bytes = sum_tc / (double)measured_samples;
        out->mean_central_bytes = sum_central / (double)measured_samples;
        out->mean_pageheap_bytes = sum_ph / (double)measured_samples;
    }
    out->final_committed_bytes = m.committed;
    out->final_live_bytes = live;
    out->trace_hash = t.hash;
    model_destroy(&m);
    free(addr);
    sim_trace_destroy(&t);
    return rc;
}
