/* SPDX-License-Identifier: MIT */
/* secure.c - the keys, the magic numbers of the offset check, and the
 * slow-path random numbers (see secure.h).
 *
 * Invariants: ay_link_key, ay_tag_key (and ay_tag_free_key, its complement)
 * and ay_class_magic[] are written once,
 * by ay_secure_init, before any free list exists, and never change (a fork
 * child keeps them); the three seed words come from getrandom, or, without
 * it, from AT_RANDOM mixed with the time and an address; random_state
 * changes only by one atomic add per ay_random call. */
#include "secure.h"

#include "os.h"

/* Drawn at initialisation; until then (no list exists yet) a key whose top
 * bits make AY_LIST_END's word decode to no address, as every key's do, so
 * that a malloc before initialisation misses (secure.h). */
uintptr_t ay_link_key = (uintptr_t)0x5a5a << AY_USER_ADDR_BITS;
const uintptr_t ay_list_end = 0; /* (read-only: no path ever writes the end of a list) */
uintptr_t ay_tag_key, ay_tag_free_key;
bool ay_tags_on;
uint64_t ay_class_magic[AY_NUM_CLASSES];
static uint64_t random_state;

static uint64_t splitmix64(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void ay_secure_init(void) {
    uint64_t seed[3];
    if (ay_os_random(seed, sizeof seed) != 0) {
        /* no getrandom: the kernel's AT_RANDOM bytes, which glibc also uses
         * for the stack protector, so mixed with the time and an address
         * rather than used as they are */
        uint64_t s = ay_os_auxv_random() ^ ay_os_now_ms() ^ (uint64_t)(uintptr_t)&seed;
        for (unsigned i = 0; i < 3; i++)
            seed[i] = splitmix64(&s);
    }
    /* The key's top 17 bits (those above a user-space address) are never
     * 0, 1, 0x1fffe or 0x1ffff: a word a program often writes (0, a small
     * integer or a pointer, whose sum with a block's address has 0 or 1
     * there, or a small negative integer, whose sum has all ones or all
     * ones but the last) then never decodes to a user-space address, so a
     * handed-out block is never taken for a free one (secure.h). */
    uint64_t top = 2 + (seed[0] >> AY_USER_ADDR_BITS) % ((1u << (64 - AY_USER_ADDR_BITS)) - 4);
    ay_link_key = (uintptr_t)((seed[0] & (((uint64_t)1 << AY_USER_ADDR_BITS) - 1)) |
                              top << AY_USER_ADDR_BITS);
    ay_tag_key = (uintptr_t)seed[1];
    ay_tag_free_key = ~ay_tag_key;
    __atomic_store_n(&random_state, seed[2], __ATOMIC_RELAXED);
    for (unsigned c = 0; c < AY_NUM_CLASSES; c++)
        ay_class_magic[c] = ((uint64_t)1 << 40) / ay_policy_class_size(c) + 1;
}

uint64_t ay_random(void) {
    uint64_t s = __atomic_add_fetch(&random_state, 0x9e3779b97f4a7c15u, __ATOMIC_RELAXED);
    s = (s ^ (s >> 30)) * 0xbf58476d1ce4e5b9u;
    s = (s ^ (s >> 27)) * 0x94d049bb133111ebu;
    return s ^ (s >> 31);
}

void ay_secure_conf(bool tags) { ay_tags_on = AY_SECURE && tags; }

/* A random order of 0..m-1 (m <= AY_SHUFFLE_WINDOW) into perm, for window
 * w of a run of seed: Fisher-Yates, each index drawn with a multiply and a
 * shift from a linear congruential state's top bits. */
static unsigned shuffle_window(uint8_t *perm, uint32_t n, uint64_t seed, uint32_t w) {
    uint32_t m = n - w * AY_SHUFFLE_WINDOW;
    if (m > AY_SHUFFLE_WINDOW)
        m = AY_SHUFFLE_WINDOW;
    uint64_t x = seed + w * 0x9e3779b97f4a7c15u;
    for (unsigned i = 0; i < m; i++)
        perm[i] = (uint8_t)i;
    for (unsigned i = m; i > 1; i--) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        unsigned j = (unsigned)(((x >> 32) * i) >> 32);
        uint8_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    return m;
}

uintptr_t ay_shuffled_object(uintptr_t start, uint32_t n, uint32_t size, uint64_t seed,
                             uint32_t j) {
    uint8_t perm[AY_SHUFFLE_WINDOW];
    uint32_t w = j / AY_SHUFFLE_WINDOW;
    shuffle_window(perm, n, seed, w);
    return start + ((uintptr_t)w * AY_SHUFFLE_WINDOW + perm[j % AY_SHUFFLE_WINDOW]) * size;
}

void *ay_link_shuffled(uintptr_t start, uint32_t n, uint32_t size, uint64_t seed, void **last) {
    uint8_t perm[AY_SHUFFLE_WINDOW];
    void *first = NULL, *prev = NULL;
    for (uint32_t w = 0; w * AY_SHUFFLE_WINDOW < n; w++) {
        unsigned m = shuffle_window(perm, n, seed, w);
        for (unsigned k = 0; k < m; k++) {
            void *o = (void *)(start + ((uintptr_t)w * AY_SHUFFLE_WINDOW + perm[k]) * size);
            if (prev)
                ay_link_set(prev, o);
            else
                first = o;
            prev = o;
        }
    }
    *last = prev;
    return first;
}
