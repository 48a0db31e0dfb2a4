/* SPDX-License-Identifier: MIT */
/* scratch.c - the calling thread's scratch arena (seed 001 §3.4: a
 * thread-local bump allocator that falls back upstream).
 *
 * Each thread owns one alloy_arena_t, which malloc gives it on first use;
 * thread-local storage holds only a pointer to it, so that liballoy's
 * static TLS block stays small.  The arena starts with no memory; its first
 * chunk (64 KiB) and every later one (doubling) come from the malloc
 * resource, so running out of scratch means "ask malloc for more", never
 * failure while malloc succeeds.  A pthread key destructor gives the arena
 * and its chunks back when the thread exits.
 *
 * Invariant: scratch is NULL, or this thread's initialised arena; no lock
 * is ever taken after set-up.
 */
#include <alloy/arena.h>
#include <alloy/resource.h>

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "hot.h"

#define SCRATCH_FIRST_CHUNK ((size_t)64 << 10)

static __thread alloy_arena_t *scratch;
static pthread_key_t scratch_key;
static bool scratch_key_ok;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_at_thread_exit(void *arg) {
    alloy_arena_destroy(arg);
    free(arg);
    scratch = NULL;
}

static void scratch_make_key(void) {
    scratch_key_ok = pthread_key_create(&scratch_key, scratch_at_thread_exit) == 0;
}

static __attribute__((noinline)) alloy_arena_t *scratch_setup(void) {
    alloy_arena_t *a = malloc(sizeof *a);
    if (a == NULL)
        return NULL;
    alloy_arena_init(a, NULL, 0, alloy_malloc_resource());
    a->next_chunk_size = SCRATCH_FIRST_CHUNK;
    pthread_once(&scratch_once, scratch_make_key);
    if (scratch_key_ok)
        pthread_setspecific(scratch_key, a);
    scratch = a;
    return a;
}

ALLOY_API alloy_arena_t *alloy_scratch_arena(void) {
    alloy_arena_t *a = scratch;
    if (ALLOY_LIKELY(a != NULL))
        return a;
    return scratch_setup();
}

ALLOY_API void alloy_scratch_release(void) {
    if (scratch != NULL)
        alloy_arena_release(scratch);
}
