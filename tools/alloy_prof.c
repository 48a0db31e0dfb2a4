/* SPDX-License-Identifier: MIT */
/* alloy_prof.c - `alloy prof`: read a heap profile that liballoy wrote
 * (gperftools' text format; any file google-pprof reads with no sampling
 * adjustment) and print where the memory is, symbolised.
 *
 *   alloy prof [--top N] [--alloc] [--objects] FILE.heap     a top-N table
 *   alloy prof --folded [--alloc] [--objects] FILE.heap      folded stacks
 *
 * The table has one row per function: `flat` is what it allocated itself
 * (it is the innermost frame of the stack), `cum` what it and its callees
 * allocated (it is anywhere in the stack), as google-pprof --text prints
 * them.  Folded stacks are one line per stack, outermost frame first,
 * frames separated by ';', then a space and the value: the input of
 * flamegraph.pl and of speedscope.  By default the values are the live
 * bytes; --alloc takes the bytes allocated since start-up instead, and
 * --objects counts objects instead of bytes.
 *
 * Names come from src/symbolize.c, the same code as the leak report's: the
 * ELF symbol tables of the objects the profile's MAPPED_LIBRARIES section
 * names, and file:line from addr2line (binutils) when it is installed.
 * Frames of the allocator itself at the top of a stack are left out.
 *
 * Exit status: 0; 1 when the file cannot be read or is not a heap profile;
 * 2 for bad usage.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloy_prof.h"
#include "alloy_util.h"
#include "symbolize.h"

typedef struct stack {
    uint64_t v[4];       /* live n, live bytes, alloc n, alloc bytes */
    size_t first, depth; /* its frames in the frames array */
} stack_t_;

typedef struct func {
    const char *name;  /* points into a sym */
    const char *where; /* file:line of its first frame seen, or object */
    uint64_t flat, cum;
    size_t last_stack; /* the stack that last added to cum (+1) */
} func_t;

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t r;
    while (buf && (r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (cap - n - 1 == 0) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                buf = NULL;
            }
            buf = b;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = 0;
    *len = n;
    return buf;
}

static int cmp_u(const void *a, const void *b) {
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return x < y ? -1 : x > y;
}

static const char *frame_name(const ay_sym_t *s, char *tmp, size_t cap) {
    if (s && s->func[0])
        return s->func;
    snprintf(tmp, cap, "%s+0x%lx", s && s->object[0] ? s->object : "?",
             s ? (unsigned long)s->vaddr : 0ul);
    return tmp;
}

static void human(char *out, size_t cap, uint64_t v, bool objects) {
    if (objects)
        snprintf(out, cap, "%llu", (unsigned long long)v);
    else if (v >= 10u << 20)
        snprintf(out, cap, "%.1f MiB", v / 1048576.0);
    else if (v >= 10u << 10)
        snprintf(out, cap, "%.1f KiB", v / 1024.0);
    else
        snprintf(out, cap, "%llu B", (unsigned long long)v);
}

static int cmp_flat(const void *a, const void *b) {
    const func_t *x = a, *y = b;
    if (x->flat != y->flat)
        return x->flat < y->flat ? 1 : -1;
    if (x->cum != y->cum)
        return x->cum < y->cum ? 1 : -1;
    return strcmp(x->name, y->name);
}

typedef struct opts {
    int top;
    bool folded, alloc, objects;
    const char *path;
} opts_t;

/* The profile read: its stacks, their frames (addresses) in one array, the
 * MAPPED_LIBRARIES text, and the distinct addresses sorted with a symbol
 * each. */
typedef struct profile {
    stack_t_ *st;
    size_t nst, capst;
    uintptr_t *fr;
    size_t nfr, capfr;
    const char *maps;
    size_t maps_len;
    uintptr_t *pcs; /* distinct frame addresses, sorted */
    ay_sym_t *syms; /* the symbol of each */
    size_t np;
} profile_t;

/* Reads the options into o; 1 when --help was printed, else 0.  Bad usage
 * exits with status 2. */
