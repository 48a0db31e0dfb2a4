/* SPDX-License-Identifier: MIT */
/* emit.h - one emitter, two formats: the stats report is written once, as
 * a tree of named objects, arrays, tables and values, and comes out as text
 * for people or as JSON for programs.  No allocation: output goes through
 * ay_fmt, and a table row is built in the emitter itself.
 *
 * Text:
 *   - an object is its key on a line ("stats:"), then one member per line,
 *     indented two spaces, the values right-aligned in one column;
 *   - an inline object is "key: name value, name value, ..." on one line,
 *     wrapped before 100 columns;
 *   - a table (an array of rows, each an object) is its key and caption on a
 *     line, a header of column titles, then one line per row with the
 *     members named by the columns right-aligned under their titles; members
 *     that no column names are left out of the text;
 *   - bytes are written in binary units (512, 2.64K, 14.1M, 408M: three
 *     digits, K = 1024), ratios as percentages, shares of a total after
 *     the value.
 * JSON: every member, whatever its text form; bytes and counts as integers,
 * ratios as decimals from 0 to 1 (four places); each element of an array on
 * a line of its own.
 * What is emitted while ay_emit_only() excludes the current format is
 * dropped whole, so a report can give text a shorter view of the same tree.
 */
#ifndef ALLOY_EMIT_H
#define ALLOY_EMIT_H
#include <stdbool.h>
#include <stdint.h>

#include "fmt.h"

#define AY_EMIT_DEPTH 8
#define AY_EMIT_COLS 16 /* columns of a table at most */
#define AY_EMIT_CELL 24 /* characters of one table cell at most */

enum { AY_EMIT_TEXT = 1, AY_EMIT_JSON = 2, AY_EMIT_BOTH = 3 };

/* One column of a table: the member it shows, its title, its width. */
typedef struct ay_emit_col {
    const char *key;
    const char *title;
    unsigned width;
} ay_emit_col_t;

typedef struct ay_emit {
    ay_fmt_t f;
    bool json;
    unsigned only; /* formats that see what is emitted now */
    unsigned depth;
    bool first[AY_EMIT_DEPTH];   /* no member written yet at this depth */
    uint8_t kind[AY_EMIT_DEPTH]; /* what the container at this depth is */
    unsigned column;             /* text: characters on the current line */
    unsigned lines;              /* text: lines written so far */
    const ay_emit_col_t *cols;   /* the table being written */
    unsigned ncols;
    char cell[AY_EMIT_COLS][AY_EMIT_CELL]; /* text: the row being built */
} ay_emit_t;

void ay_emit_init(ay_emit_t *e, alloy_write_cb *cb, void *opaque, bool json);
/* What follows is seen only by these formats (AY_EMIT_TEXT, _JSON, _BOTH).
 * Change it only between whole members. */
void ay_emit_only(ay_emit_t *e, unsigned formats);
/* A line of its own, as is (text; JSON never sees it). */
void ay_emit_line(ay_emit_t *e, const char *text);

/* An object (key NULL inside arrays), closed by ay_emit_end. */
void ay_emit_begin(ay_emit_t *e, const char *key);
/* An object whose members text writes on one line; closed by ay_emit_end. */
void ay_emit_begin_inline(ay_emit_t *e, const char *key);
void ay_emit_end(ay_emit_t *e);
void ay_emit_begin_array(ay_emit_t *e, const char *key);
void ay_emit_end_array(ay_emit_t *e);
/* An array whose elements are rows (ay_emit_begin(e, NULL) ... ay_emit_end):
 * text shows the columns' members as aligned columns under a header; JSON
 * writes each row as an object of all its members.  caption (may be NULL)
 * follows the key on the title line.  cols must outlive the table. */
void ay_emit_begin_table(ay_emit_t *e, const char *key, const char *caption,
                         const ay_emit_col_t *cols, unsigned ncols);
void ay_emit_end_table(ay_emit_t *e);

void ay_emit_u64(ay_emit_t *e, const char *key, uint64_t v);
void ay_emit_i64(ay_emit_t *e, const char *key, int64_t v);
void ay_emit_bool(ay_emit_t *e, const char *key, bool v);
void ay_emit_str(ay_emit_t *e, const char *key, const char *v);
/* A number of bytes: text in binary units, JSON exact. */
void ay_emit_bytes(ay_emit_t *e, const char *key, uint64_t v);
/* Bytes that are part of `total`: text adds their share as a percentage. */
void ay_emit_share(ay_emit_t *e, const char *key, uint64_t v, uint64_t total);
/* The same, with a note after the share in text, in parentheses (NULL:
 * none); JSON has the value alone. */
void ay_emit_share_note(ay_emit_t *e, const char *key, uint64_t v, uint64_t total,
                        const char *note);
/* num / den: text a percentage ("-" when den is 0), JSON a decimal (0). */
void ay_emit_ratio(ay_emit_t *e, const char *key, uint64_t num, uint64_t den);

/* Differences (text): a change d, written with its sign ("+1.50K", "-3", "0"). */
void ay_emit_dcount(ay_emit_t *e, const char *key, int64_t d);
void ay_emit_dbytes(ay_emit_t *e, const char *key, int64_t d);
/* The change from an/ad to bn/bd, in percentage points ("+3.2%"). */
void ay_emit_dratio(ay_emit_t *e, const char *key, uint64_t an, uint64_t ad, uint64_t bn,
                    uint64_t bd);
/* "key:  A -> B  (+d)" on a line (bytes when `bytes`, else counts). */
void ay_emit_change(ay_emit_t *e, const char *key, bool bytes, uint64_t a, uint64_t b);

/* Close the document and flush. */
void ay_emit_finish(ay_emit_t *e);

/* Text forms, for anyone who lays out numbers the same way; each writes a
 * NUL-terminated string of at most 23 characters into out[24]. */
void ay_emit_fmt_bytes(char *out, uint64_t v);
void ay_emit_fmt_count(char *out, uint64_t v);

#endif
