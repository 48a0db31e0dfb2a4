/* SPDX-License-Identifier: MIT */
/* symbolize.c - addresses to names through ELF symbol tables and addr2line
 * (see symbolize.h).  Only libc: the `alloy` command compiles this file too.
 * Invariants: no malloc and no state kept between calls; every file mapped
 * and every buffer mapped is unmapped before ay_symbolize returns, and
 * every child started is waited for; a field that cannot be filled stays
 * empty. */
#define _GNU_SOURCE
#include "symbolize.h"
#include "unchecked.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ---- /proc/PID/maps ---- */

typedef struct map_line {
    uintptr_t start, end, offset;
    const char *path; /* not NUL-terminated: path_len bytes */
    size_t path_len;
} map_line_t;

static uintptr_t parse_hex(const char **p, const char *end) {
    uintptr_t v = 0;
    for (; *p < end; (*p)++) {
        char c = **p;
        unsigned d = c >= '0' && c <= '9'   ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d == 16)
            break;
        v = v * 16 + d;
    }
    return v;
}

/* The mapping of a file that holds pc, or 0. */
static int find_map(const char *maps, size_t len, uintptr_t pc, map_line_t *out) {
    const char *p = maps, *end = maps + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *q = p;
        map_line_t m;
        m.start = parse_hex(&q, eol);
        if (q < eol && *q == '-') {
            q++;
            m.end = parse_hex(&q, eol);
            while (q < eol && *q == ' ')
                q++;
            while (q < eol && *q != ' ') /* perms */
                q++;
            while (q < eol && *q == ' ')
                q++;
            m.offset = parse_hex(&q, eol);
            for (int field = 0; field < 2; field++) { /* dev, inode */
                while (q < eol && *q == ' ')
                    q++;
                while (q < eol && *q != ' ')
                    q++;
            }
            while (q < eol && *q == ' ')
                q++;
            m.path = q;
            m.path_len = (size_t)(eol - q);
            if (pc >= m.start && pc < m.end && m.path_len > 0 && m.path[0] == '/') {
                *out = m;
                return 1;
            }
        }
        p = eol + 1;
    }
    return 0;
}

static void copy_str(char *dst, size_t cap, const char *src, size_t n) {
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* ---- ELF ---- */

typedef struct elf_file {
    const unsigned char *base;
    size_t size;
} elf_file_t;

static int elf_open(const char *path, elf_file_t *f) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && st.st_size >= (off_t)sizeof(Elf64_Ehdr))
        p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    f->base = p;
    f->size = (size_t)st.st_size;
    const Elf64_Ehdr *eh = p;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_phoff > f->size || eh->e_phnum > (f->size - eh->e_phoff) / sizeof(Elf64_Phdr) ||
        eh->e_shoff > f->size || eh->e_shnum > (f->size - eh->e_shoff) / sizeof(Elf64_Shdr)) {
        munmap(p, f->size);
        return -1;
    }
    return 0;
}

static void elf_close(elf_file_t *f) { munmap((void *)f->base, f->size); }

/* The object's virtual address of file offset `off`, or 0. */
static uintptr_t elf_vaddr(const elf_file_t *f, uintptr_t off) {
    const Elf64_Ehdr *eh = (const void *)f->base;
    const Elf64_Phdr *ph = (const void *)(f->base + eh->e_phoff);
    for (unsigned i = 0; i < eh->e_phnum; i++)
        if (ph[i].p_type == PT_LOAD && off >= ph[i].p_offset &&
            off < ph[i].p_offset + ph[i].p_filesz)
            return off - ph[i].p_offset + ph[i].p_vaddr;
    return 0;
}

