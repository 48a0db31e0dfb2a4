#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# sanitize.sh - the sanitizer flavours: build the allocator core (without the
# libc names) and its tests instrumented, and run them.
#   tools/sanitize.sh thread     ThreadSanitizer, the threaded tests     (build-san-thread/)
#   tools/sanitize.sh address    AddressSanitizer + UBSan, the rest      (build-san-address/)
#   tools/sanitize.sh            both
# tools/test.sh runs both after the main suite.
set -euo pipefail
cd "$(dirname "$0")/.."
flavours=("$@")
[ ${#flavours[@]} -gt 0 ] || flavours=(thread address)
for f in "${flavours[@]}"; do
  case $f in
    thread) san=thread ;;
    address) san=address,undefined ;;
    *) echo "sanitize.sh: unknown flavour '$f' (thread, address)" >&2; exit 2 ;;
  esac
  dir=build-san-$f
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DALLOY_SANITIZE="$san" \
        -DALLOY_WERROR=ON >/dev/null
  targets=$(cmake --build "$dir" --target help | awk '/^\.\.\. san_/ {print $2}')
  # shellcheck disable=SC2086
  cmake --build "$dir" -j"$(nproc)" --target $targets >/dev/null
  ctest --test-dir "$dir" -L sanitizer --output-on-failure -j"$(nproc)"
done
