/* SPDX-License-Identifier: MIT */
/* fuzz_alloc.c - an API-sequence fuzzer for the malloc family.
 *
 * Each thread runs a random sequence of malloc, calloc, realloc,
 * reallocarray, posix_memalign, aligned_alloc, memalign, valloc, pvalloc,
 * malloc_usable_size, free, free_sized and free_aligned_sized over a table
 * of live blocks, with sizes from 0 to several MiB (class boundaries, page
 * multiples, and impossible sizes that must give NULL and ENOMEM) and
 * alignments up to 1 MiB (and ones that are not powers of two, which must be
 * refused, or rounded up by memalign).  Every live block holds a pattern
 * over its whole usable size, and the fuzzer checks:
 *   - the pattern, before every free and after every hand-off;
 *   - the prefix realloc must keep;
 *   - zeroes from calloc (blocks are recycled all the time, so most of them
 *     come from memory that held a pattern);
 *   - malloc_usable_size >= the size asked for, and all of it writable;
 *   - the alignment: what was asked, or malloc's (16 for a multiple of 16,
 *     else 8; 4 KiB above 256 KiB, the README's promise), a page for valloc
 *     and pvalloc.
 * Threads hand blocks to each other through a mailbox, so frees cross
 * threads, and a run may fork in the middle: the child goes on with its own
 * blocks (the other threads do not exist there), then frees everything.
 *
 *   fuzz_alloc [--seconds S | --ops N] [--threads T] [--seed N] [--forks F]
 *              [--quiet] [--selftest-corrupt]
 * A run lasts S seconds, or N operations in each thread (--ops: with one
 * thread and a seed, the same operations every time, however loaded the
 * machine).  Exit status 0, or 1 after printing the failed check, the seed
 * and the last operations.  --selftest-corrupt damages one live block on
 * purpose, after thread 0's 20000th operation, so that the run must fail
 * (the test fuzz-selftest: with --ops above 20000 the damaged block is
 * checked at the latest when the run frees what is left).  The settings
 * (ALLOY_CONF) apply as to any program: CI runs the release library with
 * sampled guards, the heap profiler and the fills on together as well
 * (tests/fuzz/CMakeLists.txt).  tools/fuzz.sh runs the short
 * mode (CI) and the long one.  With -DFUZZ_LIBFUZZER, the same engine is a
 * libFuzzer target instead (LLVMFuzzerTestOneInput: the input bytes are the
 * decisions; one thread, no fork).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void free_sized(void *p, size_t size);
void free_aligned_sized(void *p, size_t align, size_t size);
#ifdef FUZZ_GLIBC /* glibc 2.36 has neither (C23's, which alloy has) */
void free_sized(void *p, size_t size) { free(p); }
void free_aligned_sized(void *p, size_t align, size_t size) { free(p); }
#endif

/* Sizes the compiler must not see, or it would refuse the calls. */
static volatile size_t v_quarter = SIZE_MAX / 4, v_half = SIZE_MAX / 2, v_2_33 = (size_t)1 << 33;

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)
#define MAX_LIVE 2048             /* blocks per thread */
#define MAX_LIVE_BYTES (48 * MiB) /* per thread */
#define FULL_CHECK (64 * KiB)     /* larger blocks: pattern at sampled places */
#define LOG 48                    /* operations remembered for a report */

/* ---- where the decisions come from: a PRNG, or libFuzzer's bytes ---- */

typedef struct source {
    uint64_t state;       /* xorshift64* */
    const uint8_t *bytes; /* libFuzzer input, or NULL */
    size_t len, at;
} source_t;

static uint32_t draw(source_t *s, uint32_t bound) {
    uint64_t x;
    if (s->bytes) {
        if (s->at + 4 > s->len)
            return 0;
        uint32_t v;
        memcpy(&v, s->bytes + s->at, 4);
        s->at += 4;
        x = v;
    } else {
        s->state ^= s->state >> 12;
        s->state ^= s->state << 25;
        s->state ^= s->state >> 27;
        x = (s->state * 0x2545f4914f6cdd1dull) >> 32;
    }
    return bound ? (uint32_t)(x % bound) : (uint32_t)x;
}

