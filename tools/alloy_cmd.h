/* SPDX-License-Identifier: MIT */
/* alloy_cmd.h - what the files of the `alloy` command share: where things
 * are, usage errors, exit statuses, and one entry point per subcommand that
 * has a file of its own. */
#ifndef ALLOY_CMD_H
#define ALLOY_CMD_H
#include <stddef.h>

enum { EXIT_USAGE = 2, EXIT_MISSING = 1 };

/* A usage error: one line on stderr ("alloy: ... (see alloy --help)"), exit 2. */
__attribute__((format(printf, 1, 2), noreturn)) void usage_error(const char *fmt, ...);
/* The directory the command runs from (its real path's directory). */
void self_dir(char *out, size_t cap, const char *argv0);
/* Absolute path of liballoy.so.0, the soname (beside the command in a build
 * tree, in the library directory after install); exits with EXIT_MISSING
 * when absent. */
void find_library(char *out, size_t cap, const char *dir);

/* alloy settings | alloy names (alloy_describe.c) */
int cmd_describe(int argc, char **argv, const char *dir);
/* alloy stats FILE.json [FILE2.json] (alloy_stats.c) */
int cmd_stats(int argc, char **argv);
/* alloy prof (alloy_prof.c) */
int cmd_prof(int argc, char **argv, const char *dir);
/* alloy plot [-o OUT] FILE [FILE2] (alloy_plot.c) */
int cmd_plot(int argc, char **argv);
/* alloy top [--once|--json] PID (alloy_top.c) */
int cmd_top(int argc, char **argv);

#endif
