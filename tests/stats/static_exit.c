/* SPDX-License-Identifier: MIT */
/* static_exit.c - a program that calls only malloc and free, linked with
 * liballoy.a: with ALLOY_CONF=stats_print:true it must print the report at
 * exit, as it does linked with liballoy.so (test stats-print-static).  The
 * report is a destructor in the stats module, which nothing this program
 * calls refers to. */
#include <stdlib.h>

int main(void) {
    void *volatile p = malloc(100);
    free(p);
    return 0;
}
