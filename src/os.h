/* os.h - the OS contract: every system call alloy makes goes through here.
 *
 * Preconditions: sizes are multiples of AY_PAGE_SIZE, addresses page-aligned.
 * Functions return NULL or a negative errno value on failure; none of them
 * allocates or takes a lock, and none writes anything but ay_os_write, which
 * the diagnostics (error.c) and the stats report use.  One test hook,
 * ay_os_fail_next_maps, makes the next N maps fail as if the OS were out of
 * memory, deterministically (in the manner of Lua's Memcontrol).
 */
#ifndef ALLOY_OS_H
#define ALLOY_OS_H
#include <stddef.h>
#include <stdint.h>

/* Map `size` bytes of zeroed, read-write memory aligned to `align` (a power of
 * two, at least a page).  Returns NULL on failure. */
void *ay_os_map(size_t size, size_t align);
/* Unmap a range previously mapped. */
void ay_os_unmap(void *p, size_t size);
/* ay_os_map with an inaccessible guard page just before and just after the
 * `size` bytes it returns (the secure flavour's chunks and metadata), and
 * its unmap, guards included. */
void *ay_os_map_guarded(size_t size, size_t align);
void ay_os_unmap_guarded(void *p, size_t size);
/* Make a range inaccessible (a guard) or read-write again.  0 or -errno. */
int ay_os_protect(void *p, size_t size, int accessible);
/* Tell the OS the range's contents may go; it reads back as zero.  Returns 0
 * or -errno. */
int ay_os_purge(void *p, size_t size);
/* Grow or shrink a mapping, moving it if needed, or exactly to `to` when it
 * is not NULL.  Returns NULL on failure, in which case the old mapping is
 * untouched. */
void *ay_os_remap(void *p, size_t old_size, size_t new_size, void *to);
/* Ask for transparent huge pages on the range (MADV_HUGEPAGE), for blocks
 * that are used whole.  Returns 0 or -errno; failure is harmless. */
int ay_os_hugepages(void *p, size_t size);
/* Monotonic milliseconds (coarse clock: cheap, ~4 ms resolution). */
uint64_t ay_os_now_ms(void);
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

/* Test hook: the next `n` calls of ay_os_map fail as if the OS were out of
 * memory.  Internal; used by tests linked against the static library. */
void ay_os_fail_next_maps(unsigned n);

#endif
