/* heap.c - creating, binding and destroying heaps (see heap.h). */
#include "heap.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>

#include "meta.h"

ay_heap_t *ay_heaps[AY_MAX_HEAPS];
unsigned ay_heaps_auto;
unsigned ay_heaps_limit;
static ay_heap_t heap0;
static ay_heap_t *spare_heaps;          /* destroyed explicit heaps, by next_spare */
static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;

static void heap_init(ay_heap_t *h, unsigned id, bool cached) {
    memset(h, 0, sizeof *h);
    h->id = id;
    h->cached = cached;
    ay_pageheap_init(&h->pages, &h->usage);
    ay_direct_init(&h->direct, &h->usage);
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
        ay_central_init(&h->central[c], &h->pages, c, cached);
}

void ay_heaps_init(unsigned count) {
    if (count < 1)
        count = 1;
    if (count > AY_MAX_HEAPS / 2)
        count = AY_MAX_HEAPS / 2;
    heap_init(&heap0, 0, true);
    ay_heaps[0] = &heap0;
    unsigned n = 1;
    for (; n < count; n++) {
        ay_heap_t *h = ay_meta_alloc(sizeof *h);
        if (!h)
            break; /* fewer heaps; still correct */
        heap_init(h, n, true);
        ay_heaps[n] = h;
    }
    ay_heaps_auto = n;
    ay_heaps_limit = n;
}

ay_heap_t *ay_heap_get(unsigned id) {
    return id < AY_MAX_HEAPS ? __atomic_load_n(&ay_heaps[id], __ATOMIC_ACQUIRE) : NULL;
}

ay_heap_t *ay_heap_pin(unsigned id) {
    if (id >= AY_MAX_HEAPS)
        return NULL;
    pthread_mutex_lock(&heaps_lock);
    ay_heap_t *h = ay_heaps[id];
    if (h)
        __atomic_add_fetch(&h->pins, 1, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&heaps_lock);
    return h;
}

void ay_heap_unpin(ay_heap_t *h) { __atomic_sub_fetch(&h->pins, 1, __ATOMIC_RELEASE); }

ay_heap_t *ay_span_heap(const ay_span_t *s) {
    switch (s->state) {
    case AY_SPAN_SMALL: {
        const ay_central_t *c = s->owner.central;
        return (ay_heap_t *)((char *)(c - c->cls) - offsetof(ay_heap_t, central));
    }
    case AY_SPAN_DIRECT:
        return (ay_heap_t *)((char *)s->owner.direct - offsetof(ay_heap_t, direct));
    default:
        return (ay_heap_t *)((char *)s->owner.pages - offsetof(ay_heap_t, pages));
    }
}

ay_heap_t *ay_heap_bind(void) {
    pthread_mutex_lock(&heaps_lock);
    ay_heap_t *best = ay_heaps[0];
    for (unsigned i = 1; i < ay_heaps_auto; i++)
        if (ay_heaps[i]->nthreads < best->nthreads)
            best = ay_heaps[i];
    best->nthreads++;
    pthread_mutex_unlock(&heaps_lock);
    return best;
}

void ay_heap_adopt(ay_heap_t *h) {
    pthread_mutex_lock(&heaps_lock);
    h->nthreads++;
    pthread_mutex_unlock(&heaps_lock);
}

void ay_heap_unbind(ay_heap_t *h) {
    pthread_mutex_lock(&heaps_lock);
    h->nthreads--;
    pthread_mutex_unlock(&heaps_lock);
}

ay_heap_t *ay_heap_create(void) {
    pthread_mutex_lock(&heaps_lock);
    unsigned id = ay_heaps_auto;
    while (id < AY_MAX_HEAPS && ay_heaps[id])
        id++;
    ay_heap_t *h = NULL;
    if (id < AY_MAX_HEAPS) {
        h = spare_heaps;
        if (h)
            spare_heaps = h->next_spare;
    }
    pthread_mutex_unlock(&heaps_lock);
    if (id < AY_MAX_HEAPS && !h)
        h = ay_meta_alloc(sizeof *h); /* may map: not under heaps_lock */
    if (!h)
        return NULL;
    heap_init(h, id, false);
    pthread_mutex_lock(&heaps_lock);
    if (ay_heaps[id]) { /* taken meanwhile: find another id */
        while (id < AY_MAX_HEAPS && ay_heaps[id])
            id++;
        if (id == AY_MAX_HEAPS) {
            h->next_spare = spare_heaps;
            spare_heaps = h;
            pthread_mutex_unlock(&heaps_lock);
            return NULL;
        }
        h->id = id;
    }
    __atomic_store_n(&ay_heaps[id], h, __ATOMIC_RELEASE);
    if (id + 1 > ay_heaps_limit)
        ay_heaps_limit = id + 1;
    pthread_mutex_unlock(&heaps_lock);
    return h;
}

int ay_heap_destroy(ay_heap_t *h) {
    if (!h || h->cached)
        return EINVAL;
    pthread_mutex_lock(&heaps_lock);
    __atomic_store_n(&ay_heaps[h->id], NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&heaps_lock);
    /* no new pin can be taken now; wait for the walkers that have one */
    while (__atomic_load_n(&h->pins, __ATOMIC_ACQUIRE))
        sched_yield();
    ay_direct_release_all(&h->direct);
    ay_pageheap_release_all(&h->pages);
    pthread_mutex_lock(&heaps_lock);
    h->next_spare = spare_heaps;
    spare_heaps = h;
    pthread_mutex_unlock(&heaps_lock);
    return 0;
}

void ay_heaps_purge(bool all) {
    for (unsigned i = 0; i < AY_LOAD(&ay_heaps_limit); i++) {
        ay_heap_t *h = ay_heap_pin(i);
        if (h) {
            ay_pageheap_purge(&h->pages, all);
            ay_heap_unpin(h);
        }
    }
}

void ay_heaps_lock_all(void) {
    pthread_mutex_lock(&heaps_lock);
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heaps[i];
        if (!h)
            continue;
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
            ay_central_lock(&h->central[c]);
        ay_pageheap_lock(&h->pages);
        ay_direct_lock(&h->direct);
    }
}

void ay_heaps_unlock_all(void) {
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heaps[i];
        if (!h)
            continue;
        ay_direct_unlock(&h->direct);
        ay_pageheap_unlock(&h->pages);
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
            ay_central_unlock(&h->central[c]);
    }
    pthread_mutex_unlock(&heaps_lock);
}

void ay_heaps_after_fork_child(void) {
    pthread_mutex_init(&heaps_lock, NULL);
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heaps[i];
        if (!h)
            continue;
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
            ay_central_reset_lock(&h->central[c]);
        ay_direct_reset_lock(&h->direct);
        ay_pageheap_after_fork_child(&h->pages);
    }
}
