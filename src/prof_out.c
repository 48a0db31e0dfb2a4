/* SPDX-License-Identifier: MIT */
/* prof_out.c - what the heap profiler writes (see prof_out.h): heap profiles in
 * gperftools' text format, which google-pprof reads, and the leak report at
 * exit.
 *
 * A heap profile is
 *     heap profile: N: B [AN: AB] @ heapprofile
 *     n: b [an: ab] @ 0xpc0 0xpc1 ...        one line per stack
 *     # alloy: prof_sample R, samples ..., store_bytes ...   (pprof skips it)
 *     (blank line)
 *     MAPPED_LIBRARIES:
 *     ... /proc/self/maps ...
 * where n and b are the live allocations and bytes a stack stands for, and
 * an, ab those allocated since start-up (or prof.reset), all already
 * estimated from the samples (each weighed by 1/p), so that "heapprofile"
 * tells pprof not to scale them again.  The first address of a stack is the
 * return address minus one (pprof takes it as is); the others are return
 * addresses (pprof subtracts one).
 *
 * Consistency: the counts are copied under the store's lock, then written
 * without it, so a dump taken while other threads allocate is a snapshot of
 * one moment and every line is whole.  The file is written with write(2)
 * through a buffer of its own; nothing is allocated with malloc, and the
 * dumping thread is never sampled meanwhile.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "error.h"
#include "fmt.h"
#include "os.h"
#include "prof_out.h"
#include "prof_store.h"
#include "symbolize.h"

#define S ay_prof_store

/* ---- a buffered file ---- */

typedef struct out_file {
    int fd;
    int err; /* the first write error, or 0 */
    char *buf;
    size_t len, cap;
} out_file_t;

static void out_flush(out_file_t *o) {
    size_t done = 0;
    while (done < o->len) {
        ssize_t w = write(o->fd, o->buf + done, o->len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!o->err)
                o->err = w < 0 ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    o->len = 0;
}

static void out_put(void *opaque, const char *text, size_t len) {
    out_file_t *o = opaque;
    while (len) {
        if (o->len == o->cap)
            out_flush(o);
        size_t k = o->cap - o->len < len ? o->cap - o->len : len;
        memcpy(o->buf + o->len, text, k);
        o->len += k;
        text += k;
        len -= k;
    }
}

/* ---- snapshots ---- */

typedef struct snap {
    const ay_prof_stack_t *stack;
    uint64_t live_n, live_bytes, alloc_n, alloc_bytes; /* estimates, whole units */
    uint64_t raw_live;                                 /* live samples */
} snap_t;

typedef struct snapshot {
    snap_t *v;
    size_t n, map_bytes;
    uint64_t samples;
} snapshot_t;

static uint64_t whole(uint64_t fix) { return (fix + AY_PROF_FIX / 2) / AY_PROF_FIX; }

static void snap_one(snapshot_t *sn, const ay_prof_stack_t *st, bool live_only) {
    if (!st->live_n && (live_only || !st->alloc_n))
        return;
    snap_t *e = &sn->v[sn->n++];
    e->stack = st;
    e->live_n = whole(st->live_est_n);
    e->live_bytes = st->live_est_bytes;
    e->alloc_n = whole(st->alloc_est_n);
    e->alloc_bytes = st->alloc_est_bytes;
    e->raw_live = st->live_n;
}

/* Copy the counts of every stack, under the lock.  0, or ENOMEM. */
static int snapshot_take(snapshot_t *sn, bool live_only) {
    sn->n = 0;
    sn->v = NULL;
    for (;;) {
        pthread_mutex_lock(&S.lock);
        size_t want = (S.nstacks + 1) * sizeof(snap_t);
        want = (want + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1);
        if (sn->v && want <= sn->map_bytes)
            break; /* still locked */
        pthread_mutex_unlock(&S.lock);
        if (sn->v)
            ay_os_unmap(sn->v, sn->map_bytes);
        sn->v = ay_os_map(want, AY_PAGE_SIZE);
        sn->map_bytes = want;
        if (!sn->v)
            return ENOMEM;
    }
    for (const ay_prof_stack_t *st = S.stacks; st; st = st->all)
        snap_one(sn, st, live_only);
    snap_one(sn, &S.full, live_only);
    sn->samples = S.samples;
    pthread_mutex_unlock(&S.lock);
    return 0;
}

static void snapshot_drop(snapshot_t *sn) {
    if (sn->v)
        ay_os_unmap(sn->v, sn->map_bytes);
}

/* Copy /proc/self/maps to f. */
static void put_maps(ay_fmt_t *f) {
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[4096];
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf)) > 0 || (r < 0 && errno == EINTR))
        if (r > 0)
            ay_fmt_mem(f, buf, (size_t)r);
    close(fd);
}

