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
 * group.  A failure is a byte mismatch, a device that does not work again
 * after a rebuild, counters that do not add up, an admin request that
 * fails where it must not, a process that cannot be killed or does not
 * stop, or a kernel splat.  The output is KTAP, with the seed first and, on
 * a failure, the last operations of every thread.
 *
 *   vhost_stress [-s SECONDS] [-S SEED] [-p PROCS] [-q]
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

enum thr { T_CHECK, T_CHAOS, T_MM, T_SIG, NTHR };
static const char *const thr_name[NTHR] = { "check", "chaos", "mm", "sig" };

/* Every operation kind, by the name -x takes and the report shows. */
#define OPS(X)								\
	X(CHECK, "check")		X(SET_OWNER, "set-owner")	\
	X(RESET_OWNER, "reset-owner")	X(MEM_TABLE, "set-mem-table")	\
	X(FEATURES, "set-features")	X(VRING_NUM, "set-vring-num")	\
	X(VRING_ADDR, "set-vring-addr")	X(VRING_BASE, "set-vring-base") \
	X(GET_BASE, "get-vring-base")	X(VRING_KICK, "set-vring-kick") \
	X(VRING_CALL, "set-vring-call")	X(VRING_ERR, "set-vring-err")	\
	X(ENDIAN, "set-vring-endian")	X(LOG_BASE, "set-log-base")	\
	X(IOTLB_UPD, "iotlb-update")	X(IOTLB_INV, "iotlb-invalidate") \
	X(BACKEND, "net-set-backend")	X(BUSYLOOP, "busyloop-timeout") \
	X(NEW_WORKER, "new-worker")	X(ATTACH_WORKER, "attach-worker") \
	X(FREE_WORKER, "free-worker")	X(LENIENT, "lossy-traffic")	\
	X(REBUILD, "rebuild-new")	X(RESET_REUSE, "rebuild-reset") \
	X(FAILSLAB, "failslab")						\
	X(PAGEOUT, "madv-pageout")	X(COLD, "madv-cold")		\
	X(COLLAPSE, "madv-collapse")	X(MOVE_PAGES, "move-pages")	\
	X(KSM, "ksm")			X(FORK, "fork")			\
	X(SOFT_DIRTY, "soft-dirty")	X(MUNMAP, "munmap")		\
	X(MREMAP, "mremap")		X(MPROTECT, "mprotect")		\
	X(DONTNEED, "madv-dontneed")	X(HWPOISON, "madv-hwpoison")	\
	X(SIGNAL, "signal")						\
	X(ADM_DUMP, "adm-dump")		X(ADM_STATS, "adm-stats")	\
	X(ADM_GET, "adm-get")		X(ADM_SET, "adm-set")		\
	X(ADM_MONITOR, "adm-monitor")	X(SYSFS, "sysfs")		\
	X(KILL, "kill")			X(OOM, "oom")

#define X_ENUM(e, s) OP_##e,
#define X_NAME(e, s) s,
enum op { OPS(X_ENUM) OP_MAX };
static const char *const op_name[OP_MAX] = { OPS(X_NAME) };

struct op_rec {
	uint16_t op;
	int16_t ret;
	uint32_t arg;
	uint32_t ms;
};

struct tlog {
	uint32_t n;
	struct op_rec e[LOG_N];
};

struct slot {
	pid_t pid;
	uint32_t gen;
	struct tlog log[NTHR];
};

/* Shared by every process of the run (MAP_SHARED before the forks). */
struct shared {
	uint64_t seed;
	double t0;
	int stop;
	int nfail;
	int kind_fail[5];		/* failures per result, see report() */
	char fail[MAX_FAILS][240];
	int fail_slot[MAX_FAILS];
	uint64_t ran[OP_MAX], ok[OP_MAX];
	struct slot slot[NSLOTS];
	uint32_t poison_tries;		/* MADV_HWPOISON calls made */
	uint32_t npcs;			/* distinct PCs in pcs[] */
	uint64_t pcs[PCSET];		/* open addressing, 0 = free */
};

