// SPDX-License-Identifier: GPL-2.0
/*
 * vcpucount: a QEMU TCG plugin (plugin API version 1, QEMU 7.2) counting,
 * per vCPU, the guest instructions executed and the executions of the
 * instructions silicon charges for and TCG does not: STAC (0F 01 CB), CLAC
 * (0F 01 CA), LFENCE (0F AE E8+r), MFENCE (0F AE F0+r), SFENCE (0F AE F8+r)
 * and the serializing ones of the Intel SDM (CPUID, SERIALIZE, IRET/IRETQ,
 * WRMSR, RSM, INVD, WBINVD, INVLPG, LGDT, LIDT, LLDT, LTR, LMSW, MOV to a
 * control register other than CR8, MOV to a debug register).  Instructions
 * are classified from their bytes when a block is translated (legacy and
 * REX prefixes skipped; a mandatory 66/F2/F3 prefix makes another
 * instruction of the same opcode, e.g. F3 0F AE /5 INCSSP).
 *
 * String instructions with a REP prefix (F3 or F2 before MOVS, STOS,
 * LODS, CMPS, SCAS): TCG runs one element per execution, so the instruction
 * count holds a "rep movsb" of 64 bytes as 64 instructions, where silicon
 * retires one instruction and charges a start-up cost and a cost per byte.
 * Each execution is counted (rep), with the bytes it moves (rep_bytes: the
 * element's size; an execution with a count of 0 counts one element too),
 * and the executions that start one (rep_start): those not right after an
 * execution of the same instruction on the same vCPU, by the insn counter
 * (an interrupt in the middle of one counts as a start once more).
 *
 * Snapshots: user space marks the start and end of a measured interval by
 * calling an address of the marker region, 2 MiB of RET (C3) bytes mapped at
 * MARK_BASE; a call to MARK_BASE + id makes the plugin append one line to
 * its output file (out=PATH, default vcpucount.out):
 *
 *   mark id=ID vcpu=CALLER seq=N insn=I0,I1 stac=S0,S1 clac=... lfence=...
 *        mfence=... sfence=... serial=... cpuid=... iret=... wrmsr=...
 *        rep=... rep_start=... rep_bytes=...
 *
 * (one comma-separated value per vCPU, counted since the guest started), and
 * one "total" line of the same form at exit.  Deltas between two marks are
 * what each vCPU executed in between.  The instruction count is per whole
 * block (a block left early by an exception counts whole); the special
 * instructions are counted each time one executes.  Run under -icount
 * (one vCPU at a time) for exact, repeatable counts.
 *
 * Block profile (prof=PATH): the same count taken apart by translation
 * block.  At each mark, and at exit, the plugin appends to PATH the mark's
 * line as above without the counts ("mark id=ID vcpu=CALLER seq=N", or
 * "exit"), then one line per block that any vCPU executed since the
 * previous mark:
 *
 *   VADDR INSNS D0,D1
 *
 * (hexadecimal guest virtual address, instructions in the block, and each
 * vCPU's executions since the previous mark).  A block is keyed by its
 * address and length: translated again, it is the same entry; cut shorter
 * (-icount's budget), one of its own.  Summed over the marks after mark a
 * up to mark b, INSNS x Dc is exactly what vCPU c's insn counter gained
 * from a to b.  QEMU 7.2's inline counters are not per vCPU, so the
 * executions are counted in the callback the instruction count already
 * runs per block: profiling adds one increment to it.
 *
 * The plugin API's declarations are in qemu-plugin-v1.h.  Built with
 * -DVCPUCOUNT_TEST it is a host program that checks the decoder and the
 * block profile.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Where the marker region lives in user space (vhost_net_pps maps it). */
#define MARK_BASE 0x3ff000000000ULL
#define MARK_SIZE (2ULL << 20)

enum klass {
	K_NONE, K_STAC, K_CLAC, K_LFENCE, K_MFENCE, K_SFENCE,
	/* the serializing ones, from here on */
	K_CPUID, K_IRET, K_WRMSR, K_SERIAL_OTHER, K_N
};

