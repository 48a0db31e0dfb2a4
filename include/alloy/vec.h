/* SPDX-License-Identifier: MIT */
/* alloy/vec.h - alloy_vec_t, a growable array whose storage comes from a
 * memory resource chosen at run time.
 *
 * This is seed 000's point about std::pmr::vector<double>: it is one type
 * whatever resource backs it, so a function such as
 *
 *     double path_mean(const alloy_vec_t *path);
 *
 * accepts vectors on malloc, on a stack arena, on a pool or on anything else
 * without templates or one copy of the code per allocator.
 *
 * The element type is fixed at init by its size and alignment; the typed
 * macros check the size on every access path they give (ALLOY_VEC_ITEMS
 * yields NULL for the wrong type, so a mix-up faults at once).
 *
 * Invariants: len <= cap; data is NULL exactly when cap is 0; data holds
 * cap * elem_size bytes from res, aligned to elem_align.  A failed call
 * (ENOMEM or EOVERFLOW) leaves the vector unchanged.
 */
#ifndef ALLOY_VEC_H
#define ALLOY_VEC_H

#include <errno.h>
#include <stddef.h>

#include <alloy/resource.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct alloy_vec {
    void *data;            /* cap * elem_size bytes, or NULL */
    size_t len;            /* elements in use */
    size_t cap;            /* elements allocated */
    size_t elem_size;      /* bytes per element, > 0 */
    size_t elem_align;     /* power of two */
    alloy_resource_t *res; /* where data comes from; never NULL */
} alloy_vec_t;

/* res NULL: the default resource.  Allocates nothing. */
ALLOY_API void alloy_vec_init(alloy_vec_t *v, size_t elem_size, size_t elem_align,
                              alloy_resource_t *res);
/* Give the storage back to the resource; the vector is empty afterwards. */
ALLOY_API void alloy_vec_destroy(alloy_vec_t *v);
/* Make room for n elements.  0, ENOMEM or EOVERFLOW. */
ALLOY_API int alloy_vec_reserve(alloy_vec_t *v, size_t n);
/* Set len to n; new elements are zero bytes (like std::vector<T>(n)). */
ALLOY_API int alloy_vec_resize(alloy_vec_t *v, size_t n);
/* Append a copy of elem_size bytes at elem. */
ALLOY_API int alloy_vec_push(alloy_vec_t *v, const void *elem);
/* Drop every element; keeps the storage. */
ALLOY_API void alloy_vec_clear(alloy_vec_t *v);

static inline size_t alloy_vec_len(const alloy_vec_t *v) { return v->len; }
/* The data as T *, or NULL when elem_size is not sizeof(T). */
static inline void *alloy_vec_items_sized(const alloy_vec_t *v, size_t elem_size) {
    return v->elem_size == elem_size ? v->data : NULL;
}

#define ALLOY_VEC_INIT(v, T, res) alloy_vec_init((v), sizeof(T), _Alignof(T), (res))
#define ALLOY_VEC_ITEMS(v, T) ((T *)alloy_vec_items_sized((v), sizeof(T)))
#define ALLOY_VEC_PUSH(v, T, value)                                                                \
    (sizeof(T) == (v)->elem_size ? alloy_vec_push((v), &(T){(value)}) : EINVAL)

#ifdef __cplusplus
}
#endif
#endif
