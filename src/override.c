/* SPDX-License-Identifier: MIT */
/* override.c - the libc names: malloc, free, ... so that a program gets
 * alloy through LD_PRELOAD or by linking, without source changes.
 *
 * This file is the only one that defines them (glibc's extensions are in
 * glibc_api.c, C++'s operators in cxx_api.c); a build without these files
 * (the sanitizer flavours, whose runtimes own the libc names) has only the
 * alloy_* names.  A GNU alias must sit in the file that defines its target,
 * so these are definitions: malloc and free expand the same inline fast
 * paths as alloy_malloc and alloy_free (no extra call on the hot path); the
 * others forward to their alloy_* twins with one tail jump.
 */
#include <stddef.h>

#include "alloc.h"
#include "alloy.h"
#include "free.h"

#define LIBC_NAME __attribute__((visibility("default"), used))
/* malloc and free start on a cache line of their own, so that their speed
 * does not depend on where unrelated code pushes them: with the same
 * instructions, starting 16 bytes into a line cost bench_sizes 4-5%. */
#define HOT_ENTRY __attribute__((aligned(AY_CACHELINE)))

LIBC_NAME HOT_ENTRY void *malloc(size_t size) { return ay_malloc_fast(size); }

/* This file's own malloc, whatever the process resolves `malloc` to: the
 * front end compares the two to tell whether it is the process's malloc
 * (alloc.c, when a sanitizer runtime is present). */
extern __typeof__(malloc) ay_override_malloc __attribute__((alias("malloc"), visibility("hidden")));

LIBC_NAME HOT_ENTRY void free(void *p) {
    if (ay_secure)
        return ay_free_fast_secure(p);
    if (ay_debug >= 3)
        return ay_free_slow(p);
    ay_free_fast(p);
}

LIBC_NAME void cfree(void *p) { free(p); }
LIBC_NAME void *calloc(size_t n, size_t size) { return alloy_calloc(n, size); }
LIBC_NAME void *realloc(void *p, size_t size) { return alloy_realloc(p, size); }
LIBC_NAME void *reallocarray(void *p, size_t n, size_t size) {
    return alloy_reallocarray(p, n, size);
}
LIBC_NAME int posix_memalign(void **out, size_t align, size_t size) {
    return alloy_posix_memalign(out, align, size);
}
LIBC_NAME void *aligned_alloc(size_t align, size_t size) {
    return alloy_aligned_alloc(align, size);
}
LIBC_NAME void *memalign(size_t align, size_t size) { return alloy_memalign(align, size); }
LIBC_NAME void *valloc(size_t size) { return alloy_valloc(size); }
LIBC_NAME void *pvalloc(size_t size) { return alloy_pvalloc(size); }
LIBC_NAME size_t malloc_usable_size(void *p) { return alloy_malloc_usable_size(p); }
LIBC_NAME void free_sized(void *p, size_t size) { alloy_free_sized(p, size); }
LIBC_NAME void free_aligned_sized(void *p, size_t align, size_t size) {
    alloy_free_aligned_sized(p, align, size);
}