/* ---- the blocks ---- */

typedef struct block {
    unsigned char *p;
    size_t size;   /* asked for */
    size_t usable; /* malloc_usable_size when made */
    size_t align;  /* what p must be aligned to */
    uint32_t seed; /* of its pattern */
    bool aligned;  /* from the aligned family (free_aligned_sized may be used) */
} block_t;

typedef struct thread_state {
    int id;
    source_t src;
    block_t live[MAX_LIVE];
    unsigned nlive;
    size_t live_bytes;
    char log[LOG][96];
    unsigned nlog;
    uint64_t ops;
    bool child; /* in a fork child */
} thread_state_t;

static uint64_t base_seed;
static volatile int stop;
static bool quiet, selftest_corrupt;
static unsigned forks_wanted;

static void note(thread_state_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(thread_state_t *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->log[t->nlog++ % LOG], sizeof t->log[0], fmt, ap);
    va_end(ap);
}

static void fail(thread_state_t *t, const char *what, const void *p) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&lock);
    fprintf(stderr, "fuzz_alloc: FAILED: %s (block %p), thread %d%s, seed %llu, after %llu ops\n",
            what, p, t->id, t->child ? " (fork child)" : "", (unsigned long long)base_seed,
            (unsigned long long)t->ops);
    fprintf(stderr, "fuzz_alloc: last operations, oldest first:\n");
    for (unsigned i = t->nlog > LOG ? t->nlog - LOG : 0; i < t->nlog; i++)
        fprintf(stderr, "  %s\n", t->log[i % LOG]);
    fflush(stderr);
    _exit(1);
}

static unsigned char pat(uint32_t seed, size_t i) {
    return (unsigned char)(seed ^ (i * 131u) ^ (i >> 7));
}

/* The bytes of a block of n bytes that carry its pattern: all of a small
 * block; of a larger one, the first and last 4 KiB and every 509th byte. */
static size_t next_sample(size_t n, size_t i) {
    if (n <= FULL_CHECK || i + 1 < 4 * KiB || i + 1 >= n - 4 * KiB)
        return i + 1;
    size_t j = (i + 1 + 508) / 509 * 509;
    return j < n - 4 * KiB ? j : n - 4 * KiB;
}

static void fill(block_t *b) {
    for (size_t i = 0; i < b->usable; i = next_sample(b->usable, i))
        b->p[i] = pat(b->seed, i);
}

static void check_pattern(thread_state_t *t, const block_t *b, size_t upto, const char *when) {
    for (size_t i = 0; i < upto; i = next_sample(b->usable, i))
        if (b->p[i] != pat(b->seed, i)) {
            char what[160];
            snprintf(what, sizeof what, "%s: byte %zu of %zu (usable %zu) is %#x, expected %#x",
                     when, i, b->size, b->usable, b->p[i], pat(b->seed, i));
            fail(t, what, b->p);
        }
}

static void check_zero(thread_state_t *t, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i = next_sample(n, i))
        if (p[i]) {
            char what[96];
            snprintf(what, sizeof what, "calloc: byte %zu of %zu is %#x, not 0", i, n, p[i]);
            fail(t, what, p);
        }
}

/* A new block of `size` bytes at p, aligned to `align`: check it and take
 * it in (fill it), unless `zeroed` asks for a calloc check first. */
static void adopt(thread_state_t *t, void *p, size_t size, size_t align, bool aligned,
                  bool zeroed) {
    if (!p)
        fail(t, "allocation failed for a possible size", p);
    if ((uintptr_t)p % align)
        fail(t, "misaligned block", p);
    size_t usable = malloc_usable_size(p);
    if (usable < size)
        fail(t, "malloc_usable_size is below the size asked for", p);
    if (zeroed)
        check_zero(t, p, size);
    block_t *b = &t->live[t->nlive++];
    *b = (block_t){p, size, usable, align, draw(&t->src, 0), aligned};
    t->live_bytes += usable;
    fill(b);
}

