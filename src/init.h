/* SPDX-License-Identifier: MIT */
/* init.h - process-wide initialisation, done once by the first slow path
 * (or the library constructor, whichever comes first).  It reads the
 * settings, sets up the heaps and the thread-cache tables; it never
 * allocates, uses no stdio and no dlsym, so the first malloc can run it. */
#ifndef ALLOY_INIT_H
#define ALLOY_INIT_H
#include "internal.h"

extern AY_HIDDEN int ay_init_state; /* 2 when initialised */
void ay_init_slow(void);

AY_INLINE void ay_ensure_init(void) {
    if (AY_UNLIKELY(__atomic_load_n(&ay_init_state, __ATOMIC_ACQUIRE) != 2))
        ay_init_slow();
}

#endif
