/* SPDX-License-Identifier: MIT */
/* sha256.h - SHA-256 (FIPS 180-4), for the sweep's manifest.sha256.
 * Streaming: init, update any number of times, final.  No allocation. */
#ifndef ALLOY_SIM_SHA256_H
#define ALLOY_SIM_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct sim_sha256 {
    uint32_t h[8];
    uint64_t len; /* bytes hashed so far */
    unsigned char buf[64];
    size_t nbuf; /* bytes waiting in buf, < 64 */
} sim_sha256_t;

void sim_sha256_init(sim_sha256_t *c);
void sim_sha256_update(sim_sha256_t *c, const void *data, size_t len);
void sim_sha256_final(sim_sha256_t *c, unsigned char out[32]);
/* Hash a whole file into 64 hex digits plus NUL.  Returns 0 or -1. */
int sim_sha256_file(const char *path, char hex[65]);

#endif
