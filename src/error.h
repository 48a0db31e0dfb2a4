/* SPDX-License-Identifier: MIT */
/* error.h - alloy's diagnostics: fatal errors and warnings on stderr.
 *
 * This is a leaf module: it depends only on fmt and os, formats without
 * allocating and writes with write(2), so any layer may report through it,
 * even inside malloc, even before initialisation.  It decides nothing: a
 * lower layer that fails returns an error, and the front end decides
 * whether that means NULL and errno, a warning, or an abort.
 *
 * Every message starts with "alloy: " and ends with a newline.
 */
#ifndef ALLOY_ERROR_H
#define ALLOY_ERROR_H
#include <stddef.h>

#include "fmt.h"
#include "internal.h"

/* Print "alloy: <what> (pointer <ptr>)" on stderr and abort. */
AY_COLD __attribute__((noreturn)) void ay_fatal(const char *what, const void *ptr);
/* The same for an error that no pointer caused: "alloy: <what>". */
AY_COLD __attribute__((noreturn)) void ay_fatal_msg(const char *what);
/* The same, for a public function's bad input: "alloy: <fn>: <what> (pointer <ptr>)". */
AY_COLD __attribute__((noreturn)) void ay_fatal_in(const char *fn, const char *what,
                                                   const void *ptr);
/* Free-list block p holds no link (its first word decodes to no address):
 * report it as malloc's, a double free (a word of 0: the block was handed
 * out already) or a write after free, and abort. */
AY_COLD __attribute__((noreturn)) void ay_fatal_bad_link(const void *p);
/* Print "alloy: <msg>" on stderr. */
AY_COLD void ay_warn(const char *msg);

/* A message built piece by piece: ay_msg_begin writes "alloy: ", the
 * ay_fmt_* calls add to it, ay_msg_end adds the newline and writes it. */
void ay_msg_begin(ay_fmt_t *f);
void ay_msg_end(ay_fmt_t *f);

#endif
