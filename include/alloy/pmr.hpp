// SPDX-License-Identifier: MIT
// alloy/pmr.hpp - C++17 std::pmr memory resources over alloy's hot-path
// allocators (header-only), and the bridge the other way round.
//
//   alloy::pmr::arena_resource             over alloy_arena_t: monotonic, like
//                                          std::pmr::monotonic_buffer_resource
//   alloy::pmr::pool_resource              over alloy_pool_resource_t, like
//                                          std::pmr::unsynchronized_pool_resource
//   alloy::pmr::synchronized_pool_resource over alloy_sync_pool_resource_t
//   alloy::pmr::resource_ref               over any alloy_resource_t *
//   alloy::pmr::bridge                     the other way: an alloy_resource_t
//                                          whose ops call a std::pmr::memory_resource
//
// Every adapter derives from alloy::pmr::basic_resource, a
// std::pmr::memory_resource that is backed by one C resource
// (c_resource()), so the same memory can also be handed to C code
// (alloy_vec_t, a C arena's upstream, ...).
//
// The contract of every adapter's do_allocate(bytes, alignment):
//   - the block is aligned to `alignment`, any power of two;
//   - an alignment that is not a power of two throws std::bad_alloc;
//   - bytes 0 gives a unique pointer (it is served as 1 byte);
//   - when the memory cannot be had (the upstream throws or returns NULL,
//     an arithmetic overflow, a fixed capacity exhausted) it throws
//     std::bad_alloc and the resource is left as it was, still usable.
// do_is_equal(other) is true exactly when memory from one may be given back
// to the other: the same object, or two adapters whose C resources say so
// (alloy_resource_is_equal, asked both ways), or a resource_ref over a bridge
// over `other`.  Without RTTI, two distinct adapters are never equal.
//
// Upstreams: constructors take a std::pmr::memory_resource * (nullptr: the
// std::pmr::get_default_resource() of the moment, as the standard resources
// do).  The C allocator underneath calls it through an embedded bridge, and
// only when it needs a chunk: making a resource costs no RTTI look-up (an
// arena made per request pays for its construction on every request).  For
// a C upstream, pass a resource_ref over it.  The upstream must outlive the
// resource.
//
// Exceptions never cross into C: the bridge catches everything its upstream
// throws and returns NULL, which the C allocators handle as any failure.
//
// Thread safety: as the C resources.  arena_resource and pool_resource are
// for one thread at a time; synchronized_pool_resource for any number (its
// upstream must then be thread-safe too); resource_ref as its C resource;
// bridge as its upstream.
#ifndef ALLOY_PMR_HPP
#define ALLOY_PMR_HPP

#if __cplusplus < 201703L
#error "alloy/pmr.hpp needs C++17 (-std=c++17)"
#else

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <memory_resource>
#include <new>
#include <stdexcept>
#include <type_traits>

// The C headers are written in C: keep warnings that only C++ issues about
// C idioms (casts, NULL) out of C++ users' builds.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wold-style-cast"
#pragma GCC diagnostic ignored "-Wcast-align"
#pragma GCC diagnostic ignored "-Wzero-as-null-pointer-constant"
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuseless-cast"
#endif
#endif
#include <alloy/arena.h>
#include <alloy/pool.h>
#include <alloy/resource.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#if defined(__cpp_rtti) || defined(__GXX_RTTI) || defined(_CPPRTTI)
#define ALLOY_PMR_RTTI 1
#else
#define ALLOY_PMR_RTTI 0
#endif
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define ALLOY_PMR_EXCEPTIONS 1
#else
#define ALLOY_PMR_EXCEPTIONS 0
#endif

namespace alloy::pmr {

class basic_resource;

namespace detail {

[[noreturn]] inline void throw_bad_alloc() {
#if ALLOY_PMR_EXCEPTIONS
    throw std::bad_alloc();
#else
    std::abort();
#endif
}

// A pool resource's init result as an exception.
[[noreturn]] inline void throw_init_error(int err) {
#if ALLOY_PMR_EXCEPTIONS
    if (err == EINVAL)
        throw std::invalid_argument("alloy::pmr: invalid pool options");
    throw std::bad_alloc();
#else
    (void)err;
    std::abort();
#endif
}

inline std::pmr::memory_resource *or_default(std::pmr::memory_resource *r) noexcept {
    return r != nullptr ? r : std::pmr::get_default_resource();
}

inline bool c_equal(const alloy_resource_t *a, const alloy_resource_t *b) noexcept;
inline const basic_resource *as_alloy(const std::pmr::memory_resource *r) noexcept;

} // namespace detail

// ---- bridge: a C alloy_resource_t over a std::pmr::memory_resource ---------
//
//     alloy::pmr::bridge up(&some_std_resource);
//     alloy_arena_init(&arena, buf, sizeof buf, up.get());
//
// allocate(size, align) calls upstream->allocate(size, align) and returns
// NULL for an alignment that is not a power of two (without calling it) and
// whenever it throws; deallocate forwards the same size and alignment and
// swallows any exception.  Not copyable or movable: C holds its address.
class bridge {
  public:
    explicit bridge(std::pmr::memory_resource *upstream = nullptr) noexcept
        : base_{&ops_}, upstream_(detail::or_default(upstream)) {}
    bridge(const bridge &) = delete;
    bridge &operator=(const bridge &) = delete;
    ~bridge() = default;

