/* SPDX-License-Identifier: MIT */
/* alloy_prof.h - the entry point of `alloy prof`, a heap profile symbolised
 * (alloy_prof.c), for the dispatcher, alloy.c.
 *
 * Invariants: it declares only what alloy_prof.c defines, and that file
 * calls back nothing of alloy.c (its helpers are alloy_util's); argv is the
 * command's, argv[1] the subcommand's name.  The return value is the exit
 * status; bad usage exits from within instead (status 2, usage_error). */
#ifndef ALLOY_PROF_H
#define ALLOY_PROF_H

/* alloy prof [--top N] [--folded] [--alloc] [--objects] FILE.heap (dir is
 * unused: the dispatcher passes NULL) */
int cmd_prof(int argc, char **argv, const char *dir);

#endif
