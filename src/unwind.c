/* SPDX-License-Identifier: MIT */
/* unwind.c - stack capture (see unwind.h): a cached CFI walk, with libgcc's
 * unwinder behind it.
 *
 * Invariants: nothing here allocates or takes a lock; a slot of the rule
 * table is written as key cleared, value, key set (release stores), and a
 * reader takes a value only when the key reads the same PC before and after
 * it ("the cached walk", below); a capture is either walked wholly from the
 * table or, if one frame needs more than it can describe, handed whole to
 * _Unwind_Backtrace; the walk stops at a CFA that does not move up the
 * stack, rather than read wild memory. */
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
struct dwarf_eh_bases {
    void *tbase, *dbase, *func;
};
extern const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

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

__attribute__((noinline)) unsigned ay_unwind_libgcc(uintptr_t *pcs, unsigned max, uintptr_t skip_lo,
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

/* ---- the cached walk ----
 *
 * What unwinding one x86-64 frame needs is small: where its CFA is (rsp or
 * rbp plus an offset), where the return address is (at CFA + an offset,
 * -8 in practice), and where the caller's rbp is (saved at CFA + an offset,
 * or unchanged).  That rule depends only on the PC, so it is computed once
 * per PC, from the FDE that libgcc finds (_Unwind_Find_FDE) and a small
 * interpreter of the CFA program below, and kept in a table.  A stack whose
 * PCs are all in the table unwinds with a few loads per frame.  A frame the
 * interpreter cannot describe (a CFA defined by an expression, as in PLT
 * stubs and some stack-realigning prologues, a register other than rsp and
 * rbp, a signal frame) sends the whole capture to libgcc's unwinder
 * instead; a PC with no FDE ends the stack, as it would for libgcc.
 *
 * The table is shared by all threads without a lock: each slot is a key and
 * a value written as a sequence (key cleared, value, key set, with release
 * order), and a reader accepts a value only if the key read before and
 * after it is the PC it looks for.
 */

#define RULE_VALID 0x80u
#define RULE_CFA_RBP 0x01u   /* CFA = rbp + off (else rsp + off) */
#define RULE_RBP_SAVED 0x02u /* the caller's rbp is at CFA + rbp_off (else unchanged) */
#define RULE_END 0x04u       /* the return address is undefined: the outermost frame */
#define RULE_COMPLEX 0x08u   /* not describable here: use libgcc */
#define RULE_NOFDE 0x10u     /* no unwind information: the stack ends */

typedef struct rule {
    int32_t cfa_off;
    int16_t rbp_off;
    int8_t ra_off;
    uint8_t flags;
} rule_t;

#define CACHE_SLOTS 8192
static struct {
    uintptr_t key;
    uint64_t value;
} cache[CACHE_SLOTS];

static uint64_t rule_pack(rule_t r) {
    return (uint64_t)(uint32_t)r.cfa_off | (uint64_t)(uint16_t)r.rbp_off << 32 |
           (uint64_t)(uint8_t)r.ra_off << 48 | (uint64_t)r.flags << 56;
}

static rule_t rule_unpack(uint64_t v) {
    rule_t r = {(int32_t)(uint32_t)v, (int16_t)(uint16_t)(v >> 32), (int8_t)(uint8_t)(v >> 48),
                (uint8_t)(v >> 56)};
    return r;
}

static size_t slot_of(uintptr_t pc) { return (size_t)((pc * 0x9E3779B97F4A7C15ULL) >> 51); }

static int cache_get(uintptr_t pc, rule_t *out) {
    size_t i = slot_of(pc);
    if (__atomic_load_n(&cache[i].key, __ATOMIC_ACQUIRE) != pc)
        return 0;
    uint64_t v = __atomic_load_n(&cache[i].value, __ATOMIC_ACQUIRE);
    if (__atomic_load_n(&cache[i].key, __ATOMIC_ACQUIRE) != pc)
        return 0;
    *out = rule_unpack(v);
    return 1;
}

static void cache_put(uintptr_t pc, rule_t r) {
    size_t i = slot_of(pc);
    __atomic_store_n(&cache[i].key, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&cache[i].value, rule_pack(r), __ATOMIC_RELEASE);
    __atomic_store_n(&cache[i].key, pc, __ATOMIC_RELEASE);
}

/* -- reading .eh_frame -- */

typedef struct rd {
    const uint8_t *p, *end;
    int bad;
} rd_t;

static uint64_t uleb(rd_t *r) {
    uint64_t v = 0;
    unsigned shift = 0;
    while (r->p < r->end) {
        uint8_t b = *r->p++;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
        if (!(b & 0x80))
            return v;
    }
    r->bad = 1;
    return 0;
}

static int64_t sleb(rd_t *r) {
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0x80;
    while (r->p < r->end && (b & 0x80)) {
        b = *r->p++;
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    }
    if (b & 0x80)
        r->bad = 1;
    else if (shift < 64 && (b & 0x40))
        v |= (int64_t)(~(uint64_t)0 << shift);
    return v;
}

static uint64_t fixed(rd_t *r, unsigned n) {
    uint64_t v = 0;
    if ((size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return 0;
    }
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)r->p[i] << (8 * i);
    r->p += n;
    return v;
}

static uint64_t read_at(const uint8_t *p, unsigned n) {
    rd_t r = {p, p + n, 0};
    return fixed(&r, n);
}

/* Skip a pointer of DW_EH_PE encoding enc (only its size matters here). */
static void skip_encoded(rd_t *r, uint8_t enc) {
    if (enc == 0xff) /* DW_EH_PE_omit */
        return;
    switch (enc & 0x0f) {
    case 0x00: fixed(r, 8); break; /* absptr */
    case 0x01: uleb(r); break;
    case 0x09: sleb(r); break;
    case 0x02:
    case 0x0a: fixed(r, 2); break;
    case 0x03:
    case 0x0b: fixed(r, 4); break;
    case 0x04:
    case 0x0c: fixed(r, 8); break;
    default: r->bad = 1;
    }
}

typedef struct cfa_state {
    uint8_t cfa_reg; /* DWARF register: 7 rsp, 6 rbp */
    int64_t cfa_off;
    int8_t rbp_kind; /* 0 unchanged, 1 saved at CFA + rbp_off, 2 not describable */
    int64_t rbp_off;
    int8_t ra_kind; /* 1 at CFA + ra_off, 0 undefined (the end), 2 not describable */
    int64_t ra_off;
    int cfa_bad; /* the CFA is an expression */
} cfa_state_t;

static void reg_rule(cfa_state_t *st, uint64_t reg, int8_t kind, int64_t off) {
    if (reg == 6) {
        st->rbp_kind = kind;
        st->rbp_off = off;
    } else if (reg == 16) {
        st->ra_kind = kind == 0 ? 2 : kind; /* "unchanged" makes no sense for the RA */
        st->ra_off = off;
    }
}

/* One run of CFA instructions: where it reads, how far it may go, the state
 * it builds and the states remember_state saved. */
typedef struct cfa_run {
    rd_t *r;
    uintptr_t *loc, target;
    uint64_t code_align;
    int64_t data_align;
    cfa_state_t *st;
    const cfa_state_t *init; /* the CIE's state; NULL while running the CIE */
    cfa_state_t saved[8];
    int nsaved;
} cfa_run_t;

/* What one instruction leaves: go on, stop (the target is reached), or
 * give up (something this interpreter does not handle). */
enum { CFA_NEXT, CFA_DONE, CFA_FAIL };

static int cfa_advance(cfa_run_t *c, uintptr_t delta) {
    if (*c->loc + delta > c->target)
        return CFA_DONE;
    *c->loc += delta;
    return CFA_NEXT;
}

/* restore, restore_extended: reg's rule back to the CIE's. */
static int cfa_restore(cfa_run_t *c, uint64_t reg) {
    if (!c->init)
        return CFA_FAIL; /* a restore inside the CIE */
    if (reg == 6) {
        c->st->rbp_kind = c->init->rbp_kind;
        c->st->rbp_off = c->init->rbp_off;
    } else if (reg == 16) {
        c->st->ra_kind = c->init->ra_kind;
        c->st->ra_off = c->init->ra_off;
    }
    return CFA_NEXT;
}

/* Skips a DWARF expression block (its length, then its bytes). */
static int cfa_skip_block(rd_t *r) {
    uint64_t len = uleb(r);
    if (len > (uint64_t)(r->end - r->p))
        return CFA_FAIL;
    r->p += len;
    return CFA_NEXT;
}

/* The instructions that define the CFA (def_cfa and its forms). */
static int cfa_define(cfa_run_t *c, uint8_t op) {
    rd_t *r = c->r;
    cfa_state_t *st = c->st;
    switch (op) {
    case 0x0c: /* def_cfa */
        st->cfa_reg = (uint8_t)uleb(r);
        st->cfa_off = (int64_t)uleb(r);
        st->cfa_bad = 0;
        return CFA_NEXT;
    case 0x0d: st->cfa_reg = (uint8_t)uleb(r); return CFA_NEXT;
    case 0x0e: st->cfa_off = (int64_t)uleb(r); return CFA_NEXT;
    case 0x0f: /* def_cfa_expression */
        if (cfa_skip_block(r) != CFA_NEXT)
            return CFA_FAIL;
        st->cfa_bad = 1;
        return CFA_NEXT;
    case 0x12: /* def_cfa_sf */
        st->cfa_reg = (uint8_t)uleb(r);
        st->cfa_off = sleb(r) * c->data_align;
        st->cfa_bad = 0;
        return CFA_NEXT;
    default: /* 0x13 def_cfa_offset_sf */ st->cfa_off = sleb(r) * c->data_align; return CFA_NEXT;
    }
}

/* The instructions that set a register's rule; CFA_FAIL for any other. */
static int cfa_register(cfa_run_t *c, uint8_t op) {
    rd_t *r = c->r;
    cfa_state_t *st = c->st;
    uint64_t reg = uleb(r);
    switch (op) {
    case 0x05: /* offset_extended */ reg_rule(st, reg, 1, (int64_t)uleb(r) * c->data_align); break;
    case 0x07: /* undefined */
        if (reg == 16)
            st->ra_kind = 0;
        else if (reg == 6)
            st->rbp_kind = 2;
        break;
    case 0x08: /* same_value */ reg_rule(st, reg, 0, 0); break;
    case 0x09: /* register */
        uleb(r);
        reg_rule(st, reg, 2, 0);
        break;
    case 0x10:
    case 0x16: /* expression, val_expression */
        if (cfa_skip_block(r) != CFA_NEXT)
            return CFA_FAIL;
        reg_rule(st, reg, 2, 0);
        break;
    case 0x11: /* offset_extended_sf */ reg_rule(st, reg, 1, sleb(r) * c->data_align); break;
    case 0x14:
    case 0x15: /* val_offset(_sf) */
        if (op == 0x14)
            uleb(r);
        else
            sleb(r);
        reg_rule(st, reg, 2, 0);
        break;
    default: /* 0x2f GNU_negative_offset_extended */
        reg_rule(st, reg, 1, -(int64_t)uleb(r) * c->data_align);
    }
    return CFA_NEXT;
}

/* Reads and runs one instruction. */
static int cfa_step(cfa_run_t *c) {
    rd_t *r = c->r;
    uint8_t op = *r->p++;
    switch (op & 0xc0) {
    case 0x40: return cfa_advance(c, (uintptr_t)(op & 0x3f) * c->code_align);
    case 0x80: reg_rule(c->st, op & 0x3f, 1, (int64_t)uleb(r) * c->data_align); return CFA_NEXT;
    case 0xc0: return cfa_restore(c, op & 0x3f);
    }
    switch (op) {
    case 0x00: /* nop */ return CFA_NEXT;
    case 0x02: return cfa_advance(c, fixed(r, 1) * c->code_align);
    case 0x03: return cfa_advance(c, fixed(r, 2) * c->code_align);
    case 0x04: return cfa_advance(c, fixed(r, 4) * c->code_align);
    case 0x06: /* restore_extended */ return cfa_restore(c, uleb(r));
    case 0x0a: /* remember_state */
        if (c->nsaved == 8)
            return CFA_FAIL;
        c->saved[c->nsaved++] = *c->st;
        return CFA_NEXT;
    case 0x0b: /* restore_state */
        if (c->nsaved == 0)
            return CFA_FAIL;
        *c->st = c->saved[--c->nsaved];
        return CFA_NEXT;
    case 0x0c:
    case 0x0d:
    case 0x0e:
    case 0x0f:
    case 0x12:
    case 0x13: return cfa_define(c, op);
    case 0x05:
    case 0x07:
    case 0x08:
    case 0x09:
    case 0x10:
    case 0x11:
    case 0x14:
    case 0x15:
    case 0x16:
    case 0x2f: return cfa_register(c, op);
    case 0x2e: uleb(r); return CFA_NEXT; /* GNU_args_size */
    default: return CFA_FAIL;            /* set_loc, and anything unknown */
    }
}

/* Run CFA instructions while the location stays <= target.  0, or -1 for
 * something this interpreter does not handle. */
static int run_cfa(rd_t *r, uintptr_t *loc, uintptr_t target, uint64_t code_align,
                   int64_t data_align, cfa_state_t *st, const cfa_state_t *init) {
    cfa_run_t c = {r, loc, target, code_align, data_align, st, init, {{0}}, 0};
    while (r->p < r->end && !r->bad) {
        int rc = cfa_step(&c);
        if (rc != CFA_NEXT)
            return rc == CFA_DONE ? 0 : -1;
    }
    return r->bad ? -1 : 0;
}

/* The rule for the instruction at pc (a return address minus one, or the
 * exact PC of the innermost frame). */
static rule_t rule_compute(uintptr_t pc) {
    rule_t out = {0, 0, 0, RULE_VALID | RULE_COMPLEX};
    struct dwarf_eh_bases bases;
    const uint8_t *fde = _Unwind_Find_FDE((void *)pc, &bases);
    if (!fde) {
        out.flags = RULE_VALID | RULE_NOFDE;
        return out;
    }
    uint32_t flen = (uint32_t)read_at(fde, 4);
    if (flen == 0 || flen == 0xffffffffu)
        return out;
    const uint8_t *cie = fde + 4 - (int32_t)(uint32_t)read_at(fde + 4, 4);
    uint32_t clen = (uint32_t)read_at(cie, 4);
    if (clen == 0 || clen == 0xffffffffu)
        return out;
    rd_t c = {cie + 8, cie + 4 + clen, 0};
    uint8_t version = (uint8_t)fixed(&c, 1);
    const char *aug = (const char *)c.p;
    while (c.p < c.end && *c.p)
        c.p++;
    c.p++;
    uint64_t code_align = uleb(&c);
    int64_t data_align = sleb(&c);
    uint64_t ra_reg = version == 1 ? fixed(&c, 1) : uleb(&c);
    uint8_t fde_enc = 0;
    int has_z = aug[0] == 'z';
    if (has_z) {
        uint64_t alen = uleb(&c);
        const uint8_t *after = c.p + alen;
        for (const char *a = aug + 1; *a && !c.bad; a++) {
            if (*a == 'R')
                fde_enc = (uint8_t)fixed(&c, 1);
            else if (*a == 'P')
                skip_encoded(&c, (uint8_t)fixed(&c, 1));
            else if (*a == 'L')
                fixed(&c, 1);
            else
                return out; /* 'S' (a signal frame) or unknown */
        }
        c.p = after;
    } else if (aug[0]) {
        return out;
    }
    if (c.bad || ra_reg != 16 || c.p > c.end)
        return out;
    cfa_state_t st = {7, 8, 0, 0, 1, -8, 0};
    uintptr_t loc = (uintptr_t)bases.func;
    if (run_cfa(&c, &loc, pc, code_align, data_align, &st, NULL) != 0)
        return out;
    cfa_state_t init = st;
    rd_t f = {fde + 8, fde + 4 + flen, 0};
    skip_encoded(&f, fde_enc);        /* pc_begin (bases.func holds it) */
    skip_encoded(&f, fde_enc & 0x0f); /* pc_range */
    if (has_z) {
        uint64_t alen = uleb(&f);
        if (alen > (uint64_t)(f.end - f.p))
            return out;
        f.p += alen;
    }
    if (f.bad || run_cfa(&f, &loc, pc, code_align, data_align, &st, &init) != 0)
        return out;
    if (st.cfa_bad || (st.cfa_reg != 7 && st.cfa_reg != 6) || st.rbp_kind == 2 || st.ra_kind == 2 ||
        st.cfa_off < 0 || st.cfa_off > INT32_MAX || st.rbp_off < INT16_MIN ||
        st.rbp_off > INT16_MAX || st.ra_off < -128 || st.ra_off > 127)
        return out;
    out.cfa_off = (int32_t)st.cfa_off;
    out.rbp_off = (int16_t)st.rbp_off;
    out.ra_off = (int8_t)st.ra_off;
    out.flags =
        (uint8_t)(RULE_VALID | (st.cfa_reg == 6 ? RULE_CFA_RBP : 0) |
                  (st.rbp_kind == 1 ? RULE_RBP_SAVED : 0) | (st.ra_kind == 0 ? RULE_END : 0));
    return out;
}

static rule_t rule_for(uintptr_t pc) {
    rule_t r;
    if (!cache_get(pc, &r)) {
        r = rule_compute(pc);
        cache_put(pc, r);
    }
    return r;
}

/* The walk from a frame's registers: exec, the instruction the frame is
 * executing, and its rsp and rbp.  The first `drop` return addresses are
 * not stored.  1: done (pcs[0..*n) filled); 0: a frame needs libgcc. */
static int walk_regs(uintptr_t exec, uintptr_t sp, uintptr_t bp, unsigned drop, uintptr_t *pcs,
                     unsigned max, uintptr_t skip_lo, uintptr_t skip_hi, unsigned *n) {
    int skipping = 1;
    unsigned k = *n;
    for (unsigned depth = 0; depth < 1024 && k < max; depth++) {
        rule_t r = rule_for(exec);
        if (r.flags & RULE_COMPLEX) {
            *n = k;
            return 0;
        }
        if (r.flags & (RULE_NOFDE | RULE_END))
            break;
        uintptr_t cfa = ((r.flags & RULE_CFA_RBP) ? bp : sp) + (uintptr_t)(intptr_t)r.cfa_off;
        if (cfa <= sp || cfa - sp > ((uintptr_t)1 << 26))
            break; /* not a stack growing down: stop rather than read wild memory */
        uintptr_t ra = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r.ra_off);
        if (r.flags & RULE_RBP_SAVED)
            bp = *(const uintptr_t *)(cfa + (uintptr_t)(intptr_t)r.rbp_off);
        sp = cfa;
        if (ra == 0)
            break;
        exec = ra - 1;
        if (depth < drop)
            continue;
        if (skipping && ra - skip_lo >= skip_hi - skip_lo)
            skipping = 0;
        if (!skipping)
            pcs[k++] = ra;
    }
    *n = k;
    return 1;
}

