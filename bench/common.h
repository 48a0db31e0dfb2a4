/* SPDX-License-Identifier: MIT */
/* common.h - what every workload program shares: clocks (a calibrated cycle
 * counter for per-operation timing, the monotonic clock for wall time), RSS
 * readings, a per-thread random generator, strict argument parsing, and the
 * line format the runner reads.
 *
 * Output protocol (stdout, one record per line, fields are key=value):
 *   info key=value ...         facts about the run (malloc provider, timer)
 *   res case=NAME metric=value ...   one result row per case
 *   ts case=NAME t_ms=.. rss=.. live=..   a time-series sample (RSS over time)
 * Anything else on stdout is a bug; diagnostics go to stderr.  Bad arguments
 * exit with status 2 and a message naming the argument.
 */
#ifndef ALLOY_BENCH_COMMON_H
#define ALLOY_BENCH_COMMON_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* Exit 2 with "prog: message" on stderr. */
void bench_die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Set the program name used in messages and print the `info` lines that say
 * which library provides malloc (so the runner can tell LD_PRELOAD worked). */
void bench_init(const char *prog);

/* Parse an unsigned integer with an optional k/m/g suffix (powers of 1000 for
 * counts when si, of 1024 otherwise); dies naming `what` on junk, overflow, or
 * a value outside [lo, hi]. */
uint64_t bench_parse_u64(const char *s, const char *what, uint64_t lo, uint64_t hi);
/* Parse a comma-separated list of such integers into out[0..max); returns n. */
unsigned bench_parse_list(const char *s, const char *what, uint64_t *out, unsigned max, uint64_t lo,
                          uint64_t hi);

/* One option of a program's command line, -LETTER VALUE: a number that
 * bench_parse_u64 parses (naming `what`, within [lo, hi]) into the variable
 * `to` points at (a uint64_t, size_t or unsigned: `size` bytes), or, when
 * `parse` is set, a value that function takes. */
typedef struct bench_opt {
    char letter;
    const char *what;
    uint64_t lo, hi;
    void *to;
    size_t size;
    void (*parse)(const char *arg);
} bench_opt_t;
#define BENCH_NUM(letter, what, lo, hi, var)                                                       \
    { (letter), (what), (lo), (hi), &(var), sizeof(var), NULL }
#define BENCH_FN(letter, fn)                                                                       \
    { (letter), NULL, 0, 0, NULL, 0, (fn) }
/* 0 when s is a, 1 when it is b; else dies with "WHAT: unknown mode 'S'
 * (want A or B)". */
int bench_parse_mode(const char *s, const char *what, const char *a, const char *b);
/* Parse argv's options, in their order, against the n of opts: an unknown
 * one, -h, or an argument that is not an option dies with `usage`. */
void bench_options(int argc, char **argv, const char *usage, const bench_opt_t *opts, unsigned n);

/* Monotonic wall clock in nanoseconds. */
uint64_t bench_now_ns(void);
/* CPU time of the whole process (all threads, user + system) in nanoseconds.
 * Single-threaded workloads are timed with it: on a shared machine it is not
 * inflated by other processes' time slices, yet it still counts the kernel
 * work (page faults, mmap) that an allocator causes. */
uint64_t bench_cpu_ns(void);

/* Cycle counter: raw ticks, cheap.  bench_tick_calibrate() measures ticks per
 * nanosecond and the median cost of an empty timed region (in ticks). */
static inline uint64_t bench_ticks(void) {
#if defined(__x86_64__) || defined(__i386__)
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
#else
    return bench_now_ns();
#endif
}
void bench_tick_calibrate(void);
extern double bench_ticks_per_ns;    /* set by bench_tick_calibrate */
extern uint64_t bench_tick_overhead; /* ticks of an empty timed region */

struct hist;
/* Time `pairs` malloc(size)/free pairs in groups of `group`, recording each
 * group's ticks (less the timer's own overhead) in h. */
void bench_time_pairs(struct hist *h, uint64_t pairs, unsigned group, size_t size);

/* Resident set size now (from /proc/self/statm) and the peak so far
 * (VmHWM from /proc/self/status), in bytes.  Both read with open/read into a
 * stack buffer: sampling RSS never calls malloc, so it cannot disturb the
 * allocator being measured (an idle program stays idle while it is watched). */
