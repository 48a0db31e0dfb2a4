/* SPDX-License-Identifier: MIT */
/* stats.h - what the statistics module offers other modules beyond the
 * public alloy_*_stats_read (alloy.h): one class of one heap, for reports
 * in other allocators' formats (glibc's malloc_info, glibc_api.c).  The
 * figures follow alloy.h's alloy_class_stats_t, restricted to the heap:
 * thread-cache bytes are those of the threads bound to it. */
#ifndef ALLOY_STATS_INTERNAL_H
#define ALLOY_STATS_INTERNAL_H

#include "alloy.h"

/* Fill *out (every field) for class cls of heap id.  0, or ENOENT when
 * there is no such heap or class. */
int ay_stats_heap_class_read(unsigned id, unsigned cls, alloy_class_stats_t *out);

#endif
