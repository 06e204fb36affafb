// SPDX-License-Identifier: GPL-2.0
/*
 * tbprof: a QEMU TCG plugin (plugin API version 1, QEMU 7.2) counting the
 * executions of every translation block; at exit it writes one line per
 * executed block, "vaddr instructions executions", to the file given as
 * out=PATH.  scripts/bench-profile maps the addresses to kernel functions
 * (System.map) to get guest instructions per packet by function.  Counts
 * are per whole block (a block left early by an interrupt counts whole);
 * run under -icount (one vCPU at a time) for exact, repeatable counts.
 *
 * The plugin API's declarations are in qemu-plugin-v1.h.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu-plugin-v1.h"

EXPORT int qemu_plugin_version = 1;

struct block {
	uint64_t vaddr, insns, count;
};

static struct block **blocks;
static size_t nblocks, cap;
static const char *out = "tbprof.out";

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b = calloc(1, sizeof(*b));

	if (!b)
		return;
	b->vaddr = qemu_plugin_tb_vaddr(tb);
	b->insns = qemu_plugin_tb_n_insns(tb);
	if (nblocks == cap) {
		cap = cap ? cap * 2 : 65536;
		blocks = realloc(blocks, cap * sizeof(*blocks));
		if (!blocks)
			abort();
	}
	blocks[nblocks++] = b;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64,
						 &b->count, 1);
}

static void at_exit(qemu_plugin_id_t id, void *unused)
{
	FILE *f = fopen(out, "w");
	size_t i;

	if (!f)
		return;
	for (i = 0; i < nblocks; i++)
		if (blocks[i]->count)
			fprintf(f, "%llx %llu %llu\n",
				(unsigned long long)blocks[i]->vaddr,
				(unsigned long long)blocks[i]->insns,
				(unsigned long long)blocks[i]->count);
	fclose(f);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
			       int argc, char **argv)
{
	int i;

	for (i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out = argv[i] + 4;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
