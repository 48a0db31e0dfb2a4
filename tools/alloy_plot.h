/* SPDX-License-Identifier: MIT */
/* alloy_plot.h - the entry point of `alloy plot`, a timeline's chart and its summary
 * (alloy_plot.c), for the dispatcher, alloy.c.
 *
 * Invariants: it declares only what alloy_plot.c defines, and that file
 * calls back nothing of alloy.c (its helpers are alloy_util's); argv is the
 * command's, argv[1] the subcommand's name.  The return value is the exit
 * status; bad usage exits from within instead (status 2, usage_error). */
#ifndef ALLOY_PLOT_H
#define ALLOY_PLOT_H

/* alloy plot [-o OUT] FILE [FILE2] */
int cmd_plot(int argc, char **argv);

#endif