    alloy_resource_t *get() noexcept { return &base_; }
    std::pmr::memory_resource *upstream() const noexcept { return upstream_; }

    // The bridge r is, or nullptr when r is another kind of C resource.
    static const bridge *from(const alloy_resource_t *r) noexcept {
        return r != nullptr && r->ops == &ops_ ? reinterpret_cast<const bridge *>(r) : nullptr;
    }

  private:
    static void *allocate_cb(alloy_resource_t *self, std::size_t size, std::size_t align) noexcept {
        if (align == 0 || (align & (align - 1)) != 0)
            return nullptr;
        std::pmr::memory_resource *up = reinterpret_cast<bridge *>(self)->upstream_;
#if ALLOY_PMR_EXCEPTIONS
        try {
            return up->allocate(size, align);
        } catch (...) {
            return nullptr;
        }
#else
        return up->allocate(size, align);
#endif
    }

    static void deallocate_cb(alloy_resource_t *self, void *p, std::size_t size,
                              std::size_t align) noexcept {
        if (p == nullptr)
            return;
        std::pmr::memory_resource *up = reinterpret_cast<bridge *>(self)->upstream_;
#if ALLOY_PMR_EXCEPTIONS
        try {
            up->deallocate(p, size, align);
        } catch (...) {
        }
#else
        up->deallocate(p, size, align);
#endif
    }

    static bool is_equal_cb(const alloy_resource_t *self, const alloy_resource_t *other) noexcept;

    static constexpr alloy_resource_ops_t ops_ = {&allocate_cb, &deallocate_cb, &is_equal_cb};

    alloy_resource_t base_; // first: &base_ is this bridge (standard layout)
    std::pmr::memory_resource *upstream_;
};

// ---- basic_resource: what every adapter shares ------------------------------
class basic_resource : public std::pmr::memory_resource {
  public:
    // The C resource behind this one: memory it hands out may be given back
    // through this object and the other way round.
    alloy_resource_t *c_resource() const noexcept { return c_; }

  protected:
    explicit basic_resource(alloy_resource_t *c) noexcept : c_(c) {}
    basic_resource(const basic_resource &) noexcept = default;
    basic_resource &operator=(const basic_resource &) noexcept = default;
    ~basic_resource() override = default;

    bool do_is_equal(const std::pmr::memory_resource &other) const noexcept override {
        if (this == &other)
            return true;
        if (const basic_resource *o = detail::as_alloy(&other))
            return detail::c_equal(c_, o->c_);
        // A C resource that is a bridge over `other` (resource_ref(bridge(x)) == x).
        if (const bridge *b = bridge::from(c_))
            return b->upstream()->is_equal(other);
        return false;
    }

    alloy_resource_t *c_;
};

namespace detail {

inline const basic_resource *as_alloy(const std::pmr::memory_resource *r) noexcept {
#if ALLOY_PMR_RTTI
    return dynamic_cast<const basic_resource *>(r);
#else
    (void)r;
    return nullptr;
#endif
}

// alloy_resource_is_equal asks only its first argument; ask both.
inline bool c_equal(const alloy_resource_t *a, const alloy_resource_t *b) noexcept {
    return a == b || a->ops->is_equal(a, b) || b->ops->is_equal(b, a);
}

} // namespace detail

inline bool bridge::is_equal_cb(const alloy_resource_t *self,
                                const alloy_resource_t *other) noexcept {
    std::pmr::memory_resource *up = reinterpret_cast<const bridge *>(self)->upstream_;
    if (const bridge *o = from(other))
        return up->is_equal(*o->upstream_);
    // bridge(resource_ref(c)) is as good as c.
    if (const basic_resource *a = detail::as_alloy(up))
        return detail::c_equal(a->c_resource(), other);
    return false;
}

// ---- resource_ref: any C resource as a std::pmr::memory_resource -----------
//
//     alloy_pool_resource_t c;  alloy_pool_resource_init(&c, NULL, NULL);
//     alloy::pmr::resource_ref r(alloy_pool_resource(&c));
//     std::pmr::vector<int> v(&r);
//
// A handle: copies are equal to each other and to every adapter over an
// equal C resource.  nullptr (the default) is alloy_default_resource() of
// the moment.  The C resource must outlive the handle and its memory.
class resource_ref : public basic_resource {
  public:
    explicit resource_ref(alloy_resource_t *r = nullptr) noexcept
        : basic_resource(r != nullptr ? r : alloy_default_resource()) {}
    resource_ref(const resource_ref &) noexcept = default;
    resource_ref &operator=(const resource_ref &) noexcept = default;
    ~resource_ref() override = default;

