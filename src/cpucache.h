/* SPDX-License-Identifier: MIT */
/* cpucache.h - the per-CPU caches: the first tier when restartable
 * sequences can run (rseq.h), in place of the thread caches (tcache.h).
 *
 * One cache per concurrency id (rseq's mm_cid: one per CPU the process runs
 * on at a moment, dense from 0), so that cached memory follows the CPUs in
 * use, not the threads: a process with 64 threads on 2 CPUs has 2 caches,
 * and a block freed by one thread is handed out by the next malloc on that
 * CPU, whichever thread makes it.
 *
 * Layout, as TCMalloc's per-CPU slabs: the cache of id c is the region at
 * ay_cpu_base + (c << AY_CPU_SHIFT): first one list header per bin, at the
 * bin's byte offset (the same offsets as a thread cache's bins: the size
 * tables and the pagemap give them), then the slots, an array of block
 * pointers.  Bin b's list has a chunk of its region's slots, [first,
 * first + room), given and grown by the slow path (cpucache.c); its header
 * says which of them are in use:
 *   slots [begin, cur) hold free blocks, the newest at cur - 1;
 *   end - begin is the list's capacity now (its limit, from the batch
 *   policy, as a thread cache's); begin = first, and cur <= end <=
 *   first + room, while the list runs.
 * A region is mapped zero, and a zero header misses both ways (cur <= begin
 * and cur >= end): a region is set up by the slow path at its first use; a
 * header being worked on by another thread is stopped: begin = ~0 and
 * end = 0 (one 8-byte store), which every sequence misses on too.  A
 * header is started (begin and end, one 8-byte store) only by a sequence
 * of its cache's own id, so that no sequence reads a cur from before a
 * change with a begin or end from after it: a set-up or drained list stays
 * stopped until its cache's next slow path.
 *
 * malloc pops and free pushes with one restartable sequence each: arm,
 * read the id, find the header, check, move a slot, and commit by storing
 * cur, the one store to the cache.  A sequence that is preempted, migrated
 * or interrupted by a signal before that store restarts from the arming;
 * after it, it is done.  The fast paths do nothing else to the cache.
 *
 * The checks of a thread cache's lists hold: a free block's first word
 * holds its mark, ay_link_key (written by free inside its sequence,
 * before the commit); malloc checks the mark of the block it pops and
 * clears it, after the commit: a block freed twice before it was handed out
 * again is popped twice, and its second pop finds the 0 the first left
 * (a double free, reported before the block is handed out twice); a write
 * after free into the first word is found there too.  free's sequence
 * checks the pointer's low bits against the class's align mask (the
 * header's top byte, as a thread-cache bin's), before it writes the mark.
 *
 * Everything else is the slow path's (cpucache.c): refill on a miss, give
 * back on an overflow, the byte limit, flushes and drains.  A refill's
 * never-used objects (the run of a central fetch) go into the list
 * AY_CARVE_BATCH at a time, each marked as it goes in; the rest stays the
 * bin's reserve, in the cache's state and untouched, for the next misses,
 * as a thread cache keeps its run: a cache writes only objects it is about
 * to hand out.  The slow path
 * works on its own region through sequences that also check the id (a
 * thread that migrated stops and gives what it holds back to the central
 * tier), taking no lock around that work; the batch, the capacity and the
 * counters change under the cache's lock, tried only.  On another region
 * (a drain, under that cache's lock) it stops the headers first and fences
 * (ay_rseq_fence), so that no sequence that read a header before the stop
 * can still commit.
 */
#ifndef ALLOY_CPUCACHE_H
#define ALLOY_CPUCACHE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "rseq.h"
#include "secure.h"
#include "tcache.h"

#define AY_CPU_SHIFT 20  /* bytes of one region: 1 MiB, headers and slots */
#define AY_CPU_SLOT0 512 /* the first slot index: the headers' 4 KiB come first */
_Static_assert(AY_NUM_BINS *AY_BIN_BYTES <= AY_CPU_SLOT0 * 8, "the headers fit before the slots");

