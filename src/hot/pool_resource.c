/* SPDX-License-Identifier: MIT */
/* pool_resource.c - multi-size pool resources (std::pmr's
 * unsynchronized_pool_resource and synchronized_pool_resource).
 *
 * A request (size, align) with b = max(size, align, 1) <= largest_block is
 * served by the pool of class k, the smallest with 8 << k >= b.  Slots of
 * class k are 8 << k bytes aligned to 8 << k, so any alignment up to the
 * class size holds.  deallocate recomputes the class from (size, align), as
 * std::pmr requires callers to pass the same values.
 *
 * Larger requests go to upstream with a small header in front, linked in a
 * doubly linked list so destroy can give back what the caller did not:
 *
 *   base [pad][ay_large_block_t] p ...        p - base = large_offset(align)
 *
 * Invariants: pools[k] exists for k < nclasses; every large block is on
 * the list exactly while the caller holds it.  In the synchronized flavour
 * the list has its own mutex and the pools are alloy_sync_pool_t, so no
 * lock is shared by all sizes and threads.
 */
#include <alloy/resource.h>

#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "hot.h"

struct ay_large_block {
    ay_large_block_t *prev, *next;
    size_t size;  /* the caller's size */
    size_t align; /* the alignment asked of upstream */
};

struct ay_sync_large {
    pthread_mutex_t lock;
    ay_large_block_t *head;
};

#define POOLRES_DEFAULT_LARGEST ((size_t)4096)
#define POOLRES_DEFAULT_CHUNK ((size_t)16 << 10)

/* ---- helpers shared by both flavours ------------------------------------ */

/* The class for (size, align), or -1 for a large block, -2 for a bad align. */
static int poolres_class(size_t size, size_t align, size_t largest) {
    if (!ay_hot_is_pow2(align))
        return -2;
    size_t b = size > align ? size : align;
    if (b > largest)
        return -1;
    if (b < 8)
        b = 8;
    return __builtin_ctzl(ay_hot_pow2_ceil(b)) - 3;
}

static size_t poolres_largest(const alloy_pool_options_t *opts) {
    size_t largest = opts != NULL ? opts->largest_block : 0;
    if (largest == 0)
        return POOLRES_DEFAULT_LARGEST;
    if (largest > ALLOY_POOL_RESOURCE_MAX_BLOCK)
        return ALLOY_POOL_RESOURCE_MAX_BLOCK;
    return largest < 8 ? 8 : largest;
}

static unsigned poolres_nclasses(size_t largest) {
    return (unsigned)poolres_class(largest, 1, largest) + 1;
}

static alloy_pool_config_t poolres_class_config(unsigned k, const alloy_pool_options_t *opts,
                                                alloy_resource_t *upstream) {
    size_t slot = (size_t)8 << k;
    size_t chunk =
        opts != NULL && opts->chunk_bytes != 0 ? opts->chunk_bytes : POOLRES_DEFAULT_CHUNK;
    alloy_pool_config_t cfg = {
        .slot_size = slot,
        .slot_align = slot,
        .chunk_slots = chunk / slot != 0 ? chunk / slot : 1,
        .max_slots = 0,
        .flags = opts != NULL ? opts->flags : 0,
        .upstream = upstream,
    };
    return cfg;
}

static size_t large_align(size_t align) { return align > 16 ? align : 16; }

/* Bytes from base to the caller's pointer: room for the header, rounded to
 * the alignment. */
static size_t large_offset(size_t align) {
    size_t a = large_align(align), h = sizeof(ay_large_block_t);
    return (h + a - 1) & ~(a - 1);
}

/* Allocate a large block and link it on *head.  NULL on overflow or when
 * upstream fails. */
static void *large_alloc(alloy_resource_t *up, ay_large_block_t **head, size_t size, size_t align) {
    size_t off = large_offset(align), total;
    if (size == 0)
        size = 1; /* the contract: size 0 is served like size 1 */
    if (!ay_hot_add(off, size, &total))
        return NULL;
    char *base = alloy_resource_allocate(up, total, large_align(align));
    if (base == NULL)
        return NULL;
    ay_large_block_t *h = (ay_large_block_t *)(base + off) - 1;
    h->size = size;
    h->align = align;
    h->prev = NULL;
    h->next = *head;
    if (*head != NULL)
        (*head)->prev = h;
    *head = h;
    return base + off;
}

static void large_unlink_free(alloy_resource_t *up, ay_large_block_t **head, ay_large_block_t *h) {
    if (h->prev != NULL)
        h->prev->next = h->next;
    else
        *head = h->next;
    if (h->next != NULL)
        h->next->prev = h->prev;
    size_t off = large_offset(h->align);
    alloy_resource_deallocate(up, (char *)(h + 1) - off, off + h->size, large_align(h->align));
}

static void large_free_all(alloy_resource_t *up, ay_large_block_t **head) {
    while (*head != NULL)
        large_unlink_free(up, head, *head);
}

/* ---- unsynchronized ------------------------------------------------------ */

static void *poolres_allocate(alloy_resource_t *self, size_t size, size_t align) {
    alloy_pool_resource_t *pr = (alloy_pool_resource_t *)self;
    int k = poolres_class(size, align, pr->largest_block);
    if (ALLOY_LIKELY(k >= 0))
        return alloy_pool_alloc(&pr->pools[k]);
    if (k == -2)
        return NULL;
    return large_alloc(pr->upstream, &pr->large, size, align);
}