static int prof_parse_args(int argc, char **argv, opts_t *o) {
    *o = (opts_t){.top = 20};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--top")) {
            if (i + 1 >= argc || (o->top = atoi(argv[++i])) <= 0)
                usage_error("--top needs a positive number");
        } else if (!strcmp(a, "--folded")) {
            o->folded = true;
        } else if (!strcmp(a, "--alloc")) {
            o->alloc = true;
        } else if (!strcmp(a, "--objects")) {
            o->objects = true;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: alloy prof [--top N] [--folded] [--alloc] [--objects] FILE.heap\n");
            return 1;
        } else if (a[0] == '-') {
            usage_error("unknown option '%s'", a);
        } else if (o->path) {
            usage_error("one profile at a time ('%s' and '%s')", o->path, a);
        } else {
            o->path = a;
        }
    }
    if (!o->path)
        usage_error("which heap profile? (alloy prof FILE.heap)");
    return 0;
}

/* Adds the stack of one line, its values v and the addresses from p on. */
static void prof_add_stack(profile_t *pr, const unsigned long long v[4], char *p) {
    if (pr->nst == pr->capst)
        pr->st = realloc(pr->st, (pr->capst *= 2) * sizeof *pr->st);
    stack_t_ *s = &pr->st[pr->nst++];
    for (int k = 0; k < 4; k++)
        s->v[k] = v[k];
    s->first = pr->nfr;
    s->depth = 0;
    char *end;
    for (;;) {
        unsigned long long a = strtoull(p, &end, 16);
        if (end == p)
            break;
        if (pr->nfr == pr->capfr)
            pr->fr = realloc(pr->fr, (pr->capfr *= 2) * sizeof *pr->fr);
        /* the first address points into the call already; the
         * others are return addresses */
        pr->fr[pr->nfr++] = (uintptr_t)a - (s->depth > 0);
        s->depth++;
        p = end;
    }
}

/* Reads the stacks after the header line, up to MAPPED_LIBRARIES (text is
 * cut into lines in place). */
static void prof_read_stacks(char *text, profile_t *pr) {
    pr->capst = 256;
    pr->capfr = 4096;
    pr->st = malloc(pr->capst * sizeof *pr->st);
    pr->fr = malloc(pr->capfr * sizeof *pr->fr);
    pr->maps = "";
    char *line = strchr(text, '\n');
    while (line && *++line) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = 0;
        if (!strncmp(line, "MAPPED_LIBRARIES:", 17)) {
            pr->maps = eol ? eol + 1 : "";
            pr->maps_len = strlen(pr->maps);
            break;
        }
        unsigned long long v[4];
        int used = 0;
        if (sscanf(line, " %llu: %llu [ %llu: %llu] @%n", &v[0], &v[1], &v[2], &v[3], &used) == 4 &&
            used > 0)
            prof_add_stack(pr, v, line + used);
        line = eol;
    }
}

/* Symbolises the distinct addresses of the frames. */
static void prof_symbolize(profile_t *pr) {
    uintptr_t *pcs = malloc((pr->nfr + 1) * sizeof *pcs);
    memcpy(pcs, pr->fr, pr->nfr * sizeof *pcs);
    qsort(pcs, pr->nfr, sizeof *pcs, cmp_u);
    size_t np = 0;
    for (size_t i = 0; i < pr->nfr; i++)
        if (np == 0 || pcs[np - 1] != pcs[i])
            pcs[np++] = pcs[i];
    pr->pcs = pcs;
    pr->np = np;
    pr->syms = calloc(np + 1, sizeof *pr->syms);
    ay_symbolize(pr->maps, pr->maps_len, pcs, np, pr->syms, true);
}

/* The symbol of frame address pc (one of the frames). */
static const ay_sym_t *prof_sym(const profile_t *pr, uintptr_t pc) {
    return &pr->syms[(uintptr_t *)bsearch(&pc, pr->pcs, pr->np, sizeof *pr->pcs, cmp_u) - pr->pcs];
}

/* Leaves out the allocator's own frames at the top of each stack. */
static void prof_trim_allocator(profile_t *pr) {
    for (size_t i = 0; i < pr->nst; i++) {
        stack_t_ *s = &pr->st[i];
        while (s->depth > 1) {
            const ay_sym_t *sym = prof_sym(pr, pr->fr[s->first]);
            if (!sym->func[0] || !ay_sym_is_allocator(sym->func))
                break;
            s->first++;
            s->depth--;
        }
    }
}

