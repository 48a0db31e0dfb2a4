/* SPDX-License-Identifier: MIT */
/* lock.h - how the central caches, the transfer caches and the page heaps
 * take their locks: a pthread mutex, tried first, then retried for a short
 * while (up to AY_LOCK_SPINS tries, 8 pause instructions apart) before the
 * thread sleeps on it.  Their critical sections are short, so a thread that
 * finds the lock held most often gets it within the spin, from a holder on
 * another CPU, and does not pay two context switches for it (what that
 * saves: docs/ARCHITECTURE.md, "Locks and their order").  The other locks
 * (the registry, the pagemap's, the metadata's) are taken rarely and stay
 * plain mutexes. */
#ifndef ALLOY_LOCK_H
#define ALLOY_LOCK_H
#include <pthread.h>
#include <stdbool.h>

#include "internal.h"
#include "os.h"

#ifndef AY_LOCK_SPINS
#define AY_LOCK_SPINS 200
#endif

/* Take m.  Returns true when it was held by another thread at the first try
 * (the lock was contended), whether the spin or the sleep then got it.
 * With glibc, the first try reads the mutex's word (0: free) and takes a
 * free mutex with pthread_mutex_lock: pthread_mutex_trylock switches on the
 * mutex's kind through a jump table in libc's .rodata, 64 KiB of which
 * (the kernel's fault-around) a program that never calls it does not map.
 * A mutex seen free but taken by another thread before this one gets it
 * is waited for without the spin, and counts as not contended. */
static inline bool ay_lock_take(pthread_mutex_t *m) {
#ifdef __GLIBC__
    if (AY_LIKELY(__atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) == 0)) {
        pthread_mutex_lock(m);
        return false;
    }
#else
    ay_fork_check();
    if (AY_LIKELY(pthread_mutex_trylock(m) == 0))
        return false;
#endif
    ay_fork_check();
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