typedef struct ay_cpu_list {
    uint32_t begin; /* first slot of the list; ~0 while stopped */
    uint32_t end;   /* begin + capacity; 0 while stopped */
    uint32_t cur;   /* slots [begin, cur) hold free blocks (the sequences' commit) */
    uint32_t mask;  /* top byte: the class's align mask (tcache.h, AY_BIN_MASK_BYTE) */
} ay_cpu_list_t;
_Static_assert(sizeof(ay_cpu_list_t) == AY_BIN_BYTES, "a list header is a bin's size");

/* Per-CPU mode is on (set once, at initialisation).  Only objects compiled
 * with ALLOY_PERCPU (the default build's release and debug flavours) have
 * it: in any other (a build configured with cmake -DALLOY_PERCPU=OFF, the
 * secure flavour), it is the constant false, so that the fast paths hold no
 * test of the mode and no per-CPU code. */
#if ALLOY_PERCPU
extern AY_HIDDEN bool ay_cpu_mode;
#else
#define ay_cpu_mode false
#endif
/* The regions; region c at ay_cpu_base + (c << AY_CPU_SHIFT). */
extern AY_HIDDEN char *ay_cpu_base;

#if defined(__x86_64__)
/* clang-format off */
#if AY_TEST_RSEQ_UNARMED
/* A test flavour (tests/threads/CMakeLists.txt) whose sequences are never
 * armed: the kernel neither restarts nor aborts them, so that the tests
 * can show they catch what a preemption inside one does. */
#define AY_RSEQ_ARM "\n"
#else
#define AY_RSEQ_ARM "movq %[t], %%fs:" AY_STR(AY_RSEQ_CS) "(%[rs])\n"
#endif
/* The start of a restartable sequence: its descriptor (from label s%= to
 * label c%=, where the commit is done) in a section of its own, and its
 * abort handler (the signature, then a jump back to the arming) among the
 * cold code at the text's front, whose pages a process maps from its start
 * (at the text's end, a process's first abort faulted its page in), then
 * the arming (a store of the descriptor's address into the thread's
 * rseq_cs, through scratch register %[t]), then label s%=.  %[rs] is the
 * thread pointer's offset of the rseq area. */
#define AY_RSEQ_START                                                   \
    ".pushsection __rseq_cs, \"aw\"\n\t"                                \
    ".balign 32\n"                                                      \
    ".Lay_d%=:\n\t"                                                     \
    ".long 0, 0\n\t"                                                    \
    ".quad .Lay_s%=, .Lay_c%= - .Lay_s%=, .Lay_a%=\n\t"                 \
    ".popsection\n\t"                                                   \
    ".pushsection .text.unlikely, \"ax\"\n\t"                           \
    ".byte 0x0f, 0xb9, 0x3d\n\t"                                        \
    ".long " AY_STR(AY_RSEQ_SIG) "\n"                                   \
    ".Lay_a%=:\n\t"                                                     \
    "jmp .Lay_r%=\n\t"                                                  \
    ".popsection\n"                                                     \
    ".Lay_r%=:\n\t"                                                     \
    "leaq .Lay_d%=(%%rip), %[t]\n\t"                                    \
    AY_RSEQ_ARM                                                         \
    ".Lay_s%=:\n\t"
/* The region of the calling thread's id into %[t]: %[base] + id << shift. */
#define AY_RSEQ_REGION                                                  \
    "movl %%fs:" AY_STR(AY_RSEQ_MM_CID) "(%[rs]), %k[t]\n\t"            \
    "shlq $" AY_STR(AY_CPU_SHIFT) ", %[t]\n\t"                          \
    "addq %[base], %[t]\n\t"
/* The slow path's sequences work on cache %[c] only: a thread whose id is
 * no longer c jumps to `moved`. */
#define AY_RSEQ_SAME_ID                                                 \
    "cmpl %%fs:" AY_STR(AY_RSEQ_MM_CID) "(%[rs]), %k[c]\n\t"            \
    "jne %l[moved]\n\t"
/* The commit's label, after the one store that commits. */
#define AY_RSEQ_END ".Lay_c%=:\n"

