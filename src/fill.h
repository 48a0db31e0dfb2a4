/* SPDX-License-Identifier: MIT */
/* fill.h - the debugging fills of the `junk` and `zero` settings: 0xa5 (or
 * zeros) into a block as it is handed out, 0x5a into a block as it is freed.
 * Either setting turns the thread caches off (tcache.c), so every block
 * passes through the slow paths that call these.  Off, each is one test of
 * a setting. */
#ifndef ALLOY_FILL_H
#define ALLOY_FILL_H
#include <stddef.h>
#include <string.h>

#include "conf.h"
#include "internal.h"

/* A new block of `usable` bytes at p (NULL passes through). */
AY_INLINE void *ay_fill_new(void *p, size_t usable) {
    if (AY_UNLIKELY(ay_conf.junk || ay_conf.zero) && p)
        memset(p, ay_conf.zero ? 0 : 0xa5, usable);
    return p;
}

/* A block of `usable` bytes at p about to be freed. */
AY_INLINE void ay_fill_freed(void *p, size_t usable) {
    if (AY_UNLIKELY(ay_conf.junk))
        memset(p, 0x5a, usable);
}

#endif
