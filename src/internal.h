/* SPDX-License-Identifier: MIT */
/* internal.h - definitions every allocator module shares: branch hints,
 * attributes, build-flavour switches, relaxed atomics.  Macros, constants
 * and one inline helper (ay_is_pow2): no state lives here. */
#ifndef ALLOY_INTERNAL_H
#define ALLOY_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy.h"
#include "unchecked.h"

#define AY_LIKELY(x) __builtin_expect(!!(x), 1)
#define AY_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define AY_NOINLINE __attribute__((noinline))
#define AY_INLINE static inline __attribute__((always_inline))
#define AY_COLD __attribute__((cold))
/* A function that every program runs, once or once a thread (the
 * process's set-up, a thread's first allocation), but whose module is
 * linked among the ones a small program never runs (CMakeLists.txt,
 * ALLOY_STARTUP_MODULES): gcc's .text.startup, the section of the
 * constructors, which the default linker script gathers at the front of
 * liballoy.so's text, so that the function does not make the kernel map
 * another 64 KiB of it (test startup-text-pages). */
#define AY_STARTUP_TEXT __attribute__((section(".text.startup")))
/* The opposite, for a function of a start-up module (CMakeLists.txt,
 * ALLOY_STARTUP_MODULES) that a small program does not run: liballoy.so's
 * linker script puts it after the rest of the text (cmake/startup-text.ld). */
#define AY_LATE_TEXT __attribute__((section(".text.alloy_late")))
#define AY_CACHELINE 64
/* One step of a spin-wait: the CPU's pause hint (x86 `pause`, arm64
 * `yield`), or nothing but a compiler barrier elsewhere. */
#if defined(__x86_64__) || defined(__i386__)
#define AY_CPU_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define AY_CPU_PAUSE() __asm__ __volatile__("yield")
#else
#define AY_CPU_PAUSE() __asm__ __volatile__("" ::: "memory")
#endif
/* Reads of counters that other threads write with plain stores, on purpose
 * (stats snapshots): ThreadSanitizer is told not to report them. */
#define AY_NO_SANITIZE_THREAD __attribute__((no_sanitize("thread")))
/* Globals shared between modules: hidden, so that code reaches them without
 * going through the GOT. */
#define AY_HIDDEN __attribute__((visibility("hidden")))

/* Debug level, set by the build: 0 for the release flavour, 3 for the checked
 * flavour (liballoy_debug), which validates every free and walks the
 * structures' invariants.  Tested in ordinary ifs so both are type-checked. */
#ifndef AY_DEBUG_LEVEL
#define AY_DEBUG_LEVEL 0
#endif
static const int ay_debug = AY_DEBUG_LEVEL;
/* Per-CPU caches (cpucache.h) are built in where this is 1: CMakeLists.txt
 * sets it for the release and debug flavours' objects unless the build is
 * configured with cmake -DALLOY_PERCPU=OFF. */
#ifndef ALLOY_PERCPU
#define ALLOY_PERCPU 0
#endif
/* The secure flavour (liballoy_secure, built with AY_SECURE=1: secure.h),
 * and the one part of it that a module below secure.h needs: guard pages
 * around the mappings of chunks (AY_SECURE_GUARDS, os.h's
 * ay_os_map_chunk).  A secure build can turn it off (-DAY_SECURE_GUARDS=0)
 * to measure what it costs; secure.h has the other parts' switches. */
#ifndef AY_SECURE
#define AY_SECURE 0
#endif
#ifndef AY_SECURE_GUARDS
#define AY_SECURE_GUARDS AY_SECURE
#endif

/* Bins of the thread cache are indexed by class + 1; bin 0 means "not
 * cacheable" (large requests, pages alloy does not own) and is always empty,
 * so every such request falls into the slow path through the one branch the
 * fast path already has. */
#define AY_NUM_BINS (AY_NUM_CLASSES + 1)
/* Bytes of one bin of a thread cache (tcache.h): the fast paths and the
 * pagemap (pagemap.h) address a bin by its byte offset, index * this. */
#define AY_BIN_BYTES 16
/* Automatic heaps at most (the `heaps` setting's bound). */
#define AY_MAX_AUTO_HEAPS 128

/* A hint for the fast paths' register allocation, worth one instruction
 * with GCC 12, and measured by tools/fastpath-instructions.sh.
 * AY_KEEP_IN_REGISTER(x): an empty asm that takes x in a register, after
 * which GCC keeps malloc's result where it returns it instead of moving it
 * there (alloc.h). */
#define AY_KEEP_IN_REGISTER(x) __asm__("" : "+r"(x))
/* AY_ROOM_TAKE(p, label): *p -= 1, and goto label when *p is then below 0,
 * as two instructions (a subtract on memory and a jump on its sign) with
 * any compiler and flags.  As an asm it is also invisible to the
 * sanitizers, which is what the empty cache's rooms need: every thread
 * without a cache writes them, unsynchronised by design (tcache.h). */
#if defined(__x86_64__) || defined(__i386__)
#define AY_ROOM_TAKE(p, label)                                                                     \
    __asm__ goto("subl $1, %0\n\tjs %l[" #label "]" : "+m"(*(p)) : : "cc" : label)
#else
#define AY_ROOM_TAKE(p, label)                                                                     \
    do {                                                                                           \
        if (AY_UNLIKELY(--*(p) < 0))                                                               \
            goto label;                                                                            \
    } while (0)
#endif

/* The largest request the malloc family accepts: sizes above it (and
 * overflows in calloc and reallocarray) get NULL with ENOMEM. */
#define AY_MAX_REQUEST ((size_t)PTRDIFF_MAX)

AY_INLINE bool ay_is_pow2(size_t x) { return x && !(x & (x - 1)); }

/* Relaxed atomics for counters read by other threads while being written. */
#define AY_LOAD(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define AY_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)

#endif
