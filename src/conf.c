/* SPDX-License-Identifier: MIT */
/* conf.c - the settings table and the ALLOY_CONF parser (see conf.h).
 * Reads the environment through `environ` and never allocates, so it can
 * run inside the first malloc. */
#include "conf.h"

#include <string.h>

#include "error.h"

extern char **environ;

/* Link-time default: a program may define `const char *alloy_malloc_conf =
 * "decay_ms:0";`, as jemalloc's malloc_conf. */
__attribute__((weak)) extern const char *alloy_malloc_conf;

ay_conf_t ay_conf;

#define AT(field) offsetof(ay_conf_t, field)
#define GiB ((uint64_t)1 << 30)

static const ay_conf_key_t keys[] = {
    {"batch_policy", AY_CONF_POLICY, AT(batch.policy), 0, 0, 0, "compact", NULL,
     "How batches grow and spans are sized: compact (guard's rule; objects above 1 KiB get a "
     "sixteenth of batch_budget, and a span is the fewest pages that hold the batch with at most "
     "an eighth left over), clip (the paper's \"current\" policy), guard or pow2 (the paper's "
     "guards, with its spans P(S,n)), or lean (guard's rule with L(S) = min(32 KiB / S, 128))."},
    {"batch_budget", AY_CONF_BYTES, AT(batch.byte_budget), 4, 8, GiB, "256k", NULL,
     "Bytes one batch may move: L(S) = min(batch_budget / S, batch_cap) (under compact, "
     "objects above 1 KiB: a sixteenth of it)."},
    {"batch_cap", AY_CONF_COUNT, AT(batch.object_cap), 0, 1, 65536, "1024", NULL,
     "Objects one batch may move: L(S) = min(batch_budget / S, batch_cap)."},
    {"return_threshold", AY_CONF_RATIO, AT(return_k_halves), 0, 3, 128, "2", NULL,
     "A thread's list gives n objects back when it holds k*n (k = this value)."},
    {"tcache", AY_CONF_BOOL, AT(tcache), 0, 0, 1, "true", NULL, "Thread caches on or off."},
    {"percpu", AY_CONF_PERCPU, AT(percpu), 0, 0, 0, ALLOY_PERCPU ? "auto" : "off", NULL,
     "The first tier: off, one cache per thread; auto, one cache per CPU (restartable "
     "sequences on the C library's rseq registration, x86-64, Linux 6.3 or later, the release "
     "flavour) where it can run, else one cache per thread. A build configured with cmake "
     "-DALLOY_PERCPU=OFF has thread caches alone (default off there). percpu.mode and "
     "percpu.why in alloy_ctl say which runs, and why."},
    {"tcache_max_bytes", AY_CONF_BYTES, AT(tcache_max_bytes), 8, 0, (uint64_t)1 << 40, "2m", NULL,
     "Cache limit of one thread, or of one CPU in per-CPU mode, checked every 64 slow-path "
     "events or a quarter of the limit fetched; above it every list gives half back."},
    {"tcache_total_bytes", AY_CONF_BYTES, AT(tcache_total_bytes), 8, 0, (uint64_t)1 << 40, "8m",
     NULL,
     "All thread caches together: with many threads, each thread's limit is this divided by "
     "the threads, but at least 256 KiB (or tcache_max_bytes if lower)."},
    {"transfer_bytes", AY_CONF_BYTES, AT(transfer_bytes), 8, 0, (uint64_t)1 << 40, "512k", NULL,
     "Bytes of one size class that a NUMA node's transfer cache (the central tier's cache of "
     "whole batches that thread caches gave back, for the next miss; one per class per node, "
     "shared by the node's automatic heaps) holds at most; 0: no transfer caches, batches go "
     "straight back to their spans."},
    {"decay_ms", AY_CONF_MS, AT(decay_ms), 0, 0, (uint64_t)1 << 40, "1000", NULL,
     "Free pages are purged (madvise) once they have been free this long: by the next "
     "slow-path event of any thread after that (a thread cache's miss or overflow, a thread's "
     "exit, a large block), or by the background thread; 0 purges at once, -1 never. After "
     "this long plus 100 ms with no miss, overflow or exit, the next one also gives back every "
     "block the transfer caches hold, and purges every free page. A page heap's dirty free pages "
     "above "
     "max(64 MiB, twice its active pages) are purged at once (the cap is per heap: N heaps can "
     "hold N times it)."},
    {"background_thread", AY_CONF_BG, AT(background_thread), 0, 0, 0, "false", NULL,
     "Purge from a background thread as well, so that a process that stops calling malloc "
     "(or only hits its caches) also shrinks: true runs one from start-up; auto starts one "
     "when a slow path, once the process has run for 100 ms, finds memory that only a "
     "later round could give back (free pages not yet purged, batches in the transfer "
     "caches, blocks in the per-CPU caches), and its rounds then slow down, up to 8 s "
     "apart, while they find nothing held; false (as jemalloc's default) runs none."},
    {"thp", AY_CONF_THP, AT(thp), 0, 0, 0, "auto", NULL,
     "Transparent huge pages (MADV_HUGEPAGE) for the page heap's blocks: auto gives them to "
     "blocks of 2 MiB or more (the others are left to the kernel's default); always to every "
     "block, from the first; never to none (blocks "
     "are marked MADV_NOHUGEPAGE). true and false, the old boolean, mean auto and never."},
    {"heaps", AY_CONF_COUNT, AT(heaps), 0, 1, 128, NULL,
     "1 with per-CPU caches, else the number of CPUs",
     "Automatic heaps. Each thread binds to the least loaded one; with NUMA, to the least "
     "loaded of its node's, and each node has at least one."},
    {"numa", AY_CONF_BOOL, AT(numa), 0, 0, 1, "true", "true when there is more than one node",
     "NUMA awareness (docs/NUMA.md): heaps grouped by node, each thread on a heap of its CPU's "
     "node, whose pages are placed there with mbind."},
    {"junk", AY_CONF_BOOL, AT(junk), 0, 0, 1, "false", NULL,
     "Debugging fill: 0xa5 into new blocks, 0x5a into freed ones. Turns the thread caches off."},
    {"zero", AY_CONF_BOOL, AT(zero), 0, 0, 1, "false", NULL,
     "Debugging fill: zeros into new blocks. Turns the thread caches off."},
    {"stats_print", AY_CONF_BOOL, AT(stats_print), 0, 0, 1, "false", NULL,
     "Print the statistics report at exit."},
    {"stats_print_opts", AY_CONF_LETTERS, AT(stats_print_opts), 0, 0, 7, NULL, "none (the summary)",
     "alloy_stats_print's opts for the report at exit: f the full report with tables, J JSON, "
     "h no heaps, c no size classes."},
    {"stats_file", AY_CONF_PATH, AT(stats_file), 0, 1, AY_CONF_PATH_MAX - 1, NULL, "none (stderr)",
     "Write the report at exit (stats_print:true) to this file instead of stderr. %p in the "
     "name becomes the pid; a relative name is taken from the directory the program started "
     "in; a file that exists is never overwritten: then, or when the file cannot be created, "
     "one warning, and the report goes to stderr."},
    {"stats_print_pid", AY_CONF_COUNT, AT(stats_print_pid), 0, 0, 4194304, "0", NULL,
     "Print the report at exit only in the process with this pid (0: in every process that "
     "exits); `alloy run --stats` sets it to the pid of the program it runs, so that the "
     "program's children, which inherit ALLOY_CONF, print none."},
    {"abort_on_error", AY_CONF_BOOL, AT(abort_on_error), 0, 0, 1, "false", NULL,
     "Abort on out-of-memory and on a bad setting."},
    {"guard_sample", AY_CONF_COUNT, AT(guard_sample), 0, 0, (uint64_t)1 << 30, "0", NULL,
     "Sampled guarded allocations: about one allocation in N (of at most a page, counted as "
     "thread caches take objects in) gets a page of its own between inaccessible pages; a use "
     "after free or an overflow there is reported on SIGSEGV. 0 turns it off; 1 guards every "
     "allocation of at most a page while a slot is free (the caches are then off)."},
    {"guard_slots", AY_CONF_COUNT, AT(guard_slots), 0, 1, 65536, "256", NULL,
     "Guarded pages reserved for guard_sample (each with a guard page): how many sampled "
     "blocks can be live, or freed and still inaccessible, at once."},
    {"secure_tags", AY_CONF_BOOL, AT(secure_tags), 0, 0, 1, "false", NULL,
     "Secure flavour only: a tag (canary) after every small block, checked at its free, which "
     "catches an overflow made by plain stores there (the copy functions are checked anyway); "
     "8 bytes more per block."},
    {"quarantine", AY_CONF_BYTES, AT(quarantine), 8, 0, GiB, "0", NULL,
     "Secure flavour only (the others warn once and ignore it): the most bytes of freed blocks "
     "one thread's quarantine holds, where a freed block of up to 4 KiB waits for at least 3 "
     "more frees of its size class (up to 17 in a class the thread frees often) before it is "
     "handed out again, so that a use after free reads or writes a block nobody owns; 0 turns "
     "it off. docs/HARDENING.md gives what it costs at 128k."},
    {"prof", AY_CONF_BOOL, AT(prof), 0, 0, 1, "false", NULL,
     "Heap profiling: sample allocations with their stacks (docs/PROFILING.md)."},
    {"prof_active", AY_CONF_BOOL, AT(prof_active), 0, 0, 1, "true", NULL,
     "Sampling on at start-up; prof.active pauses and resumes it (needs prof:true)."},
    {"prof_sample", AY_CONF_BYTES, AT(prof_sample), 8, 1, (uint64_t)1 << 40, "512k", NULL,
     "Mean bytes between samples (exponential intervals); 1 records every allocation."},
    {"prof_prefix", AY_CONF_PATH, AT(prof_prefix), 0, 1, AY_CONF_PATH_MAX - 1, "alloy", NULL,
     "Heap profiles go to <prefix>.<pid>.<seq>.<f|i|m>.heap (final, interval, manual)."},
    {"prof_final", AY_CONF_BOOL, AT(prof_final), 0, 0, 1, "false", NULL,
     "Write a heap profile at exit."},
    {"prof_interval", AY_CONF_BYTES, AT(prof_interval), 8, 0, (uint64_t)1 << 50, "0", NULL,
     "Write a heap profile each time this many more bytes have been allocated (estimated from "
     "the samples); 0 never."},
    {"prof_leak", AY_CONF_BOOL, AT(prof_leak), 0, 0, 1, "false", NULL,
     "Report the sampled allocations still live at exit, by stack (turns prof on)."},
    {"leak_exit_code", AY_CONF_COUNT, AT(leak_exit_code), 0, 0, 255, "0", NULL,
     "Exit status when the leak report finds live allocations; 0 leaves the status alone."},
    {"timeline_ms", AY_CONF_COUNT, AT(timeline_ms), 0, 10, 3600000, "100", NULL,
     "How often the timeline records and the live snapshot is refreshed, from the background "
     "thread (docs/OBSERVING.md)."},
    {"timeline_file", AY_CONF_PATH, AT(timeline_file), 0, 1, AY_CONF_PATH_MAX - 1, NULL,
     "none (no timeline)",
     "Record a timeline there: one line of JSON every timeline_ms with RSS, the resident "
     "breakdown, rates and size classes (docs/OBSERVING.md). %p in the name becomes the pid; "
     "a file that exists is never overwritten."},
    {"stats_shm", AY_CONF_BOOL, AT(stats_shm), 0, 0, 1, "false", NULL,
     "Publish a snapshot of the statistics every timeline_ms in /dev/shm/alloy.<pid> (mode "
     "0600, removed at exit), for `alloy top <pid>`."},
};
#define NKEYS (sizeof keys / sizeof keys[0])

