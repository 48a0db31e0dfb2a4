/* SPDX-License-Identifier: MIT */
/* test_dlopen.c - two dlopen cases.
 * 1. A program running on alloy dlopens a library that allocates (libm's
 *    neighbour here is the C library's own dlopen machinery: the DTV and TLS
 *    blocks of the new module come from alloy's malloc) and frees its memory.
 * 2. liballoy.so itself is dlopen'ed by a program running on glibc: its
 *    alloy_* functions work (initial-exec TLS fits in the static TLS surplus).
 * Usage: test_dlopen <path to liballoy.so> <path to a module with TLS> */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

int main(int argc, char **argv) {
    if (argc < 3)
        return 2;
    /* case 2: liballoy.so loaded late */
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL);
    if (h) {
        void *(*am)(size_t) = (void *(*)(size_t))dlsym(h, "alloy_malloc");
        void (*af)(void *) = (void (*)(void *))dlsym(h, "alloy_free");
        CHECK(am && af);
        if (am && af) {
            void *ps[1000];
            for (int i = 0; i < 1000; i++) {
                ps[i] = am((size_t)i * 40 + 1);
                CHECK(ps[i] != NULL);
                memset(ps[i], 1, (size_t)i * 40 + 1);
            }
            for (int i = 0; i < 1000; i++)
                af(ps[i]);
        }
    }
    /* case 1: load and unload a module with TLS, several times */
    for (int i = 0; i < 20; i++) {
        void *m = dlopen(argv[2], RTLD_NOW);
        CHECK(m != NULL);
        int *(*get)(void) = m ? (int *(*)(void))dlsym(m, "tls_counter") : NULL;
        CHECK(get && get() != NULL);
        if (m)
            dlclose(m);
    }
    void *p = malloc(100);
    CHECK(p != NULL);
    free(p);
    return CHECK_DONE();
}
