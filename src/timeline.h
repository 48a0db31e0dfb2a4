/* SPDX-License-Identifier: MIT */
/* timeline.h - memory over time: the timeline file (timeline_file) and the
 * live snapshot (stats_shm, shm.h), both taken by the background thread
 * every timeline_ms.
 *
 * Started by the library's constructor when either setting is on: the
 * background thread is started for it (background.h), and purges only if
 * background_thread is on too.  Each round takes one snapshot (ay_snap_t):
 * the stats totals and the resident breakdown, the process's RSS from
 * /proc/self/statm, rates over the last interval, the first tier's mode and
 * per-CPU caches' figures, the size classes with the most unused bytes, and with the profiler on its stacks with the most live
 * bytes.  The timeline appends it to the file as one line of JSON (schema
 * in docs/OBSERVING.md), and the live snapshot publishes it in the segment.
 *
 * Invariants:
 *   - nothing is allocated from the program's heaps: the record buffer and
 *     the per-class table come from metadata memory (meta.h), the text is
 *     formatted without stdio, and the files are written with os.h calls;
 *   - the buffer is bounded (AY_TIMELINE_BUF): records are flushed at least
 *     every second and whenever it is half full, and at exit;
 *   - a write that fails (a full disk, the file-size limit) or a file the
 *     program closed (its descriptor no longer names the file that was
 *     opened) stops the recording with one warning; the program is never
 *     disturbed, and a descriptor it reused is never written;
 *   - the timeline never overwrites a file (O_EXCL): a file that exists
 *     gives one warning and no recording;
 *   - only the process that started recording writes: a fork child has no
 *     background thread and leaves the file and the segment alone;
 *   - one lock (a leaf, outside the allocator's order: nothing of the
 *     allocator is held while it is taken) serialises a round against the
 *     final record at exit.
 */
#ifndef ALLOY_TIMELINE_H
#define ALLOY_TIMELINE_H
#include <stdbool.h>
#include <stdint.h>

#include "shm.h"

#define AY_TIMELINE_BUF ((size_t)64 << 10) /* bytes of records held before a write */

/* One class's bytes, as the timeline's "classes" records carry them. */
typedef struct ay_timeline_class {
    uint64_t span_bytes, in_use;
} ay_timeline_class_t;

/* Take a snapshot of the process now: every field of *s but seq, t_ms,
 * interval_ms, the rates and the RSS history, which the recorder keeps.
 * classes (NULL, or AY_NUM_CLASSES entries) gets every class's bytes. */
void ay_timeline_collect(ay_snap_t *s, ay_timeline_class_t *classes);

/* Records written to the timeline file so far (the header not counted). */
uint64_t ay_timeline_records(void);
/* The timeline file's path ("" when there is none). */
const char *ay_timeline_path(void);
/* The live snapshot's segment in this process, or NULL (before the first
 * round, or without stats_shm). */
const ay_shm_seg_t *ay_timeline_segment(void);

#endif