const ay_conf_key_t *ay_conf_key(unsigned k) { return k < NKEYS ? &keys[k] : NULL; }

/* ---- values ---- */

/* Unsigned decimal with an optional k/m/g suffix (when `suffix`). */
static int parse_u64(const char *s, size_t len, bool suffix, uint64_t *out) {
    uint64_t v = 0, mult = 1;
    if (len == 0)
        return -1;
    char last = s[len - 1];
    if (suffix && (last == 'k' || last == 'K'))
        mult = 1024;
    else if (suffix && (last == 'm' || last == 'M'))
        mult = 1024 * 1024;
    else if (suffix && (last == 'g' || last == 'G'))
        mult = 1024 * 1024 * 1024;
    if (mult != 1 && --len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > UINT64_MAX / mult)
        return -1;
    *out = v * mult;
    return 0;
}

static int parse_bool(const char *s, size_t len, bool *out) {
    if ((len == 4 && !memcmp(s, "true", 4)) || (len == 1 && s[0] == '1')) {
        *out = true;
        return 0;
    }
    if ((len == 5 && !memcmp(s, "false", 5)) || (len == 1 && s[0] == '0')) {
        *out = false;
        return 0;
    }
    return -1;
}

static const char *const thp_names[] = {"never", "auto", "always"};

