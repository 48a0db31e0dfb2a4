/* SPDX-License-Identifier: MIT */
/* alloy_names.h - force-included (-include) into the tests of the sanitizer
 * flavours: the libc names in a test's source become the alloy_* names, so
 * the same tests exercise alloy while ThreadSanitizer or AddressSanitizer
 * owns malloc and free.  The system headers are read first, with their own
 * declarations; only later uses are renamed. */
#ifndef ALLOY_TEST_NAMES_H
#define ALLOY_TEST_NAMES_H
#define _GNU_SOURCE
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"

#define malloc alloy_malloc
#define free alloy_free
#define calloc alloy_calloc
#define realloc alloy_realloc
#define reallocarray alloy_reallocarray
#define posix_memalign alloy_posix_memalign
#define aligned_alloc alloy_aligned_alloc
#define memalign alloy_memalign
#define valloc alloy_valloc
#define pvalloc alloy_pvalloc
#define malloc_usable_size alloy_malloc_usable_size
#define free_sized alloy_free_sized
#define free_aligned_sized alloy_free_aligned_sized
#endif
