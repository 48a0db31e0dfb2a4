/* SPDX-License-Identifier: MIT */
/* common.c - clocks, RSS, argument parsing and malloc-provider detection
 * shared by the workload programs (see common.h for the output protocol). */
#define _GNU_SOURCE
#include "common.h"
#include "hist.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <math.h>

static const char *prog_name = "bench";
double bench_ticks_per_ns = 1.0;
uint64_t bench_tick_overhead;
volatile uintptr_t bench_sink;

void bench_die(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "%s: ", prog_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(2);
}

void bench_init(const char *prog) {
    const char *slash = strrchr(prog, '/');
    prog_name = slash ? slash + 1 : prog;
    /* Which object does the dynamic linker bind `malloc` to?  With LD_PRELOAD
     * working it is the preloaded library, otherwise libc. */
    void *sym = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info info;
    const char *from = "unknown";
    if (sym && dladdr(sym, &info) && info.dli_fname)
        from = info.dli_fname;
    printf("info malloc_from=%s\n", from);
    fflush(stdout);
}

uint64_t bench_parse_u64(const char *s, const char *what, uint64_t lo, uint64_t hi) {
    if (!s || !*s)
        bench_die("%s: empty value", what);
    if (*s == '-' || *s == '+' || *s == ' ')
        bench_die("%s: '%s' is not an unsigned number", what, s);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno)
        bench_die("%s: '%s' is not an unsigned number", what, s);
    uint64_t mult = 1;
    if (*end) {
        switch (*end) {
        case 'k':
        case 'K': mult = 1000; break;
        case 'm':
        case 'M': mult = 1000000; break;
        case 'g':
        case 'G': mult = 1000000000; break;
        default: bench_die("%s: '%s' has junk after the number", what, s);
        }
        if (end[1] == 'i' && end[2] == '\0')
            mult = mult == 1000 ? 1024 : mult == 1000000 ? 1048576 : 1073741824;
        else if (end[1] != '\0')
            bench_die("%s: '%s' has junk after the number", what, s);
    }
    if (v > UINT64_MAX / mult)
        bench_die("%s: '%s' is too large", what, s);
    v *= mult;
    if (v < lo || v > hi)
        bench_die("%s: %llu is outside [%llu, %llu]", what, v, (unsigned long long)lo,
                  (unsigned long long)hi);
    return v;
}

unsigned bench_parse_list(const char *s, const char *what, uint64_t *out, unsigned max, uint64_t lo,
                          uint64_t hi) {
    char buf[256];
    if (strlen(s) >= sizeof buf)
        bench_die("%s: list too long", what);
    strcpy(buf, s);
    unsigned n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == max)
            bench_die("%s: more than %u values", what, max);
        out[n++] = bench_parse_u64(tok, what, lo, hi);
    }
    if (n == 0)
        bench_die("%s: empty list", what);
    return n;
}

uint64_t bench_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t bench_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void bench_tick_calibrate(void) {
    uint64_t t0 = bench_now_ns(), c0 = bench_ticks();
    while (bench_now_ns() - t0 < 20000000) /* 20 ms */
        ;
    uint64_t t1 = bench_now_ns(), c1 = bench_ticks();
    bench_ticks_per_ns = (double)(c1 - c0) / (double)(t1 - t0);
    if (!(bench_ticks_per_ns > 0))
        bench_ticks_per_ns = 1.0;
    enum { N = 1001 };
    static uint64_t d[N];
    for (int i = 0; i < N; i++) {
        uint64_t a = bench_ticks();
        uint64_t b = bench_ticks();
        d[i] = b - a;
    }
    qsort(d, N, sizeof d[0], cmp_u64);
    bench_tick_overhead = d[N / 2];
    printf("info ticks_per_ns=%.3f timer_overhead_ns=%.1f\n", bench_ticks_per_ns,
           (double)bench_tick_overhead / bench_ticks_per_ns);
}

