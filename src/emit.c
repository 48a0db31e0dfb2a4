/* SPDX-License-Identifier: MIT */
/* emit.c - the stats report's emitter (emit.h): one tree of objects,
 * arrays, tables and values, written as text or as JSON.
 *
 * Invariants: nesting is a stack in the emitter (at most AY_EMIT_DEPTH
 * levels); every open has its close, and a close that does not match its
 * open is a bug of the caller, not of the input.  Nothing is allocated: text
 * goes through ay_fmt in chunks, and a table row is assembled in the
 * emitter's own buffer before it is padded into its columns.  While
 * ay_emit_only() excludes the current format, everything is dropped whole. */
#include "emit.h"

#include <string.h>

enum { K_TOP, K_OBJ, K_INLINE, K_ARRAY, K_TABLE, K_ROW };

#define KEY_WIDTH 24  /* text: "  key:" padded to this, then the value */
#define VALUE_WIDTH 8 /* text: values right-aligned in this many characters */
#define LINE_WRAP 100 /* text: inline objects wrap before this column */

void ay_emit_init(ay_emit_t *e, alloy_write_cb *cb, void *opaque, bool json) {
    memset(e, 0, sizeof *e);
    ay_fmt_init(&e->f, cb, opaque);
    e->json = json;
    e->only = AY_EMIT_BOTH;
    e->first[0] = true;
    e->kind[0] = K_TOP;
    if (json)
        ay_fmt_str(&e->f, "{");
}

void ay_emit_only(ay_emit_t *e, unsigned formats) { e->only = formats; }

static bool dropped(const ay_emit_t *e) {
    return !(e->only & (e->json ? AY_EMIT_JSON : AY_EMIT_TEXT));
}

/* ---- text forms of numbers ---- */

static unsigned put_u64(char *out, uint64_t v) {
    char tmp[24];
    unsigned n = 0, k = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        out[k++] = tmp[--n];
    out[k] = 0;
    return k;
}

void ay_emit_fmt_count(char *out, uint64_t v) { put_u64(out, v); }

void ay_emit_fmt_bytes(char *out, uint64_t v) {
    static const char unit[] = "KMGTPE";
    if (v < 1024) {
        put_u64(out, v);
        return;
    }
    unsigned k = 0;
    while (k < 5 && v >> (10 * (k + 2)))
        k++;
    unsigned shift = 10 * (k + 1);
    unsigned __int128 u = (unsigned __int128)1 << shift, x = v;
    uint64_t x100 = (uint64_t)((x * 100 + u / 2) / u);
    unsigned n;
    if (x100 >= 9995) {
        n = put_u64(out, (uint64_t)((x + u / 2) / u));
    } else if (x100 >= 995) {
        uint64_t x10 = (uint64_t)((x * 10 + u / 2) / u);
        n = put_u64(out, x10 / 10);
        out[n++] = '.';
        out[n++] = (char)('0' + x10 % 10);
    } else {
        n = put_u64(out, x100 / 100);
        out[n++] = '.';
        out[n++] = (char)('0' + x100 / 10 % 10);
        out[n++] = (char)('0' + x100 % 10);
    }
    out[n++] = unit[k];
    out[n] = 0;
}

/* num/den in units of 1/scale, rounded; 0 when den is 0. */
static uint64_t scaled(uint64_t num, uint64_t den, uint64_t scale) {
    if (!den)
        return 0;
    return (uint64_t)(((unsigned __int128)num * scale + den / 2) / den);
}

/* "73.4%" from tenths of a percent, with a sign when `sign`. */
static void put_permille(char *out, int64_t pm, bool sign) {
    unsigned n = 0;
    if (pm < 0)
        out[n++] = '-';
    else if (sign && pm > 0)
        out[n++] = '+';
    uint64_t a = pm < 0 ? (uint64_t)0 - (uint64_t)pm : (uint64_t)pm;
    n += put_u64(out + n, a / 10);
    out[n++] = '.';
    out[n++] = (char)('0' + a % 10);
    out[n++] = '%';
    out[n] = 0;
}

/* A signed change, "+" fmt(|d|) / "-" fmt(|d|) / "0". */
static void put_delta(char *out, int64_t d, bool bytes) {
    if (d == 0) {
        strcpy(out, "0");
        return;
    }
    out[0] = d < 0 ? '-' : '+';
    uint64_t a = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
    if (bytes)
        ay_emit_fmt_bytes(out + 1, a);
    else
        put_u64(out + 1, a);
}

/* ---- layout ---- */

static void spaces(ay_emit_t *e, unsigned n) {
    static const char sp[] = "                                                  ";
    while (n) {
        unsigned k = n < sizeof sp - 1 ? n : (unsigned)sizeof sp - 1;
        ay_fmt_mem(&e->f, sp, k);
        n -= k;
    }
}

