/* SPDX-License-Identifier: MIT */
/* background.h - the optional background purging thread.
 *
 * background_thread:true (or alloy_ctl("background_thread")) runs it from
 * start-up.  It wakes every decay_ms / 4 (at least 10 ms, at most 1 s) and
 * drains the per-CPU caches idle for decay_ms and purges, in every heap,
 * the free pages that have been free for decay_ms, so that an idle process
 * gives its memory back without any allocator call.
 *
 * background_thread:auto starts it at the first slow-path event, after
 * the process's first 100 ms (a decay round), that finds memory a later
 * round could give back (heap.h's tick hook: free pages not purged,
 * transfer-cache batches, blocks in a per-CPU cache); its rounds then back
 * off while they find nothing held, the wait doubling each round up to
 * BG_IDLE_MAX_MS (8 s), and a slow-path event that finds memory held wakes
 * it again.  A program that ends sooner, or never leaves any memory to
 * give back, never gets the thread.  alloy_ctl's stop ends auto's starts
 * too.
 *
 * It also runs one periodic task for a higher layer (the timeline,
 * timeline.h), which starts the thread for it whether purging is on or not:
 * the thread then wakes for whichever is due, and purges only when
 * background_thread is on.  It blocks every signal, so the program's
 * signals never land on it.
 *
 * Fork: the child has no background thread (threads do not survive fork);
 * ay_background_after_fork_child records that, so alloy_ctl reads false in
 * the child and the thread can be started there again.
 *
 * Invariants: at most one background thread runs; start and stop may be
 * called from any thread, any number of times; the thread takes allocator
 * locks only through ay_heaps_purge (heaps_lock to pin each heap, then its
 * page heap's lock).
 */
#ifndef ALLOY_BACKGROUND_H
#define ALLOY_BACKGROUND_H
#include <stdbool.h>

/* Turn purging on, starting the thread if it does not run.  0, or the
 * pthread_create error. */
int ay_background_start(void);
/* Turn purging off; stop the thread and wait for it to exit, unless it
 * still runs a task. */
void ay_background_stop(void);
/* Whether background purging is on (alloy_ctl's background_thread). */
bool ay_background_running(void);
/* Run task() on the thread every period_ms (at least 1), starting the
 * thread if need be; one task at most (a second call replaces it).  0, or
 * the pthread_create error. */
int ay_background_set_task(void (*task)(void), unsigned period_ms);
/* background_thread:auto's hook at each slow-path event (heap.h's
 * ay_heaps_tick_hook, which initialisation sets to it under
 * background_thread:auto with decay_ms >= 0): starts or wakes the thread. */
void ay_background_tick(void);
/* In a fork child: the thread does not exist there. */
void ay_background_after_fork_child(void);

#endif
