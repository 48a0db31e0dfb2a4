#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_tls_size.sh LIB DOC - liballoy.so's PT_TLS segment (its size in
# memory, from readelf) must equal the "**N bytes**" that docs/ARCHITECTURE.md
# states in its TLS paragraph, and stay small enough for a late dlopen.
set -euo pipefail
lib=$1 doc=$2
memsz=$(readelf -lW "$lib" | awk '$1 == "TLS" {print $6}')
[ -n "$memsz" ] || { echo "check_tls_size: $lib has no PT_TLS segment" >&2; exit 1; }
bytes=$((memsz))
claimed=$(grep -o 'PT_TLS` segment) is \*\*[0-9]* bytes\*\*' "$doc" | grep -o '[0-9][0-9]*')
echo "check_tls_size: PT_TLS is $bytes bytes; ARCHITECTURE.md says ${claimed:-nothing}"
[ "$bytes" = "${claimed:-}" ] || { echo "check_tls_size: the doc is wrong" >&2; exit 1; }
[ "$bytes" -le 128 ] || { echo "check_tls_size: $bytes bytes is too much static TLS" >&2; exit 1; }