static void text(ay_emit_t *e, const char *s) {
    size_t n = strlen(s);
    ay_fmt_mem(&e->f, s, n);
    e->column += (unsigned)n;
}

static void newline(ay_emit_t *e) {
    ay_fmt_str(&e->f, "\n");
    e->column = 0;
    e->lines++;
}

static void indent(ay_emit_t *e, unsigned level) {
    spaces(e, 2 * level);
    e->column += 2 * level;
}

static void json_string(ay_emit_t *e, const char *s) {
    ay_fmt_str(&e->f, "\"");
    for (; *s; s++) {
        char c = *s;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', c};
            ay_fmt_mem(&e->f, esc, 2);
        } else if ((unsigned char)c >= 0x20) {
            ay_fmt_mem(&e->f, &c, 1);
        }
    }
    ay_fmt_str(&e->f, "\"");
}

/* JSON: the separator and key of a member. */
static void json_member(ay_emit_t *e, const char *key) {
    unsigned d = e->depth;
    if (!e->first[d])
        ay_fmt_str(&e->f, ",");
    if (e->kind[d] == K_ARRAY || e->kind[d] == K_TABLE)
        ay_fmt_str(&e->f, "\n");
    if (key) {
        json_string(e, key);
        ay_fmt_str(&e->f, ":");
    }
    e->first[d] = false;
}

/* Text: one right-aligned cell line, the columns' right edges 2 apart. */
static void text_row(ay_emit_t *e, const char *const *cells) {
    unsigned pos = 0, edge = 0;
    indent(e, e->depth);
    for (unsigned i = 0; i < e->ncols; i++) {
        edge += e->cols[i].width + (i ? 2 : 0);
        unsigned len = (unsigned)strlen(cells[i]);
        unsigned start = edge > len ? edge - len : 0;
        if (i && start < pos + 1)
            start = pos + 1; /* too wide for its column: push the rest right */
        spaces(e, start - pos);
        ay_fmt_mem(&e->f, cells[i], len);
        pos = start + len;
    }
    newline(e);
}

/* Text: a member's value, already formatted; `extra` follows it (or NULL). */
static void text_member(ay_emit_t *e, const char *key, const char *value, const char *extra) {
    unsigned d = e->depth;
    switch (e->kind[d]) {
    case K_ROW:
        for (unsigned i = 0; key && i < e->ncols; i++) {
            if (!strcmp(e->cols[i].key, key)) {
                size_t n = strlen(value);
                if (n >= AY_EMIT_CELL)
                    n = AY_EMIT_CELL - 1;
                memcpy(e->cell[i], value, n);
                e->cell[i][n] = 0;
            }
        }
        return;
    case K_INLINE: {
        unsigned len = (unsigned)(strlen(key) + 1 + strlen(value));
        if (!e->first[d])
            text(e, ",");
        if (e->column + 1 + len >= LINE_WRAP) {
            newline(e);
            indent(e, d + 1);
        } else {
            text(e, " ");
        }
        text(e, key);
        text(e, " ");
        text(e, value);
        e->first[d] = false;
        return;
    }
    default: {
        unsigned level = e->kind[d] == K_TOP ? 0 : d;
        indent(e, level);
        if (key) {
            text(e, key);
            text(e, ":");
        }
        unsigned used = 2 * level + (key ? (unsigned)strlen(key) + 1 : 0);
        size_t n = strlen(value);
        unsigned pad = used < KEY_WIDTH ? KEY_WIDTH - used : 1;
        if (n < VALUE_WIDTH)
            pad += VALUE_WIDTH - (unsigned)n;
        spaces(e, pad);
        text(e, value);
        if (extra)
            text(e, extra);
        newline(e);
        e->first[d] = false;
    }
    }
}

static void open(ay_emit_t *e, const char *key, unsigned kind) {
    if (dropped(e))
        return;
    if (e->json) {
        json_member(e, key);
        ay_fmt_str(&e->f, kind == K_ARRAY || kind == K_TABLE ? "[" : "{");
    } else if (kind == K_ROW) {
        for (unsigned i = 0; i < e->ncols; i++)
            e->cell[i][0] = 0;
    } else {
        indent(e, e->depth);
        if (key) {
            text(e, key);
            text(e, ":");
        }
        if (kind != K_INLINE)
            newline(e);
    }
    if (e->depth + 1 < AY_EMIT_DEPTH) {
        e->depth++;
        e->first[e->depth] = true;
        e->kind[e->depth] = (uint8_t)kind;
    }
}

