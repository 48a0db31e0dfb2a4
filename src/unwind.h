/* SPDX-License-Identifier: MIT */
/* unwind.h - stack capture for the heap profiler: the return addresses of
 * the calling thread's frames, without frame pointers, without malloc.
 *
 * The unwinder is libgcc's (_Unwind_Backtrace), which reads the .eh_frame
 * call-frame information every x86-64 object carries (the ABI requires it;
 * Debian builds everything with asynchronous unwind tables), so it works in
 * code built without frame pointers.  liballoy.so links its own copy from
 * libgcc_eh.a, hidden (-static-libgcc, --exclude-libs): the library gains no
 * DT_NEEDED entry and exports no _Unwind_* symbol, and nothing is loaded
 * lazily on first use, which is what makes glibc's backtrace() unusable
 * inside malloc (it dlopen()s libgcc_s.so.1 on its first call, and dlopen
 * allocates).  A program linked with liballoy.a gets libgcc_s from its own
 * link, at start-up.
 *
 * What a capture does: for each frame, the rule that unwinds it (where its
 * CFA, return address and saved rbp are) is looked up by PC in a lock-free
 * table; a PC not seen before has its FDE found by libgcc
 * (_Unwind_Find_FDE: glibc's _dl_find_object, lock-free, then the object's
 * .eh_frame_hdr search table) and its CFA program interpreted once.  A frame
 * the interpreter cannot describe hands the whole capture to libgcc's
 * _Unwind_Backtrace (unwind.c explains).  Neither allocates: the only
 * allocating path in libgcc's FDE lookup serves objects registered with
 * __register_frame_info, and nothing registers with liballoy's private
 * copy.  The profiler also refuses to sample an allocation made while it is
 * itself running, so a nested malloc could never recurse into it (prof.c
 * counts such allocations as prof.nested, and the test prof-ctl checks that
 * there are none).
 * Dynamically loaded objects are found as soon as dlopen returns.
 */
#ifndef ALLOY_UNWIND_H
#define ALLOY_UNWIND_H
#include <stddef.h>
#include <stdint.h>

#define AY_UNWIND_MAX 64 /* frames kept per stack */

/* Fill pcs[] with up to max return addresses of the caller's stack,
 * innermost first, leaving out frames whose address lies in [skip_lo,
 * skip_hi) at the top of the stack (the allocator's own frames).  Returns
 * how many were stored. */
unsigned ay_unwind(uintptr_t *pcs, unsigned max, uintptr_t skip_lo, uintptr_t skip_hi);
/* The same through libgcc's _Unwind_Backtrace alone (ay_unwind's fallback;
 * tests compare the two). */
unsigned ay_unwind_libgcc(uintptr_t *pcs, unsigned max, uintptr_t skip_lo, uintptr_t skip_hi);

/* The stack of an interrupted frame, as a signal handler finds it in its
 * ucontext: pcs[0] = pc, the instruction that was executing (not a return
 * address), then the return addresses of its callers, walked from its rsp
 * and rbp by the same rules (a frame they cannot describe, or a frame
 * without unwind information, ends the stack).  Returns how many were
 * stored (at least 1 when max > 0).  Reads only the stack it walks and the
 * objects' unwind tables: no lock, no malloc. */
unsigned ay_unwind_from(uintptr_t *pcs, unsigned max, uintptr_t pc, uintptr_t sp, uintptr_t bp);

/* The address range of the object (executable or shared library) that
 * contains `addr`: its lowest and highest loaded addresses.  Returns 0, or
 * -1 when no object contains it; *is_main tells whether it is the main
 * program (as when alloy is linked statically). */
int ay_unwind_object_range(uintptr_t addr, uintptr_t *lo, uintptr_t *hi, int *is_main);

#endif
