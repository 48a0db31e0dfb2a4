/* SPDX-License-Identifier: MIT */
/* alloy_top.c - `alloy top`: the live statistics of a running process.
 *
 *   alloy top PID          a screen refreshed every second, as top's; q quits
 *                          (into a pipe or a file: one plain screen after
 *                          another, without escape codes, until killed)
 *   alloy top --once PID   one screen, for scripts
 *   alloy top --json PID   the snapshot as one JSON object
 *
 * The process publishes its snapshot in /dev/shm/alloy.<pid> when it runs
 * with stats_shm:true (alloy run --live): see src/shm.h, which this command
 * compiles with src/os.c.  Reading never blocks or slows the process: the
 * segment is mapped read-only and copied under its seqlock, and a copy that
 * was being written is taken again, never shown.
 *
 * Bad input gets one line on stderr and status 1: a PID that does not run,
 * one that does not publish (not on alloy, or without stats_shm), a segment
 * of another user, or one that is not alloy's or of another version.  A
 * segment whose process is gone is stale: it is removed, when it is ours.
 * Bad usage: status 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <alloy.h>

#include "alloy_top.h"
#include "alloy_util.h"
#include "emit.h"
#include "shm.h"

#define READ_ROUNDS 200 /* rounds of seqlock tries, 5 ms apart: a second */

typedef struct top_seg {
    unsigned pid;
    char path[AY_SHM_PATH_MAX];
    const ay_shm_seg_t *seg;
    size_t size;
    dev_t dev;
    ino_t ino;
} top_seg_t;

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    die(1, "%s", msg);
}

static const char *user_name(uid_t uid) {
    static char buf[64];
    struct passwd *pw = getpwuid(uid);
    snprintf(buf, sizeof buf, "%s (uid %u)", pw ? pw->pw_name : "?", (unsigned)uid);
    return buf;
}

static bool pid_running(unsigned pid) { return kill((pid_t)pid, 0) == 0 || errno != ESRCH; }

/* PID is gone: say so, removing its segment when it is a stale one of ours. */
__attribute__((noreturn)) static void fail_gone(const top_seg_t *t) {
    struct stat st;
    if (lstat(t->path, &st) != 0)
        fail("no process %u is running", t->pid);
    if (st.st_uid == getuid() && S_ISREG(st.st_mode) && unlink(t->path) == 0)
        fail("no process %u is running (removed its stale segment %s)", t->pid, t->path);
    fail("no process %u is running (its stale segment %s is left: it belongs to %s)", t->pid,
         t->path, user_name(st.st_uid));
}

/* The checks on an open segment file, before it is mapped. */
static void check_file(const top_seg_t *t, int fd, struct stat *st) {
    if (fstat(fd, st) != 0)
        fail("cannot read %s: %s", t->path, strerror(errno));
    if (!S_ISREG(st->st_mode))
        fail("%s is not a regular file: not a segment alloy made", t->path);
    if (st->st_uid != getuid())
        fail("%s belongs to %s, not to you: alloy top reads only your own processes", t->path,
             user_name(st->st_uid));
    if ((st->st_mode & 07777) != 0600)
        fail("%s has mode %04o, not 0600: not a segment alloy made", t->path,
             (unsigned)(st->st_mode & 07777));
}

/* The checks on the mapped segment. */
static void check_map(const top_seg_t *t, const void *map, size_t size) {
    const ay_shm_seg_t *seg = map;
    switch (ay_shm_check(map, size)) {
    case AY_SHM_OK: break;
    case AY_SHM_BAD_VERSION:
        fail("%s is a segment of version %u (%u-byte snapshots); this alloy %s reads version %u: "
             "use the alloy command of the library that process runs",
             t->path, seg->version, seg->snap_bytes, ALLOY_VERSION_STRING, AY_SHM_VERSION);
    default: fail("%s is not an alloy statistics segment", t->path);
    }
    if (seg->pid != t->pid)
        fail("%s names process %llu, not %u", t->path, (unsigned long long)seg->pid, t->pid);
}

