/* SPDX-License-Identifier: MIT */
/* test_secure.c - what the secure flavour adds, beyond test_badinput:
 *   - a span's objects are handed out in a random order (not by address);
 *   - a freed block is not handed out again by the next mallocs of its size,
 *     nor, once its class is in use, while 15 more of its size are freed
 *     (the quarantine);
 *   - a large block has an inaccessible page just before and just after it;
 *     a freed one keeps the one after it while its span waits for reuse,
 *     and the next block that fits is put against it;
 *   - usable sizes leave room for the tag, and writing all of them is fine.
 * Built against liballoy_secure.a (test secure-parts) and, to show that the
 * checks can fail, against liballoy.a (test secure-parts-release, which
 * must fail). */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloy.h"
#include "check.h"

static char *volatile hidden;
static volatile char sink;

static int dies_touching(char *p) {
    pid_t pid = fork();
    if (pid == 0) {
        hidden = p;
        sink = *hidden;
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV;
}

int main(void) {
    /* random order: of 400 fresh 48-byte blocks, in address order would be
     * every step up */
    enum { N = 400 };
    static char *b[N];
    unsigned up = 0;
    for (int i = 0; i < N; i++) {
        b[i] = malloc(48);
        up += i > 0 && b[i] > b[i - 1];
    }
    fprintf(stderr, "secure: %u of %u steps go up in address\n", up, N - 1);
    CHECK(up < (N - 1) * 3 / 4);
    for (int i = 0; i < N; i++)
        free(b[i]);

    /* quarantine: the block just freed is not among the next 64 of its size */
    char *p = malloc(80);
    free(p);
    int reused = 0;
    for (int i = 0; i < 64; i++) {
        b[i] = malloc(80);
        reused |= b[i] == p;
    }
    CHECK(!reused);
    for (int i = 0; i < 64; i++)
        free(b[i]);
    /* ... nor by the next 15 of its size while as many others are freed:
     * it waits for at least K + 1 more frees of its class, and the 64 frees
     * above have doubled the class's K from 2 to 16 (quarantine.h) */
    p = malloc(80);
    free(p);
    reused = 0;
    for (int i = 0; i < 15; i++) {
        char *q = malloc(80);
        reused |= q == p;
        free(q);
    }
    CHECK(!reused);

    /* guard pages around a large block */
    char *big = malloc(300000);
    memset(big, 1, malloc_usable_size(big));
    CHECK(dies_touching(big - 1));
    CHECK(dies_touching(big + malloc_usable_size(big)));
    free(big);

    /* a block of its own (4 MiB) starts its page-heap block, whose mapping's
     * guard page is before it: it keeps the 2 MiB alignment thp:auto gives
     * the block (large.c), and still has a guard on each side */
    char *own = malloc(4u << 20);
    CHECK(((uintptr_t)own & ((2u << 20) - 1)) == 0);
    CHECK(dies_touching(own - 1));
    CHECK(dies_touching(own + malloc_usable_size(own)));
    free(own);

    /* a freed large block keeps its guards and its span serves the next
     * block that fits it, against the same guard, with no system call; a
     * purge lifts the guards (pageheap.h, "guarded cache") */
    char *g = malloc(300000);
    char *g_end = g + malloc_usable_size(g);
    free(g);
    CHECK(dies_touching(g_end)); /* still a guard page, while the span waits */
    char *h = malloc(290000);
    size_t hu = malloc_usable_size(h);
    CHECK(h + hu == g_end); /* the same span, at its end */
    CHECK(dies_touching(h + hu));
    memset(h, 1, hu);
    free(h);
    alloy_purge();
    CHECK(!dies_touching(g_end)); /* freed to the page heap: accessible */

    /* the usable size is all usable (the tag is beyond it) */
    for (size_t n = 0; n < 2000; n += 7) {
        char *q = malloc(n);
        size_t u = malloc_usable_size(q);
        CHECK(u >= n);
        memset(q, 0x5a, u);
        free(q); /* the tag must still be intact */
    }
    return CHECK_DONE();
}