static void put_counts(ay_fmt_t *f, uint64_t n, uint64_t b, uint64_t an, uint64_t ab) {
    ay_fmt_u64w(f, n, 6);
    ay_fmt_str(f, ": ");
    ay_fmt_u64w(f, b, 8);
    ay_fmt_str(f, " [");
    ay_fmt_u64w(f, an, 6);
    ay_fmt_str(f, ": ");
    ay_fmt_u64w(f, ab, 8);
    ay_fmt_str(f, "] @");
}

/* ---- heap profiles ---- */

static int dump_to(const char *path) {
    snapshot_t sn;
    int err = snapshot_take(&sn, false);
    if (err)
        return err;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        err = errno;
        snapshot_drop(&sn);
        return err;
    }
    out_file_t o = {fd, 0, ay_os_map(AY_PROF_CHUNK, AY_PAGE_SIZE), 0, AY_PROF_CHUNK};
    if (!o.buf) {
        close(fd);
        snapshot_drop(&sn);
        return ENOMEM;
    }
    ay_fmt_t f;
    ay_fmt_init(&f, out_put, &o);
    uint64_t t[4] = {0, 0, 0, 0};
    for (size_t i = 0; i < sn.n; i++) {
        t[0] += sn.v[i].live_n;
        t[1] += sn.v[i].live_bytes;
        t[2] += sn.v[i].alloc_n;
        t[3] += sn.v[i].alloc_bytes;
    }
    ay_fmt_str(&f, "heap profile: ");
    put_counts(&f, t[0], t[1], t[2], t[3]);
    ay_fmt_str(&f, " heapprofile\n");
    for (size_t i = 0; i < sn.n; i++) {
        const snap_t *e = &sn.v[i];
        put_counts(&f, e->live_n, e->live_bytes, e->alloc_n, e->alloc_bytes);
        if (e->stack->depth == 0)
            ay_fmt_str(&f, " 0x0"); /* the "stack store full" entry */
        for (uint32_t k = 0; k < e->stack->depth; k++) {
            ay_fmt_str(&f, " ");
            ay_fmt_hex(&f, e->stack->pcs[k] - (k == 0));
        }
        ay_fmt_str(&f, "\n");
    }
    /* a line pprof ignores (it matches no record): the profiler's own figures */
    ay_prof_counts_t c;
    ay_prof_read_counts(&c);
    ay_fmt_str(&f, "# alloy: prof_sample ");
    ay_fmt_u64(&f, ay_prof_sample_mean());
    ay_fmt_str(&f, ", samples ");
    ay_fmt_u64(&f, c.samples);
    ay_fmt_str(&f, ", live ");
    ay_fmt_u64(&f, c.live);
    ay_fmt_str(&f, ", stacks ");
    ay_fmt_u64(&f, c.stacks);
    ay_fmt_str(&f, ", store_bytes ");
    ay_fmt_u64(&f, c.store_bytes);
    ay_fmt_str(&f, ", lost ");
    ay_fmt_u64(&f, c.lost);
    ay_fmt_str(&f, "\n");
    ay_fmt_str(&f, "\nMAPPED_LIBRARIES:\n");
    put_maps(&f);
    ay_fmt_flush(&f);
    out_flush(&o);
    err = o.err;
    if (close(fd) != 0 && !err)
        err = errno;
    ay_os_unmap(o.buf, o.cap);
    snapshot_drop(&sn);
    return err;
}

static char last_dump[AY_CONF_PATH_MAX + 64];

const char *ay_prof_last_dump(void) { return last_dump; }

static void set_last(const char *path) {
    pthread_mutex_lock(&S.lock);
    size_t n = strlen(path);
    if (n >= sizeof last_dump)
        n = sizeof last_dump - 1;
    memcpy(last_dump, path, n);
    last_dump[n] = 0;
    pthread_mutex_unlock(&S.lock);
}