/*
 * The class of one instruction from its bytes.  Only the opcodes above are
 * recognised; anything else (VEX/EVEX included) is K_NONE.
 */
struct prefixes {
	uint8_t mand;		/* the last 66/F2/F3 prefix */
	bool rep, opsize;	/* an F2 or F3, a 66 among them */
	bool rex_w, rex_r;
};

/* The legacy prefixes and REX of an instruction; returns its opcode's byte. */
static const uint8_t *prefixes(const uint8_t *p, const uint8_t *end,
			       struct prefixes *px)
{
	memset(px, 0, sizeof(*px));
	for (; p < end; p++) {
		switch (*p) {
		case 0x66: case 0xf2: case 0xf3:
			px->mand = *p;
			px->rep |= *p != 0x66;
			px->opsize |= *p == 0x66;
			continue;
		case 0xf0: case 0x2e: case 0x36: case 0x3e: case 0x26:
		case 0x64: case 0x65: case 0x67:
			continue;
		}
		break;
	}
	/* REX comes last, right before the opcode (64-bit code). */
	if (p < end - 1 && (*p & 0xf0) == 0x40) {
		px->rex_w = *p & 8;
		px->rex_r = *p & 4;
		p++;
	}
	return p;
}

static enum klass classify(const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	struct prefixes px;
	bool rex_w, rex_r;
	uint8_t mand;
	uint8_t op, modrm, reg, mod;

	p = prefixes(p, end, &px);
	mand = px.mand;
	rex_w = px.rex_w;
	rex_r = px.rex_r;
	if (p >= end)
		return K_NONE;
	op = *p++;
	if (op == 0xcf)
		return K_IRET;	/* IRET, IRETQ (REX.W), IRET16 (66) */
	if (op != 0x0f || p >= end)
		return K_NONE;
	op = *p++;
	switch (op) {
	case 0xa2:
		return K_CPUID;
	case 0x30:
		return K_WRMSR;
	case 0xaa:	/* RSM */
	case 0x08:	/* INVD */
	case 0x09:	/* WBINVD */
		return mand == 0xf3 && op == 0x09 ? K_NONE : K_SERIAL_OTHER;
	case 0x22:	/* MOV CRn, reg */
		if (p >= end)
			return K_NONE;
		reg = ((*p >> 3) & 7) | (rex_r ? 8 : 0);
		return reg == 8 ? K_NONE : K_SERIAL_OTHER;
	case 0x23:	/* MOV DRn, reg */
		return K_SERIAL_OTHER;
	}
	if (p >= end || (op != 0x00 && op != 0x01 && op != 0xae))
		return K_NONE;
	modrm = *p;
	mod = modrm >> 6;
	reg = (modrm >> 3) & 7;
	if (op == 0x00)		/* LLDT, LTR */
		return reg == 2 || reg == 3 ? K_SERIAL_OTHER : K_NONE;
	if (op == 0x01) {
		if (mod != 3)	/* LGDT, LIDT, LMSW, INVLPG */
			return reg == 2 || reg == 3 || reg == 6 || reg == 7 ?
				K_SERIAL_OTHER : K_NONE;
		if (reg == 6)	/* LMSW reg */
			return K_SERIAL_OTHER;
		if (mand)
			return K_NONE;
		switch (modrm) {
		case 0xca:
			return K_CLAC;
		case 0xcb:
			return K_STAC;
		case 0xe8:
			return K_SERIAL_OTHER;	/* SERIALIZE */
		}
		return K_NONE;
	}
	/* 0F AE, register forms without a mandatory prefix: the fences. */
	if (mod != 3 || mand)
		return K_NONE;
	(void)rex_w;
	switch (reg) {
	case 5:
		return K_LFENCE;
	case 6:
		return K_MFENCE;
	case 7:
		return K_SFENCE;
	}
	return K_NONE;
}

/*
 * The element size of a REP-prefixed string instruction (MOVS, CMPS, STOS,
 * LODS, SCAS: A4-A7, AA-AF), or 0 for any other instruction.
 */
