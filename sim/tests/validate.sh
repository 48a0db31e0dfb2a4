#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# validate.sh - the model against the real liballoy: every workload, clip,
# guard and compact (the default), one seed, a shortened trace, with the
# thread caches' byte limit low enough (256 KiB, validate's default) that
# lists overflow while batches still grow and caches get scavenged.  Every counter the model reports
# (slow-path calls, short fetches, objects fetched and released, spans,
# overflows, scavenges, mean cached bytes) must equal the real allocator's
# for the same trace, and the traces must exercise overflows and scavenges.
#
# Usage: validate.sh ALLOY_SIM TMPDIR             agreement expected
#        validate.sh ALLOY_SIM TMPDIR --tcache-max-bytes 0
#                                                 no byte limit: agreement, and
#                                                 no scavenge on either side
#        validate.sh ALLOY_SIM TMPDIR --no-clock   liballoy under decay_ms:-1, the
#                                                 model without a clock: agreement
#        validate.sh ALLOY_SIM TMPDIR --diverge R  the model breaks rule R: the
#                                                 validation must find it
#        validate.sh ALLOY_SIM TMPDIR --percpu [--diverge R]
#                                                 the per-CPU cache (a build with
#                                                 per-CPU caches): its counters
#                                                 too, and the traces must exercise
#                                                 overflows and the clock hand's
#                                                 steals (percpu.moves)
# By default liballoy runs under its default decay_ms on the model's clock
# (sim/model.h, sim_clock_ms), so the transfer caches' idle rule and decay
# rounds are compared too.
set -u
sim=$1
tmp=$2
shift 2
percpu=
if [ "${1:-}" = "--percpu" ]; then
    percpu=--percpu
    shift
fi
rm -rf "$tmp" && mkdir -p "$tmp"
"$sim" validate --out "$tmp" --seeds 1 --warmup 10000 --ops 60000 --no-progress $percpu "$@" \
    2> "$tmp/stderr"
status=$?
csv=$tmp/validation.csv
# per-CPU caches cannot run here (no rseq: GLIBC_TUNABLES=glibc.pthread.rseq=0,
# an old kernel, valgrind): skipped; that a per-CPU build runs them where
# they can is test_percpu's "mode auto" (tests/threads)
if [ -n "$percpu" ] && grep -q "liballoy ran 0 per-CPU caches" "$tmp/stderr"; then
    echo "validate.sh: per-CPU caches do not run here (skipped): $(cat "$tmp/stderr")"
    exit 77
fi
col() { head -1 "$csv" | tr , '\n' | grep -nx "$1" | cut -d: -f1; }
rows=$(awk -F, 'NR > 1' "$csv" | wc -l)
exact=$(awk -F, 'NR > 1 && $NF == 1' "$csv" | wc -l)
if [ -n "$percpu" ]; then
    # the per-CPU cache's capacity never exceeds the byte limit, so its lists
    # never do: what it exercises in place of scavenges is the steal
    ovf=$(awk -F, -v c="$(col real_percpu_overflows)" 'NR > 1 && $c > 0' "$csv" | wc -l)
    scav=$(awk -F, -v c="$(col real_percpu_moves)" 'NR > 1 && $c > 0' "$csv" | wc -l)
    echo "validate.sh: $exact of $rows runs agree exactly; $ovf overflow, $scav steal (per-CPU)"
else
    ovf=$(awk -F, -v c="$(col real_tcache_overflows)" 'NR > 1 && $c > 0' "$csv" | wc -l)
    scav=$(awk -F, -v c="$(col real_tcache_scavenges)" 'NR > 1 && $c > 0' "$csv" | wc -l)
    echo "validate.sh: $exact of $rows runs agree exactly; $ovf overflow, $scav scavenge"
fi
if [ "${1:-}" = "--diverge" ]; then
    # a diverging model must be caught: some run disagrees, and a counter is named
    if [ "$status" = 0 ] && [ "$rows" = 15 ] && [ "$exact" -lt "$rows" ] &&
       grep -q "differs: model" "$tmp/stderr"; then
        grep -m1 "differs" "$tmp/stderr"
        exit 0
    fi
    echo "validate.sh: the model broke '$2' and validation did not notice" >&2
    cat "$tmp/stderr" >&2
    exit 1
fi
if [ "${1:-} ${2:-}" = "--tcache-max-bytes 0" ]; then
    # no byte limit: the caches never scavenge, in the model and in liballoy
    if [ "$status" != 0 ] || [ "$rows" != 15 ] || [ "$exact" != "$rows" ] || [ "$scav" != 0 ]; then
        cat "$tmp/stderr" >&2
        column -s, -t "$csv" >&2
        exit 1
    fi
    exit 0
fi
if [ "$status" != 0 ] || [ "$rows" != 15 ] || [ "$exact" != "$rows" ] ||
   [ "$ovf" -lt 4 ] || [ "$scav" -lt 4 ]; then
    cat "$tmp/stderr" >&2
    column -s, -t "$csv" >&2
    exit 1
fi
