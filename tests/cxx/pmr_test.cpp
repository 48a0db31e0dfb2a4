// SPDX-License-Identifier: MIT
// pmr_test.cpp - alloy/pmr.hpp under ASan and UBSan: the std::pmr adapters
// (arena_resource, pool_resource, synchronized_pool_resource, resource_ref)
// and the bridge the other way.
//
//   - raw allocate/deallocate: every power-of-two alignment up to 64 KiB,
//     sizes 0 to 70000, size 0 unique, non-powers of two -> std::bad_alloc;
//   - every STL container that takes a polymorphic allocator (vector,
//     string, list, map, unordered_map, deque), with 4096-aligned elements
//     and nested pmr strings, on every adapter: all of their memory comes
//     from the adapter (checked by address) and is aligned;
//   - move and copy between the same, an equal and an unequal resource:
//     storage is stolen exactly when the resources are equal, copies follow
//     polymorphic_allocator's rules;
//   - upstream failure: a std upstream that throws (bad_alloc or anything
//     else) and a C upstream that returns NULL both give std::bad_alloc, the
//     container keeps what it had, and the resource stays usable;
//   - a request larger than the arena can ever grow: std::bad_alloc, the
//     arena unchanged and usable;
//   - is_equal in both directions, release() and reset(), pool options;
//   - the bridge: C allocators over a std::pmr upstream, and no exception
//     ever crossing into C;
//   - synchronized_pool_resource shared by four threads.
//
// Every check counts; the program exits 1 if any failed.
#include <alloy/pmr.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "check.h"

namespace apmr = alloy::pmr;

namespace {

bool aligned_to(const void *p, std::size_t a) {
    return (reinterpret_cast<std::uintptr_t>(p) & (a - 1)) == 0;
}

// ---- a std::pmr upstream that records every block ---------------------------
// It checks each deallocate against its allocate (size and alignment), knows
// which addresses it handed out (owns), and can be told to fail: after
// fail_after more successes, for requests above max_request, and with
// another exception than bad_alloc.
class ledger : public std::pmr::memory_resource {
  public:
    long allocs = 0, frees = 0, bad_frees = 0;
    long fail_after = -1;                           // < 0: never
    std::size_t max_request = std::size_t(1) << 30; // larger requests fail, as an OS would
    bool throw_other = false;                       // throw std::runtime_error instead of bad_alloc

    ~ledger() override {
        CHECK_EQ_U(blocks_.size(), 0); // everything given back
        CHECK_EQ_U(bad_frees, 0);
    }
    std::size_t live() const { return blocks_.size(); }
    bool owns(const void *p) const {
        auto u = reinterpret_cast<std::uintptr_t>(p);
        auto it = blocks_.upper_bound(u);
        if (it == blocks_.begin())
            return false;
        --it;
        return u < it->first + std::max<std::size_t>(it->second.size, 1);
    }

  protected:
    void *do_allocate(std::size_t bytes, std::size_t align) override {
        if (align == 0 || (align & (align - 1)) != 0) {
            bad_frees++; // a caller passed a bad alignment through: never expected
            throw std::bad_alloc();
        }
        if (fail_after == 0 || bytes > max_request) {
            if (throw_other)
                throw std::runtime_error("ledger: refused");
            throw std::bad_alloc();
        }
        if (fail_after > 0)
            fail_after--;
        void *p = ::operator new(bytes ? bytes : 1, std::align_val_t(align));
        blocks_[reinterpret_cast<std::uintptr_t>(p)] = {bytes, align};
        allocs++;
        return p;
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t align) override {
        auto it = blocks_.find(reinterpret_cast<std::uintptr_t>(p));
        if (it == blocks_.end() || it->second.size != bytes || it->second.align != align) {
            bad_frees++;
            return;
        }
        blocks_.erase(it);
        frees++;
        ::operator delete(p, std::align_val_t(align));
    }
    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override {
        return this == &other;
    }

