// SPDX-License-Identifier: MIT
// test_cxx_operators.cpp - C++'s global operators new and delete as
// liballoy exports them: all 20 come from liballoy, their blocks are
// alloy's, they keep the standard's promises (alignment, a unique block
// for new of 0, the new_handler called until it gives up, std::bad_alloc
// for an impossible size, nullptr from the nothrow forms even when the
// handler throws), and sized delete frees what it is given.
//
// usage: test_cxx_operators [all | wrong-size]
//   all:        everything above (linked with liballoy.so)
//   wrong-size: a sized delete that states more than the block holds (the
//               debug flavour, linked statically, must abort and say so)
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <list>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "alloy.h"

static int failures, checks;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(c)) {                                                                                \
            failures++;                                                                            \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c);             \
        }                                                                                          \
    } while (0)

static const char *const operators[] = {
    "_Znwm",
    "_Znam",
    "_ZnwmRKSt9nothrow_t",
    "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t",
    "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t",
    "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv",
    "_ZdaPv",
    "_ZdlPvm",
    "_ZdaPvm",
    "_ZdlPvRKSt9nothrow_t",
    "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_t",
    "_ZdaPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t",
    "_ZdaPvmSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t",
    "_ZdaPvSt11align_val_tRKSt9nothrow_t",
};

static void from_alloy() {
    for (const char *name : operators) {
        void *sym = dlsym(RTLD_DEFAULT, name);
        Dl_info info;
        bool ours =
            sym && dladdr(sym, &info) && info.dli_fname && std::strstr(info.dli_fname, "liballoy");
        if (!ours)
            std::fprintf(stderr, "%s comes from %s\n", name,
                         sym && dladdr(sym, &info) && info.dli_fname ? info.dli_fname : "nowhere");
        CHECK(ours);
    }
}

struct Small {
    char c[40];
};
struct alignas(64) Line {
    char c[100];
};
struct alignas(4096) Page {
    char c[5000];
};
struct alignas(1 << 20) Huge {
    char c[100];
};

template <class T> static bool aligned(const T *p) {
    return reinterpret_cast<uintptr_t>(p) % alignof(T) == 0;
}

static void plain_forms() {
    Small *s = new Small; // sized delete: g++ passes sizeof(Small)
    CHECK(alloy_malloc_usable_size(s) >= sizeof(Small));
    delete s;
    Small *arr = new Small[10];
    CHECK(alloy_malloc_usable_size(arr) >= 10 * sizeof(Small));
    delete[] arr;
    void *zero = ::operator new(0), *zero2 = ::operator new(0);
    CHECK(zero && zero2 && zero != zero2);
    ::operator delete(zero);
    ::operator delete(zero2, std::size_t(0));
    void *n = ::operator new(100, std::nothrow);
    CHECK(n && alloy_malloc_usable_size(n) >= 100);
    ::operator delete(n, std::nothrow);
    void *na = ::operator new[](100, std::nothrow);
    CHECK(na != nullptr);
    ::operator delete[](na, std::nothrow);
    // containers, through std::allocator's sized deallocation
    std::map<int, std::string> m;
    for (int i = 0; i < 10000; i++)
        m[i] = std::string(40, char('a' + i % 26));
    std::list<std::vector<int>> l(1000, std::vector<int>(50, 7));
    auto sp = std::make_shared<std::string>(100, 'x');
    CHECK(m.size() == 10000 && l.back()[49] == 7 && (*sp)[99] == 'x');
}

static void aligned_forms() {
    Line *a = new Line;
    Page *b = new Page;
    Huge *c = new Huge;
    Line *d = new Line[7];
    CHECK(aligned(a) && aligned(b) && aligned(c) && aligned(d));
    CHECK(alloy_malloc_usable_size(b) >= sizeof(Page));
    delete a; // sized and aligned
    delete b;
    delete c;
    delete[] d;
    auto al = std::align_val_t(256);
    void *p = ::operator new(1000, al, std::nothrow);
    CHECK(p && reinterpret_cast<uintptr_t>(p) % 256 == 0);
    ::operator delete(p, al, std::nothrow);
    p = ::operator new[](1000, al);
    CHECK(p && reinterpret_cast<uintptr_t>(p) % 256 == 0);
    ::operator delete[](p, std::size_t(1000), al);
}

static int handler_calls;
static void giving_up() {
    if (++handler_calls == 3)
        std::set_new_handler(nullptr);
}
static void throwing() { throw std::bad_alloc(); }

static void failures_forms() {
    volatile std::size_t huge = PTRDIFF_MAX; // more than can ever be mapped
    bool thrown = false;
    try {
        void *p = ::operator new(huge);
        ::operator delete(p);
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
    thrown = false;
    try {
        char *p = new char[huge];
        delete[] p;
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
    thrown = false;
    try {
        void *p = ::operator new(huge, std::align_val_t(64));
        ::operator delete(p, std::align_val_t(64));
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown);
    // the new_handler runs until it uninstalls itself, then bad_alloc
    handler_calls = 0;
    std::set_new_handler(giving_up);
    thrown = false;
    try {
        void *p = ::operator new(huge);
        ::operator delete(p);
    } catch (const std::bad_alloc &) {
        thrown = true;
    }
    CHECK(thrown && handler_calls == 3);
    // nothrow: nullptr, with no handler, with one that gives up, with one
    // that throws (the exception must not escape)
    CHECK(::operator new(huge, std::nothrow) == nullptr);
    CHECK(::operator new[](huge, std::align_val_t(128), std::nothrow) == nullptr);
    handler_calls = 0;
    std::set_new_handler(giving_up);
    CHECK(::operator new(huge, std::nothrow) == nullptr &&handler_calls == 3);
    std::set_new_handler(throwing);
    CHECK(::operator new(huge, std::nothrow) == nullptr);
    CHECK(::operator new(huge, std::align_val_t(64), std::nothrow) == nullptr);
    std::set_new_handler(nullptr);
}

int main(int argc, char **argv) {
    if (argc > 1 && !std::strcmp(argv[1], "wrong-size")) {
        void *p = ::operator new(100);
        ::operator delete(p, std::size_t(5000)); // more than the block: debug aborts
        std::fprintf(stderr, "sized delete with a wrong size was accepted\n");
        return 0;
    }
    from_alloy();
    plain_forms();
    aligned_forms();
    failures_forms();
    std::fprintf(stderr, "%d checks, %d failed\n", checks, failures);
    return failures || !checks;
}
