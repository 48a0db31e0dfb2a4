#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_settings.sh TEST_PROF DIR - bad input to the heap profiler.
#  1. A bad value for each prof_* key (and leak_exit_code) is warned about by
#     name, and the default is kept (test_prof settings checks the values).
#  2. An unwritable prof_prefix gives exactly one warning however many
#     interval dumps fail, and loses no samples (test_prof badprefix).
set -euo pipefail
prog=$1 dir=$2
mkdir -p "$dir"
err=$(ALLOY_CONF="prof:true,prof_sample:abc,prof_sample:0,prof_interval:-3,prof_prefix:,prof_leak:maybe,leak_exit_code:300,prof_active:2,prof_final:yes" \
      "$prog" settings 2>&1 >/dev/null)
status=0
for key in prof_sample prof_interval prof_prefix prof_leak leak_exit_code prof_active prof_final; do
  if ! grep -q "invalid value for '$key'.*keeping the default" <<<"$err"; then
    echo "check_settings: no warning naming $key in:"; echo "$err"; status=1
  fi
done
n=$(grep -c "invalid value" <<<"$err" || true)
[ "$n" = 8 ] || { echo "check_settings: $n warnings, expected 8:"; echo "$err"; status=1; }
err=$(ALLOY_CONF="prof:true,prof_sample:4096,prof_interval:65536,prof_prefix:/nonexistent-dir/p" \
      "$prog" badprefix "$dir" 2>&1 >/dev/null) || { echo "$err"; exit 1; }
n=$(grep -c "cannot write heap profile" <<<"$err" || true)
if [ "$n" != 1 ]; then
  echo "check_settings: $n warnings for the unwritable prefix, expected 1:"; echo "$err"; status=1
fi
echo "check_settings: done (status $status)"
exit $status
