/* SPDX-License-Identifier: MIT */
/* guard.c - sampled guarded allocations and their SIGSEGV reports (see
 * guard.h).
 *
 * Region layout, in pages: guard, slot 0, guard, slot 1, guard, ...,
 * slot n-1, guard.  A slot is UNUSED (never handed out), LIVE (its page is
 * read-write), or FREED (inaccessible again).  Never-used slots are taken
 * first, in order, then the least recently freed ones (a FIFO of slot
 * numbers), so a freed page stays inaccessible for as long as possible.
 *
 * Invariants: a LIVE slot's page is read-write, every other page of the
 * region is inaccessible (except while a slot is being handed out or
 * taken back, when its state is BUSY and only the thread doing it touches
 * it); the FIFO holds exactly the FREED slots.
 */
#define _GNU_SOURCE
#include "guard.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "conf.h"
#include "error.h"
#include "meta.h"
#include "os.h"
#include "secure.h"
#include "symbolize.h"
#include "unwind.h"

#define TRACE_FRAMES 16
#define MAPS_MAX ((size_t)4 << 20) /* /proc/self/maps, read for a report */

enum { SLOT_UNUSED = 0, SLOT_BUSY, SLOT_LIVE, SLOT_FREED };

typedef struct slot {
    uintptr_t user; /* the block (LIVE, FREED) */
    uint32_t size;  /* bytes asked for */
    uint8_t state;  /* SLOT_* */
    uint32_t alloc_tid, free_tid;
    unsigned alloc_frames, free_frames;
    const void *alloc_trace[TRACE_FRAMES]; /* [0]: the caller of malloc */
    const void *free_trace[TRACE_FRAMES];  /* [0]: the caller of free */
} slot_t;

uintptr_t ay_guard_lo, ay_guard_hi;
int64_t ay_guard_countdown;
static unsigned nslots;
static slot_t *slots;
static uint32_t *fifo; /* FREED slots, oldest first (ring of nslots) */
static uint32_t fifo_head, fifo_count, next_unused;
static pthread_mutex_t guard_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction previous;

static uintptr_t slot_page(unsigned i) {
    return ay_guard_lo + AY_PAGES_BYTES(2 * (uintptr_t)i + 1);
}

/* The countdown: the objects handed out before the next sample, from 0 to
 * 2n - 2 (mean n - 1, so one in n on average); always 0 with n = 1, so
 * every slow-path malloc of at most a page is sampled. */
static void rearm(void) {
    uint64_t n = ay_conf.guard_sample;
    AY_STORE(&ay_guard_countdown, (int64_t)(ay_random() % (2 * n - 1)));
}

void ay_guard_charge(uint32_t objects) {
    __atomic_sub_fetch(&ay_guard_countdown, (int64_t)objects, __ATOMIC_RELAXED);
}

/* ---- stack traces ---- */

static uintptr_t self_lo, self_hi; /* liballoy's own code (its frames are left out) */

/* The stack of the malloc or free being recorded, through the profiler's
 * unwinder (unwind.h: the .eh_frame rules, no frame pointers needed, no
 * malloc), from `caller` (the code address that called malloc or free) on.
 * When alloy is linked into the program, its frames cannot be told apart by
 * address, so the stack starts at `caller` when it is found in it. */
static unsigned trace(const void **out, const void *caller) {
    uintptr_t pcs[AY_UNWIND_MAX];
    unsigned n = ay_unwind(pcs, AY_UNWIND_MAX, self_lo, self_hi), first = 0;
    for (unsigned i = 0; i < n; i++)
        if (pcs[i] == (uintptr_t)caller) {
            first = i;
            break;
        }
    unsigned k = 0;
    if (n == 0 || pcs[first] != (uintptr_t)caller)
        out[k++] = caller; /* the unwinder found nothing, or not it */
    for (unsigned i = first; i < n && k < TRACE_FRAMES; i++)
        out[k++] = (const void *)pcs[i];
    return k;
}

/* ---- the report ---- */

/* Where a report's frames are: the text of /proc/self/maps and room for
 * the symbols of one stack, mapped from the OS for the report (it may run
 * in the SIGSEGV handler: no malloc, no lock, no addr2line). */
