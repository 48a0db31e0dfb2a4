/* quarantine.c - the secure flavour's quarantine of freed blocks (see
 * quarantine.h). */
#include "quarantine.h"

#include "error.h"
#include "meta.h"
#include "secure.h"

#define PATTERN_WORDS 4 /* words of a block overwritten while it waits */

static size_t pattern_words(size_t size) {
    size_t words = (size - AY_TAG_BYTES) / sizeof(uintptr_t);
    return words < PATTERN_WORDS ? words : PATTERN_WORDS;
}

static uintptr_t pattern(const void *p, size_t i) {
    return ay_tag_free(p) * 0x9e3779b97f4a7c15u + i;
}

bool ay_quarantine_put(ay_quarantine_t **qp, void *p, size_t size) {
    ay_quarantine_t *q = *qp;
    if (size > AY_QUARANTINE_MAX_BLOCK || (!q && !(q = *qp = ay_meta_alloc(sizeof *q))))
        return false;
    uintptr_t *w = p;
    for (size_t i = 0; i < pattern_words(size); i++)
        w[i] = pattern(p, i);
    uint32_t i = (q->head + q->count) % AY_QUARANTINE_SLOTS;
    q->block[i] = p;
    q->size[i] = (uint32_t)size;
    q->count++;
    q->bytes += size;
    return true;
}

void *ay_quarantine_take(ay_quarantine_t **qp, bool all) {
    ay_quarantine_t *q = *qp;
    if (!q || q->count == 0)
        return NULL;
    if (!all && q->count < AY_QUARANTINE_SLOTS && q->bytes <= AY_QUARANTINE_BYTES)
        return NULL;
    void *p = q->block[q->head];
    size_t size = q->size[q->head];
    q->head = (q->head + 1) % AY_QUARANTINE_SLOTS;
    q->count--;
    q->bytes -= size;
    const uintptr_t *w = p;
    for (size_t i = 0; i < pattern_words(size); i++)
        if (AY_UNLIKELY(w[i] != pattern(p, i)))
            ay_fatal("free(): a block was written to after it was freed", p);
    return p;
}
