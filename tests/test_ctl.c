/* test_ctl.c - alloy_ctl: every name can be read, the writable ones round
 * trip, and the error codes are the documented ones. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "check.h"

/* "stats.heaps.<i>.x" -> "stats.heaps.0.x" */
static void instantiate(const char *pat, char *out, size_t n) {
    size_t o = 0;
    for (const char *p = pat; *p && o + 2 < n;) {
        if (*p == '<') {
            out[o++] = '0';
            p += 3;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = 0;
}

int main(void) {
    void *warm = malloc(100); /* something to count */

    /* every name is readable (actions take no value and are run instead) */
    unsigned names = 0;
    for (unsigned k = 0; alloy_ctl_name(k); k++, names++) {
        char name[128];
        instantiate(alloy_ctl_name(k), name, sizeof name);
        size_t len = 0;
        int r = alloy_ctl(name, NULL, &len, NULL, 0);
        if (r == EINVAL && len == 0) { /* an action */
            if (strstr(name, "destroy"))
                continue; /* heap 0 is automatic: tested below */
            CHECK(alloy_ctl(name, NULL, NULL, NULL, 0) == 0);
            continue;
        }
        CHECK(r == 0 && len >= 1 && len <= 8);
        uint64_t value[1] = {0};
        int rr = alloy_ctl(name, value, &len, NULL, 0);
        if (rr != 0)
            fprintf(stderr, "reading %s: %d\n", name, rr);
        CHECK(rr == 0);
    }
    CHECK(names > 60);

    /* values that mean something */
    const char *version;
    size_t len = sizeof version;
    CHECK(alloy_ctl("version", &version, &len, NULL, 0) == 0 && !strcmp(version, ALLOY_VERSION_STRING));
    uint64_t allocated = 0, active = 0, resident = 0, mapped = 0;
    len = sizeof(uint64_t);
    CHECK(alloy_ctl("stats.allocated", &allocated, &len, NULL, 0) == 0);
    CHECK(alloy_ctl("stats.active", &active, &len, NULL, 0) == 0);
    CHECK(alloy_ctl("stats.resident", &resident, &len, NULL, 0) == 0);
    CHECK(alloy_ctl("stats.mapped", &mapped, &len, NULL, 0) == 0);
    CHECK(allocated >= 100 && allocated <= active && active <= resident && resident <= mapped);
    uint64_t size = 0;
    CHECK(alloy_ctl("stats.classes.31.size", &size, &len, NULL, 0) == 0 && size == 384);
    unsigned limit = 0;
    size_t ulen = sizeof limit;
    CHECK(alloy_ctl("stats.classes.31.batch_limit", &limit, &ulen, NULL, 0) == 0 && limit == 682);

    /* writable names round-trip */
    int64_t decay = 250, got = 0;
    size_t ilen = sizeof got;
    CHECK(alloy_ctl("decay_ms", NULL, NULL, &decay, sizeof decay) == 0);
    CHECK(alloy_ctl("decay_ms", &got, &ilen, NULL, 0) == 0 && got == 250);
    decay = -1;
    CHECK(alloy_ctl("decay_ms", NULL, NULL, &decay, sizeof decay) == 0);
    CHECK(alloy_ctl("decay_ms", &got, &ilen, NULL, 0) == 0 && got == -1);
    decay = -7;
    CHECK(alloy_ctl("decay_ms", NULL, NULL, &decay, sizeof decay) == EINVAL);
    const char *pol = "clip", *pol_got = NULL;
    size_t plen = sizeof pol_got;
    CHECK(alloy_ctl("batch_policy", NULL, NULL, &pol, sizeof pol) == 0);
    CHECK(alloy_ctl("batch_policy", &pol_got, &plen, NULL, 0) == 0 && !strcmp(pol_got, "clip"));
    pol = "nonsense";
    CHECK(alloy_ctl("batch_policy", NULL, NULL, &pol, sizeof pol) == EINVAL);
    pol = "guard";
    CHECK(alloy_ctl("batch_policy", NULL, NULL, &pol, sizeof pol) == 0);
    bool on = true, on_got = false;
    size_t blen = sizeof on_got;
    CHECK(alloy_ctl("background_thread", NULL, NULL, &on, sizeof on) == 0);
    CHECK(alloy_ctl("background_thread", &on_got, &blen, NULL, 0) == 0 && on_got);
    on = false;
    CHECK(alloy_ctl("background_thread", NULL, NULL, &on, sizeof on) == 0);
    CHECK(alloy_ctl("background_thread", &on_got, &blen, NULL, 0) == 0 && !on_got);
    uint64_t e1 = 0, e2 = 0, one = 1;
    CHECK(alloy_ctl("epoch", &e1, &len, &one, sizeof one) == 0);
    CHECK(alloy_ctl("epoch", &e2, &len, NULL, 0) == 0 && e2 == e1 + 1);

    /* heaps: create, use, bind, destroy */
    unsigned id = 0, heap_now = 99;
    CHECK(alloy_ctl("heaps.create", &id, &ulen, NULL, 0) == 0 && id > 0);
    char name[64];
    snprintf(name, sizeof name, "stats.heaps.%u.allocated", id);
    CHECK(alloy_ctl(name, &allocated, &len, NULL, 0) == 0 && allocated == 0);
    CHECK(alloy_ctl("thread.heap", NULL, NULL, &id, sizeof id) == 0);
    CHECK(alloy_ctl("thread.heap", &heap_now, &ulen, NULL, 0) == 0 && heap_now == id);
    void *in_heap = malloc(1000);
    CHECK(alloy_ctl(name, &allocated, &len, NULL, 0) == 0 && allocated >= 1000);
    free(in_heap);
    unsigned zero = 0;
    CHECK(alloy_ctl("thread.heap", NULL, NULL, &zero, sizeof zero) == 0);
    snprintf(name, sizeof name, "heap.%u.destroy", id);
    CHECK(alloy_ctl(name, NULL, NULL, NULL, 0) == 0);
    CHECK(alloy_ctl(name, NULL, NULL, NULL, 0) == ENOENT); /* gone */
    CHECK(alloy_ctl("heap.0.destroy", NULL, NULL, NULL, 0) == EINVAL); /* automatic */
    CHECK(alloy_ctl("thread.tcache.flush", NULL, NULL, NULL, 0) == 0);
    uint64_t tbytes = 1;
    CHECK(alloy_ctl("thread.tcache.bytes", &tbytes, &len, NULL, 0) == 0 && tbytes == 0);

    /* the error codes */
    CHECK(alloy_ctl("no.such.name", &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats", &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats.allocatedx", &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl(NULL, &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats.heaps.200.allocated", &allocated, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats.classes.208.size", &size, &len, NULL, 0) == ENOENT);
    CHECK(alloy_ctl("stats.classes.01.size", &size, &len, NULL, 0) == ENOENT);
    size_t short_len = 4;
    CHECK(alloy_ctl("stats.allocated", &allocated, &short_len, NULL, 0) == EINVAL);
    CHECK(alloy_ctl("decay_ms", NULL, NULL, &decay, 4) == EINVAL);
    CHECK(alloy_ctl("stats.allocated", NULL, NULL, &allocated, sizeof allocated) == EPERM);
    CHECK(alloy_ctl("opt.decay_ms", NULL, NULL, &decay, sizeof decay) == EPERM);
    CHECK(alloy_ctl("version", NULL, NULL, &version, sizeof version) == EPERM);
    CHECK(alloy_ctl("thread.tcache.flush", &allocated, &len, NULL, 0) == EINVAL);
    free(warm);
    return CHECK_DONE();
}
