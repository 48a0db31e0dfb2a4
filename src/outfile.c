/* SPDX-License-Identifier: MIT */
/* outfile.c - the files alloy writes reports to (see outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <string.h>

#include "error.h"
#include "fmt.h"
#include "os.h"

int ay_outfile_path(char *out, size_t cap, const char *tmpl, unsigned pid) {
    size_t n = 0;
    for (; *tmpl && n + 24 < cap; tmpl++) {
        if (tmpl[0] == '%' && tmpl[1] == 'p') {
            char d[24];
            int k = 0;
            unsigned v = pid;
            do
                d[k++] = (char)('0' + v % 10);
            while ((v /= 10) != 0);
            while (k > 0)
                out[n++] = d[--k];
            tmpl++;
        } else {
            out[n++] = *tmpl;
        }
    }
    out[n] = 0;
    return *tmpl ? -ENAMETOOLONG : 0;
}

int ay_outfile_create(const char *path) {
    return ay_os_open(path, AY_OUTFILE_FLAGS | O_CREAT | O_EXCL, 0644);
}

const char *ay_outfile_reason(int err) {
    switch (err) {
    case ENOSPC: return "no space left on device";
    case EDQUOT: return "disk quota exceeded";
    case EFBIG: return "file too large: the file-size limit";
    case EEXIST: return "it exists; alloy never overwrites a file";
    case ENOENT: return "no such directory";
    case ENOTDIR: return "a part of the path is not a directory";
    case EISDIR: return "it is a directory";
    case ELOOP: return "a symbolic link, which alloy does not follow";
    case EACCES:
    case EPERM: return "permission denied";
    case EROFS: return "read-only file system";
    case EIO: return "input/output error";
    case ENAMETOOLONG: return "name too long";
    default: return "error";
    }
}

/* ENOENT from open(O_CREAT) means a missing directory, or a directory
 * that takes no new files: /proc, /sys and the kernel's other file systems
 * (their files are the kernel's).  Which one, for `path`'s directory. */
static const char *reason_at(const char *path, int err) {
    if (err != ENOENT)
        return ay_outfile_reason(err);
    char dir[1024];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;
    if (!slash || n >= sizeof dir)
        return ay_outfile_reason(err);
    memcpy(dir, path, n);
    dir[n ? n : 1] = 0;
    if (!n)
        dir[0] = '/';
    int fd = ay_os_open(dir, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0)
        return ay_outfile_reason(err);
    ay_os_close(fd);
    return "the directory exists but no file can be created in it: a kernel file system, "
           "as /proc and /sys are";
}

void ay_outfile_warn(const char *who, const char *before, const char *file, const char *after,
                     int err, const char *then) {
    ay_fmt_t f;
    ay_msg_begin(&f);
    ay_fmt_str(&f, who);
    ay_fmt_str(&f, ": ");
    ay_fmt_str(&f, before);
    ay_fmt_str(&f, file);
    ay_fmt_str(&f, after);
    if (err) {
        const char *why = reason_at(file, err);
        ay_fmt_str(&f, " (");
        ay_fmt_str(&f, why);
        if (!strcmp(why, "error")) {
            ay_fmt_str(&f, " ");
            ay_fmt_u64(&f, (uint64_t)err);
        }
        ay_fmt_str(&f, ")");
    }
    ay_fmt_str(&f, then);
    ay_msg_end(&f);
}