/* 1: done (pcs[0..*n) filled); 0: a frame needs libgcc. */
__attribute__((noinline)) static int walk_cached(uintptr_t *pcs, unsigned max, uintptr_t skip_lo,
                                                 uintptr_t skip_hi, unsigned *n) {
    uintptr_t pc, sp, bp;
    __asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
                     : "=r"(pc), "=r"(sp), "=r"(bp));
    *n = 0;
    /* the first return address is walk_cached's own, into ay_unwind */
    return walk_regs(pc, sp, bp, 1, pcs, max, skip_lo, skip_hi, n);
}

unsigned ay_unwind_from(uintptr_t *pcs, unsigned max, uintptr_t pc, uintptr_t sp, uintptr_t bp) {
    if (max == 0)
        return 0;
    pcs[0] = pc;
    unsigned n = 1;
    walk_regs(pc, sp, bp, 0, pcs, max, 0, 0, &n); /* a frame it cannot describe ends the stack */
    return n;
}

__attribute__((noinline)) unsigned ay_unwind(uintptr_t *pcs, unsigned max, uintptr_t skip_lo,
                                             uintptr_t skip_hi) {
    unsigned n = 0;
    if (max == 0)
        return 0;
    if (!walk_cached(pcs, max, skip_lo, skip_hi, &n))
        n = ay_unwind_libgcc(pcs, max, skip_lo, skip_hi);
    __asm__ volatile("" ::: "memory"); /* not a tail call: the walk skips this frame's RA */
    return n;
}
