/* SPDX-License-Identifier: MIT */
/* hot_test_mc_rng.c - the pricer's random numbers against fixed values:
 * MT19937-64's 10000th output for the default seed (the C++ standard's own
 * check), generate_canonical's range, and the polar method's saved second
 * deviate.  The comparison with g++'s output at full strength is the
 * hot_pricer_matches_cxx test. */
#include <stdint.h>

#include "check.h"
#include "mc_rng.h"

int main(void) {
    static mc_mt64_t g;
    mc_mt64_seed(&g, 5489);
    uint64_t x = 0;
    for (int i = 0; i < 10000; i++)
        x = mc_mt64_next(&g);
    CHECK(x == 9981545732273789042ULL); /* [rand.predef] */

    mc_mt64_seed(&g, 42);
    for (int i = 0; i < 100000; i++) {
        double u = mc_canonical(&g);
        CHECK(u >= 0.0 && u < 1.0);
    }

    /* the second call returns the saved x * mult without drawing */
    mc_mt64_seed(&g, 42);
    mc_normal_t d = mc_normal_make(0.0, 1.0);
    double first = mc_normal_next(&d, &g);
    CHECK(d.saved_available);
    unsigned index = g.index;
    double second = mc_normal_next(&d, &g);
    CHECK(g.index == index && !d.saved_available);
    CHECK(first != second);
    /* mean and scale are applied after */
    mc_mt64_seed(&g, 42);
    mc_normal_t e = mc_normal_make(10.0, 2.0);
    CHECK(mc_normal_next(&e, &g) == first * 2.0 + 10.0);
    return CHECK_DONE();
}
