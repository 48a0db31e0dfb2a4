/* scratch.c - the calling thread's scratch arena (seed 001 §3.4: a
 * thread-local bump allocator that falls back upstream).
 *
 * Each thread owns one alloy_arena_t in thread-local storage.  It starts
 * with no memory; its first chunk (64 KiB) and every later one (doubling)
 * come from the malloc resource, so running out of scratch means "ask
 * malloc for more", never failure while malloc succeeds.  A pthread key
 * destructor gives the chunks back when the thread exits.
 *
 * Invariant: scratch_ready is true exactly when scratch_arena is
 * initialised on this thread; no lock is ever taken after set-up.
 */
#include <alloy/arena.h>
#include <alloy/resource.h>

#include <pthread.h>
#include <stdbool.h>

#include "hot.h"

#define SCRATCH_FIRST_CHUNK ((size_t)64 << 10)

static __thread alloy_arena_t scratch_arena;
static __thread bool scratch_ready;
static pthread_key_t scratch_key;
static bool scratch_key_ok;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_at_thread_exit(void *arg)
{
    alloy_arena_destroy(arg);
    scratch_ready = false;
}

static void scratch_make_key(void)
{
    scratch_key_ok = pthread_key_create(&scratch_key, scratch_at_thread_exit) == 0;
}

static __attribute__((noinline)) alloy_arena_t *scratch_setup(void)
{
    alloy_arena_init(&scratch_arena, NULL, 0, alloy_malloc_resource());
    scratch_arena.next_chunk_size = SCRATCH_FIRST_CHUNK;
    pthread_once(&scratch_once, scratch_make_key);
    if (scratch_key_ok)
        pthread_setspecific(scratch_key, &scratch_arena);
    scratch_ready = true;
    return &scratch_arena;
}

ALLOY_API alloy_arena_t *alloy_scratch_arena(void)
{
    if (ALLOY_LIKELY(scratch_ready))
        return &scratch_arena;
    return scratch_setup();
}

ALLOY_API void alloy_scratch_release(void)
{
    if (scratch_ready)
        alloy_arena_release(&scratch_arena);
}
