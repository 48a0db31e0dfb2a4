/* SPDX-License-Identifier: MIT */
/* os.h - the OS contract: the system calls of the allocator's memory and
 * of what it reads and writes on its own paths: mapping (mmap, munmap,
 * mremap, mprotect), madvise (MADV_DONTNEED, MADV_HUGEPAGE), mincore,
 * mbind, the coarse clock, getrandom, getauxval(AT_RANDOM), gettid, sysconf
 * for the CPU count, sched_getcpu, reading a small file (open, read) and
 * write.
 *
 * Not every system call goes through here: the contract is the memory the
 * allocator manages and what its allocation paths need.  Calls that one
 * module makes off those paths stay in that module: the guarded pages'
 * SIGSEGV handler (sigaction, guard.c); the heap profiler's files and its
 * clock (open, read, write, close, getpid, fcntl, clock_gettime:
 * prof_out.c, prof.c); the stats report's copy of stderr (fcntl, stats.c);
 * the symboliser's mapped ELF files and its addr2line child (open, fstat,
 * mmap, munmap, pipe2, vfork, execve, dup2, waitpid: symbolize.c); the
 * background thread (pthread_create, clock_gettime: background.c); and the
 * locks' futexes, sched_yield and abort, through libc.
 *
 * Preconditions: sizes are multiples of AY_PAGE_SIZE, addresses page-aligned.
 * Functions return NULL or a negative errno value on failure; none of them
 * allocates or takes a lock, and none writes anything but ay_os_write, which
 * the formatter (fmt.c: diagnostics and the report on stderr) and the stats
 * report at exit (stats.c) use, and ay_os_write_all, which the timeline uses
 * (timeline.h).  Two test hooks:
 * ay_os_fail_next_maps makes the next N maps fail as if the OS were out of
 * memory, deterministically (in the manner of Lua's Memcontrol), and
 * ay_os_trace_binds records every NUMA placement (mbind) instead of making
 * it, with the result the test chooses.
 */
#ifndef ALLOY_OS_H
#define ALLOY_OS_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__GLIBC__) && defined(__has_include)
#if __has_include(<sys/single_threaded.h>)
#include <sys/single_threaded.h>
#define AY_FORK_LAZY 1
#endif
#endif

/* Map `size` bytes of zeroed, read-write memory aligned to `align` (a power of
 * two, at least a page).  Returns NULL on failure. */
void *ay_os_map(size_t size, size_t align);
/* Unmap a range previously mapped.  A refusal (munmap fails: the kernel
 * is out of map entries, say) is counted in ay_os_failures and the range
 * stays mapped, unused: a leak of address space, never a crash. */
void ay_os_unmap(void *p, size_t size);
/* madvise, mprotect and munmap calls the kernel refused, since start-up
 * (the stats' os_failures). */
uint64_t ay_os_failures(void);
/* ay_os_map with an inaccessible guard page just before and just after the
 * `size` bytes it returns, and its unmap, guards included. */
void *ay_os_map_guarded(size_t size, size_t align);
void ay_os_unmap_guarded(void *p, size_t size);
/* Memory from the OS for the page heap's blocks, direct maps, metadata
 * chunks and pagemap leaves, and its unmap: in the secure flavour (with
 * AY_SECURE_GUARDS, internal.h) behind guard pages (ay_os_map_guarded), so
 * that no linear overflow runs from one mapping into another; elsewhere
 * ay_os_map. */
void *ay_os_map_chunk(size_t size, size_t align);
void ay_os_unmap_chunk(void *p, size_t size);
/* Make a range inaccessible (a guard) or read-write again.  0 or -errno
 * (counted in ay_os_failures). */
int ay_os_protect(void *p, size_t size, int accessible);
/* A guard: make the range (page aligned, mapped read-write) fault on any
 * access, its contents gone, until it is unmapped.  Linux 6.13 and later:
 * madvise's MADV_GUARD_INSTALL, which marks page-table entries, so that a
 * guard splits no mapping (mprotect's does: a VMA each) and takes the mmap
 * lock only to read; elsewhere, or where the kernel refuses (an mlock-ed
 * range), mprotect.  0 or -errno (counted in ay_os_failures). */