size_t bench_rss_now(void);
size_t bench_rss_peak(void);

/* The process's page faults and context switches so far, from getrusage
 * (RUSAGE_SELF: every thread, those that have exited included). */
typedef struct bench_usage {
    uint64_t minflt, majflt; /* page faults: minor (no I/O) and major */
    uint64_t nvcsw, nivcsw;  /* context switches: voluntary and involuntary */
} bench_usage_t;
bench_usage_t bench_usage(void);
/* The change since `since`, as the fields every program appends to its `res`
 * lines, so that all of them count alike:
 *   " faults=MIN+MAJ majflt=MAJ ctx_switches=VOL+INVOL vol_ctx_switches=VOL
 *     invol_ctx_switches=INVOL"
 * Returns a static buffer, overwritten by the next call. */
const char *bench_usage_fields(const bench_usage_t *since);

/* The thread harness of the multi-threaded programs: n workers that start
 * their timed work together and are timed from the earliest start to the
 * latest end (each stamps its own: main may be descheduled at a barrier),
 * with the process's CPU time and usage counters over the same span.
 *
 *   main                                   worker i (fn(arg i))
 *   bench_team_start(&t, n, fn, args, sz)
 *                                          set-up; bench_team_go(&t)
 *                                          the timed work
 *                                          [bench_team_end(&t)]
 *   bench_team_wait_done(&t)               bench_team_done(&t)
 *   read what is live (RSS, counters)
 *   bench_team_release(&t)                 (returns) clean-up, untimed
 *   bench_team_join(&t)
 *
 * bench_team_start creates the threads, worker i getting args + i * sz,
 * then reads the usage counters and CPU time; bench_team_go waits for every
 * worker and main, and stamps the worker's start; bench_team_end stamps its
 * end (bench_team_done does, when it was not called: a worker that must
 * keep serving others after its own work calls it first); bench_team_done
 * waits until every worker is done, then until main has read what it
 * wanted; bench_team_wait_done returns once every worker is done, with
 * cpu_ms and usage_fields set; bench_team_join joins them and sets t0 and
 * t1, the earliest start and the latest end. */
typedef struct bench_team {
    unsigned n;
    pthread_t *tids;
    uint64_t *start_ns, *end_ns; /* each worker's stamps */
    pthread_barrier_t barrier;
    uint64_t first_ns; /* the earliest start so far (atomic) */
    bench_usage_t u0;
    uint64_t cpu0;
    double cpu_ms;          /* process CPU time, start to done (wait_done) */
    char usage_fields[256]; /* bench_usage_fields, start to done (wait_done) */
    uint64_t t0, t1;        /* earliest start, latest end (join) */
} bench_team_t;
void bench_team_start(bench_team_t *t, unsigned n, void *(*fn)(void *), void *args, size_t size);
void bench_team_go(bench_team_t *t);
void bench_team_end(bench_team_t *t);
void bench_team_done(bench_team_t *t);
void bench_team_wait_done(bench_team_t *t);
void bench_team_release(bench_team_t *t);
void bench_team_join(bench_team_t *t);
/* The earliest start so far, for samples taken while the workers run. */
uint64_t bench_team_first_start(const bench_team_t *t);
/* Wall time from the earliest start to the latest end, in seconds (after join). */
double bench_team_secs(const bench_team_t *t);

/* splitmix64: small, fast, good enough for choosing sizes. */
static inline uint64_t bench_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
/* Uniform in [lo, hi]. */
static inline uint64_t bench_rand_range(uint64_t *state, uint64_t lo, uint64_t hi) {
    return lo + bench_rand(state) % (hi - lo + 1);
}
/* Log-uniform in [lo, hi] (each octave equally likely): many small, few big. */
uint64_t bench_rand_log(uint64_t *state, uint64_t lo, uint64_t hi);
/* Shuffle n objects and their sizes together (Fisher-Yates), so that freeing
 * a prefix or a suffix frees a random subset. */
void bench_shuffle(void **obj, size_t *size, size_t n, uint64_t *state);

/* Write to memory the compiler cannot prove dead, so a malloc/free pair is
 * never elided and every page we claim to use is really touched. */
void bench_touch(void *p, size_t size);
extern volatile uintptr_t bench_sink;

#endif
