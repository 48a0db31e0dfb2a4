/* SPDX-License-Identifier: MIT */
/* direct.c - direct maps (see direct.h): blocks mapped straight from the
 * OS, one DIRECT span each, resized with mremap and unmapped when freed.
 *
 * Invariants: a DIRECT span is on its set's list from the moment it is
 * registered until it is unmapped, and only that list is guarded by the
 * set's lock; only the map's first page is in the pagemap (bin 0), and
 * ay_direct_resize moves that entry with the map; `bytes` and the heap's
 * usage count each live map's bytes exactly once; a map whose record or
 * pagemap leaf cannot be made is unmapped again at once, and a resize that
 * fails leaves the map and its record as they were.  mmap, mremap and
 * munmap run without the lock. */
#include "direct.h"

#include "meta.h"
#include "os.h"
#include "pagemap.h"
#include "topology.h"

void ay_direct_init(ay_direct_t *d, ay_usage_t *usage) {
    pthread_mutex_init(&d->lock, NULL);
    ay_list_init(&d->list);
    d->bytes = 0;
    d->usage = usage;
    d->node = -1;
}

static void account(ay_direct_t *d, ptrdiff_t delta) {
    __atomic_add_fetch(&d->bytes, (size_t)delta, __ATOMIC_RELAXED);
    ay_usage_add(d->usage, delta);
}

ay_span_t *ay_direct_alloc(ay_direct_t *d, size_t bytes, size_t align) {
    void *p = ay_os_map_chunk(bytes, align); /* behind guard pages (secure) */
    if (!p)
        return NULL;
    ay_topology_place(p, bytes, d->node); /* NUMA: before any touch */
    ay_span_t *s = ay_span_new();
    if (!s || ay_pagemap_ensure((uintptr_t)p, 1) != 0) {
        if (s)
            ay_span_delete(s);
        ay_os_unmap_chunk(p, bytes);
        return NULL;
    }
    s->start = (uintptr_t)p;
    s->npages = bytes >> AY_PAGE_SHIFT;
    s->state = AY_SPAN_DIRECT;
    s->owner.direct = d;
    ay_pagemap_set1(s->start, s, 0);
    pthread_mutex_lock(&d->lock);
    ay_list_push(&d->list, s);
    pthread_mutex_unlock(&d->lock);
    account(d, (ptrdiff_t)bytes);
    return s;
}

/* Give s, already off d's list, back to the OS. */
static void unmap(ay_direct_t *d, ay_span_t *s) {
    size_t bytes = AY_PAGES_BYTES(s->npages);
    ay_pagemap_set1(s->start, NULL, 0);
    ay_os_unmap_chunk((void *)s->start, bytes);
    account(d, -(ptrdiff_t)bytes);
    ay_span_delete(s);
}

void ay_direct_free(ay_span_t *s) {
    ay_direct_t *d = s->owner.direct;
    pthread_mutex_lock(&d->lock);
    ay_list_remove(s);
    pthread_mutex_unlock(&d->lock);
    unmap(d, s);
}

int ay_direct_resize(ay_span_t *s, size_t bytes) {
    size_t old = AY_PAGES_BYTES(s->npages);
    void *q = ay_os_remap((void *)s->start, old, bytes, NULL);
    if (!q)
        return -1;
    if (q != (void *)s->start && ay_pagemap_ensure((uintptr_t)q, 1) != 0) {
        /* moved where the map has no leaf and none can be made: move it back,
         * at its old size (the old range is free since the move) */
        ay_os_remap(q, bytes, old, (void *)s->start);
        return -1;
    }
    ay_pagemap_set1(s->start, NULL, 0);
    s->start = (uintptr_t)q;
    s->npages = bytes >> AY_PAGE_SHIFT;
    ay_pagemap_set1(s->start, s, 0);
    account(s->owner.direct, (ptrdiff_t)bytes - (ptrdiff_t)old);
    return 0;
}

void ay_direct_release_all(ay_direct_t *d) {
    ay_span_t all;
    ay_list_init(&all);
    pthread_mutex_lock(&d->lock);
    while (!ay_list_empty(&d->list)) {
        ay_span_t *s = d->list.next;
        ay_list_remove(s);
        ay_list_push(&all, s);
    }
    pthread_mutex_unlock(&d->lock);
    while (!ay_list_empty(&all)) {
        ay_span_t *s = all.next;
        ay_list_remove(s);
        unmap(d, s);
    }
}

size_t ay_direct_bytes(const ay_direct_t *d) { return AY_LOAD(&d->bytes); }

size_t ay_direct_count(ay_direct_t *d) {
    size_t n = 0;
    pthread_mutex_lock(&d->lock);
    for (ay_span_t *s = d->list.next; s != &d->list; s = s->next)
        n++;
    pthread_mutex_unlock(&d->lock);
    return n;
}
void ay_direct_lock(ay_direct_t *d) { pthread_mutex_lock(&d->lock); }
void ay_direct_unlock(ay_direct_t *d) { pthread_mutex_unlock(&d->lock); }
void ay_direct_reset_lock(ay_direct_t *d) { pthread_mutex_init(&d->lock, NULL); }