/* malloc's alignment promise */
static size_t min_align(size_t size) {
#ifndef FUZZ_GLIBC
    if (size > 256 * KiB)
        return 4096;
#endif
    return size % 16 == 0 ? 16 : 8;
}

/* ---- sizes and alignments ---- */

static const size_t class_ends[] = {128, 1024, 8192, 65536, 262144};
static const size_t class_steps[] = {8, 16, 128, 1024, 8192};

static size_t any_size(thread_state_t *t) {
    switch (draw(&t->src, 10)) {
    case 0: return draw(&t->src, 17); /* 0..16 */
    case 1:
    case 2:
    case 3: return draw(&t->src, 1025);
    case 4: { /* a class boundary, +-1 */
        unsigned band = draw(&t->src, 5);
        size_t start = band ? class_ends[band - 1] : 0;
        size_t k = 1 + draw(&t->src, (uint32_t)((class_ends[band] - start) / class_steps[band]));
        return start + k * class_steps[band] + draw(&t->src, 3) - 1;
    }
    case 5: return 1 + draw(&t->src, 64 * KiB);
    case 6: return (1 + draw(&t->src, 64)) * 4096 + draw(&t->src, 3) - 1; /* page multiples */
    case 7: return 200 * KiB + draw(&t->src, 200 * KiB); /* around the largest class */
    case 8:
        return draw(&t->src, 12) == 0 ? 1 * MiB + draw(&t->src, 7 * MiB) : draw(&t->src, 300 * KiB);
    default: return 1 + draw(&t->src, 4096);
    }
}

static size_t impossible_size(thread_state_t *t) {
    static const size_t sizes[] = {SIZE_MAX,
                                   SIZE_MAX - 1,
                                   SIZE_MAX - 4095,
                                   SIZE_MAX / 2 + 1,
                                   (size_t)PTRDIFF_MAX + 1,
                                   (size_t)PTRDIFF_MAX + 4096};
    return sizes[draw(&t->src, sizeof sizes / sizeof sizes[0])];
}

static size_t pow2_align(thread_state_t *t) {
    return (size_t)1 << (draw(&t->src, 4) ? 3 + draw(&t->src, 10)
                                          : 13 + draw(&t->src, 8)); /* 8 B .. 1 MiB */
}

static size_t odd_align(thread_state_t *t) {
    static const size_t aligns[] = {3, 5, 12, 24, 48, 96, 1000, 3000, 5000, 65535};
    return aligns[draw(&t->src, sizeof aligns / sizeof aligns[0])];
}

static size_t round_pow2(size_t a) {
    size_t r = 1;
    while (r < a)
        r <<= 1;
    return r;
}

/* ---- the operations ---- */

static void release(thread_state_t *t, unsigned i) {
    block_t b = t->live[i];
    t->live[i] = t->live[--t->nlive];
    t->live_bytes -= b.usable;
    check_pattern(t, &b, b.usable, "before free");
    switch (draw(&t->src, 3)) {
    case 0:
        note(t, "free(%p)", (void *)b.p);
        free(b.p);
        break;
    case 1:
        note(t, "free_sized(%p, %zu)", (void *)b.p, b.size);
        free_sized(b.p, b.size);
        break;
    default:
        if (b.aligned) {
            note(t, "free_aligned_sized(%p, %zu, %zu)", (void *)b.p, b.align, b.size);
            free_aligned_sized(b.p, b.align, b.size);
        } else {
            note(t, "free(%p)", (void *)b.p);
            free(b.p);
        }
    }
}

static bool room(thread_state_t *t, size_t size) {
    return t->nlive < MAX_LIVE && t->live_bytes + size < MAX_LIVE_BYTES;
}

static void expect_enomem(thread_state_t *t, void *p, const char *call) {
    if (p || errno != ENOMEM) {
        char what[96];
        snprintf(what, sizeof what, "%s of an impossible size: %p, errno %d", call, p, errno);
        fail(t, what, p);
    }
}

