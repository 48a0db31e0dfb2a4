/* SPDX-License-Identifier: MIT */
/* aligned.h - aligned allocation in a heap (aligned.c), for the explicit-heap
 * API; the aligned family of the libc names (posix_memalign, aligned_alloc,
 * memalign, valloc, pvalloc) is defined in aligned.c too. */
#ifndef ALLOY_ALIGNED_H
#define ALLOY_ALIGNED_H
#include <stddef.h>

#include "heap.h"

/* size bytes aligned to align (a power of two) from heap h (NULL: the
 * thread's).  NULL with ENOMEM on failure. */
void *ay_alloc_aligned(ay_heap_t *h, size_t size, size_t align);

#endif
