/* SPDX-License-Identifier: MIT */
/* background.h - the optional background purging thread.
 *
 * Off by default (background_thread:true, or alloy_ctl("background_thread")
 * turns it on).  It wakes every decay_ms / 4 (at least 10 ms, at most 1 s)
 * and purges, in every heap, the free pages that have been free for
 * decay_ms, so that an idle process gives its memory back without any
 * allocator call.
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

/* Start the thread (no-op when it runs).  0, or the pthread_create error. */
int ay_background_start(void);
/* Stop it and wait for it to exit (no-op when it does not run). */
void ay_background_stop(void);
bool ay_background_running(void);
/* In a fork child: the thread does not exist there. */
void ay_background_after_fork_child(void);

#endif
