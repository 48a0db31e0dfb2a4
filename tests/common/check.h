/* SPDX-License-Identifier: MIT */
/* check.h - the smallest test harness: CHECK(cond) records a failure with its
 * location and keeps going; CHECK_DONE() prints a summary and returns the exit
 * code.  Every test program ends with `return CHECK_DONE();`. */
#ifndef ALLOY_TEST_CHECK_H
#define ALLOY_TEST_CHECK_H
#include <stdio.h>

static int check_failures, check_count;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        check_count++;                                                                             \
        if (!(cond)) {                                                                             \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
        }                                                                                          \
    } while (0)

#define CHECK_EQ_U(a, b)                                                                           \
    do {                                                                                           \
        unsigned long long check_a = (unsigned long long)(a), check_b = (unsigned long long)(b);   \
        check_count++;                                                                             \
        if (check_a != check_b) {                                                                  \
            check_failures++;                                                                      \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%llu != %llu)\n", __FILE__, __LINE__,  \
                    #a, #b, check_a, check_b);                                                     \
        }                                                                                          \
    } while (0)

#define CHECK_DONE()                                                                               \
    (fprintf(stderr, "%d checks, %d failed\n", check_count, check_failures),                       \
     (check_failures || check_count == 0) ? 1 : 0)

#endif
