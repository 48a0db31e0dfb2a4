/* SPDX-License-Identifier: MIT */
/* meta.c - metadata memory (see meta.h).
 * Invariant: `cur` <= `end`; chunks are never unmapped, so a span record
 * pointer, once handed out, always points at readable span-sized memory.
 * The lock is a leaf, and is held for pointer updates only: a new chunk is
 * mapped with the lock dropped, because the page heap takes this lock (to
 * give span records back) while other threads wait on the page heap's. */
#include "meta.h"

#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "os.h"
#include "span.h"

#define META_CHUNK ((size_t)256 * 1024)

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static char *cur, *end;      /* bump region of the current chunk */
static size_t mapped;        /* bytes of chunks mapped */
static ay_span_t *span_free; /* recycled span records, linked by next */

static size_t meta_round(size_t size) {
    return (size + AY_CACHELINE - 1) & ~(size_t)(AY_CACHELINE - 1);
}

/* Under the lock: `size` bytes (rounded) from the current chunk, or NULL.
 * A request of a page or more that would straddle one page more than its
 * size needs starts on the next page instead (a thread cache's record,
 * 7,680 bytes, touched whole by its thread: 2 pages resident, not 3); the
 * few bytes skipped stay unused. */
static void *meta_bump(size_t size) {
    char *at = cur;
    if (size >= AY_PAGE_SIZE) {
        uintptr_t a = (uintptr_t)at, pages = (size + AY_PAGE_SIZE - 1) / AY_PAGE_SIZE;
        if (((a + size - 1) / AY_PAGE_SIZE) - a / AY_PAGE_SIZE + 1 > pages)
            at = (char *)((a + AY_PAGE_SIZE - 1) & ~(uintptr_t)(AY_PAGE_SIZE - 1));
    }
    if (at > end || (size_t)(end - at) < size)
        return NULL;
    void *p = at;
    cur = at;
    cur += size;
    return p;
}

/* Without the lock: map a chunk for `size` bytes (rounded); a request above
 * a chunk gets a mapping of its own, any other one a new current chunk (the
 * old chunk's tail is left unused). */
static void *meta_grow(size_t size) {
    size_t chunk = size > META_CHUNK ? (size + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1) : META_CHUNK;
    char *c = ay_os_map_chunk(chunk, AY_PAGE_SIZE); /* behind guard pages (secure) */
    if (!c)
        return NULL;
    pthread_mutex_lock(&meta_lock);
    AY_STORE(&mapped, mapped + chunk);
    void *p = c;
    if (size <= META_CHUNK) {
        cur = c;
        end = c + chunk;
        p = meta_bump(size);
    }
    pthread_mutex_unlock(&meta_lock);
    return p;
}

void *ay_meta_alloc(size_t size) {
    size = meta_round(size);
    pthread_mutex_lock(&meta_lock);
    void *p = meta_bump(size);
    pthread_mutex_unlock(&meta_lock);
    return p ? p : meta_grow(size); /* fresh mmap memory is zero */
}

ay_span_t *ay_span_new(void) {
    pthread_mutex_lock(&meta_lock);
    ay_span_t *s = span_free;
    if (s)
        span_free = s->next;
    else
        s = meta_bump(meta_round(sizeof(ay_span_t)));
    pthread_mutex_unlock(&meta_lock);
    if (!s)
        s = meta_grow(meta_round(sizeof(ay_span_t)));
    if (s)
        memset(s, 0, sizeof *s);
    return s;
}

void ay_span_delete(ay_span_t *s) {
    s->state = AY_SPAN_DEAD;
    pthread_mutex_lock(&meta_lock);
    s->next = span_free;
    span_free = s;
    pthread_mutex_unlock(&meta_lock);
}

size_t ay_meta_mapped(void) { return AY_LOAD(&mapped); }

void ay_meta_lock(void) { pthread_mutex_lock(&meta_lock); }
void ay_meta_unlock(void) { pthread_mutex_unlock(&meta_lock); }
void ay_meta_reset_lock(void) { pthread_mutex_init(&meta_lock, NULL); }
