/* emit.c - see emit.h.  Text: two spaces of indent per level, array elements
 * numbered "[i]".  JSON: compact members, one object per line in arrays. */
#include "emit.h"

void ay_emit_init(ay_emit_t *e, alloy_write_cb *cb, void *opaque, bool json) {
    ay_fmt_init(&e->f, cb, opaque);
    e->json = json;
    e->depth = 0;
    e->first[0] = true;
    e->array[0] = false;
    if (json)
        ay_fmt_str(&e->f, "{");
}

static void indent(ay_emit_t *e) {
    for (unsigned i = 1; i < e->depth; i++)
        ay_fmt_str(&e->f, "  ");
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

/* Start a member: separator and key. */
static void member(ay_emit_t *e, const char *key) {
    unsigned d = e->depth;
    if (e->json) {
        if (!e->first[d])
            ay_fmt_str(&e->f, ",");
        if (key) {
            json_string(e, key);
            ay_fmt_str(&e->f, ":");
        }
    } else {
        indent(e);
        if (key) {
            ay_fmt_str(&e->f, key);
            ay_fmt_str(&e->f, ": ");
        } else if (e->array[d]) {
            ay_fmt_str(&e->f, "[");
            ay_fmt_u64(&e->f, e->index[d]++);
            ay_fmt_str(&e->f, "]");
        }
    }
    e->first[d] = false;
}

static void open(ay_emit_t *e, const char *key, bool array) {
    if (e->json) {
        member(e, key);
        ay_fmt_str(&e->f, array ? "[" : "{");
    } else if (key) { /* "key:" on a line of its own */
        indent(e);
        ay_fmt_str(&e->f, key);
        ay_fmt_str(&e->f, ":\n");
    } else {
        member(e, NULL);
        ay_fmt_str(&e->f, "\n");
    }
    if (e->depth + 1 < AY_EMIT_DEPTH) {
        e->depth++;
        e->first[e->depth] = true;
        e->array[e->depth] = array;
        e->index[e->depth] = 0;
    }
}

static void close(ay_emit_t *e, bool array) {
    if (e->json)
        ay_fmt_str(&e->f, array ? "]" : "}");
    if (e->depth > 0)
        e->depth--;
}

void ay_emit_begin(ay_emit_t *e, const char *key) { open(e, key, false); }
void ay_emit_end(ay_emit_t *e) { close(e, false); }
void ay_emit_begin_array(ay_emit_t *e, const char *key) { open(e, key, true); }
void ay_emit_end_array(ay_emit_t *e) { close(e, true); }

static void value_end(ay_emit_t *e) {
    if (!e->json)
        ay_fmt_str(&e->f, "\n");
}

void ay_emit_u64(ay_emit_t *e, const char *key, uint64_t v) {
    member(e, key);
    ay_fmt_u64(&e->f, v);
    value_end(e);
}

void ay_emit_i64(ay_emit_t *e, const char *key, int64_t v) {
    member(e, key);
    if (v < 0) {
        ay_fmt_str(&e->f, "-");
        ay_fmt_u64(&e->f, (uint64_t)0 - (uint64_t)v);
    } else {
        ay_fmt_u64(&e->f, (uint64_t)v);
    }
    value_end(e);
}

void ay_emit_bool(ay_emit_t *e, const char *key, bool v) {
    member(e, key);
    ay_fmt_str(&e->f, v ? "true" : "false");
    value_end(e);
}

void ay_emit_str(ay_emit_t *e, const char *key, const char *v) {
    member(e, key);
    if (e->json)
        json_string(e, v);
    else
        ay_fmt_str(&e->f, v);
    value_end(e);
}

void ay_emit_finish(ay_emit_t *e) {
    ay_fmt_str(&e->f, e->json ? "}\n" : "");
    ay_fmt_flush(&e->f);
}
