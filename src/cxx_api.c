/* SPDX-License-Identifier: MIT */
/* cxx_api.c - C++'s replaceable global operators new and delete (new,
 * new[], delete, delete[], with their nothrow, sized and aligned forms: 20
 * functions), defined in C under their mangled names, so that C++ programs
 * reach alloy's fast paths directly instead of through libstdc++'s wrappers
 * around malloc (which also drop the size a sized delete knows).
 *
 * alloy stays C and needs only libc: nothing here links against libstdc++.
 * A failed new follows the standard: it calls the installed new_handler
 * (std::get_new_handler) and tries again, and throws std::bad_alloc
 * (std::__throw_bad_alloc) when there is none.  Both are libstdc++'s, found
 * at run time: weak references, bound when libstdc++ is in the process at
 * start-up (every C++ program), else looked up with dlsym (a C++ library
 * loaded later).  A nothrow new whose handler is set hands over to
 * libstdc++'s own nothrow new (dlsym RTLD_NEXT), which calls this file's
 * new inside a try block and returns NULL if the handler throws: C cannot
 * catch.  An exception crosses only this file's frames, which have unwind
 * tables (-fexceptions, CMakeLists.txt).  With no C++ runtime at all, a
 * failed throwing new aborts with a message.
 *
 * Sized delete frees as plain delete does: the size is not used (release
 * flavour) or checked against the block (debug flavour).  Taking the bin
 * from the size instead of the pagemap saves 6 of a new+delete pair's 60
 * instructions, but no time that can be told from the noise, and it would
 * trust the size: a pointer alloy never handed out, or a block of another
 * class (a heap-profile or guard_sample sample, a delete through the wrong
 * type), would go onto a list and come back from the next new, where the
 * pagemap sends it to free's checks (docs/BENCHMARKS.md, "C++: sized
 * delete").
 *
 * Like override.c, this file defines libc-level names: the sanitizer
 * flavours leave it out (their runtimes own the operators).
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>

#include "aligned.h"
#include "alloc.h"
#include "alloy.h"
#include "error.h"
#include "free.h"

#define CXX_API __attribute__((visibility("default"), used))

typedef void (*cxx_handler_t)(void);

/* libstdc++'s, when it is loaded (no link-time dependency: weak). */
extern cxx_handler_t _ZSt15get_new_handlerv(void) __attribute__((weak));
extern void _ZSt17__throw_bad_allocv(void) __attribute__((weak, noreturn));

/* A symbol of the C++ runtime: the weak reference, else dlsym(where,
 * name), remembered in *cache. */
static void *cxx_symbol(void *weak, void **cache, void *where, const char *name) {
    if (weak)
        return weak;
    void *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
    if (!f) {
        f = dlsym(where, name);
        __atomic_store_n(cache, f, __ATOMIC_RELEASE);
    }
    return f;
}

static cxx_handler_t cxx_handler(void) {
    static void *cache;
    cxx_handler_t (*get)(void) = (cxx_handler_t(*)(void))cxx_symbol(
        (void *)_ZSt15get_new_handlerv, &cache, RTLD_DEFAULT, "_ZSt15get_new_handlerv");
    return get ? get() : NULL;
}

AY_COLD __attribute__((noreturn)) static void cxx_throw_bad_alloc(void) {
    static void *cache;
    void (*thrower)(void) = (void (*)(void))cxx_symbol((void *)_ZSt17__throw_bad_allocv, &cache,
                                                       RTLD_DEFAULT, "_ZSt17__throw_bad_allocv");
    if (thrower)
        thrower();
    ay_fatal("operator new: out of memory, and no C++ runtime in the process to throw "
             "std::bad_alloc",
             NULL);
}

/* One attempt: align 0 for plain new. */
static void *cxx_try(size_t size, size_t align) {
    if (!align)
        return ay_malloc_fast(size);
    return ay_is_pow2(align) ? ay_alloc_aligned(NULL, size, align) : NULL;
}

/* new failed: call the new_handler and try again while there is one, then
 * throw std::bad_alloc. */
AY_COLD static void *cxx_new_failed(size_t size, size_t align) {
    for (;;) {
        cxx_handler_t handler = cxx_handler();
        if (!handler)
            cxx_throw_bad_alloc();
        handler();
        void *p = cxx_try(size, align);
        if (p)
            return p;
    }
}

/* A nothrow new failed: NULL without a new_handler; with one, libstdc++'s
 * nothrow new (it calls the throwing new, here, and catches). */
AY_COLD static void *cxx_nothrow_failed(size_t size, size_t align, const void *nt,
                                        const char *name) {
    static void *cache[2];
    if (!cxx_handler())
        return NULL;
    void *f = cxx_symbol(NULL, &cache[align != 0], RTLD_NEXT, name);
    if (!f) /* no libstdc++ after alloy: the handler's exception would escape */
        return cxx_new_failed(size, align);
    if (align)
        return ((void *(*)(size_t, size_t, const void *))f)(size, align, nt);
    return ((void *(*)(size_t, const void *))f)(size, nt);
}

