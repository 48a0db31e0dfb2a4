/* SPDX-License-Identifier: MIT */
/* consumer.c - a program built against an installed alloy (find_package or
 * pkg-config) by the install tests: it uses the malloc family under alloy_*
 * names, the version, the statistics API and an arena from <alloy/arena.h>,
 * and checks each result.  Usage: consumer [EXPECTED_VERSION]; prints
 * "consumer ok VERSION" and exits 0, or names the failed check and exits 1.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <alloy.h>
#include <alloy/arena.h>

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "consumer: check failed: %s\n", #cond);                                \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv) {
    const char *v = alloy_version();
    CHECK(v != NULL && strcmp(v, ALLOY_VERSION_STRING) == 0);
    if (argc > 1)
        CHECK(v != NULL && strcmp(v, argv[1]) == 0);

    /* malloc family */
    unsigned char *p = alloy_malloc(100);
    CHECK(p != NULL);
    if (p) {
        memset(p, 0xab, 100);
        CHECK(alloy_malloc_usable_size(p) >= 100);
        p = alloy_realloc(p, 5000);
        CHECK(p != NULL && p[99] == 0xab);
        alloy_free(p);
    }
    int *z = alloy_calloc(64, sizeof *z);
    CHECK(z != NULL);
    if (z) {
        int sum = 0;
        for (int i = 0; i < 64; i++)
            sum |= z[i];
        CHECK(sum == 0);
    }
    alloy_free(z);
    void *a = alloy_aligned_alloc(4096, 4096);
    CHECK(a != NULL && ((uintptr_t)a & 4095) == 0);
    alloy_free(a);
    errno = 0;
    CHECK(alloy_malloc(SIZE_MAX) == NULL && errno == ENOMEM);

    /* statistics */
    alloy_stats_t st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    CHECK(alloy_stats_read(&st) == 0);
    CHECK(st.version == ALLOY_STATS_VERSION && st.mapped > 0);

    /* a hot-path header: an arena on a stack buffer */
    char buf[256];
    alloy_arena_t ar;
    alloy_arena_init(&ar, buf, sizeof buf, NULL);
    char *x = alloy_arena_alloc(&ar, 40, 8);
    CHECK(x != NULL && x >= buf && x + 40 <= buf + sizeof buf);
    char *y = alloy_arena_alloc(&ar, 1000, 16); /* from upstream */
    CHECK(y != NULL && ((uintptr_t)y & 15) == 0);
    CHECK(alloy_arena_used(&ar) >= 1040);
    alloy_arena_destroy(&ar);

    if (failures)
        return 1;
    printf("consumer ok %s\n", v);
    return 0;
}