/* The pop's sequence and its inputs, for the two macros below. */
#define AY_CPU_POP_SEQ(miss)                                            \
    AY_RSEQ_START AY_RSEQ_REGION                                        \
    "movl 8(%[t],%[o]), %k[c]\n\t"                                      \
    "cmpl (%[t],%[o]), %k[c]\n\t"                                       \
    "jbe %l[" #miss "]\n\t"                                             \
    "subl $1, %k[c]\n\t"                                                \
    "movq (%[t],%[c],8), %[p]\n\t"                                      \
    "movl %k[c], 8(%[t],%[o])\n"                                        \
    AY_RSEQ_END
#define AY_CPU_POP_IN(off, delta)                                       \
    [rs] "r"(ay_rseq_off), [base] "r"(ay_cpu_base + (delta)),           \
    [o] "r"((uintptr_t)(off))
/* malloc's pop from the calling CPU's list at byte offset off (delta: the
 * thread's, 0 or the distance to the null regions): the block, or a jump
 * to miss; after the commit, the block's claim (AY_CPU_CLAIM's check), or
 * a jump to bad.  The claim is in the same statement where the compiler
 * keeps an asm goto's outputs on its jumps too (GCC, clang from 16), so
 * that the block stays in %rax, where malloc returns it. */
#if defined(__clang__) && __clang_major__ < 16
#define AY_CPU_POP_CLAIM(p, off, delta, miss, bad)                      \
    do {                                                                \
        AY_CPU_POP(p, off, delta, miss);                                \
        AY_CPU_CLAIM(p, bad);                                           \
    } while (0)
#else
#define AY_CPU_POP_CLAIM(p, off, delta, miss, bad)                      \
    do {                                                                \
        uintptr_t t_, c_;                                               \
        __asm__ volatile goto(AY_CPU_POP_SEQ(miss)                      \
            "xorq %[m], (%[p])\n\t"                                     \
            "jne %l[" #bad "]"                                          \
            : [p] "=&a"(p), [t] "=&r"(t_), [c] "=&r"(c_)                \
            : AY_CPU_POP_IN(off, delta), [m] "r"(ay_cpu_mark())         \
            : "memory", "cc"                                            \
            : miss, bad);                                               \
    } while (0)
#endif
/* The pop alone (AY_CPU_POP_CLAIM without the claim). */
#define AY_CPU_POP(p, off, delta, miss)                                 \
    do {                                                                \
        uintptr_t t_, c_;                                               \
        __asm__ volatile goto(AY_CPU_POP_SEQ(miss)                      \
            : [p] "=&r"(p), [t] "=&r"(t_), [c] "=&r"(c_)                \
            : AY_CPU_POP_IN(off, delta)                                 \
            : "memory", "cc"                                            \
            : miss);                                                    \
    } while (0)

/* free's push of block p, whose mark is `mark`, onto the calling CPU's list
 * at byte offset off; a jump to miss when the list is full (or stopped, or
 * bin 0) or p is not aligned as the class's blocks are. */
#define AY_CPU_PUSH(p, mark, off, miss)                                 \
    do {                                                                \
        uintptr_t t_, c_;                                               \
        __asm__ volatile goto(AY_RSEQ_START AY_RSEQ_REGION              \
            "movl 8(%[t],%[o]), %k[c]\n\t"                              \
            "cmpl 4(%[t],%[o]), %k[c]\n\t"                              \
            "jae %l[" #miss "]\n\t"                                     \
            "testb %b[p], 15(%[t],%[o])\n\t"                            \
            "jne %l[" #miss "]\n\t"                                     \
            "movq %[m], (%[p])\n\t"                                     \
            "movq %[p], (%[t],%[c],8)\n\t"                              \
            "addl $1, %k[c]\n\t"                                        \
            "movl %k[c], 8(%[t],%[o])\n"                                \
            AY_RSEQ_END                                                 \
            : [t] "=&r"(t_), [c] "=&r"(c_)                              \
            : [rs] "r"(ay_rseq_off), [base] "r"(ay_cpu_base),           \
              [o] "r"((uintptr_t)(off)), [p] "r"(p), [m] "r"(mark)      \
            : "memory", "cc"                                            \
            : miss);                                                    \
    } while (0)