static unsigned int rep_size(const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	struct prefixes px;
	uint8_t op;

	p = prefixes(p, end, &px);
	if (!px.rep || p >= end)
		return 0;
	op = *p;
	if ((op < 0xa4 || op > 0xa7) && (op < 0xaa || op > 0xaf))
		return 0;
	if (!(op & 1))
		return 1;
	return px.rex_w ? 8 : px.opsize ? 2 : 4;
}

#define MAX_VCPUS 64

struct counts {
	uint64_t insn;
	uint64_t k[K_N];
	/* REP string executions, starts and bytes, and the last one's key. */
	uint64_t rep, rep_start, rep_bytes;
	uint64_t rep_insn, rep_key;
};

/*
 * A REP string instruction executes on cpu; key: its address shifted left
 * by 4, or'ed with its element size.  The insn counter has counted its
 * block already, so an execution right after one of the same instruction
 * finds it one higher.
 */
static void rep_count(struct counts *c, uint64_t key)
{
	c->rep++;
	c->rep_bytes += key & 15;
	if (c->insn != c->rep_insn + 1 || key != c->rep_key)
		c->rep_start++;
	c->rep_insn = c->insn;
	c->rep_key = key;
}

/* Each vCPU writes only its own entry; a mark reads all of them. */
static struct counts vcpu[MAX_VCPUS];
static int nvcpus = 1;

/*
 * The block profile: one entry per (vaddr, insns), its executions per vCPU
 * (each vCPU writes only its own) and their values at the last mark.
 */
struct block {
	uint64_t vaddr, insns;
	uint64_t *count, *last;	/* nvcpus each */
};

static FILE *prof;
/* Translations (possibly concurrent without -icount) and marks. */
static pthread_mutex_t prof_lock = PTHREAD_MUTEX_INITIALIZER;
static struct block **blocks;	/* in translation order */
static size_t nblocks, blocks_cap;
static struct block **hash;	/* open addressing, half full at most */
static size_t hash_size;

/* tb_exec with the profile: the same count, and the block's. */
static void tb_exec_prof(unsigned int cpu, void *udata)
{
	struct block *b = udata;

	if (cpu < (unsigned int)nvcpus) {
		vcpu[cpu].insn += b->insns;
		b->count[cpu]++;
	}
}

static size_t block_slot(struct block **h, size_t size, uint64_t va, uint64_t n)
{
	size_t i = (size_t)((va ^ (n << 48)) * 0x9e3779b97f4a7c15ULL >> 20) & (size - 1);

	while (h[i] && (h[i]->vaddr != va || h[i]->insns != n))
		i = (i + 1) & (size - 1);
	return i;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p) {
		perror("vcpucount");
		abort();
	}
	return p;
}

/* The entry of a block, made on its first translation; prof_lock held. */
static struct block *block_get(uint64_t va, uint64_t n)
{
	struct block *b;
	size_t i;

	if (2 * (nblocks + 1) > hash_size) {
		size_t size = hash_size ? 2 * hash_size : 1 << 16;
		struct block **h = xcalloc(size, sizeof(*h));

		for (i = 0; i < nblocks; i++)
			h[block_slot(h, size, blocks[i]->vaddr, blocks[i]->insns)] = blocks[i];
		free(hash);
		hash = h;
		hash_size = size;
	}
	i = block_slot(hash, hash_size, va, n);
	if (hash[i])
		return hash[i];
	if (nblocks == blocks_cap) {
		blocks_cap = blocks_cap ? 2 * blocks_cap : 1 << 15;
		blocks = realloc(blocks, blocks_cap * sizeof(*blocks));
		if (!blocks) {
			perror("vcpucount");
			abort();
		}
	}
	b = xcalloc(1, sizeof(*b));
	b->vaddr = va;
	b->insns = n;
	b->count = xcalloc(2 * nvcpus, sizeof(*b->count));
	b->last = b->count + nvcpus;
	blocks[nblocks++] = b;
	hash[i] = b;
	return b;
}

