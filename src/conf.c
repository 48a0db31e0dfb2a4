/* conf.c - ALLOY_CONF parsing (see conf.h).  Reads the environment through
 * `environ` and never allocates, so it can run inside the first malloc. */
#include "conf.h"

#include <string.h>

#include "internal.h"
#include "os.h"

extern char **environ;

/* Link-time default: a program may define `const char *alloy_malloc_conf =
 * "decay_ms:0";`, as jemalloc's malloc_conf. */
__attribute__((weak)) extern const char *alloy_malloc_conf;

/* The defaults: guard policy, 256 KiB / 1024-object batches, return at 2n,
 * thread caches on with 2 MiB each, purge after 1 s, no stats at exit, one
 * heap per CPU, no background thread, no fills, no abort. */
#define CONF_DEFAULTS                                                             \
    {                                                                             \
        {AY_BATCH_GUARD, AY_DEFAULT_BYTE_BUDGET, AY_DEFAULT_OBJECT_CAP}, 4, true, \
            (size_t)2 << 20, 1000, false, 0, false, false, false, false           \
    }

ay_conf_t ay_conf = CONF_DEFAULTS;
static const ay_conf_t conf_defaults = CONF_DEFAULTS;

static void conf_warn(const char *source, const char *what, const char *k, size_t klen,
                      const char *v, size_t vlen) {
    char buf[256];
    size_t n = 0;
#define PUT(s, l)                                              \
    do {                                                       \
        size_t put_l = (l);                                    \
        if (put_l > sizeof buf - 2 - n)                        \
            put_l = sizeof buf - 2 - n;                        \
        memcpy(buf + n, (s), put_l);                           \
        n += put_l;                                            \
    } while (0)
    PUT("alloy: ", 7);
    PUT(source, strlen(source));
    PUT(": ", 2);
    PUT(what, strlen(what));
    PUT(" '", 2);
    PUT(k, klen);
    PUT("'", 1);
    if (v) {
        PUT(" = '", 4);
        PUT(v, vlen);
        PUT("'; keeping the default", 22);
    } else {
        PUT("; ignored", 9);
    }
    buf[n++] = '\n';
#undef PUT
    ay_os_write(2, buf, n);
}

/* Unsigned decimal with an optional k/m/g suffix. */
static int parse_u64(const char *s, size_t len, uint64_t max, uint64_t *out) {
    uint64_t v = 0, mult = 1;
    if (len == 0)
        return -1;
    char last = s[len - 1];
    if (last == 'k' || last == 'K')
        mult = 1024;
    else if (last == 'm' || last == 'M')
        mult = 1024 * 1024;
    else if (last == 'g' || last == 'G')
        mult = 1024 * 1024 * 1024;
    if (mult != 1 && --len == 0)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        if (v > (UINT64_MAX - 9) / 10)
            return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > UINT64_MAX / mult || v * mult > max)
        return -1;
    *out = v * mult;
    return 0;
}

static int parse_bool(const char *s, size_t len, bool *out) {
    if ((len == 4 && !memcmp(s, "true", 4)) || (len == 1 && s[0] == '1')) {
        *out = true;
        return 0;
    }
    if ((len == 5 && !memcmp(s, "false", 5)) || (len == 1 && s[0] == '0')) {
        *out = false;
        return 0;
    }
    return -1;
}

