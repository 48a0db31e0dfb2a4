/* SPDX-License-Identifier: MIT */
/* pagemap.c - the address -> span radix tree (pagemap.h): making leaves and
 * setting entries.
 *
 * Invariants: a root entry goes from 0 (the all-zero leaf) to its leaf once,
 * under pm_lock, and never changes again, so readers need no lock; a leaf
 * is mapped (with guard pages in the secure flavour) before it is published
 * with a release store; ay_pagemap_zero is never written.  Entries are
 * written only by the owner of the pages they describe (pagemap.h). */
#include "pagemap.h"

#include <pthread.h>

#include "os.h"

uintptr_t ay_pagemap_root[(uintptr_t)1 << AY_PM_ROOT_BITS];
ay_pm_leaf_t ay_pagemap_zero; /* read-only in practice: setters never touch it */
static pthread_mutex_t pm_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t pm_mapped;

int ay_pagemap_ensure(uintptr_t start, uintptr_t npages) {
    uintptr_t last = start + (npages << AY_PAGE_SHIFT) - 1;
    if (last < start || (last >> AY_PM_ADDR_BITS))
        return -1;
    uintptr_t shift = AY_PAGE_SHIFT + AY_PM_LEAF_BITS;
    for (uintptr_t i = start >> shift; i <= last >> shift; i++) {
        if (AY_LOAD(&ay_pagemap_root[i]))
            continue;
        pthread_mutex_lock(&pm_lock);
        if (!ay_pagemap_root[i]) {
            ay_pm_leaf_t *leaf = ay_os_map_chunk(sizeof(ay_pm_leaf_t), AY_PAGE_SIZE);
            if (!leaf) {
                pthread_mutex_unlock(&pm_lock);
                return -1;
            }
            AY_STORE(&pm_mapped, pm_mapped + sizeof(ay_pm_leaf_t));
            __atomic_store_n(&ay_pagemap_root[i], (uintptr_t)leaf - (uintptr_t)&ay_pagemap_zero,
                             __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&pm_lock);
    }
    return 0;
}

void ay_pagemap_set1(uintptr_t a, ay_span_t *s, uint32_t list) {
    ay_pm_leaf_t *leaf = ay_pagemap_leaf(a); /* ensured by the caller: not the zero leaf */
    uintptr_t i = ay_pagemap_index(a);
    AY_STORE(&leaf->span[i], s);
    AY_STORE(&leaf->list[i], (uint16_t)list);
}

void ay_pagemap_set(uintptr_t start, uintptr_t npages, ay_span_t *s, uint32_t list) {
    while (npages > 0) { /* a leaf at a time: one lookup, then two stores a page */
        ay_pm_leaf_t *leaf = ay_pagemap_leaf(start);
        uintptr_t i = ay_pagemap_index(start), room = AY_PM_LEAF_PAGES - i;
        uintptr_t n = npages < room ? npages : room;
        for (uintptr_t k = i; k < i + n; k++) {
            AY_STORE(&leaf->span[k], s);
            AY_STORE(&leaf->list[k], (uint16_t)list);
        }
        start += n << AY_PAGE_SHIFT;
        npages -= n;
    }
}

uint64_t ay_pagemap_mapped(void) { return AY_LOAD(&pm_mapped); }
void ay_pagemap_lock(void) { pthread_mutex_lock(&pm_lock); }
void ay_pagemap_unlock(void) { pthread_mutex_unlock(&pm_lock); }
void ay_pagemap_reset_lock(void) { pthread_mutex_init(&pm_lock, NULL); }