typedef struct where {
    char *maps;
    size_t maps_len;
    ay_sym_t syms[TRACE_FRAMES];
} where_t;

static where_t *where_open(void) {
    size_t bytes = (sizeof(where_t) + MAPS_MAX + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1);
    where_t *w = ay_os_map(bytes, AY_PAGE_SIZE);
    if (!w)
        return NULL;
    w->maps = (char *)(w + 1);
    long n = ay_os_read_file("/proc/self/maps", w->maps, MAPS_MAX);
    w->maps_len = n > 0 ? (size_t)n : 0;
    return w;
}

static void where_close(where_t *w) {
    if (w)
        ay_os_unmap(w, (sizeof(where_t) + MAPS_MAX + AY_PAGE_SIZE - 1) & ~(AY_PAGE_SIZE - 1));
}

/* "  <what> by thread <tid>:", then a line per frame: "    #i <address> in
 * <function> (<object>+<offset>)", the offset being what `addr2line -f -e
 * <object> <offset>` reads (for the call instruction: the return address
 * less one; for frame #0 of an access, `first_exact`, the faulting
 * instruction itself), the function the ELF symbol that covers it. */
static void line_trace(const char *what, uint32_t tid, const void *const *trace, unsigned n,
                       bool first_exact, where_t *w) {
    ay_fmt_t f;
    ay_msg_begin(&f);
    ay_fmt_str(&f, "  ");
    ay_fmt_str(&f, what);
    ay_fmt_str(&f, " by thread ");
    ay_fmt_u64(&f, tid);
    ay_fmt_str(&f, ":");
    ay_msg_end(&f);
    uintptr_t pcs[TRACE_FRAMES];
    for (unsigned i = 0; i < n; i++)
        pcs[i] = (uintptr_t)trace[i] - (i == 0 && first_exact ? 0 : 1);
    if (w)
        ay_symbolize(w->maps, w->maps_len, pcs, n, w->syms, false);
    for (unsigned i = 0; i < n; i++) {
        const ay_sym_t *s = w ? &w->syms[i] : NULL;
        ay_msg_begin(&f);
        ay_fmt_str(&f, "    #");
        ay_fmt_u64(&f, i);
        ay_fmt_str(&f, " ");
        ay_fmt_hex(&f, (uintptr_t)trace[i]);
        if (s && s->func[0]) {
            ay_fmt_str(&f, " in ");
            ay_fmt_str(&f, s->func);
        }
        if (s && s->object[0]) {
            ay_fmt_str(&f, " (");
            ay_fmt_str(&f, s->object);
            ay_fmt_str(&f, "+");
            ay_fmt_hex(&f, s->vaddr);
            ay_fmt_str(&f, ")");
        }
        ay_msg_end(&f);
    }
}

/* The stack of a faulting access: frame #0 the instruction, then its callers. */
typedef struct access {
    uint32_t tid;
    unsigned frames;
    const void *trace[TRACE_FRAMES];
} access_t;

/* "alloy: guarded block: <what> at <addr> (<n> bytes <where> the block
 * <user> of <size> bytes)", then the stack of the access (`a`, for a
 * fault), and where the block was allocated and freed. */
static void report(const char *what, uintptr_t addr, const slot_t *s, const access_t *a) {
    ay_fmt_t f;
    ay_msg_begin(&f);
    ay_fmt_str(&f, "guarded block: ");
    ay_fmt_str(&f, what);
    ay_fmt_str(&f, " at ");
    ay_fmt_hex(&f, addr);
    if (s && s->state != SLOT_UNUSED) {
        uintptr_t end = s->user + s->size;
        ay_fmt_str(&f, " (");
        if (addr < s->user) {
            ay_fmt_u64(&f, s->user - addr);
            ay_fmt_str(&f, " bytes before");
        } else if (addr >= end) {
            ay_fmt_u64(&f, addr - end);
            ay_fmt_str(&f, " bytes after the end of");
        } else {
            ay_fmt_u64(&f, addr - s->user);
            ay_fmt_str(&f, " bytes into");
        }
        ay_fmt_str(&f, " the block ");
        ay_fmt_hex(&f, s->user);
        ay_fmt_str(&f, " of ");
        ay_fmt_u64(&f, s->size);
        ay_fmt_str(&f, " bytes)");
    }
    ay_msg_end(&f);
    bool block = s && s->state != SLOT_UNUSED;
    if (!block && !(a && a->frames))
        return;
    where_t *w = where_open();
    if (a && a->frames)
        line_trace("accessed", a->tid, a->trace, a->frames, true, w);
    if (block)
        line_trace("allocated", s->alloc_tid, s->alloc_trace, s->alloc_frames, false, w);
    if (block && s->state == SLOT_FREED)
        line_trace("freed", s->free_tid, s->free_trace, s->free_frames, false, w);
    where_close(w);
}