/* The blocks executed since the previous mark, under the mark's line. */
static void prof_mark(const char *what)
{
	size_t i;
	int c;

	pthread_mutex_lock(&prof_lock);
	fprintf(prof, "%s\n", what);
	for (i = 0; i < nblocks; i++) {
		struct block *b = blocks[i];

		for (c = 0; c < nvcpus && b->count[c] == b->last[c]; c++)
			;
		if (c == nvcpus)
			continue;
		fprintf(prof, "%llx %llu", (unsigned long long)b->vaddr,
			(unsigned long long)b->insns);
		for (c = 0; c < nvcpus; c++) {
			fprintf(prof, "%c%llu", c ? ',' : ' ',
				(unsigned long long)(b->count[c] - b->last[c]));
			b->last[c] = b->count[c];
		}
		fputc('\n', prof);
	}
	fflush(prof);
	pthread_mutex_unlock(&prof_lock);
}

#ifdef VCPUCOUNT_TEST

static const struct {
	const char *name;
	uint8_t bytes[8];
	size_t len;
	enum klass want;
} cases[] = {
	{ "stac", { 0x0f, 0x01, 0xcb }, 3, K_STAC },
	{ "clac", { 0x0f, 0x01, 0xca }, 3, K_CLAC },
	{ "lfence", { 0x0f, 0xae, 0xe8 }, 3, K_LFENCE },
	{ "lfence, other rm", { 0x0f, 0xae, 0xed }, 3, K_LFENCE },
	{ "mfence", { 0x0f, 0xae, 0xf0 }, 3, K_MFENCE },
	{ "sfence", { 0x0f, 0xae, 0xf8 }, 3, K_SFENCE },
	{ "lfence, segment prefix", { 0x3e, 0x0f, 0xae, 0xe8 }, 4, K_LFENCE },
	{ "stac, REX", { 0x48, 0x0f, 0x01, 0xcb }, 4, K_STAC },
	{ "incsspq (F3 REX.W 0F AE /5)", { 0xf3, 0x48, 0x0f, 0xae, 0xe8 }, 5, K_NONE },
	{ "tpause (66 0F AE /6)", { 0x66, 0x0f, 0xae, 0xf0 }, 4, K_NONE },
	{ "clflush (0F AE /7 mem)", { 0x0f, 0xae, 0x38 }, 3, K_NONE },
	{ "xrstor (0F AE /5 mem)", { 0x0f, 0xae, 0x28 }, 3, K_NONE },
	{ "cpuid", { 0x0f, 0xa2 }, 2, K_CPUID },
	{ "iret", { 0xcf }, 1, K_IRET },
	{ "iretq", { 0x48, 0xcf }, 2, K_IRET },
	{ "wrmsr", { 0x0f, 0x30 }, 2, K_WRMSR },
	{ "rdmsr", { 0x0f, 0x32 }, 2, K_NONE },
	{ "serialize", { 0x0f, 0x01, 0xe8 }, 3, K_SERIAL_OTHER },
	{ "setssbsy (F3 0F 01 E8)", { 0xf3, 0x0f, 0x01, 0xe8 }, 4, K_NONE },
	{ "mov cr3, rax", { 0x0f, 0x22, 0xd8 }, 3, K_SERIAL_OTHER },
	{ "mov cr8, rax", { 0x44, 0x0f, 0x22, 0xc0 }, 4, K_NONE },
	{ "mov dr7, rax", { 0x0f, 0x23, 0xf8 }, 3, K_SERIAL_OTHER },
	{ "invlpg [rax]", { 0x0f, 0x01, 0x38 }, 3, K_SERIAL_OTHER },
	{ "lgdt [rax]", { 0x0f, 0x01, 0x10 }, 3, K_SERIAL_OTHER },
	{ "ltr ax", { 0x0f, 0x00, 0xd8 }, 3, K_SERIAL_OTHER },
	{ "swapgs", { 0x0f, 0x01, 0xf8 }, 3, K_NONE },
	{ "rdtscp", { 0x0f, 0x01, 0xf9 }, 3, K_NONE },
	{ "wbinvd", { 0x0f, 0x09 }, 2, K_SERIAL_OTHER },
	{ "wbnoinvd (F3 0F 09)", { 0xf3, 0x0f, 0x09 }, 3, K_NONE },
	{ "ret", { 0xc3 }, 1, K_NONE },
	{ "nop3", { 0x0f, 0x1f, 0x00 }, 3, K_NONE },
	{ "rex.w mov", { 0x48, 0x89, 0xc7 }, 3, K_NONE },
	{ "a lone REX byte", { 0x48 }, 1, K_NONE },
	{ "lock prefix only", { 0xf0 }, 1, K_NONE },
	{ "vex (c5 f8 77 vzeroupper)", { 0xc5, 0xf8, 0x77 }, 3, K_NONE },
};

