/* SPDX-License-Identifier: MIT */
/* free.c - free: the entry points, the slow path, and the checks made on a
 * pointer before it is freed or resized (see free.h).
 *
 * Invariants: no block goes back to a list or a span before ay_block_span
 * has checked it (except on the fast paths, where the transfer path's walk
 * checks each object when the list goes back: transfer.c); a bad pointer ends the process with
 * a message naming it and the function, never a crash; a small block of an
 * uncached heap, or of a thread without a cache, goes straight to its
 * central cache; guarded blocks (guard.h) are recognised before any other
 * check. */
#include "free.h"

#include "alloc.h"
#include "alloy.h"
#include "error.h"
#include "fill.h"
#include "guard.h"
#include "large.h"
#include "quarantine.h"
#include "secure.h"
#include "transfer.h"

/* Secure flavour without tags: block p of span s, whose first word decodes
 * to a user-space address, is on a free list: the link it holds leads to
 * the end of a list or to another block of its class.  (Data a program
 * wrote decodes to an address with probability 2^-17, and then to a block
 * of the same class almost never: so a live block is not taken for a free
 * one.) */
static bool block_on_list(const ay_span_t *s, const void *p) {
    void *next = ay_link_get_raw(p);
    if (next == AY_LIST_END)
        return true;
    const ay_span_t *t = ay_pagemap_span(next);
    return t && t->state == AY_SPAN_SMALL && t->cls == s->cls &&
           ay_offset_is_object((uintptr_t)next - t->start, t->cls, t->size) &&
           (uintptr_t)next < t->limit;
}

/* A small block's pointer, in every flavour: it must be the start of an
 * object (offset by multiply-shift, secure.h), and the block must not be
 * free already.  The secure flavour's tag says whether it is.  The release
 * flavour looks only at the thread's last freed block of the class (free's
 * fast path sends a second free of it here; realloc checks the same): a
 * guess from the block's contents would be wrong for every block whose
 * first word still holds the link it had in the list, and confirming it
 * costs a walk of the list.  The debug flavour walks the thread's list and
 * the span's free list every time. */
static void check_small(const char *fn, ay_span_t *s, const void *p) {
    uintptr_t d = (uintptr_t)p - s->start;
    if (AY_UNLIKELY(!ay_offset_is_object(d, s->cls, s->size) || (uintptr_t)p >= s->limit))
        ay_fatal_in(fn, "pointer is not the start of a block", p);
    if (ay_secure && !ay_secure_tags) { /* its free mark, or a link to a block of its class */
        if (AY_UNLIKELY(*ay_mark_at((void *)p) == ay_tag_free(p)) ||
            (AY_UNLIKELY(ay_link_holds(p)) && block_on_list(s, p)))
            ay_fatal_in(fn, "double free (block is free)", p);
    }
    if (ay_secure_tags) { /* the tag says what the block is */
        uintptr_t tag = *ay_tag_at((void *)p, s->size);
        if (AY_LIKELY(tag == ay_tag_live(p)))
            return;
        if (tag == ay_tag_free(p))
            ay_fatal_in(fn, "double free (block is free)", p);
        if (ay_tcache_contains(s->cls + 1u, p)) /* a block never handed out has no tag yet */
            ay_fatal_in(fn, "invalid pointer (block is in the thread cache, never handed out)", p);
        ay_fatal_in(fn, "heap overflow: the canary after the block was overwritten", p);
    }
    if (ay_debug < 3) { /* the list free's fast path would push it onto */
        if (ay_cpu_mode) {
            if (AY_UNLIKELY(ay_cpu_is_newest(s->cls + 1u, p)))
                ay_fatal_in(fn, "double free (block is in the CPU's cache)", p);
            return;
        }
        if (AY_UNLIKELY(p == ((ay_bin_t *)((char *)ay_tls.bins + s->owner.central->list))->head))
            ay_fatal_in(fn, "double free (block is in the thread cache)", p);
        return;
    }
    if (ay_tcache_contains(s->cls + 1u, p))
        ay_fatal_in(fn, "double free (block is in the thread cache)", p);
    if (ay_central_holds(s, p) || ay_transfer_holds(ay_span_heap(s)->node, s->cls, p))
        ay_fatal_in(fn, "double free (block is in the central cache)", p);
}

ay_span_t *ay_block_span(const void *p, const char *fn) {
    ay_span_t *s = ay_pagemap_span(p);
    if (AY_UNLIKELY(!s))
        ay_fatal_in(fn, "invalid pointer, not allocated by alloy", p);
    switch (s->state) {
    case AY_SPAN_SMALL: check_small(fn, s, p); return s;
    case AY_SPAN_LARGE:
    case AY_SPAN_DIRECT:
        if ((uintptr_t)p != ay_large_start(s))
            ay_fatal_in(fn, "pointer is not the start of a block", p);
        return s;
    default: ay_fatal_in(fn, "double free or invalid pointer", p);
    }
}

/* A small block, checked, goes back: onto the thread's list (which may
 * overflow), or straight to its central cache when the thread has no cache
 * or the block's heap is uncached (bin 0). */
