/* SPDX-License-Identifier: MIT */
/* test_errors.c - invalid and double frees end the process with a message
 * naming the pointer.  Each case runs in a forked child; the parent checks
 * that the child aborted and what it printed.  Built against the release
 * library, the debug flavour (-DDEBUG_FLAVOUR) and the secure flavour
 * (-DSECURE_FLAVOUR).  A small block freed twice is caught by the release
 * flavour before it is handed out a second time (by malloc), by the others
 * at the second free; a pointer 8 bytes into a 48-byte block is caught at
 * the free by all three (the release flavour by its alignment, the others
 * by its offset); the secure flavour catches a pointer into a 512- or
 * 4096-byte block that is aligned to 256 bytes at the free too.
 * test_badinput.c has the rest of the bad-input table. */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

typedef void case_fn(void);

static void free_stack(void) {
    int x;
    free(&x);
}
static void free_wild(void) { free((void *)(uintptr_t)0x12345678); }
static void free_large_interior(void) {
    char *p = malloc(300000);
    free(p + 4096);
}
static void free_large_twice(void) {
    char *p = malloc(300000);
    free(p);
    free(p);
}
static void free_direct_twice(void) {
    char *p = malloc(40u << 20); /* above 32 MiB: a direct map */
    free(p);
    free(p);
}
static void realloc_wild(void) {
    int x;
    (void)!realloc(&x, 10);
}
/* realloc checks what free checks: a pointer into the middle of a large
 * block, or a freed one, is not a block */
static void realloc_large_interior(void) {
    char *p = malloc(300000);
    (void)!realloc(p + 4096, 400000); /* would move */
}
static void realloc_large_interior_in_place(void) {
    char *p = malloc(300000);
    (void)!realloc(p + 4096, 290000); /* would fit where it is */
}
static void realloc_large_freed(void) {
    char *p = malloc(300000);
    free(p);
    (void)!realloc(p, 10);
}
static void realloc_direct_interior(void) {
    char *p = malloc(40u << 20);
    (void)!realloc(p + 8192, 41u << 20);
}
static void free_big_large_twice(void) {
    char *p = malloc(8u << 20); /* several MiB: the page heap's */
    free(p);
    free(p);
}
static void *volatile sink;
static void free_small_twice(void) {
    char *p = malloc(48);
    free(p);
    free(p);
    sink = malloc(48);
    sink = malloc(48); /* would be p again */
}
/* an object the thread's cache holds but never handed out (lazy carving
 * keeps a run of them unwritten): freeing it is caught in the debug flavour */
static void free_small_never_handed_out(void) {
    char *p = NULL;
    for (int i = 0; i < 200; i++) /* the 8th fetch takes 128 objects, carved 32 at a time */
        p = malloc(200);
    free(p + 30 * 208); /* 30 objects on, in the same span: still in the run */
}
/* blocks above the quarantine's largest (4 KiB) skip it: their tag is
 * still checked and still says "free" once they are (secure flavour) */
static void free_medium_twice(void) {
    char *p = malloc(8000);
    free(p);
    free(p);
}
static void free_medium_overflow(void) {
    char *p = malloc(8000);
    size_t n = malloc_usable_size(p);
    memset(p, 0, n + 8); /* into the tag */
    free(p);
}
static void free_small_interior(void) {
    char *p = malloc(48);
    free(p + 8);
}
/* pointers into power-of-two blocks that are aligned as far as a smaller
 * class's blocks are: the secure flavour's fast path proves a 512- or
 * 4096-byte block's start by its address's low bits (tcache.h,
 * ay_bin_free_mask), and must find these out at the free, which is all
 * each case does */
static void free_512_interior_256(void) {
    char *p = malloc(512);
    free(p + 256);
}
static void free_512_interior_8(void) {
    char *p = malloc(512);
    free(p + 8);
}
static void free_4096_interior_2048(void) {
    char *p = malloc(4096);
    free(p + 2048);
}
static void free_4096_interior_256(void) {
    char *p = malloc(4096);
    free(p + 256);
}

/* Run fn in a child; return what it wrote on stderr, and whether it aborted. */
static int run_case(case_fn *fn, char *out, size_t outlen) {
    int status = child_run(fn, out, outlen);
    return status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void expect(const char *name, case_fn *fn, const char *message) {
    char out[1024];
    int aborted = run_case(fn, out, sizeof out);
    int named = strstr(out, message) != NULL && strstr(out, "(pointer 0x") != NULL;
    if (!aborted || !named)
        fprintf(stderr, "case %s: aborted=%d, stderr: %s\n", name, aborted, out);
    CHECK(aborted && named);
}

int main(void) {
    expect("free of a stack address", free_stack, "invalid pointer");
    expect("free of a wild address", free_wild, "invalid pointer");
    expect("free inside a large block", free_large_interior, "not the start of a block");
    /* (a freed large block's first page still maps to its span, free in the
     * page heap, in every flavour: pagelist.h; so its second free is a
     * double free) */
    const char *large_twice = "double free", *realloc_freed = "realloc(): double free";
    expect("double free of a large block", free_large_twice, large_twice);
    expect("double free of a direct map", free_direct_twice, "invalid pointer");
    expect("double free of an 8 MiB block", free_big_large_twice, large_twice);
    expect("realloc of a stack address", realloc_wild, "invalid pointer");
    expect("realloc inside a large block", realloc_large_interior,
           "realloc(): pointer is not the start of a block");
    expect("realloc inside a large block, in place", realloc_large_interior_in_place,
           "realloc(): pointer is not the start of a block");
    expect("realloc of a freed large block", realloc_large_freed, realloc_freed);
    expect("realloc inside a direct map", realloc_direct_interior, "realloc(): invalid pointer");
    /* every flavour: the block freed twice in a row, caught before it is
     * handed out twice */
    expect("double free of a small block", free_small_twice, "double free");
    expect("free inside a small block", free_small_interior, "not the start of a block");
#ifdef SECURE_FLAVOUR
    expect("free of p + 256 in a 512-byte block", free_512_interior_256,
           "free(): pointer is not the start of a block");
    expect("free of p + 8 in a 512-byte block", free_512_interior_8,
           "free(): pointer is not the start of a block");
    expect("free of p + 2048 in a 4096-byte block", free_4096_interior_2048,
           "free(): pointer is not the start of a block");
    expect("free of p + 256 in a 4096-byte block", free_4096_interior_256,
           "free(): pointer is not the start of a block");
    expect("double free of an 8000-byte block", free_medium_twice, "double free (block is free)");
    expect("overflow of an 8000-byte block", free_medium_overflow, "heap overflow");
#else
    (void)free_512_interior_256;
    (void)free_512_interior_8;
    (void)free_4096_interior_2048;
    (void)free_4096_interior_256;
    (void)free_medium_twice;
    (void)free_medium_overflow;
#endif
#if defined(DEBUG_FLAVOUR) /* (the secure flavour hands objects out in a random order) */
    expect("free of a small object never handed out", free_small_never_handed_out,
           "block is in the thread cache");
#else
    (void)free_small_never_handed_out;
#endif
    return CHECK_DONE();
}