int ay_os_guard(void *p, size_t size);
/* Tell the OS the range's contents may go; it reads back as zero.  Returns 0
 * or -errno (counted in ay_os_failures): the range then keeps its contents,
 * and the caller must treat it as dirty still. */
int ay_os_purge(void *p, size_t size);
/* Grow or shrink a mapping, moving it if needed, or exactly to `to` when it
 * is not NULL.  Returns NULL on failure, in which case the old mapping is
 * untouched. */
void *ay_os_remap(void *p, size_t old_size, size_t new_size, void *to);
/* Ask for transparent huge pages on the range (MADV_HUGEPAGE), or, when
 * !on, that it get none (MADV_NOHUGEPAGE).  Returns 0 or -errno; a refusal
 * is counted as ay_os_purge's are, and is harmless. */
int ay_os_hugepages(void *p, size_t size, bool on);
/* How many of the npages 4 KiB pages at p (page aligned, npages <= 256)
 * are resident (mincore); -1 when the OS does not say (counted in
 * ay_os_failures, as a refused madvise is). */
int ay_os_resident_pages(void *p, size_t npages);
/* Monotonic milliseconds (coarse clock: cheap, ~4 ms resolution), or the
 * test clock once ay_os_clock_set has set it. */
uint64_t ay_os_now_ms(void);
/* Test hook, never called by liballoy itself: from now on ay_os_now_ms
 * returns ms, for every thread, until the next call.  The simulator's
 * harness (sim/real.c) sets it before each op of a trace to the time the
 * model gives that op (sim/model.h, sim_clock_ms), so that the rules that
 * run on the clock (the transfer caches' idle rule and decay rounds) fire
 * at the same op in both.  It costs ay_os_now_ms, which only slow paths
 * call, a relaxed load and a branch. */
void ay_os_clock_set(uint64_t ms);
/* Number of online CPUs, at least 1. */
unsigned ay_os_ncpus(void);
/* Fill buf with len random bytes from the kernel (getrandom, without
 * blocking).  0, or -errno. */
int ay_os_random(void *buf, size_t len);
/* Eight of the kernel's AT_RANDOM bytes (random at exec), or 0. */
uint64_t ay_os_auxv_random(void);
/* The calling thread's id (gettid). */
unsigned ay_os_tid(void);
/* write(2) all of buf to fd, ignoring errors. */
void ay_os_write(int fd, const char *buf, size_t len);
/* Read the file at `path` into buf with open(2) and read(2) (no stdio, no
 * allocation): at most cap - 1 bytes, then a NUL.  Returns the bytes read,
 * or -errno. */
long ay_os_read_file(const char *path, char *buf, size_t cap);
/* The CPU the calling thread runs on now (sched_getcpu, which glibc answers
 * from the rseq area or the vDSO, without a system call), or -1. */
int ay_os_cpu(void);

/* NUMA nodes whose ids ay_os_bind_node accepts: 0 .. AY_OS_MAX_NODES - 1. */
#define AY_OS_MAX_NODES 64
/* Prefer node `node` for the pages of the range: mbind(MPOL_PREFERRED),
 * through the raw system call (no libnuma), before the pages are touched.
 * Returns 0 or -errno (-EINVAL for a node past AY_OS_MAX_NODES). */
int ay_os_bind_node(void *p, size_t size, unsigned node);

/* Test hook: the next `n` calls of ay_os_map fail as if the OS were out of
 * memory.  Internal; used by tests linked against the static library. */
void ay_os_fail_next_maps(unsigned n);

/* Test hook: while `log` is set (not NULL), ay_os_bind_node makes no system
 * call.  It records each call in log[i] for i < cap, counts every call in
 * *count (also past cap), and returns `result`; with result
 * AY_OS_BIND_REAL it records the call and then makes it, and returns what
 * the system returned.  NULL turns recording off.  Internal; for tests
 * linked against the static library. */
typedef struct ay_os_bind_rec {
    uintptr_t addr;
    size_t size;
    unsigned node;
} ay_os_bind_rec_t;
#define AY_OS_BIND_REAL 1
void ay_os_trace_binds(ay_os_bind_rec_t *log, unsigned cap, unsigned *count, int result);

