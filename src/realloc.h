/* SPDX-License-Identifier: MIT */
/* realloc.h - realloc in a heap (realloc.c), for the explicit-heap API;
 * realloc and reallocarray themselves are defined in realloc.c too. */
#ifndef ALLOY_REALLOC_H
#define ALLOY_REALLOC_H
#include <stddef.h>

#include "heap.h"

/* realloc in heap h (NULL: as malloc does): see realloc.c for the policy. */
void *ay_realloc_in(ay_heap_t *h, void *p, size_t size);

#endif
