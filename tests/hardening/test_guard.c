/* SPDX-License-Identifier: MIT */
/* test_guard.c - sampled guarded allocations (guard_sample, src/guard.h).
 *
 *   test_guard report    (ALLOY_CONF=guard_sample:1) a use after free, an
 *                        overflow and an underflow of a guarded block each
 *                        kill a forked child with SIGSEGV, after alloy's
 *                        report naming the block, its size, and the stacks
 *                        where it was allocated and freed; a double free and an interior
 *                        free abort with the same report; realloc and
 *                        malloc_usable_size work on guarded blocks; a fault
 *                        elsewhere is a plain SIGSEGV with no report.
 *   test_guard overflow  (ALLOY_CONF=guard_sample:1) the overflow case, in
 *                        this process: it dies of SIGSEGV after the report
 *                        (check_guard_addr2line.sh reads its frames).
 *   test_guard rate N    (ALLOY_CONF=guard_sample:N) of 200000 blocks kept
 *                        live, about one in N is guarded (within a factor 2).
 *   test_guard off       (no setting) no block is ever guarded.
 *   test_guard grow      (ALLOY_CONF=guard_sample:5,prof:true) a block grown
 *                        by realloc from 8 bytes to 20 KB in steps of an
 *                        eighth, 2000 times, keeps its bytes, and some of
 *                        the steps land on guarded blocks (realloc once
 *                        crashed there: it asked for the profiler's record of
 *                        a guarded block, which has no span).
 * Linked against liballoy.a: ay_guard_owns tells a guarded block. */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloy.h"
#include "check.h"
#include "child.h"
#include "guard.h"

static volatile char sink;
static char *volatile hidden;

/* Hide a pointer from the compiler, which would fold or warn about the
 * accesses out of bounds that this test makes on purpose. */
static volatile char *hide(char *p) {
    hidden = p;
    return hidden;
}

/* A guarded block of `size` bytes: with guard_sample:1 every malloc of at
 * most a page is sampled while a slot is free (the loop is for the rate
 * and grow modes' larger N). */
__attribute__((noinline)) static char *guarded(size_t size) {
    for (int i = 0; i < 64; i++) {
        char *p = malloc(size);
        if (ay_guard_owns(p))
            return p;
        /* not freed: the next malloc of this size must miss again */
    }
    return NULL;
}

typedef void case_fn(void);

static void use_after_free(void) {
    char *p = guarded(40);
    memset(p, 1, 40);
    free(p);
    sink = hide(p)[8];
}
__attribute__((noinline)) static void overflow(void) {
    char *p = guarded(40);
    hide(p)[40] = 1; /* the first byte after the block: the guard page */
}
static void underflow(void) {
    char *p = guarded(4000);
    sink = hide(p)[-(ptrdiff_t)((uintptr_t)p % 4096) - 16]; /* the guard page before its page */
}
static void double_free(void) {
    char *p = guarded(24);
    free(p);
    free(p);
}
static void interior_free(void) {
    char *p = guarded(64);
    free(p + 16);
}
static void wild_fault(void) { sink = hide(NULL)[16]; }

