/* SPDX-License-Identifier: MIT */
/* topology.h - the machine's NUMA nodes and their CPUs, as sysfs lists them
 * (/sys/devices/system/node: `online`, then `node<N>/cpulist` of each node),
 * read once at initialisation, and the placement of pages on a node.
 *
 * It reads with open(2) and read(2) into a static buffer and parses by hand:
 * no libnuma, no stdio, no allocation, so it runs inside the first malloc.
 * On a machine with one node it reads one small file (`online`) and stops;
 * with numa:false it reads nothing.
 *
 * Nodes are known by an index 0 .. nnodes-1 (ay_topo.id[] gives the
 * kernel's id of each, ascending: ids may have gaps).  Only nodes with CPUs
 * are counted: a node of memory only has no thread to serve.  No `online`
 * file (a kernel without NUMA, or no /sys mounted) means one node, without
 * a word.  A topology that cannot be read or makes no sense (a file missing
 * or unreadable, empty or malformed, a CPU listed twice, a node id or a CPU
 * beyond what alloy supports) gives one warning, and alloy uses a single
 * node.
 *
 * The test flavour (built with AY_TEST_HOOKS=1, never installed) reads the
 * tree under $ALLOY_TEST_SYSFS_ROOT instead of /sys, so that tests can show
 * alloy other topologies.  The library that ships has no such code: the
 * switch is a `static const bool`, so the compiler removes the lookup, and
 * the test numa-production-root checks that it does.
 *
 * Invariants after ay_topology_init: 1 <= nnodes <= AY_MAX_NODES; ay_numa
 * is true iff the numa setting is on and nnodes > 1; when it is, every CPU
 * that a node lists maps to that node's index in cpu_node[], and every
 * other entry is AY_NODE_NONE.
 */
#ifndef ALLOY_TOPOLOGY_H
#define ALLOY_TOPOLOGY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "internal.h"
#include "os.h"

#define AY_MAX_NODES AY_OS_MAX_NODES /* node ids 0 .. 63 */
#define AY_MAX_CPUS 4096             /* CPU numbers 0 .. 4095 */
#define AY_NODE_NONE 0xff            /* cpu_node[] of a CPU no node lists */

typedef struct ay_topology {
    unsigned nnodes;               /* nodes with CPUs (1 when NUMA is not in effect) */
    uint8_t id[AY_MAX_NODES];      /* the kernel's id of node index i, ascending */
    uint16_t ncpus[AY_MAX_NODES];  /* CPUs node index i lists */
    uint8_t cpu_node[AY_MAX_CPUS]; /* node index of each CPU (only when ay_numa) */
} ay_topology_t;

extern AY_HIDDEN ay_topology_t ay_topo;
extern AY_HIDDEN bool ay_numa; /* NUMA awareness in effect: the setting, and nodes > 1 */

/* Read the topology (when `wanted`, the numa setting), at initialisation. */
void ay_topology_init(bool wanted);
/* CPUs online, from sysfs; 0 when unknown (init only). */
unsigned ay_topology_online_cpus(void);
/* The node index of the CPU the calling thread runs on now, or -1 when that
 * CPU is unknown (or NUMA is not in effect). */
int ay_topology_here(void);
/* Split `count` heaps among the nodes, at least one each, the rest in
 * proportion to their CPUs: per[i] for node index i.  count >= nnodes. */
void ay_topology_split(unsigned count, unsigned per[AY_MAX_NODES]);
/* Prefer node index `node` for the range's pages (mbind), when NUMA is in
 * effect and node >= 0.  The first failure prints one warning and turns
 * placement off for the rest of the process: a failing mbind (a container
 * that forbids it, a kernel without NUMA) fails for every range. */
void ay_topology_place(void *p, size_t size, int node);

#endif
