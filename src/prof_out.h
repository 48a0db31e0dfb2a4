/* SPDX-License-Identifier: MIT */
/* prof_out.h - what the heap profiler writes (prof_out.c): heap profiles in
 * gperftools' text format, which google-pprof reads (on demand, every
 * prof_interval bytes, and at exit with prof_final), and the leak report at
 * exit (prof_leak).  It reads the store (prof_store.h) under its lock and
 * writes without it; it never allocates with malloc, and the writing thread
 * is never sampled meanwhile. */
#ifndef ALLOY_PROF_OUT_H
#define ALLOY_PROF_OUT_H

/* After initialisation, outside malloc (the library constructor): take a
 * private copy of stderr for the report at exit. */
void ay_prof_start(void);
/* Write a heap profile to `path`, or to the next manual dump file
 * (<prof_prefix>.<pid>.<seq>.m.heap) when path is NULL.  0, or an errno. */
int ay_prof_dump(const char *path);
/* Write the dump of the given kind ('f' final, 'i' interval, 'm' manual) to
 * <prof_prefix>.<pid>.<seq>.<kind>.heap.  0, or an errno; the first failure
 * is warned about, once. */
int ay_prof_dump_kind(char kind);
/* The file the last successful dump wrote ("" before any). */
const char *ay_prof_last_dump(void);

#endif
