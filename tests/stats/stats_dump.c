/* SPDX-License-Identifier: MIT */
/* stats_dump.c - allocate a little in two threads, then print alloy's stats.
 *
 *   stats_dump [OPTS]      the report with these opts ("J" for JSON) on stdout
 *   stats_dump --out DIR   DIR/summary.txt, DIR/full.txt and DIR/report.json,
 *                          all of one moment (printing does not allocate, so
 *                          nothing changes between them), then, after a 3 MiB
 *                          block is freed, DIR/after.json
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloy.h"

static void to_fd(void *opaque, const char *text, size_t len) {
    int fd = *(int *)opaque;
    while (len) {
        ssize_t w = write(fd, text, len);
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

static int print_to(const char *dir, const char *name, const char *opts) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror(path);
        return 1;
    }
    alloy_stats_print(to_fd, &fd, opts);
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    work(NULL);
    pthread_join(t, NULL);
    void *big = alloy_malloc(3u << 20);
    int rc = 0;
    if (argc > 2 && !strcmp(argv[1], "--out")) {
        rc |= print_to(argv[2], "summary.txt", NULL);
        rc |= print_to(argv[2], "full.txt", "f");
        rc |= print_to(argv[2], "report.json", "J");
        alloy_free(big);
        rc |= print_to(argv[2], "after.json", "J");
        return rc;
    }
    int fd = 1;
    alloy_stats_print(to_fd, &fd, argc > 1 ? argv[1] : NULL);
    alloy_free(big);
    return 0;
}