static void poolres_deallocate(alloy_resource_t *self, void *p, size_t size, size_t align) {
    alloy_pool_resource_t *pr = (alloy_pool_resource_t *)self;
    if (p == NULL)
        return;
    int k = poolres_class(size, align, pr->largest_block);
    if (ALLOY_LIKELY(k >= 0))
        alloy_pool_free(&pr->pools[k], p);
    else if (k == -1)
        large_unlink_free(pr->upstream, &pr->large, (ay_large_block_t *)p - 1);
}

static bool poolres_is_equal(const alloy_resource_t *self, const alloy_resource_t *other) {
    return self == other;
}

static const alloy_resource_ops_t poolres_ops = {
    poolres_allocate,
    poolres_deallocate,
    poolres_is_equal,
};

ALLOY_API int alloy_pool_resource_init(alloy_pool_resource_t *pr, const alloy_pool_options_t *opts,
                                       alloy_resource_t *upstream) {
    memset(pr, 0, sizeof *pr);
    pr->base.ops = &poolres_ops;
    pr->upstream = upstream != NULL ? upstream : alloy_default_resource();
    pr->largest_block = poolres_largest(opts);
    pr->nclasses = poolres_nclasses(pr->largest_block);
    for (unsigned k = 0; k < pr->nclasses; k++) {
        alloy_pool_config_t cfg = poolres_class_config(k, opts, pr->upstream);
        int err = alloy_pool_init(&pr->pools[k], &cfg);
        if (err != 0) {
            while (k-- > 0)
                alloy_pool_destroy(&pr->pools[k]);
            return err;
        }
    }
    return 0;
}

ALLOY_API void alloy_pool_resource_destroy(alloy_pool_resource_t *pr) {
    for (unsigned k = 0; k < pr->nclasses; k++)
        alloy_pool_destroy(&pr->pools[k]);
    large_free_all(pr->upstream, &pr->large);
}

/* ---- synchronized -------------------------------------------------------- */

static void *syncres_allocate(alloy_resource_t *self, size_t size, size_t align) {
    alloy_sync_pool_resource_t *pr = (alloy_sync_pool_resource_t *)self;
    int k = poolres_class(size, align, pr->largest_block);
    if (ALLOY_LIKELY(k >= 0))
        return alloy_sync_pool_alloc(&pr->pools[k]);
    if (k == -2)
        return NULL;
    pthread_mutex_lock(&pr->large->lock);
    void *p = large_alloc(pr->upstream, &pr->large->head, size, align);
    pthread_mutex_unlock(&pr->large->lock);
    return p;
}

static void syncres_deallocate(alloy_resource_t *self, void *p, size_t size, size_t align) {
    alloy_sync_pool_resource_t *pr = (alloy_sync_pool_resource_t *)self;
    if (p == NULL)
        return;
    int k = poolres_class(size, align, pr->largest_block);
    if (ALLOY_LIKELY(k >= 0)) {
        alloy_sync_pool_free(&pr->pools[k], p);
    } else if (k == -1) {
        pthread_mutex_lock(&pr->large->lock);
        large_unlink_free(pr->upstream, &pr->large->head, (ay_large_block_t *)p - 1);
        pthread_mutex_unlock(&pr->large->lock);
    }
}

static const alloy_resource_ops_t syncres_ops = {
    syncres_allocate,
    syncres_deallocate,
    poolres_is_equal,
};

ALLOY_API int alloy_sync_pool_resource_init(alloy_sync_pool_resource_t *pr,
                                            const alloy_pool_options_t *opts,
                                            alloy_resource_t *upstream) {
    memset(pr, 0, sizeof *pr);
    pr->base.ops = &syncres_ops;
    pr->upstream = upstream != NULL ? upstream : alloy_default_resource();
    pr->largest_block = poolres_largest(opts);
    pr->nclasses = poolres_nclasses(pr->largest_block);
    pr->large = alloy_resource_allocate(pr->upstream, sizeof *pr->large, _Alignof(ay_sync_large_t));
    if (pr->large == NULL)
        return ENOMEM;
    pthread_mutex_init(&pr->large->lock, NULL);
    pr->large->head = NULL;
    for (unsigned k = 0; k < pr->nclasses; k++) {
        alloy_pool_config_t cfg = poolres_class_config(k, opts, pr->upstream);
        int err = alloy_sync_pool_init(&pr->pools[k], &cfg);
        if (err != 0) {
            while (k-- > 0)
                alloy_sync_pool_destroy(&pr->pools[k]);
            pthread_mutex_destroy(&pr->large->lock);
            alloy_resource_deallocate(pr->upstream, pr->large, sizeof *pr->large,
                                      _Alignof(ay_sync_large_t));
            pr->large = NULL;
            return err;
        }
    }
    return 0;
}

ALLOY_API void alloy_sync_pool_resource_destroy(alloy_sync_pool_resource_t *pr) {
    for (unsigned k = 0; k < pr->nclasses; k++)
        alloy_sync_pool_destroy(&pr->pools[k]);
    if (pr->large != NULL) {
        large_free_all(pr->upstream, &pr->large->head);
        pthread_mutex_destroy(&pr->large->lock);
        alloy_resource_deallocate(pr->upstream, pr->large, sizeof *pr->large,
                                  _Alignof(ay_sync_large_t));
        pr->large = NULL;
    }
}
