// SPDX-License-Identifier: GPL-2.0
/*
 * vhost_stress: a seeded, randomized campaign of everything a process, a
 * guest and an administrator can do to vhost-net at once.
 *
 * A supervisor forks P worker processes and one admin process, and kills
 * and restarts workers (SIGKILL, and owners the OOM killer takes in a small
 * memcg) while they run.  Each worker owns two devices and runs threads
 * that draw operations from a generator seeded by (seed, slot, generation,
 * thread), so that a seed replays the same operation sequences, timing
 * aside:
 *
 *  - check: byte-exact traffic of random sizes and batches, both ways, on
 *    the checked device, which only transparent events may touch; any lost
 *    or wrong frame is a failure, and at the end the admin plane's counters
 *    of the device must equal what was sent and received;
 *  - chaos: vhost ioctls in any order, valid or not, on the chaos device
 *    (owner, memory table, features, vring num/addr/base/kick/call/err/
 *    endian, log base, IOTLB messages, backend, busy-poll, workers), some
 *    with slab fault injection, loss-tolerant traffic in between, and
 *    rebuilds (a new device, or RESET_OWNER and set up again on the same
 *    fd) after which byte-exact traffic must work again;
 *  - mm: page-out, cold, collapse, NUMA migration, KSM, soft-dirty
 *    clearing, fork on both devices' rings and buffers; munmap, mremap,
 *    mprotect, MADV_DONTNEED and hwpoison on the chaos device's, with rings
 *    in anonymous, memfd, hugetlb and userfaultfd memory;
 *  - signals to the chaos and mm threads (interrupted ioctls).
 *
 * The admin process sets every tunable of random devices, dumps devices
 * and statistics, reads sysfs, and subscribes to and leaves the monitor
 * group; the supervisor watches it as it watches the workers, and starts it
 * again when it ends (a failure, unless it ended reporting one).
 *
 * A failure is a byte mismatch, a device that does not work again after a
 * rebuild or that no rebuild brings back, counters that do not add up, an
 * admin request that fails where it must not (or no admin plane at all), a
 * process that cannot be killed or does not stop, a process that ends by a
 * signal or an exit status it did not intend (named with the operation
 * each of its threads was doing), an operation kind that never succeeded in
 * a run of 60 s or more, or a kernel splat.  The output is KTAP: the seed
 * first, the operations that ran and succeeded per kind, the results (each
 * after the reasons it failed), a skip per operation kind the machine
 * cannot do (its reason from skip-reasons) and, on a failure, the last
 * operations of every thread of the process that failed.
 *
 *   vhost_stress [-s SECONDS] [-S SEED] [-p PROCS] [-q] [-x OP,...]
 *
 * For the harness's own tests, -X WHAT injects one fault of the kind a
 * broken vhost would cause, a few seconds into the run, so that the result
 * that must catch it can be seen failing: segv (a worker's chaos thread
 * writes through a NULL pointer), abort (a worker's mm thread aborts), bus
 * (a SIGBUS no hwpoison explains), kill (a SIGKILL not the supervisor's),
 * exit (a worker exits 3 without a word), admin (the admin process writes
 * through a NULL pointer), rebuild (every rebuild of a chaos device fails).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/kcov.h>
#include <linux/mempolicy.h>
#include <linux/userfaultfd.h>
#include <linux/vhost.h>
#include <sys/ioctl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "vhost_net_lib.h"
#include "vhost_admin_lib.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif
#ifndef MADV_COLD
#define MADV_COLD 20
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PAGE 4096UL
#define HUGE (2UL << 20)
#define MAX_PROCS 16
#define ADMIN_SLOT MAX_PROCS
#define NSLOTS (MAX_PROCS + 1)
#define LOG_N 12		/* operations kept per thread */
#define MAX_FAILS 16
#define MEM_TOP 0x7ffffffff000ULL
#define LOG_LEN (MEM_TOP / PAGE / 8)	/* a dirty bit per page */
#define OOM_CG "/sys/fs/cgroup/vhost-stress-oom"
#define KILL_WAIT_MS 30000
#define STOP_WAIT_MS 120000
#define MAX_POISON 32
#define KCOV_WORDS (1 << 16)	/* a thread's trace buffer, in PCs */
#define PCSET (1 << 17)		/* distinct PCs the run can count */

#define REBUILD_GIVE_UP_MS 20000	/* a chaos device no rebuild brings back */
#define REBUILD_GIVE_UP_TRIES 10
#define ALL_KINDS_SECONDS 60	/* runs this long: every kind must succeed */
#define INJECT_MS 3000		/* -X: when */

enum thr { T_CHECK, T_CHAOS, T_MM, T_SIG, NTHR };
static const char *const thr_name[NTHR] = { "check", "chaos", "mm", "sig" };

/*
 * Every operation kind, by the name -x takes and the report shows.  The
 * rings-* kinds are the ring memory of the devices a worker opens: ran when
 * asked for, succeeded when the rings got memory of that kind.
 */
enum op {
	OP_CHECK,
	OP_UFFD_REFAULT,
	OP_SET_OWNER,
	OP_RESET_OWNER,
	OP_MEM_TABLE,
	OP_FEATURES,
	OP_VRING_NUM,
	OP_VRING_ADDR,
	OP_VRING_BASE,
	OP_GET_BASE,
	OP_VRING_KICK,
	OP_VRING_CALL,
	OP_VRING_ERR,
	OP_ENDIAN,
	OP_LOG_BASE,
	OP_IOTLB_UPD,
	OP_IOTLB_INV,
	OP_BACKEND,
	OP_BUSYLOOP,
	OP_NEW_WORKER,
	OP_ATTACH_WORKER,
	OP_FREE_WORKER,
	OP_LENIENT,
	OP_REBUILD,
	OP_RESET_REUSE,
	OP_FAILSLAB,
	OP_PAGEOUT,
	OP_COLD,
	OP_COLLAPSE,
	OP_MOVE_PAGES,
	OP_KSM,
	OP_FORK,
	OP_SOFT_DIRTY,
	OP_MUNMAP,
	OP_MREMAP,
	OP_MPROTECT,
	OP_DONTNEED,
	OP_HWPOISON,
	OP_SIGNAL,
	OP_ADM_DUMP,
	OP_ADM_STATS,
	OP_ADM_GET,
	OP_ADM_SET,
	OP_ADM_MONITOR,
	OP_SYSFS,
	OP_KILL,
	OP_OOM,
	OP_RINGS_ANON,
	OP_RINGS_MEMFD,
	OP_RINGS_HUGETLB,
	OP_RINGS_UFFD,
	OP_MAX
};

static const char *const op_name[OP_MAX] = {
	[OP_CHECK] = "check",
	[OP_UFFD_REFAULT] = "uffd-refault",
	[OP_SET_OWNER] = "set-owner",
	[OP_RESET_OWNER] = "reset-owner",
	[OP_MEM_TABLE] = "set-mem-table",
	[OP_FEATURES] = "set-features",
	[OP_VRING_NUM] = "set-vring-num",
	[OP_VRING_ADDR] = "set-vring-addr",
	[OP_VRING_BASE] = "set-vring-base",
	[OP_GET_BASE] = "get-vring-base",
	[OP_VRING_KICK] = "set-vring-kick",
	[OP_VRING_CALL] = "set-vring-call",
	[OP_VRING_ERR] = "set-vring-err",
	[OP_ENDIAN] = "set-vring-endian",
	[OP_LOG_BASE] = "set-log-base",
	[OP_IOTLB_UPD] = "iotlb-update",
	[OP_IOTLB_INV] = "iotlb-invalidate",
	[OP_BACKEND] = "net-set-backend",
	[OP_BUSYLOOP] = "busyloop-timeout",
	[OP_NEW_WORKER] = "new-worker",
	[OP_ATTACH_WORKER] = "attach-worker",
	[OP_FREE_WORKER] = "free-worker",
	[OP_LENIENT] = "lossy-traffic",
	[OP_REBUILD] = "rebuild-new",
	[OP_RESET_REUSE] = "rebuild-reset",
	[OP_FAILSLAB] = "failslab",
	[OP_PAGEOUT] = "madv-pageout",
	[OP_COLD] = "madv-cold",
	[OP_COLLAPSE] = "madv-collapse",
	[OP_MOVE_PAGES] = "move-pages",
	[OP_KSM] = "ksm",
	[OP_FORK] = "fork",
	[OP_SOFT_DIRTY] = "soft-dirty",
	[OP_MUNMAP] = "munmap",
	[OP_MREMAP] = "mremap",
	[OP_MPROTECT] = "mprotect",
	[OP_DONTNEED] = "madv-dontneed",
	[OP_HWPOISON] = "madv-hwpoison",
	[OP_SIGNAL] = "signal",
	[OP_ADM_DUMP] = "adm-dump",
	[OP_ADM_STATS] = "adm-stats",
	[OP_ADM_GET] = "adm-get",
	[OP_ADM_SET] = "adm-set",
	[OP_ADM_MONITOR] = "adm-monitor",
	[OP_SYSFS] = "sysfs",
	[OP_KILL] = "kill",
	[OP_OOM] = "oom",
	[OP_RINGS_ANON] = "rings-anon",
	[OP_RINGS_MEMFD] = "rings-memfd",
	[OP_RINGS_HUGETLB] = "rings-hugetlb",
	[OP_RINGS_UFFD] = "rings-uffd",
};

/* The results, in the order they are printed: see result_name[]. */
enum {
	R_TRAFFIC, R_COUNTERS, R_PROCS, R_ADMIN, R_SPLAT, R_ENDS, R_KINDS, R_NUM
};

struct op_rec {
	uint16_t op;
	int16_t ret;
	uint32_t arg;
	uint32_t ms;
};

struct tlog {
	uint32_t n;
	uint16_t cur;			/* the operation begun last */
	bool busy;			/* ... and not finished */
	struct op_rec e[LOG_N];
};

/*
 * How a process ended by a signal, as its own handler saw it (see
 * on_fatal()): the supervisor names the signal and the operation.
 */
struct death {
	int sig;			/* 0: none recorded */
	int code;			/* si_code */
	int thr;			/* the thread it hit: see my_thr */
	uint64_t addr;			/* si_addr */
};

struct slot {
	uint32_t gen;
	uint32_t nfail;			/* failures its processes reported */
	struct death death;
	/*
	 * Rebuilds failed since one succeeded, in any generation: a killed
	 * worker's streak goes on in the next one.
	 */
	uint32_t rb_fails;
	double rb_first_ms;		/* ... the first of them */
	struct tlog log[NTHR];
};

/* Shared by every process of the run (MAP_SHARED before the forks). */
struct shared {
	uint64_t seed;
	double t0;
	int stop;
	int nfail;
	int kind_fail[R_NUM];		/* failures per result */
	char fail[MAX_FAILS][320];
	int fail_slot[MAX_FAILS];
	int fail_kind[MAX_FAILS];
	struct slot fail_log[MAX_FAILS];	/* its slot when it failed */
	uint64_t ran[OP_MAX], ok[OP_MAX];
	int last_err[OP_MAX];		/* errno of a kind's latest failure */
	struct slot slot[NSLOTS];
	int injected;			/* -X: done */
	uint32_t poison_tries;		/* MADV_HWPOISON calls made */
	uint32_t ends;			/* processes that ended unexpectedly */
	uint32_t rebuild_err[4][256];	/* failed rebuilds by step, errno */
	uint32_t counter_checks;	/* checked devices whose counters matched */
	int uffd_err;			/* the first userfaultfd() error */
	uint32_t uffd_faults;		/* faults the handlers answered */
	uint32_t uffd_vhost;		/* ... of a thread not the worker's */
	uint32_t npcs;			/* distinct PCs in pcs[] */
	uint64_t pcs[PCSET];		/* open addressing, 0 = free */
};

static const char *const result_name[R_NUM] = {
	"checked traffic byte-exact, devices work again after every rebuild",
	"counters of the checked devices add up",
	"every process killed or stopped went away in time",
	"the admin plane answered every request it must",
	"kernel log free of splats",
	"no process ended by a signal or an exit it did not intend",
	"every operation kind succeeded at least once",
};

static struct shared *sh;
static bool excluded[OP_MAX];	/* -x */
static bool have_failslab, have_node1, have_hugetlb, have_admin, have_kcov;
static bool have_thp;
static int poisoned;		/* per worker process */
static int poison_inflight;	/* per worker process: madvise(MADV_HWPOISON)s */
static int local_stop;		/* this process failed: it stops, is restarted */
static int my_slot = -1;	/* this process's slot; -1 the supervisor */
static __thread int my_thr = -1;	/* T_*; -1 main, NTHR uffd handler */
static sigset_t usr1;		/* SIGUSR1: what the signal thread sends */
static __thread bool in_poison;	/* in madvise(MADV_HWPOISON): see on_fatal() */

/* -X: one fault injected, for the harness's tests of this oracle. */
enum inject { INJ_NONE, INJ_SEGV, INJ_ABORT, INJ_BUS, INJ_KILL, INJ_EXIT,
	      INJ_ADMIN, INJ_REBUILD, INJ_NUM };
static const char *const inject_name[INJ_NUM] = {
	"none", "segv", "abort", "bus", "kill", "exit", "admin", "rebuild",
};

static enum inject inject;
static int *volatile null_ptr;	/* what -X segv and -X admin write through */

/* splitmix64: small, seedable, and good enough to draw operations. */
struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t below(struct rng *r, uint32_t n)
{
	return n ? rnd(r) % n : 0;
}

static bool chance(struct rng *r, uint32_t one_in)
{
	return !below(r, one_in);
}

static void rng_init(struct rng *r, int slot, uint32_t gen, int thr)
{
	r->s = sh->seed ^ ((uint64_t)slot << 56) ^ ((uint64_t)gen << 32) ^
	       ((uint64_t)thr << 24);
	rnd(r);
}

static double ms_since_start(void)
{
	return now_ms() - sh->t0;
}

static bool stopping(void)
{
	return __atomic_load_n(&sh->stop, __ATOMIC_RELAXED) ||
	       __atomic_load_n(&local_stop, __ATOMIC_RELAXED);
}