/* free, as override.c's free does it. */
AY_INLINE void cxx_free(void *p) {
    if (ay_secure)
        return ay_free_fast_secure(p);
    if (ay_debug >= 3)
        return ay_free_slow(p);
    ay_free_fast(p);
}

AY_INLINE void cxx_free_sized(void *p, size_t size) {
    if (ay_debug >= 3)
        return alloy_free_sized(p, size);
    cxx_free(p);
}

AY_INLINE void *cxx_new(size_t size, size_t align) {
    void *p = cxx_try(size, align);
    return AY_LIKELY(p != NULL) ? p : cxx_new_failed(size, align);
}

AY_INLINE void *cxx_new_nothrow(size_t size, size_t align, const void *nt, const char *name) {
    void *p = cxx_try(size, align);
    return AY_LIKELY(p != NULL) ? p : cxx_nothrow_failed(size, align, nt, name);
}

/* The operators, by mangled name (x86-64: size_t is m, align_val_t is
 * St11align_val_t, const nothrow_t & is RKSt9nothrow_t). */
#define NEW(name, ...) CXX_API void *name(__VA_ARGS__) __asm__(#name)
#define DELETE(name, ...) CXX_API void name(__VA_ARGS__) __asm__(#name)

NEW(_Znwm, size_t);
NEW(_Znam, size_t);
NEW(_ZnwmRKSt9nothrow_t, size_t, const void *);
NEW(_ZnamRKSt9nothrow_t, size_t, const void *);
NEW(_ZnwmSt11align_val_t, size_t, size_t);
NEW(_ZnamSt11align_val_t, size_t, size_t);
NEW(_ZnwmSt11align_val_tRKSt9nothrow_t, size_t, size_t, const void *);
NEW(_ZnamSt11align_val_tRKSt9nothrow_t, size_t, size_t, const void *);
DELETE(_ZdlPv, void *);
DELETE(_ZdaPv, void *);
DELETE(_ZdlPvm, void *, size_t);
DELETE(_ZdaPvm, void *, size_t);
DELETE(_ZdlPvRKSt9nothrow_t, void *, const void *);
DELETE(_ZdaPvRKSt9nothrow_t, void *, const void *);
DELETE(_ZdlPvSt11align_val_t, void *, size_t);
DELETE(_ZdaPvSt11align_val_t, void *, size_t);
DELETE(_ZdlPvmSt11align_val_t, void *, size_t, size_t);
DELETE(_ZdaPvmSt11align_val_t, void *, size_t, size_t);
DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, void *, size_t, const void *);
DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, void *, size_t, const void *);

void *_Znwm(size_t size) { return cxx_new(size, 0); }
void *_Znam(size_t size) { return cxx_new(size, 0); }
void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt) {
    return cxx_new_nothrow(size, 0, nt, "_ZnwmRKSt9nothrow_t");
}
void *_ZnamRKSt9nothrow_t(size_t size, const void *nt) {
    return cxx_new_nothrow(size, 0, nt, "_ZnamRKSt9nothrow_t");
}
void *_ZnwmSt11align_val_t(size_t size, size_t align) { return cxx_new(size, align); }
void *_ZnamSt11align_val_t(size_t size, size_t align) { return cxx_new(size, align); }
void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
    return cxx_new_nothrow(size, align, nt, "_ZnwmSt11align_val_tRKSt9nothrow_t");
}
void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
    return cxx_new_nothrow(size, align, nt, "_ZnamSt11align_val_tRKSt9nothrow_t");
}

void _ZdlPv(void *p) { cxx_free(p); }
void _ZdaPv(void *p) { cxx_free(p); }
void _ZdlPvm(void *p, size_t size) { cxx_free_sized(p, size); }
void _ZdaPvm(void *p, size_t size) { cxx_free_sized(p, size); }
void _ZdlPvRKSt9nothrow_t(void *p, const void *nt) { cxx_free(p); }
void _ZdaPvRKSt9nothrow_t(void *p, const void *nt) { cxx_free(p); }
void _ZdlPvSt11align_val_t(void *p, size_t align) { cxx_free(p); }
void _ZdaPvSt11align_val_t(void *p, size_t align) { cxx_free(p); }
void _ZdlPvmSt11align_val_t(void *p, size_t size, size_t align) { cxx_free(p); }
void _ZdaPvmSt11align_val_t(void *p, size_t size, size_t align) { cxx_free(p); }
void _ZdlPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt) { cxx_free(p); }
void _ZdaPvSt11align_val_tRKSt9nothrow_t(void *p, size_t align, const void *nt) { cxx_free(p); }
