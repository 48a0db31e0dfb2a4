#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_readme_settings.sh ALLOY README - the settings table in the README
# (between its settings:begin and settings:end markers) must be exactly what
# `alloy settings --markdown` prints from liballoy's own table.
set -euo pipefail
alloy=$1 readme=$2
want=$("$alloy" settings --markdown)
have=$(sed -n '/<!-- settings:begin/,/<!-- settings:end/p' "$readme" | sed '1d;$d')
if [ "$want" != "$have" ]; then
  echo "check_readme_settings: the README's settings table differs from liballoy's;" >&2
  echo "regenerate it with: $alloy settings --markdown" >&2
  diff <(echo "$have") <(echo "$want") >&2 || true
  exit 1
fi
echo "check_readme_settings: $(echo "$want" | tail -n +3 | wc -l) settings, README agrees"
