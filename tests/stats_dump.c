/* stats_dump.c - allocate a little in two threads, then print alloy's stats
 * to stdout with the options given as argv[1] ("J" for JSON).  With "both",
 * an explicit heap holds a few blocks too, and the text report, a line
 * "--- json ---" and the JSON report are printed at the same quiescent
 * point, for check_stats_text.py to compare. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/heap.h"

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
        alloy_free(alloy_malloc((size_t)(i % 700) + 1));
    return arg;
}

int main(int argc, char **argv) {
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    work(NULL);
    pthread_join(t, NULL);
    void *big = alloy_malloc(3u << 20);
    if (argc > 1 && !strcmp(argv[1], "both")) {
        alloy_heap_t *h = alloy_heap_create();
        void *in_heap[3] = {alloy_heap_malloc(h, 100), alloy_heap_malloc(h, 5000), alloy_heap_malloc(h, 400000)};
        alloy_stats_print(to_stdout, NULL, NULL);
        to_stdout(NULL, "--- json ---\n", 13);
        alloy_stats_print(to_stdout, NULL, "J");
        for (int i = 0; i < 3; i++)
            alloy_heap_free(h, in_heap[i]);
        alloy_heap_destroy(h);
    } else {
        alloy_stats_print(to_stdout, NULL, argc > 1 ? argv[1] : NULL);
    }
    alloy_free(big);
    return 0;
}