static void close(ay_emit_t *e) {
    if (dropped(e))
        return;
    unsigned kind = e->kind[e->depth];
    if (e->json) {
        if ((kind == K_ARRAY || kind == K_TABLE) && !e->first[e->depth])
            ay_fmt_str(&e->f, "\n");
        ay_fmt_str(&e->f, kind == K_ARRAY || kind == K_TABLE ? "]" : "}");
    } else if (kind == K_INLINE) {
        newline(e);
    } else if (kind == K_ROW && e->depth > 0) {
        const char *cells[AY_EMIT_COLS];
        for (unsigned i = 0; i < e->ncols; i++)
            cells[i] = e->cell[i];
        e->depth--; /* the row sits at its table's indent */
        text_row(e, cells);
        e->depth++;
    }
    if (e->depth > 0)
        e->depth--;
}

void ay_emit_begin(ay_emit_t *e, const char *key) {
    open(e, key, e->kind[e->depth] == K_TABLE ? K_ROW : K_OBJ);
}
void ay_emit_begin_inline(ay_emit_t *e, const char *key) { open(e, key, K_INLINE); }
void ay_emit_end(ay_emit_t *e) { close(e); }
void ay_emit_begin_array(ay_emit_t *e, const char *key) { open(e, key, K_ARRAY); }
void ay_emit_end_array(ay_emit_t *e) { close(e); }

void ay_emit_begin_table(ay_emit_t *e, const char *key, const char *caption,
                         const ay_emit_col_t *cols, unsigned ncols) {
    if (dropped(e))
        return;
    e->cols = cols;
    e->ncols = ncols < AY_EMIT_COLS ? ncols : AY_EMIT_COLS;
    if (e->json) {
        open(e, key, K_TABLE);
        return;
    }
    indent(e, e->depth);
    text(e, key);
    text(e, ":");
    if (caption) {
        text(e, " ");
        text(e, caption);
    }
    newline(e);
    if (e->depth + 1 < AY_EMIT_DEPTH) {
        e->depth++;
        e->first[e->depth] = true;
        e->kind[e->depth] = K_TABLE;
    }
    const char *titles[AY_EMIT_COLS];
    for (unsigned i = 0; i < e->ncols; i++)
        titles[i] = cols[i].title;
    text_row(e, titles);
}

void ay_emit_end_table(ay_emit_t *e) { close(e); }

void ay_emit_line(ay_emit_t *e, const char *s) {
    if (e->json || dropped(e))
        return;
    text(e, s);
    newline(e);
}

/* ---- values ---- */

void ay_emit_u64(ay_emit_t *e, const char *key, uint64_t v) {
    if (dropped(e))
        return;
    char buf[24];
    put_u64(buf, v);
    if (e->json) {
        json_member(e, key);
        ay_fmt_str(&e->f, buf);
    } else {
        text_member(e, key, buf, NULL);
    }
}

