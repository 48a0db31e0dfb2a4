/* SPDX-License-Identifier: MIT */
/* background.c - the background purging thread (see background.h).
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
#include "heap.h"

static pthread_t bg_thread;
static bool bg_running;  /* a thread of the current generation runs */
static uintptr_t bg_gen; /* generation: each stop ends the thread of the current one */
static pthread_mutex_t bg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t bg_cond = PTHREAD_COND_INITIALIZER;

/* How long the thread sleeps between two rounds, in ms. */
static int64_t background_period(void) {
    int64_t d = ay_conf.decay_ms;
    if (d <= 0)
        return 1000;
    d /= 4;
    return d < 10 ? 10 : d > 1000 ? 1000 : d;
}

static void *background_main(void *arg) {
    uintptr_t gen = (uintptr_t)arg;
    pthread_mutex_lock(&bg_lock);
    while (gen == bg_gen) {
        int64_t wait = background_period();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += wait / 1000;
        ts.tv_nsec += (wait % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&bg_cond, &bg_lock, &ts);
        if (gen != bg_gen)
            break;
        pthread_mutex_unlock(&bg_lock);
        ay_heaps_purge(false);
        pthread_mutex_lock(&bg_lock);
    }
    pthread_mutex_unlock(&bg_lock);
    return NULL;
}

int ay_background_start(void) {
    int err = 0;
    pthread_mutex_lock(&bg_lock);
    if (!bg_running) {
        bg_running = true;
        err = pthread_create(&bg_thread, NULL, background_main, (void *)bg_gen);
        if (err)
            bg_running = false;
    }
    pthread_mutex_unlock(&bg_lock);
    return err;
}

void ay_background_stop(void) {
    pthread_mutex_lock(&bg_lock);
    bool was = bg_running;
    pthread_t t = bg_thread; /* a start after the unlock may overwrite bg_thread */
    if (was)
        bg_gen++;
    bg_running = false;
    pthread_cond_broadcast(&bg_cond);
    pthread_mutex_unlock(&bg_lock);
    if (was)
        pthread_join(t, NULL);
}

bool ay_background_running(void) { return __atomic_load_n(&bg_running, __ATOMIC_RELAXED); }

void ay_background_after_fork_child(void) {
    pthread_mutex_init(&bg_lock, NULL);
    pthread_cond_init(&bg_cond, NULL);
    bg_running = false;
}