  protected:
    void *do_allocate(std::size_t bytes, std::size_t alignment) override {
        void *p = alloy_resource_allocate(c_, bytes, alignment);
        if (ALLOY_UNLIKELY(p == nullptr))
            detail::throw_bad_alloc();
        return p;
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t alignment) noexcept override {
        alloy_resource_deallocate(c_, p, bytes, alignment);
    }
};

// ---- arena_resource: alloy_arena_t, monotonic ---------------------------------
//
//     std::array<std::byte, 4096> scratch;
//     alloy::pmr::arena_resource arena(scratch.data(), scratch.size());
//     std::pmr::vector<double> path(252, &arena);
//
// The caller's buffer (any alignment) is used first, then chunks from
// upstream that grow geometrically (alloy/arena.h).  deallocate does
// nothing; release() gives every chunk back to upstream and starts over on
// the buffer, reset() starts over but keeps the chunks for reuse (a
// per-tick arena then makes no upstream call at all).  Neither may be
// called while a container still uses the memory.
class arena_resource : public basic_resource {
  public:
    arena_resource() noexcept : arena_resource(nullptr, 0, nullptr) {}
    explicit arena_resource(std::pmr::memory_resource *upstream) noexcept
        : arena_resource(nullptr, 0, upstream) {}
    arena_resource(void *buffer, std::size_t size) noexcept
        : arena_resource(buffer, size, nullptr) {}
    arena_resource(void *buffer, std::size_t size, std::pmr::memory_resource *upstream) noexcept
        : basic_resource(&mono_.base), upstream_(detail::or_default(upstream)), bridge_(upstream_) {
        alloy_monotonic_init(&mono_, buffer, size, bridge_.get());
    }
    arena_resource(const arena_resource &) = delete;
    arena_resource &operator=(const arena_resource &) = delete;
    ~arena_resource() override { alloy_monotonic_destroy(&mono_); }

    // Free everything; give the upstream chunks back (pmr's release()).
    void release() noexcept { alloy_monotonic_release(&mono_); }
    // Free everything; keep the chunks for reuse.
    void reset() noexcept { alloy_arena_reset(&mono_.arena); }
    std::pmr::memory_resource *upstream_resource() const noexcept { return upstream_; }
    // Bytes handed out since the last reset/release, padding included.
    std::size_t used() const noexcept { return alloy_arena_used(&mono_.arena); }
    // Bytes held: the caller's buffer plus the upstream chunks.
    std::size_t reserved() const noexcept { return alloy_arena_reserved(&mono_.arena); }
    alloy_arena_t *arena() noexcept { return &mono_.arena; }

  protected:
    void *do_allocate(std::size_t bytes, std::size_t alignment) override {
        void *p = alloy_arena_alloc(&mono_.arena, bytes, alignment); // inline bump
        if (ALLOY_UNLIKELY(p == nullptr))
            detail::throw_bad_alloc();
        return p;
    }
    void do_deallocate(void *, std::size_t, std::size_t) noexcept override {}

  private:
    std::pmr::memory_resource *upstream_;
    bridge bridge_;
    alloy_monotonic_t mono_;
};

namespace detail {

inline alloy_pool_options_t pool_options_of(const std::pmr::pool_options &o) noexcept {
    // largest_required_pool_block: 0 is alloy's default (4096), above 16384
    // it is 16384; larger blocks always go to upstream.  max_blocks_per_chunk
    // has no alloy counterpart: each class's chunks start at 16 KiB and
    // double.
    alloy_pool_options_t a{};
    a.largest_block = o.largest_required_pool_block;
    return a;
}

// What both pool resources share; C is the C resource type.
template <class C, int (*Init)(C *, const alloy_pool_options_t *, alloy_resource_t *),
          void (*Destroy)(C *)>
class pool_base : public basic_resource {
  public:
    pool_base(const pool_base &) = delete;
    pool_base &operator=(const pool_base &) = delete;

