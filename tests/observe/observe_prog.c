/* SPDX-License-Identifier: MIT */
/* observe_prog.c - the program the timeline, plot and top tests watch
 * (check_observe.py), linked with liballoy.so and run under `alloy run`.
 *
 *   observe_prog phases OUT   three phases, each followed by a quiet spell
 *                             in which it writes its alloy_ctl readings to
 *                             OUT (one JSON line per phase):
 *                             A  16 MiB of small blocks (16..512 bytes)
 *                             B  48 MiB of 4096-byte blocks, 6 MiB per
 *                                timeline record (the growing class)
 *                             C  B's blocks freed
 *   observe_prog serve        some blocks, "ready" on stdout, then waits
 *                             until its standard input closes
 *   observe_prog closefd      closes every descriptor from 3 up after the
 *                             first record, opens a file of its own (which
 *                             may get the timeline's number), writes to it,
 *                             and waits until the timeline stops
 *   observe_prog fsize        allocates until the timeline stops (run under
 *                             a file-size limit), then prints "done"
 *   observe_prog child        runs `true` (on alloy too) and prints "done"
 *   observe_prog percpu       makes its CPU's cache miss, overflow, drain
 *                             (alloy_thread_flush) and hold blocks, then, in
 *                             a quiet spell (a nap, then two records), prints
 *                             its alloy_ctl readings of the first tier as
 *                             one JSON line and "ready", and waits until its
 *                             standard input closes, allocating nothing
 *   observe_prog fork         forks a child that allocates and exits
 *                             normally (its exit handlers run), then prints
 *                             "segment kept" if its own live segment is
 *                             still there, and "done"
 *
 * It never looks at a clock to decide anything: it waits for timeline
 * records (timeline.records) or for the timeline to stop (timeline.file
 * becomes ""), with a generous overall limit, so a slow machine only makes
 * it slower.  Exit status 1 with a message when a wait runs out.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <alloy.h>
#include <alloy/ctl.h>

#define WAIT_LIMIT_MS 60000

static uint64_t u64(const char *name) {
    uint64_t v = 0;
    size_t len = sizeof v;
    if (alloy_ctl(name, &v, &len, NULL, 0) != 0) {
        fprintf(stderr, "observe_prog: alloy_ctl(%s) failed\n", name);
        exit(1);
    }
    return v;
}

static const char *str(const char *name) {
    const char *v = NULL;
    size_t len = sizeof v;
    if (alloy_ctl(name, &v, &len, NULL, 0) != 0 || !v) {
        fprintf(stderr, "observe_prog: alloy_ctl(%s) failed\n", name);
        exit(1);
    }
    return v;
}

static uint64_t unix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void nap(void) {
    struct timespec ts = {0, 5 * 1000000};
    nanosleep(&ts, NULL);
}

/* Wait until the timeline has written n more records. */
static void wait_records(uint64_t n) {
    uint64_t want = u64("timeline.records") + n;
    for (unsigned waited = 0; u64("timeline.records") < want; waited += 5) {
        if (waited > WAIT_LIMIT_MS) {
            fprintf(stderr, "observe_prog: no timeline record for %u ms\n", WAIT_LIMIT_MS);
            exit(1);
        }
        nap();
    }
}

/* Wait for one more record, or until the timeline stops writing its file
 * (which ends the records).  true when it stopped. */
static bool wait_record_or_stop(void) {
    uint64_t want = u64("timeline.records") + 1;
    for (unsigned waited = 0; u64("timeline.records") < want; waited += 5) {
        if (!str("timeline.file")[0])
            return true;
        if (waited > WAIT_LIMIT_MS) {
            fprintf(stderr, "observe_prog: no timeline record for %u ms\n", WAIT_LIMIT_MS);
            exit(1);
        }
        nap();
    }
    return false;
}

/* Wait until the timeline has stopped writing its file. */
static void wait_stopped(void) {
    for (unsigned waited = 0; str("timeline.file")[0]; waited += 5) {
        if (waited > WAIT_LIMIT_MS) {
            fprintf(stderr, "observe_prog: the timeline still records after %u ms\n",
                    WAIT_LIMIT_MS);
            exit(1);
        }
        nap();
    }
}

/* The class whose object size is `size` (as stats.classes.<j>.size says). */
static unsigned class_of(uint64_t size) {
    char name[64];
    for (unsigned j = 0; j < 208; j++) {
        snprintf(name, sizeof name, "stats.classes.%u.size", j);
        if (u64(name) == size)
            return j;
    }
    fprintf(stderr, "observe_prog: no class of %llu bytes\n", (unsigned long long)size);
    exit(1);
}

/* A quiet spell: two more records, then the alloy_ctl readings.  It starts
 * a nap after the phase's last call: a record is stamped when it starts, in
 * whole milliseconds, so one stamped with the millisecond that call ended in
 * may have started before it (phase C's 12,288 frees can take less than a
 * millisecond, and such a record read phase B's figures). */
static void quiet(FILE *out, const char *phase, unsigned cls) {
    char name[64];
    nap();
    uint64_t start = unix_ms();
    wait_records(2);
    fprintf(out, "{\"phase\":\"%s\",\"quiet_start_ms\":%llu", phase, (unsigned long long)start);
    static const char *const keys[] = {"allocated",    "active",        "resident",       "mapped",
                                       "tcache_bytes", "central_bytes", "large_allocated"};
    for (unsigned k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        snprintf(name, sizeof name, "stats.%s", keys[k]);
        fprintf(out, ",\"%s\":%llu", keys[k], (unsigned long long)u64(name));
    }
    snprintf(name, sizeof name, "stats.classes.%u.allocated", cls);
    fprintf(out, ",\"class\":%u,\"class_allocated\":%llu", cls, (unsigned long long)u64(name));
    snprintf(name, sizeof name, "stats.classes.%u.span_bytes", cls);
    fprintf(out, ",\"class_span_bytes\":%llu", (unsigned long long)u64(name));
    wait_records(1); /* a record taken after the readings, still quiet */
    fprintf(out, ",\"quiet_end_ms\":%llu}\n", (unsigned long long)unix_ms());
    fflush(out);
}

