/* SPDX-License-Identifier: MIT */
/* os.c - the OS contract on Linux (see os.h): mmap, munmap, mremap,
 * mprotect, madvise, mbind, getrandom and the other calls os.h lists.
 *
 * Invariants: nothing here allocates or takes a lock, and the only state is
 * the two test hooks' (fail_next, a relaxed atomic counter; the bind log,
 * published with a release store); ay_os_map returns exactly `size` bytes
 * at `align`, the over-mapped head and tail unmapped again, and sets errno
 * to ENOMEM when it fails; write(2) and getrandom(2) are made as raw system
 * calls (a sanitizer's wrappers may not be ready when alloy needs them), and
 * ay_os_random leaves errno as it found it. */
#define _GNU_SOURCE
#include "os.h"
#include "internal.h"

#include <errno.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MPOL_PREFERRED
#define MPOL_PREFERRED 1 /* linux/mempolicy.h */
#endif

static unsigned fail_next; /* test hook, see ay_os_fail_next_maps */

void ay_os_fail_next_maps(unsigned n) { __atomic_store_n(&fail_next, n, __ATOMIC_RELAXED); }

static int should_fail(void) {
    unsigned n = __atomic_load_n(&fail_next, __ATOMIC_RELAXED);
    while (n > 0) {
        if (__atomic_compare_exchange_n(&fail_next, &n, n - 1, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED))
            return 1;
    }
    return 0;
}

void *ay_os_map(size_t size, size_t align) {
    if (should_fail()) {
        errno = ENOMEM;
        return NULL;
    }
    size_t page = (size_t)1 << 12;
    if (align < page)
        align = page;
    size_t total = size + (align > page ? align - page : 0);
    if (total < size) { /* overflow */
        errno = ENOMEM;
        return NULL;
    }
    char *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        errno = ENOMEM;
        return NULL;
    }
    if (total == size)
        return p;
    /* trim to the requested alignment */
    uintptr_t a = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
    size_t head = a - (uintptr_t)p, tail = total - head - size;
    if (head)
        munmap(p, head);
    if (tail)
        munmap((char *)a + size, tail);
    return (void *)a;
}

static uint64_t failures; /* madvise and munmap calls refused */

uint64_t ay_os_failures(void) { return __atomic_load_n(&failures, __ATOMIC_RELAXED); }

static void count_failure(void) { __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED); }

void ay_os_unmap(void *p, size_t size) {
    if (munmap(p, size) != 0)
        count_failure();
}

void *ay_os_map_guarded(size_t size, size_t align) {
    size_t page = (size_t)1 << 12;
    if (size > SIZE_MAX - 2 * page - align) {
        errno = ENOMEM;
        return NULL;
    }
    /* map the guards with the block, aligned so that the block is */
    char *p = ay_os_map(size + 2 * page + (align > page ? align : 0), page);
    if (!p)
        return NULL;
    uintptr_t a = ((uintptr_t)p + page + align - 1) & ~(uintptr_t)(align - 1);
    if (align <= page)
        a = (uintptr_t)p + page;
    size_t total = size + 2 * page + (align > page ? align : 0);
    size_t head = a - page - (uintptr_t)p, tail = total - head - size - 2 * page;
    if (head)
        munmap(p, head);
    if (tail)
        munmap((char *)a + size + page, tail);
    ay_os_guard((char *)a - page, page);
    ay_os_guard((char *)a + size, page);
    return (void *)a;
}

void ay_os_unmap_guarded(void *p, size_t size) {
    size_t page = (size_t)1 << 12;
    ay_os_unmap((char *)p - page, size + 2 * page);
}

void *ay_os_map_chunk(size_t size, size_t align) {
    return AY_SECURE && AY_SECURE_GUARDS ? ay_os_map_guarded(size, align) : ay_os_map(size, align);
}

void ay_os_unmap_chunk(void *p, size_t size) {
    if (AY_SECURE && AY_SECURE_GUARDS)
        ay_os_unmap_guarded(p, size);
    else
        ay_os_unmap(p, size);
}