/* Map /dev/shm/alloy.<pid> read-only, or fail with the reason. */
static void seg_open(top_seg_t *t) {
    if (!pid_running(t->pid))
        fail_gone(t);
    int fd = open(t->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        fail("process %u publishes no alloy statistics (run it with alloy run --live, or "
             "ALLOY_CONF=stats_shm:true; is it on alloy?)",
             t->pid);
    struct stat st;
    if (fd < 0 && errno == EACCES && lstat(t->path, &st) == 0 && st.st_uid != getuid())
        fail("%s belongs to %s, not to you: alloy top reads only your own processes", t->path,
             user_name(st.st_uid));
    if (fd < 0)
        fail("cannot open %s: %s", t->path, strerror(errno));
    check_file(t, fd, &st);
    size_t size = (size_t)st.st_size;
    void *map = size ? mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED)
        fail("%s is not an alloy statistics segment (%s)", t->path,
             size ? strerror(errno) : "empty");
    check_map(t, map, size);
    t->seg = map;
    t->size = size;
    t->dev = st.st_dev;
    t->ino = st.st_ino;
}

static void seg_close(top_seg_t *t) {
    if (t->seg)
        munmap((void *)t->seg, t->size);
    t->seg = NULL;
}

static void sleep_ms(unsigned ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A consistent copy of the snapshot: torn copies are taken again. */
static void seg_read(const top_seg_t *t, ay_snap_t *s) {
    for (unsigned r = 0; r < READ_ROUNDS; r++) {
        if (ay_shm_read(t->seg, s, 1000) == 0)
            return;
        sleep_ms(5);
    }
    fail("could not read a consistent snapshot of process %u: it was being written at every "
         "try for a second",
         t->pid);
}

/* ---- output ---- */

static uint64_t now_unix_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *bytes(char out[24], uint64_t v) {
    ay_emit_fmt_bytes(out, v);
    return out;
}

static void json_str(FILE *o, const char *s) {
    fputc('"', o);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(o, "\\%c", c);
        else if (c < 0x20)
            fprintf(o, "\\u%04x", c);
        else
            fputc(c, o);
    }
    fputc('"', o);
}

static void json_totals(FILE *o, const ay_snap_t *s) {
    fprintf(o,
            "\"seq\":%llu,\"t\":%.3f,\"unix_ms\":%llu,\"interval_ms\":%llu,\"rss\":%llu,"
            "\"resident\":%llu,\"in_use\":%llu,\"tcache\":%llu,\"central\":%llu,"
            "\"span_tails\":%llu,\"pageheap_free\":%llu,\"metadata\":%llu,\"allocated\":%llu,"
            "\"active\":%llu,\"mapped\":%llu,\"large\":%llu,\"peak_active\":%llu,"
            "\"misses_per_s\":%llu,\"fetched_per_s\":%llu,\"released_per_s\":%llu,"
            "\"threads\":%llu,\"heaps\":%llu",
            (unsigned long long)s->seq, (double)s->t_ms / 1000, (unsigned long long)s->unix_ms,
            (unsigned long long)s->interval_ms, (unsigned long long)s->rss,
            (unsigned long long)s->resident, (unsigned long long)s->allocated,
            (unsigned long long)s->tcache, (unsigned long long)s->central,
            (unsigned long long)s->span_tails, (unsigned long long)s->pageheap_free,
            (unsigned long long)s->metadata, (unsigned long long)s->allocated,
            (unsigned long long)s->active, (unsigned long long)s->mapped,
            (unsigned long long)s->large, (unsigned long long)s->peak_active,
            (unsigned long long)s->misses_per_s, (unsigned long long)s->fetched_per_s,
            (unsigned long long)s->released_per_s, (unsigned long long)s->threads,
            (unsigned long long)s->heaps);
    fprintf(o,
            ",\"percpu\":%llu,\"percpu_caches\":%llu,\"percpu_misses\":%llu,"
            "\"percpu_overflows\":%llu,\"percpu_scavenges\":%llu,\"percpu_drains\":%llu,"
            "\"percpu_moves\":%llu",
            (unsigned long long)s->percpu_bytes, (unsigned long long)s->percpu_caches,
            (unsigned long long)s->percpu_misses, (unsigned long long)s->percpu_overflows,
            (unsigned long long)s->percpu_scavenges, (unsigned long long)s->percpu_drains,
            (unsigned long long)s->percpu_moves);
}

