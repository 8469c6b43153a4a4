/*
 * allocscope: the bundle structure of a multi-core (NUMA) trace.
 *
 * A numa trace (docs/numa.md) describes a computation graph split into
 * parent tasks, each split into sub-tasks of the same topology that run on
 * cores with private memories. The JSON parser expands it into ordinary
 * buffers, one per sub-task edge ("block"), in the address space of the
 * sub-task's core, so every strategy and the validator see a plain
 * multi-space trace. This structure keeps what the numa strategies need on
 * top of that. It belongs to the trace (trace->numa) and lives as long as
 * it does.
 *
 * Time: parents run one after another in trace order; on each core the
 * sub-tasks of a parent (its task bundle) run one after another in index
 * order, `nops` time steps each. Operator i of the sub-task in slot j runs
 * at step parent.start + j * nops + i.
 */
#ifndef ALLOCSCOPE_NUMA_H
#define ALLOCSCOPE_NUMA_H

#include "allocscope/allocscope.h"

/* A data edge of a parent task, with its lifetime inside one sub-task. */
struct as_numa_edge {
	const char *name;
	uint32_t from, to;       /* operator positions; AS_NONE: loaded/stored */
	uint32_t src_parent;     /* input read from an earlier parent's output */
	uint32_t src_edge;       /*   edge (indices), or AS_NONE for both */
	uint32_t life_start;     /* lifetime inside a sub-task, in steps: */
	uint32_t life_end;       /*   [life_start, life_end), end <= nops */
};

struct as_numa_parent {
	const char *name;
	uint32_t nops;
	uint32_t first_edge;     /* edges[first_edge .. + nedges) */
	uint32_t nedges;
	uint32_t first_sub;      /* core[]/slot[] of sub-task 0 */
	uint32_t nsubtasks;
	/* Block (sub-task k, edge e) is buffer first_block + k * nedges + e. */
	uint32_t first_block;
	uint64_t start;          /* first time step */
	uint64_t duration;       /* nops * the largest task bundle */
};

struct as_numa {
	uint16_t ncores;
	uint16_t first_space;    /* core c is address space first_space + c */
	uint32_t nparents;
	struct as_numa_parent *parents;
	uint32_t nedges;
	struct as_numa_edge *edges;
	uint32_t nsubtasks;      /* over all parents */
	uint16_t *core;          /* per sub-task: its core */
	uint32_t *slot;          /* per sub-task: its place in the task bundle */
	const char *schedule;    /* "given", "round-robin" or "least-loaded" */
};

static inline uint32_t as_numa_block(const struct as_numa_parent *p,
				     uint32_t sub, uint32_t edge)
{
	return p->first_block + sub * p->nedges + edge;
}

#endif
