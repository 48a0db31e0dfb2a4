/* SPDX-License-Identifier: MIT */
/* test_prof.c - the heap profiler through alloy_ctl, linked with liballoy.so
 * (so that its own frames are left out of the stacks, as when preloaded).
 *
 *   test_prof all DIR MODULE   run with ALLOY_CONF=prof:true,prof_sample:1
 *   test_prof settings         run with bad prof_* values: the defaults stay
 *   test_prof badprefix DIR    run with an unwritable prof_prefix
 *
 * `all` checks: the live set is exact (malloc, calloc, realloc, aligned,
 * large blocks, explicit heaps), pausing and resuming, prof.sample and
 * prof.reset, that the unwinder allocates nothing (prof.nested), threads and
 * thread exit, a dump taken while other threads allocate (every line whole,
 * the totals adding up), fork (the child continues the profile), and a
 * module loaded with dlopen (its blocks have its function in their stacks).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <alloy.h>
#include <alloy/ctl.h>
#include <alloy/heap.h>

#include "check.h"

static uint64_t u64(const char *name) {
    uint64_t v = 0;
    size_t len = sizeof v;
    int err = alloy_ctl(name, &v, &len, NULL, 0);
    if (err)
        fprintf(stderr, "alloy_ctl(%s): %d\n", name, err);
    return v;
}

static int dump(const char *path) { return alloy_ctl("prof.dump", NULL, NULL, &path, sizeof path); }

static void set_active(bool on) {
    CHECK(alloy_ctl("prof.active", NULL, NULL, &on, sizeof on) == 0);
}

/* ---- a heap profile, parsed ---- */

typedef struct profile {
    unsigned long long head[4], sum[4];
    int lines, bad, maps;
    int has_addr; /* a stack holds an address in [lo, hi) */
} profile_t;

static int read_profile(const char *path, profile_t *p, uintptr_t lo, uintptr_t hi) {
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[8192];
    if (!fgets(line, sizeof line, f) ||
        sscanf(line, "heap profile: %llu: %llu [%llu: %llu] @ heapprofile", &p->head[0],
               &p->head[1], &p->head[2], &p->head[3]) != 4)
        p->bad++;
    while (fgets(line, sizeof line, f)) {
        if (!strcmp(line, "\n") || !strncmp(line, "# alloy: ", 9))
            continue;
        if (!strncmp(line, "MAPPED_LIBRARIES:", 17)) {
            p->maps = 1;
            break;
        }
        unsigned long long v[4];
        int used = 0;
        size_t n = strlen(line);
        if (n == 0 || line[n - 1] != '\n' ||
            sscanf(line, " %llu: %llu [ %llu: %llu] @%n", &v[0], &v[1], &v[2], &v[3], &used) != 4 ||
            !used) {
            p->bad++;
            continue;
        }
        for (int k = 0; k < 4; k++)
            p->sum[k] += v[k];
        p->lines++;
        char *s = line + used, *end;
        unsigned long long a;
        while ((a = strtoull(s, &end, 16)), end != s) {
            if (a >= lo && a < hi)
                p->has_addr = 1;
            s = end;
        }
    }
    fclose(f);
    return 0;
}

/* ---- threads ---- */

static volatile int stop;

static void *churn(void *arg) {
    void *keep[64] = {0};
    unsigned i = 0;
    while (!stop) {
        free(keep[i % 64]);
        keep[i % 64] = malloc(16 + (i * 37) % 2000);
        i++;
    }
    for (int k = 0; k < 64; k++)
        free(keep[k]);
    return arg;
}

static void *leave_live(void *arg) {
    void **out = arg;
    for (int i = 0; i < 10; i++)
        out[i] = malloc(100); /* freed by the main thread after this one exits */
    return NULL;
}

