/* heap.c - creating, binding, destroying heaps, and the background purging
 * thread (see heap.h). */
#include "heap.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "conf.h"
#include "meta.h"
#include "os.h"
#include "pagemap.h"

ay_heap_t *ay_heaps[AY_MAX_HEAPS];
unsigned ay_heaps_auto;
unsigned ay_heaps_limit;
static ay_heap_t heap0;
static ay_heap_t *spare_heaps;          /* destroyed explicit heaps, linked via pages.heap */
static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;

static void heap_init(ay_heap_t *h, unsigned id, bool cached) {
    h->id = id;
    h->cached = cached;
    h->nthreads = 0;
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
        ay_central_init(&h->central[c], h, c);
    ay_pageheap_init(&h->pages, h);
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
            spare_heaps = (ay_heap_t *)h->pages.heap;
        else
            h = ay_meta_alloc(sizeof *h);
    }
    if (h) {
        memset(h, 0, sizeof *h);
        heap_init(h, id, false);
        __atomic_store_n(&ay_heaps[id], h, __ATOMIC_RELEASE);
        if (id + 1 > ay_heaps_limit)
            ay_heaps_limit = id + 1;
    }
    pthread_mutex_unlock(&heaps_lock);
    return h;
}

/* Every span record of a heap's pages: walk each block page by page. */
static void release_block_spans(ay_pageheap_t *ph, ay_span_t *block) {
    uintptr_t end = block->start + (block->npages << AY_PAGE_SHIFT);
    for (uintptr_t a = block->start; a < end;) {
        ay_span_t *s = ay_pagemap_span((void *)a);
        if (s && s->start == a && s->state != AY_SPAN_DEAD && s->heap == ph->heap) {
            uintptr_t n = s->npages;
            ay_pagemap_set(a, n, NULL, 0);
            ay_span_delete(s);
            a += n << AY_PAGE_SHIFT;
        } else {
            ay_pagemap_set1(a, NULL, 0);
            a += AY_PAGE_SIZE;
        }
    }
}

int ay_heap_destroy(ay_heap_t *h) {
    if (!h || h->cached)
        return EINVAL;
    pthread_mutex_lock(&heaps_lock);
    __atomic_store_n(&ay_heaps[h->id], NULL, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&heaps_lock);
    ay_pageheap_t *ph = &h->pages;
    pthread_mutex_lock(&ph->lock);
    /* direct maps */
    while (ph->direct.next != &ph->direct) {
        ay_span_t *s = ph->direct.next;
        ay_list_remove(s);
        ay_pagemap_set1(s->start, NULL, 0);
        ay_os_unmap((void *)s->start, (size_t)s->npages << AY_PAGE_SHIFT);
        ay_span_delete(s);
    }
    /* blocks: forget every span in them, then unmap them.  Spans may span
     * adjacent blocks (free neighbours merge), so forget all before unmapping. */
    for (ay_span_t *b = ph->blocks.next; b != &ph->blocks; b = b->next)
        release_block_spans(ph, b);
    while (ph->blocks.next != &ph->blocks) {
        ay_span_t *b = ph->blocks.next;
        ay_list_remove(b);
        ay_os_unmap((void *)b->start, (size_t)b->npages << AY_PAGE_SHIFT);
        ay_span_delete(b);
    }
    pthread_mutex_unlock(&ph->lock);
    pthread_mutex_lock(&heaps_lock);
    h->pages.heap = (struct ay_heap *)spare_heaps;
    spare_heaps = h;
    pthread_mutex_unlock(&heaps_lock);
    return 0;
}

void ay_heaps_lock_all(void) {
    pthread_mutex_lock(&heaps_lock);
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heaps[i];
        if (!h)
            continue;
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
            pthread_mutex_lock(&h->central[c].lock);
        pthread_mutex_lock(&h->pages.lock);
    }
}

void ay_heaps_unlock_all(void) {
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heaps[i];
        if (!h)
            continue;
        pthread_mutex_unlock(&h->pages.lock);
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
            pthread_mutex_unlock(&h->central[c].lock);
    }
    pthread_mutex_unlock(&heaps_lock);
}

void ay_heaps_reset_locks(void) {
    pthread_mutex_init(&heaps_lock, NULL);
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heaps[i];
        if (!h)
            continue;
        for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
            pthread_mutex_init(&h->central[c].lock, NULL);
        pthread_mutex_init(&h->pages.lock, NULL);
    }
}

/* ---- background purging ----
 * Off by default (background_thread:true turns it on).  It wakes every
 * decay_ms / 4 (at least 10 ms, at most 1 s) and purges the spans that have
 * been free for decay_ms, so that an idle process gives its memory back
 * without any allocator call. */

static pthread_t bg_thread;
static bool bg_running;
static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bg_cond = PTHREAD_COND_INITIALIZER;

static void *background_main(void *arg) {
    pthread_mutex_lock(&bg_lock);
    while (bg_running) {
        int64_t d = ay_conf.decay_ms;
        int64_t wait = d <= 0 ? 1000 : d / 4 < 10 ? 10 : d / 4 > 1000 ? 1000 : d / 4;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wait / 1000;
        ts.tv_nsec += (wait % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&bg_cond, &bg_lock, &ts);
        if (!bg_running)
            break;
        pthread_mutex_unlock(&bg_lock);
        for (unsigned i = 0; i < ay_heaps_limit; i++) {
            ay_heap_t *h = ay_heap_get(i);
            if (h)
                ay_pageheap_purge(&h->pages, 0);
        }
        pthread_mutex_lock(&bg_lock);
    }
    pthread_mutex_unlock(&bg_lock);
    return NULL;
}

int ay_background_start(void) {
    int err = 0;
    pthread_mutex_lock(&bg_lock);
    if (!bg_running) {
        bg_running = true;
        err = pthread_create(&bg_thread, NULL, background_main, NULL);
        if (err)
            bg_running = false;
    }
    pthread_mutex_unlock(&bg_lock);
    return err;
}

void ay_background_stop(void) {
    pthread_mutex_lock(&bg_lock);
    bool was = bg_running;
    bg_running = false;
    pthread_cond_signal(&bg_cond);
    pthread_mutex_unlock(&bg_lock);
    if (was)
        pthread_join(bg_thread, NULL);
}

bool ay_background_running(void) {
    return __atomic_load_n(&bg_running, __ATOMIC_RELAXED);
}