/* What a thread is doing: the operation a death or a failure names. */
static void op_begin(int slot, int thr, enum op op)
{
	struct tlog *l = &sh->slot[slot].log[thr];

	l->cur = op;
	__atomic_store_n(&l->busy, true, __ATOMIC_RELAXED);
}

static void rec(int slot, int thr, enum op op, int ret, uint32_t arg)
{
	struct tlog *l = &sh->slot[slot].log[thr];
	uint32_t i = l->n++ % LOG_N;

	l->e[i] = (struct op_rec){ .op = op, .ret = ret < -32767 ? -32767 : ret,
				   .arg = arg, .ms = ms_since_start() };
	l->cur = op;
	__atomic_store_n(&l->busy, false, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sh->ran[op], 1, __ATOMIC_RELAXED);
	if (ret >= 0)
		__atomic_add_fetch(&sh->ok[op], 1, __ATOMIC_RELAXED);
	else
		__atomic_store_n(&sh->last_err[op], -ret, __ATOMIC_RELAXED);
}

/*
 * A failure of result kind `result`, found about the process in `slot`
 * (-1: none): the message, and that slot's operation logs as they are now
 * (a process started again in the slot writes over them).  The process
 * that reports it stops.
 */
static void failf(int slot, int result, const char *fmt, ...)
{
	int i = __atomic_fetch_add(&sh->nfail, 1, __ATOMIC_RELAXED);
	char msg[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&sh->kind_fail[result], 1, __ATOMIC_RELAXED);
	fprintf(stderr, "# FAIL [%.1fs] slot %d: %s\n", ms_since_start() / 1000,
		slot, msg);
	__atomic_store_n(&local_stop, 1, __ATOMIC_RELAXED);
	if (slot >= 0 && slot == my_slot)
		__atomic_add_fetch(&sh->slot[slot].nfail, 1, __ATOMIC_RELAXED);
	if (i >= MAX_FAILS)
		return;
	snprintf(sh->fail[i], sizeof(sh->fail[i]), "%s", msg);
	sh->fail_slot[i] = slot;
	sh->fail_kind[i] = result;
	if (slot >= 0 && slot < NSLOTS)
		memcpy(&sh->fail_log[i], &sh->slot[slot], sizeof(struct slot));
}

/* -X: the fault asked for, once, in the thread it is meant for. */
static bool inject_now(enum inject what)
{
	int slot = what == INJ_ADMIN ? ADMIN_SLOT : 0;

	if (inject != what || my_slot != slot || ms_since_start() < INJECT_MS)
		return false;
	if (what == INJ_REBUILD)
		return true;		/* every time: no rebuild succeeds */
	return !__atomic_exchange_n(&sh->injected, 1, __ATOMIC_RELAXED);
}

/*
 * Coverage (CONFIG_KCOV, only drivers/vhost instrumented: see
 * scripts/build-kernel): each thread traces the vhost code its own system
 * calls run (ioctls, kicks, the MMU notifier callbacks of its mm
 * operations, netlink handlers); a worker's main thread, which opens the
 * checked device, also gets what that device's vhost worker runs (remote
 * coverage: vhost hands its owner's handle to the worker).  The PCs go into
 * one set for the run: distinct basic blocks of drivers/vhost reached.
 */
struct kcov {
	int fd;
	uint64_t *area;
};

static void kcov_begin(struct kcov *k, bool remote, uint32_t id)
{
	struct kcov_remote_arg ra = {
		.trace_mode = KCOV_TRACE_PC,
		.area_size = KCOV_WORDS,
		.common_handle = kcov_remote_handle(KCOV_SUBSYSTEM_COMMON,
						    id & 0xffffff),
	};

	k->fd = -1;
	k->area = NULL;
	if (!have_kcov)
		return;
	k->fd = open("/sys/kernel/debug/kcov", O_RDWR | O_CLOEXEC);
	if (k->fd < 0 || ioctl(k->fd, KCOV_INIT_TRACE, KCOV_WORDS))
		goto fail;
	k->area = mmap(NULL, KCOV_WORDS * 8, PROT_READ | PROT_WRITE, MAP_SHARED,
		       k->fd, 0);
	if (k->area == MAP_FAILED)
		goto fail;
	if (remote ? ioctl(k->fd, KCOV_REMOTE_ENABLE, &ra) :
		     ioctl(k->fd, KCOV_ENABLE, KCOV_TRACE_PC))
		goto fail;
	__atomic_store_n(&k->area[0], 0, __ATOMIC_RELAXED);
	return;
fail:
	if (k->area && k->area != MAP_FAILED)
		munmap(k->area, KCOV_WORDS * 8);
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	k->area = NULL;
}

