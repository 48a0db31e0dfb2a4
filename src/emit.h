/* emit.h - one emitter, two formats: the stats report is written once, as
 * a tree of named objects, arrays and values, and comes out as indented
 * "key: value" text or as JSON.  No allocation; output goes through ay_fmt. */
#ifndef ALLOY_EMIT_H
#define ALLOY_EMIT_H
#include <stdbool.h>
#include <stdint.h>

#include "fmt.h"

#define AY_EMIT_DEPTH 8

typedef struct ay_emit {
    ay_fmt_t f;
    bool json;
    unsigned depth;
    bool first[AY_EMIT_DEPTH];   /* no member written yet at this depth */
    bool array[AY_EMIT_DEPTH];   /* the container at this depth is an array */
    unsigned index[AY_EMIT_DEPTH]; /* text: element number in an array */
} ay_emit_t;

void ay_emit_init(ay_emit_t *e, alloy_write_cb *cb, void *opaque, bool json);
/* An object (key NULL inside arrays), closed by ay_emit_end. */
void ay_emit_begin(ay_emit_t *e, const char *key);
void ay_emit_end(ay_emit_t *e);
void ay_emit_begin_array(ay_emit_t *e, const char *key);
void ay_emit_end_array(ay_emit_t *e);
void ay_emit_u64(ay_emit_t *e, const char *key, uint64_t v);
void ay_emit_i64(ay_emit_t *e, const char *key, int64_t v);
void ay_emit_bool(ay_emit_t *e, const char *key, bool v);
void ay_emit_str(ay_emit_t *e, const char *key, const char *v);
/* Close the document and flush. */
void ay_emit_finish(ay_emit_t *e);

#endif
