/* SPDX-License-Identifier: MIT */
/* topology.c - NUMA nodes from sysfs, and placing pages on them (see
 * topology.h, whose invariants ay_topology_init establishes).  Runs inside
 * the first malloc: fixed buffers only.  ay_topo and ay_numa are written
 * only by ay_topology_init, once, and read without locks afterwards;
 * place_off only ever goes from false to true. */
#include "topology.h"

#include <errno.h>
#include <string.h>

#include "conf.h"
#include "error.h"
#include "fmt.h"

#ifndef AY_TEST_HOOKS
#define AY_TEST_HOOKS 0
#endif
/* The test flavour's sysfs root ($ALLOY_TEST_SYSFS_ROOT); off in the library
 * that ships, where this is a constant false and the lookup is removed. */
static const bool test_hooks = AY_TEST_HOOKS;

ay_topology_t ay_topo = {.nnodes = 1};
bool ay_numa;

static bool place_off; /* an mbind failed: placement is off (relaxed atomic) */

#define ROOT_MAX 200   /* characters of the sysfs root at most */
#define FILE_MAX 16384 /* bytes of one sysfs list at most (a cpulist of 4096 CPUs fits) */

/* Init runs once, under ay_init_slow's flag: these need no lock. */
static char text[FILE_MAX];
static char path[ROOT_MAX + 64];
static uint64_t seen[AY_MAX_CPUS / 64]; /* CPUs listed so far */

/* ---- reading ---- */

/* path = root + "/devices/system/node/" + name, with "%u" in name replaced
 * by node (node < 0: name has none). */
static void path_make(const char *root, const char *name, int node) {
    size_t n = strlen(root);
    memcpy(path, root, n);
    static const char dir[] = "/devices/system/node/";
    memcpy(path + n, dir, sizeof dir - 1);
    n += sizeof dir - 1;
    for (const char *s = name; *s; s++) {
        if (s[0] == '%' && s[1] == 'u' && node >= 0) {
            char digits[4];
            unsigned k = 0, v = (unsigned)node;
            do
                digits[k++] = (char)('0' + v % 10);
            while ((v /= 10) && k < sizeof digits);
            while (k)
                path[n++] = digits[--k];
            s++;
            continue;
        }
        path[n++] = *s;
    }
    path[n] = 0;
}

/* Why the topology is not used: the one warning. */
typedef struct problem {
    const char *what; /* NULL: none */
    bool with_path;
    bool with_number;
    uint64_t number;
} problem_t;

static void warn(const problem_t *p) {
    ay_fmt_t f;
    ay_msg_begin(&f);
    ay_fmt_str(&f, "NUMA topology: ");
    if (p->with_path) {
        ay_fmt_str(&f, path);
        ay_fmt_str(&f, ": ");
    }
    ay_fmt_str(&f, p->what);
    if (p->with_number)
        ay_fmt_u64(&f, p->number);
    ay_fmt_str(&f, "; using a single node");
    ay_msg_end(&f);
}

/* Read the file at `path` into text.  false with *p set on a problem; a
 * missing file is none when *missing_ok, which is then left true. */
static bool read_list(problem_t *p, bool *missing_ok) {
    long n = ay_os_read_file(path, text, sizeof text);
    p->with_path = true;
    if (missing_ok)
        *missing_ok = *missing_ok && n == -ENOENT;
    if (missing_ok && *missing_ok)
        return false;
    if (n == -ENOENT) {
        p->what = "missing";
    } else if (n < 0) {
        p->what = "cannot be read, errno ";
        p->with_number = true;
        p->number = (uint64_t)-n;
    } else if (n == 0) {
        p->what = "empty";
    } else if ((size_t)n >= sizeof text - 1) {
        p->what = "too long";
    } else {
        return true;
    }
    return false;
}

/* The next range "a" or "a-b" of the list at *s (digits, '-', ','), moved
 * past it and its comma.  1: a range; 0: the end of the list; -1 malformed. */