/* The slot a fault at addr is about: the slot of that page, or, on a guard
 * page, the slot it follows (an overflow) when the fault is in its first
 * half, else the slot it precedes (an underflow).  NULL when none. */
static slot_t *slot_of_fault(uintptr_t addr, const char **what) {
    uintptr_t page = (addr - ay_guard_lo) >> AY_PAGE_SHIFT;
    if (page % 2 == 1) {
        slot_t *s = &slots[page / 2];
        *what = s->state == SLOT_FREED ? "use after free" : "access to an unused guarded page";
        return s;
    }
    unsigned left = page ? (unsigned)(page / 2 - 1) : 0, right = (unsigned)(page / 2);
    bool first_half = (addr & (AY_PAGE_SIZE - 1)) < AY_PAGE_SIZE / 2;
    slot_t *s = NULL;
    if (page && (first_half || right >= nslots))
        s = &slots[left];
    else if (right < nslots)
        s = &slots[right];
    bool after = s == &slots[left] && page;
    *what = s && s->state == SLOT_FREED ? "use after free (beside the block)"
            : after                     ? "heap buffer overflow"
                                        : "heap buffer underflow";
    return s;
}

static void on_segv(int sig, siginfo_t *info, void *ctx) {
    uintptr_t addr = (uintptr_t)info->si_addr;
    if (ay_guard_owns((void *)addr)) {
        const char *what = "access";
        slot_t *s = slot_of_fault(addr, &what);
        ay_fmt_t f;
        ay_msg_begin(&f);
#if defined(__x86_64__)
        bool write = ((ucontext_t *)ctx)->uc_mcontext.gregs[REG_ERR] & 2;
        ay_fmt_str(&f, write ? "SIGSEGV: a write into a guarded page"
                             : "SIGSEGV: a read of a guarded page");
#else
        ay_fmt_str(&f, "SIGSEGV: an access to a guarded page");
#endif
        ay_msg_end(&f);
        access_t a = {ay_os_tid(), 0, {0}};
#if defined(__x86_64__)
        const greg_t *r = ((ucontext_t *)ctx)->uc_mcontext.gregs;
        uintptr_t pcs[TRACE_FRAMES];
        a.frames = ay_unwind_from(pcs, TRACE_FRAMES, (uintptr_t)r[REG_RIP], (uintptr_t)r[REG_RSP],
                                  (uintptr_t)r[REG_RBP]);
        for (unsigned i = 0; i < a.frames; i++)
            a.trace[i] = (const void *)pcs[i];
#endif
        report(what, addr, s, &a);
        sigaction(SIGSEGV, &previous, NULL); /* the access faults again, as it would have */
        return;
    }
    /* not ours: the previous handler's business */
    if (previous.sa_flags & SA_SIGINFO) {
        previous.sa_sigaction(sig, info, ctx);
    } else if (previous.sa_handler == SIG_IGN) {
        return;
    } else if (previous.sa_handler == SIG_DFL) {
        sigaction(SIGSEGV, &previous, NULL);
    } else {
        previous.sa_handler(sig);
    }
}

/* ---- set-up ---- */