  private:
    struct block {
        std::size_t size, align;
    };
    std::map<std::uintptr_t, block> blocks_;
};

// ---- a C resource that returns NULL after `left` successes ------------------
struct c_failing {
    alloy_resource_t base;
    long left; // < 0: never fails
    long live;
};
void *c_failing_allocate(alloy_resource_t *self, std::size_t size, std::size_t align) {
    auto *c = reinterpret_cast<c_failing *>(self);
    if (c->left == 0)
        return nullptr;
    void *p = alloy_resource_allocate(alloy_malloc_resource(), size, align);
    if (p != nullptr) {
        if (c->left > 0)
            c->left--;
        c->live++;
    }
    return p;
}
void c_failing_deallocate(alloy_resource_t *self, void *p, std::size_t size, std::size_t align) {
    auto *c = reinterpret_cast<c_failing *>(self);
    if (p != nullptr)
        c->live--;
    alloy_resource_deallocate(alloy_malloc_resource(), p, size, align);
}
bool c_failing_is_equal(const alloy_resource_t *self, const alloy_resource_t *other) {
    return self == other;
}
const alloy_resource_ops_t c_failing_ops = {c_failing_allocate, c_failing_deallocate,
                                            c_failing_is_equal};

// ---- fixtures: one adapter each, and which addresses are its memory ----------
struct scoped_default {
    std::pmr::memory_resource *prev;
    explicit scoped_default(std::pmr::memory_resource *r)
        : prev(std::pmr::set_default_resource(r)) {}
    void restore() {
        if (prev != nullptr)
            std::pmr::set_default_resource(prev);
        prev = nullptr;
    }
    ~scoped_default() { restore(); }
};

struct fixture {
    virtual ~fixture() = default;
    virtual const char *name() const = 0;
    virtual std::pmr::memory_resource &r() = 0;
    virtual bool owns(const void *p) const = 0;
    // A fresh fixture whose resource is not equal to this one.
    virtual std::unique_ptr<fixture> peer() const = 0;
    alloy_resource_t *c() { return static_cast<apmr::basic_resource &>(r()).c_resource(); }
};

// arena_resource over a caller buffer at an odd address, growing from a ledger
struct fx_arena : fixture {
    ledger up;
    std::vector<unsigned char> buf = std::vector<unsigned char>(16385);
    apmr::arena_resource a{buf.data() + 1, buf.size() - 1, &up};
    const char *name() const override { return "arena(buffer, upstream)"; }
    std::pmr::memory_resource &r() override { return a; }
    bool owns(const void *p) const override {
        auto *q = static_cast<const unsigned char *>(p);
        return (q >= buf.data() + 1 && q < buf.data() + buf.size()) || up.owns(p);
    }
    std::unique_ptr<fixture> peer() const override { return std::make_unique<fx_arena>(); }
};

// default-constructed arena_resource: its upstream is get_default_resource()
struct fx_arena_default : fixture {
    ledger up;
    scoped_default dflt{&up};
    apmr::arena_resource a;
    fx_arena_default() {
        CHECK(a.upstream_resource() == &up);
        dflt.restore();
    }
    const char *name() const override { return "arena()"; }
    std::pmr::memory_resource &r() override { return a; }
    bool owns(const void *p) const override { return up.owns(p); }
    std::unique_ptr<fixture> peer() const override { return std::make_unique<fx_arena_default>(); }
};

struct fx_pool : fixture {
    ledger up;
    apmr::pool_resource p{&up};
    const char *name() const override { return "pool_resource(upstream)"; }
    std::pmr::memory_resource &r() override { return p; }
    bool owns(const void *q) const override { return up.owns(q); }
    std::unique_ptr<fixture> peer() const override { return std::make_unique<fx_pool>(); }
};

struct fx_pool_default : fixture {
    ledger up;
    scoped_default dflt{&up};
    apmr::pool_resource p;
    fx_pool_default() {
        CHECK(p.upstream_resource() == &up);
        dflt.restore();
    }
    const char *name() const override { return "pool_resource()"; }
    std::pmr::memory_resource &r() override { return p; }
    bool owns(const void *q) const override { return up.owns(q); }
    std::unique_ptr<fixture> peer() const override { return std::make_unique<fx_pool_default>(); }
};

struct fx_sync : fixture {
    ledger up;
    apmr::synchronized_pool_resource s{&up};
    const char *name() const override { return "synchronized_pool_resource(upstream)"; }
    std::pmr::memory_resource &r() override { return s; }
    bool owns(const void *q) const override { return up.owns(q); }
    std::unique_ptr<fixture> peer() const override { return std::make_unique<fx_sync>(); }
};

struct fx_sync_default : fixture {
    ledger up;
    scoped_default dflt{&up};
    apmr::synchronized_pool_resource s;
    fx_sync_default() {
        CHECK(s.upstream_resource() == &up);
        dflt.restore();
    }
    const char *name() const override { return "synchronized_pool_resource()"; }
    std::pmr::memory_resource &r() override { return s; }
    bool owns(const void *q) const override { return up.owns(q); }
    std::unique_ptr<fixture> peer() const override { return std::make_unique<fx_sync_default>(); }
};

// resource_ref over a C chain: a C pool resource whose upstream is a bridge
// to a ledger
struct fx_ref_cpool : fixture {
    ledger up;
    apmr::bridge b{&up};
    alloy_pool_resource_t cp;
    apmr::resource_ref ref;
    fx_ref_cpool()
        : ref((alloy_pool_resource_init(&cp, nullptr, b.get()), alloy_pool_resource(&cp))) {}
    ~fx_ref_cpool() override { alloy_pool_resource_destroy(&cp); }
    const char *name() const override { return "resource_ref(C pool over bridge)"; }
    std::pmr::memory_resource &r() override { return ref; }
    bool owns(const void *q) const override { return up.owns(q); }
    std::unique_ptr<fixture> peer() const override { return std::make_unique<fx_ref_cpool>(); }
};

// resource_ref over a pure C chain: a fixed-capacity C monotonic resource
struct fx_ref_carena : fixture {
    std::vector<unsigned char> buf = std::vector<unsigned char>(std::size_t(8) << 20);
    alloy_monotonic_t m;
    apmr::resource_ref ref;
    fx_ref_carena()
        : ref((alloy_monotonic_init(&m, buf.data(), buf.size(), alloy_null_resource()),
               alloy_monotonic_resource(&m))) {}
    ~fx_ref_carena() override { alloy_monotonic_destroy(&m); }
    const char *name() const override { return "resource_ref(C monotonic, fixed)"; }
    std::pmr::memory_resource &r() override { return ref; }
    bool owns(const void *p) const override {
        auto *q = static_cast<const unsigned char *>(p);
        return q >= buf.data() && q < buf.data() + buf.size();
    }
    std::unique_ptr<fixture> peer() const override { return std::make_unique<fx_ref_carena>(); }
};

// resource_ref over alloy's malloc resource: its peer must be another kind,
// since every malloc resource is equal to every other
struct fx_ref_malloc : fixture {
    apmr::resource_ref ref{alloy_malloc_resource()};
    const char *name() const override { return "resource_ref(malloc)"; }
    std::pmr::memory_resource &r() override { return ref; }
    bool owns(const void *) const override { return true; } // cannot tell
    std::unique_ptr<fixture> peer() const override { return std::make_unique<fx_arena>(); }
};

using maker = std::unique_ptr<fixture> (*)();
template <class F> std::unique_ptr<fixture> make() { return std::make_unique<F>(); }
const maker all_fixtures[] = {make<fx_arena>,        make<fx_arena_default>, make<fx_pool>,
                              make<fx_pool_default>, make<fx_sync>,          make<fx_sync_default>,
                              make<fx_ref_cpool>,    make<fx_ref_carena>,    make<fx_ref_malloc>};

// ---- element types and what a container holds ---------------------------------
struct alignas(4096) page {
    int v;
    unsigned char fill[4096 - sizeof(int)];
    explicit page(int i = 0) : v(i) {
        std::memset(fill, static_cast<unsigned char>(i), sizeof fill);
    }
};

// A string too long for the small-string buffer, carrying its number.
std::string long_text(int i) {
    return "s" + std::to_string(i) + "-" + std::string(40, static_cast<char>('a' + i % 26));
}
int id_of(const page &p) { return p.v; }
int id_of(int i) { return i; }
int id_of(const std::pmr::string &s) { return std::atoi(s.c_str() + 1); }
template <class K, class V> int id_of(const std::pair<const K, V> &kv) { return id_of(kv.second); }

// Every address a value's memory occupies, with the alignment it needs.
using addrs = std::vector<std::pair<const void *, std::size_t>>;
void collect(const page &p, addrs &out) { out.push_back({&p, 4096}); }
void collect(const int &i, addrs &out) { out.push_back({&i, alignof(int)}); }
void collect(const std::pmr::string &s, addrs &out) {
    out.push_back({&s, alignof(std::pmr::string)});
    out.push_back({s.data(), 1}); // long: on the heap, i.e. the resource
}
template <class K, class V> void collect(const std::pair<const K, V> &kv, addrs &out) {
    collect(kv.first, out);
    collect(kv.second, out);
}

// kit<C>: fill a container with n values, check it holds exactly ids 0..n-1,
// and give the address of its first element (moves steal or do not).
template <class T> auto value_of(int i) {
    if constexpr (std::is_same_v<T, std::pmr::string>)
        return long_text(i); // a std::string: uses-allocator construction converts
    else if constexpr (std::is_same_v<T, page>)
        return page(i);
    else
        return i;
}

template <class C> struct kit {
    static void add(C &c, int i) { c.emplace_back(value_of<typename C::value_type>(i)); }
    static const void *first(const C &c) { return &*c.begin(); }
    static void addresses(const C &c, addrs &out) {
        for (const auto &e : c)
            collect(e, out);
    }
    static bool holds(const C &c, int n) {
        if (static_cast<int>(c.size()) != n)
            return false;
        std::set<int> ids;
        for (const auto &e : c)
            ids.insert(id_of(e));
        return static_cast<int>(ids.size()) == n &&
               (n == 0 || (*ids.begin() == 0 && *ids.rbegin() == n - 1));
    }
};
template <> struct kit<std::pmr::string> {
    using C = std::pmr::string;
    static void add(C &c, int i) { c.append(100, static_cast<char>('A' + i % 26)); }
    static const void *first(const C &c) { return c.data(); }
    static void addresses(const C &c, addrs &out) {
        if (!c.empty())
            out.push_back({c.data(), 1});
    }
    static bool holds(const C &c, int n) {
        if (static_cast<int>(c.size()) != 100 * n)
            return false;
        for (int i = 0; i < n; i++)
            if (c[static_cast<std::size_t>(100 * i + 99)] != static_cast<char>('A' + i % 26))
                return false;
        return true;
    }
};
template <class K, class V, class Kit> struct map_kit {
    template <class C> static void add(C &c, int i) { c.emplace(Kit::key(i), value_of<V>(i)); }
    template <class C> static const void *first(const C &c) { return &*c.begin(); }
    template <class C> static void addresses(const C &c, addrs &out) {
        for (const auto &e : c)
            collect(e, out);
    }
    template <class C> static bool holds(const C &c, int n) {
        return kit<std::pmr::vector<int>>::holds(as_ids(c), n);
    }
    template <class C> static std::pmr::vector<int> as_ids(const C &c) {
        std::pmr::vector<int> v(std::pmr::new_delete_resource());
        for (const auto &e : c)
            v.push_back(id_of(e));
        return v;
    }
};
struct int_key {
    static int key(int i) { return i; }
};
struct string_key {
    static std::string key(int i) { return long_text(i); }
};
template <class V> struct kit<std::pmr::map<int, V>> : map_kit<int, V, int_key> {};
template <class V>
struct kit<std::pmr::unordered_map<std::pmr::string, V>>
    : map_kit<std::pmr::string, V, string_key> {};

// Every byte of c's elements is memory of fixture f, aligned as needed.
template <class C> bool owned_by(const C &c, const fixture &f) {
    addrs out;
    kit<C>::addresses(c, out);
    for (auto &[p, align] : out)
        if (!f.owns(p) || !aligned_to(p, align))
            return false;
    return true;
}

// ---- 1. raw allocate / deallocate --------------------------------------------
void test_raw(fixture &f) {
    std::pmr::memory_resource &r = f.r();
    const std::size_t sizes[] = {0, 1, 8, 24, 100, 2016, 4096, 5000, 70000};
    for (std::size_t align = 1; align <= 65536; align *= 2)
        for (std::size_t size : sizes) {
            void *p = r.allocate(size, align);
            CHECK(p != nullptr && aligned_to(p, align) && f.owns(p));
            std::memset(p, 0x5a, size);
            r.deallocate(p, size, align);
        }
    // size 0: unique pointers, and neither is another live block
    void *z1 = r.allocate(0, 8), *z2 = r.allocate(0, 8), *one = r.allocate(1, 1);
    CHECK(z1 != nullptr && z2 != nullptr && z1 != z2 && one != z1 && one != z2);
    r.deallocate(one, 1, 1);
    r.deallocate(z2, 0, 8);
    r.deallocate(z1, 0, 8);
    // an alignment that is not a power of two: std::bad_alloc
    for (std::size_t bad : {std::size_t(0), std::size_t(3), std::size_t(6), std::size_t(24),
                            std::size_t(4097), SIZE_MAX}) {
        bool threw = false;
        try {
            static_cast<void>(r.allocate(8, bad));
            CHECK(!"allocate did not throw");
        } catch (const std::bad_alloc &) {
            threw = true;
        }
        CHECK(threw);
    }
    // an impossible size: std::bad_alloc, and the resource still works
    for (std::size_t huge : {SIZE_MAX, SIZE_MAX - 4096, SIZE_MAX / 2 + 1}) {
        bool threw = false;
        try {
            static_cast<void>(r.allocate(huge, 16));
            CHECK(!"allocate did not throw");
        } catch (const std::bad_alloc &) {
            threw = true;
        }
        CHECK(threw);
    }
    void *p = r.allocate(64, 64);
    CHECK(p != nullptr && aligned_to(p, 64));
    r.deallocate(p, 64, 64);
}

// ---- 2. containers: all memory from the resource, aligned ---------------------
template <class C> void test_container(fixture &f) {
    C c(&f.r());
    const int n = 40;
    for (int i = 0; i < n; i++)
        kit<C>::add(c, i);
    CHECK(kit<C>::holds(c, n));
    CHECK(owned_by(c, f));
    CHECK(c.get_allocator().resource() == &f.r());
    // erase half and refill: deallocate and reuse paths
    C d(&f.r());
    for (int i = 0; i < n; i++)
        kit<C>::add(d, i);
    d.clear();
    for (int i = 0; i < n / 2; i++)
        kit<C>::add(d, i);
    CHECK(kit<C>::holds(d, n / 2));
    CHECK(owned_by(d, f));
}

// ---- 3. move and copy between the same, an equal and an unequal resource ------
template <class C> void test_move_copy(fixture &fa) {
    const int n = 12;
    std::unique_ptr<fixture> fb_owner = fa.peer();
    fixture &fb = *fb_owner;
    std::pmr::memory_resource &a = fa.r(), &b = fb.r();
    apmr::resource_ref ae(fa.c()); // a distinct object, equal to a
    CHECK(a.is_equal(ae) && ae.is_equal(a));
    CHECK(!a.is_equal(b) && !b.is_equal(a));
    CHECK(std::pmr::polymorphic_allocator<int>(&a) == std::pmr::polymorphic_allocator<int>(&ae));
    CHECK(std::pmr::polymorphic_allocator<int>(&a) != std::pmr::polymorphic_allocator<int>(&b));

    C x(&a);
    for (int i = 0; i < n; i++)
        kit<C>::add(x, i);
    const void *p0 = kit<C>::first(x);

    // move construction keeps the resource and steals the storage
    C y(std::move(x));
    CHECK(y.get_allocator().resource() == &a && kit<C>::first(y) == p0 && kit<C>::holds(y, n));
    // ... with an equal resource: still stolen
    C z(std::move(y), typename C::allocator_type(&ae));
    CHECK(z.get_allocator().resource() == &ae && kit<C>::first(z) == p0 && kit<C>::holds(z, n));
    CHECK(owned_by(z, fa));
    // ... with an unequal resource: moved element by element into it
    C w(std::move(z), typename C::allocator_type(&b));
    CHECK(w.get_allocator().resource() == &b && kit<C>::first(w) != p0 && kit<C>::holds(w, n));
    CHECK(owned_by(w, fb));

    // move assignment, equal resources: stolen; the target keeps its resource
    C src(&a);
    for (int i = 0; i < n; i++)
        kit<C>::add(src, i);
    const void *p1 = kit<C>::first(src);
    C e(&ae);
    kit<C>::add(e, 0);
    e = std::move(src);
    CHECK(e.get_allocator().resource() == &ae && kit<C>::first(e) == p1 && kit<C>::holds(e, n));
    CHECK(owned_by(e, fa));
    // move assignment, unequal resources: the elements move into the target's
    C g(&b);
    kit<C>::add(g, 0);
    g = std::move(e);
    CHECK(g.get_allocator().resource() == &b && kit<C>::first(g) != p1 && kit<C>::holds(g, n));
    CHECK(owned_by(g, fb));

    // copy construction: polymorphic_allocator's select_on_container_copy_construction
    // gives the copy the default resource, not the source's
    {
        ledger dflt_up;
        scoped_default dflt(&dflt_up);
        C h(g);
        CHECK(h.get_allocator().resource() == &dflt_up && kit<C>::holds(h, n));
        CHECK(dflt_up.live() > 0);
    }
    // copy construction with a resource, and copy assignment keeping the target's
    C k(g, typename C::allocator_type(&a));
    CHECK(k.get_allocator().resource() == &a && kit<C>::holds(k, n) && owned_by(k, fa));
    C m(&ae);
    m = g;
    CHECK(m.get_allocator().resource() == &ae && kit<C>::holds(m, n) && owned_by(m, fa));
    CHECK(kit<C>::holds(g, n) && owned_by(g, fb)); // the source is untouched

    // swap between equal resources exchanges the storage
    C s(&a);
    kit<C>::add(s, 0);
    const void *ps = kit<C>::first(s), *pm = kit<C>::first(m);
    m.swap(s);
    CHECK(kit<C>::holds(m, 1) && kit<C>::holds(s, n) && kit<C>::first(m) == ps &&
          kit<C>::first(s) == pm);
}

// ---- 4. upstream failure through containers -----------------------------------
// The adapter over a ledger that gives `k` blocks and then refuses: inserting
// must throw std::bad_alloc at some point (immediately for k == 0), the
// container must keep exactly what was inserted before, and once the ledger
// gives memory again the same resource and container go on.
// Make a container on r and insert until the upstream refuses: it must throw
// std::bad_alloc (surely so when must_fail), keep exactly what was inserted
// before, and go on once heal() lets the upstream give memory again.
template <class C, class Heal>
void fill_until_failure(std::pmr::memory_resource &r, bool must_fail, Heal heal) {
    std::optional<C> c;
    int n = 0;
    bool threw = false;
    try {
        c.emplace(&r); // a deque allocates already here
        for (; n < 64; n++)
            kit<C>::add(*c, n);
    } catch (const std::bad_alloc &) {
        threw = true;
    } catch (...) {
        CHECK(!"an exception other than std::bad_alloc came out");
    }
    CHECK(threw || !must_fail);
    heal();
    if (!c)
        c.emplace(&r);
    CHECK(kit<C>::holds(*c, n));
    kit<C>::add(*c, n);
    CHECK(kit<C>::holds(*c, n + 1));
}

template <class R, class C> void test_container_oom(bool other_exception) {
    long at_init; // upstream blocks the resource takes when it is made
    {
        ledger up;
        R res(&up);
        at_init = up.allocs;
    }
    if (at_init > 0) {
        // the synchronized pool allocates at construction: failing there
        // throws std::bad_alloc out of the constructor and leaks nothing
        ledger up;
        up.throw_other = other_exception;
        up.fail_after = at_init - 1;
        bool threw = false;
        try {
            R res(&up);
        } catch (const std::bad_alloc &) {
            threw = true;
        }
        CHECK(threw && up.live() == 0);
    }
    for (long k = 0; k <= 6; k++) {
        ledger up;
        up.throw_other = other_exception;
        up.fail_after = at_init + k;
        auto res = std::make_unique<R>(&up);
        fill_until_failure<C>(*res, k == 0, [&] { up.fail_after = -1; });
    }
}

template <class C> void test_oom_all() {
    for (bool other : {false, true}) {
        test_container_oom<apmr::arena_resource, C>(other);
        test_container_oom<apmr::pool_resource, C>(other);
        test_container_oom<apmr::synchronized_pool_resource, C>(other);
    }
    // a C upstream that returns NULL, through resource_ref
    for (long k = 0; k <= 4; k++) {
        c_failing cf{{&c_failing_ops}, k, 0};
        {
            alloy_pool_resource_t cp;
            CHECK(alloy_pool_resource_init(&cp, nullptr, &cf.base) == 0);
            apmr::resource_ref ref(alloy_pool_resource(&cp));
            fill_until_failure<C>(ref, k == 0, [&] { cf.left = -1; });
            alloy_pool_resource_destroy(&cp);
        }
        CHECK_EQ_U(cf.live, 0);
    }
}
// ---- 5. the arena's bad input and upkeep ----------------------------------------
void test_arena_limits() {
    // larger than the arena can ever grow: the upstream refuses it
    ledger up;
    up.max_request = std::size_t(1) << 20;
    alignas(16) unsigned char buf[512];
    {
        apmr::arena_resource a(buf, sizeof buf, &up);
        void *p = a.allocate(100, 8);
        CHECK(p == buf);
        std::size_t used = a.used(), reserved = a.reserved();
        for (std::size_t big :
             {std::size_t(64) << 20, std::size_t(1) << 40, SIZE_MAX / 2, SIZE_MAX}) {
            bool threw = false;
            try {
                static_cast<void>(a.allocate(big, 8));
                CHECK(!"allocate did not throw");
            } catch (const std::bad_alloc &) {
                threw = true;
            }
            CHECK(threw);
            CHECK(a.used() == used && a.reserved() == reserved);
        }
        void *q = a.allocate(100, 4); // still usable, still in the buffer
        CHECK(q == static_cast<unsigned char *>(p) + 100);
        void *r = a.allocate(4096, 4096); // from upstream
        CHECK(up.owns(r) && aligned_to(r, 4096) && up.live() == 1);

        // reset keeps the chunk; release gives it back
        a.reset();
        CHECK(a.used() == 0 && up.live() == 1);
        CHECK(a.allocate(8, 8) == buf);
        void *r2 = a.allocate(4096, 4096);
        CHECK(up.owns(r2) && up.allocs == 1); // the kept chunk, no new upstream call
        a.release();
        CHECK(a.used() == 0 && up.live() == 0 && a.reserved() == sizeof buf);
        CHECK(a.allocate(8, 8) == buf);
        // deallocate does nothing
        void *d = a.allocate(16, 16);
        a.deallocate(d, 16, 16);
        CHECK(a.allocate(16, 16) != d);
    }
    CHECK(up.live() == 0);

    // fixed capacity: a C null upstream through resource_ref, or std's null resource
    apmr::resource_ref cnull(alloy_null_resource());
    for (std::pmr::memory_resource *fixed :
         {static_cast<std::pmr::memory_resource *>(&cnull), std::pmr::null_memory_resource()}) {
        apmr::arena_resource a(buf, sizeof buf, fixed);
        std::pmr::vector<int> v(&a);
        bool threw = false;
        try {
            v.resize(1000);
        } catch (const std::bad_alloc &) {
            threw = true;
        }
        CHECK(threw && v.empty());
        v.resize(10); // fits in the buffer
        CHECK(v.size() == 10 && static_cast<void *>(v.data()) >= buf &&
              static_cast<void *>(v.data()) < buf + sizeof buf);
    }

    // the upstream is called through the embedded bridge
    apmr::resource_ref mal(alloy_malloc_resource());
    apmr::arena_resource via(&mal);
    CHECK(apmr::bridge::from(via.arena()->upstream) != nullptr);
    CHECK(apmr::bridge::from(via.arena()->upstream)->upstream() == &mal);
    CHECK(via.upstream_resource() == &mal);
    void *big = via.allocate(100000, 64);
    CHECK(aligned_to(big, 64));
    apmr::arena_resource viab(std::pmr::new_delete_resource());
    CHECK(apmr::bridge::from(viab.arena()->upstream) != nullptr);
    CHECK(apmr::bridge::from(viab.arena()->upstream)->upstream() ==
          std::pmr::new_delete_resource());
    void *p = viab.allocate(100000, 64);
    CHECK(aligned_to(p, 64));
}

// ---- 6. pools: options, large blocks, release --------------------------------------
template <class P> void test_pool_upkeep() {
    {
        ledger up;
        P p(&up);
        CHECK(p.largest_block() == 4096 && p.options().largest_required_pool_block == 4096);
        std::size_t base = up.live(); // what init took (the sync pool's state)
        void *small = p.allocate(24, 8);
        std::size_t after_small = up.live();
        CHECK(after_small == base + 1); // one chunk for the 32-byte class
        long allocs = up.allocs;
        void *big = p.allocate(8192, 8); // above largest_block: its own upstream block
        CHECK(up.allocs == allocs + 1 && up.owns(big));
        p.deallocate(big, 8192, 8);
        CHECK(up.live() == after_small);
        void *huge_align = p.allocate(10, 8192); // alignment above largest_block: upstream too
        CHECK(aligned_to(huge_align, 8192) && up.owns(huge_align));
        // memory the caller still holds goes back on release
        p.release();
        CHECK(up.live() == base);
        (void)small;
        void *again = p.allocate(24, 8);
        CHECK(again != nullptr && up.owns(again));
        p.deallocate(again, 24, 8);
    }
    {
        ledger up;
        P p(std::pmr::pool_options{0, 16384}, &up);
        CHECK(p.largest_block() == 16384);
        long allocs = up.allocs;
        void *a = p.allocate(8192, 8), *b = p.allocate(8192, 8);
        CHECK(up.owns(a) && up.owns(b) && aligned_to(a, 8192) && aligned_to(b, 8192));
        if constexpr (std::is_same_v<P, apmr::pool_resource>)
            CHECK(up.allocs == allocs + 1); // both from one pooled chunk of two slots
        p.deallocate(a, 8192, 8);
        p.deallocate(b, 8192, 8);
    }
    {
        P p(std::pmr::pool_options{0, std::size_t(1) << 30});
        CHECK(p.largest_block() == ALLOY_POOL_RESOURCE_MAX_BLOCK);
        CHECK(p.upstream_resource() == std::pmr::get_default_resource());
    }
    {
        // options the C pool cannot take: std::invalid_argument, nothing leaked
        ledger up;
        alloy_pool_options_t o{};
        o.chunk_bytes = SIZE_MAX;
        bool threw = false;
        try {
            P p(o, &up);
        } catch (const std::invalid_argument &) {
            threw = true;
        }
        CHECK(threw && up.live() == 0);
    }
    {
        // alloy's own options are taken as they are
        alloy_pool_options_t o{};
        o.flags = ALLOY_POOL_CHECKED;
        P p(o, std::pmr::new_delete_resource());
        void *x = p.allocate(16, 16);
        p.deallocate(x, 16, 16);
        CHECK(p.allocate(16, 16) == x); // LIFO reuse
        p.deallocate(x, 16, 16);
    }
}

// ---- 7. is_equal, both directions ---------------------------------------------------
void test_equality() {
    apmr::arena_resource a1, a2;
    apmr::pool_resource p1, p2;
    apmr::synchronized_pool_resource s1, s2;
    std::pmr::memory_resource *mine[] = {&a1, &a2, &p1, &p2, &s1, &s2};
    for (auto *x : mine)
        for (auto *y : mine)
            CHECK(x->is_equal(*y) == (x == y));
    for (auto *x : mine) {
        apmr::resource_ref same(static_cast<apmr::basic_resource *>(x)->c_resource());
        CHECK(x->is_equal(same) && same.is_equal(*x));
        CHECK(!x->is_equal(*std::pmr::new_delete_resource()) &&
              !std::pmr::new_delete_resource()->is_equal(*x));
    }
    apmr::resource_ref m1(alloy_malloc_resource()), m2(alloy_malloc_resource()),
        n(alloy_null_resource());
    apmr::resource_ref dflt; // alloy_default_resource(): malloc
    CHECK(dflt.c_resource() == alloy_malloc_resource());
    CHECK(m1.is_equal(m2) && m2.is_equal(m1) && m1.is_equal(dflt));
    CHECK(!m1.is_equal(n) && !n.is_equal(m1) && !m1.is_equal(a1));
    apmr::resource_ref m3 = m1; // copies are equal handles
    CHECK(m3.is_equal(m1) && m3.c_resource() == m1.c_resource());

    // through the bridge: resource_ref(bridge(x)) is x
    ledger l1, l2;
    apmr::bridge b1(&l1), b1b(&l1), b2(&l2);
    apmr::resource_ref rb1(b1.get()), rb1b(b1b.get()), rb2(b2.get());
    CHECK(rb1.is_equal(l1) && !rb1.is_equal(l2) && rb1.is_equal(rb1b) && !rb1.is_equal(rb2));
    CHECK(alloy_resource_is_equal(b1.get(), b1b.get()) &&
          !alloy_resource_is_equal(b1.get(), b2.get()));
    // bridge(resource_ref(c)) is c
    apmr::bridge bm(&m1);
    CHECK(alloy_resource_is_equal(bm.get(), alloy_malloc_resource()));
    CHECK(!alloy_resource_is_equal(bm.get(), alloy_null_resource()));
    apmr::resource_ref rbm(bm.get());
    CHECK(rbm.is_equal(m1) && m1.is_equal(rbm));
    // memory from an equal resource really may be freed through the other
    void *p = m1.allocate(100, 32);
    rbm.deallocate(p, 100, 32);
    void *q = rb1.allocate(100, 32);
    l1.deallocate(q, 100, 32);
    CHECK(l1.live() == 0 && l1.bad_frees == 0);
    // a bridge's default upstream is get_default_resource()
    apmr::bridge bd;
    CHECK(bd.upstream() == std::pmr::get_default_resource());
}

// ---- 8. the bridge: C allocators over a std upstream, no exception into C ---------
void test_bridge() {
    ledger up;
    apmr::bridge br(&up);
    alloy_resource_t *c = br.get();
    {
        // a C arena whose chunks come from the ledger
        unsigned char buf[256];
        alloy_arena_t a;
        alloy_arena_init(&a, buf, sizeof buf, c);
        void *p = alloy_arena_alloc(&a, 200, 8);
        CHECK(p == buf && up.allocs == 0);
        void *q = alloy_arena_alloc(&a, 10000, 4096);
        CHECK(q != nullptr && aligned_to(q, 4096) && up.owns(q) && up.live() == 1);
        // the upstream throws: NULL, nothing thrown, the arena unchanged
        up.fail_after = 0;
        std::size_t used = alloy_arena_used(&a);
        for (bool other : {false, true}) {
            up.throw_other = other;
            try {
                CHECK(alloy_arena_alloc(&a, 1 << 20, 16) == nullptr);
            } catch (...) {
                CHECK(!"an exception crossed into C");
            }
            CHECK(alloy_arena_used(&a) == used);
        }
        up.fail_after = -1;
        up.throw_other = false;
        CHECK(alloy_arena_alloc(&a, 1 << 20, 16) != nullptr);
        alloy_arena_destroy(&a);
        CHECK(up.live() == 0 && up.bad_frees == 0);
    }
    // the C contract: non-powers of two refused before the upstream is asked,
    // size 0 served, deallocate(NULL) a no-op, sizes passed through exactly
    long allocs = up.allocs;
    CHECK(alloy_resource_allocate(c, 8, 3) == nullptr &&
          alloy_resource_allocate(c, 8, 0) == nullptr);
    CHECK(up.allocs == allocs && up.bad_frees == 0);
    void *z = alloy_resource_allocate(c, 0, 8);
    CHECK(z != nullptr && up.owns(z));
    alloy_resource_deallocate(c, z, 0, 8);
    alloy_resource_deallocate(c, nullptr, 8, 8);
    CHECK(up.live() == 0 && up.bad_frees == 0);
    // a C pool and a C pool resource over it
    {
        alloy_pool_config_t cfg{};
        cfg.slot_size = 48;
        cfg.upstream = c;
        alloy_pool_t pool;
        CHECK(alloy_pool_init(&pool, &cfg) == 0);
        void *s = alloy_pool_alloc(&pool);
        CHECK(s != nullptr && up.owns(s));
        alloy_pool_free(&pool, s);
        alloy_pool_destroy(&pool);
        alloy_sync_pool_resource_t sp;
        CHECK(alloy_sync_pool_resource_init(&sp, nullptr, c) == 0);
        void *t = alloy_resource_allocate(&sp.base, 5000, 64);
        CHECK(t != nullptr && aligned_to(t, 64) && up.owns(t));
        alloy_resource_deallocate(&sp.base, t, 5000, 64);
        alloy_sync_pool_resource_destroy(&sp);
        // init itself fails cleanly when the upstream throws
        up.fail_after = 0;
        CHECK(alloy_sync_pool_resource_init(&sp, nullptr, c) == ENOMEM);
        up.fail_after = -1;
    }
    CHECK(up.live() == 0 && up.bad_frees == 0);
    // an upstream that throws at construction of a C++ pool: bad_alloc out of it
    up.fail_after = 0;
    bool threw = false;
    try {
        apmr::synchronized_pool_resource sp(&up);
    } catch (const std::bad_alloc &) {
        threw = true;
    }
    CHECK(threw && up.live() == 0);
    up.fail_after = -1;
}

// ---- 9. the synchronized pool across threads ------------------------------------------
void test_threads() {
    apmr::synchronized_pool_resource sp(std::pmr::new_delete_resource());
    std::mutex mu;
    std::vector<std::pmr::list<std::pmr::string>> handoff; // built by one thread, freed by another
    int failures = 0;
    auto worker = [&](int t) {
        for (int round = 0; round < 50; round++) {
            std::pmr::vector<std::pmr::string> v(&sp);
            std::pmr::unordered_map<std::pmr::string, int> m(&sp);
            for (int i = 0; i < 200; i++) {
                v.emplace_back(long_text(t * 1000 + i));
                m[v.back()] = i;
            }
            for (int i = 0; i < 200; i++)
                if (m.at(v[static_cast<std::size_t>(i)]) != i)
                    failures++;
            std::pmr::list<std::pmr::string> l(&sp);
            for (int i = 0; i < 20; i++)
                l.emplace_back(long_text(i));
            std::lock_guard<std::mutex> g(mu);
            handoff.push_back(std::move(l));
            if (handoff.size() > 8)
                handoff.erase(handoff.begin()); // freed by whichever thread is here
        }
    };
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; t++)
        ts.emplace_back(worker, t);
    for (auto &t : ts)
        t.join();
    CHECK(failures == 0);
    for (auto &l : handoff) {
        int i = 0;
        for (auto &s : l)
            failures += s != long_text(i++).c_str();
    }
    CHECK(failures == 0 && handoff.size() == 8);
    handoff.clear();
}

