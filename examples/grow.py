# SPDX-License-Identifier: MIT
"""grow.py - a program whose memory grows in phases, for the session of
docs/OBSERVING.md (the timeline, its chart and alloy top).

    PYTHONMALLOC=malloc build/alloy run --timeline grow.jsonl --live -- \\
        /usr/bin/python3 examples/grow.py [PAUSE_S]

  phase 1  300 000 small strings (a word list)
  phase 2  a cache that only grows: 25 000 values of 4000 bytes (~100 MB),
           added over about a second
  phase 3  the word list is dropped; the cache stays

Each phase is followed by a pause of PAUSE_S seconds (default 1.5).
PYTHONMALLOC=malloc makes CPython take every object from malloc, so that
alloy sees them all; without it, CPython's own allocator serves the small
objects from memory it maps itself, which alloy's breakdown cannot see (but
RSS does).
"""
import sys
import time

pause = float(sys.argv[1]) if len(sys.argv) > 1 else 1.5

words = [str(i) * 3 for i in range(300000)]
time.sleep(pause)

cache = {}
for i in range(25000):
    cache[i] = bytes(4000)
    if i % 1000 == 999:
        time.sleep(0.04)
time.sleep(pause)

del words
time.sleep(pause)
print("cache of %d values" % len(cache))
