// SPDX-License-Identifier: MIT
// bench_cxx.cpp - a C++ program's allocations, through the global operators
// new and delete: g++ (C++14 and later) calls the sized delete,
// operator delete(void *, size_t), for a delete of a complete type and from
// std::allocator, so this workload shows what an allocator does with the
// size (docs/BENCHMARKS.md, "C++: sized delete").
//
// Cases, each timed in process CPU time (time_ms, ns_per_op):
//   objects  new and delete of objects of six types (16-256 bytes), a pool
//            of live ones, each step replacing one at random
//   map      std::map<int, std::string> (strings on the heap), insert and
//            erase keeping about K entries
//   list     std::list of 48-byte items, push at the back, pop at the front
//   hash     std::unordered_map<uint64_t, uint64_t>, insert and erase
//            keeping about K entries (nodes, and buckets as it rehashes)
//   shared   std::make_shared of 64-byte items, held by a vector of
//            shared_ptr, copied and dropped
// Every case checks a value at the end (a checksum printed as `check`), so
// the work cannot be optimised away, and the same seed gives the same
// checksum under every allocator.
//
// usage: bench_cxx [-n OPS] [-k LIVE] [-r SEED] [-c CASE]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <unordered_map>
#include <vector>

extern "C" {
#include "common.h"
}
#include <dlfcn.h>

namespace {

template <size_t N> struct Obj {
    unsigned char b[N];
    explicit Obj(unsigned char v) { std::memset(b, v, N); }
};

// One live object of any of the six types, deleted through its own type
// (so the compiler passes its size).
struct Slot {
    int kind = -1;
    void *p = nullptr;
};

void *make(int kind, unsigned char v) {
    switch (kind) {
    case 0: return new Obj<16>(v);
    case 1: return new Obj<24>(v);
    case 2: return new Obj<48>(v);
    case 3: return new Obj<64>(v);
    case 4: return new Obj<128>(v);
    default: return new Obj<256>(v);
    }
}

unsigned drop(int kind, void *p) {
    unsigned first = *static_cast<unsigned char *>(p);
    switch (kind) {
    case 0: delete static_cast<Obj<16> *>(p); break;
    case 1: delete static_cast<Obj<24> *>(p); break;
    case 2: delete static_cast<Obj<48> *>(p); break;
    case 3: delete static_cast<Obj<64> *>(p); break;
    case 4: delete static_cast<Obj<128> *>(p); break;
    default: delete static_cast<Obj<256> *>(p); break;
    }
    return first;
}

uint64_t case_objects(uint64_t ops, uint64_t k, uint64_t *rng) {
    std::vector<Slot> live(k);
    uint64_t sum = 0;
    for (uint64_t i = 0; i < ops; i++) {
        Slot &s = live[bench_rand(rng) % k];
        if (s.p)
            sum += drop(s.kind, s.p);
        s.kind = (int)(bench_rand(rng) % 6);
        s.p = make(s.kind, (unsigned char)i);
    }
    for (Slot &s : live)
        if (s.p)
            sum += drop(s.kind, s.p);
    return sum;
}

uint64_t case_map(uint64_t ops, uint64_t k, uint64_t *rng) {
    std::map<int, std::string> m;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < ops; i++) {
        int key = (int)(bench_rand(rng) % (2 * k));
        auto it = m.find(key);
        if (it != m.end()) {
            sum += it->second.size();
            m.erase(it);
        } else {
            m.emplace(key, std::string(16 + (size_t)(bench_rand(rng) % 48), 'x'));
        }
    }
    return sum + m.size();
}

struct Item {
    uint64_t v[6];
};

uint64_t case_list(uint64_t ops, uint64_t k, uint64_t *rng) {
    std::list<Item> l;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < ops; i++) {
        if (l.size() < k || bench_rand(rng) % 2) {
            l.push_back(Item{{i, i, i, i, i, i}});
        } else {
            sum += l.front().v[0] & 0xff;
            l.pop_front();
        }
    }
    return sum + l.size();
}

uint64_t case_hash(uint64_t ops, uint64_t k, uint64_t *rng) {
    std::unordered_map<uint64_t, uint64_t> h;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < ops; i++) {
        uint64_t key = bench_rand(rng) % (2 * k);
        auto it = h.find(key);
        if (it != h.end()) {
            sum += it->second & 0xff;
            h.erase(it);
        } else {
            h.emplace(key, i);
        }
        if (i % (8 * k) == 0)
            h.rehash(0); // let the table shrink now and then: buckets are allocations too
    }
    return sum + h.size();
}

uint64_t case_shared(uint64_t ops, uint64_t k, uint64_t *rng) {
    std::vector<std::shared_ptr<Item>> held(k);
    uint64_t sum = 0;
    for (uint64_t i = 0; i < ops; i++) {
        auto &a = held[bench_rand(rng) % k];
        auto &b = held[bench_rand(rng) % k];
        if (i % 3 == 0 && a) {
            b = a; // a copy: the count goes up, nothing allocated
        } else {
            if (a)
                sum += a->v[0] & 0xff;
            a = std::make_shared<Item>(Item{{i, 0, 0, 0, 0, 0}});
        }
    }
    return sum;
}

struct Case {
    const char *name;
    uint64_t (*run)(uint64_t, uint64_t, uint64_t *);
};
const Case cases[] = {{"objects", case_objects},
                      {"map", case_map},
                      {"list", case_list},
                      {"hash", case_hash},
                      {"shared", case_shared}};

void usage() { bench_die("usage: bench_cxx [-n OPS] [-k LIVE] [-r SEED] [-c CASE]"); }

} // namespace

int main(int argc, char **argv) {
    bench_init(argv[0]);
    // which object operator new resolves to (alloy exports the operators)
    Dl_info info;
    void *sym = dlsym(RTLD_DEFAULT, "_Znwm");
    std::printf("info new_from=%s\n",
                sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "unknown");
    uint64_t ops = 2000000, k = 10000, seed = 7;
    const char *only = nullptr;
    int c;
    while ((c = getopt(argc, argv, "n:k:r:c:h")) != -1) {
        switch (c) {
        case 'n': ops = bench_parse_u64(optarg, "-n ops", 1, 100000000000ull); break;
        case 'k': k = bench_parse_u64(optarg, "-k live", 1, 100000000); break;
        case 'r': seed = bench_parse_u64(optarg, "-r seed", 0, UINT64_MAX); break;
        case 'c': only = optarg; break;
        default: usage();
        }
    }
    if (optind != argc)
        usage();
    bool found = false;
    for (const Case &cs : cases) {
        if (only && std::strcmp(only, cs.name) != 0)
            continue;
        found = true;
        uint64_t rng = seed;
        bench_usage_t u0 = bench_usage();
        uint64_t c0 = bench_cpu_ns();
        uint64_t check = cs.run(ops, k, &rng);
        uint64_t c1 = bench_cpu_ns();
        double ns = (double)(c1 - c0);
        std::printf("res case=%s time_ms=%.2f ns_per_op=%.3f check=%llu peak_rss=%zu%s\n", cs.name,
                    ns / 1e6, ns / (double)ops, (unsigned long long)check, bench_rss_peak(),
                    bench_usage_fields(&u0));
    }
    if (!found)
        bench_die("-c %s: no such case (objects, map, list, hash, shared)", only);
    return 0;
}
