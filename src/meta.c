/* meta.c - metadata memory (see meta.h).
 * Invariant: `cur` <= `end`; chunks are never unmapped, so a span record
 * pointer, once handed out, always points at readable span-sized memory. */
#include "meta.h"

#include <pthread.h>
#include <string.h>

#include "internal.h"
#include "os.h"
#include "span.h"

#define META_CHUNK ((size_t)256 * 1024)

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static char *cur, *end;          /* bump region of the current chunk */
static size_t mapped;            /* bytes of chunks mapped */
static ay_span_t *span_free;     /* recycled span records, linked by next */

static void *meta_bump(size_t size) {
    size = (size + AY_CACHELINE - 1) & ~(size_t)(AY_CACHELINE - 1);
    if ((size_t)(end - cur) < size) {
        size_t chunk = size > META_CHUNK ? (size + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1) : META_CHUNK;
        char *c = ay_os_map(chunk, AY_PAGE_SIZE);
        if (!c)
            return NULL;
        AY_STORE(&mapped, mapped + chunk);
        if (size > META_CHUNK)
            return c; /* a one-off: keep the current chunk's tail */
        cur = c;
        end = c + chunk;
    }
    void *p = cur;
    cur += size;
    return p;
}

void *ay_meta_alloc(size_t size) {
    pthread_mutex_lock(&meta_lock);
    void *p = meta_bump(size);
    pthread_mutex_unlock(&meta_lock);
    return p; /* fresh mmap memory is zero */
}

ay_span_t *ay_span_new(void) {
    pthread_mutex_lock(&meta_lock);
    ay_span_t *s = span_free;
    if (s)
        span_free = s->next;
    else
        s = meta_bump(sizeof(ay_span_t));
    pthread_mutex_unlock(&meta_lock);
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

size_t ay_meta_mapped(void) {
    return AY_LOAD(&mapped);
}

void ay_meta_lock(void) { pthread_mutex_lock(&meta_lock); }
void ay_meta_unlock(void) { pthread_mutex_unlock(&meta_lock); }
void ay_meta_reset_lock(void) { pthread_mutex_init(&meta_lock, NULL); }