static void json_lists(FILE *o, const ay_snap_t *s) {
    fputs(",\"waste\":[", o);
    for (unsigned i = 0; i < s->nwaste && i < AY_SHM_WASTE; i++) {
        const ay_snap_class_t *c = &s->waste[i];
        fprintf(o,
                "%s{\"class\":%llu,\"size\":%llu,\"unused\":%llu,\"in_use\":%llu,\"tcache\":%llu,"
                "\"central\":%llu}",
                i ? "," : "", (unsigned long long)c->cls, (unsigned long long)c->size,
                (unsigned long long)c->unused, (unsigned long long)c->in_use,
                (unsigned long long)c->tcache, (unsigned long long)c->central);
    }
    fputs("],\"rss_history\":[", o);
    for (unsigned i = 0; i < s->nhistory && i < AY_SHM_HISTORY; i++)
        fprintf(o, "%s%llu", i ? "," : "", (unsigned long long)s->rss_history[i]);
    fprintf(o, "],\"prof\":%s,\"mallocs_per_s\":%llu,\"frees_per_s\":%llu,\"stacks\":[",
            s->prof ? "true" : "false", (unsigned long long)s->mallocs_per_s,
            (unsigned long long)s->frees_per_s);
    for (unsigned i = 0; i < s->nstacks && i < AY_SHM_STACKS; i++) {
        const ay_snap_stack_t *st = &s->stacks[i];
        fprintf(o, "%s{\"id\":\"0x%llx\",\"live_bytes\":%llu,\"pcs\":[", i ? "," : "",
                (unsigned long long)st->id, (unsigned long long)st->live_bytes);
        for (unsigned k = 0; k < AY_SHM_FRAMES && st->pcs[k]; k++)
            fprintf(o, "%s\"0x%llx\"", k ? "," : "", (unsigned long long)st->pcs[k]);
        fputs("]}", o);
    }
    fputs("]", o);
}

/* Why not per CPU, from the segment's header (written once, before the
 * segment got its name), into why[AY_SHM_WHY]. */
static const char *seg_why(const top_seg_t *t, char *why) {
    memcpy(why, t->seg->why, AY_SHM_WHY);
    why[AY_SHM_WHY - 1] = 0;
    return why;
}

static void print_json(const top_seg_t *t, const ay_snap_t *s) {
    printf("{\"pid\":%u,\"cmd\":", t->pid);
    json_str(stdout, t->seg->cmd);
    printf(",\"start_unix_ms\":%llu,\"age_ms\":%lld,\"percpu_mode\":\"%s\",\"percpu_why\":",
           (unsigned long long)t->seg->start_unix_ms,
           (long long)(now_unix_ms() - (int64_t)s->unix_ms), s->percpu ? "percpu" : "thread");
    char why[AY_SHM_WHY];
    json_str(stdout, seg_why(t, why));
    putchar(',');
    json_totals(stdout, s);
    json_lists(stdout, s);
    puts("}");
}

/* ---- the screen ---- */

typedef struct screen {
    FILE *o;
    bool utf8;      /* block characters for bars and the sparkline */
    unsigned width; /* columns */
} screen_t;

/* A bar of part/total of `cols` columns (eighths of a column in UTF-8). */
static void bar(screen_t *sc, uint64_t part, uint64_t total, unsigned cols) {
    static const char *const eighth[8] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    if (!total || !cols)
        return;
    uint64_t e = (uint64_t)(((unsigned __int128)part * cols * 8 + total / 2) / total);
    for (uint64_t i = 0; i < e / 8; i++)
        fputs(sc->utf8 ? "█" : "#", sc->o);
    if (e % 8)
        fputs(sc->utf8 ? eighth[e % 8] : (e % 8 >= 4 ? "+" : ""), sc->o);
}