/* The function symbol covering vaddr, from .symtab, else .dynsym. */
static void elf_func(const elf_file_t *f, uintptr_t vaddr, char *out, size_t cap) {
    const Elf64_Ehdr *eh = (const void *)f->base;
    const Elf64_Shdr *sh = (const void *)(f->base + eh->e_shoff);
    for (unsigned pass = 0; pass < 2; pass++) {
        unsigned want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
        for (unsigned i = 0; i < eh->e_shnum; i++) {
            if (sh[i].sh_type != want || sh[i].sh_link >= eh->e_shnum ||
                sh[i].sh_offset > f->size || sh[i].sh_size > f->size - sh[i].sh_offset)
                continue;
            const Elf64_Shdr *strs = &sh[sh[i].sh_link];
            if (strs->sh_offset > f->size || strs->sh_size > f->size - strs->sh_offset)
                continue;
            const Elf64_Sym *sym = (const void *)(f->base + sh[i].sh_offset);
            size_t nsym = sh[i].sh_size / sizeof *sym;
            const char *names = (const char *)f->base + strs->sh_offset;
            const Elf64_Sym *best = NULL;
            for (size_t k = 0; k < nsym; k++) {
                unsigned type = ELF64_ST_TYPE(sym[k].st_info);
                if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym[k].st_shndx == SHN_UNDEF ||
                    sym[k].st_value > vaddr || sym[k].st_name >= strs->sh_size)
                    continue;
                if (vaddr < sym[k].st_value + (sym[k].st_size ? sym[k].st_size : 1)) {
                    best = &sym[k];
                    break;
                }
            }
            if (best) {
                const char *name = names + best->st_name;
                copy_str(out, cap, name, strnlen(name, strs->sh_size - best->st_name));
                return;
            }
        }
    }
}

/* ---- addr2line ---- */

static int find_addr2line(char *out, size_t cap) {
    if (access("/usr/bin/addr2line", X_OK) == 0) {
        copy_str(out, cap, "/usr/bin/addr2line", 18);
        return 0;
    }
    const char *path = NULL;
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "PATH=", 5))
            path = *e + 5;
    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && n + 11 < cap) {
            memcpy(out, path, n);
            memcpy(out + n, "/addr2line", 11);
            if (access(out, X_OK) == 0)
                return 0;
        }
        path += n + (path[n] == ':');
    }
    return -1;
}

static void put_hex(char *buf, uintptr_t v) {
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    buf[0] = '0';
    buf[1] = 'x';
    for (int i = 0; i < n; i++)
        buf[2 + i] = tmp[n - 1 - i];
    buf[2 + n] = 0;
}

#define A2L_BATCH 128
#define A2L_OUT ((size_t)1 << 20)

/* addr2line's arguments: -f -C -e path, then the addresses (written in
 * hex) of the entries idx[0..count) of out. */
static void a2l_args(char **argv, char (*hex)[20], const char *path, const size_t *idx,
                     size_t count, const ay_sym_t *out) {
    int n = 0;
    argv[n++] = "addr2line";
    argv[n++] = "-f";
    argv[n++] = "-C";
    argv[n++] = "-e";
    argv[n++] = (char *)path;
    for (size_t i = 0; i < count; i++) {
        put_hex(hex[i], out[idx[i]].vaddr);
        argv[n++] = hex[i];
    }
    argv[n] = NULL;
}

/* Our environment without LD_PRELOAD and ALLOY_CONF (at most 255 entries). */
static void a2l_env(char **envp) {
    int ne = 0;
    for (char **e = environ; e && *e && ne < 255; e++)
        if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "ALLOY_CONF=", 11))
            envp[ne++] = *e;
    envp[ne] = NULL;
}

/* Runs tool and reads its standard output into buf (A2L_OUT bytes); its
 * length, or -1 when no pipe could be had. */
static ssize_t a2l_output(const char *tool, char **argv, char **envp, char *buf) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0)
        return -1;
    pid_t pid = vfork();
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(fds[1], 1);
        if (null >= 0) {
            dup2(null, 0);
            dup2(null, 2);
        }
        execve(tool, argv, envp);
        _exit(127);
    }
    close(fds[1]);
    size_t len = 0;
    if (pid > 0) {
        ssize_t r;
        while (len < A2L_OUT - 1 && (r = read(fds[0], buf + len, A2L_OUT - 1 - len)) != 0) {
            if (r < 0)
                break;
            len += (size_t)r;
        }
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
    }
    close(fds[0]);
    return (ssize_t)len;
}

/* Reads addr2line's output, two lines per address: the function, then
 * file:line ("??:0" unknown), into the entries idx[0..count) of out. */
