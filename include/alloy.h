/* SPDX-License-Identifier: MIT */
/* alloy.h - the alloy allocator: the malloc family under alloy_* names,
 * version, and the statistics API.
 *
 * liballoy.so also exports the standard names (malloc, free, ...), so a
 * program gets alloy through LD_PRELOAD or by linking, without source changes.
 * The alloy_* names are the same functions under names that never clash.
 *
 * Alignment: every block is aligned to 16 bytes when its requested size is a
 * multiple of 16, and to at least 8 bytes otherwise.
 */
#ifndef ALLOY_H
#define ALLOY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ALLOY_VERSION_MAJOR 0
#define ALLOY_VERSION_MINOR 1
#define ALLOY_VERSION_PATCH 0
#define ALLOY_VERSION_STRING "0.1.0"

#if defined(__GNUC__)
#define ALLOY_API __attribute__((visibility("default")))
#else
#define ALLOY_API
#endif

/* The malloc family.  Errors follow POSIX and glibc: NULL with errno ENOMEM
 * for an impossible size, EINVAL for an invalid alignment. */
ALLOY_API void *alloy_malloc(size_t size);
ALLOY_API void alloy_free(void *p);
ALLOY_API void *alloy_calloc(size_t n, size_t size);
ALLOY_API void *alloy_realloc(void *p, size_t size);
ALLOY_API void *alloy_reallocarray(void *p, size_t n, size_t size);
ALLOY_API int alloy_posix_memalign(void **out, size_t align, size_t size);
ALLOY_API void *alloy_aligned_alloc(size_t align, size_t size);
ALLOY_API void *alloy_memalign(size_t align, size_t size);
ALLOY_API void *alloy_valloc(size_t size);
ALLOY_API void *alloy_pvalloc(size_t size);
ALLOY_API size_t alloy_malloc_usable_size(const void *p);
ALLOY_API void alloy_free_sized(void *p, size_t size);
ALLOY_API void alloy_free_aligned_sized(void *p, size_t align, size_t size);

ALLOY_API const char *alloy_version(void);

/* ---- statistics --------------------------------------------------------
 * Counters are exact at a quiescent point (no thread inside the allocator);
 * while other threads run they are a consistent-enough snapshot.  Structs
 * carry their own size so that they can grow: set .size before the call. */

/* 2: remote frees; 3: os_failures; 4: version 2's two fields are the
 * transfer caches' (transfer_inserted, transfer_bytes); 5: huge_blocks;
 * 6: sparse_bytes (both structs) */
#define ALLOY_STATS_VERSION 7

typedef struct alloy_stats {
    size_t size;       /* in: sizeof(alloy_stats_t) */
    uint32_t version;  /* out: ALLOY_STATS_VERSION */
    uint32_t nclasses; /* out: number of size classes (208) */
    /* bytes */
    size_t allocated;             /* live blocks, at their class sizes (large_allocated's
                                     in whole pages) */
    size_t active;                /* pages of spans in use, plus direct maps */
    size_t resident;              /* active + free pages not purged + metadata_resident
                                     (an estimate) */
    size_t mapped;                /* everything taken from the OS, metadata too */
    size_t metadata;              /* span records, thread caches, heaps but heap 0,
                                     quarantines, guard slot tables, address map */
    size_t peak_active;           /* highest `active` seen */
    size_t tcache_bytes;          /* cached in thread caches */
    size_t central_bytes;         /* free objects held by central caches */
    size_t pageheap_free_bytes;   /* free pages in the page heap, not purged */
    size_t pageheap_purged_bytes; /* free pages purged with madvise, or never touched */
    size_t large_allocated;       /* live blocks of whole pages: above 256 KiB, aligned
                                     to more than a page, or heap-profile samples (and
                                     the pages the profiler keeps for later samples) */
    /* events, summed over classes */
    uint64_t slow_path_calls;        /* fetches from central: thread-cache misses and
                                        uncached allocations */
    uint64_t short_fetches;          /* fetches that returned fewer than asked */
    uint64_t objects_fetched;        /* objects moved central -> thread caches */
    uint64_t objects_released;       /* objects moved thread caches -> central */
    uint64_t spans_allocated;        /* spans the central caches took */
    uint64_t spans_freed;            /* spans the central caches gave back */
    uint64_t central_lock_contended; /* central-cache lock acquisitions that waited */
    uint64_t purges;                 /* purges: madvise calls, and unmaps of wholly free blocks */
    uint64_t threads_live;           /* threads bound (per heap) / thread caches (total) */
    uint64_t tcache_overflows;       /* thread-cache lists that reached their limit and gave back */
    uint64_t tcache_scavenges;       /* thread caches found above their byte limit and
                                        scavenged (tcache_max_bytes, or a share of
                                        tcache_total_bytes) */
    /* where the resident bytes are: resident = allocated + tcache_bytes +
     * central_bytes + span_tail_bytes + pageheap_free_bytes + metadata_resident */
    size_t span_tail_bytes;   /* pages of small spans past their last object's room */
    size_t metadata_resident; /* the part of `metadata` counted in `resident` (totals only) */
    /* version 2, the transfer caches' since version 4 (the central tier's
     * caches of whole batches, one per class and heap) */
    uint64_t transfer_inserted; /* objects thread caches gave to transfer caches */
    size_t transfer_bytes;      /* bytes held in transfer caches (part of central_bytes) */
    /* version 3 */
    uint64_t os_failures; /* madvise, mprotect, munmap calls the kernel refused (totals only):
                             the pages stay dirty, or mapped, and nothing fails */
    /* version 5 */
    uint64_t huge_blocks; /* page-heap blocks mapped with transparent huge pages asked for
                             (MADV_HUGEPAGE; the thp setting): whether the kernel gives
                             them is its choice (AnonHugePages in /proc/PID/smaps) */
    /* version 6 */
    size_t sparse_bytes; /* the part of central_bytes in sparse spans: free objects of
                            small spans with under a quarter of their objects out
                            (read under each central cache's lock) */
    /* version 7: the per-CPU caches (the first tier with percpu:auto where
     * it can run; 0 with thread caches), counted in the totals and in heap 0 */
    size_t percpu_bytes;       /* free objects in per-CPU caches (part of tcache_bytes) */
    uint64_t percpu_caches;    /* per-CPU caches set up */
    uint64_t percpu_misses;    /* refills of a per-CPU list (mallocs that found it empty) */
    uint64_t percpu_overflows; /* per-CPU lists found full by a free, which gave a batch back */
    uint64_t percpu_scavenges; /* per-CPU caches found above tcache_max_bytes and scavenged */
    uint64_t percpu_drains;    /* per-CPU caches given back whole (idle for decay_ms, or a
                                  flush) */
    uint64_t percpu_moves;     /* capacity moved from one size class's per-CPU list to
                                  another's (the cache's byte limit) */
} alloy_stats_t;

