// SPDX-License-Identifier: MIT
// consumer_pmr.cpp - a C++ program built against an installed alloy through
// find_package(alloy) and the alloy::pmr target (tests/install): std::pmr
// containers on each adapter of <alloy/pmr.hpp>, and the bridge.  Usage:
// consumer_pmr [EXPECTED_VERSION]; prints "consumer_pmr ok VERSION" and exits
// 0, or names the failed check and exits 1.
#include <alloy/pmr.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <list>
#include <memory_resource>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

static_assert(__cplusplus >= 201703L, "alloy::pmr must bring C++17");

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            std::fprintf(stderr, "consumer_pmr: check failed: %s\n", #cond);                       \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

int main(int argc, char **argv) {
    const char *v = alloy_version();
    CHECK(std::strcmp(v, ALLOY_VERSION_STRING) == 0);
    if (argc > 1)
        CHECK(std::strcmp(v, argv[1]) == 0);

    // the seed's arena: a vector of 252 doubles in 4096 bytes of stack
    std::array<std::byte, 4096> scratch;
    {
        alloy::pmr::arena_resource arena(scratch.data(), scratch.size());
        std::pmr::vector<double> path(252, &arena);
        auto *p = reinterpret_cast<std::byte *>(path.data());
        CHECK(p >= scratch.data() && p + 252 * sizeof(double) <= scratch.data() + scratch.size());
        std::pmr::vector<double> more(10000, 1.0, &arena); // from upstream
        CHECK(more.back() == 1.0 && arena.reserved() > scratch.size());
    }
    // pools, any size, alignment honoured
    alloy::pmr::pool_resource pool;
    {
        std::pmr::unordered_map<std::pmr::string, int> m(&pool);
        for (int i = 0; i < 1000; i++)
            m[std::pmr::string("key number ", &pool) + std::to_string(i).c_str()] = i;
        CHECK(m.size() == 1000 && m.at("key number 999") == 999);
        void *big = pool.allocate(100000, 4096);
        CHECK((reinterpret_cast<std::uintptr_t>(big) & 4095) == 0);
        pool.deallocate(big, 100000, 4096);
    }
    alloy::pmr::synchronized_pool_resource sync;
    std::pmr::list<int> l({1, 2, 3}, &sync);
    CHECK(l.size() == 3 && l.back() == 3);
    // a C resource from C++, and a C++ resource under a C arena
    alloy::pmr::resource_ref mal(alloy_malloc_resource());
    std::pmr::vector<int> w(100, 7, &mal);
    CHECK(w[99] == 7 && mal.is_equal(alloy::pmr::resource_ref()));
    alloy::pmr::bridge br(&pool);
    alloy_arena_t a;
    alloy_arena_init(&a, nullptr, 0, br.get());
    CHECK(alloy_arena_alloc(&a, 5000, 64) != nullptr);
    alloy_arena_destroy(&a);
    // a failing upstream is std::bad_alloc
    alloy::pmr::resource_ref none(alloy_null_resource());
    bool threw = false;
    try {
        std::pmr::vector<int> x(10, &none);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw);

    if (failures)
        return 1;
    std::printf("consumer_pmr ok %s\n", v);
    return 0;
}
