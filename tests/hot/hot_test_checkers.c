/* SPDX-License-Identifier: MIT */
/* hot_test_checkers.c - memory checkers see into the hot-path allocators
 * (src/hot/checker.h): a read of arena memory after alloy_arena_reset (or
 * alloy_arena_rewind), and a read of a freed slot of a pool, a synchronized
 * pool and a pool resource, are each reported; ordinary use is not.
 *
 *   hot_test_checkers CASE   run one case and return (what valgrind runs:
 *                            tests/hot/memcheck.sh, against alloy_hot_vg)
 *   hot_test_checkers        (the ASan build, against alloy_hot_san) run
 *                            every case in a forked child and check that
 *                            AddressSanitizer reported the bad ones, with
 *                            the kind of report each should give, and
 *                            nothing for the clean one
 */
#include <alloy/arena.h>
#include <alloy/pool.h>
#include <alloy/resource.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

static volatile char sink;

/* Read a byte the compiler cannot see coming. */
static void touch(const void *p) {
    const char *volatile q = p;
    sink = *q;
}

static void arena_reset(void) {
    alloy_arena_t a;
    alloy_arena_init(&a, NULL, 0, NULL);
    char *p = alloy_arena_alloc(&a, 64, 16);
    memset(p, 1, 64);
    alloy_arena_reset(&a);
    touch(p + 8); /* after the reset: reported */
    alloy_arena_destroy(&a);
}

static void arena_reset_buffer(void) {
    static char buf[4096];
    alloy_arena_t a;
    alloy_arena_init(&a, buf, sizeof buf, alloy_null_resource());
    char *p = alloy_arena_alloc(&a, 100, 8);
    memset(p, 1, 100);
    alloy_arena_reset(&a);
    touch(p + 50); /* the caller's buffer, after the reset: reported */
    alloy_arena_destroy(&a);
}

static void arena_rewind(void) {
    alloy_arena_t a;
    alloy_arena_init(&a, NULL, 0, NULL);
    char *keep = alloy_arena_alloc(&a, 32, 8);
    alloy_arena_mark_t m = alloy_arena_mark(&a);
    char *p = alloy_arena_alloc(&a, 32, 8);
    memset(keep, 1, 32);
    memset(p, 2, 32);
    alloy_arena_rewind(&a, m);
    touch(keep); /* before the mark: fine */
    touch(p);    /* after it: reported */
    alloy_arena_destroy(&a);
}

static void pool_free(void) {
    alloy_pool_t pool;
    alloy_pool_config_t cfg = {.slot_size = 48};
    if (alloy_pool_init(&pool, &cfg) != 0)
        abort();
    char *p = alloy_pool_alloc(&pool), *q = alloy_pool_alloc(&pool);
    memset(p, 1, 48);
    memset(q, 1, 48);
    alloy_pool_free(&pool, p);
    touch(q);      /* still held: fine */
    touch(p + 16); /* freed: reported */
    alloy_pool_destroy(&pool);
}

static void sync_pool_free(void) {
    alloy_sync_pool_t pool;
    alloy_pool_config_t cfg = {.slot_size = 32};
    if (alloy_sync_pool_init(&pool, &cfg) != 0)
        abort();
    char *p = alloy_sync_pool_alloc(&pool);
    memset(p, 1, 32);
    alloy_sync_pool_free(&pool, p);
    touch(p + 24); /* freed: reported */
    alloy_sync_pool_destroy(&pool);
}

static void pool_resource_free(void) {
    alloy_pool_resource_t pr;
    if (alloy_pool_resource_init(&pr, NULL, NULL) != 0)
        abort();
    alloy_resource_t *r = alloy_pool_resource(&pr);
    char *p = alloy_resource_allocate(r, 200, 8);
    memset(p, 1, 200);
    alloy_resource_deallocate(r, p, 200, 8);
    touch(p + 100); /* freed: reported */
    alloy_pool_resource_destroy(&pr);
}