/* Apply one key:value.  Returns 0, -1 for a bad value, -2 for an unknown key. */
static int conf_set(ay_conf_t *c, const char *k, size_t kl, const char *v, size_t vl) {
    uint64_t u;
#define KEY(name) (kl == sizeof(name) - 1 && !memcmp(k, name, kl))
    if (KEY("batch_policy"))
        return ay_policy_parse(v, vl, &c->batch.policy);
    if (KEY("batch_budget")) {
        if (parse_u64(v, vl, (uint64_t)1 << 30, &u) || u < 8)
            return -1;
        c->batch.byte_budget = (uint32_t)u;
        return 0;
    }
    if (KEY("batch_cap")) {
        if (parse_u64(v, vl, 1u << 16, &u) || u < 1)
            return -1;
        c->batch.object_cap = (uint32_t)u;
        return 0;
    }
    if (KEY("return_threshold")) { /* 1.5, 2, 2.5, 3, ... : k in halves */
        uint64_t whole;
        size_t dot = 0;
        while (dot < vl && v[dot] != '.')
            dot++;
        if (parse_u64(v, dot, 64, &whole))
            return -1;
        uint32_t halves = (uint32_t)whole * 2;
        if (dot < vl) {
            if (vl - dot == 2 && v[dot + 1] == '5')
                halves += 1;
            else if (!(vl - dot == 2 && v[dot + 1] == '0'))
                return -1;
        }
        if (halves < 3) /* below 1.5n a list would bounce on every free */
            return -1;
        c->return_k_halves = halves;
        return 0;
    }
    if (KEY("tcache"))
        return parse_bool(v, vl, &c->tcache);
    if (KEY("tcache_max_bytes")) {
        if (parse_u64(v, vl, (uint64_t)1 << 40, &u))
            return -1;
        c->tcache_max_bytes = (size_t)u;
        return 0;
    }
    if (KEY("decay_ms")) {
        if (vl == 2 && !memcmp(v, "-1", 2)) {
            c->decay_ms = -1;
            return 0;
        }
        if (parse_u64(v, vl, (uint64_t)1 << 40, &u))
            return -1;
        c->decay_ms = (int64_t)u;
        return 0;
    }
    if (KEY("stats_print"))
        return parse_bool(v, vl, &c->stats_print);
    if (KEY("heaps")) {
        if (parse_u64(v, vl, 128, &u) || u < 1)
            return -1;
        c->heaps = (uint32_t)u;
        return 0;
    }
    if (KEY("background_thread"))
        return parse_bool(v, vl, &c->background_thread);
    if (KEY("junk"))
        return parse_bool(v, vl, &c->junk);
    if (KEY("zero"))
        return parse_bool(v, vl, &c->zero);
    if (KEY("abort_on_error"))
        return parse_bool(v, vl, &c->abort_on_error);
#undef KEY
    return -2;
}

void ay_conf_apply(ay_conf_t *c, const char *str, const char *source) {
    if (!str)
        return;
    const char *p = str;
    unsigned bad = 0;
    while (*p) {
        const char *item = p;
        while (*p && *p != ',')
            p++;
        size_t len = (size_t)(p - item);
        if (*p == ',')
            p++;
        if (len == 0)
            continue;
        const char *colon = memchr(item, ':', len);
        if (!colon) {
            conf_warn(source, "malformed setting (expected key:value)", item, len, NULL, 0);
            bad++;
            continue;
        }
        size_t kl = (size_t)(colon - item), vl = len - kl - 1;
        int r = conf_set(c, item, kl, colon + 1, vl);
        if (r == -2)
            conf_warn(source, "unknown key", item, kl, NULL, 0);
        else if (r != 0)
            conf_warn(source, "invalid value for", item, kl, colon + 1, vl);
        if (r != 0)
            bad++;
    }
    if (bad && c->abort_on_error)
        ay_fatal("aborting on a bad setting (abort_on_error:true)", str);
}

static const char *env_lookup(const char *name) {
    size_t n = strlen(name);
    if (!environ)
        return NULL;
    for (char **e = environ; *e; e++)
        if (!strncmp(*e, name, n) && (*e)[n] == '=')
            return *e + n + 1;
    return NULL;
}

void ay_conf_init(ay_conf_t *c) {
    *c = conf_defaults;
    if (&alloy_malloc_conf != NULL)
        ay_conf_apply(c, alloy_malloc_conf, "alloy_malloc_conf");
    ay_conf_apply(c, env_lookup("ALLOY_CONF"), "ALLOY_CONF");
}
