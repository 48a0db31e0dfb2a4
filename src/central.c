/* central.c - per-class central caches of spans (see central.h). */
#include "central.h"

#include "error.h"
#include "pagemap.h"

void ay_central_init(ay_central_t *c, ay_pageheap_t *pages, unsigned cls, bool cached) {
    pthread_mutex_init(&c->lock, NULL);
    ay_list_init(&c->nonempty);
    c->pages = pages;
    c->cls = cls;
    c->size = (uint32_t)ay_policy_class_size(cls);
    c->bin = cached ? (uint8_t)(cls + 1) : 0;
}

void ay_central_lock(ay_central_t *c) {
    if (AY_UNLIKELY(pthread_mutex_trylock(&c->lock) != 0)) {
        pthread_mutex_lock(&c->lock);
        c->contended++;
    }
}

void ay_central_unlock(ay_central_t *c) { pthread_mutex_unlock(&c->lock); }
void ay_central_reset_lock(ay_central_t *c) { pthread_mutex_init(&c->lock, NULL); }

/* Take up to `want` objects from span s onto the list ending at *link. */
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

static bool span_exhausted(const ay_span_t *s) { return !s->free && s->bump >= s->limit; }

/* A new span for a batch of `want`, carved for c's class.  Called without
 * c's lock: the span is the caller's alone until it joins c's list. */
static ay_span_t *span_new(ay_central_t *c, uint32_t want) {
    uint32_t pages = ay_policy_span_pages(c->size, want);
    ay_span_t *s = ay_pageheap_alloc(c->pages, pages, 1, AY_SPAN_SMALL, c->bin);
    if (!s)
        return NULL;
    s->owner.central = c;
    s->cls = (uint16_t)c->cls;
    s->size = c->size;
    s->capacity = ay_policy_span_objects(c->size, pages);
    s->used = 0;
    s->free = NULL;
    s->bump = s->start;
    s->limit = s->start + (uintptr_t)s->capacity * c->size;
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
        ay_central_unlock(c);
        ay_span_t *s = span_new(c, want);
        ay_central_lock(c);
        if (s) {
            c->spans_allocated++;
            c->span_pages += s->npages;
            c->free_objects += s->capacity;
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
    ay_central_t *c = NULL;  /* the central cache whose lock is held */
    ay_span_t *empty = NULL; /* spans to give back once no lock is held, linked by next */
    for (uint32_t i = 0; i < n; i++) {
        void *o = head;
        head = *(void **)o;
        ay_span_t *s = ay_pagemap_span(o);
        if (ay_debug >= 1 && (!s || s->state != AY_SPAN_SMALL || s->cls != cls))
            ay_fatal("free(): object returned to the wrong size class", o);
        ay_central_t *owner = s->owner.central;
        if (owner != c) { /* objects of another heap: switch locks */
            if (c)
                ay_central_unlock(c);
            c = owner;
            ay_central_lock(c);
        }
        c->objects_in++;
        c->free_objects++;
        bool was_exhausted = span_exhausted(s);
        *(void **)o = s->free;
        s->free = o;
        s->used--;
        if (s->used == 0) {
            if (!was_exhausted)
                ay_list_remove(s);
            c->free_objects -= s->capacity;
            c->spans_freed++;
            c->span_pages -= s->npages;
            s->next = empty;
            empty = s;
        } else if (was_exhausted) {
            ay_list_push(&c->nonempty, s);
        }
    }
    if (c)
        ay_central_unlock(c);
    while (empty) {
        ay_span_t *s = empty;
        empty = s->next;
        ay_pageheap_free(s->owner.central->pages, s);
    }
}

bool ay_central_holds(ay_span_t *s, const void *p) {
    ay_central_t *c = s->owner.central;
    ay_central_lock(c);
    bool found = (uintptr_t)p >= s->bump;
    for (void *q = s->free; q && !found; q = *(void **)q)
        found = q == p;
    ay_central_unlock(c);
    return found;
}
