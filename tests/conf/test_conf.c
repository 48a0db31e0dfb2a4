/* SPDX-License-Identifier: MIT */
/* test_conf.c - ALLOY_CONF parsing: good settings apply; an unknown key, a
 * malformed value or a missing colon warns once, naming the key, and keeps the
 * default.  The warnings go to stderr, which is redirected to a file here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "conf.h"

static char captured[4096];

/* apply `str` to a fresh default conf, capturing what is written on fd 2 */
static ay_conf_t apply(const char *str) {
    ay_conf_t c;
    char path[] = "/tmp/alloy-conf-XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(2);
    dup2(fd, 2);
    ay_conf_init(&c); /* defaults + environment (unset in this test) */
    ay_conf_apply(&c, str, "ALLOY_CONF");
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, captured, sizeof captured - 1, 0);
    captured[n > 0 ? n : 0] = 0;
    close(fd);
    unlink(path);
    return c;
}

static int same_conf(const ay_conf_t *a, const ay_conf_t *b) {
    return a->batch.policy == b->batch.policy && a->batch.byte_budget == b->batch.byte_budget &&
           a->batch.object_cap == b->batch.object_cap && a->return_k_halves == b->return_k_halves &&
           a->tcache == b->tcache && a->tcache_max_bytes == b->tcache_max_bytes &&
           a->decay_ms == b->decay_ms && a->stats_print == b->stats_print && a->heaps == b->heaps &&
           a->background_thread == b->background_thread && a->junk == b->junk &&
           a->zero == b->zero && a->abort_on_error == b->abort_on_error &&
           a->quarantine == b->quarantine && !strcmp(a->stats_print_opts, b->stats_print_opts);
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

int main(void) {
    unsetenv("ALLOY_CONF");
    ay_conf_t d = apply(NULL);
    CHECK_EQ_U(d.batch.policy, AY_BATCH_COMPACT); /* alloy's default, not the paper's guard */
    CHECK_EQ_U(d.return_k_halves, 4);
    CHECK_EQ_U(d.decay_ms, 1000);
    CHECK(d.tcache && !d.stats_print);
    CHECK_EQ_U(d.quarantine, 0); /* off by default, in every flavour */
    CHECK_EQ_U(captured[0], 0);

    ay_conf_t c = apply("batch_policy:clip,return_threshold:1.5,decay_ms:-1,tcache_max_bytes:3m,"
                        "stats_print:true,tcache:false,batch_budget:128k,batch_cap:512");
    CHECK_EQ_U(c.batch.policy, AY_BATCH_CLIP);
    CHECK_EQ_U(c.return_k_halves, 3);
    CHECK(c.decay_ms == -1);
    CHECK_EQ_U(c.tcache_max_bytes, 3u << 20);
    CHECK(c.stats_print && !c.tcache);
    ay_conf_t h = apply("heaps:3,background_thread:true,junk:true,zero:true,abort_on_error:false");
    CHECK(h.heaps == 3 && h.background_thread && h.junk && h.zero && !h.abort_on_error);
    CHECK(!strcmp(d.stats_print_opts, ""));
    ay_conf_t o = apply("stats_print_opts:fJhc");
    CHECK(!strcmp(o.stats_print_opts, "fJhc"));
    CHECK_EQ_U(captured[0], 0);
    ay_conf_t q = apply("quarantine:128k");
    CHECK_EQ_U(q.quarantine, 128u << 10);
    CHECK_EQ_U(captured[0], 0);
    CHECK_EQ_U(captured[0], 0);
    CHECK_EQ_U(c.batch.byte_budget, 128u << 10);
    CHECK_EQ_U(c.batch.object_cap, 512);
    CHECK_EQ_U(captured[0], 0);

    /* each malformed item: one warning naming the key; the default stays */
    const char *bad[] = {"decay_ms:abc",
                         "batch_policy:fast",
                         "return_threshold:1",
                         "return_threshold:2.7",
                         "tcache:maybe",
                         "tcache_max_bytes:-5",
                         "batch_cap:0",
                         "decay_ms:",
                         "decay_ms:99999999999999999999999",
                         "heaps:-3",
                         "heaps:0",
                         "background_thread:yes",
                         "junk:2",
                         "stats_print_opts:x",
                         "stats_print_opts:ff",
                         "stats_print_opts:fJhcf",
                         "quarantine:2g",
                         "quarantine:-1",
                         "quarantine:lots"};
    const char *keys[] = {"decay_ms",
                          "batch_policy",
                          "return_threshold",
                          "return_threshold",
                          "tcache",
                          "tcache_max_bytes",
                          "batch_cap",
                          "decay_ms",
                          "decay_ms",
                          "heaps",
                          "heaps",
                          "background_thread",
                          "junk",
                          "stats_print_opts",
                          "stats_print_opts",
                          "stats_print_opts",
                          "'quarantine'",
                          "'quarantine'",
                          "'quarantine'"};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ay_conf_t b = apply(bad[i]);
        CHECK(same_conf(&b, &d));
        CHECK(count_lines(captured) == 1 && strstr(captured, keys[i]) != NULL);
    }
    ay_conf_t u = apply("heaps_of_fun:3");
    CHECK(same_conf(&u, &d));
    CHECK(strstr(captured, "unknown key 'heaps_of_fun'") != NULL);
    ay_conf_t m = apply("decay_ms");
    CHECK(same_conf(&m, &d));
    CHECK(strstr(captured, "malformed") != NULL && strstr(captured, "decay_ms") != NULL);

    /* a bad item does not spoil the good ones around it */
    ay_conf_t mix = apply("decay_ms:abc,,batch_policy:pow2,nonsense");
    CHECK_EQ_U(mix.batch.policy, AY_BATCH_POW2);
    CHECK_EQ_U(mix.decay_ms, 1000);
    CHECK_EQ_U(count_lines(captured), 2);
    return CHECK_DONE();
}