/* malloc's check of the block p it popped, which is also its clearing: its
 * first word must be its mark, and an exclusive or with the mark both tests
 * that and leaves the word 0 (handed out); a jump to bad otherwise (the
 * word then holds what was there xor the mark: ay_cpu_bad_block undoes it). */
#define AY_CPU_CLAIM(p, bad)                                            \
    __asm__ goto("xorq %[m], (%[q])\n\t"                                \
                 "jne %l[" #bad "]"                                     \
                 :                                                      \
                 : [m] "r"(ay_cpu_mark()), [q] "r"(p)                  \
                 : "memory", "cc"                                       \
                 : bad)
/* clang-format on */
#else
#define AY_CPU_POP_CLAIM(p, off, delta, miss, bad) goto miss
#define AY_CPU_PUSH(p, mark, off, miss) goto miss
#define AY_CPU_CLAIM(p, bad)                                                                       \
    do {                                                                                           \
        if ((*(uintptr_t *)(p) ^= ay_cpu_mark()) != 0)                                             \
            goto bad;                                                                              \
    } while (0)
#endif

/* The mark of a free block in a per-CPU list: the free lists' secret
 * itself.  It holds no address to hide (the lists are arrays), and a
 * reader of a free block who knows the block's address would learn the
 * secret from p ^ key as well; the block's address in it would cost malloc
 * and free an instruction or two each. */
AY_INLINE uintptr_t ay_cpu_mark(void) { return ay_link_key; }

/* ---- slow paths (cpucache.c) ---- */

/* Whether per-CPU caches can run: `percpu` allows them, the flavour and
 * the settings keep caches, and rseq can run (rseq.h).  Asked once at
 * initialisation, before the heaps are made, whose default count depends on
 * it (init.c); false sets the reason ay_cpu_mode_why gives. */
bool ay_cpu_can_run(void);
/* Once ay_cpu_can_run said yes: set up the per-CPU caches and turn per-CPU
 * mode on; false (their regions could not be had) keeps the thread caches. */
bool ay_cpu_init(void);
/* Why per-CPU mode is off ("" when it is on). */
const char *ay_cpu_mode_why(void);
/* malloc's miss on bin b: a block from the CPU's list after a refill (from
 * the transfer cache or heap h's central cache), or NULL when out of
 * memory. */
void *ay_cpu_refill(struct ay_heap *h, unsigned b);
/* free's slow path for small block p of bin b, checked: onto the CPU's
 * list, after giving a batch back when it is full (an overflow). */
void ay_cpu_push(struct ay_heap *h, unsigned b, void *p);
/* malloc popped p and found no mark (AY_CPU_CLAIM xored it into the
 * word): report it (a double free, or a write after free). */
AY_COLD __attribute__((noreturn)) void ay_cpu_bad_block(void *p);
/* Give every block of every CPU's cache back to the central tier. */
void ay_cpu_flush(void);
/* The background thread's round: the caches that no slow path used for
 * decay_ms are drained, as a miss's look does (once per decay round at
 * most), and when every cache that held blocks was idle, everything free
 * is purged.  Nothing in thread mode. */
void ay_cpu_decay_tick(void);
/* May a per-CPU cache hold blocks (a slow path put some in since its last
 * drain)?  False in thread mode.  (A racy read.) */
bool ay_cpu_holds(void);
/* Is p the newest block of the calling CPU's list of bin b?  (free's
 * slow-path check, as a thread cache's last freed block) */
bool ay_cpu_is_newest(unsigned b, const void *p);
/* Bytes in bin b of every per-CPU cache (a racy read, for stats). */
size_t ay_cpu_bytes(unsigned b);
/* Counters, summed over the caches. */
typedef struct ay_cpu_counts {
    uint64_t caches, misses, overflows, scavenges, drains;
    uint64_t moves; /* capacity moved from one bin to another */
} ay_cpu_counts_t;
void ay_cpu_counts(ay_cpu_counts_t *out);
/* Fork: every cache's lock, and the child's reset. */
void ay_cpu_lock_all(void);
void ay_cpu_unlock_all(void);
void ay_cpu_after_fork_child(void);

#endif