static void op_realloc(thread_state_t *t, bool array) {
    unsigned i = draw(&t->src, t->nlive);
    block_t *b = &t->live[i];
    if (draw(&t->src, 40) == 0) { /* impossible: NULL, ENOMEM, the block untouched */
        errno = 0;
        void *q = array ? reallocarray(b->p, v_half, 3) : realloc(b->p, impossible_size(t));
        note(t, "realloc%s(%p, impossible) = %p", array ? "array" : "", (void *)b->p, q);
        expect_enomem(t, q, array ? "reallocarray" : "realloc");
        check_pattern(t, b, b->usable, "after a failed realloc");
        return;
    }
    size_t size = any_size(t);
    if (size > b->size && !room(t, size - b->size))
        size = b->size / 2;
    check_pattern(t, b, b->usable, "before realloc");
    void *q;
    if (array && size > 0) {
        size_t n = 1 + draw(&t->src, 8), m = size / n + 1;
        size = n * m;
        q = reallocarray(b->p, n, m);
    } else {
        q = realloc(b->p, size);
    }
    note(t, "realloc(%p, %zu) = %p", (void *)b->p, size, q);
    if (size == 0) { /* glibc's rule, alloy's too: frees, returns NULL */
        if (q)
            free(q);
        t->live_bytes -= b->usable;
        t->live[i] = t->live[--t->nlive];
        return;
    }
    if (!q)
        fail(t, "realloc failed for a possible size", b->p);
    block_t old = *b;
    t->live[i] = t->live[--t->nlive];
    t->live_bytes -= old.usable;
    size_t keep = old.size < size ? old.size : size;
    /* the prefix realloc keeps: the old pattern, over what both hold */
    for (size_t k = 0; k < keep; k = next_sample(old.usable, k))
        if (((unsigned char *)q)[k] != pat(old.seed, k)) {
            char what[120];
            snprintf(what, sizeof what, "realloc lost byte %zu of %zu kept (from %zu to %zu)", k,
                     keep, old.size, size);
            fail(t, what, q);
        }
    adopt(t, q, size, min_align(size), false, false);
}

static void op_aligned(thread_state_t *t) {
    size_t size = any_size(t), align;
    void *p = NULL;
    int which = (int)draw(&t->src, 5);
    bool odd = draw(&t->src, 10) == 0, huge = draw(&t->src, 40) == 0;
    if (huge)
        size = impossible_size(t);
    else if (!room(t, size + MiB))
        return;
    align = odd ? odd_align(t) : pow2_align(t);
    errno = 0;
    switch (which) {
    case 0: {
        int rc = posix_memalign(&p, align, size);
        note(t, "posix_memalign(%zu, %zu) = %d, %p", align, size, rc, p);
        if (odd || align < sizeof(void *)) {
            if (rc != EINVAL)
                fail(t, "posix_memalign accepted an invalid alignment", p);
            return;
        }
        if (huge) {
            if (rc != ENOMEM)
                fail(t, "posix_memalign of an impossible size did not give ENOMEM", p);
            return;
        }
        if (rc)
            fail(t, "posix_memalign failed", p);
        break;
    }
    case 1: p = aligned_alloc(align, size); note(t, "aligned_alloc(%zu, %zu) = %p", align, size, p);
#ifdef FUZZ_GLIBC /* glibc's aligned_alloc is its memalign: rounded up */
        if (huge)
            return expect_enomem(t, p, "aligned_alloc");
        align = round_pow2(align);
        break;
#endif
        if (odd) {
            if (p || errno != EINVAL)
                fail(t, "aligned_alloc accepted an alignment that is not a power of two", p);
            return;
        }
        if (huge)
            return expect_enomem(t, p, "aligned_alloc");
        break;
    case 2:
        p = memalign(align, size);
        note(t, "memalign(%zu, %zu) = %p", align, size, p);
        if (huge)
            return expect_enomem(t, p, "memalign");
        align = round_pow2(align); /* glibc's rule: rounded up */
        break;
    case 3:
        p = valloc(huge ? size : size % (4 * MiB));
        note(t, "valloc(%zu) = %p", size, p);
        if (huge)
            return expect_enomem(t, p, "valloc");
        size %= 4 * MiB;
        align = 4096;
        break;
    default:
        p = pvalloc(huge ? size : size % (4 * MiB));
        note(t, "pvalloc(%zu) = %p", size, p);
        if (huge)
            return expect_enomem(t, p, "pvalloc");
        size %= 4 * MiB;
        align = 4096;
        size = (size + 4095) & ~(size_t)4095; /* pvalloc: whole pages */
#ifndef FUZZ_GLIBC /* alloy gives pvalloc(0) a page; glibc a minimal block */
        if (size == 0)
            size = 4096;
#endif
        break;
    }
    adopt(t, p, size, align < min_align(size) ? min_align(size) : align, true, false);
}

