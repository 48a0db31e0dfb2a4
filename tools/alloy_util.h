/* SPDX-License-Identifier: MIT */
/* alloy_util.h - the helpers that the files of the `alloy` command share:
 * its exit statuses, its messages and usage errors, and where its parts are (the command's
 * own directory, liballoy.so.0, paths joined under PATH_MAX).
 *
 * Invariants: this module is the bottom of the command.  It calls no other
 * file of tools/; the dispatcher (alloy.c) and the subcommand files
 * (alloy_<name>.c) call it, and tests/layers/check_layers.py fails on any
 * cycle among the files of tools/.  A helper that cannot do its work
 * exits with one line on stderr (is_file only answers), so that callers
 * need no error path. */
#ifndef ALLOY_UTIL_H
#define ALLOY_UTIL_H
#include <stdbool.h>
#include <stddef.h>

#ifndef ALLOY_TOOL_SONAME
#define ALLOY_TOOL_SONAME "liballoy.so.0" /* the library's soname */
#endif

enum { EXIT_USAGE = 2, EXIT_MISSING = 1 };

/* The subcommand that runs ("run", "stats", ...), set by the dispatcher
 * before it calls the subcommand: every message of the command starts
 * "alloy NAME: " ("alloy: " before a subcommand is known). */
void set_command_name(const char *name);
/* One line on stderr: "alloy NAME: <message>". */
__attribute__((format(printf, 1, 2))) void error_line(const char *fmt, ...);
/* error_line, then exit with status. */
__attribute__((format(printf, 2, 3), noreturn)) void die(int status, const char *fmt, ...);
/* A usage error: one line on stderr ("alloy NAME: ... (see alloy --help)"), exit 2. */
__attribute__((format(printf, 1, 2), noreturn)) void usage_error(const char *fmt, ...);
/* Whether path is a regular file (after symlinks). */
bool is_file(const char *path);
/* out = a + "/" + b, or exit with EXIT_MISSING when it does not fit in cap. */
void path_join(char *out, size_t cap, const char *a, const char *b);
/* The directory the command runs from (its real path's directory). */
void self_dir(char *out, size_t cap, const char *argv0);
/* Absolute path of liballoy.so.0, the soname (beside the command in a build
 * tree, in the library directory after install); exits with EXIT_MISSING
 * when absent. */
void find_library(char *out, size_t cap, const char *dir);

#endif