/* RSS of the last minute, one character a second. */
static void sparkline(screen_t *sc, const ay_snap_t *s) {
    static const char *const level[8] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    static const char ascii[] = "_.-:=+*#";
    unsigned n = s->nhistory < AY_SHM_HISTORY ? (unsigned)s->nhistory : AY_SHM_HISTORY;
    uint64_t lo = UINT64_MAX, hi = 0;
    char a[24], b[24];
    for (unsigned i = 0; i < n; i++) {
        lo = s->rss_history[i] < lo ? s->rss_history[i] : lo;
        hi = s->rss_history[i] > hi ? s->rss_history[i] : hi;
    }
    if (!n)
        lo = 0;
    fprintf(sc->o, "RSS over the last %u s (min %s, max %s)\n  ", n, bytes(a, lo), bytes(b, hi));
    for (unsigned i = 0; i < n; i++) {
        unsigned l = hi > lo ? (unsigned)((s->rss_history[i] - lo) * 7 / (hi - lo)) : 0;
        if (sc->utf8)
            fputs(level[l], sc->o);
        else
            fputc(ascii[l], sc->o);
    }
    fputc('\n', sc->o);
}

static void render_head(screen_t *sc, const top_seg_t *t, const ay_snap_t *s) {
    char a[24], b[24], c[24], d[24], e[24];
    int64_t age = (int64_t)now_unix_ms() - (int64_t)s->unix_ms;
    fprintf(sc->o, "alloy top - pid %u (%s) - up %.1f s - snapshot %llu, every %llu ms", t->pid,
            t->seg->cmd, (double)s->t_ms / 1000, (unsigned long long)s->seq,
            (unsigned long long)s->interval_ms);
    if (age > (int64_t)(3 * s->interval_ms + 2000))
        fprintf(sc->o, " - STALE: last refreshed %.1f s ago", (double)age / 1000);
    fprintf(sc->o,
            "\nRSS %s   alloy resident %s (an upper bound)   in use %s   active %s   "
            "mapped %s\n\n",
            bytes(a, s->rss), bytes(b, s->resident), bytes(c, s->allocated), bytes(d, s->active),
            bytes(e, s->mapped));
}

/* The breakdown's parts; per CPU, the first tier's bytes in two rows: the
 * per-CPU caches', and the thread caches' (of threads with an explicit
 * default heap), the rest of tcache. */
static void render_breakdown(screen_t *sc, const ay_snap_t *s) {
    uint64_t percpu = s->percpu_bytes < s->tcache ? s->percpu_bytes : s->tcache;
    const struct {
        const char *name;
        uint64_t v;
    } part[] = {{"in use", s->allocated},
                {"per-CPU caches", percpu},
                {"thread caches", s->tcache - percpu},
                {"central caches", s->central},
                {"span tails", s->span_tails},
                {"page heap free", s->pageheap_free},
                {"metadata", s->metadata}};
    unsigned cols = sc->width > 44 ? sc->width - 36 : 8;
    char a[24];
    fputs("resident breakdown       bytes   share\n", sc->o);
    for (unsigned i = 0; i < sizeof part / sizeof part[0]; i++) {
        if (i == 1 && !s->percpu)
            continue; /* thread caches only */
        fprintf(sc->o, "  %-16s %9s  %5.1f%%  ", part[i].name, bytes(a, part[i].v),
                s->resident ? 100.0 * (double)part[i].v / (double)s->resident : 0.0);
        bar(sc, part[i].v, s->resident, cols);
        fputc('\n', sc->o);
    }
    fprintf(sc->o, "  %-16s %9s  100.0%%\n\n", "resident", bytes(a, s->resident));
}