static const struct {
	const char *name;
	uint8_t bytes[4];
	size_t len;
	unsigned int want;
} rep_cases[] = {
	{ "rep movsb", { 0xf3, 0xa4 }, 2, 1 },
	{ "rep movsq", { 0xf3, 0x48, 0xa5 }, 3, 8 },
	{ "rep movsl", { 0xf3, 0xa5 }, 2, 4 },
	{ "rep movsw", { 0x66, 0xf3, 0xa5 }, 3, 2 },
	{ "rep stosb", { 0xf3, 0xaa }, 2, 1 },
	{ "rep stosq", { 0xf3, 0x48, 0xab }, 3, 8 },
	{ "repne scasb", { 0xf2, 0xae }, 2, 1 },
	{ "repe cmpsb", { 0xf3, 0xa6 }, 2, 1 },
	{ "movsb without rep", { 0xa4 }, 1, 0 },
	{ "movsq without rep", { 0x48, 0xa5 }, 2, 0 },
	{ "rep ret (f3 c3)", { 0xf3, 0xc3 }, 2, 0 },
	{ "pause (f3 90)", { 0xf3, 0x90 }, 2, 0 },
	{ "test al, imm8 (a8)", { 0xa8, 0x01 }, 2, 0 },
	{ "a lone rep prefix", { 0xf3 }, 1, 0 },
};

/*
 * REP string counting: two calls of a 64-byte rep movsb, the first
 * reached at the end of a three-instruction block, the second as a block
 * of its own jumped to after other code, then one rep stosq of 3 elements
 * right after the first call's end: 64 + 64 + 3 executions, 3 starts,
 * 64 + 64 + 24 bytes.
 */
static int test_rep(void)
{
	uint64_t movsb = 0xffffffff8155842aULL << 4 | 1;
	uint64_t stosq = 0xffffffff81558500ULL << 4 | 8;
	struct counts c = { 0 };
	int i, bad = 0;

	c.insn += 3;
	rep_count(&c, movsb);
	for (i = 1; i < 64; i++) {
		c.insn += 1;
		rep_count(&c, movsb);
	}
	c.insn += 1;		/* the ret after it, then a block ending on stosq */
	c.insn += 2;
	for (i = 0; i < 3; i++) {
		rep_count(&c, stosq);
		c.insn += 1;
	}
	c.insn += 5;		/* other code, then the rep movsb jumped to */
	for (i = 0; i < 64; i++) {
		c.insn += 1;
		rep_count(&c, movsb);
	}
	if (c.rep != 131 || c.rep_start != 3 || c.rep_bytes != 152)
		bad++, printf("FAIL rep %llu starts %llu bytes %llu, want 131, 3, 152\n",
			      (unsigned long long)c.rep, (unsigned long long)c.rep_start,
			      (unsigned long long)c.rep_bytes);
	for (i = 0; i < (int)ARRAY_SIZE(rep_cases); i++) {
		unsigned int got = rep_size(rep_cases[i].bytes, rep_cases[i].len);

		if (got != rep_cases[i].want)
			bad++, printf("FAIL %s: element size %u, want %u\n",
				      rep_cases[i].name, got, rep_cases[i].want);
	}
	printf("vcpucount rep strings: %s\n", bad ? "FAILED" : "right");
	return bad;
}

/*
 * The block profile on two vCPUs: a block keyed by address and length,
 * the same entry through the table's growth, each mark's section with the
 * executions since the one before, and the insn counter's total.
 */