enum { R_TRAFFIC, R_COUNTERS, R_PROCS, R_ADMIN, R_SPLAT };
static const char *const result_name[] = {
	"checked traffic byte-exact, devices work again after every rebuild",
	"counters of the checked devices add up",
	"every process killed or stopped went away in time",
	"the admin plane answered every request it must",
	"kernel log free of splats",
};

static struct shared *sh;
static bool excluded[OP_MAX];	/* -x */
static bool quiet;
static bool have_failslab, have_node1, have_hugetlb, have_admin, have_kcov;
static int poisoned;		/* per worker process */
static int local_stop;		/* this worker failed: it stops, is restarted */
static sigset_t usr1;		/* SIGUSR1: what the signal thread sends */
static __thread bool in_poison;	/* in madvise(MADV_HWPOISON): see on_bus() */

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

static void rec(int slot, int thr, enum op op, int ret, uint32_t arg)
{
	struct tlog *l = &sh->slot[slot].log[thr];
	uint32_t i = l->n++ % LOG_N;

	l->e[i] = (struct op_rec){ .op = op, .ret = ret < -32767 ? -32767 : ret,
				   .arg = arg, .ms = ms_since_start() };
	__atomic_add_fetch(&sh->ran[op], 1, __ATOMIC_RELAXED);
	if (ret >= 0)
		__atomic_add_fetch(&sh->ok[op], 1, __ATOMIC_RELAXED);
}

