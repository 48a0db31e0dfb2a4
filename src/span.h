/* SPDX-License-Identifier: MIT */
/* span.h - a span: a run of contiguous 4 KiB pages with one owner.
 *
 * States, and who owns the record (`owner`):
 *   FREE    in a page heap's free lists (pages may be resident or purged);
 *           owner.pages is that page heap
 *   SMALL   carved into objects of one class; owner.central is that class's
 *           central cache (it is on its `nonempty` list while it has free
 *           objects)
 *   LARGE   one block of whole pages: above 32 KiB, aligned to more than
 *           a page, or a heap-profiler sample of any size (large.h);
 *           owner.pages is the page heap it came from
 *   DIRECT  one very large block (above AY_LARGE_MAX_PAGES), mapped straight
 *           from the OS; owner.direct is the set of direct maps it belongs to
 *   GUARDED a freed LARGE span of the secure flavour, its guard pages still
 *           inaccessible, kept by its page heap for the next large block
 *           (pageguard.h); owner.pages is that page heap
 *   DEAD    the record is on the metadata free list, or in a page heap's
 *           reserve of records; the record of a block (on its page heap's
 *           `blocks` list, pageblock.h) keeps this state too
 *
 * Pagemap invariant: for SMALL, LARGE and GUARDED spans every page maps to
 * the span;
 * for FREE spans the first and last page do (enough to coalesce); for DIRECT
 * spans the first page does.  All other pages map to NULL.
 *
 * The owner pointers and the `prof` field name modules of higher layers
 * (page heap, central cache, direct maps, profiler): that is what lets a
 * free find all it needs from one pagemap lookup.  This header only
 * declares their types; docs/ARCHITECTURE.md ("Where a lower layer knows a
 * higher one") says why each is kept.
 */
#ifndef ALLOY_SPAN_H
#define ALLOY_SPAN_H
#include <stdint.h>

enum {
    AY_SPAN_DEAD = 0,
    AY_SPAN_FREE,
    AY_SPAN_SMALL,
    AY_SPAN_LARGE,
    AY_SPAN_DIRECT,
    AY_SPAN_GUARDED
};

struct ay_pageheap;
struct ay_central;
struct ay_direct;

typedef struct ay_span {
    uintptr_t start;      /* first byte, page aligned */
    uintptr_t npages;     /* length in pages */
    struct ay_span *prev; /* list links: page-heap free list or central nonempty list */
    struct ay_span *next;
    union { /* who owns the span, by state (see above) */
        struct ay_pageheap *pages;
        struct ay_central *central;
        struct ay_direct *direct;
    } owner;
    uint8_t state;         /* AY_SPAN_* */
    uint8_t dirty;         /* FREE, LARGE: pages may be resident or non-zero (not purged) */
    uint16_t cls;          /* SMALL: size class */
    uint32_t used;         /* SMALL: objects handed out to thread caches */
    uint32_t capacity;     /* SMALL: objects the span holds */
    uint32_t size;         /* SMALL: object size in bytes */
    void *free;            /* SMALL: intrusive list of returned objects */
    void *free_tail;       /* SMALL: its last object (when free is not NULL) */
    uint32_t nfree;        /* SMALL: objects on the free list */
    uint8_t kept;          /* FREE: a freed LARGE block's pages, dirty, kept whole (pagekeep.h) */
    uintptr_t bump;        /* SMALL: next never-used object */
    uintptr_t limit;       /* SMALL: end of the last whole object */
    struct ay_span *block; /* FREE, SMALL, LARGE: the record of the block the span lies in */
    struct ay_span *dprev; /* FREE and dirty: decay FIFO links */
    struct ay_span *dnext;
    uint64_t freed_ms;  /* FREE: when the span became free and dirty; GUARDED: freed */
    uintptr_t user;     /* LARGE in the secure flavour: the block's first byte, after a */
    uintptr_t user_end; /* guard page; and its end, before one (0: no guards) */
    uintptr_t open;     /* LARGE, GUARDED (secure): the first accessible byte; the pages
                           of [open, user_end) are, the others not */
    void *prof;         /* LARGE, DIRECT: the heap profiler's record of a sampled
                                 block (prof.h), or NULL; set and cleared by prof.c only */
} ay_span_t;

/* Circular doubly linked lists of spans through prev/next, with a span
 * record as the list head (page-heap free lists, central nonempty lists,
 * block and direct-map lists). */
static inline void ay_list_init(ay_span_t *head) { head->prev = head->next = head; }
static inline int ay_list_empty(const ay_span_t *head) { return head->next == head; }
static inline void ay_list_remove(ay_span_t *s) {
    s->prev->next = s->next;
    s->next->prev = s->prev;
    s->prev = s->next = 0;
}
static inline void ay_list_push(ay_span_t *head, ay_span_t *s) { /* at the front */
    s->next = head->next;
    s->prev = head;
    head->next->prev = s;
    head->next = s;
}
static inline void ay_list_append(ay_span_t *head, ay_span_t *s) { /* at the back */
    s->prev = head->prev;
    s->next = head;
    head->prev->next = s;
    head->prev = s;
}

#endif
