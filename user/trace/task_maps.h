/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The maps task mode's BPF program reads (bpf/trace_task.bpf.h): the future-tree
 * table (model.trees, model.tree_slots) at load, and once the executable is mapped
 * the run-time addresses it meets: task headers' vtables (task_infos) and `dyn
 * Future` vtables (dyn_vtables).
 */
#ifndef ASYNCBPF_TRACE_TASK_MAPS_H
#define ASYNCBPF_TRACE_TASK_MAPS_H

#include <stdint.h>

#include "asyncbpf.h"
#include "model/model.h"
#include "trace/task_locks.h"

/* Entries each map needs (at least 1: a map cannot be empty). */
uint32_t task_maps__nr_nodes(const struct lock_table *t);
uint32_t task_maps__nr_slots(const struct lock_table *t);
uint32_t task_maps__nr_dyn(const struct model *m);
/* task_infos: the runtimes' task types, then nr_roots root polls (trace_plan.root_types) */
uint32_t task_maps__nr_infos(const struct model *m, uint32_t nr_roots);

/* The table as the BPF side reads it: node i of future i, slot i. Pure. */
void task_maps__node(const struct lock_table *t, uint32_t i, struct tree_node_spec *out);
void task_maps__slot(const struct lock_table *t, uint32_t i, struct tree_slot_spec *out);
/* Task type i as task_infos holds it; false when it cannot be read (no vtable, no
 * future offset, a live condition too far away). Pure. */
bool task_maps__info(const struct model *m, uint32_t i, struct task_info *out);
/* Root future f's poll as a task poll, task_infos[index]: the future at its self, gone
 * once its __state says Returned or Panicked (a hand-written one never). Pure. */
void task_maps__root_info(const struct model *m, uint32_t f, uint32_t index, struct task_info *out);
/* Fill task_infos: the task types (by type), then roots[k] at m->nr_task_types + k.
 * No address in them: filled at load, before the target runs. 0 or -errno. */
int task_maps__fill_infos(int infos_fd, const struct model *m, const uint32_t *roots, uint32_t nr);

/* Fill tree_nodes and tree_slots (map fds). 0 or -errno. */
int task_maps__fill_table(int nodes_fd, int slots_fd, const struct lock_table *t);
/* Fill task_vtables and dyn_vtables (with the executable's load bias, known once it is
 * mapped). 0 or -errno. */
int task_maps__fill_addresses(int vtables_fd, int dyn_fd, const struct model *m, uint64_t bias);

#endif