const char *ay_thp_name(unsigned thp) { return thp < 3 ? thp_names[thp] : "?"; }

static const char *const percpu_names[] = {"auto", "off"};

const char *ay_percpu_name(unsigned percpu) { return percpu < 2 ? percpu_names[percpu] : "?"; }

static const char *const bg_names[] = {"false", "true", "auto"};

const char *ay_bg_name(unsigned bg) { return bg < 3 ? bg_names[bg] : "?"; }

/* false, true or auto (or 0 and 1). */
static int parse_bg(const char *s, size_t len, uint8_t *out) {
    bool b;
    if (len == 4 && !memcmp(s, "auto", 4)) {
        *out = AY_BG_AUTO;
        return 0;
    }
    if (parse_bool(s, len, &b))
        return -1;
    *out = b ? AY_BG_TRUE : AY_BG_FALSE;
    return 0;
}

static int parse_percpu(const char *s, size_t len, uint8_t *out) {
    for (uint8_t i = 0; i < 2; i++)
        if (strlen(percpu_names[i]) == len && !memcmp(s, percpu_names[i], len)) {
            *out = i;
            return 0;
        }
    return -1;
}

/* never, auto or always; true and false (the setting was a boolean) are
 * auto and never. */
static int parse_thp(const char *s, size_t len, uint8_t *out) {
    bool b;
    for (uint8_t i = 0; i < 3; i++)
        if (strlen(thp_names[i]) == len && !memcmp(s, thp_names[i], len)) {
            *out = i;
            return 0;
        }
    if (parse_bool(s, len, &b))
        return -1;
    *out = b ? AY_THP_AUTO : AY_THP_NEVER;
    return 0;
}

