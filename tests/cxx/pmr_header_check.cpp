// SPDX-License-Identifier: MIT
// pmr_header_check.cpp - alloy/pmr.hpp on its own: it must be the first and
// only alloy include, compile without warnings under strict flags with g++
// and clang++ (check_header.cmake), and every class must instantiate.
// Compiled, never run: the behaviour is pmr_test.cpp's.
#include <alloy/pmr.hpp>
#include <alloy/pmr.hpp> // include guard

#include <array>
#include <cstddef>
#include <deque>
#include <list>
#include <map>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace apmr = alloy::pmr;

static_assert(std::is_base_of_v<std::pmr::memory_resource, apmr::arena_resource>);
static_assert(std::is_base_of_v<std::pmr::memory_resource, apmr::pool_resource>);
static_assert(std::is_base_of_v<std::pmr::memory_resource, apmr::synchronized_pool_resource>);
static_assert(std::is_base_of_v<std::pmr::memory_resource, apmr::resource_ref>);
static_assert(std::is_base_of_v<apmr::basic_resource, apmr::arena_resource>);
static_assert(std::is_same_v<apmr::unsynchronized_pool_resource, apmr::pool_resource>);
static_assert(std::is_default_constructible_v<apmr::arena_resource>);
static_assert(std::is_default_constructible_v<apmr::pool_resource>);
static_assert(std::is_default_constructible_v<apmr::synchronized_pool_resource>);
static_assert(std::is_nothrow_default_constructible_v<apmr::arena_resource>);
static_assert(std::is_constructible_v<apmr::arena_resource, void *, std::size_t>);
static_assert(std::is_constructible_v<apmr::arena_resource, void *, std::size_t,
                                      std::pmr::memory_resource *>);
static_assert(!std::is_copy_constructible_v<apmr::arena_resource>);
static_assert(!std::is_copy_constructible_v<apmr::pool_resource>);
static_assert(!std::is_copy_constructible_v<apmr::synchronized_pool_resource>);
static_assert(!std::is_copy_constructible_v<apmr::bridge>);
static_assert(std::is_copy_constructible_v<apmr::resource_ref>);
static_assert(!std::is_convertible_v<alloy_resource_t *, apmr::resource_ref>); // explicit
static_assert(std::is_standard_layout_v<apmr::bridge>);

int use_everything(std::pmr::memory_resource *up);
int use_everything(std::pmr::memory_resource *up) {
    std::array<std::byte, 4096> scratch;
    apmr::arena_resource arena(scratch.data(), scratch.size(), up);
    apmr::pool_resource pool(std::pmr::pool_options{0, 16384}, up);
    apmr::synchronized_pool_resource sync(up);
    apmr::resource_ref ref(alloy_malloc_resource());
    apmr::bridge br(&arena);
    alloy_arena_t c;
    alloy_arena_init(&c, nullptr, 0, br.get());

    std::pmr::vector<double> v(252, &arena);
    std::pmr::string s("a string longer than the small buffer", &pool);
    std::pmr::list<int> l({1, 2, 3}, &sync);
    std::pmr::map<int, std::pmr::string> m(&ref);
    m[1] = s;
    std::pmr::unordered_map<std::pmr::string, int> u(&pool);
    u[s] = 2;
    std::pmr::deque<int> d({4, 5}, &arena);
    int sum = static_cast<int>(v.size() + s.size() + l.size() + m.size() + u.size() + d.size());
    sum += static_cast<int>(arena.used() + arena.reserved() + pool.largest_block());
    sum += arena.is_equal(pool) ? 1 : 0;
    sum += alloy_arena_alloc(&c, 8, 8) != nullptr ? 1 : 0;
    arena.reset();
    pool.release();
    alloy_arena_destroy(&c);
    return sum;
}