static int test_profile(void)
{
	static const char want[] =
		"mark id=1 vcpu=0 seq=1\n"
		"ffffffff81000000 5 2,1\n"
		"ffffffff81000010 3 0,3\n"
		"mark id=2 vcpu=0 seq=2\n"
		"ffffffff81000000 5 0,1\n"
		"exit\n";
	struct block *a, *b, *c, *first[3];
	char got[512];
	size_t i, len;
	int bad = 0;

	nvcpus = 2;
	prof = tmpfile();
	if (!prof)
		return 1;
	a = block_get(0xffffffff81000000ULL, 5);
	b = block_get(0xffffffff81000010ULL, 3);
	c = block_get(0xffffffff81000000ULL, 2);	/* cut shorter: its own */
	first[0] = a, first[1] = b, first[2] = c;
	/* Far past the table's first size: every entry found again. */
	for (i = 0; i < 100000; i++)
		block_get(0xffffffff82000000ULL + 16 * i, 1 + i % 7);
	if (block_get(0xffffffff81000000ULL, 5) != first[0] ||
	    block_get(0xffffffff81000010ULL, 3) != first[1] ||
	    block_get(0xffffffff81000000ULL, 2) != first[2] || a == c)
		bad++, printf("FAIL block entries not found again\n");
	for (i = 0; i < 100000; i++)
		if (block_get(0xffffffff82000000ULL + 16 * i, 1 + i % 7) != blocks[3 + i]) {
			bad++, printf("FAIL block %zu not found again\n", i);
			break;
		}
	if (nblocks != 100003)
		bad++, printf("FAIL %zu blocks, want 100003\n", nblocks);
	tb_exec_prof(0, a);
	tb_exec_prof(0, a);
	tb_exec_prof(1, a);
	for (i = 0; i < 3; i++)
		tb_exec_prof(1, b);
	prof_mark("mark id=1 vcpu=0 seq=1");
	tb_exec_prof(1, a);
	prof_mark("mark id=2 vcpu=0 seq=2");
	prof_mark("exit");
	if (vcpu[0].insn != 10 || vcpu[1].insn != 19)
		bad++, printf("FAIL insn %llu,%llu, want 10,19\n",
			      (unsigned long long)vcpu[0].insn,
			      (unsigned long long)vcpu[1].insn);
	rewind(prof);
	len = fread(got, 1, sizeof(got) - 1, prof);
	got[len] = 0;
	if (strcmp(got, want))
		bad++, printf("FAIL profile:\n%s\nwant:\n%s", got, want);
	fclose(prof);
	printf("vcpucount block profile: %s\n", bad ? "FAILED" : "right");
	return bad;
}

int main(void)
{
	size_t i, bad = 0, n = ARRAY_SIZE(cases);

	for (i = 0; i < n; i++) {
		enum klass got = classify(cases[i].bytes, cases[i].len);

		if (got != cases[i].want) {
			printf("FAIL %s: class %d, want %d\n", cases[i].name, got,
			       cases[i].want);
			bad++;
		}
	}
	printf("vcpucount decoder: %zu of %zu cases right\n", n - bad, n);
	bad += test_rep();
	return bad || test_profile() ? 1 : 0;
}

#else /* the plugin */

#include "qemu-plugin-v1.h"

EXPORT int qemu_plugin_version = 1;

static const char *const klass_name[K_N] = {
	[K_STAC] = "stac", [K_CLAC] = "clac", [K_LFENCE] = "lfence",
	[K_MFENCE] = "mfence", [K_SFENCE] = "sfence", [K_CPUID] = "cpuid",
	[K_IRET] = "iret", [K_WRMSR] = "wrmsr",
};

static uint64_t marks;
static FILE *out;

static void tb_exec(unsigned int cpu, void *udata)
{
	if (cpu < MAX_VCPUS)
		vcpu[cpu].insn += (uintptr_t)udata;
}

static void insn_exec(unsigned int cpu, void *udata)
{
	if (cpu < MAX_VCPUS)
		vcpu[cpu].k[(uintptr_t)udata]++;
}

static void rep_exec(unsigned int cpu, void *udata)
{
	if (cpu < MAX_VCPUS)
		rep_count(&vcpu[cpu], (uintptr_t)udata);
}