static void one_op(thread_state_t *t) {
    t->ops++;
    unsigned r = draw(&t->src, 100);
    if (t->nlive > 0 && (r < 30 || t->nlive == MAX_LIVE)) {
        release(t, draw(&t->src, t->nlive));
        return;
    }
    if (r < 50) {
        size_t size = any_size(t);
        if (!room(t, size))
            return;
        void *p = malloc(size);
        note(t, "malloc(%zu) = %p", size, p);
        adopt(t, p, size, min_align(size), false, false);
    } else if (r < 60) {
        size_t n = 1 + draw(&t->src, 64), m = any_size(t) / n;
        if (!room(t, n * m))
            return;
        void *p = calloc(n, m);
        note(t, "calloc(%zu, %zu) = %p", n, m, p);
        adopt(t, p, n * m, min_align(n * m), false, true);
    } else if (r < 62) {
        errno = 0;
        void *p;
        switch (draw(&t->src, 3)) {
        case 0: p = malloc(impossible_size(t)); break;
        case 1: p = calloc(v_quarter, 8); break;
        default: p = calloc(v_2_33, v_2_33);
        }
        note(t, "malloc/calloc(impossible) = %p", p);
        expect_enomem(t, p, "malloc/calloc");
    } else if (r < 78) {
        if (t->nlive)
            op_realloc(t, draw(&t->src, 4) == 0);
    } else if (r < 90) {
        op_aligned(t);
    } else if (r < 95) {
        if (t->nlive) {
            block_t *b = &t->live[draw(&t->src, t->nlive)];
            if (malloc_usable_size(b->p) != b->usable)
                fail(t, "malloc_usable_size changed under a live block", b->p);
            check_pattern(t, b, b->usable, "at malloc_usable_size");
        }
        if (malloc_usable_size(NULL) != 0)
            fail(t, "malloc_usable_size(NULL) is not 0", NULL);
    } else {
        free(NULL);
        free_sized(NULL, 16);
    }
}

/* ---- hand-off between threads ---- */

#define MAILBOX 64
static pthread_mutex_t mail_lock = PTHREAD_MUTEX_INITIALIZER;
static block_t mailbox[MAILBOX];
static unsigned nmail;

