/* SPDX-License-Identifier: MIT */
/* test_unwind.c - the cached CFI walk (ay_unwind) against libgcc's
 * unwinder (ay_unwind_libgcc) on the same stacks: nested functions built
 * without frame pointers, a callback from inside libc (qsort), deep
 * recursion past the 64-frame limit, a module loaded with dlopen, and many
 * threads at once (the lock-free rule cache).  Linked with liballoy.a. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "unwind.h"

typedef struct pair {
    uintptr_t fast[AY_UNWIND_MAX], slow[AY_UNWIND_MAX];
    unsigned nfast, nslow;
} pair_t;

/* Both captures from one frame: the fast walk starts at this function's
 * caller, libgcc's at the capture function itself, so compare from the
 * first frame both share (the caller's caller on). */
__attribute__((noinline)) static void capture(pair_t *p) {
    p->nfast = ay_unwind(p->fast, AY_UNWIND_MAX, 0, 0);
    p->nslow = ay_unwind_libgcc(p->slow, AY_UNWIND_MAX, 0, 0);
    __asm__ volatile("" ::: "memory");
}

static int same(const pair_t *p, const char *what) {
    /* fast[0] and slow[1] are the two return addresses into this file's
     * capture(); from fast[1] / slow[2] on the frames must be identical */
    int ok = p->nfast >= 2 && p->nslow >= 3 && p->nfast - 1 >= p->nslow - 2 - 1;
    unsigned n = p->nslow - 2 < p->nfast - 1 ? p->nslow - 2 : p->nfast - 1;
    for (unsigned i = 0; ok && i < n; i++)
        ok = p->fast[1 + i] == p->slow[2 + i];
    if (!ok) {
        fprintf(stderr, "%s: fast %u frames, libgcc %u\n", what, p->nfast, p->nslow);
        for (unsigned i = 0; i < 12; i++)
            fprintf(stderr, "  %2u %#lx %#lx\n", i, i < p->nfast ? p->fast[i] : 0,
                    i < p->nslow ? p->slow[i] : 0);
    }
    return ok;
}

__attribute__((noinline)) static void level3(pair_t *p) {
    capture(p);
    __asm__ volatile("");
}
__attribute__((noinline)) static void level2(pair_t *p, char *buf) {
    char local[256]; /* a frame with a size of its own */
    memset(local, 1, sizeof local);
    buf[0] = local[3];
    level3(p);
    __asm__ volatile("" ::: "memory");
}
__attribute__((noinline)) static void level1(pair_t *p) {
    char *buf = __builtin_alloca(100 + (p->nfast & 7)); /* a variable frame: CFA via rbp */
    level2(p, buf);
    __asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void recurse(pair_t *p, int n) {
    if (n == 0)
        capture(p);
    else
        recurse(p, n - 1);
    __asm__ volatile("" ::: "memory");
}

static pair_t sort_pair;
static int cmp(const void *a, const void *b) {
    static int once;
    if (!once++)
        capture(&sort_pair);
    return *(const int *)a - *(const int *)b;
}

static void *thread_main(void *arg) {
    int *bad = arg;
    for (int i = 0; i < 2000; i++) {
        pair_t p = {0};
        level1(&p);
        if (!same(&p, "thread"))
            (*bad)++;
    }
    return NULL;
}

int main(int argc, char **argv) {
    pair_t p = {0};
    level1(&p);
    CHECK(same(&p, "nested"));
    CHECK(p.nfast >= 6); /* level3 level2 level1 main __libc_start_call_main ... */
    level1(&p);          /* again, from the rule cache */
    CHECK(same(&p, "nested, cached"));
    memset(&p, 0, sizeof p);
    recurse(&p, 100);
    CHECK(p.nfast == AY_UNWIND_MAX && p.nslow == AY_UNWIND_MAX);
    CHECK(same(&p, "deep"));
    int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = 64 - i;
    qsort(v, 64, sizeof v[0], cmp);
    CHECK(same(&sort_pair, "qsort callback"));
    if (argc > 1) { /* a module loaded with dlopen calls back into this file */
        void *lib = dlopen(argv[1], RTLD_NOW);
        CHECK(lib != NULL);
        void (*call)(void (*)(void *), void *) =
            lib ? (void (*)(void (*)(void *), void *))dlsym(lib, "unwind_module_call") : NULL;
        CHECK(call != NULL);
        if (call) {
            memset(&p, 0, sizeof p);
            call((void (*)(void *))level1, &p);
            CHECK(same(&p, "dlopen"));
        }
    }
    int bad = 0;
    pthread_t t[4];
    for (int i = 0; i < 4; i++)
        CHECK(pthread_create(&t[i], NULL, thread_main, &bad) == 0);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    CHECK(bad == 0);
    return CHECK_DONE();
}
