/* SPDX-License-Identifier: MIT */
/* fastpath_pair.c - N malloc(64)+free pairs, for counting instructions with
 * callgrind (the loop of tools/fastpath-instructions.sh).  Built plain (for
 * LD_PRELOAD), and linked against liballoy.a and the NUMA test flavour. */
#include <stdlib.h>

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    void *volatile sink;
    for (long i = 0; i < n; i++) {
        void *p = malloc(64);
        sink = p;
        free(p);
    }
    (void)sink;
    return 0;
}
