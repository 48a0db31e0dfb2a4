/* init.c - process set-up, fork handlers, exit-time stats, fatal errors.
 *
 * Fork: the prepare handler takes every allocator lock in the global lock
 * order (thread registry, central caches by class, page heap, metadata,
 * pagemap), so the child inherits consistent structures; the child resets the
 * locks and forgets the other threads' caches.
 */
#include "init.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "alloy.h"
#include "conf.h"
#include "fmt.h"
#include "heap.h"
#include "meta.h"
#include "os.h"
#include "pagemap.h"
#include "tcache.h"

int ay_init_state;

/* One automatic heap per CPU: contention on a heap only arises in slow
 * paths (a thread-cache miss or overflow, once per batch), so one heap per
 * CPU already keeps lock waits rare, while every extra heap keeps its own
 * partly used spans and free pages, which costs memory.  jemalloc's 4 x ncpu
 * arenas serve as its only cache for many operations; ours are behind a
 * thread cache. */
static unsigned default_heaps(void) {
    return ay_conf.heaps ? ay_conf.heaps : ay_os_ncpus();
}

void ay_init_slow(void) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&ay_init_state, &expected, 1, 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_ACQUIRE)) {
        ay_conf_init(&ay_conf);
        ay_heaps_init(default_heaps());
        ay_tcache_global_init();
        __atomic_store_n(&ay_init_state, 2, __ATOMIC_RELEASE);
        return;
    }
    while (__atomic_load_n(&ay_init_state, __ATOMIC_ACQUIRE) != 2)
        sched_yield(); /* another thread is initialising */
}

/* ---- fork ---- */

static void fork_prepare(void) {
    ay_tcache_registry_lock();
    ay_heaps_lock_all();
    ay_meta_lock();
    ay_pagemap_lock();
}

static void fork_parent(void) {
    ay_pagemap_unlock();
    ay_meta_unlock();
    ay_heaps_unlock_all();
    ay_tcache_registry_unlock();
}

/* The child has one thread: locks are reset, other threads' caches are
 * forgotten, and there is no background thread (slow paths still purge). */
static void fork_child(void) {
    ay_pagemap_reset_lock();
    ay_meta_reset_lock();
    ay_heaps_reset_locks();
    ay_tcache_registry_after_fork_child();
}

/* A private copy of stderr for the exit-time report: programs such as the
 * coreutils close stderr in their own exit handlers, which run first. */
static int stats_fd = -1;

static void stats_write(void *opaque, const char *text, size_t len) {
    ay_os_write(stats_fd, text, len);
}

__attribute__((constructor)) static void alloy_constructor(void) {
    ay_ensure_init();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (ay_conf.stats_print)
        stats_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
    if (ay_conf.background_thread && ay_background_start() != 0)
        ay_warn("could not start the background thread; purging on slow paths only");
}

__attribute__((destructor)) static void alloy_destructor(void) {
    if (ay_conf.stats_print && stats_fd >= 0)
        alloy_stats_print(stats_write, NULL, NULL);
}

/* ---- errors ---- */

void ay_fatal(const char *what, const void *ptr) {
    ay_fmt_t f;
    ay_fmt_init(&f, NULL, NULL);
    ay_fmt_str(&f, "alloy: ");
    ay_fmt_str(&f, what);
    ay_fmt_str(&f, " (pointer ");
    ay_fmt_hex(&f, (uintptr_t)ptr);
    ay_fmt_str(&f, ")\n");
    ay_fmt_flush(&f);
    abort();
}

void *ay_oom(void) {
    if (ay_conf.abort_on_error)
        ay_fatal("out of memory (abort_on_error:true)", NULL);
    errno = ENOMEM;
    return NULL;
}

void ay_warn(const char *msg) {
    ay_fmt_t f;
    ay_fmt_init(&f, NULL, NULL);
    ay_fmt_str(&f, "alloy: ");
    ay_fmt_str(&f, msg);
    ay_fmt_str(&f, "\n");
    ay_fmt_flush(&f);
}
