/* SPDX-License-Identifier: MIT */
/* test_badinput.c - the README's bad-input table, as a test: every row is a
 * case that runs in a forked child, and the parent names what happened:
 *
 *   abort    the child aborted with a message (the message must contain the
 *            expected text);
 *   crash    it died of another signal (SIGSEGV, SIGBUS, ...);
 *   returns  malloc or realloc handed out the freed, interior or chosen
 *            pointer (the child saw it and said so);
 *   survives nothing was noticed, and the process went on.
 *
 * The expected outcome of each case is written down for each flavour the
 * test is built for: the release library (FLAVOUR_RELEASE), the debug
 * flavour (FLAVOUR_DEBUG), the secure flavour (FLAVOUR_SECURE) and glibc's
 * malloc (FLAVOUR_GLIBC, the same program without alloy).  The README's
 * table is these expectations; `test_badinput --table` prints this
 * flavour's column as it was measured.  The child reports with write(2),
 * never stdio, since the heap may be broken.
 */
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

#ifndef FLAVOUR_GLIBC
#include "alloy.h"
#endif

#if defined(FLAVOUR_RELEASE)
#define COL 0
#define FLAVOUR "release"
#elif defined(FLAVOUR_DEBUG)
#define COL 1
#define FLAVOUR "debug"
#elif defined(FLAVOUR_SECURE)
#define COL 2
#define FLAVOUR "secure"
#elif defined(FLAVOUR_GLIBC)
#define COL 3
#define FLAVOUR "glibc"
#else
#error "define FLAVOUR_RELEASE, FLAVOUR_DEBUG, FLAVOUR_SECURE or FLAVOUR_GLIBC"
#endif

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

/* Hide pointers from the compiler, which would warn about (or fold) uses
 * of freed memory. */
static void *volatile hide_v;
static void *hide(void *p) {
    hide_v = p;
    return hide_v;
}

/* Give every cached block back to the central cache (alloy), which checks
 * each of them; a no-op on glibc. */
static void flush(void) {
#ifndef FLAVOUR_GLIBC
    alloy_thread_flush();
#endif
}

/* Free enough other blocks to push a block out of the quarantine (the
 * secure flavour with quarantine:BYTES), and more. */
static void churn(void) {
    static void *blocks[100];
    for (int round = 0; round < 80; round++) {
        for (int i = 0; i < 100; i++)
            blocks[i] = malloc(32);
        for (int i = 0; i < 100; i++)
            free(blocks[i]);
    }
}

/* ---- the cases ---- */

static void double_free_small(void) {
    char *p = malloc(32);
    free(p);
    free(hide(p));
    char *a = malloc(32), *b = malloc(32);
    if (a == b)
        say("badinput: returns the same pointer twice\n");
}

/* the same, with another free in between */
static void double_free_small_later(void) {
    char *p = malloc(32), *q = malloc(32);
    free(p);
    free(q);
    free(hide(p));
    char *a = malloc(32), *b = malloc(32), *c = malloc(32);
    if (a == b || a == c || b == c)
        say("badinput: returns the same pointer twice\n");
}

/* freed, given back to the central cache, freed again: it is on the span's
 * list and on the thread's (a neighbour stays live, so the span stays); then
 * enough mallocs to take both */
static void double_free_small_central(void) {
    static char *got[300];
    char *p = malloc(32);
    hide(malloc(32));
    free(p);
    flush();
    free(hide(p));
    for (int i = 0; i < 300; i++) {
        got[i] = malloc(32);
        for (int j = 0; j < i; j++)
            if (got[j] == got[i])
                say("badinput: returns the same pointer twice\n");
    }
}

/* the same, then the thread cache goes back to the central cache */
static void double_free_small_later_flushed(void) {
    char *p = malloc(32), *q = malloc(32);
    free(p);
    free(q);
    free(hide(p));
    flush();
}

