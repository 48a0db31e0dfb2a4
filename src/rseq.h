/* SPDX-License-Identifier: MIT */
/* rseq.h - restartable sequences through the C library's own registration.
 *
 * Linux's rseq(2) gives each thread a small area (struct rseq) that the
 * kernel keeps up to date: the CPU the thread runs on (cpu_id) and, from
 * Linux 6.3, its concurrency id (mm_cid): a number below the count of
 * possible CPUs, unique among the process's threads that run at the same
 * moment, and dense (near 0 when the process runs on few CPUs).  A
 * restartable sequence is a stretch of code, described by a descriptor
 * (struct rseq_cs: its start, its length and where to go on an abort),
 * that the thread arms by storing the descriptor's address in the area's
 * rseq_cs field: if the thread is preempted, migrated or interrupted by a
 * signal while inside it, the kernel sends it to the abort address, which
 * must follow the 4-byte signature the area was registered with.  A
 * sequence whose last instruction is its only store to shared data (the
 * commit) either happens whole or not at all, with respect to every other
 * thread that uses the same concurrency id: per-CPU data without atomic
 * instructions.
 *
 * glibc 2.35 and later registers an area for every thread, at the thread
 * pointer plus __rseq_offset (read at run time: it changed between glibc
 * 2.35 and 2.36), with the signature 0x53053053, and a second registration
 * fails, so alloy uses glibc's.  It writes only rseq_cs; cpu_id_start,
 * cpu_id, node_id and mm_cid are the kernel's.  __rseq_size says how much of
 * the area glibc's headers describe (20 on glibc 2.36), not how much it
 * registered (32, which covers mm_cid): the kernel's AT_RSEQ_FEATURE_SIZE
 * says whether mm_cid is filled in.
 *
 * alloy's per-CPU caches (cpucache.h) need glibc's registration, mm_cid and
 * x86-64; ay_rseq_init says whether they can run and, when not, why.  It
 * finds no registration when glibc is older than 2.35, when
 * GLIBC_TUNABLES=glibc.pthread.rseq=0 turned it off, or under valgrind
 * (which answers rseq with ENOSYS).  Threads that glibc did not create
 * (a raw clone) have no area: alloy does not support them in per-CPU mode.
 */
#ifndef ALLOY_RSEQ_H
#define ALLOY_RSEQ_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* The signature that precedes every abort handler (glibc's). */
#define AY_RSEQ_SIG 0x53053053
/* Offsets of the fields in struct rseq (the kernel's uapi linux/rseq.h). */
#define AY_RSEQ_CPU_ID 4
#define AY_RSEQ_CS 8
#define AY_RSEQ_MM_CID 24
#define AY_STR_(x) #x
#define AY_STR(x) AY_STR_(x)

/* Can the per-CPU sequences run here, and with which mode setting. */
typedef enum ay_percpu_setting { AY_PERCPU_AUTO = 0, AY_PERCPU_OFF = 1 } ay_percpu_setting_t;

/* The thread pointer's offset of the calling thread's rseq area (glibc's
 * __rseq_offset), valid when ay_rseq_usable. */
extern AY_HIDDEN long ay_rseq_off;

/* Decide once, at initialisation: true when glibc registered rseq areas, the
 * kernel fills mm_cid, and this build has the sequences (x86-64, not a
 * sanitizer flavour).  Otherwise false, and *why says why, in words for the
 * report. */
bool ay_rseq_usable(const char **why);

/* Possible CPUs, from sysfs (sysconf would fault in libc pages a small
 * program never touches): every mm_cid is below this; 0 when unknown. */
unsigned ay_rseq_possible_cpus(void);

/* The calling thread's concurrency id, as the kernel last wrote it (a plain
 * read: it may change at once; the sequences read it inside themselves). */
AY_INLINE unsigned ay_rseq_cid(void) {
#if defined(__x86_64__)
    uint32_t cid;
    __asm__ volatile("movl %%fs:" AY_STR(AY_RSEQ_MM_CID) "(%1), %0" : "=r"(cid) : "r"(ay_rseq_off));
    return cid;
#else
    return 0;
#endif
}

/* Make every restartable sequence of the process that is under way on any
 * CPU restart (membarrier's expedited rseq fence), so that data whose
 * sequences all miss from now on can be worked on by another thread.  False
 * when the kernel cannot (it lacks MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, or
 * the registration failed). */
bool ay_rseq_fence(void);

#endif
