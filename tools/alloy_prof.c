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

#include "alloy_cmd.h"
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

int cmd_prof(int argc, char **argv, const char *dir) {
    (void)dir;
    int top = 20;
    bool folded = false, alloc = false, objects = false;
    const char *path = NULL;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--top")) {
            if (i + 1 >= argc || (top = atoi(argv[++i])) <= 0)
                usage_error("prof: --top needs a positive number");
        } else if (!strcmp(a, "--folded")) {
            folded = true;
        } else if (!strcmp(a, "--alloc")) {
            alloc = true;
        } else if (!strcmp(a, "--objects")) {
            objects = true;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: alloy prof [--top N] [--folded] [--alloc] [--objects] FILE.heap\n");
            return 0;
        } else if (a[0] == '-') {
            usage_error("prof: unknown option '%s'", a);
        } else if (path) {
            usage_error("prof: one profile at a time ('%s' and '%s')", path, a);
        } else {
            path = a;
        }
    }
    if (!path)
        usage_error("prof: which heap profile? (alloy prof FILE.heap)");
    size_t len;
    char *text = read_file(path, &len);
    if (!text) {
        fprintf(stderr, "alloy prof: cannot read %s\n", path);
        return EXIT_MISSING;
    }
    unsigned long long h[4];
    if (sscanf(text, "heap profile: %llu: %llu [%llu: %llu] @", &h[0], &h[1], &h[2], &h[3]) != 4) {
        fprintf(stderr, "alloy prof: %s is not a heap profile (no 'heap profile:' header)\n", path);
        return EXIT_MISSING;
    }
    int vi = (alloc ? 2 : 0) + (objects ? 0 : 1);
    /* stacks and their frames */
    size_t nst = 0, capst = 256, nfr = 0, capfr = 4096;
    stack_t_ *st = malloc(capst * sizeof *st);
    uintptr_t *fr = malloc(capfr * sizeof *fr);
    const char *maps = "";
    size_t maps_len = 0;
    char *line = strchr(text, '\n');
    while (line && *++line) {
        char *eol = strchr(line, '\n');
        if (eol)
            *eol = 0;
        if (!strncmp(line, "MAPPED_LIBRARIES:", 17)) {
            maps = eol ? eol + 1 : "";
            maps_len = strlen(maps);
            break;
        }
        unsigned long long v[4];
        int used = 0;
        if (sscanf(line, " %llu: %llu [ %llu: %llu] @%n", &v[0], &v[1], &v[2], &v[3], &used) == 4 &&
            used > 0) {
            if (nst == capst)
                st = realloc(st, (capst *= 2) * sizeof *st);
            stack_t_ *s = &st[nst++];
            for (int k = 0; k < 4; k++)
                s->v[k] = v[k];
            s->first = nfr;
            s->depth = 0;
            char *p = line + used, *end;
            for (;;) {
                unsigned long long a = strtoull(p, &end, 16);
                if (end == p)
                    break;
                if (nfr == capfr)
                    fr = realloc(fr, (capfr *= 2) * sizeof *fr);
                /* the first address points into the call already; the
                 * others are return addresses */
                fr[nfr++] = (uintptr_t)a - (s->depth > 0);
                s->depth++;
                p = end;
            }
        }
        line = eol;
    }
    /* symbolise the distinct addresses */
    uintptr_t *pcs = malloc((nfr + 1) * sizeof *pcs);
    memcpy(pcs, fr, nfr * sizeof *pcs);
    qsort(pcs, nfr, sizeof *pcs, cmp_u);
    size_t np = 0;
    for (size_t i = 0; i < nfr; i++)
        if (np == 0 || pcs[np - 1] != pcs[i])
            pcs[np++] = pcs[i];
    ay_sym_t *syms = calloc(np + 1, sizeof *syms);
    ay_symbolize(maps, maps_len, pcs, np, syms, true);
#define SYM(pc) (&syms[(uintptr_t *)bsearch(&(pc), pcs, np, sizeof *pcs, cmp_u) - pcs])
    /* trim the allocator's own frames at the top */
    for (size_t i = 0; i < nst; i++)
        while (st[i].depth > 1) {
            const ay_sym_t *s = SYM(fr[st[i].first]);
            if (!s->func[0] || !ay_sym_is_allocator(s->func))
                break;
            st[i].first++;
            st[i].depth--;
        }
    char tmp[256];
    if (folded) {
        for (size_t i = 0; i < nst; i++) {
            if (!st[i].v[vi])
                continue;
            for (size_t d = st[i].depth; d-- > 0;) {
                const char *name = frame_name(SYM(fr[st[i].first + d]), tmp, sizeof tmp);
                for (const char *c = name; *c; c++)
                    putchar(*c == ';' || *c == ' ' ? '_' : *c);
                if (d)
                    putchar(';');
            }
            printf(" %llu\n", (unsigned long long)st[i].v[vi]);
        }
        return 0;
    }
    /* the table: one row per function */
    size_t nf = 0;
    func_t *fn = calloc(np + 1, sizeof *fn);
    uint64_t total = 0;
    for (size_t i = 0; i < nst; i++) {
        uint64_t v = st[i].v[vi];
        total += v;
        for (size_t d = 0; d < st[i].depth; d++) {
            const ay_sym_t *s = SYM(fr[st[i].first + d]);
            const char *name = frame_name(s, tmp, sizeof tmp);
            size_t k = 0;
            while (k < nf && strcmp(fn[k].name, name))
                k++;
            if (k == nf) {
                fn[nf].name = strdup(name);
                char where[512];
                if (s->line)
                    snprintf(where, sizeof where, "%s:%u", s->file, s->line);
                else
                    snprintf(where, sizeof where, "%s", s->object[0] ? s->object : "?");
                fn[nf].where = strdup(where);
                nf++;
            }
            if (d == 0)
                fn[k].flat += v;
            if (fn[k].last_stack != i + 1) {
                fn[k].cum += v;
                fn[k].last_stack = i + 1;
            }
        }
    }
    qsort(fn, nf, sizeof *fn, cmp_flat);
    char t1[32], t2[32], t3[32];
    human(t1, sizeof t1, total, objects);
    printf("%s: %s %s, %zu stacks\n", path, t1,
           objects ? (alloc ? "objects allocated" : "live objects")
                   : (alloc ? "allocated" : "live"),
           nst);
    printf("%12s %6s %6s %12s %6s  %s\n", "flat", "flat%", "sum%", "cum", "cum%",
           "function (where)");
    uint64_t sum = 0;
    for (size_t k = 0; k < nf && (int)k < top; k++) {
        sum += fn[k].flat;
        human(t2, sizeof t2, fn[k].flat, objects);
        human(t3, sizeof t3, fn[k].cum, objects);
        double base = total ? (double)total : 1;
        printf("%12s %5.1f%% %5.1f%% %12s %5.1f%%  %s (%s)\n", t2, 100 * fn[k].flat / base,
               100 * sum / base, t3, 100 * fn[k].cum / base, fn[k].name, fn[k].where);
    }
    return 0;
}
