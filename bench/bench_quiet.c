/* SPDX-License-Identifier: MIT */
/* bench_quiet.c - a process that goes quiet: does it give its memory back
 * without calling the allocator again, and at what price in wake-ups?
 *
 * usage: bench_quiet [ROUNDS [WATCH_S]]
 *
 * ROUNDS times (default 50), a thread allocates 100,000 blocks of 16-520
 * bytes (writing each) and exits, then another frees them all and exits;
 * then the process calls nothing: it sleeps 2 s and WATCH_S more (default
 * 20).  Prints the resident set (VmRSS, from /proc/self/statm) after the
 * frees and after the 2 s, and the voluntary context switches of the
 * process's threads during the WATCH_S seconds (the wake-ups of an
 * allocator's background thread, if it has one).  Run it under LD_PRELOAD
 * with the allocator and the settings to compare (docs/BENCHMARKS.md). */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N 100000

static void *blocks[N];

static double resident_mb(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
            resident = 0;
        fclose(f);
    }
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / 1e6;
}

static void *allocate(void *arg) {
    (void)arg;
    for (int i = 0; i < N; i++) {
        size_t size = 16 + (size_t)(i * 7919 % 505);
        blocks[i] = malloc(size);
        if (!blocks[i]) {
            fprintf(stderr, "bench_quiet: out of memory\n");
            exit(1);
        }
        memset(blocks[i], 1, size);
    }
    return NULL;
}

static void *release(void *arg) {
    (void)arg;
    for (int i = 0; i < N; i++)
        free(blocks[i]);
    return NULL;
}

/* Voluntary context switches, summed over the process's threads. */
static long wakeups(void) {
    char path[300], line[256];
    long total = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        FILE *f = fopen(path, "r");
        while (f && fgets(line, sizeof line, f))
            if (!strncmp(line, "voluntary_ctxt_switches:", 24))
                total += atol(line + 24);
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return total;
}

static void run(void *(*f)(void *)) {
    pthread_t t;
    if (pthread_create(&t, NULL, f, NULL) != 0 || pthread_join(t, NULL) != 0) {
        fprintf(stderr, "bench_quiet: cannot run a thread\n");
        exit(1);
    }
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 50, watch = argc > 2 ? atoi(argv[2]) : 20;
    if (rounds < 1 || watch < 0) {
        fprintf(stderr, "usage: bench_quiet [ROUNDS [WATCH_S]]\n");
        return 2;
    }
    for (int r = 0; r < rounds; r++) {
        run(allocate);
        run(release);
    }
    double after_frees = resident_mb();
    sleep(2);
    double after_idle = resident_mb();
    long before = wakeups();
    sleep((unsigned)watch);
    printf("after the frees %.1f MB, after 2 s %.1f MB, wake-ups in the next %d s: %ld\n",
           after_frees, after_idle, watch, wakeups() - before);
    return 0;
}
