/* SPDX-License-Identifier: MIT */
/* test_room.c - a thread-cache list counts its room (tcache.h), and free's
 * fast path takes one from it before it knows whether it will miss.
 *   lists: on one thread, every list's length (limit - room) is the objects
 *          on it plus the run, and the objects never more than its limit
 *          (ay_bin_limit: the limit word without its align mask), through
 *          frees that overflow it and a flush;
 *   broken: the same check finds a list whose room count is wrong: a block
 *          pushed onto a full list without taking one from its room (the
 *          check must report it; the mode fails when it does not);
 *   empty: threads without a cache (tcache:false) all write the rooms of
 *          ay_tcache_empty from free's fast path; afterwards every room is 0
 *          or below and every list empty.  Were a miss given back with an
 *          increment, two threads' racing updates would leave a room at 1,
 *          and a free would then push onto a list no thread owns (the next
 *          malloc of any thread pops it). */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "check.h"
#include "secure.h"
#include "tcache.h"

static uint32_t list_length(const ay_bin_t *bin) {
    uint32_t n = 0;
    for (void *q = ay_bin_head(bin); q && n <= ay_bin_limit(bin) + 1; q = ay_link_get(q))
        n++;
    return n;
}

static uint32_t run_length(const ay_tcache_t *tc, unsigned b) {
    const ay_run_t *r = &tc->run[b];
    return ay_bin_size[b] ? (uint32_t)((r->end - r->next) / ay_bin_size[b]) : 0;
}

static int over_limit; /* lists found holding more objects than their limit */

/* The lists that break tcache.h's invariants, each reported. */
static int bad_lists(const char *when) {
    ay_tcache_t *tc = ay_tcache_get();
    CHECK(tc != NULL);
    if (!tc)
        return 1;
    int bad = 0;
    for (unsigned b = 0; b < AY_NUM_BINS; b++) {
        const ay_bin_t *bin = &tc->bins[b];
        uint32_t len = ay_bin_len(bin), on = list_length(bin) + run_length(tc, b);
        over_limit += on > ay_bin_limit(bin);
        if (bin->room < 0 || len != on || on > ay_bin_limit(bin)) {
            if (bad++ < 5)
                fprintf(stderr, "%s: bin %u: room %d, limit %u, length %u, objects %u\n", when, b,
                        bin->room, ay_bin_limit(bin), len, on);
        }
    }
    return bad;
}

static void check_lists(const char *when) { CHECK(bad_lists(when) == 0); }

static int lists(void) {
    enum { N = 5000 };
    static void *p[N];
    const size_t sizes[] = {16, 64, 256, 1000, 4096, 30000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int i = 0; i < N; i++)
            CHECK((p[i] = malloc(sizes[s])) != NULL);
        check_lists("after the mallocs");
        for (int i = 0; i < N; i++)
            free(p[i]); /* overflows the list, many times */
        check_lists("after the frees");
    }
    CHECK(alloy_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
    check_lists("after a flush");
    return CHECK_DONE();
}

/* A list filled to its limit, then one block more pushed as free's fast
 * path would, but without taking one from the room: the length the room
 * gives is one short, and the list holds more than its limit. */
static int broken(void) {
    enum { N = 4096 }; /* more than any 64-byte list's limit (2 L(S) - 1 = 2047) */
    static void *p[N];
    for (int i = 0; i < N; i++)
        CHECK((p[i] = malloc(64)) != NULL);
    ay_tcache_t *tc = ay_tcache_get();
    CHECK(tc != NULL && tc->cache_on);
    unsigned b = ay_size_bin(64);
    int i = 0;
    while (i < N && tc->bins[b].room > 0)
        free(p[i++]); /* on the fast path: room taken */
    CHECK(i < N && tc->bins[b].room == 0);
    check_lists("full, before the break");
    ay_link_set_raw(p[i], tc->bins[b].head); /* pushed, room not taken */
    tc->bins[b].head = p[i];
    over_limit = 0;
    int bad = bad_lists("after the break (expected)");
    CHECK(bad == 1);
    CHECK(over_limit == 1); /* the limit's own check saw it, not only the length's */
    tc->bins[b].head = ay_link_get_raw(p[i]); /* mended, so that the rest can go */
    for (int k = i; k < N; k++)
        free(p[k]);
    return CHECK_DONE();
}

static void *uncached(void *arg) {
    (void)arg;
    for (int i = 0; i < 400000; i++) {
        void *p = malloc(64 + (size_t)(i & 3) * 16);
        if (!p)
            return (void *)1;
        free(p);
    }
    return NULL;
}

static int empty(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, uncached, NULL) == 0);
    for (int i = 0; i < 4; i++) {
        void *r = (void *)1;
        pthread_join(t[i], &r);
        CHECK(r == NULL);
    }
    int bad = 0;
    for (unsigned b = 0; b < sizeof ay_tcache_empty / sizeof ay_tcache_empty[0]; b++) {
        const ay_bin_t *bin = &ay_tcache_empty[b];
        if (bin->room > 0 || ay_bin_head(bin) || bin->limit) {
            if (bad++ < 5)
                fprintf(stderr, "empty cache: bin %u: room %d, limit %u, head %p\n", b, bin->room,
                        bin->limit, bin->head);
        }
    }
    CHECK(bad == 0);
    return CHECK_DONE();
}

int main(int argc, char **argv) {
    if (argc == 2 && !strcmp(argv[1], "lists"))
        return lists();
    if (argc == 2 && !strcmp(argv[1], "broken"))
        return broken();
    if (argc == 2 && !strcmp(argv[1], "empty"))
        return empty();
    fprintf(stderr, "usage: test_room lists|broken|empty\n");
    return 2;
}