static void free_interior(size_t off) {
    char *p = malloc(32);
    free(hide(p + off));
    char *q = malloc(32);
    if (q == p + off)
        say("badinput: returns the interior pointer\n");
}
static void free_interior_16(void) { free_interior(16); }
static void free_interior_8(void) { free_interior(8); }
static void free_interior_1(void) { free_interior(1); }

/* p + off in a block of `size` bytes, then a malloc of that size */
static void free_interior_of(size_t off, size_t size) {
    char *p = malloc(size);
    free(hide(p + off));
    char *q = malloc(size);
    if (q == p + off)
        say("badinput: returns the interior pointer\n");
}
/* the row: 64-byte blocks are 64-aligned */
static void free_interior_16_of_64(void) { free_interior_of(16, 64); }
/* p + 16 in a class whose blocks are only 16-aligned (48 bytes) */
static void free_interior_16_of_48(void) { free_interior_of(16, 48); }
/* p + 8 in a class whose blocks are only 8-aligned (24 bytes) */
static void free_interior_8_of_24(void) { free_interior_of(8, 24); }

static void free_interior_16_flushed(void) {
    char *p = malloc(32);
    free(hide(p + 16));
    flush();
}

static void realloc_freed_small(void) {
    char *p = malloc(32);
    free(p);
    char *q = realloc(hide(p), 24); /* fits where it is */
    if (q == p)
        say("badinput: returns the freed pointer\n");
}

static void write_after_free(void) {
    char *p = malloc(32);
    free(p);
    memset(hide(p), 0x41, 32);
    char *a = malloc(32), *b = malloc(32);
    memset(a, 1, 32);
    memset(b, 2, 32);
}

/* the same, then enough frees for the block to leave any quarantine */
static void write_after_free_churned(void) {
    char *p = malloc(32);
    free(p);
    memset(hide(p), 0x41, 32);
    churn();
}

static _Alignas(64) char target[256];

static void chosen_address(void) {
    char *p = malloc(32);
    free(p);
    *(void **)hide(p) = target + 64;
    char *a = malloc(32), *b = malloc(32);
    if (a == target + 64 || b == target + 64)
        say("badinput: returns the chosen address\n");
}

/* memset through a pointer: a call, never inlined (the secure flavour
 * checks the calls) */
static void *(*volatile memset_call)(void *, int, size_t) = memset;

static void overflow_copy(void) {
    char *p = malloc(32), *q = malloc(32);
    memset_call(p, 0x41, malloc_usable_size(p) + 16);
    free(p);
    free(q);
    char *a = malloc(32), *b = malloc(32);
    memset(a, 1, 32);
    memset(b, 2, 32);
}

/* the same 16 bytes by plain stores */
static void overflow_next(void) {
    char *p = malloc(32), *q = malloc(32);
    volatile char *end = p + malloc_usable_size(p); /* (volatile: never made a memset call) */
    for (int i = 0; i < 16; i++)
        end[i] = 0x41;
    free(p);
    free(q);
    char *a = malloc(32), *b = malloc(32);
    memset(a, 1, 32);
    memset(b, 2, 32);
}

static void double_free_large(void) {
    char *p = malloc(300000);
    free(p);
    free(hide(p));
}

static void free_interior_large(void) {
    char *p = malloc(300000);
    free(hide(p + 4096));
}

/* ---- expectations, one column per flavour: release, debug, secure, glibc,
 * the secure flavour with secure_tags:true (FLAVOUR_SECURE, run with
 * ALLOY_CONF=secure_tags:true: ctest badinput-secure-tags) and the secure
 * flavour with its quarantine on (FLAVOUR_SECURE, run with a quarantine
 * setting other than 0: ctest badinput-secure-quarantine); each of the last
 * two is the secure column where a case gives none ---- */

typedef struct expect {
    const char *outcome; /* abort, crash, returns, survives */
    const char *message; /* for abort: text the message must contain (NULL: any) */
} expect_t;

typedef struct bad_case {
    const char *name;
    const char *what; /* the README's words for the row */
    void (*fn)(void);
    expect_t want[6];
} bad_case_t;

