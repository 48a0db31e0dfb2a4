/* unwind.c - stack capture through libgcc's unwinder (see unwind.h). */
#define _GNU_SOURCE
#include "unwind.h"

#include <link.h>

/* libgcc's unwinding interface, as the x86-64 psABI and the LSB define it.
 * (GCC's <unwind.h> declares the same; src/ is on the include path, where
 * this module's own unwind.h would shadow it.) */
struct _Unwind_Context;
typedef enum { URC_NO_REASON = 0, URC_END_OF_STACK = 5 } unwind_code_t;
typedef unwind_code_t (*unwind_trace_fn)(struct _Unwind_Context *, void *);
extern unwind_code_t _Unwind_Backtrace(unwind_trace_fn, void *);
extern uintptr_t _Unwind_GetIP(struct _Unwind_Context *);

typedef struct walk {
    uintptr_t *pcs;
    unsigned n, max;
    uintptr_t skip_lo, skip_hi;
    int skipping; /* still in the allocator's frames at the top */
} walk_t;

static unwind_code_t walk_frame(struct _Unwind_Context *ctx, void *arg) {
    walk_t *w = arg;
    uintptr_t pc = (uintptr_t)_Unwind_GetIP(ctx);
    if (pc == 0)
        return URC_END_OF_STACK;
    if (w->skipping) {
        if (pc - w->skip_lo < w->skip_hi - w->skip_lo)
            return URC_NO_REASON;
        w->skipping = 0;
    }
    w->pcs[w->n++] = pc;
    return w->n < w->max ? URC_NO_REASON : URC_END_OF_STACK;
}

__attribute__((noinline)) unsigned ay_unwind(uintptr_t *pcs, unsigned max, uintptr_t skip_lo,
                                             uintptr_t skip_hi) {
    walk_t w = {pcs, 0, max, skip_lo, skip_hi, 1};
    if (max == 0)
        return 0;
    _Unwind_Backtrace(walk_frame, &w);
    return w.n;
}

typedef struct find {
    uintptr_t addr, lo, hi;
    int found, is_main;
} find_t;

static int find_object(struct dl_phdr_info *info, size_t size, void *arg) {
    find_t *f = arg;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (f->addr < lo || f->addr >= hi)
        return 0;
    f->lo = lo;
    f->hi = hi;
    f->found = 1;
    f->is_main = !info->dlpi_name || !info->dlpi_name[0];
    return 1;
}

int ay_unwind_object_range(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, int *is_main) {
    find_t f = {addr, 0, 0, 0, 0};
    dl_iterate_phdr(find_object, &f);
    if (!f.found)
        return -1;
    *lo = f.lo;
    *hi = f.hi;
    *is_main = f.is_main;
    return 0;
}
