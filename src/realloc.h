/* SPDX-License-Identifier: MIT */
/* realloc.h - realloc in a heap (realloc.c), for the explicit-heap API;
 * alloy_realloc and alloy_reallocarray are defined in realloc.c too, and
 * the libc names forward to them (override.c).  When realloc fails, the
 * block it was given is untouched. */
#ifndef ALLOY_REALLOC_H
#define ALLOY_REALLOC_H
#include <stddef.h>

#include "heap.h"

/* realloc in heap h (NULL: as malloc does): see realloc.c for the policy. */
void *ay_realloc_in(ay_heap_t *h, void *p, size_t size);

#endif
