/* SPDX-License-Identifier: MIT */
/* alloy_top.h - the entry point of `alloy top`, a running process's live statistics
 * (alloy_top.c), for the dispatcher, alloy.c.
 *
 * Invariants: it declares only what alloy_top.c defines, and that file
 * calls back nothing of alloy.c (its helpers are alloy_util's); argv is the
 * command's, argv[1] the subcommand's name.  The return value is the exit
 * status; bad usage exits from within instead (status 2, usage_error). */
#ifndef ALLOY_TOP_H
#define ALLOY_TOP_H

/* alloy top [--once|--json] PID */
int cmd_top(int argc, char **argv);

#endif