/* "1.5", "2", "2.5", ... -> halves. */
static int parse_ratio(const char *s, size_t len, uint64_t *halves) {
    size_t dot = 0;
    uint64_t whole;
    while (dot < len && s[dot] != '.')
        dot++;
    if (parse_u64(s, dot, false, &whole) || whole > UINT32_MAX / 2)
        return -1;
    *halves = whole * 2;
    if (dot < len) {
        if (len - dot != 2 || (s[dot + 1] != '5' && s[dot + 1] != '0'))
            return -1;
        *halves += s[dot + 1] == '5';
    }
    return 0;
}

/* Parse v for key and store it in c.  0, or -1 for a bad value. */
static int key_set(const ay_conf_key_t *key, ay_conf_t *c, const char *v, size_t vl) {
    char *field = (char *)c + key->offset;
    uint64_t u;
    switch (key->type) {
    case AY_CONF_BOOL: return parse_bool(v, vl, (bool *)field);
    case AY_CONF_POLICY: return ay_policy_parse(v, vl, (ay_batch_policy_t *)field);
    case AY_CONF_THP: return parse_thp(v, vl, (uint8_t *)field);
    case AY_CONF_PERCPU: return parse_percpu(v, vl, (uint8_t *)field);
    case AY_CONF_BG: return parse_bg(v, vl, (uint8_t *)field);
    case AY_CONF_MS:
        if (vl == 2 && !memcmp(v, "-1", 2)) {
            *(int64_t *)field = -1;
            return 0;
        }
        if (parse_u64(v, vl, false, &u) || u < key->min || u > key->max)
            return -1;
        *(int64_t *)field = (int64_t)u;
        return 0;
    case AY_CONF_RATIO:
        if (parse_ratio(v, vl, &u) || u < key->min || u > key->max)
            return -1;
        *(uint32_t *)field = (uint32_t)u;
        return 0;
    case AY_CONF_LETTERS:
        if (vl > key->max)
            return -1;
        for (size_t i = 0; i < vl; i++)
            if (!v[i] || !strchr(AY_CONF_LETTERS_SET, v[i]) || memchr(v, v[i], i))
                return -1;
        memcpy(field, v, vl);
        field[vl] = 0;
        return 0;
    case AY_CONF_PATH:
        if (vl < key->min || vl > key->max || memchr(v, 0, vl))
            return -1;
        memcpy(field, v, vl);
        field[vl] = 0;
        return 0;
    case AY_CONF_COUNT:
    case AY_CONF_BYTES:
        if (parse_u64(v, vl, true, &u) || u < key->min || u > key->max)
            return -1;
        if (key->type == AY_CONF_BYTES && key->width == 8)
            *(size_t *)field = (size_t)u;
        else
            *(uint32_t *)field = (uint32_t)u;
        return 0;
    }
    return -1;
}

