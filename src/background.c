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
#include "policy.h"

static pthread_t bg_thread;
static bool bg_running;  /* a thread of the current generation runs */
static bool bg_purge;    /* purging on (background_thread) */
static uintptr_t bg_gen; /* generation: each stop ends the thread of the current one */
static bool bg_auto;     /* started by background_thread:auto: it backs off while nothing is held */
static bool bg_auto_off; /* a stop (alloy_ctl) ended auto's starts for the process */
static unsigned bg_idle; /* the auto thread's rounds in a row that found nothing held */
static bool bg_kick;     /* a slow path found memory held while the thread backed off */
static uint64_t bg_first_ms; /* auto: the first slow-path event's time (ay_os_now_ms) */
static void (*bg_task)(void);
static unsigned bg_task_ms;
static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bg_cond = PTHREAD_COND_INITIALIZER;

#define BG_IDLE_MAX_MS 8000 /* the auto thread's longest wait while nothing is held */

/* How long the thread waits between two purges, in ms (bg_lock held):
 * decay_ms / 4, within [10, 1000]; for the auto thread, doubled for each
 * round in a row that found nothing held, up to BG_IDLE_MAX_MS. */
static int64_t background_period(void) {
    int64_t d = ay_conf.decay_ms;
    d = d <= 0 ? 1000 : d / 4 < 10 ? 10 : d / 4 > 1000 ? 1000 : d / 4;
    for (unsigned i = 0; bg_auto && i < bg_idle && d < BG_IDLE_MAX_MS; i++)
        d *= 2;
    return d < BG_IDLE_MAX_MS ? d : BG_IDLE_MAX_MS;
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

/* Does the process hold memory that a round could give back later? */
static bool held_free(void) { return ay_cpu_holds() || ay_heaps_hold_free(); }

static void *background_main(void *arg) {
    uintptr_t gen = (uintptr_t)arg;
    ay_os_block_signals();
    pthread_mutex_lock(&bg_lock);
    uint64_t now = clock_ms();
    uint64_t next_purge = now + (uint64_t)background_period(), next_task = now + bg_task_ms;
    while (gen == bg_gen) {
        uint64_t due = now + (bg_auto ? BG_IDLE_MAX_MS : 1000);
        if (bg_purge && next_purge < due)
            due = next_purge;
        if (bg_task && next_task < due)
            due = next_task;
        if (!AY_LOAD(&bg_kick)) /* a kick since the last look: no wait */
            wait_until(due);
        if (gen != bg_gen)
            break;
        now = clock_ms();
        if (__atomic_exchange_n(&bg_kick, false, __ATOMIC_RELAXED)) { /* a round at once */
            AY_STORE(&bg_idle, 0);
            next_purge = now;
        }
        bool purge = bg_purge && now >= next_purge;
        void (*task)(void) = bg_task && now >= next_task ? bg_task : NULL;
        if (purge || !bg_purge)
            next_purge = now + (uint64_t)background_period();
        if (task) /* on a fixed schedule, unless it fell behind */
            next_task = next_task + bg_task_ms > now ? next_task + bg_task_ms : now + bg_task_ms;
        pthread_mutex_unlock(&bg_lock);
        bool held = false;
        if (purge) {             /* a round, when one is due, as on any slow-path event */
            ay_cpu_decay_tick(); /* per-CPU caches idle for decay_ms first */
            ay_heaps_decay_tick();
            held = held_free();
        }
        if (task)
            task();
        pthread_mutex_lock(&bg_lock);
        if (purge && bg_auto) { /* nothing held: the next round waits longer */
            AY_STORE(&bg_idle, held ? 0 : bg_idle < 32 ? bg_idle + 1 : bg_idle);
            next_purge = now + (uint64_t)background_period();
        }
    }
    pthread_mutex_unlock(&bg_lock);
    return NULL;
}

/* Start the thread if none runs (bg_lock held).  0, or the error. */
static int ensure_thread(void) {
    int err = 0;
    if (!bg_running) {
        __atomic_store_n(&bg_running, true, __ATOMIC_RELEASE);
        ay_os_fork_register(); /* a fork's child must know it has no thread */
        err = pthread_create(&bg_thread, NULL, background_main, (void *)bg_gen);
        if (err)
            __atomic_store_n(&bg_running, false, __ATOMIC_RELEASE);
    }
    pthread_cond_broadcast(&bg_cond); /* a running thread looks at what is due again */
    return err;
}

int ay_background_start(void) {
    pthread_mutex_lock(&bg_lock);
    bg_auto = false; /* on for good, at the pace of decay_ms */
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
    AY_STORE(&bg_auto_off, true);
    bg_auto = false;
    __atomic_store_n(&bg_purge, false, __ATOMIC_RELAXED);
    bool was = bg_running && !bg_task; /* a thread with a task keeps running */
    pthread_t t = bg_thread;           /* a start after the unlock may overwrite bg_thread */
    if (was) {
        bg_gen++;
        __atomic_store_n(&bg_running, false, __ATOMIC_RELEASE);
    }
    pthread_cond_broadcast(&bg_cond);
    pthread_mutex_unlock(&bg_lock);
    if (was)
        pthread_join(t, NULL);
}

bool ay_background_running(void) { return __atomic_load_n(&bg_purge, __ATOMIC_RELAXED); }

/* background_thread:auto's hook at each slow-path event (heap.h): memory
 * held (held_free) starts the thread, once the process has used the
 * allocator for a decay round (AY_DECAY_ROUND_MS: a program that ends
 * sooner never gets it), or wakes
 * it from a back-off; a running thread that is not backing off costs the
 * event two loads.  The start only tries bg_lock: its holder (a start, a
 * stop, a pthread_create that allocates, or the thread) is not waited for,
 * and the next event looks again.  The wake signals without bg_lock: a
 * signal that comes between the thread's look at bg_kick and its wait is
 * lost, and its timer (at most BG_IDLE_MAX_MS) wakes it. */
void ay_background_tick(void) {
    if (__atomic_load_n(&bg_running, __ATOMIC_ACQUIRE)) {
        if (AY_LOAD(&bg_idle) && !AY_LOAD(&bg_kick) && held_free() &&
            !__atomic_exchange_n(&bg_kick, true, __ATOMIC_RELAXED))
            pthread_cond_signal(&bg_cond);
        return;
    }
    if (AY_LOAD(&bg_auto_off))
        return;
    uint64_t now = ay_os_now_ms(), first = AY_LOAD(&bg_first_ms);
    if (!first) /* racy: another thread's first event may set it again, a moment apart */
        AY_STORE(&bg_first_ms, now);
    if (!first || now - first < AY_DECAY_ROUND_MS || !held_free() ||
        pthread_mutex_trylock(&bg_lock) != 0)
        return;
    if (!bg_running && !bg_auto_off) {
        bg_auto = true;
        AY_STORE(&bg_idle, 0);
        __atomic_store_n(&bg_purge, true, __ATOMIC_RELAXED);
        if (ensure_thread() != 0) {
            bg_auto = false;
            __atomic_store_n(&bg_purge, false, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&bg_lock);
}

void ay_background_after_fork_child(void) {
    pthread_mutex_init(&bg_lock, NULL);
    pthread_cond_init(&bg_cond, NULL);
    __atomic_store_n(&bg_running, false, __ATOMIC_RELEASE);
    bg_purge = false;
    bg_task = NULL;
    bg_auto = false;
    bg_idle = 0;
    bg_kick = false;
}