static void warn_dump(const char *path, int err) {
    static int warned;
    if (__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        return; /* one warning: sampling goes on */
    ay_fmt_t f;
    ay_msg_begin(&f);
    ay_fmt_str(&f, "cannot write heap profile ");
    ay_fmt_str(&f, path);
    ay_fmt_str(&f, ": ");
    ay_fmt_str(&f, strerror(err));
    ay_fmt_str(&f, " (prof_prefix:");
    ay_fmt_str(&f, ay_conf.prof_prefix);
    ay_fmt_str(&f, "); profiling goes on, later dumps are tried again without warning");
    ay_msg_end(&f);
}

/* "<prefix>.<pid>.<seq>.<kind>.heap" into buf. */
static void dump_name(char *buf, size_t cap, char kind) {
    uint64_t seq = __atomic_fetch_add(&S.dump_seq, 1, __ATOMIC_RELAXED);
    char num[24];
    size_t len = strlen(ay_conf.prof_prefix);
    if (len > cap - 64)
        len = cap - 64;
    memcpy(buf, ay_conf.prof_prefix, len);
    uint64_t vals[2] = {(uint64_t)getpid(), seq};
    for (int v = 0; v < 2; v++) {
        buf[len++] = '.';
        int k = 0;
        uint64_t x = vals[v];
        do {
            num[k++] = (char)('0' + x % 10);
            x /= 10;
        } while (x);
        while (k)
            buf[len++] = num[--k];
    }
    buf[len++] = '.';
    buf[len++] = kind;
    memcpy(buf + len, ".heap", 6);
}

int ay_prof_dump_kind(char kind) {
    char path[AY_CONF_PATH_MAX + 64];
    dump_name(path, sizeof path, kind);
    ay_prof_enter();
    int err = dump_to(path);
    ay_prof_leave();
    if (err)
        warn_dump(path, err);
    else
        set_last(path);
    return err;
}

int ay_prof_dump(const char *path) {
    if (!ay_prof_enabled())
        return EPERM;
    if (!path)
        return ay_prof_dump_kind('m');
    ay_prof_enter();
    int err = dump_to(path);
    ay_prof_leave();
    if (!err)
        set_last(path);
    return err;
}

/* ---- the leak report ---- */

#define LEAK_TOP 100 /* stacks printed in full */
#define MAPS_MAX ((size_t)4 << 20)

static int leak_fd = -1;

AY_STARTUP_TEXT void ay_prof_start(void) {
    if (ay_prof_enabled() && ay_conf.prof_leak)
        leak_fd = fcntl(2, F_DUPFD_CLOEXEC, 3);
}

/* Sort snapshots by live bytes, largest first (shell sort: no allocation). */
static void sort_by_bytes(snap_t *v, size_t n) {
    for (size_t gap = n / 2; gap > 0; gap /= 2)
        for (size_t i = gap; i < n; i++)
            for (size_t j = i; j >= gap && v[j - gap].live_bytes < v[j].live_bytes; j -= gap) {
                snap_t t = v[j];
                v[j] = v[j - gap];
                v[j - gap] = t;
            }
}

static void sort_pcs(uintptr_t *v, size_t n) {
    for (size_t gap = n / 2; gap > 0; gap /= 2)
        for (size_t i = gap; i < n; i++)
            for (size_t j = i; j >= gap && v[j - gap] > v[j]; j -= gap) {
                uintptr_t t = v[j];
                v[j] = v[j - gap];
                v[j - gap] = t;
            }
}

static size_t find_pc(const uintptr_t *v, size_t n, uintptr_t pc) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid] < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void put_bytes(ay_fmt_t *f, uint64_t b) {
    ay_fmt_u64(f, b);
    ay_fmt_str(f, b == 1 ? " byte" : " bytes");
}

/* The distinct return addresses (minus one) of the stacks a leak report
 * shows, sorted, with their symbols; mapped from the OS, not malloc'ed. */
typedef struct leak_syms {
    uintptr_t *pcs; /* npcs addresses, then the symbols */
    ay_sym_t *syms; /* NULL when the memory could not be had */
    size_t npcs, pcs_bytes;
    char *maps; /* /proc/self/maps, MAPS_MAX bytes */
} leak_syms_t;

