/* SPDX-License-Identifier: MIT */
/* shm.h - the live snapshot: a process's statistics in a shared-memory
 * segment, /dev/shm/alloy.<pid>, that `alloy top` reads.
 *
 * The library writes (timeline.c, on the background thread, every
 * timeline_ms with stats_shm:true); the `alloy` command reads (it compiles
 * this file with os.c).  The snapshot is a flat struct of 64-bit words, so
 * that both sides agree on it by its version alone.
 *
 * Consistency: a seqlock.  The writer makes `seq` odd, stores the words,
 * and makes it even again; a reader copies the words between two loads of
 * `seq` and keeps the copy only when both loads are the same even number,
 * else it tries again.  The words are release stores and acquire loads
 * (plain moves on x86), so a copy that read any word of a later write also
 * reads that write's odd number: a torn copy is never returned, and the
 * reader never waits for, blocks or slows the writer.
 *
 * The segment: created under a temporary name (.alloy.<pid>.tmp), mode 0600,
 * given its header and first snapshot, then renamed into place, so a reader
 * never sees it half made; removed at exit by the process that made it (not
 * by a fork child).  A segment whose process is gone (a crash) is stale:
 * ay_shm_clean_stale removes those of the calling user, and a new segment
 * of the same pid replaces one.  A segment of another user is never
 * touched, and `alloy top` refuses to read one.
 */
#ifndef ALLOY_SHM_H
#define ALLOY_SHM_H
#include <stddef.h>
#include <stdint.h>

#define AY_SHM_DIR "/dev/shm"
#define AY_SHM_MAGIC 0x4d48535f594f4c41ull /* "ALOY_SHM", little-endian */
#define AY_SHM_VERSION 2u
#define AY_SHM_WASTE 5     /* classes with the most unused bytes */
#define AY_SHM_HISTORY 60  /* RSS, one sample a second: the last minute */
#define AY_SHM_STACKS 3    /* the profiler's stacks with the most live bytes */
#define AY_SHM_FRAMES 4    /* innermost return addresses of each */
#define AY_SHM_CMD 64      /* bytes of the program's name, its NUL included */
#define AY_SHM_WHY 160     /* bytes of why not per CPU (percpu.why), its NUL included */
#define AY_SHM_PATH_MAX 64 /* bytes of a segment's path, its NUL included */

/* One size class in a snapshot (bytes, summed over heaps). */
typedef struct ay_snap_class {
    uint64_t cls, size; /* the class and its object size */
    uint64_t unused;    /* span bytes - in use: cached, free or tail */
    uint64_t in_use, tcache, central, span_bytes;
} ay_snap_class_t;

/* One of the heap profiler's stacks: what its live samples stand for. */
typedef struct ay_snap_stack {
    uint64_t id; /* the stack's hash */
    uint64_t live_bytes;
    uint64_t pcs[AY_SHM_FRAMES]; /* innermost first; 0 past the stack's depth */
} ay_snap_stack_t;

/* A moment of the process, as the timeline records it and `alloy top`
 * shows it.  Bytes unless said otherwise. */
typedef struct ay_snap {
    uint64_t seq;         /* snapshots taken since start-up, 1 for the first */
    uint64_t t_ms;        /* milliseconds since recording started */
    uint64_t unix_ms;     /* the time of day, ms since 1970 */
    uint64_t interval_ms; /* timeline_ms */
    uint64_t rss;         /* the process's resident set (/proc/self/statm) */
    /* alloy's resident bytes and their breakdown, as the stats report's:
     * resident = allocated + tcache + central + span_tails + pageheap_free
     * + metadata */
    uint64_t resident, allocated, tcache, central, span_tails, pageheap_free, metadata;
    uint64_t active, mapped, large, peak_active;
    uint64_t slow_path_calls, objects_fetched, objects_released; /* since start-up */
    uint64_t misses_per_s, fetched_per_s, released_per_s;        /* over the last interval */
    uint64_t threads, heaps;
    /* the first tier: percpu 1 per CPU, 0 thread caches (percpu.mode); per
     * CPU, its caches: set up, their bytes (part of tcache), and their
     * misses, overflows, scavenges, drains and capacity moves since
     * start-up */
    uint64_t percpu, percpu_caches, percpu_bytes;
    uint64_t percpu_misses, percpu_overflows, percpu_scavenges, percpu_drains, percpu_moves;
    uint64_t nwaste;
    ay_snap_class_t waste[AY_SHM_WASTE]; /* most unused bytes first */
    uint64_t nhistory;
    uint64_t rss_history[AY_SHM_HISTORY]; /* one a second, oldest first */
    uint64_t prof;                        /* 1 when the heap profiler is on */
    /* with the profiler on, estimated from its samples: allocations since
     * start-up (or prof.reset) and blocks live, and their rates */
    uint64_t prof_allocs, prof_live, mallocs_per_s, frees_per_s;
    uint64_t nstacks;
    ay_snap_stack_t stacks[AY_SHM_STACKS]; /* most live bytes first */
} ay_snap_t;

#define AY_SNAP_WORDS (sizeof(ay_snap_t) / sizeof(uint64_t))

/* The segment's layout. */
typedef struct ay_shm_seg {
    uint64_t magic;      /* AY_SHM_MAGIC */
    uint32_t version;    /* AY_SHM_VERSION */
    uint32_t snap_bytes; /* sizeof(ay_snap_t) */
    uint64_t pid;
    uint64_t start_unix_ms;
    char cmd[AY_SHM_CMD]; /* the program's name (/proc/self/comm) */
    char why[AY_SHM_WHY]; /* why not per CPU ("" per CPU: percpu.why) */
    uint64_t seq;         /* the seqlock: odd while the snapshot is written */
    uint64_t snap[AY_SNAP_WORDS];
} ay_shm_seg_t;

/* The writer's side. */
typedef struct ay_shm {
    ay_shm_seg_t *seg; /* NULL: no segment */
    unsigned pid;      /* the process that made it */
    char path[AY_SHM_PATH_MAX];
} ay_shm_t;

/* "/dev/shm/alloy.<pid>" into out[AY_SHM_PATH_MAX]. */
void ay_shm_path(char *out, unsigned pid);
/* Make the calling process's segment, holding `first`; cmd and why go in
 * its header.  0, or -errno: -EEXIST when another user's file has its name. */
int ay_shm_create(ay_shm_t *w, const ay_snap_t *first, const char *cmd, const char *why,
                  uint64_t start_unix_ms);
/* Publish s (the seqlock's writer: one writer at a time). */
void ay_shm_publish(ay_shm_seg_t *seg, const ay_snap_t *s);
/* Remove the segment, if the calling process made it. */
void ay_shm_remove(ay_shm_t *w);
/* Remove the segments (and temporary files) of user `uid` whose process
 * no longer exists.  Returns how many were removed. */
unsigned ay_shm_clean_stale(unsigned uid);

/* The reader's side.  A mapped segment of `size` bytes: */
enum { AY_SHM_OK, AY_SHM_TOO_SMALL, AY_SHM_BAD_MAGIC, AY_SHM_BAD_VERSION };
int ay_shm_check(const void *map, size_t size);
/* Copy a consistent snapshot into *out, trying at most `tries` times.  0,
 * or -EAGAIN when every try found it being written. */
int ay_shm_read(const ay_shm_seg_t *seg, ay_snap_t *out, unsigned tries);

#endif