static void hand_off(thread_state_t *t) {
    if (t->child || t->nlive == 0)
        return;
    if (draw(&t->src, 2)) { /* post one */
        unsigned i = draw(&t->src, t->nlive);
        pthread_mutex_lock(&mail_lock);
        if (nmail < MAILBOX) {
            mailbox[nmail++] = t->live[i];
            t->live_bytes -= t->live[i].usable;
            t->live[i] = t->live[--t->nlive];
        }
        pthread_mutex_unlock(&mail_lock);
    } else if (t->nlive < MAX_LIVE) { /* take one: check it, then it is ours */
        pthread_mutex_lock(&mail_lock);
        bool got = nmail > 0;
        block_t b;
        if (got)
            b = mailbox[--nmail];
        pthread_mutex_unlock(&mail_lock);
        if (got) {
            check_pattern(t, &b, b.usable, "after a hand-off");
            t->live[t->nlive++] = b;
            t->live_bytes += b.usable;
        }
    }
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void drain(thread_state_t *t) {
    while (t->nlive)
        release(t, t->nlive - 1);
}

/* A fork in the middle: the child goes on with this thread's blocks for a
 * while (no other thread, no mailbox there), frees them all, and exits 0. */
static void fork_here(thread_state_t *t) {
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0)
        return;
    if (pid == 0) {
        t->child = true;
        for (int i = 0; i < 3000; i++)
            one_op(t);
        drain(t);
        _exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail(t, "the fork child failed", NULL);
}

static double deadline, start_time;
static uint64_t ops_wanted; /* --ops: operations per thread (0: run for the seconds) */
static unsigned forks_done;

/* How far the run is, from 0 to 1: by thread t's operations, or by time. */
static double progress(const thread_state_t *t) {
    if (ops_wanted)
        return (double)t->ops / (double)ops_wanted;
    return (now() - start_time) / (deadline - start_time);
}

static void *run_thread(void *arg) {
    thread_state_t *t = arg;
    while (!stop) {
        for (int i = 0; i < 256; i++)
            one_op(t);
        hand_off(t);
        if (selftest_corrupt && t->id == 0 && t->ops > 20000 && t->nlive) {
            t->live[0].p[0] ^= 0xff; /* a "bug": the next check of this block must fail */
            selftest_corrupt = false;
        }
        /* fork k of F at (k + 1) / (F + 1) of the run */
        if (t->id == 0 && forks_done < forks_wanted &&
            progress(t) > (double)(forks_done + 1) / (forks_wanted + 1)) {
            forks_done++;
            fork_here(t);
        }
        if (progress(t) >= 1) {
            if (!ops_wanted)
                stop = 1;
            break;
        }
    }
    return NULL;
}

#ifdef FUZZ_LIBFUZZER
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static thread_state_t t;
    memset(&t, 0, sizeof t);
    t.src.bytes = data;
    t.src.len = size;
    while (t.src.at + 4 <= t.src.len)
        one_op(&t);
    drain(&t);
    return 0;
}
#else
int main(int argc, char **argv) {
    double seconds = 5;
    unsigned nthreads = 3;
    base_seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    forks_wanted = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (!strcmp(argv[i], "--ops") && i + 1 < argc)
            ops_wanted = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            nthreads = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            base_seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--forks") && i + 1 < argc)
            forks_wanted = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quiet"))
            quiet = true;
        else if (!strcmp(argv[i], "--selftest-corrupt"))
            selftest_corrupt = true;
        else {
            fprintf(stderr, "usage: fuzz_alloc [--seconds S | --ops N] [--threads T] [--seed N] "
                            "[--forks F] [--quiet] [--selftest-corrupt]\n");
            return 2;
        }
    }
    if (nthreads < 1 || nthreads > 16)
        nthreads = 3;
    if (!quiet && ops_wanted)
        fprintf(stderr, "fuzz_alloc: seed %llu, %u threads, %llu operations each, up to %u forks\n",
                (unsigned long long)base_seed, nthreads, (unsigned long long)ops_wanted,
                forks_wanted);
    else if (!quiet)
        fprintf(stderr, "fuzz_alloc: seed %llu, %u threads, %.1f s, up to %u forks\n",
                (unsigned long long)base_seed, nthreads, seconds, forks_wanted);
    start_time = now();
    deadline = start_time + seconds;
    static thread_state_t states[16];
    pthread_t tid[16];
    for (unsigned i = 0; i < nthreads; i++) {
        states[i].id = (int)i;
        states[i].src.state = (base_seed + 0x9e3779b97f4a7c15ull * (i + 1)) | 1;
        if (i > 0 && pthread_create(&tid[i], NULL, run_thread, &states[i]) != 0)
            return 1;
    }
    run_thread(&states[0]);
    for (unsigned i = 1; i < nthreads; i++)
        pthread_join(tid[i], NULL);
    for (unsigned i = 0; i < nthreads; i++) /* the mailbox's blocks go to thread 0 */
        drain(&states[i]);
    for (unsigned i = 0; i < nmail; i++) {
        check_pattern(&states[0], &mailbox[i], mailbox[i].usable, "in the mailbox at the end");
        free(mailbox[i].p);
    }
    uint64_t total = 0;
    for (unsigned i = 0; i < nthreads; i++)
        total += states[i].ops;
    if (!quiet)
        fprintf(stderr, "fuzz_alloc: %llu operations, %u forks, no failure\n",
                (unsigned long long)total, forks_done);
    return 0;
}
#endif
