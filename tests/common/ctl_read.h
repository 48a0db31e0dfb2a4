/* SPDX-License-Identifier: MIT */
/* ctl_read.h - reads of one alloy_ctl name, by type, for the tests: each
 * returns the value, or 0 (false) with a failed CHECK and the name and error
 * on stderr.  Include check.h first. */
#ifndef ALLOY_TEST_CTL_READ_H
#define ALLOY_TEST_CTL_READ_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "alloy/ctl.h"

#define CTL_READER(fn, type)                                                                       \
    static inline type fn(const char *name) {                                                      \
        type v = 0;                                                                                \
        size_t len = sizeof v;                                                                     \
        int r = alloy_ctl(name, &v, &len, NULL, 0);                                                \
        if (r)                                                                                     \
            fprintf(stderr, "reading %s: %d\n", name, r);                                          \
        CHECK(r == 0);                                                                             \
        return v;                                                                                  \
    }
CTL_READER(rd_u64, uint64_t)
CTL_READER(rd_uns, unsigned)
CTL_READER(rd_bool, bool)
CTL_READER(rd_i64, int64_t)
#undef CTL_READER

#endif
