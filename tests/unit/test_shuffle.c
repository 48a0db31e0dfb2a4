/* SPDX-License-Identifier: MIT */
/* test_shuffle.c - the secure flavour's random order of a run of never-used
 * objects (ay_link_shuffled, secure.h), driven directly on a buffer:
 *   - the list holds every object of the run exactly once, and ends at the
 *     object it returns as the last;
 *   - no object comes more than AY_SHUFFLE_POOL - 1 places before its place
 *     in address order (the order stays near the run's front);
 *   - each step picks one of the AY_SHUFFLE_POOL objects of the pool: over
 *     4,000 seeds, the first object is each of the run's first
 *     AY_SHUFFLE_POOL about equally often, and so is the step after the
 *     first (as the object's place among the pool it was picked from).
 * Mode `broken` runs the same checks on address order (a list linked one
 * object after the other), which must fail the checks of the picks. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "secure.h"

enum { MAX = 1000, SIZE = 48, SEEDS = 4000 };
static _Alignas(16) unsigned char run[MAX * SIZE];
static bool broken;

/* The run of n objects, linked in the order of seed (or in address order,
 * broken); the objects' indices in list order into order[]. */
static void link_run(uint32_t n, uint64_t seed, uint32_t *order) {
    uintptr_t start = (uintptr_t)run;
    void *first, *last;
    if (broken) {
        for (uint32_t i = 0; i + 1 < n; i++)
            ay_link_set(run + i * SIZE, run + (i + 1) * SIZE);
        first = run;
        last = run + (n - 1) * SIZE;
    } else {
        first = ay_link_shuffled(start, n, SIZE, seed, &last);
    }
    ay_link_set(last, NULL);
    uint32_t k = 0;
    for (void *o = first; o && k < n; o = ay_link_get(o))
        order[k++] = (uint32_t)(((uintptr_t)o - start) / SIZE);
    CHECK_EQ_U(k, n);
    CHECK(order[n - 1] == (uint32_t)(((uintptr_t)last - start) / SIZE));
}

int main(int argc, char **argv) {
    broken = argc == 2 && strcmp(argv[1], "broken") == 0;
    static uint32_t order[MAX];
    static bool seen[MAX];
    free(malloc(1)); /* the random state (ay_random: seeds as the allocator draws them) */
    /* every object once, none far ahead of its turn */
    const uint32_t lengths[] = {
        1, 2, 3, AY_SHUFFLE_POOL - 1, AY_SHUFFLE_POOL, AY_SHUFFLE_POOL + 1, 32, 33, MAX};
    unsigned dup = 0, early = 0;
    for (unsigned l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
        uint32_t n = lengths[l];
        for (unsigned s = 0; s < 50; s++) {
            link_run(n, ay_random(), order);
            memset(seen, 0, sizeof seen);
            for (uint32_t k = 0; k < n; k++) {
                dup += seen[order[k]];
                seen[order[k]] = true;
                early += order[k] > k + AY_SHUFFLE_POOL - 1;
            }
        }
    }
    CHECK_EQ_U(dup, 0);
    CHECK_EQ_U(early, 0);
    /* the picks: the first object, and the second's place in its pool (the
     * first AY_SHUFFLE_POOL + 1 objects less the first one) */
    unsigned first[AY_SHUFFLE_POOL] = {0}, second[AY_SHUFFLE_POOL] = {0};
    for (unsigned s = 0; s < SEEDS; s++) {
        link_run(32, ay_random(), order);
        if (order[0] < AY_SHUFFLE_POOL)
            first[order[0]]++;
        uint32_t p = order[1] - (order[1] > order[0]);
        if (p < AY_SHUFFLE_POOL)
            second[p]++;
    }
    unsigned rare = 0;
    for (unsigned i = 0; i < AY_SHUFFLE_POOL; i++) {
        fprintf(stderr, "shuffle: place %u: first %u, second %u times of %u\n", i, first[i],
                second[i], SEEDS);
        /* each about SEEDS / AY_SHUFFLE_POOL: at least half that */
        rare += first[i] < SEEDS / AY_SHUFFLE_POOL / 2;
        rare += second[i] < SEEDS / AY_SHUFFLE_POOL / 2;
    }
    CHECK_EQ_U(rare, 0);
    return CHECK_DONE();
}