/* ---- descriptions ---- */

static void fmt_bytes(ay_fmt_t *f, uint64_t v) {
    static const char suffix[] = "kmg";
    unsigned s = 0;
    while (s < 3 && v >= 1024 && v % 1024 == 0) {
        v /= 1024;
        s++;
    }
    ay_fmt_u64(f, v);
    if (s)
        ay_fmt_mem(f, &suffix[s - 1], 1);
}

void ay_conf_describe_range(const ay_conf_key_t *key, ay_fmt_t *f) {
    switch (key->type) {
    case AY_CONF_BOOL: ay_fmt_str(f, "true or false"); return;
    case AY_CONF_POLICY: ay_fmt_str(f, "compact, clip, guard, pow2 or lean"); return;
    case AY_CONF_THP: ay_fmt_str(f, "never, auto or always"); return;
    case AY_CONF_PERCPU: ay_fmt_str(f, "auto or off"); return;
    case AY_CONF_BG: ay_fmt_str(f, "true, false or auto"); return;
    case AY_CONF_PATH:
        ay_fmt_str(f, "a file path of 1 to ");
        ay_fmt_u64(f, key->max);
        ay_fmt_str(f, " bytes, without commas");
        return;
    case AY_CONF_MS: ay_fmt_str(f, "-1 (never), or milliseconds from "); break;
    case AY_CONF_RATIO:
        ay_fmt_str(f, "a ratio from ");
        ay_fmt_u64(f, key->min / 2);
        ay_fmt_str(f, key->min % 2 ? ".5 to " : " to ");
        ay_fmt_u64(f, key->max / 2);
        ay_fmt_str(f, key->max % 2 ? ".5, in steps of 0.5" : ", in steps of 0.5");
        return;
    case AY_CONF_LETTERS:
        ay_fmt_str(f, "none, or any of the letters ");
        for (const char *l = AY_CONF_LETTERS_SET; *l; l++) {
            ay_fmt_mem(f, l, 1);
            if (l[1])
                ay_fmt_str(f, l[2] ? ", " : " and ");
        }
        ay_fmt_str(f, ", each once");
        return;
    case AY_CONF_COUNT: ay_fmt_str(f, "an integer from "); break;
    case AY_CONF_BYTES:
        ay_fmt_str(f, "a size in bytes from ");
        fmt_bytes(f, key->min);
        ay_fmt_str(f, " to ");
        fmt_bytes(f, key->max);
        ay_fmt_str(f, " (suffixes k, m, g)");
        return;
    }
    ay_fmt_u64(f, key->min);
    ay_fmt_str(f, " to ");
    ay_fmt_u64(f, key->max);
}