static void render_classes(screen_t *sc, const ay_snap_t *s) {
    char a[24], b[24], c[24], d[24];
    fputs("size classes with the most unused bytes (unused = span bytes - in use)\n"
          "  class     size    unused    in use    tcache   central\n",
          sc->o);
    for (unsigned i = 0; i < s->nwaste && i < AY_SHM_WASTE; i++) {
        const ay_snap_class_t *w = &s->waste[i];
        fprintf(sc->o, "  %5llu %8llu %9s %9s %9s %9s\n", (unsigned long long)w->cls,
                (unsigned long long)w->size, bytes(a, w->unused), bytes(b, w->in_use),
                bytes(c, w->tcache), bytes(d, w->central));
    }
    if (!s->nwaste)
        fputs("  (none)\n", sc->o);
}

static void render_stacks(screen_t *sc, const ay_snap_t *s) {
    char a[24];
    if (!s->prof)
        return;
    fprintf(sc->o,
            "\nheap profile (estimated from the samples): %llu mallocs/s, %llu frees/s, %llu "
            "blocks live;\nthe stacks with the most live bytes:\n",
            (unsigned long long)s->mallocs_per_s, (unsigned long long)s->frees_per_s,
            (unsigned long long)s->prof_live);
    for (unsigned i = 0; i < s->nstacks && i < AY_SHM_STACKS; i++) {
        const ay_snap_stack_t *st = &s->stacks[i];
        fprintf(sc->o, "  %9s  stack %016llx:", bytes(a, st->live_bytes),
                (unsigned long long)st->id);
        for (unsigned k = 0; k < AY_SHM_FRAMES && st->pcs[k]; k++)
            fprintf(sc->o, " 0x%llx", (unsigned long long)st->pcs[k]);
        fputc('\n', sc->o);
    }
}

/* The first tier: per CPU, its caches' counters; else thread caches, and
 * why not per CPU (the segment's header has it). */
static void render_tier(screen_t *sc, const top_seg_t *t, const ay_snap_t *s) {
    if (s->percpu) {
        fprintf(sc->o,
                "tier      per-CPU caches, %llu set up; since start: %llu misses, %llu overflows, "
                "%llu scavenges, %llu drains, %llu moves\n",
                (unsigned long long)s->percpu_caches, (unsigned long long)s->percpu_misses,
                (unsigned long long)s->percpu_overflows, (unsigned long long)s->percpu_scavenges,
                (unsigned long long)s->percpu_drains, (unsigned long long)s->percpu_moves);
        return;
    }
    char why[AY_SHM_WHY];
    fprintf(sc->o, "tier      thread caches%s%s\n", seg_why(t, why)[0] ? "; not per CPU: " : "",
            why);
}

static void render(screen_t *sc, const top_seg_t *t, const ay_snap_t *s) {
    char a[24];
    render_head(sc, t, s);
    render_breakdown(sc, s);
    fprintf(sc->o, "rates     %llu %s misses/s, objects %llu fetched/s and %llu released/s\n",
            (unsigned long long)s->misses_per_s, s->percpu ? "cache" : "thread-cache",
            (unsigned long long)s->fetched_per_s, (unsigned long long)s->released_per_s);
    render_tier(sc, t, s);
    fprintf(sc->o, "threads   %llu    heaps %llu    peak active %s\n\n",
            (unsigned long long)s->threads, (unsigned long long)s->heaps, bytes(a, s->peak_active));
    sparkline(sc, s);
    fputc('\n', sc->o);
    render_classes(sc, s);
    render_stacks(sc, s);
}

/* ---- the interactive screen ---- */

static struct termios saved_tio;
static volatile sig_atomic_t raw_mode;

static void term_restore(void) {
    static const char leave[] = "\033[?25h\033[?1049l";
    if (!raw_mode)
        return;
    raw_mode = 0;
    tcsetattr(0, TCSAFLUSH, &saved_tio);
    if (write(1, leave, sizeof leave - 1) < 0) {
        /* nothing to do: the terminal is gone */
    }
}