static void failf(int slot, int result, const char *fmt, ...)
{
	int i = __atomic_fetch_add(&sh->nfail, 1, __ATOMIC_RELAXED);
	char msg[240];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	__atomic_add_fetch(&sh->kind_fail[result], 1, __ATOMIC_RELAXED);
	fprintf(stderr, "# FAIL [%.1fs] slot %d: %s\n", ms_since_start() / 1000,
		slot, msg);
	__atomic_store_n(&local_stop, 1, __ATOMIC_RELAXED);
	if (i < MAX_FAILS) {
		snprintf(sh->fail[i], sizeof(sh->fail[i]), "%s", msg);
		sh->fail_slot[i] = slot;
	}
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

static int uffd = -1;		/* the worker's userfaultfd, if it has one */
/*
 * The handler stops last, once the worker's threads are joined and its
 * devices closed: a fault on a ring it no longer serves (a thread's, or a
 * vhost worker's) would wait for ever.
 */
static int uffd_stop;

static void *uffd_handler(void *arg)
{
	struct rng *r = arg;
	struct uffd_msg m;
	struct pollfd p = { .fd = uffd, .events = POLLIN };

	while (!__atomic_load_n(&uffd_stop, __ATOMIC_RELAXED)) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		if (read(uffd, &m, sizeof(m)) != sizeof(m) ||
		    m.event != UFFD_EVENT_PAGEFAULT)
			continue;
		/* A handler that takes its time: the fault waits. */
		if (chance(r, 4))
			usleep(below(r, 3000));
		{
			struct uffdio_zeropage z = {
				.range = { .start = m.arg.pagefault.address & ~(PAGE - 1),
					   .len = PAGE },
			};

			ioctl(uffd, UFFDIO_ZEROPAGE, &z);
		}
	}
	return NULL;
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

			if (uffd < 0 || ioctl(uffd, UFFDIO_REGISTER, &reg))
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
	enum kind k = below(r, chaos ? NKINDS : K_UFFD);
	int ret;

	ret = ringmem_alloc(&d->rm, o.ring_num, k, chance(r, 2));
	if (ret)
		return ret;
	memset(d->rm.p, 0, d->rm.len);
	vnet_rings_layout(d->rm.p, o.ring_num, l);
	ret = vnet_open(&d->n, &o);
	if (ret) {
		ringmem_free(&d->rm);
		return ret;
	}
	d->open = true;
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

static void *check_thread(void *arg)
{
	struct worker *w = arg;
	struct rng r;
	char why[VNET_WHY_LEN];
	int count;

	struct kcov k;

	w->tid[T_CHECK] = gettid();
	kcov_begin(&k, false, 0);
	rng_init(&r, w->slot, w->gen, T_CHECK);
	while (!stopping() && !excluded[OP_CHECK]) {
		count = 1 + below(&r, 200);
		if (strict_traffic(&w->chk, &r, count, why, true)) {
			rec(w->slot, T_CHECK, OP_CHECK, -1, count);
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

/* Traffic that may be lost: errors are what the ioctls before made. */
static int lenient_traffic(struct dev *d, struct rng *r)
{
	static uint8_t frame[2048];
	int i, n = 1 + below(r, 16), got = 0;
	size_t len;

	for (i = 0; i < n; i++) {
		len = 60 + below(r, 1400);
		frame_fill(frame, len, (const uint8_t *)"\x02\0\0\0\0\1", d->seq++);
		if (chance(r, 2)) {
			if (!vnet_tx_one(&d->n, frame, len, NULL, 5))
				got++;
		} else if (!wire_send(&d->n, frame, len)) {
			got++;
		}
	}
	vnet_tx_reap(&d->n);
	while (vnet_rx_one(&d->n, frame, sizeof(frame), NULL, 2) >= 0)
		;
	vnet_rx_fill(&d->n);
	while (wire_recv(&d->n, frame, sizeof(frame), 0) >= 0)
		;
	return got;
}

/* The chaos device anew, and byte-exact traffic through it. */
static int rebuild(struct worker *w, struct rng *r, bool same_fd,
		   uint32_t *arg)
{
	struct dev *d = &w->chaos;
	char why[VNET_WHY_LEN];
	int ret;

	*arg = same_fd;
	if (same_fd && !w->need_rebuild) {
		ret = vnet_reset_owner(&d->n);
		if (ret && ret != -EBUSY)	/* unowned: SET_OWNER follows */
			return ret;
		drain(d);
		ret = vnet_setup(&d->n);
		if (!ret)
			ret = chaos_mem_table(w, r, 0);
		if (ret)
			return ret;
		vnet_rx_fill(&d->n);
	} else {
		if (d->open && !w->need_rebuild && chance(r, 2))	/* in flight */
			lenient_traffic(d, r);
		if (d->open)
			dev_close(w, d, true);
		ret = dev_open(w, d, r, true);
		if (ret)
			return ret;
		w->need_rebuild = false;
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
		return xioctl(fd, VHOST_SET_OWNER, NULL);
	case OP_RESET_OWNER:
		ret = xioctl(fd, VHOST_RESET_OWNER, NULL);
		if (!ret)
			w->need_rebuild = true;	/* the driver's state is gone */
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
		*arg = s.num << 2 | s.index;
		return xioctl(fd, VHOST_SET_VRING_NUM, &s);
	}
	case OP_VRING_ADDR:
		return set_vring_addr(w, r, arg);
	case OP_VRING_BASE:
		s.num = chance(r, 2) ? 0 : below(r, 1 << 17);
		*arg = s.num;
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

static void *chaos_thread(void *arg)
{
	struct worker *w = arg;
	struct rng r;
	enum op op;
	uint32_t a;
	int ret;

	struct kcov k;

	w->tid[T_CHAOS] = gettid();
	kcov_begin(&k, false, 0);
	rng_init(&r, w->slot, w->gen, T_CHAOS);
	while (!stopping()) {
		a = 0;
		pthread_mutex_lock(&w->chaos_lock);
		if (w->need_rebuild || !w->chaos.open) {
			op = OP_REBUILD;
			ret = rebuild(w, &r, false, &a);
		} else if (chance(&r, 3) && !excluded[OP_LENIENT]) {
			op = OP_LENIENT;
			ret = lenient_traffic(&w->chaos, &r);
		} else if (chance(&r, 40)) {
			op = chance(&r, 2) ? OP_REBUILD : OP_RESET_REUSE;
			if (excluded[op]) {
				pthread_mutex_unlock(&w->chaos_lock);
				continue;
			}
			ret = rebuild(w, &r, op == OP_RESET_REUSE, &a);
		} else {
			op = OP_SET_OWNER + below(&r, OP_FREE_WORKER - OP_SET_OWNER + 1);
			if (excluded[op]) {
				pthread_mutex_unlock(&w->chaos_lock);
				sleep_ms(1);
				continue;
			}
			if (chance(&r, 6) && have_failslab && !excluded[OP_FAILSLAB]) {
				set_fail(true);
				ret = chaos_ioctl(w, &r, op, &a);
				set_fail(false);
				rec(w->slot, T_CHAOS, OP_FAILSLAB, ret, op);
			} else {
				ret = chaos_ioctl(w, &r, op, &a);
			}
		}
		pthread_mutex_unlock(&w->chaos_lock);
		rec(w->slot, T_CHAOS, op, ret, a);
		kcov_drain(&k);
		if (ret == -EIO && (op == OP_REBUILD || op == OP_RESET_REUSE))
			break;		/* failed; the device is left as it is */
		if (op == OP_REBUILD && ret < 0) {
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

static int fork_touch(struct worker *w, struct rng *r)
{
	struct region g[2][NREG];
	pid_t pid;
	int i, j, st;
	double t;

	pthread_mutex_lock(&w->reg_lock);
	memcpy(g, w->reg, sizeof(g));
	pthread_mutex_unlock(&w->reg_lock);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		volatile uint8_t sum = 0;
		size_t k;

		/* Reads of every ring; writes to the checked buffers (COW). */
		for (i = 0; i < 2; i++)
			if (g[i][0].p)
				for (k = 0; k < g[i][0].len; k += PAGE)
					sum += ((volatile uint8_t *)g[i][0].p)[k];
		for (j = 1; j < NREG; j++)
			if (g[0][j].p)
				for (k = 0; k < g[0][j].len; k += PAGE)
					((volatile uint8_t *)g[0][j].p)[k] ^= 1;
		if (chance(r, 4))
			usleep(below(r, 20000));
		_exit(sum & 0);
	}
	t = now_ms();
	while (waitpid(pid, &st, WNOHANG) == 0) {
		if (now_ms() - t > KILL_WAIT_MS) {
			failf(w->slot, R_PROCS, "forked child %d did not exit", pid);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -ETIMEDOUT;
		}
		usleep(1000);
	}
	return 0;
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
		if (g.kind == K_HUGETLB)
			break;	/* the anonymous memory put back would be smaller */
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
		in_poison = true;
		__atomic_add_fetch(&sh->poison_tries, 1, __ATOMIC_RELAXED);
		ret = madvise(p, PAGE, MADV_HWPOISON) ? -errno : 0;
		in_poison = false;
		if (!ret) {
			poisoned++;
			w->need_rebuild = true;	/* the page is gone for good */
		}
		break;
	default:
		ret = -EINVAL;
	}
	pthread_mutex_unlock(&w->chaos_lock);
	return ret;
}

static void *mm_thread(void *arg)
{
	struct worker *w = arg;
	struct region g;
	struct rng r;
	enum op op;
	uint32_t a;
	int ret;

	struct kcov k;

	w->tid[T_MM] = gettid();
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
		if (op >= OP_MUNMAP) {
			ret = destroy(w, &r, op, &a);
			rec(w->slot, T_MM, op, ret, a);
			continue;
		}
		if (!pick_region(w, &r, below(&r, 2), &g)) {
			rec(w->slot, T_MM, op, -ENOENT, 0);
			continue;
		}
		a = g.ring;
		switch (op) {
		case OP_PAGEOUT:
			ret = madvise(g.p, g.len, MADV_PAGEOUT) ? -errno : 0;
			break;
		case OP_COLD:
			ret = madvise(g.p, g.len, MADV_COLD) ? -errno : 0;
			break;
		case OP_COLLAPSE:
			ret = madvise((void *)((uintptr_t)g.p & ~(HUGE - 1)), HUGE,
				      MADV_COLLAPSE) ? -errno : 0;
			break;
		case OP_MOVE_PAGES:
			ret = move_some(&g, &r, &a);
			break;
		case OP_KSM:
			a |= chance(&r, 3) << 1;
			ret = madvise(g.p, g.len, a & 2 ? MADV_UNMERGEABLE :
						      MADV_MERGEABLE) ? -errno : 0;
			break;
		case OP_FORK:
			ret = fork_touch(w, &r);
			break;
		case OP_SOFT_DIRTY:
			ret = write_str("/proc/self/clear_refs", "4");
			break;
		default:
			ret = -EINVAL;
		}
		rec(w->slot, T_MM, op, ret, a);
	}
	return NULL;
}

/* ---- the signal thread --------------------------------------------------- */

static void on_usr1(int sig)
{
	(void)sig;
}

/*
 * MADV_HWPOISON sends the caller SIGBUS (BUS_MCEERR_AR, as if it had
 * touched the page) and other threads mapping the page BUS_MCEERR_AO:
 * the page's data is gone, nothing touched it, and the chaos device is
 * rebuilt without touching it.  Any other SIGBUS (a poisoned page
 * touched: a forked child reading the rings) ends the process as the
 * default action would, quietly.
 */
static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (si->si_code != BUS_MCEERR_AO && !in_poison) {
		signal(SIGBUS, SIG_DFL);
		raise(SIGBUS);
	}
}

static void *sig_thread(void *arg)
{
	struct worker *w = arg;
	struct rng r;
	int t;

	w->tid[T_SIG] = gettid();
	rng_init(&r, w->slot, w->gen, T_SIG);
	while (!stopping()) {
		sleep_ms(1 + below(&r, 20));
		t = chance(&r, 2) ? T_CHAOS : T_MM;
		if (w->tid[t] && !excluded[OP_SIGNAL])
			rec(w->slot, T_SIG, OP_SIGNAL,
			    syscall(SYS_tgkill, getpid(), w->tid[t], SIGUSR1) ?
			    -errno : 0, t);
	}
	return NULL;
}

/* ---- a worker process ---------------------------------------------------- */

/* The admin plane's counters of the checked device against its traffic. */
static void check_counters(struct worker *w)
{
	struct adm_stats dev, rxq, txq;
	struct ynl_sock *ys;
	struct dev *d = &w->chk;
	int ret;

	if (!have_admin || d->id < 0)
		return;
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
	}
	ynl_sock_destroy(ys);
}

static int worker_main(int slot, uint32_t gen)
{
	static void *(*const fn[NTHR])(void *) = {
		check_thread, chaos_thread, mm_thread, sig_thread,
	};
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	struct worker *w = calloc(1, sizeof(*w));
	pthread_t t[NTHR], ut;
	struct rng r, ur;
	int i, nf0 = __atomic_load_n(&sh->nfail, __ATOMIC_RELAXED);
	bool have_ut = false;

	if (!w)
		return 2;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGBUS, &sa, NULL);
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
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	if (uffd >= 0) {
		struct uffdio_api api = { .api = UFFD_API };

		if (ioctl(uffd, UFFDIO_API, &api)) {
			close(uffd);
			uffd = -1;
		}
	}
	rng_init(&ur, slot, gen, NTHR);
	if (uffd >= 0)
		have_ut = !pthread_create(&ut, NULL, uffd_handler, &ur);
	rng_init(&r, slot, gen, NTHR + 1);
	w->chk.id = -1;
	w->chaos.id = -1;
	kcov_begin(&w->kmain, true, getpid() << 2);
	if (dev_open(w, &w->chk, &r, false)) {
		failf(slot, R_TRAFFIC, "could not open the checked device");
		return 1;
	}
	for (i = 0; i < NTHR; i++)
		pthread_create(&t[i], NULL, fn[i], w);
	for (i = 0; i < NTHR; i++)
		pthread_join(t[i], NULL);
	kcov_drain(&w->kmain);
	if (__atomic_load_n(&sh->nfail, __ATOMIC_RELAXED) == nf0)
		check_counters(w);
	if (w->chaos.open)
		dev_close(w, &w->chaos, true);
	dev_close(w, &w->chk, false);
	__atomic_store_n(&uffd_stop, 1, __ATOMIC_RELAXED);
	if (have_ut)
		pthread_join(ut, NULL);
	return __atomic_load_n(&sh->nfail, __ATOMIC_RELAXED) != nf0;
}

/* ---- the admin process --------------------------------------------------- */

static bool gone(int err)
{
	return err == -ENODEV || err == -ENOENT;
}

static int admin_main(void)
{
	const int slot = ADMIN_SLOT;
	struct adm_stats *st = calloc(4096, sizeof(*st));
	uint32_t ids[512];
	int nids = 0, ret, k;
	struct ynl_sock *ys = adm_open(), *mon;
	struct rng r;
	uint32_t id;
	enum op op;

	struct kcov kc;

	if (!ys || !st)
		return 1;
	kcov_begin(&kc, false, 0);
	rng_init(&r, slot, 0, 0);
	while (!stopping()) {
		sleep_ms(below(&r, 10));
		op = OP_ADM_DUMP + below(&r, OP_SYSFS - OP_ADM_DUMP + 1);
		id = nids ? ids[below(&r, nids)] : 1;
		if (excluded[op])
			continue;
		switch (op) {
		case OP_ADM_DUMP:
			ret = adm_dump_ids(ys, ids, 512);
			if (ret >= 0)
				nids = ret;
			else
				failf(slot, R_ADMIN, "dev-get dump: %s", strerror(-ret));
			break;
		case OP_ADM_STATS:
			ret = adm_stats(ys, 0, true, chance(&r, 2), st, 4096);
			if (ret < 0)
				failf(slot, R_ADMIN, "stats-get dump: %s", strerror(-ret));
			break;
		case OP_ADM_GET: {
			struct vhost_dev_get_rsp *g = adm_get(ys, id);

			ret = g ? 0 : adm_err(ys);
			if (g)
				vhost_dev_get_rsp_free(g);
			else if (!gone(ret))
				failf(slot, R_ADMIN, "dev-get %u: %s", id, strerror(-ret));
			break;
		}
		case OP_ADM_SET: {
			struct adm_tun t = ADM_TUN_NONE;

			if (chance(&r, 2))
				t.busypoll_us = chance(&r, 2) ? 0 : below(&r, 100);
			if (chance(&r, 2))
				t.zerocopy = below(&r, 2);
			if (chance(&r, 3))
				t.zcopy_min_len = VHOST_ZCOPY_MIN_LEN_MIN +
						  below(&r, 4096);
			if (chance(&r, 2) || (t.busypoll_us < 0 && t.zerocopy < 0 &&
					      t.zcopy_min_len < 0))
				t.metamap = below(&r, 3);	/* off, map, batch */
			ret = adm_set(ys, id, t);
			if (ret && !gone(ret))
				failf(slot, R_ADMIN, "dev-set %u: %s", id, strerror(-ret));
			break;
		}
		case OP_ADM_MONITOR: {
			struct adm_ntf ntf[16];
			int err = 0;

			mon = adm_monitor(&err);
			ret = mon ? 0 : err;
			if (mon) {
				k = adm_ntf_drain(mon, below(&r, 30), ntf, 16);
				ret = k < 0 ? k : 0;
				ynl_sock_destroy(mon);
			} else {
				failf(slot, R_ADMIN, "monitor: %s", strerror(-err));
			}
			break;
		}
		default: {
			char name[16];
			uint64_t v;

			snprintf(name, sizeof(name), "vhost%u", id);
			ret = sysfs_u64(name, "statistics/tx_packets", &v);
			if (ret && !gone(ret))
				failf(slot, R_ADMIN, "sysfs %s: %s", name, strerror(-ret));
			break;
		}
		}
		rec(slot, 0, op, ret, id);
		kcov_drain(&kc);
	}
	ynl_sock_destroy(ys);
	free(st);
	return 0;
}

/* ---- the supervisor -------------------------------------------------------- */

static pid_t spawn(int slot)
{
	pid_t pid = fork();

	if (pid)
		return pid;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	_exit(slot == ADMIN_SLOT ? admin_main() :
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

/* An owner in a small memcg with traffic in flight, eating memory. */
static int oom_owner(struct rng *r)
{
	char pidstr[16];
	pid_t pid;
	int st;

	if (write_str("/sys/fs/cgroup/cgroup.subtree_control", "+memory"))
		return -ENODEV;
	mkdir(OOM_CG, 0755);
	if (write_str(OOM_CG "/memory.max", "40M"))
		return -ENODEV;
	write_str(OOM_CG "/memory.swap.max", "0");
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		struct vnet n;
		struct vnet_opts o = { .ring_num = 256, .event_idx = below(r, 2) };
		char data[200] = {};

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
	st = reap(pid, 60000);
	if (st == -1) {
		failf(ADMIN_SLOT, R_PROCS, "OOM owner %d still alive after 60 s", pid);
		show_stacks(pid);
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -ETIMEDOUT;
	}
	rmdir(OOM_CG);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? 0 : -ECHILD;
}

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

static void print_logs(int slot)
{
	struct slot *s = &sh->slot[slot];
	static const char *const adm_thr[] = { "admin", "supervisor" };
	int t, i, nt = slot == ADMIN_SLOT ? 2 : NTHR;

	for (t = 0; t < nt; t++) {
		struct tlog *l = &s->log[t];
		uint32_t first = l->n > LOG_N ? l->n - LOG_N : 0;

		printf("# slot %d gen %u thread %s, last operations:\n", slot,
		       s->gen, slot == ADMIN_SLOT ? adm_thr[t] : thr_name[t]);
		for (i = first; i < (int)l->n; i++) {
			struct op_rec *e = &l->e[i % LOG_N];

			printf("#   %8.3fs %-26s arg %#x -> %d%s%s\n", e->ms / 1000.0,
			       op_name[e->op], e->arg, e->ret,
			       e->ret < 0 ? " " : "",
			       e->ret < 0 ? strerror(-e->ret) : "");
		}
	}
}

static void setup_host(void)
{
	write_str("/sys/kernel/mm/ksm/run", "1");
	write_str("/sys/kernel/mm/ksm/sleep_millisecs", "10");
	write_str("/sys/kernel/mm/ksm/pages_to_scan", "1000");
	write_str("/proc/sys/vm/nr_hugepages", "16");
	have_hugetlb = !access("/proc/sys/vm/nr_hugepages", F_OK);
	have_node1 = !access("/sys/devices/system/node/node1", F_OK);
	if (system("grep -q zram /proc/swaps 2>/dev/null || "
		   "{ echo 256M > /sys/block/zram0/disksize && "
		   "mkswap /dev/zram0 && swapon /dev/zram0; } >/dev/null 2>&1"))
		printf("# no swap on zram: page-out only drops clean pages\n");
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
	have_kcov = !access("/sys/kernel/debug/kcov", R_OK | W_OK);
	if (!have_kcov)
		printf("# no /sys/kernel/debug/kcov (CONFIG_KCOV): no coverage\n");
	{
		struct ynl_sock *ys = adm_open();

		have_admin = ys;
		if (ys)
			ynl_sock_destroy(ys);
		else
			printf("# no vhost netlink family: no admin process, no counters\n");
	}
}

/*
 * -x OP[,OP...]: leave operation kinds out, by name or by group (chaos,
 * mm, admin), to narrow a failure down; the other kinds draw the same.
 */
static int exclude(char *list)
{
	static const struct { const char *name; int first, last; } groups[] = {
		{ "chaos", OP_SET_OWNER, OP_FAILSLAB },
		{ "mm", OP_PAGEOUT, OP_HWPOISON },
		{ "admin", OP_ADM_DUMP, OP_SYSFS },
	};
	char *tok, *save;
	int i, j;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (i = 0; i < 3; i++)
			if (!strcmp(tok, groups[i].name))
				break;
		if (i < 3) {
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

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-s SECONDS] [-S SEED] [-p PROCS] [-q] [-x OP,...]\n",
		prog);
	exit(2);
}

int main(int argc, char **argv)
{
	double seconds = 60, end, next;
	uint64_t seed = 0;
	int procs = 2, opt, i, kmsg, splats, st, kills = 0;
	pid_t pid[NSLOTS] = {};
	char what[256] = "";
	bool seeded = false;
	int sigbus = 0;
	struct rng r;

	while ((opt = getopt(argc, argv, "s:S:p:qx:")) != -1) {
		switch (opt) {
		case 's':
			seconds = atof(optarg);
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 0);
			seeded = true;
			break;
		case 'p':
			procs = atoi(optarg);
			break;
		case 'q':
			quiet = true;
			break;
		case 'x':
			if (exclude(optarg))
				usage(argv[0]);
			break;
		default:
			usage(argv[0]);
		}
	}
	if (procs < 1 || procs > MAX_PROCS || seconds <= 0)
		usage(argv[0]);
	if (!seeded) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		seed = ts.tv_sec * 1000000007ULL ^ ts.tv_nsec ^ getpid();
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	printf("# vhost_stress: seed %#" PRIx64 ", %.0f s, %d processes"
	       " (replay: vhost_stress -S %#" PRIx64 " -s %.0f -p %d)\n",
	       seed, seconds, procs, seed, seconds, procs);
	if (access("/dev/vhost-net", R_OK | W_OK)) {
		printf("1..0 # SKIP /dev/vhost-net: %s\n", strerror(errno));
		return 4;
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	sh->seed = seed;
	sh->t0 = now_ms();
	setup_host();
	kmsg = kmsg_open();
	rng_init(&r, NSLOTS, 0, 0);
	fflush(NULL);

	if (have_admin)
		pid[ADMIN_SLOT] = spawn(ADMIN_SLOT);
	for (i = 0; i < procs; i++)
		pid[i] = spawn(i);
	end = now_ms() + seconds * 1000;
	next = now_ms() + 500 + below(&r, 2500);
	while (now_ms() < end) {
		usleep(20000);
		for (i = 0; i < procs; i++) {
			/* a worker that failed has said why; start it again */
			if (waitpid(pid[i], &st, WNOHANG) == pid[i]) {
				sigbus += WIFSIGNALED(st) && WTERMSIG(st) == SIGBUS;
				sh->slot[i].gen++;
				pid[i] = spawn(i);
			}
		}
		if (now_ms() < next)
			continue;
		next = now_ms() + 500 + below(&r, 2500);
		if (chance(&r, 8)) {
			if (!excluded[OP_OOM])
				rec(ADMIN_SLOT, 1, OP_OOM, oom_owner(&r), 0);
			continue;
		}
		i = below(&r, procs);
		if (excluded[OP_KILL])
			continue;
		kill(pid[i], SIGKILL);
		st = reap(pid[i], KILL_WAIT_MS);
		rec(ADMIN_SLOT, 1, OP_KILL, st == -1 ? -ETIMEDOUT : 0, i);
		if (st == -1) {
			failf(i, R_PROCS, "worker %d did not die within %d s of SIGKILL",
			      pid[i], KILL_WAIT_MS / 1000);
			show_stacks(pid[i]);
			break;
		}
		kills++;
		sh->slot[i].gen++;
		pid[i] = spawn(i);
	}

	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELAXED);
	for (i = 0; i < NSLOTS; i++) {
		if (!pid[i])
			continue;
		st = reap(pid[i], STOP_WAIT_MS);
		if (st == -1) {
			failf(i, R_PROCS, "process %d did not stop within %d s",
			      pid[i], STOP_WAIT_MS / 1000);
			show_stacks(pid[i]);
			kill(pid[i], SIGKILL);
			waitpid(pid[i], &st, 0);
		}
	}
	splats = kmsg >= 0 ? kmsg_splats(kmsg, what, sizeof(what), false) : 0;
	if (splats)
		failf(-1, R_SPLAT, "%d kernel splats, the first: %s", splats, what);

	printf("# %.0f s, %d kills, %" PRIu64 " OOM kills, %u MADV_HWPOISON calls,"
	       " %d workers ended by SIGBUS, seed %#" PRIx64 "\n",
	       ms_since_start() / 1000, kills, sh->ok[OP_OOM], sh->poison_tries,
	       sigbus, seed);
	if (!quiet || sh->nfail)
		print_ops();
	if (have_kcov)
		printf("# coverage: %u distinct PCs of drivers/vhost reached (kcov)\n",
		       sh->npcs);
	printf("1..%d\n", R_SPLAT + 1);
	for (i = 0; i <= R_SPLAT; i++)
		printf("%sok %d %s\n", sh->kind_fail[i] ? "not " : "", i + 1,
		       result_name[i]);
	if (sh->nfail) {
		bool shown[NSLOTS + 1] = {};

		printf("# %d failures, seed %#" PRIx64 ":\n", sh->nfail, seed);
		for (i = 0; i < sh->nfail && i < MAX_FAILS; i++) {
			int s = sh->fail_slot[i];

			printf("#   %s\n", sh->fail[i]);
			if (s >= 0 && s < NSLOTS && !shown[s]) {
				shown[s] = true;
				print_logs(s);
			}
		}
	}
	return sh->nfail ? 1 : 0;
}