/* Read a small /proc file into buf (NUL-terminated) without calling malloc.
 * Returns the length, or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t cap) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len + 1 < cap) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (ssize_t)len;
}

size_t bench_rss_now(void) {
    char buf[128];
    unsigned long size = 0, resident = 0;
    if (read_proc("/proc/self/statm", buf, sizeof buf) <= 0 ||
        sscanf(buf, "%lu %lu", &size, &resident) != 2)
        return 0;
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

size_t bench_rss_peak(void) {
    /* VmHWM is this address space's high-water mark.  ru_maxrss is not usable
     * here: it survives exec, so it reports the parent's (the runner's) RSS
     * when that was larger than ours. */
    char buf[4096];
    if (read_proc("/proc/self/status", buf, sizeof buf) > 0) {
        const char *line = strstr(buf, "\nVmHWM:");
        unsigned long kb = 0;
        if (line && sscanf(line + 1, "VmHWM: %lu kB", &kb) == 1)
            return (size_t)kb * 1024;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (size_t)ru.ru_maxrss * 1024;
}

bench_usage_t bench_usage(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (bench_usage_t){(uint64_t)ru.ru_minflt, (uint64_t)ru.ru_majflt, (uint64_t)ru.ru_nvcsw,
                           (uint64_t)ru.ru_nivcsw};
}

const char *bench_usage_fields(const bench_usage_t *since) {
    static char buf[256];
    bench_usage_t now = bench_usage();
    unsigned long long min = now.minflt - since->minflt, maj = now.majflt - since->majflt;
    unsigned long long vol = now.nvcsw - since->nvcsw, invol = now.nivcsw - since->nivcsw;
    snprintf(buf, sizeof buf,
             " faults=%llu majflt=%llu ctx_switches=%llu vol_ctx_switches=%llu "
             "invol_ctx_switches=%llu",
             min + maj, maj, vol + invol, vol, invol);
    return buf;
}

uint64_t bench_rand_log(uint64_t *state, uint64_t lo, uint64_t hi) {
    double u = (double)(bench_rand(state) >> 11) * (1.0 / 9007199254740992.0);
    double v = exp(log((double)lo) + u * (log((double)hi + 1) - log((double)lo)));
    uint64_t r = (uint64_t)v;
    if (r < lo)
        r = lo;
    if (r > hi)
        r = hi;
    return r;
}

void bench_shuffle(void **obj, size_t *size, size_t n, uint64_t *state) {
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(bench_rand(state) % i);
        void *p = obj[i - 1];
        size_t s = size[i - 1];
        obj[i - 1] = obj[j], size[i - 1] = size[j];
        obj[j] = p, size[j] = s;
    }
}

void bench_touch(void *p, size_t size) {
    unsigned char *c = p;
    c[0] = (unsigned char)size;
    for (size_t off = 4096; off < size; off += 4096)
        c[off] = 1;
    if (size > 1)
        c[size - 1] = 2;
    bench_sink += (uintptr_t)p;
}

void bench_time_pairs(struct hist *h, uint64_t pairs, unsigned group, size_t size) {
    for (uint64_t i = 0; i < pairs; i += group) {
        uint64_t a = bench_ticks();
        for (unsigned j = 0; j < group; j++) {
            volatile char *p = malloc(size);
            p[0] = (char)j;
            free((void *)p);
        }
        uint64_t d = bench_ticks() - a;
        hist_record(h, d > bench_tick_overhead ? d - bench_tick_overhead : 0);
    }
}

void bench_options(int argc, char **argv, const char *usage, const bench_opt_t *opts, unsigned n) {
    char spec[64];
    size_t k = 0;
    for (unsigned i = 0; i < n && k + 3 < sizeof spec; i++) {
        spec[k++] = opts[i].letter;
        spec[k++] = ':';
    }
    spec[k++] = 'h';
    spec[k] = 0;
    int c;
    while ((c = getopt(argc, argv, spec)) != -1) {
        const bench_opt_t *o = NULL;
        for (unsigned i = 0; i < n && !o; i++)
            if (c != 'h' && opts[i].letter == c)
                o = &opts[i];
        if (!o)
            bench_die("%s", usage);
        if (o->parse) {
            o->parse(optarg);
            continue;
        }
        uint64_t v = bench_parse_u64(optarg, o->what, o->lo, o->hi);
        if (o->size == sizeof(unsigned)) {
            unsigned u = (unsigned)v;
            memcpy(o->to, &u, sizeof u);
        } else {
            memcpy(o->to, &v, sizeof v);
        }
    }
    if (optind != argc)
        bench_die("%s", usage);
}

