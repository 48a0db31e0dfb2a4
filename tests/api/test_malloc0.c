/* SPDX-License-Identifier: MIT */
/* test_malloc0.c USABLE - malloc(0) as the README's "Guarantees" say: a
 * unique block, aligned to 16 bytes, that can be freed, whose usable size
 * is USABLE (16; 8 in the secure flavour under secure_tags:true, where the
 * block's last 8 bytes are its tag), every byte of it writable. */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

/* malloc through a pointer: the compiler takes malloc(0)'s block for an
 * empty array (glibc's alloc_size) and would reject the writes below. */
static void *(*volatile alloc)(size_t) = malloc;

int main(int argc, char **argv) {
    if (argc != 2)
        return 2;
    size_t want = (size_t)strtoul(argv[1], NULL, 10);
    unsigned char *a = alloc(0), *b = alloc(0);
    CHECK(a && b && a != b);
    CHECK_EQ_U((uintptr_t)a % 16, 0);
    CHECK_EQ_U((uintptr_t)b % 16, 0);
    CHECK_EQ_U(malloc_usable_size(a), want);
    CHECK_EQ_U(malloc_usable_size(b), want);
    size_t n = malloc_usable_size(a) < want ? malloc_usable_size(a) : want; /* its own bytes only */
    memset(a, 0x11, n);
    memset(b, 0x22, n);
    for (size_t i = 0; i < n; i++)
        CHECK(a[i] == 0x11 && b[i] == 0x22);
    free(a);
    free(b);
    return CHECK_DONE();
}
