/* SPDX-License-Identifier: MIT */
/* child.h - run a test case in a forked child and keep what it wrote on
 * stderr: child_run returns the child's wait status (-1 when the pipe or the
 * fork failed), with out holding its stderr, NUL-terminated, cut at len - 1
 * bytes.  The case runs with the parent's heap; a case that returns makes
 * the child exit 0. */
#ifndef ALLOY_TEST_CHILD_H
#define ALLOY_TEST_CHILD_H
#include <stddef.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int child_run(void (*fn)(void), char *out, size_t len) {
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return -1;
    }
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(fds[0], out + n, len - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = 0;
    close(fds[0]);
    int status;
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return status;
}

#endif
