/* SPDX-License-Identifier: MIT */
/* shm.c - the live snapshot's segment and its seqlock (see shm.h).  No
 * allocation and no stdio: the library runs it on its background thread,
 * and the `alloy` command compiles it to read. */
#define _GNU_SOURCE
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <string.h>

#include "internal.h"
#include "os.h"

_Static_assert(sizeof(ay_snap_t) % sizeof(uint64_t) == 0, "a snapshot is whole words");
_Static_assert(offsetof(ay_shm_seg_t, snap) % sizeof(uint64_t) == 0, "the words are aligned");

/* s + the decimal digits of v; returns the end. */
static char *put_u64(char *s, uint64_t v) {
    char d[24];
    int n = 0;
    do
        d[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n > 0)
        *s++ = d[--n];
    return s;
}

static char *put_str(char *s, const char *t) {
    size_t n = strlen(t);
    memcpy(s, t, n);
    return s + n;
}

void ay_shm_path(char *out, unsigned pid) {
    char *s = put_str(out, AY_SHM_DIR "/alloy.");
    *put_u64(s, pid) = 0;
}

static void tmp_path(char *out, unsigned pid) {
    char *s = put_str(out, AY_SHM_DIR "/.alloy.");
    *put_str(put_u64(s, pid), ".tmp") = 0;
}

void ay_shm_publish(ay_shm_seg_t *seg, const ay_snap_t *s) {
    const uint64_t *w = (const uint64_t *)s;
    uint64_t seq = __atomic_load_n(&seg->seq, __ATOMIC_RELAXED);
    __atomic_store_n(&seg->seq, seq + 1, __ATOMIC_RELAXED);
    /* each word a release store, so that a reader that loads it (acquire)
     * also sees the odd number stored before it (no standalone fence:
     * ThreadSanitizer models these, and on x86 both are plain moves) */
    for (size_t i = 0; i < AY_SNAP_WORDS; i++)
        __atomic_store_n(&seg->snap[i], w[i], __ATOMIC_RELEASE);
    __atomic_store_n(&seg->seq, seq + 2, __ATOMIC_RELEASE);
}

int ay_shm_read(const ay_shm_seg_t *seg, ay_snap_t *out, unsigned tries) {
    uint64_t *w = (uint64_t *)out;
    for (unsigned t = 0; t < tries; t++) {
        uint64_t before = __atomic_load_n(&seg->seq, __ATOMIC_ACQUIRE);
        if (before & 1) {
            AY_CPU_PAUSE();
            continue;
        }
        for (size_t i = 0; i < AY_SNAP_WORDS; i++)
            w[i] = __atomic_load_n(&seg->snap[i], __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&seg->seq, __ATOMIC_RELAXED) == before)
            return 0;
    }
    return -EAGAIN;
}

int ay_shm_check(const void *map, size_t size) {
    const ay_shm_seg_t *seg = map;
    if (size < offsetof(ay_shm_seg_t, seq))
        return AY_SHM_TOO_SMALL;
    if (seg->magic != AY_SHM_MAGIC)
        return AY_SHM_BAD_MAGIC;
    if (seg->version != AY_SHM_VERSION || seg->snap_bytes != sizeof(ay_snap_t))
        return AY_SHM_BAD_VERSION;
    if (size < sizeof(ay_shm_seg_t))
        return AY_SHM_TOO_SMALL;
    return AY_SHM_OK;
}

/* Fill a new segment's header and first snapshot. */
static void seg_fill(ay_shm_seg_t *seg, unsigned pid, const ay_snap_t *first, const char *cmd,
                     const char *why, uint64_t start_unix_ms) {
    seg->magic = AY_SHM_MAGIC;
    seg->version = AY_SHM_VERSION;
    seg->snap_bytes = sizeof(ay_snap_t);
    seg->pid = pid;
    seg->start_unix_ms = start_unix_ms;
    size_t n = cmd ? strlen(cmd) : 0;
    memcpy(seg->cmd, cmd ? cmd : "", n < AY_SHM_CMD - 1 ? n : AY_SHM_CMD - 1);
    n = why ? strlen(why) : 0;
    memcpy(seg->why, why ? why : "", n < AY_SHM_WHY - 1 ? n : AY_SHM_WHY - 1);
    ay_shm_publish(seg, first);
}

