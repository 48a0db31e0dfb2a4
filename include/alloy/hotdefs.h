/* SPDX-License-Identifier: MIT */
/* alloy/hotdefs.h - the few definitions every hot-path header shares: branch
 * hints and the forward name of the memory resource.
 *
 * Kept tiny on purpose so that arena.h and pool.h need not include each
 * other or resource.h (which in turn embeds both).
 */
#ifndef ALLOY_HOTDEFS_H
#define ALLOY_HOTDEFS_H

#include <alloy.h>

#if defined(__GNUC__)
#define ALLOY_LIKELY(x) __builtin_expect(!!(x), 1)
#define ALLOY_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define ALLOY_LIKELY(x) (x)
#define ALLOY_UNLIKELY(x) (x)
#endif

/* A memory resource; see alloy/resource.h. */
typedef struct alloy_resource alloy_resource_t;

#endif
