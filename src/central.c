/* central.c - per-class central caches of spans (see central.h). */
#include "central.h"

#include "heap.h"
#include "internal.h"
#include "pagemap.h"

void ay_central_init(ay_central_t *c, struct ay_heap *h, unsigned cls) {
    pthread_mutex_init(&c->lock, NULL);
    ay_list_init(&c->nonempty);
    c->heap = h;
    c->cls = cls;
    c->size = (uint32_t)ay_policy_class_size(cls);
}

void ay_central_lock(ay_central_t *c) {
    if (AY_UNLIKELY(pthread_mutex_trylock(&c->lock) != 0)) {
        pthread_mutex_lock(&c->lock);
        c->contended++;
    }
}

void ay_central_unlock(ay_central_t *c) { pthread_mutex_unlock(&c->lock); }

/* Take up to `want` objects from span s onto the list ending at *tail. */
static uint32_t span_take(ay_span_t *s, uint32_t want, void ***link) {
    uint32_t got = 0;
    while (got < want && s->free) {
        void *o = s->free;
        s->free = *(void **)o;
        **link = o;
        *link = (void **)o;
        got++;
    }
    while (got < want && s->bump < s->limit) {
        void *o = (void *)s->bump;
        s->bump += s->size;
        **link = o;
        *link = (void **)o;
        got++;
    }
    s->used += got;
    return got;
}

static int span_exhausted(const ay_span_t *s) { return !s->free && s->bump >= s->limit; }

static ay_span_t *span_new(ay_central_t *c, uint32_t want) {
    uint32_t pages = ay_policy_span_pages(c->size, want);
    /* explicit heaps register their pages with bin 0: frees of their memory
     * always take the slow path and never enter a thread cache */
    unsigned bin = c->heap->cached ? c->cls + 1 : 0;
    ay_span_t *s = ay_pageheap_alloc(&c->heap->pages, pages, 1, AY_SPAN_SMALL, bin);
    if (!s)
        return NULL;
    s->cls = (uint16_t)c->cls;
    s->size = c->size;
    s->capacity = ay_policy_span_objects(c->size, pages);
    s->used = 0;
    s->free = NULL;
    s->bump = s->start;
    s->limit = s->start + (uintptr_t)s->capacity * c->size;
    c->spans_allocated++;
    c->span_pages += pages;
    c->free_objects += s->capacity;
    return s;
}

uint32_t ay_central_fetch(ay_central_t *c, uint32_t want, void **head, void **tail) {
    void *first = NULL;
    void **link = &first;
    uint32_t got = 0;
    ay_central_lock(c);
    c->fetches++;
    while (got < want && !ay_list_empty(&c->nonempty)) {
        ay_span_t *s = c->nonempty.next;
        got += span_take(s, want - got, &link);
        if (span_exhausted(s))
            ay_list_remove(s);
    }
    if (got < want) {
        ay_span_t *s = span_new(c, want);
        if (s) {
            got += span_take(s, want - got, &link);
            if (!span_exhausted(s))
                ay_list_push(&c->nonempty, s);
        }
    }
    *link = NULL;
    if (got < want)
        c->short_fetches++;
    c->objects_out += got;
    c->free_objects -= got;
    ay_central_unlock(c);
    *head = first;
    *tail = got ? (void *)link : NULL;
    return got;
}

void ay_central_release(unsigned cls, void *head, uint32_t n) {
    ay_central_t *c = NULL; /* the central cache whose lock is held */
    for (uint32_t i = 0; i < n; i++) {
        void *o = head;
        head = *(void **)o;
        ay_span_t *s = ay_pagemap_span(o);
        if (ay_debug >= 1 && (!s || s->state != AY_SPAN_SMALL || s->cls != cls))
            ay_fatal("free(): object returned to the wrong size class", o);
        ay_central_t *owner = &s->heap->central[cls];
        if (owner != c) { /* objects of another heap: switch locks */
            if (c)
                ay_central_unlock(c);
            c = owner;
            ay_central_lock(c);
        }
        c->objects_in++;
        c->free_objects++;
        int was_exhausted = span_exhausted(s);
        *(void **)o = s->free;
        s->free = o;
        s->used--;
        if (s->used == 0) {
            if (!was_exhausted)
                ay_list_remove(s);
            c->free_objects -= s->capacity;
            c->spans_freed++;
            c->span_pages -= s->npages;
            ay_pageheap_free(&c->heap->pages, s);
        } else if (was_exhausted) {
            ay_list_push(&c->nonempty, s);
        }
    }
    if (c)
        ay_central_unlock(c);
}