int bench_parse_mode(const char *s, const char *what, const char *a, const char *b) {
    if (strcmp(s, a) == 0)
        return 0;
    if (strcmp(s, b) == 0)
        return 1;
    bench_die("%s: unknown mode '%s' (want %s or %s)", what, s, a, b);
}

/* The thread harness (common.h).  Each worker's index, for its stamps. */
static _Thread_local unsigned team_index;
typedef struct team_arg {
    bench_team_t *team;
    unsigned index;
    void *(*fn)(void *);
    void *arg;
} team_arg_t;

static void *team_main(void *p) {
    team_arg_t a = *(team_arg_t *)p;
    free(p);
    team_index = a.index;
    return a.fn(a.arg);
}

void bench_team_start(bench_team_t *t, unsigned n, void *(*fn)(void *), void *args, size_t size) {
    memset(t, 0, sizeof *t);
    t->n = n;
    t->first_ns = UINT64_MAX;
    t->tids = calloc(n, sizeof *t->tids);
    t->start_ns = calloc(n, sizeof *t->start_ns);
    t->end_ns = calloc(n, sizeof *t->end_ns);
    if (!t->tids || !t->start_ns || !t->end_ns)
        bench_die("out of memory for %u threads", n);
    pthread_barrier_init(&t->barrier, NULL, n + 1);
    for (unsigned i = 0; i < n; i++) {
        team_arg_t *a = malloc(sizeof *a);
        if (!a)
            bench_die("out of memory for %u threads", n);
        *a = (team_arg_t){t, i, fn, (char *)args + (size_t)i * size};
        if (pthread_create(&t->tids[i], NULL, team_main, a))
            bench_die("pthread_create failed");
    }
    t->u0 = bench_usage();
    t->cpu0 = bench_cpu_ns();
}

void bench_team_go(bench_team_t *t) {
    pthread_barrier_wait(&t->barrier);
    uint64_t now = bench_now_ns(), seen = __atomic_load_n(&t->first_ns, __ATOMIC_RELAXED);
    t->start_ns[team_index] = now;
    while (now < seen && !__atomic_compare_exchange_n(&t->first_ns, &seen, now, 0, __ATOMIC_RELAXED,
                                                      __ATOMIC_RELAXED))
        ;
}

void bench_team_end(bench_team_t *t) { t->end_ns[team_index] = bench_now_ns(); }

void bench_team_done(bench_team_t *t) {
    if (!t->end_ns[team_index])
        bench_team_end(t);
    pthread_barrier_wait(&t->barrier); /* every worker is done */
    pthread_barrier_wait(&t->barrier); /* main has read what is live */
}

void bench_team_wait_done(bench_team_t *t) {
    pthread_barrier_wait(&t->barrier); /* go */
    pthread_barrier_wait(&t->barrier); /* done */
    t->cpu_ms = (double)(bench_cpu_ns() - t->cpu0) / 1e6;
    snprintf(t->usage_fields, sizeof t->usage_fields, "%s", bench_usage_fields(&t->u0));
}

void bench_team_release(bench_team_t *t) { pthread_barrier_wait(&t->barrier); }

void bench_team_join(bench_team_t *t) {
    t->t0 = UINT64_MAX;
    t->t1 = 0;
    for (unsigned i = 0; i < t->n; i++) {
        pthread_join(t->tids[i], NULL);
        if (t->start_ns[i] < t->t0)
            t->t0 = t->start_ns[i];
        if (t->end_ns[i] > t->t1)
            t->t1 = t->end_ns[i];
    }
    pthread_barrier_destroy(&t->barrier);
    free(t->tids);
    free(t->start_ns);
    free(t->end_ns);
}

uint64_t bench_team_first_start(const bench_team_t *t) {
    return __atomic_load_n(&t->first_ns, __ATOMIC_RELAXED);
}

double bench_team_secs(const bench_team_t *t) { return (double)(t->t1 - t->t0) / 1e9; }
