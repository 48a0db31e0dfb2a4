/* real_driver.c - placeholder until the real-allocator harness lands. */
#include "real_driver.h"

#include <stdio.h>

int sim_real_validate(const sim_real_opts_t *o) {
    (void)o;
    fprintf(stderr, "alloy-sim: validate: not available yet\n");
    return 2;
}

int sim_real_bench(const sim_real_opts_t *o) {
    (void)o;
    fprintf(stderr, "alloy-sim: bench: not available yet\n");
    return 2;
}