template <class C> void for_each_fixture() {
    for (maker mk : all_fixtures) {
        std::unique_ptr<fixture> f = mk();
        int before = check_failures;
        test_container<C>(*f);
        test_move_copy<C>(*f);
        if (check_failures != before)
            std::fprintf(stderr, "  ... with %s\n", f->name());
    }
}

} // namespace

int main() {
    for (maker mk : all_fixtures) {
        std::unique_ptr<fixture> f = mk();
        int before = check_failures;
        test_raw(*f);
        if (check_failures != before)
            std::fprintf(stderr, "  ... raw, with %s\n", f->name());
    }

    for_each_fixture<std::pmr::vector<page>>();
    for_each_fixture<std::pmr::vector<std::pmr::string>>();
    for_each_fixture<std::pmr::vector<int>>();
    for_each_fixture<std::pmr::string>();
    for_each_fixture<std::pmr::list<page>>();
    for_each_fixture<std::pmr::list<std::pmr::string>>();
    for_each_fixture<std::pmr::map<int, page>>();
    for_each_fixture<std::pmr::map<int, std::pmr::string>>();
    for_each_fixture<std::pmr::unordered_map<std::pmr::string, page>>();
    for_each_fixture<std::pmr::unordered_map<std::pmr::string, int>>();
    for_each_fixture<std::pmr::deque<page>>();
    for_each_fixture<std::pmr::deque<std::pmr::string>>();

    test_oom_all<std::pmr::vector<page>>();
    test_oom_all<std::pmr::string>();
    test_oom_all<std::pmr::list<page>>();
    test_oom_all<std::pmr::map<int, page>>();
    test_oom_all<std::pmr::unordered_map<std::pmr::string, page>>();
    test_oom_all<std::pmr::deque<page>>();

    test_arena_limits();
    test_pool_upkeep<apmr::pool_resource>();
    test_pool_upkeep<apmr::synchronized_pool_resource>();
    test_equality();
    test_bridge();
    test_threads();
    return CHECK_DONE();
}
