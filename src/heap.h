/* heap.h - a heap: one central cache per size class and one page heap.
 * Spans record their heap, so memory always goes back to the heap that owns
 * it.  Today there is one heap, ay_heap_main; the type exists so that more
 * can be added without touching the tiers. */
#ifndef ALLOY_HEAP_H
#define ALLOY_HEAP_H
#include "central.h"
#include "pageheap.h"

typedef struct ay_heap {
    ay_central_t central[AY_NUM_CLASSES];
    ay_pageheap_t pages;
    unsigned id;
} ay_heap_t;

extern ay_heap_t ay_heap_main;

void ay_heap_init(ay_heap_t *h, unsigned id);

#endif
