/* SPDX-License-Identifier: MIT */
/* ctl.h - the alloy_ctl name table, for the modules that answer to other
 * names for the same things (jemalloc's mallctl, jemalloc_api.c): they find
 * alloy's entry by name and go through alloy_ctl, so that each figure has
 * one definition.  Invariant: a name matches at most one pattern of the
 * table ("<i>" and "<j>" stand for decimal numbers without a leading zero,
 * below 2^20). */
#ifndef ALLOY_CTL_INTERNAL_H
#define ALLOY_CTL_INTERNAL_H
#include <stdbool.h>
#include <stddef.h>

/* Does name match pattern pat?  The numbers standing for <i>/<j> go to
 * idx[0] and idx[1], in order. */
bool ay_ctl_match(const char *pat, const char *name, unsigned idx[2]);
/* The table entry name matches: 0 with its index in *k (alloy_ctl_name(*k)
 * is its pattern) and the numbers in idx, or ENOENT when no entry matches
 * or the heap or class the name's number stands for does not exist. */
int ay_ctl_lookup(const char *name, unsigned *k, unsigned idx[2]);
/* The size of entry k's value (the length alloy_ctl wants), 0 for an action
 * (and for k past the end). */
size_t ay_ctl_value_size(unsigned k);

#endif