static int next_range(const char **s, unsigned *lo, unsigned *hi) {
    const char *q = *s;
    if (*q == 0)
        return 0;
    unsigned v[2] = {0, 0}, k = 0;
    for (;;) {
        unsigned digits = 0;
        while (*q >= '0' && *q <= '9') {
            if (++digits > 6)
                return -1;
            v[k] = v[k] * 10 + (unsigned)(*q++ - '0');
        }
        if (digits == 0)
            return -1;
        if (*q == '-' && k == 0) {
            q++;
            k = 1;
            continue;
        }
        break;
    }
    if (*q == ',') {
        q++;
        if (*q == 0)
            return -1; /* a trailing comma */
    } else if (*q != 0) {
        return -1;
    }
    *lo = v[0];
    *hi = k ? v[1] : v[0];
    *s = q;
    return *lo <= *hi ? 1 : -1;
}

/* text holds a sysfs list: one line.  Drop its newline; false if there is
 * another. */
static bool one_line(void) {
    size_t n = strlen(text);
    if (n && text[n - 1] == '\n')
        text[--n] = 0;
    return memchr(text, '\n', n) == NULL;
}

/* The number of CPUs in /sys/devices/system/cpu/online, or 0 when it cannot
 * be read or parsed.  Parsed here rather than by sysconf, whose own reading
 * (and strtoul, and the C locale's tables) would fault in libc pages that a
 * small program otherwise never touches.  Init only (uses text). */
unsigned ay_topology_online_cpus(void) {
    long n = ay_os_read_file("/sys/devices/system/cpu/online", text, sizeof text);
    if (n <= 0 || (size_t)n >= sizeof text - 1 || !one_line())
        return 0;
    const char *q = text;
    unsigned lo, hi, count = 0;
    int r;
    while ((r = next_range(&q, &lo, &hi)) == 1)
        count += hi - lo + 1;
    return r == 0 ? count : 0;
}

static bool malformed(problem_t *p) {
    p->with_path = true;
    p->what = "malformed (expected a list such as 0-3,8)";
    return false;
}

/* The CPUs of node `id` (its cpulist) into node index `idx`.  false with *p
 * set on a problem; an empty list is a node without CPUs (memory only). */
static bool read_cpus(const char *root, unsigned id, unsigned idx, problem_t *p) {
    path_make(root, "node%u/cpulist", (int)id);
    if (!read_list(p, NULL))
        return false;
    if (!one_line())
        return malformed(p);
    const char *s = text;
    unsigned lo, hi;
    int r;
    while ((r = next_range(&s, &lo, &hi)) > 0) {
        if (hi >= AY_MAX_CPUS) {
            p->with_path = true;
            p->what = "lists a CPU beyond those alloy supports: ";
            p->with_number = true;
            p->number = hi;
            return false;
        }
        for (unsigned c = lo; c <= hi; c++) {
            if (seen[c / 64] >> (c % 64) & 1) {
                p->with_path = true;
                p->what = "lists a CPU another list (or this one) already has: CPU ";
                p->with_number = true;
                p->number = c;
                return false;
            }
            seen[c / 64] |= (uint64_t)1 << (c % 64);
            ay_topo.cpu_node[c] = (uint8_t)idx;
            ay_topo.ncpus[idx]++;
        }
    }
    return r == 0 ? true : malformed(p);
}

