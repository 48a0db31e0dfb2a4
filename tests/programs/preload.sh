#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# preload.sh - real programs under LD_PRELOAD=liballoy.so must print exactly
# what they print on glibc.  Usage: preload.sh <build dir>
set -u
build=$(cd "$1" && pwd)
lib="$build/liballoy.so"
fail=0
pass=0
compare() { # name, command...
    local name=$1; shift
    local want got
    want=$("$@" 2>&1); local rc_want=$?
    got=$(LD_PRELOAD="$lib" "$@" 2>&1); local rc_got=$?
    if [ "$want" == "$got" ] && [ $rc_want -eq $rc_got ]; then
        pass=$((pass + 1)); echo "ok: $name"
    else
        fail=$((fail + 1)); echo "FAIL: $name (rc $rc_want vs $rc_got)"
        diff <(echo "$want") <(echo "$got") | head -20
    fi
}
py=/usr/bin/python3
compare "python3 dict/json/threads/sort" "$py" -c '
import json, threading, random, collections, re
random.seed(7)
d = {str(i): [random.random() for _ in range(i % 13)] for i in range(60000)}
s = json.dumps(d, sort_keys=True)
out = collections.Counter(re.findall(r"\d", s))
res = []
def work(k):
    res.append(sum(len(str(x)) for x in range(k * 20000)))
ts = [threading.Thread(target=work, args=(k,)) for k in range(6)]
[t.start() for t in ts]; [t.join() for t in ts]
print(len(s), sorted(out.items())[:5], sorted(res))'
compare "C++ STL-heavy program" "$build/stl_heavy"
compare "threaded C program" "$build/threaded_prog"
compare "sort of 200k lines" bash -c 'seq 200000 | awk "{print (\$1*7919)%100003}" | sort | uniq -c | sort -n | tail -3'
compare "python3 subprocess + fork" "$py" -c '
import subprocess, os
out = subprocess.run(["echo", "child"], capture_output=True, text=True).stdout
pid = os.fork()
if pid == 0:
    os._exit(len([bytes(100) for _ in range(10000)]) % 7)
_, st = os.waitpid(pid, 0)
print(out.strip(), os.waitstatus_to_exitcode(st))'
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
