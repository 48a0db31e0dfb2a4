/* SPDX-License-Identifier: MIT */
/* test_conf_link.c - the link-time default settings string: a program that
 * defines `const char *alloy_malloc_conf` gets those settings, and
 * ALLOY_CONF, applied after it, overrides them key by key.
 *
 * Usage: test_conf_link DECAY_MS POLICY HEAPS
 *   the values alloy_ctl must report (HEAPS 0: one per CPU, not checked).
 * Built twice: with a good string ("decay_ms:123,batch_policy:pow2"), which
 * must print no warning, and with -DBAD_CONF, whose string has an unknown
 * key, which must print exactly one warning that names the key and the
 * string's source.  The warnings are printed at start-up, before main, so
 * the test runs itself again (/proc/self/exe) with stderr on a pipe. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "check.h"

#ifdef BAD_CONF
const char *alloy_malloc_conf = "decay_ms:123,no_such_key:1,batch_policy:pow2";
#else
const char *alloy_malloc_conf = "decay_ms:123,batch_policy:pow2";
#endif

/* What this program writes on stderr at start-up (run again as "quiet"). */
static size_t startup_stderr(char *out, size_t n) {
    int fds[2];
    if (pipe(fds) != 0)
        return 0;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        execl("/proc/self/exe", "test_conf_link", "quiet", (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fds[0], out + got, n - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = 0;
    close(fds[0]);
    int status = -1;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return got;
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "quiet")) {
        alloy_free(alloy_malloc(10));
        return 0;
    }
    if (argc < 4) {
        fprintf(stderr, "usage: test_conf_link DECAY_MS POLICY HEAPS\n");
        return 2;
    }
    int64_t want_decay = atoll(argv[1]);
    const char *want_policy = argv[2];
    unsigned want_heaps = (unsigned)atoi(argv[3]);

    int64_t decay = 0;
    size_t len = sizeof decay;
    CHECK(alloy_ctl("opt.decay_ms", &decay, &len, NULL, 0) == 0);
    CHECK_EQ_U(decay, want_decay);
    CHECK(alloy_ctl("decay_ms", &decay, &len, NULL, 0) == 0);
    CHECK_EQ_U(decay, want_decay);
    const char *policy = NULL;
    len = sizeof policy;
    CHECK(alloy_ctl("opt.batch_policy", &policy, &len, NULL, 0) == 0);
    CHECK(policy && !strcmp(policy, want_policy));
    if (policy && strcmp(policy, want_policy))
        fprintf(stderr, "opt.batch_policy is %s, expected %s\n", policy, want_policy);
    CHECK(alloy_ctl("batch_policy", &policy, &len, NULL, 0) == 0);
    CHECK(policy && !strcmp(policy, want_policy));
    if (want_heaps) {
        unsigned heaps = 0;
        len = sizeof heaps;
        CHECK(alloy_ctl("opt.heaps", &heaps, &len, NULL, 0) == 0);
        CHECK_EQ_U(heaps, want_heaps);
    }
    /* keys in neither string keep their defaults */
    bool b = true;
    len = sizeof b;
    CHECK(alloy_ctl("opt.tcache", &b, &len, NULL, 0) == 0 && b);
    CHECK(alloy_ctl("opt.junk", &b, &len, NULL, 0) == 0 && !b);
    CHECK(alloy_ctl("opt.background_thread", &b, &len, NULL, 0) == 0 && !b);
    uint64_t cap = 0;
    len = sizeof cap;
    CHECK(alloy_ctl("opt.batch_cap", &cap, &len, NULL, 0) == 0 && cap == 1024);
    /* and the policy is in force: the terminal batch of 384-byte objects is
     * 682 under clip and 512 under guard and pow2 */
    unsigned terminal = 0;
    len = sizeof terminal;
    CHECK(alloy_ctl("stats.classes.31.terminal_batch", &terminal, &len, NULL, 0) == 0);
    CHECK_EQ_U(terminal, strcmp(want_policy, "clip") ? 512 : 682);

    char err[2048];
    startup_stderr(err, sizeof err);
#ifdef BAD_CONF
    /* one warning, naming the key and where it came from; the good keys
     * around it still apply (checked above) */
    if (count_lines(err) != 1 || !strstr(err, "alloy_malloc_conf") || !strstr(err, "no_such_key"))
        fprintf(stderr, "start-up warnings: [%s]\n", err);
    CHECK_EQ_U(count_lines(err), 1);
    CHECK(strstr(err, "alloy_malloc_conf") != NULL &&
          strstr(err, "unknown key 'no_such_key'") != NULL);
#else
    if (err[0])
        fprintf(stderr, "unexpected start-up output: [%s]\n", err);
    CHECK_EQ_U(count_lines(err), 0);
#endif
    return CHECK_DONE();
}
