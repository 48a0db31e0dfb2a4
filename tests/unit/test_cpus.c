/* SPDX-License-Identifier: MIT */
/* test_cpus.c - the CPU count alloy reads from /sys/devices/system/cpu/online
 * (topology.c, so that initialisation does not call sysconf, whose reading
 * faults in libc pages a small program never touches) agrees with sysconf's,
 * and the automatic heaps follow it where thread caches run (one per CPU, at
 * most 128); with per-CPU caches there is one (cpus-online-thread runs it
 * with percpu:off, cpus-online with the default). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloy.h"
#include "alloy/ctl.h"
#include "check.h"
#include "topology.h"

int main(void) {
    void *p = alloy_malloc(16); /* initialises alloy */
    CHECK(p != NULL);
    long want = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned got = ay_topology_online_cpus();
    printf("online CPUs: sysfs %u, sysconf %ld\n", got, want);
    CHECK(want > 0 && got == (unsigned)want);
    unsigned heaps = 0;
    size_t len = sizeof heaps;
    CHECK(alloy_ctl("opt.heaps", &heaps, &len, NULL, 0) == 0);
    const char *mode = NULL;
    len = sizeof mode;
    CHECK(alloy_ctl("percpu.mode", &mode, &len, NULL, 0) == 0 && mode != NULL);
    bool percpu = mode && strcmp(mode, "percpu") == 0;
    unsigned want_heaps = percpu ? 1 : got < 128 ? got : 128;
    printf("first tier %s: heaps %u (want %u)\n", mode ? mode : "?", heaps, want_heaps);
    CHECK(heaps == want_heaps);
    alloy_free(p);
    return CHECK_DONE();
}
