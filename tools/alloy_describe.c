/* SPDX-License-Identifier: MIT */
/* alloy_describe.c - `alloy settings` and `alloy names`: the table of
 * ALLOY_CONF keys and the table of alloy_ctl names, read from liballoy.so
 * itself (alloy_setting_describe, alloy_ctl_describe), so that what they
 * print is what the library parses and answers.  The README's settings table
 * and the manual pages are made from this output, and tests check that they
 * agree with it.
 *
 *   alloy settings [--markdown|--man]
 *   alloy names [--markdown|--man]
 *
 * The library is loaded with dlopen (RTLD_LOCAL): it does not replace the
 * command's malloc.  Exit status: 0; 1 when liballoy.so cannot be loaded or
 * lacks the tables; 2 for bad usage.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <alloy/ctl.h>

#include "alloy_describe.h"
#include "alloy_util.h"

typedef enum { FMT_TEXT, FMT_MARKDOWN, FMT_MAN } fmt_t;

typedef int setting_fn(unsigned, alloy_setting_info_t *);
typedef int name_fn(unsigned, alloy_ctl_info_t *);

/* Text for a Markdown table cell: '|' would end the cell. */
static void md_cell(const char *s) {
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", stdout);
        else
            putchar(*s);
    }
}

/* Text for a roff text line (never a macro argument): a leading '.' or '\''
 * would be a request, '\' an escape, '-' a hyphen; a word in `backquotes`
 * (as the tables write code) is set in bold. */
static void man_text(const char *s) {
    if (*s == '.' || *s == '\'')
        fputs("\\&", stdout);
    int code = 0;
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", stdout);
        else if (*s == '-')
            fputs("\\-", stdout);
        else if (*s == '`' && (code || strchr(s + 1, '`')))
            fputs((code = !code) ? "\\fB" : "\\fR", stdout);
        else
            putchar(*s);
    }
}

static void *lookup(void *lib, const char *sym, const char *path) {
    void *f = dlsym(lib, sym);
    if (!f)
        error_line("%s has no %s (an older liballoy?)", path, sym);
    return f;
}

static int print_settings(setting_fn *describe, fmt_t fmt) {
    alloy_setting_info_t s;
    if (fmt == FMT_MARKDOWN)
        printf("| key | type | default | accepted values | meaning |\n|---|---|---|---|---|\n");
    for (unsigned k = 0; describe(k, &s) == 0; k++) {
        switch (fmt) {
        case FMT_MARKDOWN:
            /* a literal default in code style; one in words (heaps) as words */
            printf(strchr(s.default_value, ' ') ? "| `%s` | %s | %s | " : "| `%s` | %s | `%s` | ",
                   s.name, s.type, s.default_value);
            md_cell(s.range);
            fputs(" | ", stdout);
            md_cell(s.help);
            fputs(" |\n", stdout);
            break;
        case FMT_MAN:
            /* .TP, then the tag line "KEY (TYPE, default DEFAULT)": the key
             * first, in bold (the tests look for it there), a literal default
             * in bold, one in words in italics */
            fputs(".TP\n\\fB", stdout);
            man_text(s.name);
            printf("\\fR (%s, default %s", s.type, strchr(s.default_value, ' ') ? "\\fI" : "\\fB");
            man_text(s.default_value);
            fputs("\\fR)\n", stdout);
            man_text(s.help);
            fputs("\nAccepts ", stdout);
            man_text(s.range);
            fputs(".\n", stdout);
            break;
        case FMT_TEXT:
            printf("%-18s %-12s default %s\n%18s accepts %s\n%18s %s\n", s.name, s.type,
                   s.default_value, "", s.range, "", s.help);
            break;
        }
    }
    return 0;
}

static int print_names(name_fn *describe, fmt_t fmt) {
    alloy_ctl_info_t n;
    if (fmt == FMT_MARKDOWN)
        printf("| name | type | writable | meaning |\n|---|---|---|---|\n");
    for (unsigned k = 0; describe(k, &n) == 0; k++) {
        const char *rw = !strcmp(n.type, "action") ? "run" : n.writable ? "yes" : "no";
        switch (fmt) {
        case FMT_MARKDOWN:
            printf("| `%s` | `%s` | %s | ", n.name, n.type, rw);
            md_cell(n.help);
            fputs(" |\n", stdout);
            break;
        case FMT_MAN:
            /* .TP, then the tag line "NAME (TYPE, ACCESS)" or "NAME
             * (action)", the name first, in bold (the tests look for it) */
            fputs(".TP\n\\fB", stdout);
            man_text(n.name);
            if (!strcmp(rw, "run"))
                printf("\\fR (action)\n");
            else
                printf("\\fR (%s, %s)\n", n.type, !strcmp(rw, "yes") ? "read-write" : "read-only");
            man_text(n.help);
            fputc('\n', stdout);
            break;
        case FMT_TEXT: printf("%-36s %-13s %-4s %s\n", n.name, n.type, rw, n.help); break;
        }
    }
    return 0;
}

int cmd_describe(int argc, char **argv, const char *dir) {
    int settings = !strcmp(argv[1], "settings");
    fmt_t fmt = FMT_TEXT;
    for (int i = 2; i < argc; i++) {
        if (!strcmp(argv[i], "--markdown"))
            fmt = FMT_MARKDOWN;
        else if (!strcmp(argv[i], "--man"))
            fmt = FMT_MAN;
        else
            usage_error("unknown option '%s' (--markdown or --man)", argv[i]);
    }
    char path[PATH_MAX];
    find_library(path, sizeof path, dir);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        error_line("cannot load %s: %s", path, dlerror());
        return EXIT_MISSING;
    }
    void *f = lookup(lib, settings ? "alloy_setting_describe" : "alloy_ctl_describe", path);
    if (!f)
        return EXIT_MISSING;
    return settings ? print_settings((setting_fn *)f, fmt) : print_names((name_fn *)f, fmt);
}