static void on_signal(int sig) {
    term_restore();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void term_raw(void) {
    struct termios raw;
    if (!isatty(0) || tcgetattr(0, &saved_tio) != 0)
        return;
    raw = saved_tio;
    raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    if (tcsetattr(0, TCSAFLUSH, &raw) != 0)
        return;
    raw_mode = 1;
    atexit(term_restore);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    fputs("\033[?1049h\033[?25l", stdout);
}

static unsigned term_width(void) {
    struct winsize ws;
    if (ioctl(1, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    return 80;
}

/* The segment was replaced (the process exec'd) or removed (it exited). */
static bool seg_refresh(top_seg_t *t) {
    struct stat st;
    if (stat(t->path, &st) == 0 && st.st_dev == t->dev && st.st_ino == t->ino)
        return true;
    if (!pid_running(t->pid))
        return false;
    if (stat(t->path, &st) != 0)
        return false; /* it stopped publishing */
    seg_close(t);
    seg_open(t);
    return true;
}

/* Wait up to ms for a key; true when it is q. */
static bool quit_key(unsigned ms) {
    struct pollfd p = {0, POLLIN, 0};
    if (!raw_mode) {
        sleep_ms(ms);
        return false;
    }
    if (poll(&p, 1, (int)ms) > 0) {
        char c[16];
        ssize_t n = read(0, c, sizeof c);
        for (ssize_t i = 0; i < n; i++)
            if (c[i] == 'q' || c[i] == 'Q')
                return true;
    }
    return false;
}

static int top_loop(top_seg_t *t, bool utf8) {
    bool tty = isatty(1); /* else plain screens, one after another */
    if (tty)
        term_raw();
    for (;;) {
        if (!seg_refresh(t)) {
            term_restore();
            error_line("process %u %s", t->pid,
                       pid_running(t->pid) ? "stopped publishing its statistics" : "exited");
            return 0;
        }
        ay_snap_t s;
        seg_read(t, &s);
        char *text = NULL;
        size_t len = 0;
        screen_t sc = {open_memstream(&text, &len), utf8, term_width()};
        if (!sc.o)
            fail("out of memory");
        render(&sc, t, &s);
        if (tty)
            fputs("\nq quits\n", sc.o);
        fclose(sc.o);
        if (!tty) {
            fputs(text, stdout);
            fputs("\n", stdout);
            fflush(stdout);
            free(text);
            sleep_ms(1000);
            continue;
        }
        fputs("\033[H", stdout);
        for (char *line = text, *nl; *line; line = nl + 1) {
            nl = strchr(line, '\n');
            fwrite(line, 1, (size_t)(nl - line), stdout);
            fputs("\033[K\n", stdout);
        }
        fputs("\033[J", stdout);
        fflush(stdout);
        free(text);
        if (quit_key(1000))
            break;
    }
    term_restore();
    return 0;
}

int cmd_top(int argc, char **argv) {
    bool once = false, json = false;
    const char *pid_arg = NULL;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--once"))
            once = true;
        else if (!strcmp(argv[i], "--json"))
            json = true;
        else if (argv[i][0] == '-')
            usage_error("unknown option '%s'", argv[i]);
        else if (pid_arg)
            usage_error("one PID at a time");
        else
            pid_arg = argv[i];
    }
    if (!pid_arg)
        usage_error("which process? alloy top [--once|--json] PID");
    char *end;
    errno = 0;
    unsigned long pid = strtoul(pid_arg, &end, 10);
    if (errno || *end || end == pid_arg || pid == 0 || pid > INT32_MAX || pid_arg[0] == '-')
        usage_error("'%s' is not a process id", pid_arg);
    top_seg_t t = {.pid = (unsigned)pid};
    ay_shm_path(t.path, t.pid);
    seg_open(&t);
    setlocale(LC_CTYPE, "");
    bool utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    if (json || once) {
        ay_snap_t s;
        seg_read(&t, &s);
        screen_t sc = {stdout, utf8, 80};
        if (json)
            print_json(&t, &s);
        else
            render(&sc, &t, &s);
        return 0;
    }
    return top_loop(&t, utf8);
}
