/* SPDX-License-Identifier: MIT */
/* alloy_plot.c - `alloy plot`: a timeline's chart and its summary.
 *
 *   alloy plot [--force] [-o OUT.svg|OUT.png] FILE [FILE2]
 *
 * FILE is a timeline (alloy run --timeline FILE, or timeline_file).  The
 * chart is drawn by matplotlib, through /usr/bin/python3 (Debian's
 * python3-matplotlib): this command checks its arguments and the files,
 * then runs tools/alloy_plot.py, which is compiled in (alloy_plot_py.h), as
 * `python3 -c SCRIPT OUT FILE [FILE2]`.  The script prints the summary, the
 * phases where RSS grew fastest, on stdout.  OUT defaults to FILE with its
 * extension replaced by .svg.  A chart that exists is not replaced unless
 * --force says so (one line, status 2), as the library never overwrites a
 * file.
 *
 * Exit status: 0; 2 for bad usage, a file that is not a timeline, or a chart
 * that exists (without --force); 1 when
 * Python 3 or matplotlib is missing (the message names the package).
 * ALLOY_PLOT_PYTHON names another interpreter (for the tests).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "alloy_plot.h"
#include "alloy_util.h"
#include "alloy_plot_py.h"

#define PACKAGE_HINT "apt-get install python3-matplotlib"

/* Does FILE start as a timeline?  Else one line and status 2. */
static void check_timeline(const char *file) {
    static const char head[] = "{\"alloy_timeline\":";
    char buf[sizeof head] = "";
    FILE *f = fopen(file, "r");
    if (!f) {
        error_line("%s: %s", file, strerror(errno));
        exit(EXIT_USAGE);
    }
    size_t n = fread(buf, 1, sizeof head - 1, f);
    fclose(f);
    buf[n] = 0;
    if (strcmp(buf, head) != 0) {
        die(EXIT_USAGE,
            "%s: not an alloy timeline (it starts with the line "
            "{\"alloy_timeline\":1,...}; alloy run --timeline FILE writes one)",
            file);
    }
}

static bool has_ext(const char *s, const char *ext) {
    size_t n = strlen(s), e = strlen(ext);
    return n > e && !strcasecmp(s + n - e, ext);
}

/* FILE with its extension (if any) replaced by .svg. */
static char *default_out(const char *file) {
    const char *slash = strrchr(file, '/'), *dot = strrchr(file, '.');
    size_t stem = dot && (!slash || dot > slash + 1) ? (size_t)(dot - file) : strlen(file);
    char *out = malloc(stem + 5);
    if (!out) {
        error_line("%s", strerror(errno));
        exit(EXIT_MISSING);
    }
    memcpy(out, file, stem);
    strcpy(out + stem, ".svg");
    return out;
}

int cmd_plot(int argc, char **argv) {
    const char *out = NULL, *files[2];
    int nfiles = 0;
    bool force = false;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc)
                usage_error("%s needs a file name (OUT.svg or OUT.png)", a);
            out = argv[++i];
        } else if (!strncmp(a, "--output=", 9)) {
            out = a + 9;
        } else if (!strcmp(a, "--force") || !strcmp(a, "-f")) {
            force = true;
        } else if (a[0] == '-' && a[1]) {
            usage_error("unknown option '%s'", a);
        } else if (nfiles == 2) {
            usage_error("at most two timelines (alloy plot A B overlays them)");
        } else {
            files[nfiles++] = a;
        }
    }
    if (!nfiles)
        usage_error("which timeline? alloy plot [--force] [-o OUT.svg|OUT.png] FILE [FILE2]");
    if (out && !has_ext(out, ".svg") && !has_ext(out, ".png"))
        usage_error("-o %s: the chart is an .svg or a .png file", out);
    for (int i = 0; i < nfiles; i++)
        check_timeline(files[i]);
    if (!out)
        out = default_out(files[0]);
    if (!force && access(out, F_OK) == 0)
        die(EXIT_USAGE,
            "%s exists: not replaced (name another chart with -o, or replace it with --force)",
            out);

    const char *python = getenv("ALLOY_PLOT_PYTHON");
    if (!python || !*python)
        python = "/usr/bin/python3";
    if (access(python, X_OK) != 0) {
        error_line("needs Python 3 (%s) and matplotlib: " PACKAGE_HINT, python);
        return EXIT_MISSING;
    }
    char *av[6] = {(char *)python,        "-c",
                   (char *)alloy_plot_py, (char *)out,
                   (char *)files[0],      nfiles > 1 ? (char *)files[1] : NULL};
    execv(python, av);
    error_line("cannot run %s: %s", python, strerror(errno));
    return EXIT_MISSING;
}