static int run_all(const char *dir, const char *module) {
    bool on = false;
    size_t len = sizeof on;
    CHECK(alloy_ctl("opt.prof", &on, &len, NULL, 0) == 0 && on);
    CHECK_EQ_U(u64("prof.sample"), 1);

    /* the live set is exact at prof_sample:1 */
    uint64_t live0 = u64("prof.live"), samples0 = u64("prof.samples");
    void *p[8];
    p[0] = malloc(10);
    p[1] = calloc(3, 100);
    p[2] = malloc(400000); /* a large block */
    p[3] = aligned_alloc(256, 512);
    CHECK(((uintptr_t)p[3] & 255) == 0);
    CHECK(posix_memalign(&p[4], 8192, 100) == 0 && ((uintptr_t)p[4] & 8191) == 0);
    p[5] = malloc(0);
    p[6] = realloc(malloc(20), 5000); /* moves: one record less, one more */
    p[7] = malloc(50u << 20);         /* a direct map */
    for (int i = 0; i < 8; i++)
        CHECK(p[i] != NULL);
    memset(p[1], 1, 300);
    CHECK(((char *)p[1])[299] == 1);
    CHECK_EQ_U(u64("prof.live") - live0, 8);
    CHECK(u64("prof.samples") - samples0 >= 9);
    p[7] = realloc(p[7], 80u << 20); /* mremap: the record follows the block */
    CHECK_EQ_U(u64("prof.live") - live0, 8);
    for (int i = 0; i < 8; i++)
        free(p[i]);
    CHECK_EQ_U(u64("prof.live"), live0);

    /* an explicit heap's blocks go with it */
    alloy_heap_t *h = alloy_heap_create();
    for (int i = 0; i < 5; i++)
        CHECK(alloy_heap_malloc(h, 64) != NULL);
    CHECK_EQ_U(u64("prof.live") - live0, 5);
    CHECK(alloy_heap_destroy(h) == 0);
    CHECK_EQ_U(u64("prof.live"), live0);

    /* pause and resume */
    set_active(false);
    bool act = true;
    len = sizeof act;
    CHECK(alloy_ctl("prof.active", &act, &len, NULL, 0) == 0 && !act);
    samples0 = u64("prof.samples");
    for (int i = 0; i < 100; i++)
        free(malloc(32));
    CHECK_EQ_U(u64("prof.samples"), samples0);
    set_active(true);
    for (int i = 0; i < 100; i++)
        free(malloc(32));
    CHECK_EQ_U(u64("prof.samples"), samples0 + 100);

    /* prof.sample */
    uint64_t mean = 4096;
    CHECK(alloy_ctl("prof.sample", NULL, NULL, &mean, sizeof mean) == 0);
    CHECK_EQ_U(u64("prof.sample"), 4096);
    mean = 0;
    CHECK(alloy_ctl("prof.sample", NULL, NULL, &mean, sizeof mean) == EINVAL);
    mean = 1;
    CHECK(alloy_ctl("prof.sample", NULL, NULL, &mean, sizeof mean) == 0);
    /* the countdown drawn at 4096 runs out at its own pace; then every one */
    samples0 = u64("prof.samples");
    for (int i = 0; i < 100000 && u64("prof.samples") == samples0; i++)
        free(malloc(64));
    samples0 = u64("prof.samples");
    free(malloc(64));
    CHECK_EQ_U(u64("prof.samples"), samples0 + 1);

    /* threads, and a thread that exits with blocks live */
    void *left[10];
    pthread_t t;
    CHECK(pthread_create(&t, NULL, leave_live, left) == 0); /* glibc's own per-thread */
    pthread_join(t, NULL);                                  /* blocks, made once */
    for (int i = 0; i < 10; i++)
        free(left[i]);
    live0 = u64("prof.live");
    CHECK(pthread_create(&t, NULL, leave_live, left) == 0);
    pthread_join(t, NULL);
    CHECK_EQ_U(u64("prof.live") - live0, 10);
    for (int i = 0; i < 10; i++)
        free(left[i]);
    CHECK_EQ_U(u64("prof.live"), live0);

    /* dumps while threads allocate: each file whole and consistent */
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        CHECK(pthread_create(&th[i], NULL, churn, NULL) == 0);
    char path[4096];
    for (int k = 0; k < 20; k++) {
        snprintf(path, sizeof path, "%s/race.%d.heap", dir, k);
        CHECK(dump(path) == 0);
        profile_t pr;
        CHECK(read_profile(path, &pr, 0, 0) == 0);
        CHECK(pr.bad == 0 && pr.maps == 1 && pr.lines > 0);
        for (int i = 0; i < 4; i++)
            CHECK(pr.head[i] == pr.sum[i]);
        const char *last = NULL;
        len = sizeof last;
        CHECK(alloy_ctl("prof.dump", &last, &len, NULL, 0) == 0 && !strcmp(last, path));
    }
    stop = 1;
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    /* the unwinder allocated nothing, from four threads */
    CHECK_EQ_U(u64("prof.nested"), 0);
    CHECK(u64("prof.stacks") > 0 && u64("prof.store_bytes") > 0);
    CHECK_EQ_U(u64("prof.lost"), 0);

    /* prof.reset: the cumulative counts become the live ones */
    CHECK(alloy_ctl("prof.reset", NULL, NULL, NULL, 0) == 0);
    snprintf(path, sizeof path, "%s/reset.heap", dir);
    CHECK(dump(path) == 0);
    profile_t pr;
    CHECK(read_profile(path, &pr, 0, 0) == 0);
    CHECK(pr.head[0] == pr.head[2] && pr.head[1] == pr.head[3]);
    /* no value: the default name, under prof_prefix */
    CHECK(alloy_ctl("prof.dump", NULL, NULL, NULL, 0) == 0);
    const char *last = NULL;
    len = sizeof last;
    CHECK(alloy_ctl("prof.dump", &last, &len, NULL, 0) == 0 && strstr(last, ".m.heap"));
    CHECK(access(last, R_OK) == 0);
    CHECK(dump("/nonexistent-dir/x.heap") == ENOENT);

    /* fork: the child continues the profile */
    void *held = malloc(1000);
    live0 = u64("prof.live");
    pid_t pid = fork();
    if (pid == 0) {
        int ok = u64("prof.live") == live0;
        for (int i = 0; i < 7; i++)
            ok &= malloc(64) != NULL;
        ok &= u64("prof.live") == live0 + 7;
        snprintf(path, sizeof path, "%s/child.heap", dir);
        ok &= dump(path) == 0;
        free(held);
        ok &= u64("prof.live") == live0 + 6;
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ_U(u64("prof.live"), live0);
    free(held);

    /* a module loaded with dlopen */
    void *lib = dlopen(module, RTLD_NOW);
    CHECK(lib != NULL);
    if (lib) {
        void *(*fn)(size_t) = (void *(*)(size_t))dlsym(lib, "prof_module_alloc");
        Dl_info info;
        CHECK(fn && dladdr((void *)fn, &info));
        void *blocks[4];
        for (int i = 0; i < 4; i++)
            blocks[i] = fn(128);
        snprintf(path, sizeof path, "%s/dlopen.heap", dir);
        CHECK(dump(path) == 0);
        uintptr_t lo = (uintptr_t)fn, hi = lo + 64;
        CHECK(read_profile(path, &pr, lo, hi) == 0 && pr.has_addr);
        for (int i = 0; i < 4; i++)
            free(blocks[i]);
    }
    CHECK_EQ_U(u64("prof.nested"), 0); /* still none, the module's frames included */
    return CHECK_DONE();
}

/* Bad values: each warned about by name (the test's regex), defaults kept. */
static int run_settings(void) {
    CHECK_EQ_U(u64("opt.prof_sample"), 512 * 1024);
    CHECK_EQ_U(u64("prof.sample"), 512 * 1024);
    bool b = true;
    size_t len = sizeof b;
    CHECK(alloy_ctl("opt.prof_leak", &b, &len, NULL, 0) == 0 && !b);
    const char *prefix = NULL;
    len = sizeof prefix;
    CHECK(alloy_ctl("opt.prof_prefix", &prefix, &len, NULL, 0) == 0 && !strcmp(prefix, "alloy"));
    bool on = true;
    CHECK(alloy_ctl("prof.active", NULL, NULL, &on, sizeof on) == 0); /* prof:true is valid */
    return CHECK_DONE();
}

/* An unwritable prof_prefix: interval dumps fail (one warning), sampling
 * goes on, and a dump elsewhere still has every sample. */
static int run_badprefix(const char *dir) {
    void *keep[2000];
    for (int round = 0; round < 20; round++) {
        for (int i = 0; i < 2000; i++)
            keep[i] = malloc(512);
        for (int i = 0; i < 2000; i++)
            free(keep[i]);
    }
    for (int i = 0; i < 2000; i++)
        keep[i] = malloc(512);
    uint64_t samples = u64("prof.samples"), live = u64("prof.live");
    CHECK(samples > 100);
    CHECK(live > 100);
    char path[4096];
    snprintf(path, sizeof path, "%s/elsewhere.heap", dir);
    CHECK(dump(path) == 0);
    profile_t pr;
    CHECK(read_profile(path, &pr, 0, 0) == 0 && pr.bad == 0);
    CHECK(pr.head[2] > 0);
    for (int i = 0; i < 2000; i++)
        free(keep[i]);
    return CHECK_DONE();
}

int main(int argc, char **argv) {
    if (argc >= 4 && !strcmp(argv[1], "all"))
        return run_all(argv[2], argv[3]);
    if (argc >= 2 && !strcmp(argv[1], "settings"))
        return run_settings();
    if (argc >= 3 && !strcmp(argv[1], "badprefix"))
        return run_badprefix(argv[2]);
    fprintf(stderr, "usage: test_prof all DIR MODULE | settings | badprefix DIR\n");
    return 2;
}
