/* SPDX-License-Identifier: MIT */
/* lock.h - how the central caches and the page heaps take their locks: a
 * pthread mutex, tried first, then retried for a short while (up to
 * AY_LOCK_SPINS tries, 8 pause instructions apart: about 30 us on this
 * project's machines) before the thread sleeps on it.  Their critical
 * sections are short, so a thread that finds the lock held most often gets
 * it within the spin, from a holder on another CPU, and does not pay two
 * context switches for it (`malloc_test 100 1000000 16` on 2 CPUs: 5,300
 * context switches -> 1,700, median of 4 interleaved runs, at the same
 * time; docs/ARCHITECTURE.md, "Locks and their order").  The other locks
 * (the registry, the pagemap's, the metadata's) are taken rarely and stay
 * plain mutexes. */
#ifndef ALLOY_LOCK_H
#define ALLOY_LOCK_H
#include <pthread.h>
#include <stdbool.h>

#include "internal.h"

#ifndef AY_LOCK_SPINS
#define AY_LOCK_SPINS 200
#endif

/* Take m.  Returns true when it was held by another thread at the first try
 * (the lock was contended), whether the spin or the sleep then got it. */
static inline bool ay_lock_take(pthread_mutex_t *m) {
    if (AY_LIKELY(pthread_mutex_trylock(m) == 0))
        return false;
    for (int i = 0; i < AY_LOCK_SPINS; i++) {
        for (int k = 0; k < 8; k++)
            AY_CPU_PAUSE();
        if (pthread_mutex_trylock(m) == 0)
            return true;
    }
    pthread_mutex_lock(m);
    return true;
}

#endif