typedef struct alloy_class_stats {
    size_t size;             /* in: sizeof(alloy_class_stats_t) */
    size_t class_size;       /* out: object size of the class */
    uint32_t batch_limit;    /* L(S) under the current parameters */
    uint32_t terminal_batch; /* where the current policy's growth stops */
    uint64_t slow_path_calls;
    uint64_t short_fetches;
    uint64_t objects_fetched;
    uint64_t objects_released;
    uint64_t spans_allocated;
    uint64_t spans_freed;
    uint64_t lock_contended;
    size_t tcache_bytes;
    size_t central_bytes;
    size_t allocated;           /* live objects of this class, in bytes */
    uint64_t spans;             /* spans the class holds now */
    uint64_t capacity;          /* objects those spans hold room for */
    size_t span_bytes;          /* bytes of those spans' pages */
    uint64_t transfer_inserted; /* objects of this class given to transfer caches (v2, v4) */
    size_t transfer_bytes;      /* bytes of this class in transfer caches (as above) */
    size_t sparse_bytes;        /* its central bytes in sparse spans (v6, as above) */
} alloy_class_stats_t;

/* Fill *out.  Returns 0, or EINVAL when out is NULL or out->size is too small. */
ALLOY_API int alloy_stats_read(alloy_stats_t *out);
/* Fill *out with one heap's counters (metadata, shared by all heaps, is 0).
 * Its `allocated` is an estimate when threads bound to other heaps cache
 * this heap's freed blocks (the total from alloy_stats_read is exact).
 * Returns 0, EINVAL, or ENOENT when no heap has that id. */
ALLOY_API int alloy_heap_stats_read(unsigned heap_id, alloy_stats_t *out);
/* Fill *out for class cls, summed over heaps.  Returns 0, EINVAL, or ENOENT
 * for cls >= 208. */
ALLOY_API int alloy_class_stats_read(unsigned cls, alloy_class_stats_t *out);

/* Write callback: receives chunks of text (not NUL-terminated). */
typedef void alloy_write_cb(void *opaque, const char *text, size_t len);
/* Print the statistics through cb (NULL: stderr, with write(2)), without
 * allocating.  opts: NULL or a string of letters, in the manner of
 * jemalloc's malloc_stats_print:
 *   (none) a summary of about 30 lines: totals, where the resident bytes
 *          are, the slow-path counters, the 5 size classes that waste most;
 *   "f"    the full report: the summary, then a table of heaps, a table of
 *          NUMA nodes (the sums of their heaps) and a table of the size
 *          classes in use;
 *   "J"    JSON instead of text, always complete (docs/STATS.md: schema);
 *   "h"    leave out the heaps and nodes;  "c"  leave out the size classes.
 * The at-exit report (stats_print:true) takes its opts from the
 * stats_print_opts setting. */
ALLOY_API void alloy_stats_print(alloy_write_cb *cb, void *opaque, const char *opts);

/* Return the calling thread's cached objects to the central caches. */
ALLOY_API void alloy_thread_flush(void);
/* Return free page-heap memory to the OS now (madvise). */
ALLOY_API void alloy_purge(void);

#ifdef __cplusplus
}
#endif
#endif