/* Everything used as it should be: nothing to report. */
static void clean(void) {
    char buf[1024];
    alloy_arena_t a;
    alloy_arena_init(&a, buf, sizeof buf, NULL);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 200; i++) {
            char *p = alloy_arena_alloc(&a, (size_t)(1 + i % 90), 8);
            memset(p, i, (size_t)(1 + i % 90));
            touch(p);
        }
        alloy_arena_mark_t m = alloy_arena_mark(&a);
        char *p = alloy_arena_alloc(&a, 10, 1);
        memset(p, 0, 10);
        alloy_arena_rewind(&a, m);
        alloy_arena_reset(&a);
    }
    alloy_arena_destroy(&a);
    memset(buf, 0, sizeof buf); /* the buffer is the caller's again */

    alloy_pool_t pool;
    alloy_pool_config_t cfg = {.slot_size = 40, .chunk_slots = 8};
    if (alloy_pool_init(&pool, &cfg) != 0)
        abort();
    void *slots[100];
    for (int i = 0; i < 100; i++) {
        slots[i] = alloy_pool_alloc(&pool);
        memset(slots[i], i, 40);
    }
    for (int i = 0; i < 100; i += 2)
        alloy_pool_free(&pool, slots[i]);
    for (int i = 0; i < 100; i += 2) {
        slots[i] = alloy_pool_alloc(&pool);
        memset(slots[i], i, 40);
    }
    for (int i = 0; i < 100; i++)
        alloy_pool_free(&pool, slots[i]);
    alloy_pool_destroy(&pool);

    alloy_sync_pool_resource_t spr;
    if (alloy_sync_pool_resource_init(&spr, NULL, NULL) != 0)
        abort();
    alloy_resource_t *r = alloy_sync_pool_resource(&spr);
    for (int i = 0; i < 300; i++) {
        size_t n = (size_t)(1 + (i * 37) % 6000);
        char *p = alloy_resource_allocate(r, n, 8);
        memset(p, 3, n);
        alloy_resource_deallocate(r, p, n, 8);
    }
    alloy_sync_pool_resource_destroy(&spr);
}

typedef struct checker_case {
    const char *name;
    void (*fn)(void);
    const char *asan; /* what ASan's report must say; NULL: no report */
} checker_case_t;

static const checker_case_t cases[] = {
    {"arena-reset", arena_reset, "use-after-poison"},
    {"arena-reset-buffer", arena_reset_buffer, "use-after-poison"},
    {"arena-rewind", arena_rewind, "use-after-poison"},
    {"pool-free", pool_free, "use-after-poison"},
    {"sync-pool-free", sync_pool_free, "use-after-poison"},
    {"pool-resource-free", pool_resource_free, "use-after-poison"},
    {"clean", clean, NULL},
};
#define NCASES (sizeof cases / sizeof cases[0])

int main(int argc, char **argv) {
    if (argc > 1) {
        for (size_t i = 0; i < NCASES; i++)
            if (!strcmp(argv[1], cases[i].name)) {
                cases[i].fn();
                return 0;
            }
        fprintf(stderr, "hot_test_checkers: no case %s\n", argv[1]);
        return 2;
    }
    for (size_t i = 0; i < NCASES; i++) {
        int fds[2];
        if (pipe(fds) != 0)
            return 1;
        pid_t pid = fork();
        if (pid == 0) {
            dup2(fds[1], 2);
            close(fds[0]);
            cases[i].fn();
            _exit(0);
        }
        close(fds[1]);
        static char out[16384];
        size_t n = 0;
        ssize_t got;
        while (n + 1 < sizeof out && (got = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
            n += (size_t)got;
        out[n] = 0;
        close(fds[0]);
        int status;
        waitpid(pid, &status, 0);
        int exited_clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        int ok = cases[i].asan ? !exited_clean && strstr(out, cases[i].asan) != NULL
                               : exited_clean && !strstr(out, "AddressSanitizer");
        if (!ok)
            fprintf(stderr, "case %s: expected %s, got status %d and:\n%s\n", cases[i].name,
                    cases[i].asan ? cases[i].asan : "no report", status, out);
        CHECK(ok);
    }
    return CHECK_DONE();
}
