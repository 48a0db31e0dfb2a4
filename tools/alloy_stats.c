/* SPDX-License-Identifier: MIT */
/* alloy_stats.c - `alloy stats`: a saved JSON statistics report rendered
 * as the library's full text report, or the change between two reports.
 *
 *   alloy stats [--summary] FILE.json            the report (full, or the summary)
 *   alloy stats [--summary] A.json B.json        the change from A to B
 *   FILE may be - for standard input.
 *
 * Such a report comes from alloy_stats_print(..., "J"), or at exit from
 * ALLOY_CONF=stats_print:true,stats_print_opts:J (alloy run --stats=json).
 * The layout is the library's own: this command compiles src/report.c,
 * src/emit.c, src/fmt.c and src/os.c (which use libc only) and feeds them
 * the counters read back from the file, so a saved report prints exactly as
 * alloy_stats_print(..., "f") printed it at that moment.  liballoy itself is
 * neither linked nor loaded.
 *
 * The reader is strict JSON (RFC 8259: no trailing commas, no comments, no
 * duplicate keys, nothing after the document) and strict about the schema
 * of docs/STATS.md: every field the report needs must be there, of its type.
 * Exit status: 0; 2 for bad usage or a file that is missing, unreadable, not
 * JSON, truncated, or not an alloy report, with one line on stderr
 * ("alloy stats: FILE: ...").
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy_stats.h"
#include "alloy_util.h"
#include "report.h"

#define MAX_FILE (256u << 20) /* larger is no report of ours */
#define MAX_DEPTH 32

/* ---- errors: one line, exit 2 ---- */

static const char *current_file;

__attribute__((format(printf, 1, 2), noreturn)) static void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    die(EXIT_USAGE, "%s: %s", current_file, msg);
}

static void *xalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p)
        fail("out of memory");
    return p;
}

/* ---- a strict JSON reader ---- */

typedef enum { J_NULL, J_FALSE, J_TRUE, J_NUM, J_STR, J_ARR, J_OBJ } jtype_t;

typedef struct jnode jnode_t;
struct jnode {
    jtype_t type;
    char *str;    /* J_STR: the text (NUL-terminated); J_NUM: the literal */
    bool integer; /* J_NUM: an integer that fits in int64 or uint64 */
    bool negative;
    uint64_t magnitude; /* J_NUM integer: |value| */
    unsigned n;         /* J_ARR, J_OBJ: members */
    char **keys;        /* J_OBJ */
    jnode_t **items;
};

typedef struct reader {
    const char *p, *start, *end;
} reader_t;

__attribute__((format(printf, 2, 3), noreturn)) static void syntax(const reader_t *r,
                                                                   const char *fmt, ...) {
    unsigned line = 1, col = 1;
    for (const char *q = r->start; q < r->p && q < r->end; q++) {
        if (*q == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    char what[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (r->p >= r->end)
        fail("not a complete JSON document: it ends at line %u, column %u, %s (truncated?)", line,
             col, what);
    fail("not valid JSON at line %u, column %u: %s", line, col, what);
}

static void skip_ws(reader_t *r) {
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r'))
        r->p++;
}

static bool at_end(const reader_t *r) { return r->p >= r->end; }

static void expect_literal(reader_t *r, const char *lit) {
    size_t n = strlen(lit);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, lit, n)) {
        if ((size_t)(r->end - r->p) < n && !memcmp(r->p, lit, (size_t)(r->end - r->p)))
            r->p = r->end;
        syntax(r, "expected %s", lit);
    }
    r->p += n;
}

static unsigned hex4(reader_t *r) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++, r->p++) {
        if (at_end(r))
            syntax(r, "inside a \\u escape");
        char c = *r->p;
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            syntax(r, "bad \\u escape");
    }
    return v;
}