AY_STARTUP_TEXT void ay_guard_init(void) {
    if (!ay_conf.guard_sample)
        return;
    unsigned n = ay_conf.guard_slots;
    size_t bytes = AY_PAGES_BYTES(2 * (size_t)n + 1);
    char *region = ay_os_map(bytes, AY_PAGE_SIZE);
    slot_t *s = ay_meta_alloc(sizeof(slot_t) * n);
    uint32_t *q = ay_meta_alloc(sizeof(uint32_t) * n);
    if (!region || !s || !q || ay_os_protect(region, bytes, 0) != 0) {
        if (region)
            ay_os_unmap(region, bytes);
        ay_warn("guard_sample: cannot reserve the guarded pages; sampling is off");
        return;
    }
    slots = s;
    fifo = q;
    nslots = n;
    if (ay_conf.guard_sample == 1)
        ay_conf.tcache = false; /* every malloc through the slow path, which samples it */
    int is_main = 0;
    if (ay_unwind_object_range((uintptr_t)&ay_guard_alloc, &self_lo, &self_hi, &is_main) != 0 ||
        is_main)
        self_lo = self_hi = 0; /* linked into the program: trace() starts at the caller */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &previous);
    rearm();
    ay_guard_lo = (uintptr_t)region;
    __atomic_store_n(&ay_guard_hi, (uintptr_t)region + bytes, __ATOMIC_RELEASE);
}

/* ---- allocation ---- */

void *ay_guard_alloc(size_t size, const void *caller) {
    rearm();
    pthread_mutex_lock(&guard_lock);
    unsigned i;
    if (next_unused < nslots) {
        i = next_unused++;
    } else if (fifo_count) {
        i = fifo[fifo_head];
        fifo_head = (fifo_head + 1) % nslots;
        fifo_count--;
    } else {
        pthread_mutex_unlock(&guard_lock);
        return NULL; /* every slot is live */
    }
    slots[i].state = SLOT_BUSY;
    pthread_mutex_unlock(&guard_lock);

    slot_t *s = &slots[i];
    size_t align = size % 16 == 0 ? 16 : 8, need = size ? (size + align - 1) & ~(align - 1) : 16;
    uintptr_t page = slot_page(i);
    if (ay_os_protect((void *)page, AY_PAGE_SIZE, 1) != 0) {
        pthread_mutex_lock(&guard_lock); /* back to the FIFO: it is still inaccessible */
        s->state = SLOT_FREED;
        fifo[(fifo_head + fifo_count++) % nslots] = i;
        pthread_mutex_unlock(&guard_lock);
        return NULL;
    }
    s->user = page + AY_PAGE_SIZE - need;
    s->size = (uint32_t)size;
    s->alloc_tid = ay_os_tid();
    s->alloc_frames = trace(s->alloc_trace, caller);
    s->free_frames = 0;
    __atomic_store_n(&s->state, SLOT_LIVE, __ATOMIC_RELEASE);
    return (void *)s->user;
}

/* The live slot of p, or a report and an abort. */
static slot_t *live_slot(const void *p, const char *fn) {
    uintptr_t page = ((uintptr_t)p - ay_guard_lo) >> AY_PAGE_SHIFT;
    slot_t *s = page % 2 ? &slots[page / 2] : NULL;
    const char *what = !s || s->state == SLOT_UNUSED ? "invalid pointer"
                       : s->state == SLOT_FREED      ? "double free"
                       : (uintptr_t)p != s->user     ? "pointer is not the start of the block"
                                                     : NULL;
    if (AY_LIKELY(!what))
        return s;
    report(what, (uintptr_t)p, s, NULL);
    ay_fatal_in(fn, what, p);
}

void ay_guard_free(void *p, const void *caller, const char *fn) {
    slot_t *s = live_slot(p, fn);
    unsigned i = (unsigned)(s - slots);
    s->state = SLOT_BUSY;
    s->free_tid = ay_os_tid();
    s->free_frames = trace(s->free_trace, caller);
    ay_os_protect((void *)slot_page(i), AY_PAGE_SIZE, 0);
    pthread_mutex_lock(&guard_lock);
    s->state = SLOT_FREED;
    fifo[(fifo_head + fifo_count++) % nslots] = i;
    pthread_mutex_unlock(&guard_lock);
}

size_t ay_guard_usable(const void *p, const char *fn) {
    const slot_t *s = live_slot(p, fn);
    return slot_page((unsigned)(s - slots)) + AY_PAGE_SIZE - s->user;
}

void ay_guard_lock(void) { pthread_mutex_lock(&guard_lock); }
void ay_guard_unlock(void) { pthread_mutex_unlock(&guard_lock); }
void ay_guard_reset_lock(void) { pthread_mutex_init(&guard_lock, NULL); }
