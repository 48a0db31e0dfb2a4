/* SPDX-License-Identifier: MIT */
/* rseq.c - finding glibc's rseq registration, and the membarrier fence
 * (see rseq.h). */
#include "rseq.h"

#include <errno.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os.h"

/* glibc 2.35 and later export these; an older glibc leaves them NULL. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

#ifndef AT_RSEQ_FEATURE_SIZE
#define AT_RSEQ_FEATURE_SIZE 27
#endif
#define MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ_ (1 << 7)
#define MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ_ (1 << 8)

long ay_rseq_off;
static int fence_state; /* 0 not tried, 1 registered, -1 unavailable */

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define AY_RSEQ_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define AY_RSEQ_SANITIZED 1
#endif

bool ay_rseq_usable(const char **why) {
#if !defined(__x86_64__)
    *why = "the per-CPU sequences are written for x86-64 only";
    return false;
#elif defined(AY_RSEQ_SANITIZED)
    *why = "a sanitizer build (its instrumentation cannot see into the sequences)";
    return false;
#else
    if (&__rseq_size == NULL || &__rseq_offset == NULL) {
        *why = "the C library does not register rseq (glibc before 2.35)";
        return false;
    }
    if (__rseq_size == 0) {
        *why = "the C library did not register rseq (GLIBC_TUNABLES=glibc.pthread.rseq=0, a "
               "kernel without rseq, or valgrind)";
        return false;
    }
    if (getauxval(AT_RSEQ_FEATURE_SIZE) < AY_RSEQ_MM_CID + 4) {
        *why = "the kernel does not fill rseq's mm_cid (Linux before 6.3)";
        return false;
    }
    ay_rseq_off = (long)__rseq_offset;
    const char *tp;
    __asm__("movq %%fs:0, %0" : "=r"(tp));
    int32_t cpu =
        __atomic_load_n((const int32_t *)(tp + ay_rseq_off + AY_RSEQ_CPU_ID), __ATOMIC_RELAXED);
    if (ay_rseq_possible_cpus() == 0) {
        *why = "the possible CPUs are unknown (no /sys/devices/system/cpu/possible)";
        return false;
    }
    if (cpu < 0 || ay_rseq_cid() >= ay_rseq_possible_cpus()) {
        *why = "this thread's rseq area is not registered";
        return false;
    }
    *why = NULL;
    return true;
#endif
}

unsigned ay_rseq_possible_cpus(void) {
    static unsigned n;
    if (n)
        return n;
    /* "0-7", "0", or "0-3,8-11": one more than the highest number */
    char buf[256];
    long len = ay_os_read_file("/sys/devices/system/cpu/possible", buf, sizeof buf);
    unsigned hi = 0, v = 0;
    bool digits = false;
    for (long i = 0; i < len; i++) {
        if (buf[i] >= '0' && buf[i] <= '9') {
            v = v * 10 + (unsigned)(buf[i] - '0');
            digits = true;
        } else {
            if (digits && v + 1 > hi)
                hi = v + 1;
            v = 0;
            digits = false;
        }
    }
    if (digits && v + 1 > hi)
        hi = v + 1;
    n = hi; /* 0: unknown (per-CPU mode stays off) */
    return n;
}

AY_LATE_TEXT bool ay_rseq_fence(void) {
    int st = __atomic_load_n(&fence_state, __ATOMIC_ACQUIRE);
    if (st == 0) {
        int saved = errno;
        st = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ_, 0, 0) == 0
                 ? 1
                 : -1;
        errno = saved;
        __atomic_store_n(&fence_state, st, __ATOMIC_RELEASE);
    }
    if (st < 0)
        return false;
    int saved = errno;
    bool ok = syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ_, 0, 0) == 0;
    errno = saved;
    return ok;
}
