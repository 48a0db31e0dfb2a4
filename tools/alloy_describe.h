/* SPDX-License-Identifier: MIT */
/* alloy_describe.h - the entry point of `alloy settings` and `alloy names`, the tables of
 * ALLOY_CONF keys and of alloy_ctl names read from liballoy.so
 * (alloy_describe.c), for the dispatcher, alloy.c.
 *
 * Invariants: it declares only what alloy_describe.c defines, and that file
 * calls back nothing of alloy.c (its helpers are alloy_util's); argv is the
 * command's, argv[1] the subcommand's name.  The return value is the exit
 * status; bad usage exits from within instead (status 2, usage_error). */
#ifndef ALLOY_DESCRIBE_H
#define ALLOY_DESCRIBE_H

/* alloy settings | alloy names [--markdown|--man]: argv[1] says which; dir
 * is the command's directory, where liballoy.so.0 is looked for. */
int cmd_describe(int argc, char **argv, const char *dir);

#endif