int ay_os_protect(void *p, size_t size, int accessible) {
    if (mprotect(p, size, accessible ? PROT_READ | PROT_WRITE : PROT_NONE) == 0)
        return 0;
    int err = errno;
    count_failure();
    return -err;
}

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* linux/mman.h, Linux 6.13 */
#endif
/* Guards by madvise: 1 the kernel takes them, 0 it does not (EINVAL on the
 * first try: an older kernel), -1 not tried yet.  Any thread may set it,
 * to the same value. */
static int guard_madvise = -1;

int ay_os_guard(void *p, size_t size) {
    int known = __atomic_load_n(&guard_madvise, __ATOMIC_RELAXED);
    if (known != 0) {
        if (madvise(p, size, MADV_GUARD_INSTALL) == 0) {
            if (known < 0)
                __atomic_store_n(&guard_madvise, 1, __ATOMIC_RELAXED);
            return 0;
        }
        if (known < 0 && errno == EINVAL)
            __atomic_store_n(&guard_madvise, 0, __ATOMIC_RELAXED);
    }
    return ay_os_protect(p, size, 0);
}

int ay_os_purge(void *p, size_t size) {
    if (madvise(p, size, MADV_DONTNEED) == 0)
        return 0;
    int err = errno;
    count_failure();
    return -err;
}

int ay_os_hugepages(void *p, size_t size, bool on) {
    if (madvise(p, size, on ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) == 0)
        return 0;
    int err = errno;
    count_failure();
    return -err;
}

int ay_os_resident_pages(void *p, size_t npages) {
    unsigned char vec[256]; /* one byte a page; alloy's pages are the OS's 4 KiB */
    if (npages > sizeof vec || mincore(p, npages * 4096, vec) != 0) {
        count_failure();
        return -1;
    }
    int n = 0;
    for (size_t i = 0; i < npages; i++)
        n += vec[i] & 1;
    return n;
}

void *ay_os_remap(void *p, size_t old_size, size_t new_size, void *to) {
    if (!to && should_fail())
        return NULL;
    void *q = to ? mremap(p, old_size, new_size, MREMAP_MAYMOVE | MREMAP_FIXED, to)
                 : mremap(p, old_size, new_size, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
}

/* The test clock (ay_os_clock_set): its time + 1; 0 while it is not set. */
static uint64_t test_clock;

void ay_os_clock_set(uint64_t ms) { __atomic_store_n(&test_clock, ms + 1, __ATOMIC_RELAXED); }

/* The coarse clock is read through the vDSO's own clock_gettime, found in
 * its symbol table (the kernel's AT_SYSINFO_EHDR): libc's wrapper sits in
 * a part of libc's text that a program which never reads a clock does not
 * map, and calling it made the kernel map that 64 KiB window
 * (docs/ARCHITECTURE.md, "Process set-up").  Without a vDSO, or without
 * the symbol in it, the system call itself. */
typedef int (*vdso_gettime_fn)(clockid_t, struct timespec *);
static vdso_gettime_fn vdso_gettime;
static int vdso_looked; /* 1 once vdso_gettime is known (or known absent) */

static vdso_gettime_fn vdso_find(void) {
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    if (!base)
        return NULL;
    const ElfW(Ehdr) *eh = (const void *)base;
    const ElfW(Phdr) *ph = (const void *)(base + eh->e_phoff);
    uintptr_t bias = 0;
    const ElfW(Dyn) *dyn = NULL;
    for (unsigned i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && !bias)
            bias = base + ph[i].p_offset - ph[i].p_vaddr;
        else if (ph[i].p_type == PT_DYNAMIC)
            dyn = (const void *)(base + ph[i].p_offset);
    }
    if (!dyn || !bias)
        return NULL;
    const char *strtab = NULL;
    const ElfW(Sym) *symtab = NULL;
    const Elf32_Word *hash = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_STRTAB)
            strtab = (const char *)(bias + dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_SYMTAB)
            symtab = (const void *)(bias + dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_HASH)
            hash = (const void *)(bias + dyn->d_un.d_ptr);
    }
    if (!strtab || !symtab || !hash)
        return NULL;
    for (Elf32_Word i = 0; i < hash[1]; i++) { /* hash[1]: the number of symbols */
        const ElfW(Sym) *sym = &symtab[i];
        if (ELF64_ST_TYPE(sym->st_info) == STT_FUNC && sym->st_shndx != SHN_UNDEF &&
            !strcmp(strtab + sym->st_name, "__vdso_clock_gettime"))
            return (vdso_gettime_fn)(bias + sym->st_value);
    }
    return NULL;
}

