/* SPDX-License-Identifier: MIT */
/* glibc_api.c - glibc's malloc extensions with alloy's numbers: mallinfo,
 * mallinfo2, malloc_trim, malloc_stats, malloc_info, mallopt, and the
 * __libc_malloc family that some programs call to reach "the real malloc".
 * Without them these calls would go to glibc's allocator, which manages
 * none of the program's memory (mallinfo2 all zeros, malloc_trim a no-op).
 *
 * Like override.c, this file defines libc names: the sanitizer flavours
 * leave it out (their runtimes own mallinfo, mallopt and malloc_stats).
 *
 * The mapping (docs/STATS.md has the table): mallinfo2's uordblks +
 * fordblks = arena, and uordblks + hblkhd = stats.allocated, at a
 * quiescent point:
 *   arena    stats.mapped - hblkhd (page-heap blocks and metadata)
 *   ordblks  free objects in the central caches
 *   smblks   free objects in the thread caches (glibc's fastbins)
 *   hblks    direct maps (blocks above 32 MiB, each mapped on its own)
 *   hblkhd   their bytes
 *   usmblks  stats.peak_active (glibc now leaves it 0; it was the peak)
 *   fsmblks  stats.tcache_bytes
 *   uordblks stats.allocated - hblkhd
 *   fordblks arena - uordblks (cached, free and metadata bytes)
 *   keepcost stats.pageheap_free_bytes (what malloc_trim would purge now)
 * mallinfo has the same fields as int: a value above INT_MAX reads INT_MAX.
 * mallopt accepts every parameter and changes nothing (none of glibc's has
 * an alloy equivalent that can change at run time); it returns what glibc
 * returns (0 only for an M_MXFAST that glibc refuses).
 */
#include <errno.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>

#include "alloc.h"
#include "alloy.h"
#include "direct.h"
#include "heap.h"
#include "init.h"
#include "stats.h"

#define LIBC_NAME __attribute__((visibility("default"), used))

/* Direct maps of every heap: how many, and their bytes. */
static void glibc_direct(size_t *count, size_t *bytes) {
    *count = *bytes = 0;
    for (unsigned i = 0; i < ay_heaps_limit; i++) {
        ay_heap_t *h = ay_heap_pin(i);
        if (!h)
            continue;
        *count += ay_direct_count(&h->direct);
        *bytes += ay_direct_bytes(&h->direct);
        ay_heap_unpin(h);
    }
}

/* Free objects of heap id (UINT_MAX: every heap) in the thread caches and
 * the central caches: counts and bytes. */
typedef struct glibc_free {
    size_t fast_count, fast_bytes; /* thread caches */
    size_t rest_count, rest_bytes; /* central caches */
} glibc_free_t;

static void glibc_free_objects(unsigned id, glibc_free_t *f) {
    *f = (glibc_free_t){0};
    for (unsigned cls = 0; cls < AY_NUM_CLASSES; cls++) {
        alloy_class_stats_t c = {.size = sizeof c};
        if (id == UINT_MAX ? alloy_class_stats_read(cls, &c)
                           : ay_stats_heap_class_read(id, cls, &c))
            continue;
        f->fast_count += c.tcache_bytes / c.class_size;
        f->fast_bytes += c.tcache_bytes;
        f->rest_count += c.central_bytes / c.class_size;
        f->rest_bytes += c.central_bytes;
    }
}

static void glibc_info(struct mallinfo2 *mi) {
    alloy_stats_t s = {.size = sizeof s};
    glibc_free_t f;
    alloy_stats_read(&s);
    glibc_free_objects(UINT_MAX, &f);
    glibc_direct(&mi->hblks, &mi->hblkhd);
    mi->arena = s.mapped - mi->hblkhd;
    mi->ordblks = f.rest_count;
    mi->smblks = f.fast_count;
    mi->usmblks = s.peak_active;
    mi->fsmblks = s.tcache_bytes;
    mi->uordblks = s.allocated > mi->hblkhd ? s.allocated - mi->hblkhd : 0;
    mi->fordblks = mi->arena > mi->uordblks ? mi->arena - mi->uordblks : 0;
    mi->keepcost = s.pageheap_free_bytes;
}

static int glibc_int(size_t v) { return v > INT_MAX ? INT_MAX : (int)v; }

static struct mallinfo glibc_info_int(void) {
    struct mallinfo2 m;
    glibc_info(&m);
    return (struct mallinfo){glibc_int(m.arena),   glibc_int(m.ordblks),  glibc_int(m.smblks),
                             glibc_int(m.hblks),   glibc_int(m.hblkhd),   glibc_int(m.usmblks),
                             glibc_int(m.fsmblks), glibc_int(m.uordblks), glibc_int(m.fordblks),
                             glibc_int(m.keepcost)};
}

LIBC_NAME struct mallinfo2 mallinfo2(void) {
    struct mallinfo2 m;
    glibc_info(&m);
    return m;
}