static void pc_add(uint64_t pc)
{
	uint32_t h = (pc * 0x9e3779b97f4a7c15ULL) >> 47, i;
	uint64_t zero;

	for (i = 0; i < 64; i++, h = (h + 1) & (PCSET - 1)) {
		uint64_t *slot = &sh->pcs[h & (PCSET - 1)];

		zero = 0;
		if (__atomic_load_n(slot, __ATOMIC_RELAXED) == pc)
			return;
		if (__atomic_compare_exchange_n(slot, &zero, pc, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
			__atomic_add_fetch(&sh->npcs, 1, __ATOMIC_RELAXED);
			return;
		}
		if (zero == pc)
			return;
	}
}

/* Move the PCs traced so far into the run's set. */
static void kcov_drain(struct kcov *k)
{
	uint64_t n, i;

	if (!k->area)
		return;
	n = __atomic_load_n(&k->area[0], __ATOMIC_RELAXED);
	if (n > KCOV_WORDS - 1)
		n = KCOV_WORDS - 1;
	for (i = 1; i <= n; i++)
		pc_add(k->area[i]);
	__atomic_store_n(&k->area[0], 0, __ATOMIC_RELAXED);
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

static void sleep_ms(double ms)
{
	if (ms > 0)
		usleep(ms * 1000);
}

/* ---- memory of the rings ---------------------------------------------- */

enum kind { K_ANON, K_MEMFD, K_HUGETLB, K_UFFD, NKINDS };

/* Both rings of a device in one block of memory of one kind. */
struct ringmem {
	void *p;
	size_t len;
	enum kind kind;
};

/*
 * The worker's userfaultfd (a full one: the campaign runs as root, so that
 * vhost's worker, faulting in kernel mode, waits for the handler like any
 * thread) and its handler thread.  Missing faults in the checked device's
 * rings are answered from shadow, its copy of them (see uffd_refault()),
 * any other with the zero page: the chaos device's rings, whose content a
 * fault there has lost anyway (they are rebuilt).  A fault of a thread that
 * is not one of the worker's own is its vhost worker's.
 */
struct stress_uffd {
	int fd;
	/*
	 * The handler stops last, once the worker's threads are joined and
	 * its devices closed: a fault on a ring it no longer serves (a
	 * thread's, or a vhost worker's) would wait for ever.
	 */
	int stop;
	struct rng r;		/* how long the handler takes */
	char *base;		/* the checked device's rings, if uffd-backed */
	size_t len;
	uint8_t *shadow;	/* their content, for the next missing fault */
	pid_t own[NTHR + 2];	/* the worker's threads: main, T_*, handler */
	uint32_t vhost_chk;	/* faults of vhost in [base, base + len) */
};

static struct stress_uffd us = { .fd = -1 };

static bool uffd_own(pid_t tid)
{
	unsigned int i;

	for (i = 0; i < NTHR + 2; i++)
		if (__atomic_load_n(&us.own[i], __ATOMIC_RELAXED) == tid)
			return true;
	return false;
}

/*
 * Fill the page at addr.  A fill that fails (the range is unmapped, or a
 * racing fault filled it) still wakes the waiters: they retry the fault,
 * and get the page or the fault's error instead of waiting for ever.
 */
static void uffd_answer(unsigned long addr)
{
	unsigned long off = addr - (unsigned long)us.base;
	struct uffdio_range wake = { .start = addr, .len = PAGE };
	int r;

	if (us.shadow && off < us.len) {
		struct uffdio_copy c = {
			.dst = addr, .src = (uintptr_t)us.shadow + off, .len = PAGE,
		};

		r = ioctl(us.fd, UFFDIO_COPY, &c);
	} else {
		struct uffdio_zeropage z = { .range = { .start = addr, .len = PAGE } };

		r = ioctl(us.fd, UFFDIO_ZEROPAGE, &z);
	}
	if (r)
		ioctl(us.fd, UFFDIO_WAKE, &wake);
}

static void *uffd_handler(void *arg)
{
	struct pollfd p = { .fd = us.fd, .events = POLLIN };
	struct uffd_msg m;
	unsigned long addr;

	(void)arg;
	my_thr = NTHR;
	__atomic_store_n(&us.own[NTHR + 1], gettid(), __ATOMIC_RELAXED);
	while (!__atomic_load_n(&us.stop, __ATOMIC_RELAXED)) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		if (read(us.fd, &m, sizeof(m)) != sizeof(m) ||
		    m.event != UFFD_EVENT_PAGEFAULT)
			continue;
		/* A handler that takes its time: the fault waits. */
		if (chance(&us.r, 4))
			usleep(below(&us.r, 3000));
		addr = m.arg.pagefault.address & ~(PAGE - 1);
		uffd_answer(addr);
		__atomic_add_fetch(&sh->uffd_faults, 1, __ATOMIC_RELAXED);
		if (uffd_own(m.arg.pagefault.feat.ptid))
			continue;
		__atomic_add_fetch(&sh->uffd_vhost, 1, __ATOMIC_RELAXED);
		if (addr - (unsigned long)us.base < us.len)
			__atomic_add_fetch(&us.vhost_chk, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* The userfaultfd, with the faulting thread's id in each message. */
static void uffd_open(void)
{
	struct uffdio_api api = { .api = UFFD_API,
				  .features = UFFD_FEATURE_THREAD_ID };
	int err = 0, none = 0;

	us.fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (us.fd < 0) {
		err = errno;
	} else if (ioctl(us.fd, UFFDIO_API, &api)) {
		err = errno;
		close(us.fd);
		us.fd = -1;
	}
	if (err)
		__atomic_compare_exchange_n(&sh->uffd_err, &none, err, false,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

static int ringmem_alloc(struct ringmem *m, unsigned int num, enum kind kind,
			 bool thp)
{
	size_t len = vnet_rings_size(num);
	int fd;

	m->kind = kind;
	m->p = MAP_FAILED;
	switch (kind) {
	case K_MEMFD:
		m->len = (len + PAGE - 1) & ~(PAGE - 1);
		fd = memfd_create("vhost-stress-rings", MFD_CLOEXEC);
		if (fd >= 0 && !ftruncate(fd, m->len))
			m->p = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
				    MAP_SHARED, fd, 0);
		if (fd >= 0)
			close(fd);
		break;
	case K_HUGETLB:
		m->len = (len + HUGE - 1) & ~(HUGE - 1);
		if (have_hugetlb)
			m->p = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB,
				    -1, 0);
		break;
	case K_ANON:
		/* a THP-sized block now and then, for MADV_COLLAPSE */
		if (thp) {
			char *p = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			char *a;

			if (p == MAP_FAILED)
				break;
			a = (char *)(((uintptr_t)p + HUGE - 1) & ~(HUGE - 1));
			if (a > p)
				munmap(p, a - p);
			munmap(a + HUGE, p + HUGE - a);
			madvise(a, HUGE, MADV_HUGEPAGE);
			m->p = a;
			m->len = HUGE;
			break;
		}
		/* fall through */
	case K_UFFD:
	default:
		m->len = (len + PAGE - 1) & ~(PAGE - 1);
		m->p = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m->p != MAP_FAILED && kind == K_UFFD) {
			struct uffdio_register reg = {
				.range = { .start = (uintptr_t)m->p, .len = m->len },
				.mode = UFFDIO_REGISTER_MODE_MISSING,
			};

			if (us.fd < 0 || ioctl(us.fd, UFFDIO_REGISTER, &reg))
				m->kind = K_ANON;
		}
		break;
	}
	if (m->p == MAP_FAILED && kind != K_ANON)
		return ringmem_alloc(m, num, K_ANON, false);
	if (m->p == MAP_FAILED) {
		m->p = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void ringmem_free(struct ringmem *m)
{
	if (m->p)
		munmap(m->p, m->len);
	m->p = NULL;
}

/* ---- devices ------------------------------------------------------------ */

struct dev {
	struct vnet n;
	struct ringmem rm;
	bool open;
	uint8_t step;			/* a rebuild got to: 0 reset, 1 rings, 2 open, 3 mem */
	uint32_t seq;
	uint64_t tx_frames, tx_bytes, rx_frames, rx_bytes;
	int64_t id;
};

/* A region of a device the mm thread may hit. */
struct region {
	void *p;
	size_t len;
	bool ring;
	enum kind kind;
};

#define NREG 3			/* rings, RX buffers, TX buffers */

struct worker {
	int slot;
	uint32_t gen;
	struct dev chk, chaos;
	pthread_mutex_t chaos_lock;	/* the chaos device's state and memory */
	bool need_rebuild;		/* chaos_lock; its rings were lost */
	bool unowned;			/* chaos_lock; RESET_OWNER done */
	bool want_huge;			/* chaos_lock; next rings THP-sized */
	pthread_mutex_t reg_lock;	/* the regions below */
	struct region reg[2][NREG];	/* [checked, chaos] */
	pid_t tid[NTHR];
	struct kcov kmain;		/* remote: the checked device's worker */
	void *log;			/* dirty log, LOG_LEN, NORESERVE */
	int extra_fd[4];		/* eventfds the chaos thread hands out */
	uint32_t workers[4];
	int nworkers;
};

static void publish_regions(struct worker *w, int which, struct dev *d)
{
	struct region *r = w->reg[which];

	pthread_mutex_lock(&w->reg_lock);
	memset(r, 0, sizeof(w->reg[which]));
	if (d->open) {
		r[0] = (struct region){ d->rm.p, d->rm.len, true, d->rm.kind };
		r[1] = (struct region){ d->n.bufs[VNET_RX], d->n.bufs_len, false, K_ANON };
		r[2] = (struct region){ d->n.bufs[VNET_TX], d->n.bufs_len, false, K_ANON };
	}
	pthread_mutex_unlock(&w->reg_lock);
}

static void dev_close(struct worker *w, struct dev *d, bool chaos);
static int chaos_mem_table(struct worker *w, struct rng *r, unsigned int how);

/*
 * Ring memory of any kind, for both devices: the checked device's in
 * userfaultfd memory too, where vhost's worker waits for the handler after
 * uffd_refault().  Kinds left out (-x), or that the machine lacks, are
 * anonymous memory instead.
 */
static enum kind ring_kind(struct rng *r)
{
	enum kind k = below(r, NKINDS);

	if (excluded[OP_RINGS_ANON + k] || (k == K_HUGETLB && !have_hugetlb))
		return K_ANON;
	return k;
}

/* The checked device's rings in userfaultfd memory: their copy, zeroes. */
static void shadow_rings(struct ringmem *m)
{
	void *p = mmap(NULL, m->len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;		/* faults get the zero page: dropped never */
	us.shadow = p;
	us.len = m->len;
	__atomic_store_n(&us.base, m->p, __ATOMIC_RELEASE);
}

static int dev_open(struct worker *w, struct dev *d, struct rng *r, bool chaos)
{
	static const unsigned int nums[] = { 64, 128, 256 };
	struct vring_layout l[2];
	struct vnet_opts o = {
		.ring_num = nums[below(r, 3)],
		.event_idx = below(r, 2),
		.indirect = chance(r, 4),
		.mrg_rxbuf = below(r, 2),
		.split_hdr = chance(r, 4),
		.layout = { &l[0], &l[1] },
	};
	enum kind k = ring_kind(r);
	bool thp = chance(r, 2);
	int ret;

	if (chaos && w->want_huge) {	/* asked for by want_huge_rings() */
		k = K_ANON;
		thp = true;
		w->want_huge = false;
	}
	d->step = 1;
	ret = ringmem_alloc(&d->rm, o.ring_num, k, thp);
	rec(w->slot, chaos ? T_CHAOS : T_CHECK, OP_RINGS_ANON + k,
	    ret ? ret : d->rm.kind == k ? 0 : -EOPNOTSUPP, chaos);
	if (ret)
		return ret;
	if (!chaos && d->rm.kind == K_UFFD)
		shadow_rings(&d->rm);
	memset(d->rm.p, 0, d->rm.len);
	vnet_rings_layout(d->rm.p, o.ring_num, l);
	d->step = 2;
	ret = vnet_open(&d->n, &o);
	if (ret) {
		ringmem_free(&d->rm);
		return ret;
	}
	d->open = true;
	d->step = 3;
	if (chaos) {
		ret = chaos_mem_table(w, r, 0);
		if (ret) {
			dev_close(w, d, chaos);
			return ret;
		}
	}
	vnet_rx_fill(&d->n);
	d->id = vhost_fd_id(d->n.vhost_fd);
	publish_regions(w, chaos, d);
	return 0;
}

static void dev_close(struct worker *w, struct dev *d, bool chaos)
{
	d->open = false;
	publish_regions(w, chaos, d);
	vnet_close(&d->n);
	ringmem_free(&d->rm);
}

/* Frame lengths of a check: 1 to 4 sizes, 42 to 1514 bytes. */
static int pick_lens(struct rng *r, size_t *lens)
{
	static const size_t common[] = { 60, 64, 128, 256, 512, 777, 1500, 1514 };
	int n = 1 + below(r, 4), i;

	for (i = 0; i < n; i++)
		lens[i] = chance(r, 2) ? common[below(r, 8)] : 42 + below(r, 1473);
	return n;
}

/* Byte-exact traffic, both ways; 0 or -1 with the reason in why. */
static int strict_traffic(struct dev *d, struct rng *r, int count, char *why,
			  bool account)
{
	size_t lens[4];
	int nl = pick_lens(r, lens), batch = 1 + below(r, 64), i;
	char what[VNET_WHY_LEN];

	if (vnet_check_tx(&d->n, lens, nl, count, batch, d->seq, what)) {
		snprintf(why, VNET_WHY_LEN, "tx: %.*s", VNET_WHY_LEN - 5, what);
		return -1;
	}
	if (account) {
		d->tx_frames += count;
		for (i = 0; i < count; i++)
			d->tx_bytes += lens[i % nl];
	}
	if (vnet_check_rx(&d->n, lens, nl, count, batch, d->seq, what)) {
		snprintf(why, VNET_WHY_LEN, "rx: %.*s", VNET_WHY_LEN - 5, what);
		return -1;
	}
	if (account) {
		d->rx_frames += count;
		for (i = 0; i < count; i++)
			d->rx_bytes += lens[i % nl];
	}
	d->seq += count;
	return 0;
}

/* ---- the check thread --------------------------------------------------- */

static void thread_start(struct worker *w, enum thr t)
{
	my_thr = t;
	w->tid[t] = gettid();
	__atomic_store_n(&us.own[1 + t], w->tid[t], __ATOMIC_RELAXED);
}

/*
 * The checked device's rings dropped and served back from their copy by
 * the userfaultfd handler, with vhost's worker the first to need them: the
 * backends are detached (vhost is done with the rings), the rings copied
 * and dropped, the backends attached again (vhost reads its used indices
 * back: faults of this thread), and a frame put on the wire with the
 * driver's hands off the RX ring, whose descriptors and avail ring vhost's
 * worker must fault in and wait for.  The frame must arrive byte-exact.
 * Returns 0 if vhost's worker waited for the handler, -EAGAIN if it did
 * not, -EIO with the reason in why if the device failed.
 */
static int uffd_refault(struct worker *w, struct rng *r, char *why)
{
	struct dev *d = &w->chk;
	uint32_t vhost0 = __atomic_load_n(&us.vhost_chk, __ATOMIC_RELAXED);
	size_t len = 60 + below(r, 1455);
	uint8_t frame[1514], got[1514];
	int ret;

	ret = vnet_set_backend(&d->n, VNET_RX, -1);
	if (!ret)
		ret = vnet_set_backend(&d->n, VNET_TX, -1);
	if (ret) {
		snprintf(why, VNET_WHY_LEN, "detaching: %s", strerror(-ret));
		return -EIO;
	}
	memcpy(us.shadow, d->rm.p, d->rm.len);
	ret = madvise(d->rm.p, d->rm.len, MADV_DONTNEED) ? -errno : 0;
	if (!ret)
		ret = vnet_set_backend(&d->n, VNET_RX, d->n.tap_fd);
	if (!ret)
		ret = vnet_set_backend(&d->n, VNET_TX, d->n.tap_fd);
	frame_fill(frame, len, NULL, d->seq);
	if (!ret)
		ret = wire_send(&d->n, frame, len);
	if (ret) {
		snprintf(why, VNET_WHY_LEN, "dropping, attaching: %s", strerror(-ret));
		return -EIO;
	}
	ret = vnet_rx_one(&d->n, got, sizeof(got), NULL, 10000);
	if (ret != (int)len || memcmp(frame, got, len)) {
		snprintf(why, VNET_WHY_LEN, "a frame of %zu bytes: %s", len,
			 ret < 0 ? strerror(-ret) : "received other bytes");
		return -EIO;
	}
	d->rx_frames++;
	d->rx_bytes += len;
	d->seq++;
	return __atomic_load_n(&us.vhost_chk, __ATOMIC_RELAXED) != vhost0 ?
	       0 : -EAGAIN;
}

/* The drop and refault, now and then, when the rings are uffd-backed. */
static bool refault_now(struct worker *w, struct rng *r)
{
	return chance(r, 8) && w->chk.rm.kind == K_UFFD && us.shadow &&
	       !excluded[OP_UFFD_REFAULT];
}

static void *check_thread(void *arg)
{
	struct worker *w = arg;
	struct rng r;
	char why[VNET_WHY_LEN];
	int count, ret;
	struct kcov k;

	thread_start(w, T_CHECK);
	kcov_begin(&k, false, 0);
	rng_init(&r, w->slot, w->gen, T_CHECK);
	while (!stopping() && !excluded[OP_CHECK]) {
		if (refault_now(w, &r)) {
			op_begin(w->slot, T_CHECK, OP_UFFD_REFAULT);
			ret = uffd_refault(w, &r, why);
			rec(w->slot, T_CHECK, OP_UFFD_REFAULT, ret, 0);
			if (ret == -EIO) {
				failf(w->slot, R_TRAFFIC,
				      "checked device %s, rings dropped and served back: %s",
				      w->chk.n.ifname, why);
				break;
			}
			continue;
		}
		count = 1 + below(&r, 200);
		op_begin(w->slot, T_CHECK, OP_CHECK);
		if (strict_traffic(&w->chk, &r, count, why, true)) {
			rec(w->slot, T_CHECK, OP_CHECK, -EIO, count);
			failf(w->slot, R_TRAFFIC, "checked device %s: %s",
			      w->chk.n.ifname, why);
			break;
		}
		rec(w->slot, T_CHECK, OP_CHECK, 0, count);
		kcov_drain(&k);
	}
	kcov_drain(&k);
	return NULL;
}

/* ---- the chaos thread ---------------------------------------------------- */

/*
 * The memory the chaos device may reach: its rings, buffers and indirect
 * tables, nothing else of this process.  Its driver is hostile (rings the
 * ioctls moved, descriptors read from frame bytes): with the whole address
 * space in its table, vhost would write frames over the worker's heap and
 * the run's shared state.
 */
static int chaos_regions(struct worker *w, struct region *g)
{
	struct dev *d = &w->chaos;
	int n = 0, q;

	g[n++] = (struct region){ d->rm.p, d->rm.len, true, d->rm.kind };
	for (q = 0; q < 2; q++) {
		g[n++] = (struct region){ d->n.bufs[q], d->n.bufs_len };
		g[n++] = (struct region){
			d->n.vq[q].ind, (d->n.vq[q].num * VQ_MAX_SG *
					 sizeof(struct vring_desc) + PAGE - 1) &
					~(PAGE - 1) };
	}
	return n;
}

static void ident(struct vhost_memory_region *m, const void *p, size_t len)
{
	*m = (struct vhost_memory_region){ (uintptr_t)p, len, (uintptr_t)p };
}

/*
 * A memory table of the chaos regions: 0 as set up (identity), 1 the rings
 * in two regions, 2 a hole of one page in the rings, 3 the rings' guest
 * addresses backed by the RX buffers, 4 more regions than allowed, 5 none.
 */
static int chaos_mem_table(struct worker *w, struct rng *r, unsigned int how)
{
	struct dev *d = &w->chaos;
	struct {
		struct vhost_memory m;
		struct vhost_memory_region reg[80];
	} mem = {};
	struct region g[5];
	int ng = chaos_regions(w, g), i, n = 0;
	size_t cut = (1 + below(r, g[0].len / PAGE)) * PAGE;
	char *rp = g[0].p;

	if (how == 4) {
		for (n = 0; n < 65 + (int)below(r, 15); n++)
			mem.reg[n] = (struct vhost_memory_region){
				(uint64_t)(n + 1) << 32, PAGE,
				(uintptr_t)d->n.bufs[VNET_RX] };
	} else if (how != 5) {
		for (i = 1; i < ng; i++)
			ident(&mem.reg[n++], g[i].p, g[i].len);
		if (how == 0 || cut >= g[0].len) {
			ident(&mem.reg[n++], rp, g[0].len);
		} else if (how == 1) {
			ident(&mem.reg[n++], rp, cut);
			ident(&mem.reg[n++], rp + cut, g[0].len - cut);
		} else if (how == 2) {
			ident(&mem.reg[n++], rp, cut - PAGE);
			ident(&mem.reg[n++], rp + cut, g[0].len - cut);
		} else {
			mem.reg[n++] = (struct vhost_memory_region){
				(uintptr_t)rp, g[0].len < d->n.bufs_len ?
				g[0].len : d->n.bufs_len,
				(uintptr_t)d->n.bufs[VNET_RX] };
		}
	}
	for (i = 0; i < n; i++)	/* an empty first part of a hole */
		if (!mem.reg[i].memory_size)
			mem.reg[i] = mem.reg[--n];
	mem.m.nregions = n;
	return xioctl(d->n.vhost_fd, VHOST_SET_MEM_TABLE, &mem);
}

static int set_mem_table(struct worker *w, struct rng *r, uint32_t *arg)
{
	*arg = below(r, 6);
	return chaos_mem_table(w, r, *arg);
}

static int set_vring_addr(struct worker *w, struct rng *r, uint32_t *arg)
{
	struct dev *d = &w->chaos;
	unsigned int q = below(r, 3);
	struct vq *vq = &d->n.vq[q & 1];
	struct vhost_vring_addr a = {
		.index = q,
		.desc_user_addr = (uintptr_t)vq->desc,
		.avail_user_addr = (uintptr_t)vq->avail,
		.used_user_addr = (uintptr_t)vq->used,
	};

	*arg = below(r, 5) << 2 | q;
	switch (*arg >> 2) {
	case 1:		/* misaligned */
		a.used_user_addr += 2;
		break;
	case 2:		/* a ring the driver does not write: its buffers */
		a.desc_user_addr = (uintptr_t)d->n.bufs[VNET_TX];
		break;
	case 3:		/* not user memory */
		a.avail_user_addr = 0xffff888000000000ULL;
		break;
	case 4:		/* logged, at its own guest address */
		a.flags = 1 << VHOST_VRING_F_LOG;
		a.log_guest_addr = a.used_user_addr;
		break;
	}
	return xioctl(d->n.vhost_fd, VHOST_SET_VRING_ADDR, &a);
}

static int eventfd_new(void)
{
	return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}

static int set_vring_file(struct worker *w, struct rng *r, unsigned long req,
			  uint32_t *arg)
{
	struct dev *d = &w->chaos;
	struct vhost_vring_file f = { .index = below(r, 3) };
	struct vq *vq = &d->n.vq[f.index & 1];
	int slot = below(r, 4);

	*arg = below(r, 4) << 2 | f.index;
	switch (*arg >> 2) {
	case 0:		/* the driver's own, as set up */
		f.fd = req == VHOST_SET_VRING_KICK ? vq->kick_fd :
		       req == VHOST_SET_VRING_CALL ? vq->call_fd : vq->err_fd;
		break;
	case 1:		/* another eventfd */
		if (w->extra_fd[slot] < 0)
			w->extra_fd[slot] = eventfd_new();
		f.fd = w->extra_fd[slot];
		break;
	case 2:		/* none */
		f.fd = VHOST_FILE_UNBIND;
		break;
	default:	/* not an eventfd */
		f.fd = d->n.tap_fd;
		break;
	}
	return xioctl(d->n.vhost_fd, req, &f);
}

/* An IOTLB entry, or its removal, over some chaos region. */
static int iotlb_msg(struct worker *w, struct rng *r, uint8_t type,
		     uint32_t *arg)
{
	struct vhost_msg_v2 m = { .type = VHOST_IOTLB_MSG_V2 };
	struct region g[5];
	int ng = chaos_regions(w, g), i = below(r, ng);
	size_t pages = g[i].len / PAGE, first = below(r, pages);

	*arg = below(r, 3) << 4 | i;
	if (chance(r, 3)) {
		/* as with an IOMMU: VIRTIO_F_ACCESS_PLATFORM on first */
		uint64_t f = w->chaos.n.features | 1ULL << VIRTIO_F_ACCESS_PLATFORM;

		xioctl(w->chaos.n.vhost_fd, VHOST_SET_FEATURES, &f);
		*arg |= 1U << 31;
	}
	m.iotlb.type = type;
	m.iotlb.perm = VHOST_ACCESS_RW;
	m.iotlb.iova = (uintptr_t)g[i].p;
	m.iotlb.size = g[i].len;
	switch (*arg >> 4) {
	case 1:		/* some of its pages */
		m.iotlb.iova += first * PAGE;
		m.iotlb.size = (1 + below(r, pages - first)) * PAGE;
		break;
	case 2:		/* one page, read-only */
		m.iotlb.iova += first * PAGE;
		m.iotlb.size = PAGE;
		m.iotlb.perm = VHOST_ACCESS_RO;
		break;
	}
	m.iotlb.uaddr = m.iotlb.iova;
	return write(w->chaos.n.vhost_fd, &m, sizeof(m)) < 0 ? -errno : 0;
}

/* Frames queued on the TAP for the guest, and on the wire: dropped. */
static void drain(struct dev *d)
{
	static uint8_t buf[VNET_BIG_FRAME + 64];
	int fl = fcntl(d->n.tap_fd, F_GETFL);

	fcntl(d->n.tap_fd, F_SETFL, fl | O_NONBLOCK);
	while (read(d->n.tap_fd, buf, sizeof(buf)) > 0)
		;
	fcntl(d->n.tap_fd, F_SETFL, fl);
	while (wire_recv(&d->n, buf, sizeof(buf), 20) >= 0)
		;
}

/*
 * Traffic that may be lost (the ioctls before may have broken the device):
 * frames queued both ways, then whatever came out taken.  Returns how many
 * frames vhost delivered, or -ENODATA if none: a frame queued is not a
 * frame delivered, and only delivery counts as a success of this kind.
 */
static int lenient_traffic(struct dev *d, struct rng *r)
{
	static uint8_t frame[2048];
	int i, n = 1 + below(r, 16), got = 0;
	size_t len;

	for (i = 0; i < n; i++) {
		len = 60 + below(r, 1400);
		frame_fill(frame, len, (const uint8_t *)"\x02\0\0\0\0\1", d->seq++);
		if (chance(r, 2))
			vnet_tx_one(&d->n, frame, len, NULL, 5);
		else
			wire_send(&d->n, frame, len);
	}
	vnet_tx_reap(&d->n);
	while (vnet_rx_one(&d->n, frame, sizeof(frame), NULL, 2) >= 0)
		got++;
	vnet_rx_fill(&d->n);
	while (wire_recv(&d->n, frame, sizeof(frame), 0) >= 0)
		got++;
	return got ? got : -ENODATA;
}

/*
 * RESET_OWNER and a new setup on the same fd.  The backends are detached
 * first, as a driver would; when the chaos made that impossible (a ring
 * vhost cannot reach), RESET_OWNER stops them itself.  An unowned device
 * (EPERM) just gets its owner back in the setup.
 */
static int rebuild_reset(struct worker *w, struct rng *r)
{
	struct dev *d = &w->chaos;
	int ret;

	ret = vnet_reset_owner(&d->n);
	if (ret)
		ret = xioctl(d->n.vhost_fd, VHOST_RESET_OWNER, NULL);
	if (ret && ret != -EPERM)
		return ret;
	drain(d);
	ret = vnet_setup(&d->n);
	if (!ret)
		ret = chaos_mem_table(w, r, 0);
	if (!ret)
		vnet_rx_fill(&d->n);
	return ret;
}

/*
 * The chaos device anew, and byte-exact traffic through it.  0, -EIO (the
 * traffic failed: reported here), or the error that stopped the rebuild,
 * after which the next one is a new device (see rebuild_failed()).
 */
static int rebuild(struct worker *w, struct rng *r, bool same_fd,
		   uint32_t *arg)
{
	struct dev *d = &w->chaos;
	char why[VNET_WHY_LEN];
	int ret;

	*arg = same_fd;
	d->step = 0;
	if (inject_now(INJ_REBUILD))
		return -ENOTRECOVERABLE;
	if (same_fd && !w->need_rebuild) {
		ret = rebuild_reset(w, r);
		if (ret)
			return ret;
	} else {
		if (d->open && !w->need_rebuild && chance(r, 2))	/* in flight */
			lenient_traffic(d, r);
		if (d->open)
			dev_close(w, d, true);
		ret = dev_open(w, d, r, true);
		*arg |= d->step << 1;	/* 1 rings, 2 vnet_open, 3 memory */
		if (ret)
			return ret;
		w->need_rebuild = false;
		w->unowned = false;
	}
	/* no signal may interrupt the driver's waits here */
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	ret = strict_traffic(d, r, 1 + below(r, 64), why, false);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
	if (ret) {
		failf(w->slot, R_TRAFFIC, "chaos device %s after a %s: %s",
		      d->n.ifname, same_fd ? "reset" : "reopen", why);
		return -EIO;
	}
	return 0;
}

/*
 * A vring's size, base and endianness move only with its backend off
 * (EBUSY otherwise): half the time the backend goes first, as a driver
 * would do it.  The bit this sets in the operation's arg says so.
 */
static uint32_t backend_off_first(struct worker *w, struct rng *r,
				  unsigned int index)
{
	struct vhost_vring_file f = { .index = index, .fd = -1 };

	if (index > 1 || !chance(r, 2))
		return 0;
	xioctl(w->chaos.n.vhost_fd, VHOST_NET_SET_BACKEND, &f);
	return 1U << 31;
}

/* One ioctl drawn at random; -errno, or 0, or >0 (a worker id). */
static int chaos_ioctl(struct worker *w, struct rng *r, enum op op,
		       uint32_t *arg)
{
	struct dev *d = &w->chaos;
	int fd = d->n.vhost_fd;
	struct vhost_vring_state s = { .index = below(r, 3) };
	struct vhost_worker_state ws = {};
	struct vhost_vring_worker vw;
	uint64_t u;
	int ret;

	switch (op) {
	case OP_SET_OWNER:
		ret = xioctl(fd, VHOST_SET_OWNER, NULL);
		w->unowned &= !!ret;
		return ret;
	case OP_RESET_OWNER:
		ret = xioctl(fd, VHOST_RESET_OWNER, NULL);
		if (!ret) {	/* the driver's state is gone */
			w->need_rebuild = true;
			w->unowned = true;
		}
		return ret;
	case OP_MEM_TABLE:
		return set_mem_table(w, r, arg);
	case OP_FEATURES: {
		static const int bits[] = {
			VIRTIO_RING_F_EVENT_IDX, VHOST_F_LOG_ALL,
			VIRTIO_F_ACCESS_PLATFORM, VIRTIO_NET_F_MRG_RXBUF,
			VIRTIO_RING_F_INDIRECT_DESC, VIRTIO_F_VERSION_1,
			VIRTIO_F_RING_PACKED,
		};
		int i;

		u = d->n.features;
		for (i = 0; i < 7; i++)
			if (chance(r, 4))
				u ^= 1ULL << bits[i];
		*arg = u;
		return xioctl(fd, VHOST_SET_FEATURES, &u);
	}
	case OP_VRING_NUM: {
		static const unsigned int nums[] = { 0, 1, 3, 64, 256, 32768, 65536 };

		s.num = nums[below(r, 7)];
		*arg = s.num << 2 | s.index | backend_off_first(w, r, s.index);
		return xioctl(fd, VHOST_SET_VRING_NUM, &s);
	}
	case OP_VRING_ADDR:
		return set_vring_addr(w, r, arg);
	case OP_VRING_BASE:
		s.num = chance(r, 2) ? 0 : below(r, 1 << 17);
		*arg = s.num << 2 | s.index | backend_off_first(w, r, s.index);
		return xioctl(fd, VHOST_SET_VRING_BASE, &s);
	case OP_GET_BASE:
		return xioctl(fd, VHOST_GET_VRING_BASE, &s);
	case OP_VRING_KICK:
		return set_vring_file(w, r, VHOST_SET_VRING_KICK, arg);
	case OP_VRING_CALL:
		return set_vring_file(w, r, VHOST_SET_VRING_CALL, arg);
	case OP_VRING_ERR:
		return set_vring_file(w, r, VHOST_SET_VRING_ERR, arg);
	case OP_ENDIAN:
		s.num = below(r, 2);
		*arg = s.num << 2 | s.index | backend_off_first(w, r, s.index);
		return xioctl(fd, VHOST_SET_VRING_ENDIAN, &s);
	case OP_LOG_BASE:
		if (!w->log)
			return -ENOMEM;
		u = chance(r, 8) ? 0xffff888000000000ULL : (uintptr_t)w->log;
		*arg = u != (uintptr_t)w->log;
		return xioctl(fd, VHOST_SET_LOG_BASE, &u);
	case OP_IOTLB_UPD:
		return iotlb_msg(w, r, VHOST_IOTLB_UPDATE, arg);
	case OP_IOTLB_INV:
		return iotlb_msg(w, r, VHOST_IOTLB_INVALIDATE, arg);
	case OP_BACKEND: {
		struct vhost_vring_file f = { .index = below(r, 3) };

		f.fd = chance(r, 2) ? d->n.tap_fd : -1;
		*arg = (f.fd >= 0) << 2 | f.index;
		return xioctl(fd, VHOST_NET_SET_BACKEND, &f);
	}
	case OP_BUSYLOOP:
		s.num = chance(r, 2) ? 0 : below(r, 200);
		*arg = s.num;
		return xioctl(fd, VHOST_SET_VRING_BUSYLOOP_TIMEOUT, &s);
	case OP_NEW_WORKER:
		ret = xioctl(fd, VHOST_NEW_WORKER, &ws);
		if (!ret && w->nworkers < 4)
			w->workers[w->nworkers++] = ws.worker_id;
		*arg = ws.worker_id;
		return ret;
	case OP_ATTACH_WORKER:
		vw.index = below(r, 3);
		vw.worker_id = w->nworkers && !chance(r, 8) ?
			       w->workers[below(r, w->nworkers)] : below(r, 64);
		*arg = vw.worker_id << 2 | vw.index;
		return xioctl(fd, VHOST_ATTACH_VRING_WORKER, &vw);
	case OP_FREE_WORKER:
		if (w->nworkers && !chance(r, 8)) {
			int i = below(r, w->nworkers);

			ws.worker_id = w->workers[i];
			ret = xioctl(fd, VHOST_FREE_WORKER, &ws);
			if (!ret)
				w->workers[i] = w->workers[--w->nworkers];
		} else {
			ws.worker_id = below(r, 64);
			ret = xioctl(fd, VHOST_FREE_WORKER, &ws);
		}
		*arg = ws.worker_id;
		return ret;
	default:
		return -EINVAL;
	}
}

/*
 * The chaos thread's failslab switch, opened once: an open() with it on
 * could itself fail, and leave every later system call of the thread (and
 * every vhost worker it creates, which inherits the flag) failing too.
 */
static __thread int fail_fd = -1;

static void set_fail(bool on)
{
	int i;

	if (!have_failslab)
		return;
	if (fail_fd < 0)
		fail_fd = open("/proc/thread-self/make-it-fail", O_WRONLY | O_CLOEXEC);
	for (i = 0; fail_fd >= 0 && i < 100; i++)
		if (pwrite(fail_fd, on ? "1" : "0", 1, 0) == 1)
			break;
}

/*
 * A rebuild that failed short of its traffic check (which reports its own
 * failure): counted by step and errno for the report, and the next one is
 * a new device.  Chaos devices that no rebuild brings back, over both
 * REBUILD_GIVE_UP_TRIES tries and REBUILD_GIVE_UP_MS (across the slot's
 * generations: workers are killed every few seconds), fail the run.
 * Returns true if the thread gives up.
 */
static bool rebuild_failed(struct worker *w, int err)
{
	struct slot *s = &sh->slot[w->slot];
	int e = -err < 256 ? -err : 255;

	__atomic_add_fetch(&sh->rebuild_err[w->chaos.step & 3][e], 1,
			   __ATOMIC_RELAXED);
	w->need_rebuild = true;
	if (!s->rb_fails++)
		s->rb_first_ms = ms_since_start();
	if (s->rb_fails < REBUILD_GIVE_UP_TRIES ||
	    ms_since_start() - s->rb_first_ms < REBUILD_GIVE_UP_MS)
		return false;
	failf(w->slot, R_TRAFFIC,
	      "chaos device: no rebuild succeeded in %u tries over %.1f s, the last: %s",
	      s->rb_fails, (ms_since_start() - s->rb_first_ms) / 1000,
	      strerror(-err));
	s->rb_fails = 0;	/* a new count, for a new report */
	return true;
}

/* One chaos ioctl, with slab fault injection now and then. */
static int chaos_one(struct worker *w, struct rng *r, enum op op, uint32_t *a)
{
	int ret;

	if (inject_now(INJ_SEGV))
		*null_ptr = 1;
	if (!chance(r, 6) || !have_failslab || excluded[OP_FAILSLAB])
		return chaos_ioctl(w, r, op, a);
	set_fail(true);
	ret = chaos_ioctl(w, r, op, a);
	set_fail(false);
	rec(w->slot, T_CHAOS, OP_FAILSLAB, ret, op);
	return ret;
}

/* The next chaos operation: its kind, or OP_MAX for none this time. */
static enum op chaos_pick(struct worker *w, struct rng *r)
{
	enum op op;

	/* SET_OWNER on a reset device, before its rebuild, now and then */
	if (w->need_rebuild && w->unowned && chance(r, 2) &&
	    !excluded[OP_SET_OWNER])
		return OP_SET_OWNER;
	if (w->need_rebuild || !w->chaos.open)
		return OP_REBUILD;
	if (chance(r, 3) && !excluded[OP_LENIENT])
		return OP_LENIENT;
	if (chance(r, 40)) {
		op = chance(r, 2) ? OP_REBUILD : OP_RESET_REUSE;
		return excluded[op] ? OP_MAX : op;
	}
	op = OP_SET_OWNER + below(r, OP_FREE_WORKER - OP_SET_OWNER + 1);
	return excluded[op] ? OP_MAX : op;
}

static void *chaos_thread(void *arg)
{
	struct worker *w = arg;
	struct rng r;
	enum op op;
	uint32_t a;
	int ret;
	struct kcov k;

	thread_start(w, T_CHAOS);
	kcov_begin(&k, false, 0);
	rng_init(&r, w->slot, w->gen, T_CHAOS);
	while (!stopping()) {
		a = 0;
		pthread_mutex_lock(&w->chaos_lock);
		op = chaos_pick(w, &r);
		if (op == OP_MAX) {
			pthread_mutex_unlock(&w->chaos_lock);
			sleep_ms(1);
			continue;
		}
		op_begin(w->slot, T_CHAOS, op);
		if (op == OP_REBUILD || op == OP_RESET_REUSE)
			ret = rebuild(w, &r, op == OP_RESET_REUSE, &a);
		else if (op == OP_LENIENT)
			ret = lenient_traffic(&w->chaos, &r);
		else
			ret = chaos_one(w, &r, op, &a);
		pthread_mutex_unlock(&w->chaos_lock);
		rec(w->slot, T_CHAOS, op, ret, a);
		kcov_drain(&k);
		if (op != OP_REBUILD && op != OP_RESET_REUSE)
			continue;
		if (ret == -EIO)
			break;		/* failed; the device is left as it is */
		if (!ret) {
			sh->slot[w->slot].rb_fails = 0;
		} else if (rebuild_failed(w, ret)) {
			break;
		} else if (op == OP_REBUILD) {
			/* Could not even open a device: out of memory? */
			sleep_ms(50);
		}
	}
	kcov_drain(&k);
	return NULL;
}

/* ---- the mm thread ------------------------------------------------------ */

static bool pick_region(struct worker *w, struct rng *r, int which,
			struct region *out)
{
	pthread_mutex_lock(&w->reg_lock);
	*out = w->reg[which][below(r, chance(r, 2) ? 1 : NREG)];
	pthread_mutex_unlock(&w->reg_lock);
	return out->p && out->len;
}

/* For MADV_COLLAPSE: a device's THP-sized anonymous rings, if any has. */
static bool pick_huge(struct worker *w, struct rng *r, struct region *out)
{
	int first = below(r, 2), i;
	bool found = false;

	pthread_mutex_lock(&w->reg_lock);
	for (i = 0; i < 2 && !found; i++) {
		*out = w->reg[(first + i) & 1][0];
		found = out->p && out->kind == K_ANON && out->len == HUGE;
	}
	pthread_mutex_unlock(&w->reg_lock);
	return found;
}

/*
 * Rings MADV_COLLAPSE can act on, when neither device has them: the chaos
 * device rebuilt now with THP-sized anonymous rings, and up to two seconds
 * for them to appear.  Without this only a quarter of the devices' rings
 * are anonymous, half of those THP-sized, and a minute's collapses can all
 * land on rings they cannot collapse (hugetlb: EINVAL; a few small pages:
 * the 2 MiB around them is not one mapping); make ci saw 0 of 22.
 */
static bool want_huge_rings(struct worker *w, struct rng *r,
			    struct region *out)
{
	int i;

	pthread_mutex_lock(&w->chaos_lock);
	w->want_huge = true;
	w->need_rebuild = true;
	pthread_mutex_unlock(&w->chaos_lock);
	for (i = 0; i < 200 && !stopping(); i++) {
		sleep_ms(10);
		if (pick_huge(w, r, out))
			return true;
	}
	return false;
}

static int move_some(struct region *g, struct rng *r, uint32_t *arg)
{
	void *pages[64];
	int nodes[64], status[64], i, n = g->len / PAGE;
	int node = below(r, 2);

	if (!have_node1)
		return -ENODEV;
	if (n > 64)
		n = 64;
	for (i = 0; i < n; i++) {
		pages[i] = (char *)g->p + i * PAGE;
		nodes[i] = node;
	}
	*arg = node << 8 | n;
	return syscall(SYS_move_pages, 0, n, pages, nodes, status,
		       MPOL_MF_MOVE) < 0 ? -errno : 0;
}

/* "exited with status 3", "was killed by SIGSEGV (Segmentation fault)" */
static const char *how_ended(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, len, "was killed by SIG%s (%s)",
			 sigabbrev_np(WTERMSIG(st)) ?: "?", strsignal(WTERMSIG(st)));
	else
		snprintf(buf, len, "ended with status %#x", st);
	return buf;
}

#define CHILD_HUGE_SIGBUS 3	/* the child's exit: see on_child_bus() */

static struct region (*child_reg)[NREG];	/* a forked child's regions */

/*
 * SIGBUS in a forked child: on a write of the parent to a private hugetlb
 * page they share, a pool with no page to spare has the kernel take the
 * page from the child, whose next access to it gets BUS_ADRERR; its exit
 * status says so.  Any other SIGBUS ends it as the default action would.
 */
static void on_child_bus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	struct region *g;
	int i;

	(void)uc;
	for (i = 0; i < 2 * NREG; i++) {
		g = &child_reg[i / NREG][i % NREG];
		if (si->si_code == BUS_ADRERR && g->kind == K_HUGETLB &&
		    a - (uintptr_t)g->p < g->len)
			_exit(CHILD_HUGE_SIGBUS);
	}
	signal(sig, SIG_DFL);	/* the access again, and the default action */
}

static const int fatal_sigs[] = { SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE,
				  SIGSYS, SIGTRAP };

/* Reads of every ring; writes to the checked buffers (COW); exit. */
static void __attribute__((noreturn)) fork_child(struct region g[2][NREG],
						 struct rng *r)
{
	struct sigaction sa = { .sa_sigaction = on_child_bus,
				.sa_flags = SA_SIGINFO };
	volatile uint8_t sum = 0;
	unsigned int i;
	size_t k;

	for (i = 0; i < ARRAY_SIZE(fatal_sigs); i++)
		signal(fatal_sigs[i], SIG_DFL);
	sigaction(SIGBUS, &sa, NULL);
	for (i = 0; i < 2; i++)
		for (k = 0; g[i][0].p && k < g[i][0].len; k += PAGE)
			sum += ((volatile uint8_t *)g[i][0].p)[k];
	for (i = 1; i < NREG; i++)
		for (k = 0; g[0][i].p && k < g[0][i].len; k += PAGE)
			((volatile uint8_t *)g[0][i].p)[k] ^= 1;
	if (chance(r, 4))
		usleep(below(r, 20000));
	_exit(sum & 0);
}

/* The child's end: 0, -ENOMEM for a hugetlb page it lost, or a failure. */
static int fork_reap(struct worker *w, pid_t pid)
{
	double t = now_ms();
	char how[80];
	int st, r;

	while ((r = waitpid(pid, &st, WNOHANG)) != pid) {
		if (r < 0 && errno != EINTR)
			return -errno;
		if (now_ms() - t > KILL_WAIT_MS) {
			failf(w->slot, R_PROCS, "forked child %d did not exit", pid);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == CHILD_HUGE_SIGBUS)
		return -ENOMEM;
	failf(w->slot, R_ENDS, "a child the mm thread forked (fork) %s",
	      how_ended(st, how, sizeof(how)));
	return -ECHILD;
}

/*
 * fork, the child reading both devices' rings.  Under chaos_lock, so that
 * no chaos region is half unmapped or PROT_NONE in the child's copy of the
 * address space; lost ones (a hwpoisoned page, say) are left out.
 */
static int fork_touch(struct worker *w, struct rng *r)
{
	struct region g[2][NREG];
	pid_t pid;

	pthread_mutex_lock(&w->chaos_lock);
	pthread_mutex_lock(&w->reg_lock);
	memcpy(g, w->reg, sizeof(g));
	pthread_mutex_unlock(&w->reg_lock);
	if (w->need_rebuild || !w->chaos.open)
		memset(g[1], 0, sizeof(g[1]));
	child_reg = g;
	pid = fork();
	if (!pid)
		fork_child(g, r);
	pthread_mutex_unlock(&w->chaos_lock);
	if (pid < 0)
		return -errno;
	return fork_reap(w, pid);
}

/* What a destructive event leaves: restored, or the rings lost. */
static int destroy(struct worker *w, struct rng *r, enum op op, uint32_t *arg)
{
	struct region g;
	static void *scratch;
	void *copy = NULL, *p;
	int ret = 0;
	bool restore;

	pthread_mutex_lock(&w->chaos_lock);
	if (!w->chaos.open || w->need_rebuild ||
	    !pick_region(w, r, 1, &g)) {
		pthread_mutex_unlock(&w->chaos_lock);
		return -ENOENT;
	}
	restore = chance(r, 2);
	*arg = g.ring << 1 | restore;
	switch (op) {
	case OP_MUNMAP:
		if (g.kind == K_HUGETLB) {
			/* the anonymous memory put back would be smaller */
			ret = -EOPNOTSUPP;
			break;
		}
		copy = restore ? malloc(g.len) : NULL;
		if (copy)
			memcpy(copy, g.p, g.len);
		ret = munmap(g.p, g.len) ? -errno : 0;
		sleep_ms(below(r, 3));
		p = mmap(g.p, g.len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		if (p == MAP_FAILED) {
			ret = -errno;
			w->need_rebuild = true;
		} else if (copy) {
			memcpy(g.p, copy, g.len);
		} else {
			w->need_rebuild = true;
		}
		free(copy);
		if (g.ring && w->chaos.rm.kind != K_ANON) {
			/* the block is anonymous now; still munmap()ed whole */
			w->chaos.rm.kind = K_ANON;
		}
		break;
	case OP_MREMAP:
		if (!scratch)
			scratch = mmap(NULL, 64 << 20, PROT_NONE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
				       -1, 0);
		if (scratch == MAP_FAILED || g.len > (64 << 20)) {
			ret = -ENOMEM;
			break;
		}
		p = mremap(g.p, g.len, g.len, MREMAP_MAYMOVE | MREMAP_FIXED,
			   scratch);
		if (p == MAP_FAILED) {
			ret = -errno;
			break;
		}
		sleep_ms(below(r, 3));
		if (mremap(scratch, g.len, g.len, MREMAP_MAYMOVE | MREMAP_FIXED,
			   g.p) == MAP_FAILED) {
			ret = -errno;
			munmap(scratch, g.len);
			mmap(g.p, g.len, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			w->need_rebuild = true;
		}
		/* the scratch area is a hole now; keep it reserved */
		mmap(scratch, 64 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		     MAP_NORESERVE | MAP_FIXED, -1, 0);
		break;
	case OP_MPROTECT:
		ret = mprotect(g.p, g.len, chance(r, 2) ? PROT_READ : PROT_NONE) ?
		      -errno : 0;
		sleep_ms(below(r, 3));
		if (mprotect(g.p, g.len, PROT_READ | PROT_WRITE))
			w->need_rebuild = true;
		break;
	case OP_DONTNEED:
		ret = madvise(g.p, g.len, MADV_DONTNEED) ? -errno : 0;
		if (!ret && g.kind != K_MEMFD)
			w->need_rebuild = true;	/* zeroes now */
		break;
	case OP_HWPOISON:
		if (poisoned >= MAX_POISON) {
			ret = -ENOSPC;
			break;
		}
		p = (char *)g.p + below(r, g.len / PAGE) * PAGE;
		/*
		 * A page of its own first: an untouched one maps the shared
		 * zero page, which memory_failure() would mark poisoned for
		 * every process.
		 */
		*(volatile char *)p = *(volatile char *)p;
		__atomic_add_fetch(&poison_inflight, 1, __ATOMIC_SEQ_CST);
		in_poison = true;
		__atomic_add_fetch(&sh->poison_tries, 1, __ATOMIC_RELAXED);
		ret = madvise(p, PAGE, MADV_HWPOISON) ? -errno : 0;
		in_poison = false;
		__atomic_sub_fetch(&poison_inflight, 1, __ATOMIC_SEQ_CST);
		poisoned += !ret;
		/* the page is gone for good; after a failure too, maybe */
		w->need_rebuild = true;
		break;
	default:
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&w->chaos_lock);
	return ret;
}

/*
 * MADV_COLLAPSE fails with EAGAIN for "a temporary resource issue" (a page
 * of the range locked or under migration by another operation of this
 * test) and with ENOMEM when no huge page or memcg charge is to be had
 * just then (madvise(2)); both are worth a few more tries before the
 * attempt counts as failed.  On THP-sized anonymous rings (all it is
 * given: see want_huge_rings()) it succeeded 11 times of 11 in a guest.
 */
static int collapse(void *huge)
{
	int i, err = 0;

	for (i = 0; i < 4; i++) {
		if (!madvise(huge, HUGE, MADV_COLLAPSE))
			return 0;
		err = -errno;
		if (err != -EAGAIN && err != -ENOMEM)
			break;
		usleep(20000);
	}
	return err;
}

/* An mm event no driver can see, on either device's memory. */
static int mm_transparent(struct worker *w, struct rng *r, enum op op,
			  uint32_t *a)
{
	struct region g;

	if (op == OP_FORK)
		return fork_touch(w, r);
	if (op == OP_SOFT_DIRTY)
		return write_str("/proc/self/clear_refs", "4");
	if (!(op == OP_COLLAPSE ?
	      pick_huge(w, r, &g) || want_huge_rings(w, r, &g) :
	      pick_region(w, r, below(r, 2), &g)))
		return -ENOENT;
	*a = g.ring;
	switch (op) {
	case OP_PAGEOUT:
		return madvise(g.p, g.len, MADV_PAGEOUT) ? -errno : 0;
	case OP_COLD:
		return madvise(g.p, g.len, MADV_COLD) ? -errno : 0;
	case OP_COLLAPSE:
		return collapse((void *)((uintptr_t)g.p & ~(HUGE - 1)));
	case OP_MOVE_PAGES:
		return move_some(&g, r, a);
	case OP_KSM:
		*a |= chance(r, 3) << 1;
		return madvise(g.p, g.len, *a & 2 ? MADV_UNMERGEABLE :
					       MADV_MERGEABLE) ? -errno : 0;
	default:
		return -EINVAL;
	}
}

/* -X abort, bus, kill, exit: a worker ending in ways it never means to. */
static void mm_inject(void)
{
	if (inject_now(INJ_ABORT))
		abort();
	if (inject_now(INJ_BUS))
		raise(SIGBUS);
	if (inject_now(INJ_KILL))
		raise(SIGKILL);
	if (inject_now(INJ_EXIT))
		_exit(3);
}

static void *mm_thread(void *arg)
{
	struct worker *w = arg;
	struct rng r;
	enum op op;
	uint32_t a;
	int ret;
	struct kcov k;

	thread_start(w, T_MM);
	kcov_begin(&k, false, 0);
	rng_init(&r, w->slot, w->gen, T_MM);
	while (!stopping()) {
		kcov_drain(&k);
		kcov_drain(&w->kmain);
		sleep_ms(below(&r, 20));
		a = 0;
		op = OP_PAGEOUT + below(&r, OP_HWPOISON - OP_PAGEOUT + 1);
		if (excluded[op])
			continue;
		op_begin(w->slot, T_MM, op);
		mm_inject();
		if (op >= OP_MUNMAP)
			ret = destroy(w, &r, op, &a);
		else
			ret = mm_transparent(w, &r, op, &a);
		rec(w->slot, T_MM, op, ret, a);
	}
	return NULL;
}

/* ---- signals ---------------------------------------------------------------- */

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * The SIGBUS this program causes on purpose: MADV_HWPOISON sends the
 * thread that calls it BUS_MCEERR_AR (as if it had touched the page) and
 * other threads mapping the page BUS_MCEERR_AO, while that call is under
 * way.  The page's data is gone, nothing touched it, and the chaos device
 * is rebuilt without touching it.  Nothing else here may raise SIGBUS:
 * the userfaultfd is a full one, whose faults wait for the handler.
 */
static bool bus_expected(const siginfo_t *si)
{
	if (si->si_code == BUS_MCEERR_AR)
		return in_poison;
	if (si->si_code == BUS_MCEERR_AO)
		return __atomic_load_n(&poison_inflight, __ATOMIC_SEQ_CST) > 0;
	return false;
}

/*
 * Any other fatal signal, in a worker or the admin process (what vhost
 * writing into the process's memory would cause): recorded for the
 * supervisor, which names it and the operation of each thread (see
 * judge_end()), then the default action ends the process.
 */
static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	struct death *d = &sh->slot[my_slot].death;
	int none = 0;

	(void)uc;
	if (sig == SIGBUS && bus_expected(si))
		return;
	if (__atomic_compare_exchange_n(&d->sig, &none, sig, false,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
		d->code = si->si_code;
		d->thr = my_thr;
		d->addr = (uintptr_t)si->si_addr;
	}
	signal(sig, SIG_DFL);
	raise(sig);		/* delivered on return, or the fault again */
}

/* A process of the run: its slot, its fatal signals caught, no core. */
static void process_start(int slot)
{
	struct sigaction sa = { .sa_sigaction = on_fatal, .sa_flags = SA_SIGINFO };
	struct rlimit core = { 0, 0 };
	unsigned int i;

	my_slot = slot;
	my_thr = -1;
	local_stop = 0;
	memset(&sh->slot[slot].death, 0, sizeof(struct death));
	setrlimit(RLIMIT_CORE, &core);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (i = 0; i < ARRAY_SIZE(fatal_sigs); i++)
		sigaction(fatal_sigs[i], &sa, NULL);
}

static void *sig_thread(void *arg)
{
	struct worker *w = arg;
	struct rng r;
	int t;

	thread_start(w, T_SIG);
	rng_init(&r, w->slot, w->gen, T_SIG);
	while (!stopping()) {
		sleep_ms(1 + below(&r, 20));
		t = chance(&r, 2) ? T_CHAOS : T_MM;
		if (!w->tid[t] || excluded[OP_SIGNAL])
			continue;
		op_begin(w->slot, T_SIG, OP_SIGNAL);
		rec(w->slot, T_SIG, OP_SIGNAL,
		    syscall(SYS_tgkill, getpid(), w->tid[t], SIGUSR1) ? -errno : 0, t);
	}
	return NULL;
}

/* ---- a worker process ---------------------------------------------------- */

/*
 * The admin plane's counters of the checked device against its traffic.
 * Without an admin plane there is nothing to compare: the supervisor
 * reports that once (see setup_admin()).
 */
static void check_counters(struct worker *w)
{
	struct adm_stats dev, rxq, txq;
	struct ynl_sock *ys;
	struct dev *d = &w->chk;
	int ret;

	if (!have_admin)
		return;
	if (d->id < 0) {
		failf(w->slot, R_COUNTERS, "checked device %s: no vhost id in its fdinfo: %s",
		      d->n.ifname, strerror(-d->id));
		return;
	}
	ys = adm_open();
	if (!ys) {
		failf(w->slot, R_ADMIN, "no vhost family socket");
		return;
	}
	ret = adm_stats_dev(ys, d->id, &dev, &rxq, &txq);
	if (ret < 0) {
		failf(w->slot, R_ADMIN, "stats-get of vhost%" PRId64 ": %s",
		      d->id, strerror(-ret));
	} else if (dev.v[VHOST_A_STATS_TX_PACKETS] != d->tx_frames ||
		   dev.v[VHOST_A_STATS_TX_BYTES] != d->tx_bytes ||
		   dev.v[VHOST_A_STATS_RX_PACKETS] != d->rx_frames ||
		   dev.v[VHOST_A_STATS_RX_BYTES] != d->rx_bytes ||
		   dev.v[VHOST_A_STATS_TX_ERRORS]) {
		failf(w->slot, R_COUNTERS,
		      "vhost%" PRId64 ": tx %" PRIu64 "/%" PRIu64 " bytes %" PRIu64 "/%" PRIu64
		      " rx %" PRIu64 "/%" PRIu64 " bytes %" PRIu64 "/%" PRIu64
		      " tx-errors %" PRIu64 " (counted/sent)",
		      d->id, (uint64_t)dev.v[VHOST_A_STATS_TX_PACKETS], d->tx_frames,
		      (uint64_t)dev.v[VHOST_A_STATS_TX_BYTES], d->tx_bytes,
		      (uint64_t)dev.v[VHOST_A_STATS_RX_PACKETS], d->rx_frames,
		      (uint64_t)dev.v[VHOST_A_STATS_RX_BYTES], d->rx_bytes,
		      (uint64_t)dev.v[VHOST_A_STATS_TX_ERRORS]);
	} else {
		__atomic_add_fetch(&sh->counter_checks, 1, __ATOMIC_RELAXED);
	}
	ynl_sock_destroy(ys);
}

/* The worker's state, SIGUSR1 handled, its userfaultfd and its handler. */
static struct worker *worker_init(int slot, uint32_t gen, pthread_t *ut)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	struct worker *w = calloc(1, sizeof(*w));
	int i;

	if (!w)
		return NULL;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	w->slot = slot;
	w->gen = gen;
	pthread_mutex_init(&w->chaos_lock, NULL);
	pthread_mutex_init(&w->reg_lock, NULL);
	for (i = 0; i < 4; i++)
		w->extra_fd[i] = -1;
	w->log = mmap(NULL, LOG_LEN, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (w->log == MAP_FAILED)
		w->log = NULL;
	w->chk.id = -1;
	w->chaos.id = -1;
	us.own[0] = gettid();
	uffd_open();
	rng_init(&us.r, slot, gen, NTHR);
	if (us.fd >= 0 && pthread_create(ut, NULL, uffd_handler, NULL)) {
		close(us.fd);
		us.fd = -1;
	}
	return w;
}

/*
 * A worker process: 0 when the run stops, 1 when it failed (and said why),
 * anything else (or a signal) is what the supervisor must report.
 */
static int worker_main(int slot, uint32_t gen)
{
	static void *(*const fn[NTHR])(void *) = {
		check_thread, chaos_thread, mm_thread, sig_thread,
	};
	pthread_t t[NTHR], ut;
	struct worker *w;
	struct rng r;
	int i, ret;

	process_start(slot);
	w = worker_init(slot, gen, &ut);
	if (!w) {
		failf(slot, R_TRAFFIC, "worker: out of memory");
		return 1;
	}
	rng_init(&r, slot, gen, NTHR + 1);
	kcov_begin(&w->kmain, true, getpid() << 2);
	ret = dev_open(w, &w->chk, &r, false);
	if (ret) {
		failf(slot, R_TRAFFIC, "could not open the checked device: %s",
		      strerror(-ret));
		return 1;
	}
	for (i = 0; i < NTHR; i++)
		pthread_create(&t[i], NULL, fn[i], w);
	for (i = 0; i < NTHR; i++)
		pthread_join(t[i], NULL);
	kcov_drain(&w->kmain);
	if (!local_stop)
		check_counters(w);
	if (w->chaos.open)
		dev_close(w, &w->chaos, true);
	dev_close(w, &w->chk, false);
	__atomic_store_n(&us.stop, 1, __ATOMIC_RELAXED);
	if (us.fd >= 0)
		pthread_join(ut, NULL);
	return local_stop ? 1 : 0;
}

/* ---- the admin process --------------------------------------------------- */

static bool gone(int err)
{
	return err == -ENODEV || err == -ENOENT;
}

static int admin_set(struct ynl_sock *ys, struct rng *r, uint32_t id)
{
	struct adm_tun t = ADM_TUN_NONE;
	int ret;

	if (chance(r, 2))
		t.busypoll_us = chance(r, 2) ? 0 : below(r, 100);
	if (chance(r, 2))
		t.zerocopy = below(r, 2);
	if (chance(r, 3))
		t.zcopy_min_len = VHOST_ZCOPY_MIN_LEN_MIN + below(r, 4096);
	if (chance(r, 2) || (t.busypoll_us < 0 && t.zerocopy < 0 &&
			     t.zcopy_min_len < 0))
		t.metamap = below(r, 3);	/* off, map, batch */
	ret = adm_set(ys, id, t);
	if (ret && !gone(ret))
		failf(ADMIN_SLOT, R_ADMIN, "dev-set %u: %s", id, strerror(-ret));
	return ret;
}

static int admin_monitor(struct rng *r)
{
	struct adm_ntf ntf[16];
	struct ynl_sock *mon;
	int err = 0, k;

	mon = adm_monitor(&err);
	if (!mon) {
		failf(ADMIN_SLOT, R_ADMIN, "monitor: %s", strerror(-err));
		return err;
	}
	k = adm_ntf_drain(mon, below(r, 30), ntf, 16);
	ynl_sock_destroy(mon);
	return k < 0 ? k : 0;
}

static int admin_sysfs(uint32_t id)
{
	char name[16];
	uint64_t v;
	int ret;

	snprintf(name, sizeof(name), "vhost%u", id);
	ret = sysfs_u64(name, "statistics/tx_packets", &v);
	if (ret && !gone(ret))
		failf(ADMIN_SLOT, R_ADMIN, "sysfs %s: %s", name, strerror(-ret));
	return ret;
}

/* One admin request drawn at random; its result, failures reported. */
static int admin_one(struct ynl_sock *ys, struct rng *r, enum op op,
		     uint32_t *ids, int *nids, uint32_t id, struct adm_stats *st)
{
	const int slot = ADMIN_SLOT;
	int ret;

	switch (op) {
	case OP_ADM_DUMP:
		ret = adm_dump_ids(ys, ids, 512);
		if (ret >= 0)
			*nids = ret;
		else
			failf(slot, R_ADMIN, "dev-get dump: %s", strerror(-ret));
		return ret;
	case OP_ADM_STATS:
		ret = adm_stats(ys, 0, true, chance(r, 2), st, 4096);
		if (ret < 0)
			failf(slot, R_ADMIN, "stats-get dump: %s", strerror(-ret));
		return ret;
	case OP_ADM_GET: {
		struct vhost_dev_get_rsp *g = adm_get(ys, id);

		ret = g ? 0 : adm_err(ys);
		if (g)
			vhost_dev_get_rsp_free(g);
		else if (!gone(ret))
			failf(slot, R_ADMIN, "dev-get %u: %s", id, strerror(-ret));
		return ret;
	}
	case OP_ADM_SET:
		return admin_set(ys, r, id);
	case OP_ADM_MONITOR:
		return admin_monitor(r);
	default:
		return admin_sysfs(id);
	}
}

/*
 * The admin process: 0 when the run stops, 1 when it failed (and said
 * why); the supervisor reports any other end and starts it again.
 */
static int admin_main(uint32_t gen)
{
	const int slot = ADMIN_SLOT;
	struct adm_stats *st;
	uint32_t ids[512], id;
	struct ynl_sock *ys;
	int nids = 0, ret;
	struct rng r;
	enum op op;
	struct kcov kc;

	process_start(slot);
	my_thr = 0;
	st = calloc(4096, sizeof(*st));
	ys = adm_open();
	if (!ys || !st) {
		failf(slot, R_ADMIN, "admin process: %s",
		      st ? "no vhost family socket" : "out of memory");
		return 1;
	}
	kcov_begin(&kc, false, 0);
	rng_init(&r, slot, gen, 0);
	while (!stopping()) {
		sleep_ms(below(&r, 10));
		op = OP_ADM_DUMP + below(&r, OP_SYSFS - OP_ADM_DUMP + 1);
		id = nids ? ids[below(&r, nids)] : 1;
		if (excluded[op])
			continue;
		op_begin(slot, 0, op);
		if (inject_now(INJ_ADMIN))
			*null_ptr = 1;
		ret = admin_one(ys, &r, op, ids, &nids, id, st);
		rec(slot, 0, op, ret, id);
		kcov_drain(&kc);
	}
	ynl_sock_destroy(ys);
	free(st);
	return local_stop ? 1 : 0;
}

/* ---- the supervisor -------------------------------------------------------- */

/* The supervisor's state: the processes of the run, by slot. */
struct sup {
	pid_t pid[NSLOTS];		/* 0: none in the slot */
	int procs;
	double oom_due;			/* an OOM owner by then, if none yet */
	int kills;
	struct rng r;
};

static pid_t spawn(int slot)
{
	pid_t pid;

	sh->slot[slot].nfail = 0;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		failf(slot, R_ENDS, "fork for slot %d: %s", slot, strerror(errno));
		return 0;
	}
	if (pid)
		return pid;
	_exit(slot == ADMIN_SLOT ? admin_main(sh->slot[slot].gen) :
	      worker_main(slot, sh->slot[slot].gen));
}

/* Wait for pid until deadline; its status, or -1 if it is still there. */
static int reap(pid_t pid, double ms)
{
	double t = now_ms();
	int st;

	while (now_ms() - t < ms) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(2000);
	}
	return -1;
}

static void show_stacks(pid_t pid)
{
	char path[64], buf[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stack", pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(buf, sizeof(buf), f))
		fprintf(stderr, "#   %s", buf);
	fclose(f);
}

/* Append to buf, which holds *n characters, never past len. */
static void __attribute__((format(printf, 4, 5)))
append(char *buf, size_t len, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (*n >= len)
		return;
	va_start(ap, fmt);
	r = vsnprintf(buf + *n, len - *n, fmt, ap);
	va_end(ap);
	if (r > 0)
		*n += r;
}

/* "chaos during set-vring-addr", "mm after fork" */
static void thread_doing(const struct slot *s, int slot, int t, char *buf,
			 size_t len, size_t *n)
{
	const struct tlog *l = &s->log[t];
	const char *name = slot == ADMIN_SLOT ? "admin" : thr_name[t];

	if (!l->n && !l->busy)
		append(buf, len, n, "%s before its first operation", name);
	else
		append(buf, len, n, "%s %s %s", name, l->busy ? "during" : "after",
		       op_name[l->cur < OP_MAX ? l->cur : 0]);
}

/*
 * What the threads of the process in slot were doing when it ended: the
 * one a fatal signal hit (see on_fatal()), then the others.
 */
static void ops_doing(int slot, int sig, char *buf, size_t len)
{
	const struct slot *s = &sh->slot[slot];
	const struct death *d = &s->death;
	int nt = slot == ADMIN_SLOT ? 1 : NTHR, hit = -1, t;
	const char *sep = "; threads: ";
	size_t n = 0;

	buf[0] = '\0';
	if (sig && d->sig == sig) {
		if (d->code > 0)	/* a fault, at an address */
			append(buf, len, &n, ", si_code %d at 0x%" PRIx64, d->code,
			       d->addr);
		else
			append(buf, len, &n, ", sent (si_code %d)", d->code);
		hit = d->thr >= 0 && d->thr < nt ? d->thr : -1;
		if (hit < 0) {
			append(buf, len, &n, ", in the %s", d->thr == NTHR ?
			       "userfaultfd handler" : "main thread");
		} else {
			append(buf, len, &n, ", in thread ");
			thread_doing(s, slot, hit, buf, len, &n);
			sep = "; the others: ";
		}
	}
	for (t = 0; t < nt; t++) {
		if (t == hit)
			continue;
		append(buf, len, &n, "%s", sep);
		thread_doing(s, slot, t, buf, len, &n);
		sep = ", ";
	}
}

/*
 * How a process of the run ended, judged.  Expected: a stop at the end of
 * the run (status 0), a failure it reported itself (status 1), and the
 * supervisor's own SIGKILL.  Anything else, a signal above all (what vhost
 * writing into a process's memory would cause), is a failure that names
 * the signal and what each of the process's threads was doing.
 */
static void judge_end(int slot, pid_t pid, int st, bool killed)
{
	struct slot *s = &sh->slot[slot];
	char who[64], how[80], what[240];
	bool stop = __atomic_load_n(&sh->stop, __ATOMIC_RELAXED);

	if (WIFEXITED(st) && ((WEXITSTATUS(st) == 0 && stop) ||
			      (WEXITSTATUS(st) == 1 && s->nfail)))
		return;
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL && killed)
		return;
	__atomic_add_fetch(&sh->ends, 1, __ATOMIC_RELAXED);
	if (slot == ADMIN_SLOT)
		snprintf(who, sizeof(who), "the admin process (pid %d, generation %u)",
			 pid, s->gen);
	else
		snprintf(who, sizeof(who), "worker %d (pid %d, generation %u)",
			 slot, pid, s->gen);
	if (WIFEXITED(st) && WEXITSTATUS(st) <= 1)
		snprintf(how, sizeof(how), "exited with status %d %s",
			 WEXITSTATUS(st), WEXITSTATUS(st) ?
			 "without reporting a failure" : "before the end of the run");
	else
		how_ended(st, how, sizeof(how));
	ops_doing(slot, WIFSIGNALED(st) ? WTERMSIG(st) : 0, what, sizeof(what));
	failf(slot, R_ENDS, "%s %s%s%s", who, how,
	      WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ?
	      " (not by the supervisor)" : "", what);
}

static void restart(struct sup *s, int slot)
{
	sh->slot[slot].gen++;
	s->pid[slot] = spawn(slot);
}

/* Processes that ended on their own: judged, and started again. */
static void reap_ended(struct sup *s)
{
	int i, st;

	for (i = 0; i < NSLOTS; i++) {
		if (s->pid[i] <= 0 || waitpid(s->pid[i], &st, WNOHANG) != s->pid[i])
			continue;
		judge_end(i, s->pid[i], st, false);
		restart(s, i);
	}
}

/* SIGKILL for a random worker, which must go in time; false if it did not. */
static bool kill_one(struct sup *s)
{
	int i = below(&s->r, s->procs), st;
	pid_t pid = s->pid[i];

	if (excluded[OP_KILL] || pid <= 0)
		return true;
	op_begin(ADMIN_SLOT, 1, OP_KILL);
	kill(pid, SIGKILL);
	st = reap(pid, KILL_WAIT_MS);
	if (st == -1) {
		rec(ADMIN_SLOT, 1, OP_KILL, -ETIMEDOUT, i);
		failf(i, R_PROCS, "worker %d did not die within %d s of SIGKILL",
		      pid, KILL_WAIT_MS / 1000);
		show_stacks(pid);
		return false;
	}
	rec(ADMIN_SLOT, 1, OP_KILL, WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ?
	    0 : -ESRCH, i);
	judge_end(i, pid, st, true);
	s->kills++;
	restart(s, i);
	return true;
}

/* The OOM kills in the small memcg so far, from its memory.events. */
static long oom_kills(void)
{
	char line[128];
	long n = -1;
	FILE *f = fopen(OOM_CG "/memory.events", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "oom_kill %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* The OOM owner: a device with traffic in flight, eating memory. */
static void __attribute__((noreturn)) oom_child(struct rng *r)
{
	struct vnet_opts o = { .ring_num = 256, .event_idx = below(r, 2) };
	char pidstr[16], data[200] = {};
	struct vnet n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	snprintf(pidstr, sizeof(pidstr), "%d", getpid());
	if (write_str(OOM_CG "/cgroup.procs", pidstr) || vnet_open(&n, &o))
		_exit(2);
	vnet_rx_fill(&n);
	for (;;) {
		char *p = malloc(1 << 20);

		if (p)
			memset(p, 0x5a, 1 << 20);
		vnet_tx_add(&n, NULL, data, sizeof(data));
		vnet_kick(&n, VNET_TX);
	}
}

/*
 * An owner in a small memcg until the OOM killer takes it: 0 if the OOM
 * killer did (SIGKILL, and the memcg counted an OOM kill), -ECHILD if it
 * could not start; any other end is a failure.
 */
static int oom_owner(struct rng *r)
{
	char how[80];
	pid_t pid;
	int st;

	if (write_str("/sys/fs/cgroup/cgroup.subtree_control", "+memory"))
		return -ENODEV;
	mkdir(OOM_CG, 0755);
	if (write_str(OOM_CG "/memory.max", "40M"))
		return -ENODEV;
	write_str(OOM_CG "/memory.swap.max", "0");
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid)
		oom_child(r);
	st = reap(pid, 60000);
	if (st == -1) {
		failf(ADMIN_SLOT, R_PROCS, "OOM owner %d still alive after 60 s", pid);
		show_stacks(pid);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -ETIMEDOUT;
	}
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
		st = oom_kills() > 0 ? 0 : -ESRCH;
		rmdir(OOM_CG);
		return st;
	}
	rmdir(OOM_CG);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 2)
		return -ECHILD;
	failf(ADMIN_SLOT, R_ENDS, "the OOM owner (pid %d) %s", pid,
	      how_ended(st, how, sizeof(how)));
	return -ECHILD;
}

/* Until the time is up: workers killed and started again, OOM owners. */
static void supervise(struct sup *s, double seconds)
{
	double end = now_ms() + seconds * 1000;
	double next = now_ms() + 500 + below(&s->r, 2500);

	s->oom_due = now_ms() + seconds * 1000 / 3;

	while (now_ms() < end) {
		usleep(20000);
		reap_ended(s);
		if (now_ms() < next)
			continue;
		next = now_ms() + 500 + below(&s->r, 2500);
		if (chance(&s->r, 6) || (!sh->ran[OP_OOM] && now_ms() > s->oom_due)) {
			if (excluded[OP_OOM])
				continue;
			op_begin(ADMIN_SLOT, 1, OP_OOM);
			rec(ADMIN_SLOT, 1, OP_OOM, oom_owner(&s->r), 0);
			continue;
		}
		if (!kill_one(s))
			break;
	}
}

/* The end: every process must stop within STOP_WAIT_MS, and as it should. */
static void stop_all(struct sup *s)
{
	bool killed;
	int i, st;

	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < NSLOTS; i++) {
		if (s->pid[i] <= 0)
			continue;
		killed = false;
		st = reap(s->pid[i], STOP_WAIT_MS);
		if (st == -1) {
			failf(i, R_PROCS, "process %d did not stop within %d s",
			      s->pid[i], STOP_WAIT_MS / 1000);
			show_stacks(s->pid[i]);
			kill(s->pid[i], SIGKILL);
			waitpid(s->pid[i], &st, 0);
			killed = true;
		}
		judge_end(i, s->pid[i], st, killed);
		s->pid[i] = 0;
	}
}

/* ---- the report ------------------------------------------------------------ */

static void print_ops(void)
{
	uint64_t total = 0;
	int i;

	printf("# %-28s %10s %10s\n", "operation", "ran", "succeeded");
	for (i = 0; i < OP_MAX; i++) {
		if (excluded[i])
			continue;
		total += sh->ran[i];
		printf("# %-28s %10" PRIu64 " %10" PRIu64 "\n", op_name[i],
		       sh->ran[i], sh->ok[i]);
	}
	printf("# %" PRIu64 " operations, %.0f per second\n", total,
	       total / (ms_since_start() / 1000));
}

/* Rebuilds of chaos devices, and the errors of those that failed. */
static void print_rebuilds(void)
{
	static const char *const step_name[4] = {
		"reset", "ring memory", "vnet_open", "memory table",
	};
	const char *sep = "; failed: ";
	int e, i;

	printf("# rebuilds of chaos devices: %" PRIu64 " tried, %" PRIu64
	       " succeeded", sh->ran[OP_REBUILD] + sh->ran[OP_RESET_REUSE],
	       sh->ok[OP_REBUILD] + sh->ok[OP_RESET_REUSE]);
	for (i = 0; i < 4; i++) {
		for (e = 1; e < 256; e++) {
			if (!sh->rebuild_err[i][e])
				continue;
			printf("%s%s in %s %u", sep, strerrorname_np(e) ?: "?",
			       step_name[i], sh->rebuild_err[i][e]);
			sep = ", ";
		}
	}
	printf("\n");
}

/*
 * The longest invalidate callback of the maps since it was last zeroed
 * (drivers/vhost/metamap.c): what an invalidation of the mm waited for
 * vhost, reported at the end (issue 46 point 6).
 */
#define CALLBACK_MAX "/sys/kernel/debug/vhost_metamap_callback_max_ns"

static void print_stats(int kills, uint64_t seed)
{
	char buf[32];

	printf("# %.0f s, %d kills, %" PRIu64
	       " OOM kills, %u MADV_HWPOISON calls, %u processes ended unexpectedly, seed %#"
	       PRIx64 "\n",
	       ms_since_start() / 1000, kills, sh->ok[OP_OOM], sh->poison_tries,
	       sh->ends, seed);
	print_ops();
	print_rebuilds();
	if (sh->uffd_err)
		printf("# userfaultfd: %s: no rings in userfaultfd memory\n",
		       strerror(sh->uffd_err));
	printf("# userfaultfd: %u faults answered, %u of them vhost workers'\n",
	       sh->uffd_faults, sh->uffd_vhost);
	printf("# counters of %u checked devices compared\n", sh->counter_checks);
	if (!read_str(CALLBACK_MAX, buf, sizeof(buf)))
		printf("# longest invalidate callback of the maps: %.1f us\n",
		       strtoull(buf, NULL, 10) / 1e3);
	if (have_kcov)
		printf("# coverage: %u distinct PCs of drivers/vhost reached (kcov)\n",
		       sh->npcs);
}

/*
 * Why the machine cannot do an operation kind, a reason that starts with
 * one of skip-reasons' prefixes; NULL if it can.
 */
static const char *kind_unavailable(int op)
{
	if (op == OP_MOVE_PAGES && !have_node1)
		return "one NUMA node: move_pages has nowhere to move to";
	if (op == OP_RINGS_HUGETLB && !have_hugetlb)
		return "no hugepages: the hugetlb pool is empty";
	if (op == OP_COLLAPSE && !have_thp)
		return "no THP for the rings: transparent_hugepage is never";
	return NULL;
}

/*
 * vhost-net routes no worker ioctls (in 6.12 only vhost-scsi and
 * vhost-vsock do): they are refused, by design, and drawn for the paths
 * that refuse them.  They must run; they cannot succeed.
 */
static bool kind_refused(int op)
{
	return op == OP_NEW_WORKER || op == OP_ATTACH_WORKER ||
	       op == OP_FREE_WORKER;
}

/*
 * A kind that only happens after another (a refault of uffd-backed rings
 * of the checked device between checks; SET_OWNER that can succeed after a
 * RESET_OWNER): not required when -x left that one out.
 */
static bool kind_orphaned(int op)
{
	if (op == OP_UFFD_REFAULT)
		return excluded[OP_CHECK] || excluded[OP_RINGS_UFFD];
	if (op == OP_SET_OWNER)
		return excluded[OP_RESET_OWNER];
	return false;
}

/* The kinds that never succeeded (refused ones: never ran), in buf. */
static int kinds_missing(char *buf, size_t len)
{
	int i, n = 0, k = 0;

	buf[0] = '\0';
	for (i = 0; i < OP_MAX; i++) {
		if (excluded[i] || kind_unavailable(i) || kind_orphaned(i))
			continue;
		if (kind_refused(i) ? sh->ran[i] : sh->ok[i])
			continue;
		if (n < (int)len)
			n += snprintf(buf + n, len - n, "%s%s (%s)",
				      k ? ", " : "", op_name[i],
				      !sh->ran[i] ? "never ran" :
				      strerrorname_np(sh->last_err[i]) ?: "?");
		k++;
	}
	return k;
}

/*
 * Every operation kind must succeed at least once in a run of
 * ALL_KINDS_SECONDS or more.  The kinds the machine cannot do are skips,
 * with their reasons; a shorter run reports the kinds, and skips the check.
 */
static char kinds_msg[300];	/* what check_kinds() found */

static void check_kinds(double seconds)
{
	char missing[240];

	if (!kinds_missing(missing, sizeof(missing)))
		return;
	snprintf(kinds_msg, sizeof(kinds_msg),
		 "operation kinds that never succeeded in %.0f s: %s", seconds,
		 missing);
	if (seconds >= ALL_KINDS_SECONDS)
		failf(-1, R_KINDS, "%s", kinds_msg);
}

/* A result: the reasons it failed, as diagnostics, then the line. */
static void print_result(int n, int k, double seconds)
{
	int i, shown = 0;

	for (i = 0; k != R_KINDS && i < sh->nfail && i < MAX_FAILS; i++) {
		if (sh->fail_kind[i] != k)
			continue;
		printf("# %s\n", sh->fail[i]);
		shown++;
	}
	if (k != R_KINDS && sh->kind_fail[k] > shown)
		printf("# ... and %d more\n", sh->kind_fail[k] - shown);
	if (k == R_KINDS && kinds_msg[0])
		printf("# %s\n", kinds_msg);
	if (k == R_KINDS && seconds < ALL_KINDS_SECONDS) {
		printf("ok %d %s # SKIP a run shorter than %d s\n", n,
		       result_name[k], ALL_KINDS_SECONDS);
		return;
	}
	printf("%sok %d %s\n", sh->kind_fail[k] ? "not " : "", n, result_name[k]);
}

static void print_results(double seconds)
{
	int i, n = 0, skips = 0;

	for (i = 0; i < OP_MAX; i++)
		skips += !excluded[i] && kind_unavailable(i);
	printf("1..%d\n", R_NUM + skips);
	for (i = 0; i < R_NUM; i++)
		print_result(++n, i, seconds);
	for (i = 0; i < OP_MAX; i++)
		if (!excluded[i] && kind_unavailable(i))
			printf("ok %d operation kind %s # SKIP %s\n", ++n, op_name[i],
			       kind_unavailable(i));
}

static void print_logs(const struct slot *s, int slot)
{
	static const char *const adm_thr[] = { "admin", "supervisor" };
	int t, i, nt = slot == ADMIN_SLOT ? 2 : NTHR;

	for (t = 0; t < nt; t++) {
		const struct tlog *l = &s->log[t];
		uint32_t first = l->n > LOG_N ? l->n - LOG_N : 0;

		printf("# slot %d gen %u thread %s, last operations:\n", slot,
		       s->gen, slot == ADMIN_SLOT ? adm_thr[t] : thr_name[t]);
		for (i = first; i < (int)l->n; i++) {
			const struct op_rec *e = &l->e[i % LOG_N];

			printf("#   %8.3fs %-26s arg %#x -> %d%s%s\n", e->ms / 1000.0,
			       op_name[e->op], e->arg, e->ret,
			       e->ret < 0 ? " " : "",
			       e->ret < 0 ? strerror(-e->ret) : "");
		}
		if (l->busy)
			printf("#   (then %s, unfinished)\n", op_name[l->cur]);
	}
}

/* Each failure, and the logs of its process as they were when it failed. */
static void print_failures(uint64_t seed)
{
	int i, j;

	printf("# %d failures, seed %#" PRIx64 ":\n", sh->nfail, seed);
	for (i = 0; i < sh->nfail && i < MAX_FAILS; i++) {
		int s = sh->fail_slot[i];

		printf("#   %s\n", sh->fail[i]);
		if (s < 0 || s >= NSLOTS)
			continue;
		for (j = 0; j < i; j++)
			if (sh->fail_slot[j] == s &&
			    sh->fail_log[j].gen == sh->fail_log[i].gen)
				break;
		if (j == i)
			print_logs(&sh->fail_log[i], s);
	}
	if (sh->nfail > MAX_FAILS)
		printf("#   ... and %d more\n", sh->nfail - MAX_FAILS);
}

/* ---- setup and options ---------------------------------------------------- */

/* THP for MADV_HUGEPAGE regions: "always" or "madvise", not "never". */
static bool thp_enabled(void)
{
	char buf[64] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");

	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return !strstr(buf, "[never]") && buf[0];
}

static bool hugepages_reserved(void)
{
	char buf[32] = "";
	FILE *f;

	write_str("/proc/sys/vm/nr_hugepages", "16");
	f = fopen("/proc/sys/vm/nr_hugepages", "r");
	if (!f)
		return false;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return atoi(buf) > 0;
}

static void setup_failslab(void)
{
	/* slab allocations of the chaos thread's ioctls fail at random */
	if (!access("/sys/kernel/debug/failslab", F_OK)) {
		/* the task filter first: until then it would hit everyone */
		have_failslab =
			!write_str("/sys/kernel/debug/failslab/task-filter", "Y") &&
			!write_str("/sys/kernel/debug/failslab/interval", "1") &&
			!write_str("/sys/kernel/debug/failslab/times", "-1") &&
			!write_str("/sys/kernel/debug/failslab/verbose", "0") &&
			!write_str("/sys/kernel/debug/failslab/ignore-gfp-wait", "N") &&
			!write_str("/sys/kernel/debug/failslab/probability", "10");
	}
	if (!have_failslab)
		printf("# no failslab (CONFIG_FAILSLAB): no fault injection\n");
}

/*
 * The admin plane is part of this project's kernel: without the vhost
 * generic netlink family, neither the admin process nor the counters
 * check can run, and both results fail.
 */
static void setup_admin(void)
{
	struct ynl_sock *ys = adm_open();

	have_admin = ys;
	if (ys) {
		ynl_sock_destroy(ys);
		return;
	}
	failf(-1, R_ADMIN, "no vhost generic netlink family: no admin process");
	failf(-1, R_COUNTERS, "no vhost generic netlink family: no counters to compare");
}

static void setup_host(void)
{
	write_str(CALLBACK_MAX, "0");
	write_str("/sys/kernel/mm/ksm/run", "1");
	write_str("/sys/kernel/mm/ksm/sleep_millisecs", "10");
	write_str("/sys/kernel/mm/ksm/pages_to_scan", "1000");
	have_hugetlb = hugepages_reserved();
	have_node1 = !access("/sys/devices/system/node/node1", F_OK);
	have_thp = thp_enabled();
	if (system("grep -q zram /proc/swaps 2>/dev/null || { "
		   "echo 256M > /sys/block/zram0/disksize && mkswap /dev/zram0 && swapon /dev/zram0; "
		   "} >/dev/null 2>&1"))
		printf("# no swap on zram: page-out only drops clean pages\n");
	setup_failslab();
	have_kcov = !access("/sys/kernel/debug/kcov", R_OK | W_OK);
	if (!have_kcov)
		printf("# no /sys/kernel/debug/kcov (CONFIG_KCOV): no coverage\n");
	setup_admin();
}

/*
 * -x OP[,OP...]: leave operation kinds out, by name or by group (chaos,
 * mm, admin, rings), to narrow a failure down; the other kinds draw the
 * same.
 */
static int exclude(char *list)
{
	static const struct { const char *name; int first, last; } groups[] = {
		{ "chaos", OP_SET_OWNER, OP_FAILSLAB },
		{ "mm", OP_PAGEOUT, OP_HWPOISON },
		{ "admin", OP_ADM_DUMP, OP_SYSFS },
		{ "rings", OP_RINGS_MEMFD, OP_RINGS_UFFD },
	};
	char *tok, *save;
	unsigned int i;
	int j;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < ARRAY_SIZE(groups); i++)
			if (!strcmp(tok, groups[i].name))
				break;
		if (i < ARRAY_SIZE(groups)) {
			for (j = groups[i].first; j <= groups[i].last; j++)
				excluded[j] = true;
			continue;
		}
		for (j = 0; j < OP_MAX; j++)
			if (!strcmp(tok, op_name[j]))
				break;
		if (j == OP_MAX) {
			fprintf(stderr, "-x: no operation '%s'\n", tok);
			return -1;
		}
		excluded[j] = true;
	}
	return 0;
}

/* -X WHAT: see the comment at the top. */
static int inject_parse(const char *what)
{
	int i;

	for (i = 1; i < INJ_NUM; i++)
		if (!strcmp(what, inject_name[i]))
			break;
	if (i == INJ_NUM) {
		fprintf(stderr, "-X: no fault '%s'\n", what);
		return -1;
	}
	inject = i;
	return 0;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-s SECONDS] [-S SEED] [-p PROCS] [-q] [-x OP,...]\n",
		prog);
	exit(2);
}

