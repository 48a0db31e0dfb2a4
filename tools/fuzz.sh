#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz.sh - the API-sequence fuzzer (tests/fuzz/fuzz_alloc.c) on every flavour.
#   tools/fuzz.sh short          what CI runs (ctest -L fuzz): release, debug,
#                                secure, release with guard_sample, release with
#                                guard_sample, the profiler and the fills on
#                                together, glibc, and the self-test that must
#                                fail; under a minute
#   tools/fuzz.sh long [MINUTES] rounds of 60 s with a new seed each, 4 threads
#                                and 10 forks, over the release, debug and secure
#                                flavours and the release one with guard_sample,
#                                and with all of the settings of `short` together,
#                                for MINUTES in all (default 30); stops at the first
#                                failure, whose seed it prints
#   tools/fuzz.sh libfuzzer [ARGS]  build the libFuzzer target (clang) and run it
# Builds alloy first (tools/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-short}
tools/build.sh >/dev/null
case $mode in
  short)
    ctest --test-dir build -L fuzz --output-on-failure -j"$(nproc)"
    ;;
  long)
    minutes=${2:-30}
    end=$(( $(date +%s) + minutes * 60 ))
    flavours=(fuzz_alloc fuzz_alloc_debug fuzz_alloc_secure guarded features fills)
    round=0
    while [ "$(date +%s)" -lt "$end" ]; do
      f=${flavours[$((round % ${#flavours[@]}))]}
      seed=$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')
      echo "round $round: $f, seed $seed"
      if [ "$f" = guarded ]; then
        ALLOY_CONF=guard_sample:50 build/fuzz_alloc --seconds 60 --threads 4 --forks 10 --seed "$seed" --quiet
      elif [ "$f" = features ]; then
        ALLOY_CONF=guard_sample:50,prof:true,prof_sample:16k,prof_leak:true,leak_exit_code:3 \
          build/fuzz_alloc --seconds 60 --threads 4 --forks 10 --seed "$seed" --quiet
      elif [ "$f" = fills ]; then
        ALLOY_CONF=guard_sample:50,prof:true,prof_sample:16k,junk:true,zero:true \
          build/fuzz_alloc --seconds 60 --threads 4 --forks 10 --seed "$seed" --quiet
      else
        "build/$f" --seconds 60 --threads 4 --forks 10 --seed "$seed" --quiet
      fi
      round=$((round + 1))
    done
    echo "fuzz.sh: $round rounds, no failure"
    ;;
  libfuzzer)
    cmake --build build --target fuzz_alloc_libfuzzer
    mkdir -p build/fuzz-corpus
    shift
    build/fuzz_alloc_libfuzzer build/fuzz-corpus "$@"
    ;;
  *)
    echo "usage: tools/fuzz.sh short | long [MINUTES] | libfuzzer [ARGS]" >&2
    exit 2
    ;;
esac