/* The nodes and their CPUs; false with *p set on a problem. */
static bool topology_read(const char *root, problem_t *p) {
    path_make(root, "online", -1);
    bool missing = true;
    if (!read_list(p, &missing))
        return missing; /* no node directory: a kernel without NUMA, or no /sys */
    if (!one_line())
        return malformed(p);
    /* the node ids first: cpulists are read into text too */
    uint64_t ids = 0;
    const char *s = text;
    unsigned lo, hi;
    int r;
    while ((r = next_range(&s, &lo, &hi)) > 0) {
        if (hi >= AY_MAX_NODES) {
            p->with_path = true;
            p->what = "lists a node beyond those alloy supports: ";
            p->with_number = true;
            p->number = hi;
            return false;
        }
        for (unsigned n = lo; n <= hi; n++)
            ids |= (uint64_t)1 << n;
    }
    if (r < 0)
        return malformed(p);
    if (ids == 0) {
        p->with_path = true;
        p->what = "lists no node";
        return false;
    }
    if ((ids & (ids - 1)) == 0)
        return true; /* one node: nothing more to read */
    memset(ay_topo.cpu_node, AY_NODE_NONE, sizeof ay_topo.cpu_node);
    unsigned idx = 0;
    for (unsigned id = 0; id < AY_MAX_NODES; id++) {
        if (!(ids >> id & 1))
            continue;
        ay_topo.id[idx] = (uint8_t)id;
        ay_topo.ncpus[idx] = 0;
        if (!read_cpus(root, id, idx, p))
            return false;
        if (ay_topo.ncpus[idx])
            idx++; /* a node without CPUs gets no index */
    }
    ay_topo.nnodes = idx ? idx : 1;
    return true;
}

void ay_topology_init(bool wanted) {
    ay_topo.nnodes = 1;
    ay_topo.id[0] = 0;
    ay_numa = false;
    if (!wanted)
        return;
    const char *root = "/sys";
    if (test_hooks) {
        const char *r = ay_conf_getenv("ALLOY_TEST_SYSFS_ROOT");
        if (r && *r)
            root = r;
    }
    problem_t p = {NULL, false, false, 0};
    if (strlen(root) > ROOT_MAX) {
        p.what = "the sysfs root is too long";
    } else if (topology_read(root, &p)) {
        ay_numa = ay_topo.nnodes > 1;
        if (!ay_numa)
            ay_topo.id[0] = 0; /* without NUMA every heap is on node 0 */
        return;
    }
    warn(&p);
    ay_topo.nnodes = 1;
    ay_topo.id[0] = 0;
    ay_topo.ncpus[0] = 0;
}

int ay_topology_here(void) {
    if (!ay_numa)
        return -1;
    int cpu = ay_os_cpu();
    if (cpu < 0 || cpu >= AY_MAX_CPUS)
        return -1;
    unsigned idx = ay_topo.cpu_node[cpu];
    return idx == AY_NODE_NONE ? -1 : (int)idx;
}

void ay_topology_split(unsigned count, unsigned per[AY_MAX_NODES]) {
    unsigned n = ay_topo.nnodes, total = 0, given = 0;
    for (unsigned i = 0; i < n; i++)
        total += ay_topo.ncpus[i];
    unsigned left = count > n ? count - n : 0;
    for (unsigned i = 0; i < n; i++) {
        per[i] = 1 + (total ? (unsigned)((uint64_t)left * ay_topo.ncpus[i] / total) : 0);
        given += per[i];
    }
    /* what rounding down left over: one more each, largest remainders first */
    while (given < count) {
        unsigned best = 0;
        uint64_t best_rem = 0;
        for (unsigned i = 0; i < n; i++) {
            /* remainder of node i, less what it already got past its share */
            uint64_t share = (uint64_t)left * ay_topo.ncpus[i],
                     got = (uint64_t)(per[i] - 1) * total;
            uint64_t rem = share > got ? share - got : 0;
            if (rem > best_rem) {
                best_rem = rem;
                best = i;
            }
        }
        per[best]++;
        given++;
    }
}

void ay_topology_place(void *p, size_t size, int node) {
    if (!ay_numa || node < 0 || __atomic_load_n(&place_off, __ATOMIC_RELAXED))
        return;
    int r = ay_os_bind_node(p, size, ay_topo.id[node]);
    if (r == 0 || __atomic_exchange_n(&place_off, true, __ATOMIC_RELAXED))
        return;
    ay_fmt_t f;
    ay_msg_begin(&f);
    ay_fmt_str(&f, "NUMA: mbind failed (errno ");
    ay_fmt_u64(&f, (uint64_t)-r);
    ay_fmt_str(&f, "); pages are no longer placed on nodes, threads still use their node's heaps");
    ay_msg_end(&f);
}
