/* SPDX-License-Identifier: MIT */
/* init.c - putting the allocator together: one-time set-up (settings, the
 * NUMA topology, heaps, thread-cache tables), the library
 * constructor, and the fork handlers.  Every module keeps its own state and
 * its own fork support; this file only calls them in order.
 *
 * Fork: the prepare handler takes every allocator lock in the global lock
 * order (docs/ARCHITECTURE.md): the thread registry, then heaps_lock and
 * each heap's central caches by class, its page heap and its direct maps,
 * then each node's transfer caches (its set's use_lock, then every transfer
 * cache in use), then the metadata and pagemap locks, the heap profiler's
 * store, and the guarded pages' lock.  The parent releases them in the reverse order.  The
 * child inherits consistent structures; it resets the locks, forgets the
 * other threads' caches, and has no background thread (it may start one
 * again).
 *
 * Invariant: ay_init_state goes 0 -> 1 (one thread initialising) -> 2
 * (done), once, and every step of ay_init_slow is done before it reads 2;
 * nothing here calls malloc.
 */
#include "init.h"

#include <pthread.h>
#include <sched.h>

#include "background.h"
#include "cpucache.h"
#include "conf.h"
#include "error.h"
#include "guard.h"
#include "heap.h"
#include "meta.h"
#include "os.h"
#include "pagemap.h"
#include "prof.h"
#include "prof_out.h"
#include "prof_store.h"
#include "secure.h"
#include "tcache.h"
#include "topology.h"

int ay_init_state;

/* With per-CPU caches, one automatic heap (heap.c makes one per NUMA node
 * at least), as TCMalloc has one central cache per class per node: a CPU's
 * cache holds any thread's blocks, and a thread without a thread record
 * uses heap 0 (ay_tcache_heap), but one with a record is bound to the
 * least loaded heap, whose spans and free pages the others cannot use: a
 * split of the central tier that shared caches do not need
 * (docs/BENCHMARKS.md has the measurement).  With thread caches, one heap
 * per CPU: contention on a heap only arises in slow paths (a thread-cache
 * miss or overflow, once per batch), so one heap per CPU already keeps lock
 * waits rare, while every extra heap keeps its own partly used spans and
 * free pages, which costs memory.  jemalloc's 4 x ncpu arenas serve as its
 * only cache for many operations; ours are behind a thread cache. */
static unsigned default_heaps(bool percpu) {
    if (ay_conf.heaps)
        return ay_conf.heaps;
    if (percpu)
        return 1;
    unsigned n = ay_topology_online_cpus(); /* sysconf would fault in libc pages */
    return n ? n : ay_os_ncpus();
}

void ay_init_slow(void) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&ay_init_state, &expected, 1, 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_ACQUIRE)) {
        ay_secure_init(); /* the keys, before any free list exists */
        ay_conf_init(&ay_conf);
        ay_secure_conf(ay_conf.secure_tags);    /* before the size tables (tcache) */
        if (!ay_secure && ay_conf.quarantine) { /* the secure flavour's alone (tcache.h) */
            ay_warn("quarantine: the quarantine is the secure flavour's (liballoy_secure); "
                    "this flavour ignores the setting");
            ay_conf.quarantine = 0;
        }
        ay_topology_init(ay_conf.numa); /* before the heaps, which are grouped by node */
        bool percpu = ay_cpu_can_run(); /* before the heaps, whose count depends on it */
        ay_heaps_init(default_heaps(percpu));
        ay_tcache_global_init();
        if (percpu)
            ay_cpu_init(); /* per-CPU caches, else thread caches (cpucache.h) */
        ay_prof_init();
        if (ay_prof_enabled()) /* the countdown is kept on the counted path (cpucache.h) */
            ay_cpu_count_mallocs();
        ay_guard_init(); /* guard_sample: the guarded pages and the SIGSEGV handler */
        __atomic_store_n(&ay_init_state, 2, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&ay_init_state, __ATOMIC_ACQUIRE) != 2)
        sched_yield(); /* another thread is initialising */
}

/* ---- fork ---- */

static void fork_prepare(void) {
    ay_cpu_lock_all(); /* a slow path takes its cache's lock before a heap's */
    ay_tcache_registry_lock();
    ay_heaps_lock_all();
    ay_meta_lock();
    ay_pagemap_lock();
    ay_prof_fork_prepare();
    ay_guard_lock();
}

static void fork_parent(void) {
    ay_guard_unlock();
    ay_prof_fork_parent();
    ay_pagemap_unlock();
    ay_meta_unlock();
    ay_heaps_unlock_all();
    ay_tcache_registry_unlock();
    ay_cpu_unlock_all();
}

static void fork_child(void) {
    ay_guard_reset_lock();
    ay_pagemap_reset_lock();
    ay_meta_reset_lock();
    ay_heaps_after_fork_child();
    ay_tcache_registry_after_fork_child();
    ay_cpu_after_fork_child();
    ay_background_after_fork_child();
    ay_prof_fork_child();
}

__attribute__((constructor)) static void alloy_constructor(void) {
    ay_ensure_init();
    ay_os_fork_handlers(fork_prepare, fork_parent, fork_child);
#ifdef AY_FORK_LAZY
    if (ay_prof_enabled()) /* its child handler restarts the dumps' numbering */
        ay_os_fork_register();
#else
    ay_os_fork_register();
#endif
    ay_prof_start();
    if (ay_conf.background_thread == AY_BG_AUTO && ay_conf.decay_ms >= 0)
        AY_STORE(&ay_heaps_tick_hook, ay_background_tick);
    if (ay_conf.background_thread == AY_BG_TRUE && ay_background_start() != 0)
        ay_warn("could not start the background thread; purging on slow paths only");
}