uint64_t ay_os_now_ms(void) {
    uint64_t t = __atomic_load_n(&test_clock, __ATOMIC_RELAXED);
    if (__builtin_expect(t != 0, 0))
        return t - 1;
    struct timespec ts;
    if (__builtin_expect(!__atomic_load_n(&vdso_looked, __ATOMIC_ACQUIRE), 0)) {
        __atomic_store_n(&vdso_gettime, vdso_find(), __ATOMIC_RELAXED);
        __atomic_store_n(&vdso_looked, 1, __ATOMIC_RELEASE);
    }
    vdso_gettime_fn f = __atomic_load_n(&vdso_gettime, __ATOMIC_RELAXED);
    if (!f || f(CLOCK_MONOTONIC_COARSE, &ts) != 0) {
        int saved = errno;
        if (syscall(SYS_clock_gettime, CLOCK_MONOTONIC_COARSE, &ts) != 0)
            ts.tv_sec = ts.tv_nsec = 0;
        errno = saved;
    }
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

unsigned ay_os_ncpus(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1u;
}

int ay_os_random(void *buf, size_t len) {
    char *b = buf;
    int saved = errno; /* malloc's first call must not change errno */
    while (len > 0) {
        /* the system call itself: a sanitizer's getrandom may not be ready
         * when its own start-up calls malloc */
        ssize_t n = syscall(SYS_getrandom, b, len, GRND_NONBLOCK);
        if (n < 0) {
            int e = errno;
            errno = saved;
            if (e == EINTR)
                continue;
            return -e;
        }
        b += n;
        len -= (size_t)n;
    }
    return 0;
}

/* ---- fork handlers ---- */

static void (*fork_prepare)(void), (*fork_parent)(void), (*fork_child)(void);
static int fork_state; /* 0, 1 (a thread is registering), 2 (registered) */
static pthread_t fork_registrar;
int ay_os_fork_ready;

void ay_os_fork_handlers(void (*prepare)(void), void (*parent)(void), void (*child)(void)) {
    fork_prepare = prepare;
    fork_parent = parent;
    fork_child = child;
}

void ay_os_fork_register(void) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&fork_state, &expected, 1, 0, __ATOMIC_ACQUIRE,
                                    __ATOMIC_ACQUIRE)) {
        __atomic_store_n(&fork_registrar, pthread_self(), __ATOMIC_RELAXED);
        pthread_atfork(fork_prepare, fork_parent, fork_child);
        __atomic_store_n(&fork_state, 2, __ATOMIC_RELEASE);
        __atomic_store_n(&ay_os_fork_ready, 1, __ATOMIC_RELEASE);
        return;
    }
    /* another thread is registering: no lock is taken before it is done
     * (pthread_atfork may call malloc, in the registering thread itself) */
    if (expected == 1 &&
        pthread_equal(__atomic_load_n(&fork_registrar, __ATOMIC_RELAXED), pthread_self()))
        return;
    while (__atomic_load_n(&fork_state, __ATOMIC_ACQUIRE) != 2)
        sched_yield();
}

uint64_t ay_os_auxv_random(void) {
    const void *r = (const void *)getauxval(AT_RANDOM);
    uint64_t v = 0;
    if (r)
        memcpy(&v, r, sizeof v);
    return v;
}

unsigned ay_os_tid(void) { return (unsigned)syscall(SYS_gettid); }

void ay_os_write(int fd, const char *buf, size_t len) {
    while (len > 0) {
        /* the system call itself: a sanitizer's write may not be ready yet
         * when alloy reports something from inside the sanitizer's start-up */
        ssize_t w = syscall(SYS_write, fd, buf, len);
        if (w <= 0) {
            if (w < 0 && errno == EINTR)
                continue;
            return;
        }
        buf += w;
        len -= (size_t)w;
    }
}

long ay_os_read_file(const char *path, char *buf, size_t cap) {
    int fd;
    do
        fd = open(path, O_RDONLY | O_CLOEXEC);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -errno;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            close(fd);
            return -err;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (cap)
        buf[n] = 0;
    return (long)n;
}

int ay_os_cpu(void) { return sched_getcpu(); }

