/* SPDX-License-Identifier: MIT */
/* test_fill.c - the debugging settings.  Usage: test_fill junk|zero|abort,
 * with ALLOY_CONF=junk:true, zero:true or abort_on_error:true (abort: an
 * impossible malloc aborts with the one-line message, no pointer in it). */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "child.h"

static volatile size_t huge = SIZE_MAX;

static void malloc_huge(void) {
    void *p = malloc(huge); /* out of memory: abort, not NULL */
    _exit(p ? 3 : 4);
}

static int all(const unsigned char *p, size_t from, size_t n, unsigned char v) {
    for (size_t i = from; i < n; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "junk";
    size_t sizes[] = {40, 3000, 300000};
    for (unsigned k = 0; k < 3; k++) {
        size_t n = sizes[k];
        unsigned char *p = malloc(n);
        memset(p, 0x11, n);
        free(p);
        unsigned char *q = malloc(n); /* likely the same block, now dirty */
        if (!strcmp(mode, "junk"))
            CHECK(all(q, 0, n, 0xa5));
        if (!strcmp(mode, "zero"))
            CHECK(all(q, 0, n, 0));
        if (!strcmp(mode, "junk") && k == 0) {
            free(q); /* small blocks stay mapped: the freed bytes read 0x5a */
            CHECK(all(q, 8, n, 0x5a));
        }
    }
    /* calloc is zero whatever the fills: junk and zero must not leave junk
     * in a calloc'ed block, of any size (direct maps above 1 MiB included) */
    size_t csizes[] = {24, 5000, 300000, 3u << 20};
    for (unsigned k = 0; k < 4; k++) {
        unsigned char *p = malloc(csizes[k]);
        memset(p, 0x77, csizes[k]);
        free(p);
        unsigned char *c = calloc(1, csizes[k]);
        CHECK(c && all(c, 0, csizes[k], 0));
        free(c);
    }
    if (!strcmp(mode, "abort")) {
        char out[512];
        int status = child_run(malloc_huge, out, sizeof out);
        CHECK(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
        CHECK(!strcmp(out, "alloy: out of memory (abort_on_error:true)\n"));
    }
    return CHECK_DONE();
}