/* One line per stack with a value: frames outermost first, ';' between. */
static void prof_print_folded(const profile_t *pr, int vi) {
    char tmp[256];
    for (size_t i = 0; i < pr->nst; i++) {
        const stack_t_ *s = &pr->st[i];
        if (!s->v[vi])
            continue;
        for (size_t d = s->depth; d-- > 0;) {
            const char *name = frame_name(prof_sym(pr, pr->fr[s->first + d]), tmp, sizeof tmp);
            for (const char *c = name; *c; c++)
                putchar(*c == ';' || *c == ' ' ? '_' : *c);
            if (d)
                putchar(';');
        }
        printf(" %llu\n", (unsigned long long)s->v[vi]);
    }
}

/* The row of the function named name (s its symbol), added when new. */
static size_t prof_func_row(func_t *fn, size_t *nf, const char *name, const ay_sym_t *s) {
    size_t k = 0;
    while (k < *nf && strcmp(fn[k].name, name))
        k++;
    if (k == *nf) {
        fn[k].name = strdup(name);
        char where[512];
        if (s->line)
            snprintf(where, sizeof where, "%s:%u", s->file, s->line);
        else
            snprintf(where, sizeof where, "%s", s->object[0] ? s->object : "?");
        fn[k].where = strdup(where);
        (*nf)++;
    }
    return k;
}

/* The table's rows, one per function, sorted; their number in *nf and the
 * sum of the values in *total. */
static func_t *prof_functions(const profile_t *pr, int vi, size_t *nf, uint64_t *total) {
    char tmp[256];
    func_t *fn = calloc(pr->np + 1, sizeof *fn);
    *nf = 0;
    *total = 0;
    for (size_t i = 0; i < pr->nst; i++) {
        const stack_t_ *st = &pr->st[i];
        uint64_t v = st->v[vi];
        *total += v;
        for (size_t d = 0; d < st->depth; d++) {
            const ay_sym_t *s = prof_sym(pr, pr->fr[st->first + d]);
            size_t k = prof_func_row(fn, nf, frame_name(s, tmp, sizeof tmp), s);
            if (d == 0)
                fn[k].flat += v;
            if (fn[k].last_stack != i + 1) {
                fn[k].cum += v;
                fn[k].last_stack = i + 1;
            }
        }
    }
    qsort(fn, *nf, sizeof *fn, cmp_flat);
    return fn;
}

/* The top-N table: a title line, a header and a row per function. */
static void prof_print_table(const profile_t *pr, const opts_t *o, int vi) {
    size_t nf;
    uint64_t total;
    func_t *fn = prof_functions(pr, vi, &nf, &total);
    char t1[32], t2[32], t3[32];
    human(t1, sizeof t1, total, o->objects);
    printf("%s: %s %s, %zu stacks\n", o->path, t1,
           o->objects ? (o->alloc ? "objects allocated" : "live objects")
                      : (o->alloc ? "allocated" : "live"),
           pr->nst);
    printf("%12s %6s %6s %12s %6s  %s\n", "flat", "flat%", "sum%", "cum", "cum%",
           "function (where)");
    uint64_t sum = 0;
    for (size_t k = 0; k < nf && (int)k < o->top; k++) {
        sum += fn[k].flat;
        human(t2, sizeof t2, fn[k].flat, o->objects);
        human(t3, sizeof t3, fn[k].cum, o->objects);
        double base = total ? (double)total : 1;
        printf("%12s %5.1f%% %5.1f%% %12s %5.1f%%  %s (%s)\n", t2, 100 * fn[k].flat / base,
               100 * sum / base, t3, 100 * fn[k].cum / base, fn[k].name, fn[k].where);
    }
}

int cmd_prof(int argc, char **argv, const char *dir) {
    (void)dir;
    opts_t o;
    if (prof_parse_args(argc, argv, &o))
        return 0;
    size_t len;
    char *text = read_file(o.path, &len);
    if (!text) {
        error_line("cannot read %s", o.path);
        return EXIT_MISSING;
    }
    unsigned long long h[4];
    if (sscanf(text, "heap profile: %llu: %llu [%llu: %llu] @", &h[0], &h[1], &h[2], &h[3]) != 4) {
        error_line("%s is not a heap profile (no 'heap profile:' header)", o.path);
        return EXIT_MISSING;
    }
    int vi = (o.alloc ? 2 : 0) + (o.objects ? 0 : 1);
    profile_t pr = {0};
    prof_read_stacks(text, &pr);
    prof_symbolize(&pr);
    prof_trim_allocator(&pr);
    if (o.folded)
        prof_print_folded(&pr, vi);
    else
        prof_print_table(&pr, &o, vi);
    return 0;
}