static int run(case_fn *fn, char *out, size_t len) {
    int status = child_run(fn, out, len);
    return status == -1 ? -1 : WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void expect(const char *name, case_fn *fn, int sig, const char *const *texts) {
    char out[4096];
    int got = run(fn, out, sizeof out);
    int ok = got == sig;
    for (const char *const *t = texts; *t; t++)
        ok = ok && strstr(out, *t) != NULL;
    if (!ok)
        fprintf(stderr, "case %s: signal %d (expected %d), stderr:\n%s\n", name, got, sig, out);
    CHECK(ok);
}

/* The number of frames of the stack under the report's line that starts
 * with `what`: the lines after it of the form "alloy:     #N 0x...". */
static unsigned frames_on(const char *out, const char *what) {
    const char *l = strstr(out, what);
    unsigned n = 0;
    for (l = l ? strchr(l, '\n') : NULL; l && !strncmp(l + 1, "alloy:     #", 12);
         l = strchr(l + 1, '\n'))
        n++;
    return n;
}

static int report_case(void) {
    { /* the stacks come from the unwinder: the test's own frames, main's, libc's */
        char out[4096];
        CHECK(run(use_after_free, out, sizeof out) == SIGSEGV);
        unsigned a = frames_on(out, "allocated by thread"), f = frames_on(out, "freed by thread");
        if (a < 3 || f < 3)
            fprintf(stderr, "stacks of %u and %u frames:\n%s\n", a, f, out);
        CHECK(a >= 3 && f >= 3);
    }
    expect("use after free", use_after_free, SIGSEGV,
           (const char *const[]){"SIGSEGV: a read of a guarded page",
                                 "guarded block: use after free", "8 bytes into the block",
                                 "of 40 bytes", "allocated by thread", "freed by thread", NULL});
    expect("overflow", overflow, SIGSEGV,
           (const char *const[]){"SIGSEGV: a write into a guarded page", "heap buffer overflow",
                                 "0 bytes after the end of the block", "of 40 bytes",
                                 "allocated by thread", NULL});
    expect("underflow", underflow, SIGSEGV,
           (const char *const[]){"heap buffer underflow", "bytes before the block", "of 4000 bytes",
                                 NULL});
    expect("double free", double_free, SIGABRT,
           (const char *const[]){"free(): double free", "of 24 bytes", "freed by thread", NULL});
    expect("interior free", interior_free, SIGABRT,
           (const char *const[]){"free(): pointer is not the start of the block", NULL});
    char out[1024];
    CHECK(run(wild_fault, out, sizeof out) == SIGSEGV && !strstr(out, "guarded"));

    /* the promises of malloc hold for guarded blocks */
    char *p = guarded(100);
    CHECK(p != NULL && (uintptr_t)p % 8 == 0 && malloc_usable_size(p) >= 100);
    char *q = guarded(64);
    CHECK(q != NULL && (uintptr_t)q % 16 == 0);
    memset(p, 7, 100);
    char *r = realloc(p, 5000);
    CHECK(r && !ay_guard_owns(r) && r[0] == 7 && r[99] == 7);
    free(r);
    free(q);
    char *z = calloc(1, 48);
    while (z && !ay_guard_owns(z))
        z = calloc(1, 48);
    CHECK(z && z[0] == 0 && z[47] == 0);
    free(z);
    return CHECK_DONE();
}

#define NBLOCKS 200000
static void *blocks[NBLOCKS];

static int rate_case(unsigned n) {
    unsigned guarded_count = 0;
    for (unsigned i = 0; i < NBLOCKS; i++) {
        blocks[i] = malloc(16 + (i % 64) * 16);
        guarded_count += ay_guard_owns(blocks[i]);
        if (guarded_count == 200) /* the slots are all live: no more samples */
            break;
    }
    for (unsigned i = 0; i < NBLOCKS && blocks[i]; i++)
        free(blocks[i]);
    unsigned want = NBLOCKS / n < 200 ? NBLOCKS / n : 200;
    fprintf(stderr, "guard_sample:%u: %u guarded blocks (about %u expected)\n", n, guarded_count,
            want);
    CHECK(guarded_count >= want / 2 && guarded_count <= want * 2);
    return CHECK_DONE();
}

static int off_case(void) {
    unsigned n = 0;
    for (unsigned i = 0; i < 20000; i++) {
        void *p = malloc(16 + i % 4000);
        n += ay_guard_owns(p);
        free(p);
    }
    CHECK_EQ_U(n, 0);
    return CHECK_DONE();
}

static int grow_case(void) {
    unsigned guarded_steps = 0;
    for (int round = 0; round < 2000; round++) {
        size_t n = 8;
        unsigned char *p = malloc(n);
        CHECK(p != NULL);
        memset(p, 0x11, n);
        while (n < 20000) {
            size_t m = n + n / 8 + 1;
            unsigned char *q = realloc(p, m);
            CHECK(q != NULL && q[0] == 0x11 && q[n - 1] == (n > 8 ? 0x22 : 0x11));
            guarded_steps += ay_guard_owns(q);
            memset(q + n, 0x22, m - n);
            p = q;
            n = m;
        }
        free(p);
        alloy_thread_flush(); /* the next round's blocks are fresh: sampling counts those */
    }
    fprintf(stderr, "grow: %u steps landed on a guarded block\n", guarded_steps);
    CHECK(guarded_steps > 0);
    return CHECK_DONE();
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "report"))
        return report_case();
    if (argc > 1 && !strcmp(argv[1], "overflow")) {
        overflow();
        return 1; /* not reached: the overflow faults */
    }
    if (argc > 2 && !strcmp(argv[1], "rate"))
        return rate_case((unsigned)atoi(argv[2]));
    if (argc > 1 && !strcmp(argv[1], "off"))
        return off_case();
    if (argc > 1 && !strcmp(argv[1], "grow"))
        return grow_case();
    fprintf(stderr, "usage: test_guard report | overflow | rate N | off | grow\n");
    return 2;
}
