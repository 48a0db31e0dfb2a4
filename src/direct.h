/* SPDX-License-Identifier: MIT */
/* direct.h - direct maps: blocks above AY_LARGE_MAX_PAGES (8192 pages,
 * 32 MiB), each mapped straight from the OS and given back to it when
 * freed.
 *
 * Each heap has one set of direct maps (ay_direct_t): a list of their span
 * records, so that an explicit heap can release all of its own at once, and
 * their byte count.  A direct map's span is DIRECT; only its first page is
 * in the pagemap (so free and realloc find it), with bin 0.
 *
 * Every system call (mmap, mremap, munmap) runs outside the set's lock; the
 * lock only guards the list.  It is a leaf lock.
 */
#ifndef ALLOY_DIRECT_H
#define ALLOY_DIRECT_H
#include <pthread.h>
#include <stddef.h>

#include "span.h"
#include "usage.h"

typedef struct ay_direct {
    pthread_mutex_t lock; /* guards `list` */
    ay_span_t list;       /* list head: live direct maps */
    size_t bytes;         /* bytes of live direct maps (relaxed atomic) */
    ay_usage_t *usage;    /* the owning heap's active bytes */
    int node;             /* NUMA node index its maps are placed on; -1: none */
} ay_direct_t;

void ay_direct_init(ay_direct_t *d, ay_usage_t *usage);
/* A block of `bytes` (a page multiple) aligned to `align` (a power of two),
 * mapped from the OS and registered as a DIRECT span of d.  NULL when out
 * of memory. */
ay_span_t *ay_direct_alloc(ay_direct_t *d, size_t bytes, size_t align);
/* Unmap direct map s (s->owner.direct is its set). */
void ay_direct_free(ay_span_t *s);
/* Resize direct map s to `bytes`, in place or by moving it (mremap).  0, or
 * -1 with s untouched. */
int ay_direct_resize(ay_span_t *s, size_t bytes);
/* Unmap every direct map of d (an explicit heap's destruction). */
void ay_direct_release_all(ay_direct_t *d);
/* Bytes of d's live direct maps. */
size_t ay_direct_bytes(const ay_direct_t *d);
/* How many live direct maps d has (takes d's lock). */
size_t ay_direct_count(ay_direct_t *d);
/* Fork support. */
void ay_direct_lock(ay_direct_t *d);
void ay_direct_unlock(ay_direct_t *d);
void ay_direct_reset_lock(ay_direct_t *d);

#endif