/* ---- parsing ---- */

static void conf_warn(const char *source, const char *what, const char *k, size_t klen,
                      const ay_conf_key_t *key, const char *v, size_t vlen) {
    ay_fmt_t f;
    ay_msg_begin(&f);
    ay_fmt_str(&f, source);
    ay_fmt_str(&f, ": ");
    ay_fmt_str(&f, what);
    ay_fmt_str(&f, " '");
    ay_fmt_mem(&f, k, klen);
    ay_fmt_str(&f, "'");
    if (key) {
        ay_fmt_str(&f, " = '");
        ay_fmt_mem(&f, v, vlen);
        ay_fmt_str(&f, "' (expected ");
        ay_conf_describe_range(key, &f);
        ay_fmt_str(&f, "); keeping the default");
    } else {
        ay_fmt_str(&f, "; ignored");
    }
    ay_msg_end(&f);
}

static const ay_conf_key_t *key_find(const char *k, size_t kl) {
    for (unsigned i = 0; i < NKEYS; i++)
        if (strlen(keys[i].name) == kl && !memcmp(keys[i].name, k, kl))
            return &keys[i];
    return NULL;
}

void ay_conf_defaults(ay_conf_t *c) {
    memset(c, 0, sizeof *c);
    for (unsigned i = 0; i < NKEYS; i++)
        if (keys[i].defval)
            key_set(&keys[i], c, keys[i].defval, strlen(keys[i].defval));
}

unsigned ay_conf_apply(ay_conf_t *c, const char *str, const char *source) {
    unsigned bad = 0;
    if (!str)
        return 0;
    for (const char *p = str; *p;) {
        const char *item = p;
        while (*p && *p != ',')
            p++;
        size_t len = (size_t)(p - item);
        if (*p == ',')
            p++;
        if (len == 0)
            continue;
        const char *colon = memchr(item, ':', len);
        if (!colon) {
            conf_warn(source, "malformed setting (expected key:value)", item, len, NULL, NULL, 0);
            bad++;
            continue;
        }
        size_t kl = (size_t)(colon - item), vl = len - kl - 1;
        const ay_conf_key_t *key = key_find(item, kl);
        if (!key) {
            conf_warn(source, "unknown key", item, kl, NULL, NULL, 0);
            bad++;
        } else if (key_set(key, c, colon + 1, vl) != 0) {
            conf_warn(source, "invalid value for", item, kl, key, colon + 1, vl);
            bad++;
        }
    }
    return bad;
}

const char *ay_conf_getenv(const char *name) {
    size_t n = strlen(name);
    if (!environ)
        return NULL;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

void ay_conf_init(ay_conf_t *c) {
    unsigned bad = 0;
    ay_conf_defaults(c);
    if (&alloy_malloc_conf != NULL)
        bad += ay_conf_apply(c, alloy_malloc_conf, "alloy_malloc_conf");
    bad += ay_conf_apply(c, ay_conf_getenv("ALLOY_CONF"), "ALLOY_CONF");
    if (bad && c->abort_on_error)
        ay_fatal_msg("aborting on a bad setting (abort_on_error:true)");
}
