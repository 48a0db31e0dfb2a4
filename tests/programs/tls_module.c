/* SPDX-License-Identifier: MIT */
/* tls_module.c - a small shared module with thread-local storage, loaded by
 * test_dlopen to make the C library allocate TLS blocks at dlopen time. */
#include <stdlib.h>
static __thread int counter[1024];
__attribute__((visibility("default"))) int *tls_counter(void) {
    void *p = malloc(64);
    free(p);
    counter[3]++;
    return counter;
}
