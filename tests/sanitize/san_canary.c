/* SPDX-License-Identifier: MIT */
/* san_canary.c - a deliberate bug of the kind the flavour's sanitizer must
 * report, run as a test that is expected to fail: it shows that the
 * instrumentation is really in the build (a flavour whose sanitizer were
 * silently off would pass everything).  Thread flavour: a data race on a
 * counter.  Address flavour (ASan with UBSan): a read past a heap block,
 * which ASan reports; with the argument `bounds`, an index past a stack
 * array, which UBSan's bounds check reports first. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int counter; /* raced on purpose */

static void *bump(void *arg) {
    for (int i = 0; i < 1000; i++)
        counter++;
    return arg;
}

int main(int argc, char **argv) {
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
