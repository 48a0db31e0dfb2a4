/* SPDX-License-Identifier: MIT */
/* san_canary.c - a deliberate bug of the kind the flavour's sanitizer must
 * report, run as a test that is expected to fail: it shows that the
 * instrumentation is really in the build (a flavour whose sanitizer were
 * silently off would pass everything).  Thread flavour: a data race on a
 * counter; address flavour: a read past a stack array. */
#include <pthread.h>
#include <stdio.h>

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
    int v[4] = {1, 2, 3, 4};
    volatile int i = argc + 3; /* 4: one past the end */
    printf("%d\n", v[i]);
    (void)bump;
#endif
    (void)argv;
    return 0;
}