static void free_small(ay_span_t *s, void *p) {
    const ay_central_t *c = s->owner.central;
    if (ay_cpu_mode && c->bin) { /* onto the CPU's list, whichever heap it came from */
        ay_cpu_push(ay_tcache_heap(), s->cls + 1u, p);
        return;
    }
    ay_tcache_t *tc = c->bin ? ay_tcache_get() : NULL;
    if (tc && tc->cache_on) { /* onto the thread's list, whichever heap it came from */
        ay_bin_t *bin = &tc->bins[s->cls + 1u];
        if (ay_secure && bin->room > 0) { /* the fast push, without the slow path's work */
            ay_link_set(p, bin->head);
            bin->head = p;
            bin->room--;
            return;
        }
        ay_tcache_push(tc, s->cls + 1u, p);
    } else {
        ay_fill_freed(p, s->size - AY_TAG_BYTES);
        ay_central_release(s->cls, p, 1);
    }
}

void ay_free_slow(void *p) {
    if (!p)
        return;
    if (AY_UNLIKELY(ay_guard_owns(p))) /* free jumped here: its caller's return address */
        return ay_guard_free(p, __builtin_return_address(0), "free()");
    ay_span_t *s = ay_block_span(p, "free()");
    if (s->state != AY_SPAN_SMALL) {
        ay_large_free(s, p);
        return;
    }
    free_small(s, p);
}

void ay_free_miss(void *p, ay_bin_t *bin) {
    ay_bin_undo_free(bin);
    ay_free_slow(p);
}

void ay_free_unchecked(void *p) { free_small(ay_pagemap_span(p), p); }

/* The secure flavour's free, when the fast path (free.h) cannot: a block
 * that is not small, of a thread without a cache, of a class that does not
 * wait in the quarantine, or that failed one of the fast path's checks
 * (align mask, its free mark, its offset; with secure_tags:true, its tag).
 * Every block is checked against its span (offset; a double free: its free
 * mark, or a link to a block of its class; with tags, the tag: an
 * overflow), its free mark (or tag) says "free" from now on, and a small
 * block of an automatic heap waits in the thread's quarantine
 * (quarantine.h). */
void ay_free_secure(void *p) {
    if (!p)
        return;
    if (AY_UNLIKELY(ay_guard_owns(p)))
        return ay_guard_free(p, __builtin_return_address(0), "free()");
    ay_span_t *s = ay_block_span(p, "free()");
    if (s->state != AY_SPAN_SMALL) {
        ay_large_free(s, p);
        return;
    }
    ay_quarantine_mark(p, s->size);
    ay_tcache_t *tc = s->owner.central->bin ? ay_tcache_get() : NULL;
    if (tc && tc->quarantine && tc->cache_on && s->size <= AY_QUARANTINE_MAX_BLOCK)
        return ay_free_quarantine(tc, s->owner.central->list, p);
    free_small(s, p);
}

/* The fast path missed.  With the quarantine on (q is a quarantine list),
 * two cases stay off the slow path, the block checked as on the fast path:
 * a quarantine list with a K (a live cache's: the empty cache's have none)
 * that ran out of room is the rotation (the block is pushed, and the batch
 * before leaves: ay_free_quarantine; or, at the class's first free, it
 * joins the quarantine or finds no room within the bound:
 * ay_tcache_quarantine_rotate); and a class that does not wait (K 0: above
 * AY_QUARANTINE_MAX_BLOCK, or no room within the bound) goes onto its bin
 * when that has room.  Anything else takes the slow path. */
void ay_free_secure_miss(void *p, ay_bin_t *q) {
    ay_bin_undo_free(q);
    if (ay_tcache_free_off && q->room <= 0) {
        uintptr_t a = (uintptr_t)p;
        ay_pm_leaf_t *leaf = ay_pagemap_leaf(a);
        uintptr_t i = ay_pagemap_index(a);
        unsigned off = AY_LOAD(&leaf->list[i]);
        ay_bin_t *bin = (ay_bin_t *)((char *)ay_tls.bins + off);
        if (q->limit & AY_QLIST_K_MASK) {
            if (ay_free_secure_ok(p, q, leaf, i, off))
                return ay_free_quarantine(ay_tcache_of_bins(ay_tls.bins), off, p);
        } else if (bin->room > 0 && ay_free_secure_ok(p, q, leaf, i, off)) {
            ay_link_set_raw(p, bin->head);
            bin->head = p;
            bin->room--;
            return;
        }
    }
    ay_free_secure(p);
}

ALLOY_API void alloy_free(void *p) {
    if (ay_secure)
        return ay_free_fast_secure(p);
    if (ay_debug >= 3)
        return ay_free_slow(p);
    ay_free_fast(p);
}

ALLOY_API void alloy_free_sized(void *p, size_t size) {
    if (ay_debug >= 3 && p && size > alloy_malloc_usable_size(p))
        ay_fatal_in("free_sized()", "size larger than the block", p);
    alloy_free(p);
}

ALLOY_API void alloy_free_aligned_sized(void *p, size_t align, size_t size) {
    if (ay_debug >= 3 && p && ((uintptr_t)p & (align - 1)))
        ay_fatal_in("free_aligned_sized()", "pointer not aligned as stated", p);
    alloy_free_sized(p, size);
}
