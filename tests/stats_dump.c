/* stats_dump.c - allocate a little in two threads, then print alloy's stats
 * to stdout with the options given as argv[1] ("J" for JSON). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloy.h"

static void to_stdout(void *opaque, const char *text, size_t len) {
    (void)opaque;
    while (len) {
        ssize_t w = write(1, text, len);
        if (w <= 0)
            return;
        text += w;
        len -= (size_t)w;
    }
}

static void *work(void *arg) {
    for (int i = 0; i < 1000; i++)
        free(malloc((size_t)(i % 700) + 1));
    return arg;
}

int main(int argc, char **argv) {
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    work(NULL);
    pthread_join(t, NULL);
    void *big = malloc(3u << 20);
    alloy_stats_print(to_stdout, NULL, argc > 1 ? argv[1] : NULL);
    free(big);
    return 0;
}
