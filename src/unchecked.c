/* SPDX-License-Identifier: MIT */
/* unchecked.c - the copies alloy's own code calls in the secure flavour
 * (unchecked.h renames memcpy and its kin to these): glibc's fortified
 * entry points with no bound (SIZE_MAX), which copy as the plain names do.
 * Hidden: nothing outside liballoy calls them.  Built with -fno-builtin,
 * as checked.c is, or GCC would fold __memcpy_chk with no bound back into
 * memcpy, the exported checked copy.  The release and debug flavours
 * define nothing here.  (It includes no header of alloy's: internal.h
 * would rename the very names it defines.) */
#if defined(AY_SECURE) && AY_SECURE
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define UNCHECKED __attribute__((visibility("hidden")))

extern void *__memcpy_chk(void *dst, const void *src, size_t n, size_t destlen);
extern void *__memmove_chk(void *dst, const void *src, size_t n, size_t destlen);
extern void *__memset_chk(void *dst, int c, size_t n, size_t destlen);
extern char *__strcpy_chk(char *dst, const char *src, size_t destlen);
extern char *__strcat_chk(char *dst, const char *src, size_t destlen);
extern char *__strncpy_chk(char *dst, const char *src, size_t n, size_t destlen);
extern ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
extern ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);

UNCHECKED void *ay_unchecked_memcpy(void *restrict dst, const void *restrict src, size_t n) {
    return __memcpy_chk(dst, src, n, SIZE_MAX);
}

UNCHECKED void *ay_unchecked_memmove(void *dst, const void *src, size_t n) {
    return __memmove_chk(dst, src, n, SIZE_MAX);
}

UNCHECKED void *ay_unchecked_memset(void *dst, int c, size_t n) {
    return __memset_chk(dst, c, n, SIZE_MAX);
}

UNCHECKED char *ay_unchecked_strcpy(char *restrict dst, const char *restrict src) {
    return __strcpy_chk(dst, src, SIZE_MAX);
}

UNCHECKED char *ay_unchecked_strcat(char *restrict dst, const char *restrict src) {
    return __strcat_chk(dst, src, SIZE_MAX);
}

UNCHECKED char *ay_unchecked_strncpy(char *restrict dst, const char *restrict src, size_t n) {
    return __strncpy_chk(dst, src, n, SIZE_MAX);
}

UNCHECKED ssize_t ay_unchecked_read(int fd, void *buf, size_t n) {
    return __read_chk(fd, buf, n, SIZE_MAX);
}

UNCHECKED ssize_t ay_unchecked_recv(int fd, void *buf, size_t n, int flags) {
    return __recv_chk(fd, buf, n, SIZE_MAX, flags);
}
#endif
