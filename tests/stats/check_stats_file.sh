#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_stats_file.sh LIB DIR - the stats_file setting: the report at exit
# goes to the file and not to stderr; %p becomes the pid; a relative name is
# taken from the directory the program started in; a file that exists is
# left as it is (one warning, the report on stderr); a path that cannot be
# written gives one warning naming the key and the reason, the report on
# stderr, and the program's own exit status; stats_print_pid keeps every
# other process quiet.  LIB is liballoy.so.0, preloaded into /bin/true and
# python3; DIR a scratch directory.
set -uo pipefail
lib=$1 dir=$2
rm -rf "$dir" && mkdir -p "$dir" || exit 1
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
head_re='^___ alloy .* statistics, pid [0-9]+ [(].*[)] ___$'
# run CONF PROG ARGS...: status in $st, stderr in $err
run() {
    local conf=$1
    shift
    err=$(ALLOY_CONF=$conf LD_PRELOAD=$lib "$@" 2>&1 >/dev/null)
    st=$?
}
nwarn() { printf '%s\n' "$err" | grep -c '^alloy: stats_file: '; }

f=$dir/report.txt
run "stats_print:true,stats_file:$f" /bin/true
if [ $st -ne 0 ] || [ -n "$err" ] || ! grep -Eq "$head_re" "$f"; then
    fail "the report in the file: status $st, stderr '$err', file: $(head -c 200 "$f" 2>&1)"
else
    ok "the report is in $f and stderr is empty"
fi

run "stats_print:true,stats_print_opts:J,stats_file:$dir/r.%p.json" /bin/sh -c 'echo $$ >'"$dir"'/pid; exec /bin/true'
pid=$(cat "$dir/pid")
if [ $st -ne 0 ] || [ -n "$err" ] || ! python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$dir/r.$pid.json"; then
    fail "%p: status $st, stderr '$err', files: $(ls "$dir")"
else
    ok "%p became the pid: r.$pid.json, a whole JSON report"
fi

rm -f "$dir/rel.txt"
(cd "$dir" && run "stats_print:true,stats_file:rel.txt" /usr/bin/python3 -c 'import os; os.chdir("/")'
 [ $st -eq 0 ] && [ -z "$err" ] && grep -Eq "$head_re" "$dir/rel.txt") &&
    ok "a relative name is taken from the directory the program started in" ||
    fail "a relative name after chdir: $(ls "$dir")"

printf 'keep me\n' >"$dir/kept.txt"
run "stats_print:true,stats_file:$dir/kept.txt" /bin/true
want="alloy: stats_file: cannot create $dir/kept.txt (it exists; alloy never overwrites a file); the report goes to stderr"
if [ $st -ne 0 ] || [ "$(cat "$dir/kept.txt")" != "keep me" ] || [ "$(nwarn)" != 1 ] ||
    ! printf '%s\n' "$err" | grep -Fxq "$want" || ! printf '%s\n' "$err" | grep -Eq "$head_re"; then
    fail "an existing file: status $st, file '$(cat "$dir/kept.txt")', stderr '$err'"
else
    ok "an existing file is left as it is: $want"
fi

for bad in "$dir/no-such-dir/r.txt" /proc/version/r.txt; do
    run "stats_print:true,stats_file:$bad" /bin/bash -c 'exit 3'
    if [ $st -ne 3 ] || [ "$(nwarn)" != 1 ] || ! printf '%s\n' "$err" | grep -Eq "$head_re" ||
        ! printf '%s\n' "$err" | grep -q "^alloy: stats_file: cannot create $bad ([a-z]"; then
        fail "an unwritable path $bad: status $st, stderr '$err'"
    else
        ok "$(printf '%s\n' "$err" | grep '^alloy: stats_file')"
    fi
done
# the reason in words: a directory missing, or one under /proc, which exists
# but takes no new file
for c in "$dir/no-such-dir/r.txt:no such directory" "/proc/r.txt:a kernel file system" \
    "/proc/self/r.txt:a kernel file system"; do
    bad=${c%%:*} why=${c#*:}
    run "stats_print:true,stats_file:$bad" /bin/true
    if ! printf '%s\n' "$err" | grep -q "^alloy: stats_file: cannot create $bad (.*$why"; then
        fail "$bad: the warning does not say '$why': '$(printf '%s\n' "$err" | head -1)'"
    else
        ok "$(printf '%s\n' "$err" | grep '^alloy: stats_file')"
    fi
done
run "stats_print:true,stats_file:$dir/no-such-dir/r.txt" /bin/true
[ $st -eq 0 ] && ok "the program runs on: exit status 0" || fail "status $st"

run "stats_print:true,stats_print_pid:1" /bin/true
[ $st -eq 0 ] && [ -z "$err" ] && ok "stats_print_pid: another process prints no report" ||
    fail "stats_print_pid:1: status $st, stderr '$err'"
[ $fails -eq 0 ] || { echo "$fails failed"; exit 1; }