/* ---- files, shared memory and processes (the timeline and the live
 * snapshot, timeline.h and shm.h) ---- */

/* open(2): a file descriptor, or -errno. */
int ay_os_open(const char *path, int flags, unsigned mode);
void ay_os_close(int fd);
/* What identifies an open file, and whose it is. */
typedef struct ay_os_file_id {
    uint64_t dev, ino, size;
    unsigned uid, mode; /* mode: the type and permission bits (st_mode) */
} ay_os_file_id_t;
/* fstat(2) of fd, or lstat(2) of path when fd < 0.  0 or -errno. */
int ay_os_file_id(int fd, const char *path, ay_os_file_id_t *out);
/* Set fd's mode bits (fchmod) and its size (ftruncate).  0 or -errno. */
int ay_os_file_setup(int fd, unsigned mode, size_t size);
/* mmap(MAP_SHARED) of the first `size` bytes of fd, read-write or read
 * only; NULL on failure.  Unmap with ay_os_unmap. */
void *ay_os_map_shared(int fd, size_t size, int writable);
/* unlink(2) and rename(2).  0 or -errno. */
int ay_os_unlink(const char *path);
int ay_os_rename(const char *from, const char *to);
/* write(2) all of buf to fd: 0, or -errno of the write that failed.  A
 * write past the file-size limit fails with -EFBIG instead of raising
 * SIGXFSZ, which would kill the program. */
int ay_os_write_all(int fd, const char *buf, size_t len);
/* getdents64(2) of the directory open at fd: bytes of linux_dirent64
 * records in buf, 0 at the end, or -errno. */
long ay_os_dir_read(int fd, void *buf, size_t cap);
/* The current directory (getcwd(3) into buf): 0, or -errno (-ERANGE when
 * it does not fit in cap bytes). */
int ay_os_cwd(char *buf, size_t cap);
/* The process's id, its real user id, and whether process `pid` exists
 * (kill(pid, 0) does not fail with ESRCH). */
unsigned ay_os_pid(void);
unsigned ay_os_uid(void);
int ay_os_pid_exists(unsigned pid);
/* Monotonic milliseconds, precise (not the coarse clock), and the time of
 * day in milliseconds since 1970. */
uint64_t ay_os_mono_ms(void);
uint64_t ay_os_unix_ms(void);
/* Block every signal in the calling thread (a helper thread of alloy's
 * own: the program's signals go to its own threads). */
void ay_os_block_signals(void);

/* ---- fork handlers ---- */

/* The fork handlers (init.c gives them: ay_os_fork_handlers) are
 * registered with pthread_atfork the first time the allocator takes a lock
 * in a process with more than one thread (glibc's __libc_single_threaded,
 * false from the first pthread_create on), or when something needs them
 * whatever the threads (ay_os_fork_register: before the background thread
 * is created; with the heap profiler on; without __libc_single_threaded).
 * A program that never starts a thread never calls pthread_atfork, whose
 * code and data are in parts of libc a small program does not otherwise
 * map (docs/ARCHITECTURE.md, "Process set-up").  A fork with one thread
 * finds every allocator lock free: that thread is the one forking.  Every
 * pthread_mutex_lock of the allocator's modules goes through ay_mutex_lock
 * (the macro below; os.h is included before any lock is taken), and
 * ay_lock_take (lock.h) checks too. */
void ay_os_fork_handlers(void (*prepare)(void), void (*parent)(void), void (*child)(void));
void ay_os_fork_register(void);
extern int ay_os_fork_ready; /* 1 once pthread_atfork has returned */
static inline __attribute__((always_inline)) void ay_fork_check(void) {
#ifdef AY_FORK_LAZY
    if (__builtin_expect(!__atomic_load_n(&ay_os_fork_ready, __ATOMIC_ACQUIRE), 0) &&
        !__libc_single_threaded)
        ay_os_fork_register();
#endif
}
static inline __attribute__((always_inline)) int ay_mutex_lock(pthread_mutex_t *m) {
    ay_fork_check();
    return pthread_mutex_lock(m);
}
#define pthread_mutex_lock(m) ay_mutex_lock(m)

#endif