static void put_utf8(char *out, size_t *n, unsigned cp) {
    if (cp < 0x80) {
        out[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*n)++] = (char)(0xc0 | cp >> 6);
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out[(*n)++] = (char)(0xe0 | cp >> 12);
        out[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        out[(*n)++] = (char)(0xf0 | cp >> 18);
        out[(*n)++] = (char)(0x80 | (cp >> 12 & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
}

/* At the opening quote; returns the decoded string (escapes make it no longer). */
static char *parse_string(reader_t *r) {
    r->p++; /* the quote */
    const char *q = r->p;
    while (q < r->end && *q != '"')
        q += *q == '\\' ? 2 : 1;
    char *out = xalloc((size_t)(q - r->p) + 4);
    size_t n = 0;
    for (;;) {
        if (at_end(r))
            syntax(r, "inside a string");
        unsigned char c = (unsigned char)*r->p;
        if (c == '"') {
            r->p++;
            break;
        }
        if (c < 0x20)
            syntax(r, "a control character in a string");
        if (c != '\\') {
            out[n++] = (char)c;
            r->p++;
            continue;
        }
        r->p++;
        if (at_end(r))
            syntax(r, "inside an escape");
        char esc = *r->p++;
        switch (esc) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp = hex4(r);
            if (cp >= 0xd800 && cp < 0xdc00) {
                if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
                    syntax(r, "an unpaired surrogate in a \\u escape");
                r->p += 2;
                unsigned lo = hex4(r);
                if (lo < 0xdc00 || lo >= 0xe000)
                    syntax(r, "an unpaired surrogate in a \\u escape");
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                syntax(r, "an unpaired surrogate in a \\u escape");
            }
            put_utf8(out, &n, cp);
            break;
        }
        default: r->p--; syntax(r, "unknown escape \\%c", esc);
        }
    }
    out[n] = 0;
    return out;
}

static void parse_number(reader_t *r, jnode_t *v) {
    const char *s = r->p;
    bool neg = false, integer = true;
    if (*r->p == '-') {
        neg = true;
        r->p++;
    }
    if (at_end(r) || *r->p < '0' || *r->p > '9')
        syntax(r, "expected a digit");
    if (*r->p == '0' && r->p + 1 < r->end && r->p[1] >= '0' && r->p[1] <= '9')
        syntax(r, "a number with a leading zero");
    uint64_t mag = 0;
    bool overflow = false;
    while (!at_end(r) && *r->p >= '0' && *r->p <= '9') {
        unsigned d = (unsigned)(*r->p++ - '0');
        if (mag > (UINT64_MAX - d) / 10)
            overflow = true;
        mag = mag * 10 + d;
    }
    if (!at_end(r) && *r->p == '.') {
        integer = false;
        r->p++;
        if (at_end(r) || *r->p < '0' || *r->p > '9')
            syntax(r, "expected a digit after the decimal point");
        while (!at_end(r) && *r->p >= '0' && *r->p <= '9')
            r->p++;
    }
    if (!at_end(r) && (*r->p == 'e' || *r->p == 'E')) {
        integer = false;
        r->p++;
        if (!at_end(r) && (*r->p == '+' || *r->p == '-'))
            r->p++;
        if (at_end(r) || *r->p < '0' || *r->p > '9')
            syntax(r, "expected a digit in the exponent");
        while (!at_end(r) && *r->p >= '0' && *r->p <= '9')
            r->p++;
    }
    v->type = J_NUM;
    v->integer = integer && !overflow;
    v->negative = neg && mag != 0;
    v->magnitude = mag;
    size_t len = (size_t)(r->p - s);
    v->str = xalloc(len + 1);
    memcpy(v->str, s, len);
}

static jnode_t *parse_value(reader_t *r, unsigned depth);

static void push(jnode_t *v, unsigned *cap, char *key, jnode_t *item) {
    if (v->n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        v->items = realloc(v->items, *cap * sizeof *v->items);
        if (v->type == J_OBJ)
            v->keys = realloc(v->keys, *cap * sizeof *v->keys);
        if (!v->items || (v->type == J_OBJ && !v->keys))
            fail("out of memory");
    }
    if (v->type == J_OBJ)
        v->keys[v->n] = key;
    v->items[v->n++] = item;
}

static jnode_t *parse_container(reader_t *r, unsigned depth, bool obj) {
    jnode_t *v = xalloc(sizeof *v);
    unsigned cap = 0;
    v->type = obj ? J_OBJ : J_ARR;
    if (depth > MAX_DEPTH)
        syntax(r, "nested deeper than %d", MAX_DEPTH);
    r->p++;
    skip_ws(r);
    if (!at_end(r) && *r->p == (obj ? '}' : ']')) {
        r->p++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(r);
        if (obj) {
            if (at_end(r) || *r->p != '"')
                syntax(r, "expected a key in quotes");
            const char *at = r->p;
            key = parse_string(r);
            for (unsigned i = 0; i < v->n; i++) {
                if (!strcmp(v->keys[i], key)) {
                    r->p = at;
                    syntax(r, "the key \"%s\" appears twice", key);
                }
            }
            skip_ws(r);
            if (at_end(r) || *r->p != ':')
                syntax(r, "expected ':' after a key");
            r->p++;
        }
        push(v, &cap, key, parse_value(r, depth + 1));
        skip_ws(r);
        if (at_end(r))
            syntax(r, "expected ',' or '%c'", obj ? '}' : ']');
        if (*r->p == ',') {
            r->p++;
            continue;
        }
        if (*r->p == (obj ? '}' : ']')) {
            r->p++;
            return v;
        }
        syntax(r, "expected ',' or '%c'", obj ? '}' : ']');
    }
}

static jnode_t *parse_value(reader_t *r, unsigned depth) {
    skip_ws(r);
    if (at_end(r))
        syntax(r, "expected a value");
    jnode_t *v;
    switch (*r->p) {
    case '{': return parse_container(r, depth, true);
    case '[': return parse_container(r, depth, false);
    case '"':
        v = xalloc(sizeof *v);
        v->type = J_STR;
        v->str = parse_string(r);
        return v;
    case 't':
        expect_literal(r, "true");
        v = xalloc(sizeof *v);
        v->type = J_TRUE;
        return v;
    case 'f':
        expect_literal(r, "false");
        v = xalloc(sizeof *v);
        v->type = J_FALSE;
        return v;
    case 'n':
        expect_literal(r, "null");
        v = xalloc(sizeof *v);
        v->type = J_NULL;
        return v;
    default:
        if (*r->p == '-' || (*r->p >= '0' && *r->p <= '9')) {
            v = xalloc(sizeof *v);
            parse_number(r, v);
            return v;
        }
        syntax(r, "unexpected character '%c'", *r->p);
    }
}

static char *read_all(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f)
        fail("cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = xalloc(cap);
    for (;;) {
        if (n == cap) {
            if (cap >= MAX_FILE)
                fail("larger than %u MiB: not an alloy statistics report", MAX_FILE >> 20);
            cap *= 2;
            buf = realloc(buf, cap);
            if (!buf)
                fail("out of memory");
        }
        size_t k = fread(buf + n, 1, cap - n, f);
        n += k;
        if (k == 0) {
            if (ferror(f))
                fail("cannot read: %s", strerror(errno));
            break;
        }
    }
    if (f != stdin)
        fclose(f);
    *len = n;
    return buf;
}

static jnode_t *parse_file(const char *path) {
    size_t len;
    char *text = read_all(path, &len);
    if (len == 0)
        fail("empty file: not an alloy statistics report");
    reader_t r = {text, text, text + len};
    jnode_t *root = parse_value(&r, 0);
    skip_ws(&r);
    if (!at_end(&r))
        syntax(&r, "more text after the JSON document");
    free(text);
    return root;
}

static void jfree(jnode_t *v) {
    for (unsigned i = 0; i < v->n; i++) {
        jfree(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

/* ---- the schema (docs/STATS.md) ---- */

static const char *const type_name[] = {"null",     "false",    "true",     "a number",
                                        "a string", "an array", "an object"};

static jnode_t *member(const jnode_t *obj, const char *key) {
    for (unsigned i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key))
            return obj->items[i];
    return NULL;
}

/* The member `key` of obj (at `where`), of type t (J_TRUE: a boolean). */
static jnode_t *need(const jnode_t *obj, const char *where, const char *key, jtype_t t) {
    jnode_t *v = member(obj, key);
    if (!v)
        fail("not an alloy statistics report: %s has no \"%s\"", where, key);
    bool ok = t == J_TRUE ? v->type == J_TRUE || v->type == J_FALSE : v->type == t;
    if (!ok)
        fail("not an alloy statistics report: %s.%s is %s, not %s", where, key, type_name[v->type],
             t == J_TRUE ? "true or false" : type_name[t]);
    return v;
}

static uint64_t need_u64(const jnode_t *obj, const char *where, const char *key) {
    jnode_t *v = need(obj, where, key, J_NUM);
    if (!v->integer || v->negative)
        fail("not an alloy statistics report: %s.%s is %s, not a whole number of 0 or more", where,
             key, v->str);
    return v->magnitude;
}

static int64_t need_i64(const jnode_t *obj, const char *where, const char *key) {
    jnode_t *v = need(obj, where, key, J_NUM);
    if (!v->integer || v->magnitude > (uint64_t)INT64_MAX)
        fail("not an alloy statistics report: %s.%s is %s, not a whole number", where, key, v->str);
    return v->negative ? -(int64_t)v->magnitude : (int64_t)v->magnitude;
}

typedef struct heap_entry {
    unsigned id;
    bool is_explicit;
    unsigned node;
    alloy_stats_t s;
} heap_entry_t;

typedef struct saved {
    ay_report_src_t src;
    unsigned flags; /* AY_REPORT_NO_HEAPS / _NO_CLASSES when absent */
    heap_entry_t *heaps;
    unsigned nheaps;
    alloy_class_stats_t *classes;
    bool *used;
} saved_t;

static void read_totals(const jnode_t *obj, const char *where, alloy_stats_t *s) {
    memset(s, 0, sizeof *s);
    s->size = sizeof *s;
    s->version = ALLOY_STATS_VERSION;
    for (unsigned i = 0; i < ay_report_ntotal_fields; i++) {
        const ay_report_field_t *f = &ay_report_total_fields[i];
        ay_report_field_set(s, f, need_u64(obj, where, f->key));
    }
}

static bool saved_heap(const ay_report_src_t *src, unsigned k, unsigned *id, bool *is_explicit,
                       unsigned *node, alloy_stats_t *out) {
    const saved_t *sv = src->ctx;
    if (k >= sv->nheaps)
        return false;
    *id = sv->heaps[k].id;
    *is_explicit = sv->heaps[k].is_explicit;
    *node = sv->heaps[k].node;
    *out = sv->heaps[k].s;
    return true;
}

static bool saved_class(const ay_report_src_t *src, unsigned cls, alloy_class_stats_t *out) {
    const saved_t *sv = src->ctx;
    if (cls >= src->nclasses || !sv->used[cls])
        return false;
    *out = sv->classes[cls];
    return true;
}

static void load_tree(const jnode_t *root, saved_t *sv);

/* Read the report in `path` into sv (its arrays are the caller's to free). */
static void load(const char *path, saved_t *sv) {
    current_file = strcmp(path, "-") ? path : "(standard input)";
    jnode_t *root = parse_file(path);
    load_tree(root, sv);
    jfree(root);
}

static void saved_free(saved_t *sv) {
    free(sv->heaps);
    free(sv->classes);
    free(sv->used);
}

/* alloy.version and alloy.nclasses. */
static void load_header(const jnode_t *a, ay_report_src_t *src) {
    const char *version = need(a, "alloy", "version", J_STR)->str;
    if (strlen(version) >= sizeof src->version)
        fail("not an alloy statistics report: alloy.version is too long");
    strcpy(src->version, version);
    /* the process, added later: a report from before has none */
    if (member(a, "pid")) {
        uint64_t pid = need_u64(a, "alloy", "pid");
        const char *cmd = need(a, "alloy", "cmd", J_STR)->str;
        if (pid == 0 || pid > INT32_MAX || strlen(cmd) >= sizeof src->cmd)
            fail("not an alloy statistics report: alloy.pid or alloy.cmd is out of range");
        src->pid = (unsigned)pid;
        strcpy(src->cmd, cmd);
    }
    uint64_t nclasses = need_u64(a, "alloy", "nclasses");
    if (nclasses == 0 || nclasses > 4096)
        fail("not an alloy statistics report: alloy.nclasses is %llu",
             (unsigned long long)nclasses);
    src->nclasses = (unsigned)nclasses;
}

/* alloy.opt: the settings. */
static void load_opt(const jnode_t *a, ay_report_opt_t *opt) {
    jnode_t *o = need(a, "alloy", "opt", J_OBJ);
    const char *policy = need(o, "alloy.opt", "batch_policy", J_STR)->str;
    if (strlen(policy) >= sizeof opt->batch_policy)
        fail("not an alloy statistics report: alloy.opt.batch_policy is too long");
    strcpy(opt->batch_policy, policy);
    opt->batch_budget = need_u64(o, "alloy.opt", "batch_budget");
    opt->batch_cap = need_u64(o, "alloy.opt", "batch_cap");
    opt->return_threshold_halves = need_u64(o, "alloy.opt", "return_threshold_halves");
    opt->tcache = need(o, "alloy.opt", "tcache", J_TRUE)->type == J_TRUE;
    opt->tcache_max_bytes = need_u64(o, "alloy.opt", "tcache_max_bytes");
    opt->decay_ms = need_i64(o, "alloy.opt", "decay_ms");
    opt->heaps = need_u64(o, "alloy.opt", "heaps");
    opt->background_thread = need(o, "alloy.opt", "background_thread", J_TRUE)->type == J_TRUE;
    /* added with NUMA awareness: a report from before has none (false) */
    opt->numa = member(o, "numa") && need(o, "alloy.opt", "numa", J_TRUE)->type == J_TRUE;
    /* added with per-CPU caches: a report from before has none ("") */
    if (member(o, "percpu")) {
        const char *percpu = need(o, "alloy.opt", "percpu", J_STR)->str;
        if (strlen(percpu) >= sizeof opt->percpu)
            fail("not an alloy statistics report: alloy.opt.percpu is too long");
        strcpy(opt->percpu, percpu);
    }
}

/* alloy.percpu: the first tier that runs, and why not per CPU; added with
 * per-CPU caches: a report from before has none (the text then has no
 * line for it). */
static void load_percpu(const jnode_t *a, ay_report_src_t *src) {
    if (!member(a, "percpu"))
        return;
    jnode_t *p = need(a, "alloy", "percpu", J_OBJ);
    const char *mode = need(p, "alloy.percpu", "mode", J_STR)->str;
    const char *why = need(p, "alloy.percpu", "why", J_STR)->str;
    if (strcmp(mode, "percpu") && strcmp(mode, "thread"))
        fail("not an alloy statistics report: alloy.percpu.mode is \"%s\", not percpu or thread",
             mode);
    if (strlen(why) >= sizeof src->percpu_why)
        fail("not an alloy statistics report: alloy.percpu.why is too long");
    strcpy(src->percpu_mode, mode);
    strcpy(src->percpu_why, why);
}

/* One member of alloy.heaps (at `where`). */
static void load_heap(const jnode_t *h, const char *where, heap_entry_t *out) {
    if (h->type != J_OBJ)
        fail("not an alloy statistics report: %s is %s, not an object", where, type_name[h->type]);
    uint64_t id = need_u64(h, where, "id");
    if (id > 1u << 20)
        fail("not an alloy statistics report: %s.id is %llu", where, (unsigned long long)id);
    out->id = (unsigned)id;
    out->is_explicit = need(h, where, "explicit", J_TRUE)->type == J_TRUE;
    /* added with NUMA awareness: a report from before has none (node 0) */
    uint64_t node = member(h, "node") ? need_u64(h, where, "node") : 0;
    if (node > 1u << 20)
        fail("not an alloy statistics report: %s.node is %llu", where, (unsigned long long)node);
    out->node = (unsigned)node;
    read_totals(h, where, &out->s);
}

/* alloy.heaps, when the report has it. */
static void load_heaps(const jnode_t *a, saved_t *sv) {
    jnode_t *heaps = member(a, "heaps");
    if (!heaps) {
        sv->flags |= AY_REPORT_NO_HEAPS;
        return;
    }
    if (heaps->type != J_ARR)
        fail("not an alloy statistics report: alloy.heaps is %s, not an array",
             type_name[heaps->type]);
    sv->heaps = xalloc(heaps->n * sizeof *sv->heaps);
    sv->nheaps = heaps->n;
    for (unsigned k = 0; k < heaps->n; k++) {
        char where[48];
        snprintf(where, sizeof where, "alloy.heaps[%u]", k);
        load_heap(heaps->items[k], where, &sv->heaps[k]);
    }
}

/* One member of alloy.classes (at `where`), into its class's entry. */
static void load_class(const jnode_t *c, const char *where, saved_t *sv) {
    if (c->type != J_OBJ)
        fail("not an alloy statistics report: %s is %s, not an object", where, type_name[c->type]);
    uint64_t cls = need_u64(c, where, "class");
    if (cls >= sv->src.nclasses)
        fail("not an alloy statistics report: %s.class is %llu, not below nclasses (%u)", where,
             (unsigned long long)cls, sv->src.nclasses);
    if (sv->used[cls])
        fail("not an alloy statistics report: class %llu appears twice", (unsigned long long)cls);
    alloy_class_stats_t *out = &sv->classes[cls];
    out->size = sizeof *out;
    for (unsigned i = 0; i < ay_report_nclass_fields; i++) {
        const ay_report_field_t *f = &ay_report_class_fields[i];
        uint64_t v = need_u64(c, where, f->key);
        if (f->width == 4 && v > UINT32_MAX)
            fail("not an alloy statistics report: %s.%s is too large", where, f->key);
        ay_report_field_set(out, f, v);
    }
    sv->used[cls] = true;
}

/* alloy.classes, when the report has it. */
static void load_classes(const jnode_t *a, saved_t *sv) {
    sv->classes = xalloc(sv->src.nclasses * sizeof *sv->classes);
    sv->used = xalloc(sv->src.nclasses * sizeof *sv->used);
    jnode_t *classes = member(a, "classes");
    if (!classes) {
        sv->flags |= AY_REPORT_NO_CLASSES;
        return;
    }
    if (classes->type != J_ARR)
        fail("not an alloy statistics report: alloy.classes is %s, not an array",
             type_name[classes->type]);
    for (unsigned k = 0; k < classes->n; k++) {
        char where[48];
        snprintf(where, sizeof where, "alloy.classes[%u]", k);
        load_class(classes->items[k], where, sv);
    }
}

static void load_tree(const jnode_t *root, saved_t *sv) {
    jnode_t *a = root->type == J_OBJ ? member(root, "alloy") : NULL;
    if (!a || a->type != J_OBJ)
        fail("not an alloy statistics report (no \"alloy\" object at the top; one is made by "
             "alloy_stats_print with opts \"J\")");
    memset(sv, 0, sizeof *sv);
    ay_report_src_t *src = &sv->src;
    src->ctx = sv;
    src->heap = saved_heap;
    src->cls = saved_class;
    load_header(a, src);
    load_opt(a, &src->opt);
    load_percpu(a, src);
    read_totals(need(a, "alloy", "stats", J_OBJ), "alloy.stats", &src->totals);
    need(a, "alloy", "resident_breakdown", J_OBJ);
    load_heaps(a, sv);
    load_classes(a, sv);
}

/* ---- the command ---- */

static void to_stdout(void *opaque, const char *text, size_t len) {
    (void)opaque;
    fwrite(text, 1, len, stdout);
}

int cmd_stats(int argc, char **argv) {
    bool summary = false;
    const char *files[2];
    int nfiles = 0;
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--summary")) {
            summary = true;
        } else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            fputs("usage: alloy stats [--summary] FILE.json [FILE2.json]\n"
                  "  One file: its report as alloy_stats_print prints it (with tables;\n"
                  "  --summary: the summary only).  Two files: the change from the first\n"
                  "  to the second.  FILE - is standard input.  See docs/STATS.md.\n",
                  stdout);
            return 0;
        } else if (arg[0] == '-' && arg[1]) {
            usage_error("unknown option '%s'", arg);
        } else if (nfiles == 2) {
            usage_error("at most two files (a report, or two to compare)");
        } else {
            files[nfiles++] = arg;
        }
    }
    if (nfiles == 0)
        usage_error("missing FILE.json (a report from alloy_stats_print with opts \"J\")");
    saved_t a, b;
    load(files[0], &a);
    ay_emit_t e;
    ay_emit_init(&e, to_stdout, NULL, false);
    if (nfiles == 1) {
        ay_report_print(&e, &a.src, a.flags | (summary ? 0 : AY_REPORT_FULL));
    } else {
        if (!strcmp(files[0], "-") && !strcmp(files[1], "-"))
            usage_error("standard input can be only one of the two files");
        load(files[1], &b);
        printf("A: %s\nB: %s\n", files[0], files[1]);
        ay_report_diff(&e, &a.src, &b.src, a.flags | b.flags);
        saved_free(&b);
    }
    ay_emit_finish(&e);
    saved_free(&a);
    fflush(stdout);
    return ferror(stdout) ? EXIT_MISSING : 0;
}