int ay_shm_create(ay_shm_t *w, const ay_snap_t *first, const char *cmd, const char *why,
                  uint64_t start_unix_ms) {
    char tmp[AY_SHM_PATH_MAX];
    unsigned pid = ay_os_pid();
    w->seg = NULL;
    tmp_path(tmp, pid);
    ay_os_unlink(tmp); /* a stale one of ours (another user's stays, and the open fails) */
    int fd = ay_os_open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return fd;
    int err = ay_os_file_setup(fd, 0600, sizeof(ay_shm_seg_t));
    ay_shm_seg_t *seg = err ? NULL : ay_os_map_shared(fd, sizeof(ay_shm_seg_t), 1);
    ay_os_close(fd);
    if (!seg) {
        ay_os_unlink(tmp);
        return err ? err : -ENOMEM;
    }
    seg_fill(seg, pid, first, cmd, why, start_unix_ms);
    ay_shm_path(w->path, pid);
    /* in place of a stale segment of the same pid; another user's file
     * there makes the rename fail (the directory is sticky) */
    err = ay_os_rename(tmp, w->path);
    if (err) {
        ay_os_unlink(tmp);
        ay_os_unmap(seg, sizeof(ay_shm_seg_t));
        return err == -EPERM || err == -EACCES ? -EEXIST : err;
    }
    w->seg = seg;
    w->pid = pid;
    return 0;
}

void ay_shm_remove(ay_shm_t *w) {
    if (!w->seg || w->pid != ay_os_pid())
        return; /* none, or a fork child's copy of the parent's */
    ay_os_unlink(w->path);
    ay_os_unmap(w->seg, sizeof(ay_shm_seg_t));
    w->seg = NULL;
}

/* The pid in "alloy.<pid>" or ".alloy.<pid>.tmp", or 0. */
static unsigned name_pid(const char *name) {
    const char *s = name;
    if (*s == '.')
        s++;
    if (strncmp(s, "alloy.", 6) != 0)
        return 0;
    s += 6;
    uint64_t pid = 0;
    while (*s >= '0' && *s <= '9' && pid < (1u << 30))
        pid = pid * 10 + (uint64_t)(*s++ - '0');
    bool ok = name[0] == '.' ? !strcmp(s, ".tmp") : *s == 0;
    return ok && pid < (1u << 30) ? (unsigned)pid : 0;
}

/* Remove the entry `name` of the directory if it is a stale file of uid. */
static unsigned clean_one(const char *name, unsigned uid) {
    unsigned pid = name_pid(name);
    if (!pid || ay_os_pid_exists(pid))
        return 0;
    char path[AY_SHM_PATH_MAX + 16];
    ay_os_file_id_t id;
    size_t dl = strlen(AY_SHM_DIR), nl = strlen(name);
    if (dl + 1 + nl >= sizeof path)
        return 0;
    memcpy(path, AY_SHM_DIR "/", dl + 1);
    memcpy(path + dl + 1, name, nl + 1);
    if (ay_os_file_id(-1, path, &id) != 0 || id.uid != uid || (id.mode & 0170000) != 0100000)
        return 0; /* gone, another user's, or not a regular file */
    return ay_os_unlink(path) == 0;
}

unsigned ay_shm_clean_stale(unsigned uid) {
    int fd = ay_os_open(AY_SHM_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    unsigned removed = 0;
    uint64_t buf[512]; /* 4 KiB of linux_dirent64 records */
    long n;
    while ((n = ay_os_dir_read(fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < n;) {
            /* linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), d_name */
            const char *rec = (const char *)buf + off;
            unsigned short reclen;
            memcpy(&reclen, rec + 16, sizeof reclen);
            removed += clean_one(rec + 19, uid);
            off += reclen ? reclen : n;
        }
    }
    ay_os_close(fd);
    return removed;
}