static void print_rep(const char *name, size_t off)
{
	int c;

	fprintf(out, " %s=", name);
	for (c = 0; c < nvcpus; c++)
		fprintf(out, "%s%llu", c ? "," : "",
			(unsigned long long)*(uint64_t *)((char *)&vcpu[c] + off));
}

static void print_counts(const char *what)
{
	int c, k;

	fputs(what, out);
	fputs(" insn=", out);
	for (c = 0; c < nvcpus; c++)
		fprintf(out, "%s%llu", c ? "," : "",
			(unsigned long long)vcpu[c].insn);
	for (k = K_STAC; k <= K_N; k++) {
		fprintf(out, " %s=", k == K_N ? "serial" : klass_name[k] ?
			klass_name[k] : "serial_other");
		for (c = 0; c < nvcpus; c++) {
			uint64_t v = 0;
			int j;

			if (k < K_N)
				v = vcpu[c].k[k];
			else
				for (j = K_CPUID; j < K_N; j++)
					v += vcpu[c].k[j];
			fprintf(out, "%s%llu", c ? "," : "", (unsigned long long)v);
		}
	}
	print_rep("rep", offsetof(struct counts, rep));
	print_rep("rep_start", offsetof(struct counts, rep_start));
	print_rep("rep_bytes", offsetof(struct counts, rep_bytes));
	fputc('\n', out);
	fflush(out);
}

static void mark_exec(unsigned int cpu, void *udata)
{
	char what[96];

	snprintf(what, sizeof(what), "mark id=%llu vcpu=%u seq=%llu",
		 (unsigned long long)(uintptr_t)udata, cpu,
		 (unsigned long long)(++marks));
	print_counts(what);
	if (prof)
		prof_mark(what);
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t i, n = qemu_plugin_tb_n_insns(tb);
	uint64_t va = qemu_plugin_tb_vaddr(tb);

	if (va >= MARK_BASE && va < MARK_BASE + MARK_SIZE && n == 1) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, 0);
		const uint8_t *b = qemu_plugin_insn_data(insn);

		if (qemu_plugin_insn_size(insn) == 1 && b[0] == 0xc3)
			qemu_plugin_register_vcpu_tb_exec_cb(tb, mark_exec,
							     QEMU_PLUGIN_CB_NO_REGS,
							     (void *)(uintptr_t)(va - MARK_BASE));
	}
	if (prof) {
		pthread_mutex_lock(&prof_lock);
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec_prof,
						     QEMU_PLUGIN_CB_NO_REGS, block_get(va, n));
		pthread_mutex_unlock(&prof_lock);
	} else {
		qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec,
						     QEMU_PLUGIN_CB_NO_REGS, (void *)(uintptr_t)n);
	}
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		enum klass k = classify(qemu_plugin_insn_data(insn),
					qemu_plugin_insn_size(insn));

		unsigned int size = rep_size(qemu_plugin_insn_data(insn),
					     qemu_plugin_insn_size(insn));

		if (k != K_NONE)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)k);
		if (size) {
			uint64_t tag = qemu_plugin_insn_vaddr(insn) << 4 | size;

			qemu_plugin_register_vcpu_insn_exec_cb(insn, rep_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)tag);
		}
	}
}

static void at_exit(qemu_plugin_id_t id, void *unused)
{
	print_counts("total");
	fclose(out);
	if (prof) {
		prof_mark("exit");
		fclose(prof);
	}
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
			       int argc, char **argv)
{
	const char *path = "vcpucount.out", *prof_path = NULL;
	int i;

	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			path = argv[i] + 4;
		else if (!strncmp(argv[i], "prof=", 5))
			prof_path = argv[i] + 5;
	}
	if (info->system_emulation)
		nvcpus = info->system.max_vcpus;
	if (nvcpus < 1 || nvcpus > MAX_VCPUS)
		nvcpus = nvcpus < 1 ? 1 : MAX_VCPUS;
	out = fopen(path, "w");
	if (!out) {
		perror(path);
		return -1;
	}
	if (prof_path) {
		prof = fopen(prof_path, "w");
		if (!prof) {
			perror(prof_path);
			return -1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}

#endif