    // Give every block back to upstream (those the caller still holds too)
    // and start over.  If the fresh start fails it throws, and the resource
    // may then only be destroyed.
    void release() {
        Destroy(&pr_);
        int err = Init(&pr_, &opts_, bridge_.get());
        if (err != 0)
            throw_init_error(err);
    }
    std::pmr::memory_resource *upstream_resource() const noexcept { return upstream_; }
    // Blocks above this many bytes go straight to upstream.
    std::size_t largest_block() const noexcept { return pr_.largest_block; }
    std::pmr::pool_options options() const noexcept {
        std::pmr::pool_options o;
        o.max_blocks_per_chunk = 0;
        o.largest_required_pool_block = pr_.largest_block;
        return o;
    }

  protected:
    pool_base(const alloy_pool_options_t &opts, std::pmr::memory_resource *upstream)
        : basic_resource(&pr_.base), upstream_(or_default(upstream)), bridge_(upstream_),
          opts_(opts) {
        int err = Init(&pr_, &opts_, bridge_.get());
        if (err != 0)
            throw_init_error(err);
    }
    ~pool_base() override { Destroy(&pr_); }

    void *do_allocate(std::size_t bytes, std::size_t alignment) override {
        void *p = alloy_resource_allocate(&pr_.base, bytes, alignment);
        if (ALLOY_UNLIKELY(p == nullptr))
            throw_bad_alloc();
        return p;
    }
    void do_deallocate(void *p, std::size_t bytes, std::size_t alignment) noexcept override {
        alloy_resource_deallocate(&pr_.base, p, bytes, alignment);
    }

    std::pmr::memory_resource *upstream_;
    bridge bridge_;
    alloy_pool_options_t opts_;
    C pr_;
};

} // namespace detail

// ---- pool_resource: alloy_pool_resource_t, unsynchronized -----------------
//
// Blocks up to largest_block() (4096 by default, up to 16384) come from one
// pool per power-of-two class, aligned to their class; larger ones, and any
// alignment above largest_block(), go to upstream.  Every size is served.
// One thread at a time.
class pool_resource : public detail::pool_base<alloy_pool_resource_t, alloy_pool_resource_init,
                                               alloy_pool_resource_destroy> {
  public:
    pool_resource() : pool_resource(alloy_pool_options_t{}, nullptr) {}
    explicit pool_resource(std::pmr::memory_resource *upstream)
        : pool_resource(alloy_pool_options_t{}, upstream) {}
    explicit pool_resource(const std::pmr::pool_options &opts,
                           std::pmr::memory_resource *upstream = nullptr)
        : pool_resource(detail::pool_options_of(opts), upstream) {}
    // alloy's own options (chunk_bytes, the checked flavour's flags).
    pool_resource(const alloy_pool_options_t &opts, std::pmr::memory_resource *upstream)
        : pool_base(opts, upstream) {}
    ~pool_resource() override = default;
};
using unsynchronized_pool_resource = pool_resource;

// ---- synchronized_pool_resource: alloy_sync_pool_resource_t ------------------
//
// The same classes, each an alloy_sync_pool_t: a per-thread cache in front
// of a central pool, so the fast path takes no lock.  Any thread may use it;
// the upstream must be thread-safe.
class synchronized_pool_resource
    : public detail::pool_base<alloy_sync_pool_resource_t, alloy_sync_pool_resource_init,
                               alloy_sync_pool_resource_destroy> {
  public:
    synchronized_pool_resource() : synchronized_pool_resource(alloy_pool_options_t{}, nullptr) {}
    explicit synchronized_pool_resource(std::pmr::memory_resource *upstream)
        : synchronized_pool_resource(alloy_pool_options_t{}, upstream) {}
    explicit synchronized_pool_resource(const std::pmr::pool_options &opts,
                                        std::pmr::memory_resource *upstream = nullptr)
        : synchronized_pool_resource(detail::pool_options_of(opts), upstream) {}
    synchronized_pool_resource(const alloy_pool_options_t &opts,
                               std::pmr::memory_resource *upstream)
        : pool_base(opts, upstream) {}
    ~synchronized_pool_resource() override = default;
};

static_assert(std::is_standard_layout_v<bridge>, "bridge must start with its alloy_resource_t");

} // namespace alloy::pmr

#endif // C++17
#endif
