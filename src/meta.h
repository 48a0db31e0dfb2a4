/* SPDX-License-Identifier: MIT */
/* meta.h - metadata memory: spans and thread caches come from alloy's own
 * mmap'ed chunks, never from malloc, so initialisation cannot recurse.
 * Memory is carved by a bump pointer; spans and thread caches are recycled
 * through free lists.  Nothing is returned to the OS. */
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
