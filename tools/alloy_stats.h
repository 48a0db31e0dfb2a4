/* SPDX-License-Identifier: MIT */
/* alloy_stats.h - the entry point of `alloy stats`, a saved JSON report as tables, or the
 * change between two
 * (alloy_stats.c), for the dispatcher, alloy.c.
 *
 * Invariants: it declares only what alloy_stats.c defines, and that file
 * calls back nothing of alloy.c (its helpers are alloy_util's); argv is the
 * command's, argv[1] the subcommand's name.  The return value is the exit
 * status; bad usage exits from within instead (status 2, usage_error). */
#ifndef ALLOY_STATS_H
#define ALLOY_STATS_H

/* alloy stats [--summary] FILE.json [FILE2.json] */
int cmd_stats(int argc, char **argv);

#endif