void ay_emit_i64(ay_emit_t *e, const char *key, int64_t v) {
    if (dropped(e))
        return;
    char buf[24];
    buf[0] = '-';
    put_u64(v < 0 ? buf + 1 : buf, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    if (e->json) {
        json_member(e, key);
        ay_fmt_str(&e->f, buf);
    } else {
        text_member(e, key, buf, NULL);
    }
}

static void emit_raw_or_string(ay_emit_t *e, const char *key, const char *v, bool quote) {
    if (dropped(e))
        return;
    if (e->json) {
        json_member(e, key);
        if (quote)
            json_string(e, v);
        else
            ay_fmt_str(&e->f, v);
    } else {
        text_member(e, key, v, NULL);
    }
}

void ay_emit_bool(ay_emit_t *e, const char *key, bool v) {
    emit_raw_or_string(e, key, v ? "true" : "false", false);
}

void ay_emit_str(ay_emit_t *e, const char *key, const char *v) {
    emit_raw_or_string(e, key, v, true);
}

void ay_emit_bytes(ay_emit_t *e, const char *key, uint64_t v) {
    if (dropped(e))
        return;
    if (e->json) {
        ay_emit_u64(e, key, v);
        return;
    }
    char buf[24];
    ay_emit_fmt_bytes(buf, v);
    text_member(e, key, buf, NULL);
}

void ay_emit_share(ay_emit_t *e, const char *key, uint64_t v, uint64_t total) {
    ay_emit_share_note(e, key, v, total, NULL);
}

void ay_emit_share_note(ay_emit_t *e, const char *key, uint64_t v, uint64_t total,
                        const char *note) {
    if (dropped(e))
        return;
    if (e->json) {
        ay_emit_u64(e, key, v);
        return;
    }
    char buf[24], pct[24], extra[96];
    ay_emit_fmt_bytes(buf, v);
    put_permille(pct, (int64_t)scaled(v, total, 1000), false);
    size_t n = strlen(pct);
    memset(extra, ' ', sizeof extra);
    memcpy(extra + 8 - n, pct, n + 1); /* right-aligned in 8 */
    if (note) {
        size_t m = strlen(note), room = sizeof extra - 8 - 5; /* "  (", ")" and its NUL */
        m = m < room ? m : room;
        memcpy(extra + 8, "  (", 3);
        memcpy(extra + 11, note, m);
        memcpy(extra + 11 + m, ")", 2);
    }
    text_member(e, key, buf, extra);
}

/* Four decimal places of x / 10000, with a sign when negative. */
static void put_decimal4(char *out, int64_t x) {
    unsigned n = 0;
    if (x < 0)
        out[n++] = '-';
    uint64_t a = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
    n += put_u64(out + n, a / 10000);
    out[n++] = '.';
    for (uint64_t div = 1000; div; div /= 10)
        out[n++] = (char)('0' + a / div % 10);
    out[n] = 0;
}

void ay_emit_ratio(ay_emit_t *e, const char *key, uint64_t num, uint64_t den) {
    if (dropped(e))
        return;
    char buf[32];
    if (e->json) {
        put_decimal4(buf, (int64_t)scaled(num, den, 10000));
        emit_raw_or_string(e, key, buf, false);
        return;
    }
    if (den)
        put_permille(buf, (int64_t)scaled(num, den, 1000), false);
    else
        strcpy(buf, "-");
    text_member(e, key, buf, NULL);
}

/* A signed change: the number in JSON, put_delta's "+N" / "-N" / "0" in text. */
static void emit_delta(ay_emit_t *e, const char *key, int64_t d, bool bytes) {
    if (dropped(e))
        return;
    if (e->json) {
        ay_emit_i64(e, key, d);
        return;
    }
    char buf[32];
    put_delta(buf, d, bytes);
    text_member(e, key, buf, NULL);
}

void ay_emit_dcount(ay_emit_t *e, const char *key, int64_t d) { emit_delta(e, key, d, false); }
void ay_emit_dbytes(ay_emit_t *e, const char *key, int64_t d) { emit_delta(e, key, d, true); }

void ay_emit_dratio(ay_emit_t *e, const char *key, uint64_t an, uint64_t ad, uint64_t bn,
                    uint64_t bd) {
    if (dropped(e))
        return;
    char buf[32];
    if (e->json) {
        put_decimal4(buf, (int64_t)scaled(bn, bd, 10000) - (int64_t)scaled(an, ad, 10000));
        emit_raw_or_string(e, key, buf, false);
        return;
    }
    int64_t d = (int64_t)scaled(bn, bd, 1000) - (int64_t)scaled(an, ad, 1000);
    if (d == 0)
        strcpy(buf, "0");
    else
        put_permille(buf, d, true);
    text_member(e, key, buf, NULL);
}

void ay_emit_change(ay_emit_t *e, const char *key, bool bytes, uint64_t a, uint64_t b) {
    if (dropped(e))
        return;
    if (e->json) {
        json_member(e, key);
        ay_fmt_str(&e->f, "{\"from\":");
        char buf[24];
        put_u64(buf, a);
        ay_fmt_str(&e->f, buf);
        ay_fmt_str(&e->f, ",\"to\":");
        put_u64(buf, b);
        ay_fmt_str(&e->f, buf);
        ay_fmt_str(&e->f, "}");
        return;
    }
    char va[24], vb[24], d[32], rest[96];
    if (bytes) {
        ay_emit_fmt_bytes(va, a);
        ay_emit_fmt_bytes(vb, b);
    } else {
        put_u64(va, a);
        put_u64(vb, b);
    }
    int64_t diff = (int64_t)(b - a);
    put_delta(d, diff, bytes);
    /* rest = " -> " vb (right-aligned in 8) "  (" d ")" */
    size_t n = 0, lb = strlen(vb);
    memcpy(rest, " -> ", 4);
    n = 4;
    for (size_t k = lb; k < VALUE_WIDTH; k++)
        rest[n++] = ' ';
    memcpy(rest + n, vb, lb);
    n += lb;
    memcpy(rest + n, "  (", 3);
    n += 3;
    size_t ld = strlen(d);
    memcpy(rest + n, d, ld);
    n += ld;
    rest[n++] = ')';
    rest[n] = 0;
    text_member(e, key, va, rest);
}

void ay_emit_finish(ay_emit_t *e) {
    ay_fmt_str(&e->f, e->json ? "}\n" : "");
    ay_fmt_flush(&e->f);
}
