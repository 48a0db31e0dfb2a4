/* SPDX-License-Identifier: MIT */
/* faulty.c - libbench_faulty.so, a stand-in for an allocator that misbehaves,
 * used only by test_runner.py: when preloaded with BENCH_FAULTY=crash the
 * program dies of SIGSEGV at start-up, with BENCH_FAULTY=hang it never
 * finishes.  It lets the tests check that the runner records a crash or a
 * timeout and carries on with the other allocators. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

__attribute__((constructor)) static void faulty_start(void) {
    const char *mode = getenv("BENCH_FAULTY");
    if (!mode)
        return;
    if (strcmp(mode, "crash") == 0)
        raise(SIGSEGV);
    if (strcmp(mode, "hang") == 0)
        for (;;)
            pause();
}
