/* SPDX-License-Identifier: MIT */
/* vec.c - alloy_vec_t: a growable array on a memory resource.
 *
 * Growth doubles the capacity (at least 4 elements), computed with
 * overflow checks.  Resources have no realloc, so growing allocates the new
 * block, copies, and gives the old block back with the size and alignment
 * it was allocated with, as the resource contract requires.
 *
 * Invariants: len <= cap; data == NULL exactly when cap == 0; a call that
 * fails leaves data, len and cap untouched.
 */
#include <alloy/vec.h>

#include <errno.h>
#include <string.h>

#include "hot.h"

ALLOY_API void alloy_vec_init(alloy_vec_t *v, size_t elem_size, size_t elem_align,
                              alloy_resource_t *res) {
    v->data = NULL;
    v->len = v->cap = 0;
    v->elem_size = elem_size != 0 ? elem_size : 1;
    v->elem_align = ay_hot_is_pow2(elem_align) ? elem_align : AY_HOT_MALLOC_ALIGN;
    v->res = res != NULL ? res : alloy_default_resource();
}

ALLOY_API void alloy_vec_destroy(alloy_vec_t *v) {
    if (v->data != NULL)
        alloy_resource_deallocate(v->res, v->data, v->cap * v->elem_size, v->elem_align);
    v->data = NULL;
    v->len = v->cap = 0;
}

/* Move to exactly `cap` elements (cap >= len). */
static int vec_realloc(alloy_vec_t *v, size_t cap) {
    size_t bytes;
    if (!ay_hot_mul(cap, v->elem_size, &bytes))
        return EOVERFLOW;
    void *data = alloy_resource_allocate(v->res, bytes, v->elem_align);
    if (data == NULL)
        return ENOMEM;
    if (v->len != 0)
        memcpy(data, v->data, v->len * v->elem_size);
    if (v->data != NULL)
        alloy_resource_deallocate(v->res, v->data, v->cap * v->elem_size, v->elem_align);
    v->data = data;
    v->cap = cap;
    return 0;
}

ALLOY_API int alloy_vec_reserve(alloy_vec_t *v, size_t n) {
    if (n <= v->cap)
        return 0;
    return vec_realloc(v, n);
}

/* Room for one more: double, at least 4. */
static int vec_grow(alloy_vec_t *v) {
    size_t cap = v->cap < 4 ? 4 : v->cap;
    if (v->cap >= 4 && !ay_hot_mul(v->cap, 2, &cap))
        return EOVERFLOW;
    return vec_realloc(v, cap);
}

ALLOY_API int alloy_vec_resize(alloy_vec_t *v, size_t n) {
    if (n > v->cap) {
        int err = vec_realloc(v, n);
        if (err != 0)
            return err;
    }
    if (n > v->len)
        memset((char *)v->data + v->len * v->elem_size, 0, (n - v->len) * v->elem_size);
    v->len = n;
    return 0;
}

ALLOY_API int alloy_vec_push(alloy_vec_t *v, const void *elem) {
    if (ALLOY_UNLIKELY(v->len == v->cap)) {
        int err = vec_grow(v);
        if (err != 0)
            return err;
    }
    memcpy((char *)v->data + v->len * v->elem_size, elem, v->elem_size);
    v->len++;
    return 0;
}

ALLOY_API void alloy_vec_clear(alloy_vec_t *v) { v->len = 0; }