/* test hook, see ay_os_trace_binds */
static ay_os_bind_rec_t *bind_log;
static unsigned bind_cap, *bind_count;
static int bind_result;

void ay_os_trace_binds(ay_os_bind_rec_t *log, unsigned cap, unsigned *count, int result) {
    bind_cap = cap;
    bind_count = count;
    bind_result = result;
    __atomic_store_n(&bind_log, log, __ATOMIC_RELEASE);
}

int ay_os_bind_node(void *p, size_t size, unsigned node) {
    if (node >= AY_OS_MAX_NODES)
        return -EINVAL;
    ay_os_bind_rec_t *log = __atomic_load_n(&bind_log, __ATOMIC_ACQUIRE);
    if (log) {
        unsigned i = __atomic_fetch_add(bind_count, 1, __ATOMIC_RELAXED);
        if (i < bind_cap)
            log[i] = (ay_os_bind_rec_t){(uintptr_t)p, size, node};
        if (bind_result != AY_OS_BIND_REAL)
            return bind_result;
    }
    /* maxnode counts the mask's bits plus one: the kernel drops the last */
    unsigned long mask[AY_OS_MAX_NODES / (8 * sizeof(unsigned long))] = {0};
    mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
    long r = syscall(SYS_mbind, p, size, MPOL_PREFERRED, mask, AY_OS_MAX_NODES + 1, 0);
    return r == 0 ? 0 : -errno;
}

/* ---- files, shared memory and processes ---- */

int ay_os_open(const char *path, int flags, unsigned mode) {
    int fd;
    do
        fd = open(path, flags, (mode_t)mode);
    while (fd < 0 && errno == EINTR);
    return fd < 0 ? -errno : fd;
}

void ay_os_close(int fd) { close(fd); }

int ay_os_file_id(int fd, const char *path, ay_os_file_id_t *out) {
    struct stat st;
    if ((fd >= 0 ? fstat(fd, &st) : lstat(path, &st)) != 0)
        return -errno;
    out->dev = (uint64_t)st.st_dev;
    out->ino = (uint64_t)st.st_ino;
    out->size = (uint64_t)st.st_size;
    out->uid = (unsigned)st.st_uid;
    out->mode = (unsigned)st.st_mode;
    return 0;
}

int ay_os_file_setup(int fd, unsigned mode, size_t size) {
    if (fchmod(fd, (mode_t)mode) != 0)
        return -errno;
    int r;
    do
        r = ftruncate(fd, (off_t)size);
    while (r != 0 && errno == EINTR);
    return r == 0 ? 0 : -errno;
}

void *ay_os_map_shared(int fd, size_t size, int writable) {
    void *p = mmap(NULL, size, PROT_READ | (writable ? PROT_WRITE : 0), MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

int ay_os_unlink(const char *path) { return unlink(path) == 0 ? 0 : -errno; }

int ay_os_rename(const char *from, const char *to) { return rename(from, to) == 0 ? 0 : -errno; }

int ay_os_write_all(int fd, const char *buf, size_t len) {
    /* SIGXFSZ is blocked around the write, so that a file at its size limit
     * fails with EFBIG; the signal that write raised is then taken off
     * (unless the program had one pending already) */
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &old);
    sigpending(&pending);
    int had = sigismember(&pending, SIGXFSZ), err = 0;
    while (len > 0) {
        ssize_t w = write(fd, buf, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            err = w < 0 ? -errno : -EIO;
            break;
        }
        buf += w;
        len -= (size_t)w;
    }
    if (err == -EFBIG && !had) {
        struct timespec zero = {0, 0};
        sigtimedwait(&xfsz, NULL, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return err;
}

long ay_os_dir_read(int fd, void *buf, size_t cap) {
    long n = syscall(SYS_getdents64, fd, buf, cap);
    return n < 0 ? -errno : n;
}

int ay_os_cwd(char *buf, size_t cap) { return getcwd(buf, cap) ? 0 : -errno; }

unsigned ay_os_pid(void) { return (unsigned)getpid(); }

unsigned ay_os_uid(void) { return (unsigned)getuid(); }

int ay_os_pid_exists(unsigned pid) {
    return pid > 0 && pid <= INT32_MAX && (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
}

uint64_t ay_os_mono_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t ay_os_unix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ay_os_block_signals(void) {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
}
