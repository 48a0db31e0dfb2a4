/* policy.h - alloy's pure allocation policy: size classes, batch limit,
 * span geometry and batch growth.
 *
 * Everything here is a pure function of its arguments: no globals, no OS
 * calls, no locks.  The thread cache links this module and so does the
 * simulator (sim/), so what the simulator evaluates is the code that ships.
 *
 * The model (seed 002, "capacity-aware thread-cache batch growth"):
 *   - 208 size classes: 8..128 step 8, 144..1024 step 16, 1152..8192 step 128,
 *     9216..65536 step 1024, 73728..262144 step 8192.  Pages are 4 KiB.
 *   - batch limit      L(S)   = max(1, min(budget / S, cap)), budget 256 KiB,
 *                               cap 1024 objects by default.
 *   - span pages       P(S,n) = lcm(S*n, 4096) / 4096; when that exceeds 256
 *                               pages, fall back to lcm(S, 4096) / 4096.
 *   - span capacity    Q(S,n) = floor(P(S,n) * 4096 / S).
 *   - growth           n starts at 1; on each miss the candidate is
 *                      c = min(2n, L(S)), and the policy decides:
 *        clip   take c                                  (the paper's "current")
 *        guard  keep n when c < 2n and Q(S,c) < c, else take c   (default)
 *        pow2   keep n when c < 2n, else take c         (stop at last power of 2)
 *
 * Invariant: under guard and pow2, the terminal batch of every class fits in
 * the span fetched for it (Q >= n).  tests/test_policy.c checks it, along with
 * the 80 classes that clip underfills.
 */
#ifndef ALLOY_POLICY_H
#define ALLOY_POLICY_H

#include <stddef.h>
#include <stdint.h>

#define AY_PAGE_SHIFT 12
#define AY_PAGE_SIZE ((size_t)1 << AY_PAGE_SHIFT)
#define AY_PAGES_BYTES(n) ((size_t)(n) << AY_PAGE_SHIFT)
#define AY_NUM_CLASSES 208
#define AY_MAX_SMALL_SIZE ((size_t)256 * 1024) /* largest class */
#define AY_MAX_SPAN_PAGES 256                  /* pages in the largest span */
#define AY_DEFAULT_BYTE_BUDGET (256u * 1024u)
#define AY_DEFAULT_OBJECT_CAP 1024u

typedef enum ay_batch_policy {
    AY_BATCH_CLIP = 0,
    AY_BATCH_GUARD = 1,
    AY_BATCH_POW2 = 2,
} ay_batch_policy_t;

/* The knobs of the batch policy.  Plain data: the caller owns it. */
typedef struct ay_batch_params {
    ay_batch_policy_t policy;
    uint32_t byte_budget; /* bytes a single batch may move; 256 KiB default */
    uint32_t object_cap;  /* objects a single batch may move; 1024 default */
} ay_batch_params_t;

/* Returns the default parameters (guard, 256 KiB, 1024). */
ay_batch_params_t ay_policy_default_params(void);

/* Size of class cls (0 <= cls < AY_NUM_CLASSES), in bytes. */
size_t ay_policy_class_size(unsigned cls);

/* Smallest class whose size is >= size.  size 0 maps to class 0.
 * Returns AY_NUM_CLASSES when size > AY_MAX_SMALL_SIZE. */
unsigned ay_policy_size_class(size_t size);

/* L(S): the largest batch for objects of size S, at least 1. */
uint32_t ay_policy_batch_limit(const ay_batch_params_t *bp, size_t S);

/* P(S,n): pages of the span fetched for a batch of n objects of size S. */
uint32_t ay_policy_span_pages(size_t S, uint32_t n);

/* Q: objects of size S that a span of `pages` pages holds. */
uint32_t ay_policy_span_objects(size_t S, uint32_t pages);

/* The batch after a miss with current batch n (n >= 1). */
uint32_t ay_policy_next_batch(const ay_batch_params_t *bp, size_t S, uint32_t n);

/* The fixed point of ay_policy_next_batch starting from 1. */
uint32_t ay_policy_terminal_batch(const ay_batch_params_t *bp, size_t S);

/* The return threshold: a thread-cache list holding this many objects gives
 * n of them back.  k_halves is the factor k in k*n, in halves (4 means 2n,
 * 3 means 1.5n, 6 means 3n).  Always at least n + 1, so a list never returns
 * its whole content on a single free. */
uint32_t ay_policy_return_threshold(uint32_t n, uint32_t k_halves);

/* Parses "clip", "guard" or "pow2".  Returns 0 on success, -1 otherwise. */
int ay_policy_parse(const char *s, size_t len, ay_batch_policy_t *out);

/* "clip", "guard" or "pow2". */
const char *ay_policy_name(ay_batch_policy_t p);

#endif