static void a2l_parse(const char *buf, size_t len, const size_t *idx, size_t count, ay_sym_t *out) {
    const char *p = buf, *end = buf + len;
    for (size_t i = 0; i < count && p < end; i++) {
        ay_sym_t *s = &out[idx[i]];
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            break;
        /* addr2line's name is kept only with a line (debug information):
         * without one it is the nearest symbol before the address, which
         * for a stripped object is often some other function */
        const char *fn = p;
        size_t fn_len = eol - p == 2 && p[0] == '?' && p[1] == '?' ? 0 : (size_t)(eol - p);
        p = eol + 1;
        eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        const char *colon = NULL;
        for (const char *c = p; c < eol; c++)
            if (*c == ':')
                colon = c;
        if (colon && !(colon - p == 2 && p[0] == '?' && p[1] == '?')) {
            unsigned line = 0;
            for (const char *c = colon + 1; c < eol && *c >= '0' && *c <= '9'; c++)
                line = line * 10 + (unsigned)(*c - '0');
            if (line) {
                copy_str(s->file, sizeof s->file, p, (size_t)(colon - p));
                s->line = line;
                if (fn_len)
                    copy_str(s->func, sizeof s->func, fn, fn_len);
            }
        }
        p = eol + 1;
    }
}

/* Run addr2line on `count` addresses of the object `path`; fill the
 * entries idx[0..count) of out. */
static void run_addr2line(const char *tool, const char *path, const size_t *idx, size_t count,
                          ay_sym_t *out) {
    char hex[A2L_BATCH][20];
    char *argv[A2L_BATCH + 8];
    char *envp[256];
    a2l_args(argv, hex, path, idx, count, out);
    a2l_env(envp);
    char *buf = mmap(NULL, A2L_OUT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return;
    ssize_t len = a2l_output(tool, argv, envp, buf);
    if (len >= 0)
        a2l_parse(buf, (size_t)len, idx, count, out);
    munmap(buf, A2L_OUT);
}

/* ---- the whole ---- */

void ay_symbolize(const char *maps, size_t maps_len, const uintptr_t *pcs, size_t n, ay_sym_t *out,
                  bool use_addr2line) {
    char tool[256];
    bool have_tool = use_addr2line && find_addr2line(tool, sizeof tool) == 0;
    memset(out, 0, n * sizeof *out);
    /* place every address in its object */
    for (size_t i = 0; i < n; i++) {
        map_line_t m;
        if (find_map(maps, maps_len, pcs[i], &m)) {
            copy_str(out[i].object, sizeof out[i].object, m.path, m.path_len);
            out[i].vaddr = pcs[i] - m.start + m.offset; /* a file offset, for now */
        }
    }
    /* one object at a time: its file offsets to addresses, names, lines */
    char done[n ? n : 1];
    memset(done, 0, sizeof done);
    for (size_t i = 0; i < n; i++) {
        if (done[i] || !out[i].object[0])
            continue;
        const char *obj = out[i].object;
        elf_file_t f = {NULL, 0};
        bool ok = elf_open(obj, &f) == 0;
        size_t idx[A2L_BATCH], count = 0;
        for (size_t j = i; j < n; j++) {
            if (done[j] || strcmp(out[j].object, obj) != 0)
                continue;
            done[j] = 1;
            if (!ok)
                continue;
            out[j].vaddr = elf_vaddr(&f, out[j].vaddr);
            elf_func(&f, out[j].vaddr, out[j].func, sizeof out[j].func);
            if (have_tool) {
                idx[count++] = j;
                if (count == A2L_BATCH) {
                    run_addr2line(tool, obj, idx, count, out);
                    count = 0;
                }
            }
        }
        if (have_tool && count)
            run_addr2line(tool, obj, idx, count, out);
        if (ok)
            elf_close(&f);
    }
}

bool ay_sym_is_allocator(const char *name) {
    static const char *const names[] = {
        "malloc",   "calloc", "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
        "memalign", "valloc", "pvalloc", "free",         "cfree",          NULL};
    if (!strncmp(name, "ay_", 3) || !strncmp(name, "alloy_", 6))
        return true;
    for (int i = 0; names[i]; i++)
        if (!strcmp(name, names[i]))
            return true;
    return false;
}
