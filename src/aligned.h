/* SPDX-License-Identifier: MIT */
/* aligned.h - aligned allocation in a heap (aligned.c), for the explicit-heap
 * API; the aligned family's alloy_* names (alloy_posix_memalign,
 * alloy_aligned_alloc, alloy_memalign, alloy_valloc, alloy_pvalloc) are
 * defined in aligned.c too, and the libc names forward to them
 * (override.c).  Every block it returns is aligned as asked, and an
 * impossible request gets NULL with ENOMEM. */
#ifndef ALLOY_ALIGNED_H
#define ALLOY_ALIGNED_H
#include <stddef.h>

#include "heap.h"

/* size bytes aligned to align (a power of two) from heap h (NULL: the
 * thread's).  NULL with ENOMEM on failure. */
void *ay_alloc_aligned(ay_heap_t *h, size_t size, size_t align);
/* The request size that malloc maps to the smallest class whose objects
 * hold size bytes and are aligned to align (a power of two above 8, with
 * size <= AY_MAX_REQUEST - align), or 0 when such a block is whole pages
 * (ay_large_alloc). */
size_t ay_aligned_request(size_t size, size_t align);

#endif
