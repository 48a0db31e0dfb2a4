/* SPDX-License-Identifier: MIT */
/* percpu_report.c - the first tier in the statistics report
 * (check_stats_percpu.py): allocate and free so that a per-CPU cache misses,
 * overflows, is drained (alloy_thread_flush) and holds blocks at the end,
 * then print, at that quiet moment (one thread; printing does not
 * allocate), what alloy_ctl says of the first tier and the report in text
 * and in JSON:
 *
 *   ctl percpu.mode MODE
 *   ctl percpu.why WHY
 *   ctl percpu.bytes|caches|misses|overflows|scavenges|drains N   (one line each)
 *   --- text
 *   the summary
 *   --- json
 *   the JSON report
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"

#define N 32768 /* blocks, of four classes: more than their lists hold, so frees overflow */

static void to_stdout(void *opaque, const char *text, size_t len) {
    (void)opaque;
    fwrite(text, 1, len, stdout);
}

static const char *ctl_str(const char *name) {
    const char *s = NULL;
    size_t len = sizeof s;
    return alloy_ctl(name, &s, &len, NULL, 0) == 0 && s ? s : "?";
}

static unsigned long long ctl_u64(const char *name) {
    uint64_t v = 0;
    size_t len = sizeof v;
    return alloy_ctl(name, &v, &len, NULL, 0) == 0 ? (unsigned long long)v : ~0ull;
}

int main(void) {
    static void *p[N];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < N; i++)
            p[i] = malloc(64 + (size_t)(i % 4) * 16);
        for (int i = 0; i < N; i++)
            free(p[i]);
        if (round == 0)
            alloy_thread_flush(); /* per CPU: every CPU's cache given back (a drain) */
    }
    for (int i = 0; i < 64; i++) /* the cache holds blocks at the end */
        p[i] = malloc(256);
    for (int i = 0; i < 64; i++)
        free(p[i]);
    printf("ctl percpu.mode %s\n", ctl_str("percpu.mode"));
    printf("ctl percpu.why %s\n", ctl_str("percpu.why"));
    static const char *const counts[] = {"bytes",     "caches", "misses", "overflows",
                                         "scavenges", "drains", "moves"};
    for (unsigned i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        char name[32];
        snprintf(name, sizeof name, "percpu.%s", counts[i]);
        printf("ctl %s %llu\n", name, ctl_u64(name));
    }
    fflush(stdout);
    puts("--- text");
    fflush(stdout);
    alloy_stats_print(to_stdout, NULL, "");
    fflush(stdout);
    puts("--- json");
    fflush(stdout);
    alloy_stats_print(to_stdout, NULL, "J");
    fflush(stdout);
    return 0;
}