/* Reads /proc/self/maps into maps (at most MAPS_MAX bytes); its length. */
static size_t leak_read_maps(char *maps) {
    size_t maps_len = 0;
    int mfd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    ssize_t r;
    while (mfd >= 0 && maps_len < MAPS_MAX &&
           ((r = read(mfd, maps + maps_len, MAPS_MAX - maps_len)) > 0 || (r < 0 && errno == EINTR)))
        if (r > 0)
            maps_len += (size_t)r;
    if (mfd >= 0)
        close(mfd);
    return maps_len;
}

/* Symbolises the distinct addresses of the first `shown` stacks in one go. */
static void leak_symbolize(const snapshot_t *sn, size_t shown, leak_syms_t *ls) {
    size_t npcs = 0;
    for (size_t i = 0; i < shown; i++)
        npcs += sn->v[i].stack->depth;
    size_t pcs_bytes = (npcs + 1) * (sizeof(uintptr_t) + sizeof(ay_sym_t));
    ls->pcs_bytes = (pcs_bytes + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1);
    ls->pcs = ay_os_map(ls->pcs_bytes, AY_PAGE_SIZE);
    ls->maps = ay_os_map(MAPS_MAX, AY_PAGE_SIZE);
    ls->syms = NULL;
    ls->npcs = npcs;
    if (!ls->pcs || !ls->maps)
        return;
    uintptr_t *pcs = ls->pcs;
    size_t k = 0;
    for (size_t i = 0; i < shown; i++)
        for (uint32_t d = 0; d < sn->v[i].stack->depth; d++)
            pcs[k++] = sn->v[i].stack->pcs[d] - 1;
    sort_pcs(pcs, k);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || pcs[u - 1] != pcs[i])
            pcs[u++] = pcs[i];
    ls->npcs = u;
    ls->syms = (ay_sym_t *)(pcs + u + 1);
    size_t maps_len = leak_read_maps(ls->maps);
    ay_symbolize(ls->maps, maps_len, pcs, u, ls->syms, true);
}

static void leak_syms_drop(leak_syms_t *ls) {
    if (ls->pcs)
        ay_os_unmap(ls->pcs, ls->pcs_bytes);
    if (ls->maps)
        ay_os_unmap(ls->maps, MAPS_MAX);
}

/* The symbol of pc, or NULL when there is none. */
static const ay_sym_t *leak_sym(const leak_syms_t *ls, uintptr_t pc) {
    if (!ls->syms)
        return NULL;
    size_t at = find_pc(ls->pcs, ls->npcs, pc);
    return at < ls->npcs && ls->pcs[at] == pc ? &ls->syms[at] : NULL;
}

/* The report's first line: what is still live, from how many stacks. */
static void leak_put_summary(ay_fmt_t *f, const snapshot_t *sn) {
    uint64_t bytes = 0, objs = 0;
    for (size_t i = 0; i < sn->n; i++) {
        bytes += sn->v[i].live_bytes;
        objs += sn->v[i].live_n;
    }
    ay_fmt_str(f, "alloy: leak check (pid ");
    ay_fmt_u64(f, (uint64_t)getpid());
    ay_fmt_str(f, "): ");
    if (sn->n == 0) {
        ay_fmt_str(f, "no sampled allocation is still live at exit\n");
        return;
    }
    put_bytes(f, bytes);
    ay_fmt_str(f, " in ");
    ay_fmt_u64(f, objs);
    ay_fmt_str(f, objs == 1 ? " object" : " objects");
    ay_fmt_str(f, " still allocated at exit, from ");
    ay_fmt_u64(f, sn->n);
    ay_fmt_str(f, sn->n == 1 ? " stack" : " stacks");
    if (ay_prof_sample_mean() <= 1) {
        ay_fmt_str(f, " (prof_sample:1: every allocation recorded)\n");
    } else {
        ay_fmt_str(f, " (estimated from samples, one per ");
        ay_fmt_u64(f, ay_prof_sample_mean());
        ay_fmt_str(f, " bytes on average)\n");
    }
}

/* One frame line: `    #N 0xpc in func file:line (object+0xvaddr)`, each
 * part when known; object+vaddr is what `addr2line -f -e object vaddr`
 * reads. */
