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

/* The picks come from a linear congruential state's top bits (the top
 * AY_SHUFFLE_POOL_BITS while the pool is full; a multiply and a shift give
 * an index below m, without a division, as it drains), seeded by the
 * caller's ay_random(): one draw per run, none per object. */
static uint64_t lcg_step(uint64_t x) { return x * 6364136223846793005u + 1442695040888963407u; }

void *ay_link_shuffled(uintptr_t start, uint32_t n, uint32_t size, uint64_t seed, void **last) {
    uintptr_t pool[AY_SHUFFLE_POOL];
    uint32_t m = n < AY_SHUFFLE_POOL ? n : AY_SHUFFLE_POOL;
    uintptr_t next = start, end = start + (uintptr_t)n * size;
    for (uint32_t i = 0; i < m; i++, next += size)
        pool[i] = next;
    uint64_t x = seed;
    uintptr_t head; /* the link to the first object, in a word of its own */
    void *prev = &head;
    for (; next < end; next += size) { /* the pool is full */
        x = lcg_step(x);
        unsigned j = (unsigned)(x >> (64 - AY_SHUFFLE_POOL_BITS));
        void *o = (void *)pool[j];
        pool[j] = next;
        ay_link_set_raw(prev, o);
        prev = o;
    }
    for (; m > 0; m--) { /* the run's last objects: the pool drains */
        x = lcg_step(x);
        uint32_t j = (uint32_t)(((x >> 32) * m) >> 32);
        void *o = (void *)pool[j];
        pool[j] = pool[m - 1];
        ay_link_set_raw(prev, o);
        prev = o;
    }
    *last = prev;
    return ay_link_get_raw(&head);
}
