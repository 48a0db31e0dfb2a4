/* SPDX-License-Identifier: MIT */
/* test_checked.c - the secure flavour's checked copies (src/checked.c):
 * memcpy, memmove, memset, strcpy, strcat, strncpy, read and recv, called
 * (through pointers, never inlined) to write n bytes from a destination in
 * a heap block, abort with "FN(): heap overflow" when the write would run
 * past the block's usable end, and write when it ends inside: for a small
 * block from its start and from inside it, and for a large block (1 MiB).
 * A destination that is not alloy's (the stack) is not checked.  Each case
 * runs in a forked child.  On the release library (ctest
 * checked-copies-release) every abort check must fail. */
#define _GNU_SOURCE
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

static void *(*volatile memcpy_p)(void *, const void *, size_t) = memcpy;
static void *(*volatile memmove_p)(void *, const void *, size_t) = memmove;
static void *(*volatile memset_p)(void *, int, size_t) = memset;
static char *(*volatile strcpy_p)(char *, const char *) = strcpy;
static char *(*volatile strcat_p)(char *, const char *) = strcat;
static char *(*volatile strncpy_p)(char *, const char *, size_t) = strncpy;
static ssize_t (*volatile read_p)(int, void *, size_t) = read;
static ssize_t (*volatile recv_p)(int, void *, size_t, int) = recv;

static char src[1 << 21]; /* what the copies read: 'x's, NUL-terminated where they need */

/* Each writes exactly n bytes from dst (n >= 3). */
static void w_memcpy(char *dst, size_t n) { memcpy_p(dst, src, n); }
static void w_memmove(char *dst, size_t n) { memmove_p(dst, src, n); }
static void w_memset(char *dst, size_t n) { memset_p(dst, 0x41, n); }
static void w_strcpy(char *dst, size_t n) {
    src[n - 1] = 0;
    strcpy_p(dst, src);
}
static void w_strcat(char *dst, size_t n) {
    dst[0] = 'a', dst[1] = 'b', dst[2] = 0;
    src[n - 3] = 0;
    strcat_p(dst, src);
}
static void w_strncpy(char *dst, size_t n) {
    src[1] = 0; /* the rest is zero padding */
    strncpy_p(dst, src, n);
}
static void w_read(char *dst, size_t n) {
    int fds[2];
    if (pipe(fds) != 0)
        _exit(3);
    for (size_t done = 0; done < n;) { /* the pipe holds 64 KiB: write what read takes */
        size_t k = n - done < 4096 ? n - done : 4096;
        if (write(fds[1], src, k) != (ssize_t)k)
            _exit(3);
        ssize_t r = read_p(fds[0], dst + done, n - done);
        if (r <= 0)
            _exit(3);
        done += (size_t)r;
    }
}
static void w_recv(char *dst, size_t n) {
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
        _exit(3);
    for (size_t done = 0; done < n;) {
        size_t k = n - done < 4096 ? n - done : 4096;
        if (write(fds[1], src, k) != (ssize_t)k)
            _exit(3);
        ssize_t r = recv_p(fds[0], dst + done, n - done, 0);
        if (r <= 0)
            _exit(3);
        done += (size_t)r;
    }
}

typedef struct fn {
    const char *name; /* as the message names it */
    void (*write)(char *dst, size_t n);
} fn_t;
static const fn_t fns[] = {
    {"memcpy()", w_memcpy}, {"memmove()", w_memmove}, {"memset()", w_memset},
    {"strcpy()", w_strcpy}, {"strcat()", w_strcat},   {"strncpy()", w_strncpy},
    {"read()", w_read},     {"recv()", w_recv},
};

/* the case the child runs */
static const fn_t *cur_fn;
static size_t cur_size;  /* the block's request */
static size_t cur_off;   /* the write starts this far into the block */
static long cur_excess;  /* bytes past the usable end (<= 0: ends inside) */
static int cur_on_stack; /* a stack buffer instead */

static void run_write(void) {
    if (cur_on_stack) {
        char buf[256];
        cur_fn->write(buf, sizeof buf);
        return;
    }
    char *p = malloc(cur_size);
    size_t usable = malloc_usable_size(p);
    cur_fn->write(p + cur_off, (size_t)((long)(usable - cur_off) + cur_excess));
    free(p);
}

/* aborted: the child aborted, naming the function (and a heap overflow) */
static void expect(const fn_t *fn, size_t size, size_t off, long excess, int on_stack, int aborts) {
    cur_fn = fn, cur_size = size, cur_off = off, cur_excess = excess, cur_on_stack = on_stack;
    char out[1024], msg[64];
    int status = child_run(run_write, out, sizeof out);
    snprintf(msg, sizeof msg, "%s: heap overflow", fn->name);
    int aborted = status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT &&
                  strstr(out, msg) != NULL;
    int clean = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (aborts ? !aborted : !clean)
        fprintf(stderr, "%s: size %zu, offset %zu, excess %ld%s: status %#x, stderr: %s\n",
                fn->name, size, off, excess, on_stack ? " (stack)" : "", status, out);
    if (aborts)
        CHECK(aborted);
    else
        CHECK(clean);
}

int main(void) {
    memset(src, 'x', sizeof src - 1);
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        const fn_t *f = &fns[i];
        expect(f, 40, 0, 0, 0, 0);       /* up to the usable end */
        expect(f, 40, 0, 1, 0, 1);       /* one byte past it */
        expect(f, 40, 8, 1, 0, 1);       /* from inside the block */
        expect(f, 1 << 20, 0, 0, 0, 0);  /* a large block, to its end */
        expect(f, 1 << 20, 0, 64, 0, 1); /* and past it */
        expect(f, 0, 0, 0, 1, 0);        /* the stack: not checked */
    }
    return CHECK_DONE();
}