static void leak_put_frame(ay_fmt_t *f, unsigned frame, uintptr_t pc, const ay_sym_t *s) {
    ay_fmt_str(f, "    #");
    ay_fmt_u64(f, frame);
    ay_fmt_str(f, " ");
    ay_fmt_hex(f, pc + 1);
    if (s && s->func[0]) {
        ay_fmt_str(f, " in ");
        ay_fmt_str(f, s->func);
    }
    if (s && s->line) {
        ay_fmt_str(f, " ");
        ay_fmt_str(f, s->file);
        ay_fmt_str(f, ":");
        ay_fmt_u64(f, s->line);
    }
    if (s && s->object[0]) {
        ay_fmt_str(f, " (");
        ay_fmt_str(f, s->object);
        ay_fmt_str(f, "+");
        ay_fmt_hex(f, s->vaddr);
        ay_fmt_str(f, ")");
    }
    ay_fmt_str(f, "\n");
}

/* One stack of the report: what it holds, then its frames, the allocator's
 * own at the top left out. */
static void leak_put_stack(ay_fmt_t *f, const snap_t *e, const leak_syms_t *ls) {
    ay_fmt_str(f, "\nalloy: ");
    put_bytes(f, e->live_bytes);
    ay_fmt_str(f, " in ");
    ay_fmt_u64(f, e->live_n);
    ay_fmt_str(f, e->live_n == 1 ? " object" : " objects");
    if (ay_prof_sample_mean() > 1) {
        ay_fmt_str(f, " (");
        ay_fmt_u64(f, e->raw_live);
        ay_fmt_str(f, e->raw_live == 1 ? " sample)" : " samples)");
    }
    ay_fmt_str(f, " allocated from:\n");
    if (e->stack->depth == 0)
        ay_fmt_str(f, "    #0 (stack store full)\n");
    bool top = true;
    unsigned frame = 0;
    for (uint32_t d = 0; d < e->stack->depth; d++) {
        uintptr_t pc = e->stack->pcs[d] - 1;
        const ay_sym_t *s = leak_sym(ls, pc);
        if (top && s && s->func[0] && ay_sym_is_allocator(s->func))
            continue; /* alloy linked into the program: its own frames */
        top = false;
        leak_put_frame(f, frame++, pc, s);
    }
}

/* (Its module is not a start-up one, but gcc places a function only the
 * destructor below calls in the destructors' section, at the text's front.) */
AY_LATE_TEXT static void leak_report(int fd) {
    snapshot_t sn;
    if (snapshot_take(&sn, true) != 0)
        return;
    out_file_t o = {fd, 0, ay_os_map(AY_PROF_CHUNK, AY_PAGE_SIZE), 0, AY_PROF_CHUNK};
    if (!o.buf) {
        snapshot_drop(&sn);
        return;
    }
    ay_fmt_t f;
    ay_fmt_init(&f, out_put, &o);
    sort_by_bytes(sn.v, sn.n);
    size_t shown = sn.n < LEAK_TOP ? sn.n : LEAK_TOP;
    leak_syms_t ls;
    leak_symbolize(&sn, shown, &ls);
    leak_put_summary(&f, &sn);
    for (size_t i = 0; i < shown; i++)
        leak_put_stack(&f, &sn.v[i], &ls);
    if (sn.n > shown) {
        ay_fmt_str(&f, "\nalloy: ... and ");
        ay_fmt_u64(&f, sn.n - shown);
        ay_fmt_str(&f, " more stacks (a heap profile has them all: prof_final:true)\n");
    }
    if (sn.n)
        ay_fmt_str(&f, "\n");
    ay_fmt_flush(&f);
    out_flush(&o);
    ay_os_unmap(o.buf, o.cap);
    leak_syms_drop(&ls);
    snapshot_drop(&sn);
}

extern void __libc_freeres(void) __attribute__((weak));

__attribute__((destructor)) static void prof_at_exit(void) {
    if (!ay_prof_enabled())
        return;
    if (ay_conf.prof_final)
        ay_prof_dump_kind('f');
    if (!ay_conf.prof_leak)
        return;
    /* glibc keeps some blocks for the life of the process (stdio buffers,
     * NSS modules, the buffers of getpwuid and the like) and frees them on
     * request, for leak checkers: Valgrind asks too (--run-libc-freeres).
     * Only libc and the loader finalise after this destructor. */
    fflush(NULL);
    if (__libc_freeres)
        __libc_freeres();
    ay_prof_enter();
    leak_report(leak_fd >= 0 ? leak_fd : 2);
    ay_prof_leave();
    ay_prof_counts_t c;
    ay_prof_read_counts(&c);
    if (c.live && ay_conf.leak_exit_code) {
        _exit((int)ay_conf.leak_exit_code);
    }
}
