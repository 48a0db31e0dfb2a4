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
 *   DEAD    the record is on the metadata free list, or in a page heap's
 *           reserve of records; the record of a block (on its page heap's
 *           `blocks` list, pageblock.h) keeps this state too
 *
 * Pagemap invariant: for SMALL and LARGE spans every page maps to the span;
 * for FREE spans the first and last page do (enough to coalesce), and every
 * page of a kept one (pagekeep.h); for DIRECT spans the first page does.
 * All other pages map to NULL.
 *
 * The owner pointers and the `prof` field name modules of higher layers
 * (page heap, central cache, direct maps, profiler): that is what lets a
 * free find all it needs from one pagemap lookup.  This header only
 * declares their types; docs/ARCHITECTURE.md ("Where a lower layer knows a
 * higher one") says why each is kept.
 */
#ifndef ALLOY_SPAN_H
#define ALLOY_SPAN_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum { AY_SPAN_DEAD = 0, AY_SPAN_FREE, AY_SPAN_SMALL, AY_SPAN_LARGE, AY_SPAN_DIRECT };

struct ay_pageheap;
struct ay_central;
struct ay_direct;

/* The record: a head of the fields that several states use, then one part
 * per group of states, overlaid.  The SMALL part and the page part (FREE,
 * LARGE, DIRECT) share their storage: no field of a part is read
 * in a state of the other part, and a span entering a state has its parts
 * zeroed first (ay_span_part_clear: ay_pageheap_alloc when a span becomes
 * SMALL or LARGE, ay_pageheap_free when a SMALL one becomes FREE), so that
 * the page part of every FREE span is zero but for its decay links and time,
 * as a fresh record's is.  A field that states of both parts use is in the
 * head: dirty, block, and prof (realloc reads it of a SMALL span too, as
 * NULL); cls and kept sit there too, in what would be padding.  "writer"
 * names the module that writes the field. */
typedef struct ay_span {
    /* ---- head ---- */
    uintptr_t start;      /* bytes: first byte, page aligned; writer: the page heap
                             (pageblock, pagelist, pageheap), direct */
    uintptr_t npages;     /* pages: length; writer: as start */
    struct ay_span *prev; /* list links: page-heap size list (pagelist), central nonempty */
    struct ay_span *next; /* list (central), direct-map list (direct), block list
                             (pageblock), record reserve (pagelist) */
    union { /* who owns the span, by state (see above); writer: pagelist, pageheap, direct */
        struct ay_pageheap *pages;
        struct ay_central *central;
        struct ay_direct *direct;
    } owner;
    uint8_t state;         /* AY_SPAN_*; writer: pagelist, pageheap, direct, meta */
    uint8_t dirty;         /* flag, FREE, SMALL, LARGE: pages may be resident or
                              non-zero (not purged); writer: the page heap's modules */
    uint16_t cls;          /* SMALL: size class; writer: central */
    uint8_t kept;          /* flag, FREE: a freed LARGE block's pages, dirty, kept whole
                              (pagekeep.h); writer: pageheap (set), pagelist (cleared) */
    struct ay_span *block; /* FREE, SMALL, LARGE: the record of the block the span
                              lies in; writer: pageblock, pagelist, pageheap */
    void *prof;            /* LARGE, DIRECT: the heap profiler's record of a sampled block
                              (prof.h); NULL in every other span; writer: prof only */
    union {
        /* ---- SMALL: carved into objects of one class; writer: central ---- */
        struct {
            uint32_t size;     /* bytes: object size */
            uint32_t used;     /* objects handed out to thread caches */
            uint32_t capacity; /* objects the span holds */
            uint32_t nfree;    /* objects on the free list */
            void *free;        /* intrusive list of returned objects */
            void *free_tail;   /* its last object (when free is not NULL) */
            uintptr_t bump;    /* address: next never-used object */
            uintptr_t limit;   /* address: end of the last whole object */
        };
        /* ---- FREE, LARGE, DIRECT: pages of the page heap or a direct map ---- */
        struct {
            struct ay_span *dprev; /* FREE and dirty, or being purged: decay FIFO or purging
                                      list links; writer: pagelist, pagedecay */
            struct ay_span *dnext;
            uint64_t freed_ms; /* ms (coarse clock): FREE: when the span became free and
                                  dirty (pagelist) */
        };
    };
} ay_span_t;

/* Pinned, on LP64: the record's size (the SMALL part sets it), and the
 * offsets of what free's slow path reads (ay_block_span, free.c): start,
 * owner, state and cls in the record's first 64 bytes, size (and limit) in
 * the next. */
#if UINTPTR_MAX == 0xffffffffffffffffu
_Static_assert(sizeof(ay_span_t) == 112, "ay_span_t: 112 bytes");
_Static_assert(offsetof(ay_span_t, start) == 0, "ay_span_t: start");
_Static_assert(offsetof(ay_span_t, owner) == 32, "ay_span_t: owner");
_Static_assert(offsetof(ay_span_t, state) == 40, "ay_span_t: state");
_Static_assert(offsetof(ay_span_t, cls) == 42, "ay_span_t: cls");
_Static_assert(offsetof(ay_span_t, size) == 64, "ay_span_t: size");
#endif
/* Both parts start where the union does (ay_span_part_clear). */
_Static_assert(offsetof(ay_span_t, size) == offsetof(ay_span_t, dprev), "ay_span_t: parts");

/* Zero the span's per-state parts (both, as they share their storage),
 * before it enters a state of the other part. */
static inline void ay_span_part_clear(ay_span_t *s) {
    memset((char *)s + offsetof(ay_span_t, size), 0, sizeof *s - offsetof(ay_span_t, size));
}

/* Circular doubly linked lists of spans through prev/next, with a span
 * record as the list head (central nonempty lists, the page heaps' block
 * lists, direct-map lists).  The page heaps' free lists are not: they end
 * in NULL, with first and last kept per size (pagelist.h). */
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