static int phases(const char *path) {
    static char obuf[1 << 14]; /* stdio's buffer, not malloc'ed in a quiet spell */
    FILE *out = fopen(path, "w");
    if (!out) {
        perror(path);
        return 1;
    }
    setvbuf(out, obuf, _IOFBF, sizeof obuf);
    unsigned cls = class_of(4096);
    enum { SMALL = 16 << 20, BIG = 48 << 20, STEP = 6 << 20 };
    static void *small[SMALL / 16], *big[BIG / 4096];
    size_t ns = 0, nb = 0, bytes = 0;
    while (bytes < SMALL) { /* A */
        size_t size = 16 + (ns * 48) % 497;
        small[ns] = malloc(size);
        memset(small[ns++], 1, size);
        bytes += size;
    }
    quiet(out, "A", cls);
    while (nb < BIG / 4096) { /* B */
        big[nb] = malloc(4096);
        memset(big[nb++], 2, 4096);
        if (nb % (STEP / 4096) == 0)
            wait_records(1);
    }
    quiet(out, "B", cls);
    for (size_t i = 0; i < nb; i++) /* C */
        free(big[i]);
    quiet(out, "C", cls);
    for (size_t i = 0; i < ns; i++)
        free(small[i]);
    fclose(out);
    return 0;
}

static int serve(void) {
    enum { N = 20000 };
    static void *keep[N];
    for (unsigned i = 0; i < N; i++)
        keep[i] = malloc(64 + (i % 8) * 128);
    puts("ready");
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0)
        ;
    for (unsigned i = 0; i < N; i++)
        free(keep[i]);
    return 0;
}

static int percpu(void) {
    enum { N = 32768 }; /* blocks, of four classes: more than their lists hold */
    static void *p[N];
    static char obuf[1 << 12]; /* stdio's buffer, not malloc'ed in the quiet spell */
    setvbuf(stdout, obuf, _IOFBF, sizeof obuf);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++)
            p[i] = malloc(64 + (size_t)(i % 4) * 16);
        for (int i = 0; i < N; i++)
            free(p[i]);
        if (round == 0)
            alloy_thread_flush(); /* every CPU's cache given back: a drain */
    }
    for (int i = 0; i < 64; i++) /* the cache holds blocks */
        p[i] = malloc(256);
    for (int i = 0; i < 64; i++)
        free(p[i]);
    nap();
    uint64_t start = unix_ms();
    wait_records(2);
    printf("{\"quiet_start_ms\":%llu,\"mode\":\"%s\",\"why\":\"%s\"", (unsigned long long)start,
           str("percpu.mode"), str("percpu.why"));
    static const char *const keys[] = {"bytes",     "caches", "misses", "overflows",
                                       "scavenges", "drains", "moves"};
    for (unsigned k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char name[32];
        snprintf(name, sizeof name, "percpu.%s", keys[k]);
        printf(",\"%s\":%llu", keys[k], (unsigned long long)u64(name));
    }
    puts("}\nready");
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0)
        ;
    return 0;
}

static int closefd(void) {
    wait_records(1);
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    int fd = open("program-file.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("program-file.txt");
        return 1;
    }
    for (int i = 0; i < 50; i++) {
        free(malloc(1000 + (size_t)i));
        if (write(fd, "program data\n", 13) != 13)
            return 1;
        if (wait_record_or_stop())
            break;
    }
    wait_stopped();
    close(fd);
    puts("done");
    return 0;
}

static int fsize(void) {
    static void *keep[1 << 16];
    for (unsigned i = 0;; i = (i + 1) % (1 << 16)) {
        free(keep[i]);
        keep[i] = malloc(16 + (i * 56) % 3000); /* classes change: long records */
        if (i % 4096 == 0 && wait_record_or_stop())
            break;
    }
    puts("done");
    return 0;
}

static int child(void) {
    wait_records(1);
    int rc = system("true");
    wait_records(2);
    puts(rc == 0 ? "done" : "child failed");
    return rc != 0;
}

static int forked(void) {
    wait_records(1);
    pid_t child = fork();
    if (child == 0) {
        for (int i = 0; i < 1000; i++)
            free(malloc(100 + (size_t)i));
        exit(0); /* the exit handlers run: they must leave the parent's files alone */
    }
    int status;
    if (child < 0 || waitpid(child, &status, 0) != child || status != 0)
        return 1;
    wait_records(2);
    char seg[64];
    snprintf(seg, sizeof seg, "/dev/shm/alloy.%d", (int)getpid());
    if (access(seg, F_OK) == 0)
        puts("segment kept");
    puts("done");
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "phases") && argc > 2)
        return phases(argv[2]);
    if (!strcmp(mode, "serve"))
        return serve();
    if (!strcmp(mode, "closefd"))
        return closefd();
    if (!strcmp(mode, "fsize"))
        return fsize();
    if (!strcmp(mode, "child"))
        return child();
    if (!strcmp(mode, "fork"))
        return forked();
    if (!strcmp(mode, "percpu"))
        return percpu();
    fprintf(stderr,
            "usage: observe_prog phases OUT | serve | closefd | fsize | child | fork | percpu\n");
    return 2;
}
