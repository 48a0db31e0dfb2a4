/* SPDX-License-Identifier: MIT */
/* symbolize.h - addresses to function names and source lines, for the leak
 * report (prof_out.c) and for `alloy prof` (tools/alloy_prof.c), which
 * compiles this same file, so that both print the same names.
 *
 * An address is placed in its object through a text copy of the process's
 * /proc/PID/maps (a heap profile carries one), and turned into the object's
 * own virtual address through its ELF program headers.  The function is the
 * ELF symbol that covers it (.symtab when the object has one, else .dynsym).
 * When addr2line (binutils) is installed, it is run once per object for up
 * to 128 of its addresses at a time (A2L_BATCH, symbolize.c), and gives
 * file:line where the object has debug
 * information, and then its (demangled) function name, which knows inlined
 * and static functions; without a line its name is not used, since for a
 * stripped object addr2line names the nearest symbol before the address,
 * whatever function it is really in.  It runs with LD_PRELOAD and
 * ALLOY_CONF taken out of its environment.
 *
 * It allocates nothing (files are mapped, processes started with vfork) and
 * keeps no state, so it can run at exit inside the allocator.  Bad input
 * (a missing file, a truncated ELF, garbage in the maps) leaves the names
 * empty; it never fails otherwise.
 */
#ifndef ALLOY_SYMBOLIZE_H
#define ALLOY_SYMBOLIZE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ay_sym {
    char func[160];   /* function name, or "" when unknown */
    char file[200];   /* source file, or "" */
    unsigned line;    /* source line, or 0 */
    char object[200]; /* the object's path, or "" when no mapping holds the address */
    uintptr_t vaddr;  /* the address in the object's own terms (for addr2line -e object) */
} ay_sym_t;

/* Symbolise pcs[0..n) into out[0..n), with maps[0..maps_len) (the text of a
 * /proc/PID/maps).  Each pcs[i] should point into the call instruction (a
 * return address minus one).  addr2line is used when `use_addr2line`. */
void ay_symbolize(const char *maps, size_t maps_len, const uintptr_t *pcs, size_t n, ay_sym_t *out,
                  bool use_addr2line);

/* Is `name` one of the allocator's own functions (malloc, calloc, ..., and
 * alloy's internal ay_* and alloy_* names)?  Used to trim the top of a
 * stack when alloy is linked into the program. */
bool ay_sym_is_allocator(const char *name);

#endif
