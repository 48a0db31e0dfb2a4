#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_man.sh ALLOY LIB ALLOY_1 ALLOY_3 [ALLOY_SIM_1] - alloy's manual pages
# (plain or gzipped) against the library they document:
#   - each renders without a warning: `man --warnings -l` and `groff -ww`;
#   - alloy(1) and alloy(3) list every ALLOY_CONF key that `ALLOY settings`
#     prints, and alloy(3) every alloy_ctl name that `ALLOY names` prints,
#     each as the tag of an entry ("key (type, ...)" at the start of a line
#     of the rendered page);
#   - alloy(3) names every alloy_* function that LIB exports;
#   - each page carries the version `ALLOY --version` prints.
# ALLOY is the command whose tables are the reference (it loads its own
# library).  Prints FAIL lines and exits 1 when a check fails.
set -u
alloy=$1 lib=$2 page1=$3 page3=$4 pagesim=${5:-}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C.UTF-8

version=$("$alloy" --version | awk '{print $2}')
"$alloy" settings >"$tmp/settings.txt" || fail "$alloy settings failed"
"$alloy" names >"$tmp/names.txt" || fail "$alloy names failed"
awk '/^[^ ]/ {print $1}' "$tmp/settings.txt" >"$tmp/keys"
awk '{print $1}' "$tmp/names.txt" >"$tmp/names"
nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^alloy_/ {print $3}' | sort -u >"$tmp/symbols"
[ -s "$tmp/keys" ] && [ -s "$tmp/names" ] && [ -s "$tmp/symbols" ] ||
    fail "no keys, names or symbols to look for"

# render PAGE OUT: plain text, wide, unhyphenated, so that a name is never split
render() { zcat -f "$1" | groff -man -Tutf8 -rLL=250n -rHY=0 -P-cbou 2>/dev/null >"$2"; }

# has_tags PAGE TEXT LIST WHAT: every word of LIST is the tag of an entry
has_tags() {
    local page=$1 text=$2 list=$3 what=$4 n=0 missing=0 w
    while IFS= read -r w; do
        n=$((n + 1))
        if ! awk -v w="$w" '$1 == w && $2 ~ /^\(/ {found = 1} END {exit !found}' "$text"; then
            fail "$(basename "$page"): $what '$w' is not listed"
            missing=$((missing + 1))
        fi
    done <"$list"
    [ "$missing" -eq 0 ] && echo "ok: $(basename "$page") lists all $n $what"
}

for page in "$page1" "$page3" $pagesim; do
    name=$(basename "$page")
    [ -s "$page" ] || { fail "$page is missing or empty"; continue; }
    warn=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
    [ -z "$warn" ] || fail "$name: man --warnings -l: $warn"
    warn=$(zcat -f "$page" | groff -ww -man -z 2>&1)
    [ -z "$warn" ] || fail "$name: groff -ww: $warn"
    render "$page" "$tmp/$name.txt"
    grep -q "alloy $version" "$tmp/$name.txt" || fail "$name does not carry version $version"
    for s in NAME SYNOPSIS DESCRIPTION "SEE ALSO"; do
        grep -q "^$s\$" "$tmp/$name.txt" || fail "$name has no $s section"
    done
    [ "$fails" -eq 0 ] && echo "ok: $name renders without warnings"
done

render "$page1" "$tmp/1.txt"
render "$page3" "$tmp/3.txt"
has_tags "$page1" "$tmp/1.txt" "$tmp/keys" "ALLOY_CONF keys"
has_tags "$page3" "$tmp/3.txt" "$tmp/keys" "ALLOY_CONF keys"
has_tags "$page3" "$tmp/3.txt" "$tmp/names" "alloy_ctl names"
for s in "GUARANTEES AND BAD INPUT" CONFIGURATION "CONTROL NAMES" ENVIRONMENT FLAVOURS; do
    grep -q "^$s\$" "$tmp/3.txt" || fail "alloy(3) has no $s section"
done
missing=0
while IFS= read -r f; do
    grep -qw -- "$f" "$tmp/3.txt" || { fail "alloy(3) does not name $f, which $(basename "$lib") exports"; missing=$((missing + 1)); }
done <"$tmp/symbols"
[ "$missing" -eq 0 ] && echo "ok: alloy(3) names all $(wc -l <"$tmp/symbols") exported alloy_* functions"

if [ "$fails" -ne 0 ]; then
    echo "check_man: $fails check(s) failed"
    exit 1
fi
echo "check_man: all checks passed"