LIBC_NAME struct mallinfo mallinfo(void) { return glibc_info_int(); }

/* Purges: the calling thread's cache goes back first, so that spans it
 * kept busy can be freed; 1 when something went back to the OS. */
LIBC_NAME int malloc_trim(size_t pad) {
    alloy_stats_t before = {.size = sizeof before}, after = {.size = sizeof after};
    alloy_stats_read(&before);
    alloy_thread_flush();
    alloy_purge();
    alloy_stats_read(&after);
    return after.purges > before.purges;
}

LIBC_NAME void malloc_stats(void) { alloy_stats_print(NULL, NULL, NULL); }

/* glibc 2.36 refuses only an M_MXFAST outside 0 .. 80 * sizeof(size_t) / 4
 * (test compat-glibc-ext-glibc checks these answers on glibc itself). */
#define GLIBC_MAX_FAST (80 * sizeof(size_t) / 4)

LIBC_NAME int mallopt(int param, int value) {
    if (param == M_MXFAST)
        return value >= 0 && (size_t)value <= GLIBC_MAX_FAST;
    return 1;
}

/* One heap's element of malloc_info: its free objects by class (thread
 * caches and central caches), then its totals. */
static void glibc_heap_xml(FILE *fp, unsigned id, glibc_free_t *sum) {
    alloy_stats_t s = {.size = sizeof s};
    glibc_free_t f;
    if (alloy_heap_stats_read(id, &s))
        return;
    glibc_free_objects(id, &f);
    fprintf(fp, "<heap nr=\"%u\">\n<sizes>\n", id);
    size_t from = 1;
    for (unsigned cls = 0; cls < AY_NUM_CLASSES; cls++) {
        alloy_class_stats_t c = {.size = sizeof c};
        ay_stats_heap_class_read(id, cls, &c);
        size_t bytes = c.tcache_bytes + c.central_bytes;
        if (bytes)
            fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n", from,
                    c.class_size, bytes, bytes / c.class_size);
        from = c.class_size + 1;
    }
    size_t rest = f.rest_bytes + s.pageheap_free_bytes + s.pageheap_purged_bytes;
    fprintf(fp,
            "</sizes>\n<total type=\"fast\" count=\"%zu\" size=\"%zu\"/>\n"
            "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
            "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
            "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n"
            "</heap>\n",
            f.fast_count, f.fast_bytes, f.rest_count, rest, s.mapped, s.mapped, s.mapped, s.mapped);
    sum->fast_count += f.fast_count;
    sum->fast_bytes += f.fast_bytes;
    sum->rest_count += f.rest_count;
    sum->rest_bytes += rest;
}

/* glibc's schema: a <heap> per heap, then the totals, where "mmap" is the
 * direct maps and "system" includes metadata.  alloy keeps no peak of the
 * bytes it maps, so "max" repeats "current". */
LIBC_NAME int malloc_info(int options, FILE *fp) {
    if (options != 0 || !fp)
        return EINVAL;
    ay_ensure_init();
    glibc_free_t sum = {0};
    size_t maps, map_bytes;
    alloy_stats_t s = {.size = sizeof s};
    fputs("<malloc version=\"1\">\n", fp);
    for (unsigned i = 0; i < ay_heaps_limit; i++)
        glibc_heap_xml(fp, i, &sum);
    glibc_direct(&maps, &map_bytes);
    alloy_stats_read(&s);
    fprintf(fp,
            "<total type=\"fast\" count=\"%zu\" size=\"%zu\"/>\n"
            "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n"
            "<total type=\"mmap\" count=\"%zu\" size=\"%zu\"/>\n"
            "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n"
            "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n"
            "</malloc>\n",
            sum.fast_count, sum.fast_bytes, sum.rest_count, sum.rest_bytes, maps, map_bytes,
            s.mapped, s.mapped, s.mapped, s.mapped);
    return 0;
}

/* ---- glibc's internal names for its malloc, which some programs call ---- */

LIBC_NAME void *__libc_malloc(size_t size) { return ay_malloc_fast(size); }
LIBC_NAME void __libc_free(void *p) { alloy_free(p); }
LIBC_NAME void *__libc_calloc(size_t n, size_t size) { return alloy_calloc(n, size); }
LIBC_NAME void *__libc_realloc(void *p, size_t size) { return alloy_realloc(p, size); }
LIBC_NAME void *__libc_memalign(size_t align, size_t size) { return alloy_memalign(align, size); }
LIBC_NAME void *__libc_valloc(size_t size) { return alloy_valloc(size); }
LIBC_NAME void *__libc_pvalloc(size_t size) { return alloy_pvalloc(size); }
LIBC_NAME struct mallinfo __libc_mallinfo(void) { return glibc_info_int(); }
LIBC_NAME int __libc_mallopt(int param, int value) { return mallopt(param, value); }
