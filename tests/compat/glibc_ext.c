/* SPDX-License-Identifier: MIT */
/* glibc_ext.c - glibc's malloc extensions as glibc's manual pages describe
 * them, checked on glibc itself and on alloy (preloaded): the same program,
 * the same checks, so that what alloy answers is what a program written
 * for glibc expects.
 *
 *   mallopt      1 on success, 0 for a value glibc refuses (its return
 *                values, parameter by parameter)
 *   mallinfo2    the bytes in use (uordblks + hblkhd) follow a 10 MiB
 *   mallinfo     block in and out; the same in int
 *   malloc_trim  1 after memory was freed and given back
 *   malloc_info  an XML document <malloc version="1">...</malloc>; EINVAL
 *                for options other than 0
 *   malloc_stats a report on stderr
 *   __libc_*     glibc's internal names are the same allocator as malloc:
 *                free() takes what __libc_malloc returned and the other
 *                way round (without them under alloy, free aborts)
 *
 * usage: glibc_ext PROVIDER  (a substring of the library that must provide
 * mallinfo2: libc.so or liballoy)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

void *__libc_malloc(size_t size);
void __libc_free(void *p);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t size);
void *__libc_memalign(size_t align, size_t size);

static void options(void) {
    /* glibc 2.36 refuses an M_MXFAST above 80 * sizeof(size_t) / 4 (or
     * below 0) and accepts anything else, unknown parameters and mmap
     * thresholds above 32 MiB too (older glibcs refused those) */
    CHECK_EQ_U(mallopt(M_MXFAST, 0), 1);
    CHECK_EQ_U(mallopt(M_MXFAST, 160), 1);
    CHECK_EQ_U(mallopt(M_MXFAST, 161), 0);
    CHECK_EQ_U(mallopt(M_MXFAST, -1), 0);
    CHECK_EQ_U(mallopt(M_MXFAST, 64), 1);
    CHECK_EQ_U(mallopt(M_MMAP_THRESHOLD, 32 << 20), 1);
    CHECK_EQ_U(mallopt(M_MMAP_THRESHOLD, (32 << 20) + 1), 1);
    CHECK_EQ_U(mallopt(M_MMAP_THRESHOLD, -1), 1);
    CHECK_EQ_U(mallopt(M_MMAP_THRESHOLD, 128 << 10), 1);
    CHECK_EQ_U(mallopt(M_TRIM_THRESHOLD, 128 << 10), 1);
    CHECK_EQ_U(mallopt(M_TOP_PAD, 0), 1);
    CHECK_EQ_U(mallopt(M_MMAP_MAX, 65536), 1);
    CHECK_EQ_U(mallopt(M_CHECK_ACTION, 3), 1);
    CHECK_EQ_U(mallopt(M_PERTURB, 0), 1);
    CHECK_EQ_U(mallopt(M_ARENA_TEST, 8), 1);
    CHECK_EQ_U(mallopt(M_ARENA_MAX, 0), 1);
    CHECK_EQ_U(mallopt(12345, 1), 1);
}

static size_t in_use2(void) {
    struct mallinfo2 m = mallinfo2();
    return m.uordblks + m.hblkhd;
}

static size_t in_use(void) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    struct mallinfo m = mallinfo();
#pragma GCC diagnostic pop
    return (size_t)m.uordblks + (size_t)m.hblkhd;
}

static void info(void) {
    size_t before = in_use2(), before_int = in_use();
    char *volatile p = malloc(10 << 20);
    memset(p, 1, 10 << 20);
    size_t during = in_use2(), during_int = in_use();
    CHECK(during >= before + (10 << 20));
    CHECK(during_int >= before_int + (10 << 20));
    struct mallinfo2 m = mallinfo2();
    CHECK(m.arena > 0 && m.uordblks > 0);
    free(p);
    CHECK(in_use2() + (10 << 20) <= during);
    CHECK(in_use() + (10 << 20) <= during_int);
}

static void trim(void) {
    enum { N = 4000 };
    static void *big[N], *pin[N];
    for (int i = 0; i < N; i++) {
        big[i] = malloc(8192);
        memset(big[i], 1, 8192);
        pin[i] = malloc(32); /* keeps the freed blocks apart (glibc) */
    }
    for (int i = 0; i < N; i++)
        free(big[i]);
    CHECK_EQ_U(malloc_trim(0), 1);
    for (int i = 0; i < N; i++)
        free(pin[i]);
}

static void xml(void) {
    FILE *f = tmpfile();
    CHECK(f != NULL);
    if (!f)
        return;
    CHECK_EQ_U(malloc_info(0, f), 0);
    CHECK_EQ_U(malloc_info(1, f), EINVAL);
    long n = ftell(f);
    char *text = calloc(1, (size_t)n + 1);
    rewind(f);
    CHECK_EQ_U(fread(text, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    CHECK(!strncmp(text, "<malloc version=\"1\">\n", 21));
    CHECK(n > 20 && !strcmp(text + n - 10, "</malloc>\n"));
    CHECK(strstr(text, "<heap nr=\"0\">") && strstr(text, "<total type=\"mmap\""));
    free(text);
}

static void stats(void) {
    FILE *f = tmpfile();
    int saved = dup(2);
    fflush(stderr);
    dup2(fileno(f), 2);
    malloc_stats();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    struct stat st;
    CHECK(fstat(fileno(f), &st) == 0 && st.st_size > 50);
    fclose(f);
}

static void libc_names(void) {
    char *a = __libc_malloc(100);
    CHECK(a != NULL);
    memset(a, 2, 100);
    free(a); /* the same allocator */
    char *b = malloc(100);
    memset(b, 3, 100);
    b = __libc_realloc(b, 5000);
    CHECK(b && b[0] == 3 && b[99] == 3);
    __libc_free(b);
    unsigned char *c = __libc_calloc(100, 10);
    bool zero = c != NULL;
    for (int i = 0; c && i < 1000; i++)
        zero &= c[i] == 0;
    CHECK(zero);
    c = realloc(c, 20000);
    free(c);
    void *d = __libc_memalign(4096, 100);
    CHECK(d && ((uintptr_t)d & 4095) == 0);
    free(d);
}

int main(int argc, char **argv) {
    Dl_info dl;
    void *sym = dlsym(RTLD_DEFAULT, "mallinfo2");
    const char *from = sym && dladdr(sym, &dl) && dl.dli_fname ? dl.dli_fname : "nothing";
    fprintf(stderr, "mallinfo2 comes from %s\n", from);
    if (argc != 2 || !strstr(from, argv[1])) {
        fprintf(stderr, "FAIL: expected mallinfo2 from %s\n", argc == 2 ? argv[1] : "(nothing)");
        return 1;
    }
    libc_names();
    info();
    trim();
    xml();
    stats();
    options();
    return CHECK_DONE();
}
