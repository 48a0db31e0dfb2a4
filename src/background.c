/* SPDX-License-Identifier: MIT */
/* background.c - the background thread: purging, and one periodic task
 * (see background.h).
 *
 * Invariants: bg_running, bg_gen and bg_thread change only under bg_lock
 * (bg_running is also read relaxed, by ay_background_running); bg_running
 * is true from a start to the next stop, and at most one thread of the
 * current generation runs; a stop increments bg_gen, wakes the thread and
 * waits for it to exit (it leaves at its next check, after a purge under
 * way); the thread purges without bg_lock held. */
#include "background.h"

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "conf.h"
#include "cpucache.h"
#include "heap.h"
#include "os.h"

static pthread_t bg_thread;
static bool bg_running;  /* a thread of the current generation runs */
static bool bg_purge;    /* purging on (background_thread) */
static uintptr_t bg_gen; /* generation: each stop ends the thread of the current one */
static void (*bg_task)(void);
static unsigned bg_task_ms;
static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bg_cond = PTHREAD_COND_INITIALIZER;

/* How long the thread waits between two purges, in ms. */
static int64_t background_period(void) {
    int64_t d = ay_conf.decay_ms;
    if (d <= 0)
        return 1000;
    d /= 4;
    return d < 10 ? 10 : d > 1000 ? 1000 : d;
}

/* The condition variable's clock (CLOCK_REALTIME), in ms. */
static uint64_t clock_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Wait on bg_cond until `due` (ms of clock_ms), with bg_lock held. */
static void wait_until(uint64_t due) {
    struct timespec ts;
    ts.tv_sec = (time_t)(due / 1000);
    ts.tv_nsec = (long)(due % 1000) * 1000000;
    pthread_cond_timedwait(&bg_cond, &bg_lock, &ts);
}

static void *background_main(void *arg) {
    uintptr_t gen = (uintptr_t)arg;
    ay_os_block_signals();
    pthread_mutex_lock(&bg_lock);
    uint64_t now = clock_ms();
    uint64_t next_purge = now + (uint64_t)background_period(), next_task = now + bg_task_ms;
    while (gen == bg_gen) {
        uint64_t due = now + 1000;
        if (bg_purge && next_purge < due)
            due = next_purge;
        if (bg_task && next_task < due)
            due = next_task;
        wait_until(due);
        if (gen != bg_gen)
            break;
        now = clock_ms();
        bool purge = bg_purge && now >= next_purge;
        void (*task)(void) = bg_task && now >= next_task ? bg_task : NULL;
        if (purge || !bg_purge)
            next_purge = now + (uint64_t)background_period();
        if (task) /* on a fixed schedule, unless it fell behind */
            next_task = next_task + bg_task_ms > now ? next_task + bg_task_ms : now + bg_task_ms;
        pthread_mutex_unlock(&bg_lock);
        if (purge) {             /* a round, when one is due, as on any slow-path event */
            ay_cpu_decay_tick(); /* per-CPU caches idle for decay_ms first */
            ay_heaps_decay_tick();
        }
        if (task)
            task();
        pthread_mutex_lock(&bg_lock);
    }
    pthread_mutex_unlock(&bg_lock);
    return NULL;
}

/* Start the thread if none runs (bg_lock held).  0, or the error. */
static int ensure_thread(void) {
    int err = 0;
    if (!bg_running) {
        bg_running = true;
        ay_os_fork_register(); /* a fork's child must know it has no thread */
        err = pthread_create(&bg_thread, NULL, background_main, (void *)bg_gen);
        if (err)
            bg_running = false;
    }
    pthread_cond_broadcast(&bg_cond); /* a running thread looks at what is due again */
    return err;
}

int ay_background_start(void) {
    pthread_mutex_lock(&bg_lock);
    __atomic_store_n(&bg_purge, true, __ATOMIC_RELAXED);
    int err = ensure_thread();
    if (err)
        __atomic_store_n(&bg_purge, false, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&bg_lock);
    return err;
}

int ay_background_set_task(void (*task)(void), unsigned period_ms) {
    pthread_mutex_lock(&bg_lock);
    bg_task = task;
    bg_task_ms = period_ms ? period_ms : 1;
    int err = ensure_thread();
    if (err)
        bg_task = NULL;
    pthread_mutex_unlock(&bg_lock);
    return err;
}

void ay_background_stop(void) {
    pthread_mutex_lock(&bg_lock);
    __atomic_store_n(&bg_purge, false, __ATOMIC_RELAXED);
    bool was = bg_running && !bg_task; /* a thread with a task keeps running */
    pthread_t t = bg_thread;           /* a start after the unlock may overwrite bg_thread */
    if (was) {
        bg_gen++;
        bg_running = false;
    }
    pthread_cond_broadcast(&bg_cond);
    pthread_mutex_unlock(&bg_lock);
    if (was)
        pthread_join(t, NULL);
}

bool ay_background_running(void) { return __atomic_load_n(&bg_purge, __ATOMIC_RELAXED); }

void ay_background_after_fork_child(void) {
    pthread_mutex_init(&bg_lock, NULL);
    pthread_cond_init(&bg_cond, NULL);
    bg_running = false;
    bg_purge = false;
    bg_task = NULL;
}
