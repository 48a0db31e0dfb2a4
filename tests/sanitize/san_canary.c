/* SPDX-License-Identifier: MIT */
/* san_canary.c - a deliberate bug of the kind the flavour's sanitizer must
 * report, run as a test that is expected to fail: it shows that the
 * instrumentation is really in the build (a flavour whose sanitizer were
 * silently off would pass everything).  Thread flavour: a data race on a
 * counter.  Address flavour (ASan with UBSan): a read past a heap block,
 * which ASan reports; with the argument `bounds`, an index past a stack
 * array, which UBSan's bounds check reports first.
 *
 * With the argument `alloy`, the bad access is made by alloy's own code, in
 * liballoy_san.a, which the program links: alloy_posix_memalign stores the
 * block's address through the pointer it is given (aligned.c).  Thread
 * flavour: two threads give it the same pointer, a race between two stores
 * in aligned.c; address flavour: a pointer to a 4-byte heap block, an
 * 8-byte store past it.  A sanitizer sees only the accesses of instrumented
 * code, so the report, which must name alloy_posix_memalign in aligned.c,
 * shows that the sanitizer build of alloy is instrumented, not only the
 * test. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"

static int counter;  /* raced on purpose */
static void *shared; /* alloy_posix_memalign's out, raced on purpose (thread flavour) */
/* Both threads wait here after their store: so neither exits before the
 * other has stored (a thread's exit flushes its cache under locks, which
 * would order its store before the other's). */
static pthread_barrier_t both;

static void *memalign_into_shared(void *arg) {
    if (alloy_posix_memalign(&shared, 16, 32) != 0)
        abort();
    pthread_barrier_wait(&both);
    return arg;
}

static void *bump(void *arg) {
    for (int i = 0; i < 1000; i++)
        counter++;
    return arg;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "alloy")) {
#ifdef SAN_THREAD
        pthread_t a, b;
        pthread_barrier_init(&both, NULL, 2);
        pthread_create(&a, NULL, memalign_into_shared, NULL);
        pthread_create(&b, NULL, memalign_into_shared, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
#else
        void *small = malloc(4); /* the sanitizer's malloc */
        if (alloy_posix_memalign((void **)small, 16, 32) != 0)
            abort();
        free(small);
        (void)memalign_into_shared;
#endif
        return 0;
    }
#ifdef SAN_THREAD
    pthread_t a, b;
    pthread_create(&a, NULL, bump, NULL);
    pthread_create(&b, NULL, bump, NULL);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    printf("%d\n", counter);
#else
    volatile int i = 4; /* one past the end */
    if (argc > 1 && !strcmp(argv[1], "bounds")) {
        int v[4] = {1, 2, 3, 4};
        printf("%d\n", v[i]);
    } else {
        int *volatile h = malloc(4 * sizeof(int));
        printf("%d\n", h[i]);
        free(h);
    }
    (void)bump;
#endif
    (void)argc;
    (void)argv;
    return 0;
}
