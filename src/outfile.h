/* SPDX-License-Identifier: MIT */
/* outfile.h - the files alloy writes reports to (timeline_file, stats_file):
 * the name's "%p" made the pid, the file created only when it does not
 * exist (O_EXCL: alloy never overwrites a file), and the one line on stderr
 * that says why a file could not be written.
 *
 * Invariants: no allocation, no stdio, no lock; only fmt, os and error.
 */
#ifndef ALLOY_OUTFILE_H
#define ALLOY_OUTFILE_H
#include <fcntl.h>
#include <stddef.h>

/* The flags of a report file: written at its end, closed on exec, never
 * through a symbolic link. */
#define AY_OUTFILE_FLAGS (O_WRONLY | O_CLOEXEC | O_APPEND | O_NOFOLLOW)

/* out = tmpl with each "%p" made `pid`, cut to cap - 1 bytes (cap > 24).
 * Returns 0, or -ENAMETOOLONG when it was cut. */
int ay_outfile_path(char *out, size_t cap, const char *tmpl, unsigned pid);
/* Create the file at path, mode 0644, with AY_OUTFILE_FLAGS and O_EXCL:
 * a file descriptor, or -errno (-EEXIST: the file exists, and is left as
 * it is). */
int ay_outfile_create(const char *path);
/* A reason in words for errno value err ("no such directory"). */
const char *ay_outfile_reason(int err);
/* "alloy: <who>: <before><file><after> (<reason>)<then>" on stderr; no
 * reason when err is 0. */
void ay_outfile_warn(const char *who, const char *before, const char *file, const char *after,
                     int err, const char *then);

#endif
