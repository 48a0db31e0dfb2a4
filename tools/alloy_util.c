/* SPDX-License-Identifier: MIT */
/* alloy_util.c - the helpers that the files of the `alloy` command share
 * (declared in alloy_util.h): messages and usage errors, and where the command's parts
 * are.
 *
 * Where things are.  The command finds its own files from its real path
 * (/proc/self/exe), so it works from the build tree (build/alloy, next to
 * liballoy.so, alloy-sim and the bench programs) and after `cmake --install`
 * (PREFIX/bin/alloy and PREFIX/<libdir>/liballoy.so.0; the bin-to-lib path is
 * fixed at configure time in ALLOY_TOOL_LIBDIR_REL).  A build tree is
 * recognised by the CMakeCache.txt beside the command.  The command looks
 * for the library by its soname (ALLOY_TOOL_SONAME, liballoy.so.0), the file
 * the runtime package (liballoy0) ships: the liballoy.so link belongs to the
 * development files and may be absent.
 *
 * Invariants: libc only, and no other file of tools/ (this is the bottom of
 * the command; see alloy_util.h).  A helper that cannot do its work exits
 * (EXIT_USAGE for bad usage, EXIT_MISSING for a missing part or a path
 * longer than PATH_MAX) with one line on stderr starting "alloy NAME: ", NAME
 * the subcommand (set_command_name), or "alloy: " before one is known.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloy_util.h"

#ifndef ALLOY_TOOL_LIBDIR_REL
#define ALLOY_TOOL_LIBDIR_REL "../lib" /* from bin/ to the library directory */
#endif

/* ---- messages: one line each, "alloy NAME: ..." ---- */

static const char *command_name; /* the subcommand, or NULL */

void set_command_name(const char *name) { command_name = name; }

static void vline(const char *fmt, va_list ap, const char *tail) {
    if (command_name)
        fprintf(stderr, "alloy %s: ", command_name);
    else
        fputs("alloy: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(tail, stderr);
}

void error_line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vline(fmt, ap, "\n");
    va_end(ap);
}

void die(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vline(fmt, ap, "\n");
    va_end(ap);
    exit(status);
}

/* A usage error: one line on stderr, exit status 2. */
void usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vline(fmt, ap, " (see alloy --help)\n");
    va_end(ap);
    exit(EXIT_USAGE);
}

bool is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* out = a + "/" + b, or exit when it does not fit. */
void path_join(char *out, size_t cap, const char *a, const char *b) {
    int n = snprintf(out, cap, "%s/%s", a, b);
    if (n < 0 || (size_t)n >= cap) {
        die(EXIT_MISSING, "path too long: %s/%s", a, b);
    }
}

/* The directory holding this executable, resolved through symlinks. */
void self_dir(char *out, size_t cap, const char *argv0) {
    char buf[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n > 0) {
        buf[n] = '\0';
    } else if (!argv0 || !strchr(argv0, '/') || !realpath(argv0, buf)) {
        die(EXIT_MISSING, "cannot find where the alloy command lives "
                          "(/proc/self/exe is unreadable; run it by its path)");
    }
    char *slash = strrchr(buf, '/');
    if (slash == buf)
        slash[1] = '\0';
    else if (slash)
        *slash = '\0';
    if (strlen(buf) >= cap) {
        die(EXIT_MISSING, "path too long: %s", buf);
    }
    strcpy(out, buf);
}

static bool in_build_tree(const char *dir) {
    char p[PATH_MAX];
    path_join(p, sizeof p, dir, "CMakeCache.txt");
    return is_file(p);
}

/* Absolute path of liballoy.so.0 (the soname): beside the command in a build
 * tree, in the library directory after install.  Both places are tried, that
 * one first. */
void find_library(char *out, size_t cap, const char *dir) {
    char installed[PATH_MAX];
    path_join(installed, sizeof installed, dir, ALLOY_TOOL_LIBDIR_REL);
    const char *order[2] = {installed, dir};
    if (in_build_tree(dir)) {
        order[0] = dir;
        order[1] = installed;
    }
    for (int i = 0; i < 2; i++) {
        char real[PATH_MAX];
        if (realpath(order[i], real)) {
            path_join(out, cap, real, ALLOY_TOOL_SONAME);
            if (is_file(out))
                return;
        }
    }
    die(EXIT_MISSING,
        ALLOY_TOOL_SONAME " not found (looked in %s and %s); build it (cmake --build) or reinstall",
        order[0], order[1]);
}