struct opts {
	double seconds;
	uint64_t seed;
	int procs;
};

/* -q is accepted and does nothing: the table is always printed. */
static void parse_args(int argc, char **argv, struct opts *o)
{
	bool seeded = false;
	int opt;

	while ((opt = getopt(argc, argv, "s:S:p:qx:X:")) != -1) {
		switch (opt) {
		case 's':
			o->seconds = atof(optarg);
			break;
		case 'S':
			o->seed = strtoull(optarg, NULL, 0);
			seeded = true;
			break;
		case 'p':
			o->procs = atoi(optarg);
			break;
		case 'q':
			break;
		case 'x':
			if (exclude(optarg))
				usage(argv[0]);
			break;
		case 'X':
			if (inject_parse(optarg))
				usage(argv[0]);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (o->procs < 1 || o->procs > MAX_PROCS || o->seconds <= 0)
		usage(argv[0]);
	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		o->seed = ts.tv_sec * 1000000007ULL ^ ts.tv_nsec ^ getpid();
	}
}

int main(int argc, char **argv)
{
	struct opts o = { .seconds = 60, .procs = 2 };
	struct sup s = {};
	char what[256] = "";
	int i, kmsg, splats;

	for (i = 0; i < OP_MAX; i++) {
		if (!op_name[i]) {	/* an operation added without its name */
			fprintf(stderr, "vhost_stress: operation %d has no name\n", i);
			return 1;
		}
	}
	parse_args(argc, argv, &o);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	printf("# vhost_stress: seed %#" PRIx64
	       ", %.0f s, %d processes (replay: vhost_stress -S %#" PRIx64
	       " -s %.0f -p %d)\n",
	       o.seed, o.seconds, o.procs, o.seed, o.seconds, o.procs);
	if (inject)
		printf("# injected on purpose (-X): %s\n", inject_name[inject]);
	if (access("/dev/vhost-net", R_OK | W_OK)) {
		printf("1..1\nnot ok 1 /dev/vhost-net: %s\n", strerror(errno));
		return 1;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		printf("1..1\nnot ok 1 the run's shared memory: %s\n", strerror(errno));
		return 1;
	}
	sh->seed = o.seed;
	sh->t0 = now_ms();
	setup_host();
	kmsg = kmsg_open();
	rng_init(&s.r, NSLOTS, 0, 0);
	s.procs = o.procs;

	if (have_admin)
		s.pid[ADMIN_SLOT] = spawn(ADMIN_SLOT);
	for (i = 0; i < o.procs; i++)
		s.pid[i] = spawn(i);
	supervise(&s, o.seconds);
	stop_all(&s);
	/* fails closed: a log it cannot read counts as a splat */
	splats = kmsg_splats(kmsg, what, sizeof(what), false);
	if (splats)
		failf(-1, R_SPLAT, "%d kernel splats, the first: %s", splats, what);

	print_stats(s.kills, o.seed);
	check_kinds(o.seconds);
	print_results(o.seconds);
	if (sh->nfail)
		print_failures(o.seed);
	return sh->nfail ? 1 : 0;
}
