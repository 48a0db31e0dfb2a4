/* SPDX-License-Identifier: MIT */
/* prof_on.c - linked into liballoy_prof.so only: heap profiling on by
 * default (link-time settings, conf.h), so that the benchmark suite can run
 * alloy with profiling on and off side by side, interleaved:
 *   bench/run.py --allocators alloy,alloy-prof=build/liballoy_prof.so
 * ALLOY_CONF still applies on top. */
const char *alloy_malloc_conf = "prof:true";