#define ABORT(m)                                                                                   \
    { "abort", m }
#define RETURNS                                                                                    \
    { "returns", NULL }
#define SURVIVES                                                                                   \
    { "survives", NULL }
#define CRASH                                                                                      \
    { "crash", NULL }
#define NA                                                                                         \
    { NULL, NULL } /* not run for this flavour */

static const bad_case_t cases[] = {
    {"double-free-small",
     "double free of a small block, then two `malloc(32)`",
     double_free_small,
     {ABORT("malloc(): double free"), ABORT("free(): double free"), ABORT("free(): double free"),
      ABORT("double free detected in tcache")}},
    {"double-free-small-later",
     "the same with another free in between (`free(p); free(q); free(p)`), then three "
     "`malloc(32)`",
     double_free_small_later,
     {ABORT("malloc(): double free"), ABORT("free(): double free"), ABORT("free(): double free"),
      ABORT("double free detected in tcache")}},
    {"double-free-small-central",
     "`free(p)`, the thread's cache goes back (`alloy_thread_flush`), `free(p)`, then 300 "
     "`malloc(32)`",
     double_free_small_central,
     {ABORT("malloc(): double free"), ABORT("free(): double free"), ABORT("free(): double free"),
      ABORT("double free detected in tcache")}},
    {"double-free-small-later-flushed",
     "... then the thread's cache goes back (`alloy_thread_flush`)",
     double_free_small_later_flushed,
     {ABORT("double free"), ABORT("free(): double free"), ABORT("free(): double free"), NA}},
    {"free-interior-16",
     "`free(p+16)` on a 32-byte block, then `malloc(32)`",
     free_interior_16,
     {ABORT("free(): pointer is not the start of a block"), ABORT("not the start of a block"),
      ABORT("not the start of a block"), ABORT("free(): invalid pointer")}},
    {"free-interior-16-of-64",
     "`free(p+16)` on a 64-byte block, then `malloc(64)`",
     free_interior_16_of_64,
     {ABORT("free(): pointer is not the start of a block"), ABORT("not the start of a block"),
      ABORT("not the start of a block"), ABORT("free(): invalid pointer")}},
    {"free-interior-16-of-48",
     "`free(p+16)` on a 48-byte block, then `malloc(48)`",
     free_interior_16_of_48,
     {RETURNS, ABORT("not the start of a block"), ABORT("not the start of a block"),
      ABORT("free(): invalid pointer")}},
    {"free-interior-8",
     "`free(p+8)` on a 32-byte block, then `malloc(32)`",
     free_interior_8,
     {ABORT("free(): pointer is not the start of a block"), ABORT("not the start of a block"),
      ABORT("not the start of a block"), ABORT("free(): invalid pointer")}},
    {"free-interior-1",
     "`free(p+1)` on a small block, then `malloc(32)`",
     free_interior_1,
     {ABORT("free(): pointer is not the start of a block"), ABORT("not the start of a block"),
      ABORT("not the start of a block"), ABORT("free(): invalid pointer")}},
    {"free-interior-8-of-24",
     "`free(p+8)` on a 24-byte block, then `malloc(24)`",
     free_interior_8_of_24,
     {RETURNS, ABORT("not the start of a block"), ABORT("not the start of a block"),
      ABORT("free(): invalid pointer")}},
    {"free-interior-16-flushed",
     "`free(p+16)`, then the thread's cache goes back",
     free_interior_16_flushed,
     {ABORT("not the start of a block"), ABORT("not the start of a block"),
      ABORT("not the start of a block"), NA}},
    {"realloc-freed-small",
     "`realloc` of a freed small block (to a size that fits)",
     realloc_freed_small,
     {ABORT("realloc(): double free"), ABORT("realloc(): double free"),
      ABORT("realloc(): double free"), RETURNS}},
    {"write-after-free",
     "write after free (32 bytes), then two `malloc(32)`",
     write_after_free,
     {ABORT("free list corrupted"), ABORT("free list corrupted"), ABORT("free list corrupted"),
      SURVIVES, NA, SURVIVES}},
    {"write-after-free-churned",
     "the same, then 8000 more `malloc`/`free`",
     write_after_free_churned,
     {ABORT("free list corrupted"), ABORT("free list corrupted"), ABORT("free list corrupted"),
      SURVIVES, NA, ABORT("free(): a block was written to after it was freed")}},
    {"chosen-address",
     "write a chosen address into a freed block, then two `malloc(32)`",
     chosen_address,
     {ABORT("free list corrupted"), ABORT("free list corrupted"), ABORT("free list corrupted"),
      SURVIVES, NA, SURVIVES}},
    {"overflow-copy",
     "16-byte overflow past `malloc_usable_size` by `memset` (a call), then `free`",
     overflow_copy,
     {SURVIVES, SURVIVES, ABORT("memset(): heap overflow"), ABORT("double free or corruption")}},
    {"overflow-next",
     "the same by plain stores (or an inlined copy)",
     overflow_next,
     {SURVIVES, SURVIVES, NA, ABORT("double free or corruption"), ABORT("free(): heap overflow")}},
    {"double-free-large",
     "double free of a large block (300 KB)",
     double_free_large,
     {ABORT("free(): double free"), ABORT("free(): double free"), ABORT("free(): double free"),
      CRASH}},
    {"free-interior-large",
     "`free(p+4096)` on a large block",
     free_interior_large,
     {ABORT("not the start of a block"), ABORT("not the start of a block"),
      ABORT("not the start of a block"), ABORT("free(): invalid pointer")}},
};
#define NCASES (sizeof cases / sizeof cases[0])

