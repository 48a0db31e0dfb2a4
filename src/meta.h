/* SPDX-License-Identifier: MIT */
/* meta.h - metadata memory: span records, thread caches, every heap but
 * heap 0 (which is static), the secure flavour's quarantines and the
 * guarded pages' slot tables come from alloy's own mmap'ed chunks, never
 * from malloc, so initialisation cannot recurse.  (The pagemap's leaves and
 * the heap profiler's store are mapped by their own modules.)  Memory is
 * carved by a bump pointer; span records are recycled through a free list
 * here, and their users recycle the rest (tcache.c's and heap.c's spare
 * lists).  Nothing is returned to the OS. */
#ifndef ALLOY_META_H
#define ALLOY_META_H
#include <stddef.h>

struct ay_span;

/* Zeroed, 64-byte aligned memory of `size` bytes, or NULL. */
void *ay_meta_alloc(size_t size);
/* A zeroed span record, or NULL; and its return. */
struct ay_span *ay_span_new(void);
void ay_span_delete(struct ay_span *s);
/* Bytes of metadata mapped so far. */
size_t ay_meta_mapped(void);
/* Fork support: take, release, and reset in the child. */
void ay_meta_lock(void);
void ay_meta_unlock(void);
void ay_meta_reset_lock(void);

#endif
