/* SPDX-License-Identifier: MIT */
/* exit_pages.c - run under LD_PRELOAD=liballoy.so: counts the pages of
 * liballoy's text (argv[1] "text": its r-xp mapping) or of its read-only
 * data ("ro": its r--p mappings, the headers, symbols and relocations, the
 * .rodata and unwind tables, the relocated data) that a small program has
 * mapped when it exits, after the loader ran the library's destructors and
 * its _fini, and fails if they are more than the bound given (argv[2]).  A
 * program's peak RSS is often its RSS at exit, and the kernel maps the
 * 64 KiB around each page fault of a file ("fault-around"): code run at
 * exit from the text's end (crti.o's _fini, in .fini, which the linker put
 * after all of .text) mapped that end's 64 KiB too, and a read of .rodata
 * mapped the unwind tables after it (cmake/startup-text.ld).
 *
 * The program runs itself as a child (argv[3] "child": one malloc(16), a
 * free, then returns from main) under ptrace with PTRACE_O_TRACEEXIT, which
 * stops the child in exit(2), after the last user code ran and before its
 * memory is released; the parent then reads the child's /proc/PID/maps and
 * /proc/PID/pagemap (the present bit of each page of liballoy's r-xp
 * mapping).  Exits 77 (skipped) where ptrace is not allowed. */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib_pages.h"

int main(int argc, char **argv) {
    if (argc > 3 && !strcmp(argv[3], "child")) {
        char *volatile p = malloc(16);
        if (!p)
            return 2;
        p[0] = 1;
        free(p);
        return 0;
    }
    if (argc < 3 || (strcmp(argv[1], "text") && strcmp(argv[1], "ro")))
        return 2;
    const char *perm = !strcmp(argv[1], "text") ? "r-xp" : "r--p";
    long bound = atol(argv[2]);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    if (pid == 0) {
        if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0)
            _exit(77);
        char *args[] = {argv[0], argv[1], argv[2], "child", NULL};
        execv(argv[0], args);
        _exit(2);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return 2;
    if (WIFEXITED(st)) /* PTRACE_TRACEME refused */
        return WEXITSTATUS(st) == 77 ? 77 : 2;
    if (!WIFSTOPPED(st) || ptrace(PTRACE_SETOPTIONS, pid, NULL, (void *)PTRACE_O_TRACEEXIT) != 0 ||
        ptrace(PTRACE_CONT, pid, NULL, NULL) != 0)
        return 2;
    long present = -1, pages = 0;
    for (;;) {
        if (waitpid(pid, &st, 0) != pid)
            return 2;
        if (WIFEXITED(st) || WIFSIGNALED(st))
            break;
        int sig = 0;
        if (st >> 8 == (SIGTRAP | (PTRACE_EVENT_EXIT << 8)))
            present = lib_pages(pid, perm, &pages);
        else if (WIFSTOPPED(st))
            sig = WSTOPSIG(st);
        if (ptrace(PTRACE_CONT, pid, NULL, (void *)(intptr_t)sig) != 0)
            return 2;
    }
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || present < 0)
        return 2;
    printf("liballoy %s at exit: %ld of %ld pages mapped (bound %ld)\n", argv[1], present, pages,
           bound);
    if (!pages)
        return 3; /* not run under liballoy.so */
    return present > bound;
}