/* Run fn in a child: the outcome, and what it wrote on stderr. */
static const char *run_case(void (*fn)(void), char *out, size_t outlen) {
    int status = child_run(fn, out, outlen);
    if (status == -1)
        return "error";
    if (WIFSIGNALED(status))
        return WTERMSIG(status) == SIGABRT ? "abort" : "crash";
    if (strstr(out, "badinput: returns"))
        return "returns";
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "survives" : "error";
}

/* The first line of the message, for the table. */
static void first_line(const char *out, char *line, size_t len) {
    const char *start = out;
    while (*start == '\n')
        start++;
    size_t i = 0;
    while (start[i] && start[i] != '\n' && i + 1 < len) {
        line[i] = start[i] == '|' ? '/' : start[i];
        i++;
    }
    line[i] = 0;
}

int main(int argc, char **argv) {
    int table = argc > 1 && !strcmp(argv[1], "--table");
    const char *conf = getenv("ALLOY_CONF");
    int tags = COL == 2 && conf && strstr(conf, "secure_tags:true");
    const char *qset = conf ? strstr(conf, "quarantine:") : NULL;
    int quarantine = COL == 2 && qset && qset[strlen("quarantine:")] != '0';
    for (size_t i = 0; i < NCASES; i++) {
        const bad_case_t *c = &cases[i];
        const expect_t *want = &c->want[COL];
        if (tags && (c->want[4].outcome || !want->outcome))
            want = &c->want[4];
        if (quarantine && c->want[5].outcome)
            want = &c->want[5];
        if (!want->outcome)
            continue;
        char out[2048], line[200];
        const char *got = run_case(c->fn, out, sizeof out);
        first_line(out, line, sizeof line);
        int ok = !strcmp(got, want->outcome) &&
                 (strcmp(got, "abort") || !want->message || strstr(out, want->message));
        if (table)
            printf("| %s | %s | %s: %s |\n", c->name, c->what, got, line);
        if (!ok)
            fprintf(stderr, "case %s (%s): expected %s%s%s, got %s; stderr: %s\n", c->name, FLAVOUR,
                    want->outcome, want->message ? " with " : "",
                    want->message ? want->message : "", got, out);
        CHECK(ok);
    }
    return CHECK_DONE();
}
