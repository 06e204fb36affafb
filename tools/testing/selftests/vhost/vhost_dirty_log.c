// SPDX-License-Identifier: GPL-2.0
/*
 * vhost-net under what a hypervisor does to a running device: dirty logging
 * for live migration switched on and off while traffic flows, and busy
 * polling while ring pages are invalidated, and two devices of one process
 * (a worker each) invalidated by the same mm events.  (6.12's vhost-net does
 * not take VHOST_NEW_WORKER, so a device's TX and RX share a worker.)  Each
 * test runs with the metadata direct map on and off (variants map_on and
 * map_off); both must carry the same packets, byte for byte, and log the
 * same pages.
 *
 * Guest physical addresses equal this process's virtual addresses (the
 * library's memory table covers the whole user address space), so the dirty
 * log has one bit per 4 KiB page of our address space: 4 GiB of bitmap for
 * the 128 TiB of x86-64 user space, mapped sparse (MAP_NORESERVE).  Only the
 * bits of the rings (in one mapping of ours) and of the library's RX and TX
 * buffer mappings are checked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/vhost.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "vhost_net_lib.h"

#define PAGE 4096UL
#define NUM 256
#define BUF_SIZE 2048
#define BUF_PAGES (NUM * BUF_SIZE / PAGE)
#define RING_PAGES_MAX 16
/* One log bit per page up to the top of x86-64 user space (47 bits). */
#define LOG_LEN ((1ULL << 47) / PAGE / 8)

#define MPOL_MF_MOVE (1 << 1)

#define load_acquire(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)

static const size_t lens[] = { 60, 1514, 200, 777 };

/* ---- helpers shared by the fixtures ------------------------------------ */

/*
 * The device and the map on (or off) for new devices, the old default
 * mode returned.  /dev/vhost-net and the module parameter are the features
 * under test: missing, or the parameter read-only, the test fails.  A mode
 * written but not read back is restored first.
 */
static int require_dev(struct __test_metadata *_metadata, bool map)
{
	int mode = map ? METAMAP_MAP : METAMAP_OFF, old, r;
	char why[VNET_WHY_LEN];

	r = access("/dev/vhost-net", R_OK | W_OK) ? -errno : 0;
	ASSERT_EQ(0, r) TH_LOG("/dev/vhost-net: %s", strerror(-r));
	old = metamap_require_default(mode, why);
	ASSERT_LE(0, old) TH_LOG("%s", why);
	return old;
}

/* The device's queues took the mode the variant is for. */
static void expect_dev_mode(struct __test_metadata *_metadata, struct vnet *n,
			    bool map)
{
	struct metamap_stats s;
	int q, r;

	for (q = 0; q < 2; q++) {
		r = vnet_metamap_stats(n, q, &s);
		ASSERT_EQ(0, r) TH_LOG("vq%d fdinfo: %s", q, strerror(-r));
		ASSERT_EQ(map ? METAMAP_MAP : METAMAP_OFF, s.mode)
			TH_LOG("vq%d: mode %d", q, s.mode);
	}
}

/* Open a device (the module parameter says map or not) on rings at mem. */
static int dev_open(struct vnet *n, void *mem)
{
	struct vring_layout l[2];
	struct vnet_opts o = {
		.ring_num = NUM, .event_idx = true, .mrg_rxbuf = true,
		.buf_size = BUF_SIZE, .layout = { &l[0], &l[1] },
	};
	int r;

	vnet_rings_layout(mem, NUM, l);
	memset(mem, 0, vnet_rings_size(NUM));
	r = vnet_open(n, &o);
	if (!r)
		vnet_rx_fill(n);
	return r;
}

/*
 * The queue's direct map counters from fdinfo.  Parsed here rather than
 * with vnet_metamap_stats() so that kernels whose line has no "refused"
 * field yet can be compared against (refused is then 0).
 */
static void log_stats(struct __test_metadata *_metadata, const char *when,
		      int q, const struct metamap_stats *s)
{
	TH_LOG("%s vq%d: enabled=%d valid=%d fast=%" PRIu64 " fallback=%"
	       PRIu64 " inval=%" PRIu64 " remaps=%" PRIu64 " failures=%" PRIu64
	       " sections=%" PRIu64 " batched=%" PRIu64 " uaccess_fills=%" PRIu64
	       " payload_fast=%" PRIu64 " payload_fills=%" PRIu64,
	       when, q, s->enabled, s->valid, s->fast, s->fallback,
	       s->invalidations, s->remaps, s->remap_failures, s->sections,
	       s->batched, s->uaccess_fills, s->payload_fast, s->payload_fills);
}

/* A per-queue counter of the admin plane, /sys/class/vhost/<dev>/queues. */
static int queue_stat(struct vnet *n, int q, const char *name, uint64_t *v)
{
	char dev[32], path[160], buf[32] = "";
	int fd, r;

	r = vhost_fd_name(n->vhost_fd, dev, sizeof(dev));
	if (r)
		return r;
	snprintf(path, sizeof(path), "/sys/class/vhost/%s/queues/vq%d/%s",
		 dev, q, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	r = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (r <= 0)
		return -EIO;
	*v = strtoull(buf, NULL, 10);
	return 0;
}

/* count frames each way, byte-exact, one direction after the other. */
static int traffic(struct vnet *n, int count, int batch, uint32_t seq,
		   char *why)
{
	if (vnet_check_tx(n, lens, 4, count, batch, seq, why))
		return -1;
	return vnet_check_rx(n, lens, 4, count, batch, seq, why);
}

/*
 * Traffic in a thread: rounds of count frames, TX then RX (dir < 0), or
 * one direction only.  progress counts finished rounds.
 */
struct job {
	struct vnet *n;
	int dir;			/* VNET_TX, VNET_RX, or -1 for both */
	int rounds, count, batch;
	uint32_t seq;
	int progress;			/* __atomic */
	bool finished;			/* __atomic */
	int ret;
	char why[VNET_WHY_LEN];
};

static void *job_run(void *arg)
{
	struct job *j = arg;
	int i;

	for (i = 0; i < j->rounds && !j->ret; i++) {
		uint32_t seq = j->seq + i * j->count;

		if (j->dir != VNET_RX &&
		    vnet_check_tx(j->n, lens, 4, j->count, j->batch, seq, j->why))
			j->ret = -1;
		if (!j->ret && j->dir != VNET_TX &&
		    vnet_check_rx(j->n, lens, 4, j->count, j->batch, seq, j->why))
			j->ret = -1;
		__atomic_add_fetch(&j->progress, 1, __ATOMIC_RELEASE);
	}
	__atomic_store_n(&j->finished, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Wait until the job has done the given number of rounds. */
static int job_wait(struct job *j, int rounds)
{
	int i;

	for (i = 0; i < 60000; i++) {
		if (__atomic_load_n(&j->progress, __ATOMIC_ACQUIRE) >= rounds)
			return 0;
		if (__atomic_load_n(&j->finished, __ATOMIC_ACQUIRE))
			return -EIO;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

/* ---- dirty log --------------------------------------------------------- */

static bool log_bit(const uint8_t *log, const void *addr)
{
	uintptr_t pfn = (uintptr_t)addr / PAGE;

	return log[pfn / 8] >> (pfn % 8) & 1;
}

/* Clear the log bits of [p, p + len); vhost must not be logging meanwhile. */
static void log_clear(uint8_t *log, const void *p, size_t len)
{
	uintptr_t pfn, end = ((uintptr_t)p + len + PAGE - 1) / PAGE;

	for (pfn = (uintptr_t)p / PAGE; pfn < end; pfn++)
		__atomic_and_fetch(&log[pfn / 8], ~(1 << (pfn % 8)),
				   __ATOMIC_RELAXED);
}

/* The pages of the rings and of the buffers, relative to their mappings. */
struct dirty_set {
	uint8_t ring[RING_PAGES_MAX];
	uint8_t rx[BUF_PAGES];
	uint8_t tx[BUF_PAGES];
};

FIXTURE(dirty_log) {
	struct vnet n;
	void *rings;
	size_t rings_len;
	uint8_t *log;
	int log_fd;			/* eventfd for VHOST_SET_LOG_FD */
	int old_default;
	uint32_t seq;
};

FIXTURE_VARIANT(dirty_log) {
	bool map;
};

FIXTURE_VARIANT_ADD(dirty_log, map_on) {
	.map = true,
};

FIXTURE_VARIANT_ADD(dirty_log, map_off) {
	.map = false,
};

FIXTURE_SETUP(dirty_log)
{
	self->n.vhost_fd = -1;
	self->n.tap_fd = -1;
	self->n.sock_fd = -1;
	self->log_fd = -1;
	self->old_default = require_dev(_metadata, variant->map);
	self->rings_len = vnet_rings_size(NUM);
	ASSERT_GE(RING_PAGES_MAX * PAGE, self->rings_len);
	self->rings = vnet_map_anon(self->rings_len);
	ASSERT_NE(NULL, self->rings);
	self->log = mmap(NULL, LOG_LEN, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->log) TH_LOG("log: %s", strerror(errno));
	self->log_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, self->log_fd);
}

FIXTURE_TEARDOWN(dirty_log)
{
	vnet_close(&self->n);
	if (self->rings)
		munmap(self->rings, self->rings_len);
	if (self->log && self->log != MAP_FAILED)
		munmap(self->log, LOG_LEN);
	if (self->log_fd >= 0)
		close(self->log_fd);
	if (self->old_default >= 0)
		metamap_set_default(self->old_default);
}

/* Signals of the log eventfd since the last call. */
static uint64_t log_signals(FIXTURE_DATA(dirty_log) *self)
{
	uint64_t v = 0;

	if (read(self->log_fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return v;
}

static int set_features(struct vnet *n, uint64_t features)
{
	return ioctl(n->vhost_fd, VHOST_SET_FEATURES, &features) ? -errno : 0;
}

static int set_vring_addr_log(struct vnet *n, int q, bool log)
{
	struct vq *vq = &n->vq[q];
	struct vhost_vring_addr a = {
		.index = q,
		.flags = log ? 1 << VHOST_VRING_F_LOG : 0,
		.desc_user_addr = (uintptr_t)vq->desc,
		.avail_user_addr = (uintptr_t)vq->avail,
		.used_user_addr = (uintptr_t)vq->used,
		.log_guest_addr = log ? (uintptr_t)vq->used : 0,
	};

	return ioctl(n->vhost_fd, VHOST_SET_VRING_ADDR, &a) ? -errno : 0;
}

/*
 * Logging on or off the way QEMU's vhost_dev_set_log() does it for kernel
 * vhost: the features first, then each ring's addresses with or without
 * VHOST_VRING_F_LOG and the used ring's guest address.
 */
static int set_log(struct vnet *n, bool on)
{
	uint64_t f = n->features;
	int q, r;

	if (on)
		f |= 1ULL << VHOST_F_LOG_ALL;
	r = set_features(n, f);
	for (q = 0; !r && q < 2; q++)
		r = set_vring_addr_log(n, q, on);
	return r;
}

/* Page index of p in the mapping at base, checked to be inside it. */
static int page_of(const void *base, size_t len, const void *p)
{
	uintptr_t off = (uintptr_t)p - (uintptr_t)base;

	return off < len ? (int)(off / PAGE) : -1;
}

static void dirty_collect(FIXTURE_DATA(dirty_log) *self, struct dirty_set *d)
{
	size_t i;

	memset(d, 0, sizeof(*d));
	for (i = 0; i < self->rings_len / PAGE; i++)
		d->ring[i] = log_bit(self->log, (char *)self->rings + i * PAGE);
	for (i = 0; i < BUF_PAGES; i++) {
		d->rx[i] = log_bit(self->log, self->n.bufs[VNET_RX] + i * PAGE);
		d->tx[i] = log_bit(self->log, self->n.bufs[VNET_TX] + i * PAGE);
	}
}

static void dirty_clear(FIXTURE_DATA(dirty_log) *self)
{
	log_clear(self->log, self->rings, self->rings_len);
	log_clear(self->log, self->n.bufs[VNET_RX], self->n.bufs_len);
	log_clear(self->log, self->n.bufs[VNET_TX], self->n.bufs_len);
}

/*
 * The pages vhost wrote for used entries [from, to) of a queue: the used
 * ring's page (the used ring, page-aligned, fits in one), and for RX the
 * buffer bytes each entry says were written.
 */
static void dirty_expect(FIXTURE_DATA(dirty_log) *self, int q, uint16_t from,
			 uint16_t to, struct dirty_set *d)
{
	struct vq *vq = &self->n.vq[q];
	uint8_t *bufs = self->n.bufs[q];
	uint16_t i;

	if (from == to)
		return;
	d->ring[page_of(self->rings, self->rings_len, vq->used)] = 1;
	for (i = from; q == VNET_RX && i != to; i++) {
		struct vring_used_elem *e = &vq->used->ring[i % NUM];
		uint8_t *b = bufs + (size_t)e->id * BUF_SIZE;
		int p;

		if (!e->len || e->id >= NUM || e->len > BUF_SIZE)
			continue;	/* reported by the caller's checks */
		for (p = (b - bufs) / PAGE; p <= (b + e->len - 1 - bufs) / PAGE; p++)
			d->rx[p] = 1;
	}
}

static int dirty_count(const struct dirty_set *d)
{
	int n = 0;
	size_t i;

	for (i = 0; i < sizeof(*d); i++)
		n += ((const uint8_t *)d)[i];
	return n;
}

static void dirty_report(struct __test_metadata *_metadata, const char *what,
			 const struct dirty_set *got,
			 const struct dirty_set *want)
{
	int shown = 0;
	size_t i;

	for (i = 0; i < sizeof(*got); i++)
		if (((uint8_t *)got)[i] != ((uint8_t *)want)[i] && shown++ < 16)
			TH_LOG("%s: %s page %zu: bit %d, want %d", what,
			       i < RING_PAGES_MAX ? "ring" :
			       i < RING_PAGES_MAX + BUF_PAGES ? "rx buffer" :
			       "tx buffer",
			       i < RING_PAGES_MAX ? i :
			       (i - RING_PAGES_MAX) % BUF_PAGES,
			       ((uint8_t *)got)[i], ((uint8_t *)want)[i]);
	if (shown > 16)
		TH_LOG("%s: %d more pages differ", what, shown - 16);
}

#define WARM 64		/* frames each way before logging starts */
#define ROUND 32	/* frames each way per round of the traffic thread */
#define ROUNDS 12	/* rounds while logging is switched */
#define SWITCH_AT 2	/* rounds done before the switch */
#define DET 48		/* frames each way of a deterministic phase */

/*
 * Switch logging on (or off) while a thread runs ROUNDS rounds of TX and RX;
 * the used index of each queue right after the switch goes to idx[].
 */
static void switch_mid_traffic(struct __test_metadata *_metadata,
			       FIXTURE_DATA(dirty_log) *self, bool on,
			       uint16_t idx[2])
{
	struct job j = { .n = &self->n, .dir = -1, .rounds = ROUNDS,
			 .count = ROUND, .batch = ROUND, .seq = self->seq };
	uint64_t base = (uintptr_t)self->log;
	pthread_t t;
	int done, r = 0, q;

	ASSERT_EQ(0, pthread_create(&t, NULL, job_run, &j));
	if (job_wait(&j, SWITCH_AT))
		r = -ETIMEDOUT;
	if (!r && on && ioctl(self->n.vhost_fd, VHOST_SET_LOG_BASE, &base))
		r = -errno;
	if (!r)
		r = set_log(&self->n, on);
	for (q = 0; q < 2; q++)
		idx[q] = load_acquire(&self->n.vq[q].used->idx);
	done = __atomic_load_n(&j.progress, __ATOMIC_ACQUIRE);
	pthread_join(t, NULL);
	self->seq += ROUNDS * ROUND;
	ASSERT_EQ(0, j.ret) TH_LOG("traffic: %s", j.why);
	ASSERT_EQ(0, r) TH_LOG("logging %s: %s", on ? "on" : "off",
			       strerror(-r));
	/* Some traffic must have run after the switch, or nothing is tested. */
	ASSERT_GT(ROUNDS, done) TH_LOG("traffic ended before the switch");
	TH_LOG("logging %s after %d of %d rounds", on ? "on" : "off", done,
	       ROUNDS);
}

/*
 * One device's run: WARM frames each way, logging switched on while traffic
 * flows, a deterministic phase of DET frames each way whose dirty pages go
 * to *det, then (if off) logging switched off mid-traffic and the map
 * re-armed.  Everything but *det is checked here.
 */
static void run_device(struct __test_metadata *_metadata,
		       FIXTURE_DATA(dirty_log) *self, bool map, bool off,
		       struct dirty_set *det)
{
	struct metamap_stats s0[2], s1[2], s2[2];
	struct dirty_set got, want;
	char why[VNET_WHY_LEN];
	uint16_t sw[2], from[2], q;
	int fd, missing;

	self->seq = 0;
	ASSERT_EQ(0, dev_open(&self->n, self->rings));
	expect_dev_mode(_metadata, &self->n, map);
	fd = self->log_fd;
	ASSERT_EQ(0, ioctl(self->n.vhost_fd, VHOST_SET_LOG_FD, &fd));
	madvise(self->log, LOG_LEN, MADV_DONTNEED);	/* all bits clear */
	log_signals(self);
	ASSERT_EQ(0, traffic(&self->n, WARM, WARM, self->seq, why))
		TH_LOG("%s", why);
	self->seq += WARM;
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, &s0[q]));
		log_stats(_metadata, "before logging", q, &s0[q]);
		EXPECT_EQ(map, s0[q].enabled);
		if (map) {
			EXPECT_LT(0, s0[q].fast);
		} else {
			EXPECT_EQ(0, s0[q].fast);
		}
	}

	/* Every page written after the switch is logged. */
	switch_mid_traffic(_metadata, self, true, sw);
	memset(&want, 0, sizeof(want));
	for (q = 0; q < 2; q++) {
		uint16_t now = self->n.vq[q].used->idx;

		ASSERT_NE(sw[q], now) TH_LOG("vq%d: nothing used after the switch", q);
		if ((uint16_t)(now - sw[q]) > NUM)
			sw[q] = now - NUM;	/* older entries are overwritten */
		dirty_expect(self, q, sw[q], now, &want);
	}
	dirty_collect(self, &got);
	TH_LOG("after the switch: %d pages written, %d logged", dirty_count(&want),
	       dirty_count(&got));
	ASSERT_LT(0, dirty_count(&want));
	for (q = 0, missing = 0; q < sizeof(got); q++)
		missing += ((uint8_t *)&want)[q] && !((uint8_t *)&got)[q];
	if (missing)
		dirty_report(_metadata, "after the switch", &got, &want);
	ASSERT_EQ(0, missing) TH_LOG("pages written but not logged");
	EXPECT_LT(0, log_signals(self)) TH_LOG("no log eventfd signal");

	/*
	 * A deterministic phase from a clean log: the log holds exactly the
	 * used ring pages and the RX buffers that received data.
	 */
	usleep(50000);		/* the worker's last writes after the traffic */
	dirty_clear(self);
	log_signals(self);
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, &s1[q]));
		from[q] = self->n.vq[q].last_used;
	}
	ASSERT_EQ(0, traffic(&self->n, DET, DET, self->seq, why))
		TH_LOG("%s", why);
	self->seq += DET;
	memset(&want, 0, sizeof(want));
	for (q = 0; q < 2; q++)
		dirty_expect(self, q, from[q], self->n.vq[q].last_used, &want);
	dirty_collect(self, det);
	TH_LOG("logged phase: %d pages written, %d logged", dirty_count(&want),
	       dirty_count(det));
	dirty_report(_metadata, "logged phase", det, &want);
	EXPECT_EQ(0, memcmp(det, &want, sizeof(want)))
		TH_LOG("the log is not exactly the pages vhost wrote");
	EXPECT_LT(0, log_signals(self)) TH_LOG("no log eventfd signal");
	/*
	 * While logging, the map carries nothing: every write is logged.  The
	 * read-ahead goes on through uaccess, and the chains served from it
	 * (one descriptor each here) logged what they wrote: the exact log
	 * above says so.  The payload map goes on in mode map: it reads TX
	 * buffers and writes received frames through kernel addresses, and the
	 * exact log above (the RX buffers written, no TX buffer page) is that
	 * of such a run: vhost-net logs an RX buffer after writing it, however
	 * it wrote it.
	 */
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, &s2[q]));
		log_stats(_metadata, "while logging", q, &s2[q]);
		EXPECT_EQ(s1[q].fast, s2[q].fast);
		EXPECT_EQ(s1[q].sections, s2[q].sections);
		if (map) {
			EXPECT_LT(s1[q].uaccess_fills, s2[q].uaccess_fills);
			/* RX buffers are posted ahead: most come from it */
			if (q == VNET_RX)
				EXPECT_LT(s1[q].batched + DET / 2,
					  s2[q].batched);
		} else {
			EXPECT_EQ(s1[q].batched, s2[q].batched);
			EXPECT_EQ(0, s2[q].uaccess_fills);
		}
		if (map && q == VNET_TX)
			EXPECT_LE(s1[q].payload_fast + DET / 2,
				  s2[q].payload_fast)
				TH_LOG("TX buffers not read through the payload map");
		if (map && q == VNET_RX)
			EXPECT_LE(s1[q].payload_fast + DET / 2,
				  s2[q].payload_fast)
				TH_LOG("RX frames not written through the payload map");
		if (!map)
			EXPECT_EQ(0, s2[q].payload_fast + s2[q].payload_fills +
				     s2[q].payload_fallback);
		EXPECT_EQ(0, vq_error_count(&self->n.vq[q]));
	}
	if (!off)
		goto out;

	/* Logging off mid-traffic: nothing logged after, the map re-arms. */
	switch_mid_traffic(_metadata, self, false, sw);
	usleep(50000);
	dirty_clear(self);
	log_signals(self);
	ASSERT_EQ(0, traffic(&self->n, DET, DET, self->seq, why))
		TH_LOG("%s", why);
	self->seq += DET;
	dirty_collect(self, &got);
	memset(&want, 0, sizeof(want));
	dirty_report(_metadata, "after logging off", &got, &want);
	EXPECT_EQ(0, memcmp(&got, &want, sizeof(want)))
		TH_LOG("pages logged after logging was switched off");
	EXPECT_EQ(0, log_signals(self));
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, &s1[q]));
		log_stats(_metadata, "after logging", q, &s1[q]);
		EXPECT_EQ(map, s1[q].enabled);
		if (map) {
			EXPECT_EQ(1, s1[q].valid) TH_LOG("vq%d: map not re-armed", q);
			EXPECT_LT(s2[q].fast, s1[q].fast);
			EXPECT_LT(s2[q].remaps, s1[q].remaps);
		} else {
			EXPECT_EQ(0, s1[q].fast);
			EXPECT_EQ(0, s1[q].remaps);
		}
		EXPECT_EQ(0, vq_error_count(&self->n.vq[q]));
	}
out:
	vnet_close(&self->n);
}

/*
 * QEMU's migration sequence mid-traffic: VHOST_SET_LOG_BASE, SET_FEATURES
 * with VHOST_F_LOG_ALL and SET_VRING_ADDR with VHOST_VRING_F_LOG and the
 * used ring's address, while a thread runs TX and RX.  Every used ring page
 * and RX buffer written after the switch has its bit set; a later phase
 * logs exactly the pages vhost wrote; the map carries nothing while
 * logging.  Then logging goes off mid-traffic: no page is logged after, and
 * with the map on it is rebuilt and carries the traffic again.
 */
TEST_F_TIMEOUT(dirty_log, log_all_on_off_mid_traffic, 120)
{
	struct dirty_set det;

	run_device(_metadata, self, variant->map, true, &det);
}

/*
 * The same traffic logs the same pages with the map on and off: the
 * variant's device, then one with the other setting (relative to the ring
 * and buffer mappings).
 */
TEST_F_TIMEOUT(dirty_log, same_bitmap_map_on_and_off, 120)
{
	struct dirty_set a, b;

	run_device(_metadata, self, variant->map, false, &a);
	ASSERT_LE(0, metamap_set_default(!variant->map));
	run_device(_metadata, self, !variant->map, false, &b);
	dirty_report(_metadata, variant->map ? "map off vs on" :
		     "map on vs off", &b, &a);
	EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
}

/* ---- invalidations under busy polling ----------------------------------- */

FIXTURE(inval) {
	struct vnet n;
	void *rings;
	size_t rings_len;
	int old_default;
};

FIXTURE_VARIANT(inval) {
	bool map;
};

FIXTURE_VARIANT_ADD(inval, map_on) {
	.map = true,
};

FIXTURE_VARIANT_ADD(inval, map_off) {
	.map = false,
};

FIXTURE_SETUP(inval)
{
	int r;

	self->n.vhost_fd = -1;
	self->n.tap_fd = -1;
	self->n.sock_fd = -1;
	self->old_default = require_dev(_metadata, variant->map);
	self->rings_len = vnet_rings_size(NUM);
	self->rings = vnet_map_anon(self->rings_len);
	ASSERT_NE(NULL, self->rings);
	r = dev_open(&self->n, self->rings);
	ASSERT_EQ(0, r) TH_LOG("vnet_open: %s", strerror(-r));
	expect_dev_mode(_metadata, &self->n, variant->map);
}

FIXTURE_TEARDOWN(inval)
{
	vnet_close(&self->n);
	if (self->rings)
		munmap(self->rings, self->rings_len);
	if (self->old_default >= 0)
		metamap_set_default(self->old_default);
}

/*
 * Invalidations of the ring pages that keep their contents: migration
 * between the fake NUMA nodes (scripts/vm boots numa=fake=2) and fork(),
 * whose copy-on-write protection of the parent's pages runs the notifier,
 * alternately.  events counts invalidating events done.
 */
struct invalidator {
	void *p;
	size_t len;
	bool numa;
	bool stop;			/* __atomic */
	int events;
	int errors;
};

/*
 * Move every ring page to the node the first one is not on: 1 if all moved
 * (each queue's ranges saw an invalidation), 0 if the pages were not all on
 * one node before (they are now), -1 on failure.
 */
static int migrate_once(struct invalidator *v)
{
	int n = v->len / PAGE, i, node, nodes[64], status[64];
	void *pages[64];

	if (n > 64)
		n = 64;
	for (i = 0; i < n; i++)
		pages[i] = (char *)v->p + i * PAGE;
	if (syscall(SYS_move_pages, 0, n, pages, NULL, status, 0))
		return -1;
	node = !status[0];
	for (i = 0; i < n; i++)
		nodes[i] = node;
	for (i = 1; i < n; i++)
		if (status[i] != status[0])
			node = -1;
	if (syscall(SYS_move_pages, 0, n, pages, nodes, status, MPOL_MF_MOVE))
		return -1;
	for (i = 0; i < n; i++)
		if (status[i] != nodes[i])
			return -1;
	return node >= 0;
}

static int fork_once(void)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid)
		_exit(0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return 1;
}

static void *invalidator_run(void *arg)
{
	struct invalidator *v = arg;
	int iter, r;

	for (iter = 0; !__atomic_load_n(&v->stop, __ATOMIC_RELAXED); iter++) {
		r = v->numa && (iter & 1) ? migrate_once(v) : fork_once();
		if (r < 0)
			v->errors++;
		else
			v->events += r;
		usleep(500);
	}
	return NULL;
}

static void invalidator_stop(pthread_t t, struct invalidator *v)
{
	__atomic_store_n(&v->stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
}

#define CONC_ROUNDS 8
#define CONC_ROUND 128

/*
 * TX and RX in two threads at once, byte-exact, while the invalidator runs;
 * then a quiet round.  Checks the map counters and the admin plane's packet
 * counters of both queues.
 */
static void traffic_while_invalidating(struct __test_metadata *_metadata,
				       FIXTURE_DATA(inval) *self,
				       const FIXTURE_VARIANT(inval) *variant,
				       int batch, struct metamap_stats after[2])
{
	struct invalidator v = { .p = self->rings, .len = self->rings_len };
	struct job tx = { .n = &self->n, .dir = VNET_TX,
			  .rounds = CONC_ROUNDS, .count = CONC_ROUND,
			  .batch = batch, .seq = 1000 };
	struct job rx = tx;
	static const char * const pkts[2] = { "rx_packets", "tx_packets" };
	struct metamap_stats before[2], storm[2];
	uint64_t p0[2], p1[2];
	char why[VNET_WHY_LEN];
	pthread_t tt, tr, ti;
	int q;

	rx.dir = VNET_RX;
	v.numa = !access("/sys/devices/system/node/node1", F_OK);
	ASSERT_EQ(0, traffic(&self->n, 64, 64, 0, why)) TH_LOG("%s", why);
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, &before[q]));
		ASSERT_EQ(0, queue_stat(&self->n, q, pkts[q], &p0[q]));
	}
	ASSERT_EQ(0, pthread_create(&ti, NULL, invalidator_run, &v));
	ASSERT_EQ(0, pthread_create(&tt, NULL, job_run, &tx));
	ASSERT_EQ(0, pthread_create(&tr, NULL, job_run, &rx));
	pthread_join(tt, NULL);
	pthread_join(tr, NULL);
	invalidator_stop(ti, &v);
	TH_LOG("%d invalidating events (%s), %d failed", v.events,
	       v.numa ? "fork and migration" : "fork", v.errors);
	ASSERT_EQ(0, tx.ret) TH_LOG("tx: %s", tx.why);
	ASSERT_EQ(0, rx.ret) TH_LOG("rx: %s", rx.why);
	ASSERT_LT(0, v.events);
	/*
	 * A quiet round: the map serves it again.  (Whether it is valid at
	 * the very end depends on the driver's last writes to ring pages
	 * a fork write-protected: the map is only rebuilt by the next
	 * read-ahead or used-ring write.)
	 */
	for (q = 0; q < 2; q++)
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, &storm[q]));
	ASSERT_EQ(0, traffic(&self->n, 64, 64, 50000, why)) TH_LOG("%s", why);

	for (q = 0; q < 2; q++) {
		struct metamap_stats *s = &after[q];

		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, s));
		log_stats(_metadata, "after", q, s);
		ASSERT_EQ(0, queue_stat(&self->n, q, pkts[q], &p1[q]));
		EXPECT_EQ(CONC_ROUNDS * CONC_ROUND + 64, p1[q] - p0[q])
			TH_LOG("vq%d: %s", q, pkts[q]);
		EXPECT_EQ(0, vq_error_count(&self->n.vq[q]));
		EXPECT_EQ(variant->map, s->enabled);
		if (variant->map) {
			EXPECT_LE(before[q].invalidations + v.events,
				  s->invalidations);
			EXPECT_LT(before[q].remaps, s->remaps);
			EXPECT_LT(before[q].fast, storm[q].fast);
			EXPECT_LT(storm[q].fast, s->fast)
				TH_LOG("vq%d: the map served nothing after the storm",
				       q);
		} else {
			EXPECT_EQ(0, s->fast);
			EXPECT_EQ(0, s->remaps);
			EXPECT_EQ(0, s->invalidations);
			EXPECT_EQ(0, s->sections);
		}
	}
}

/*
 * Busy polling (VHOST_SET_VRING_BUSYLOOP_TIMEOUT on both queues) while ring
 * pages are invalidated: the poll loop reads the avail index of both queues
 * through the map, so invalidations hit the map while a queue polls.
 * Traffic stays byte-exact, both queues really polled (the admin plane's
 * busypoll_loops), the map saw every invalidation and serves traffic
 * again after, and nothing sleeps in the poll (the debug kernel would
 * splat).
 */
TEST_F_TIMEOUT(inval, busy_poll_while_invalidating, 120)
{
	struct metamap_stats after[2];
	uint64_t loops0[2], loops1[2];
	int q;

	for (q = 0; q < 2; q++) {
		struct vhost_vring_state b = { .index = q, .num = 200 };

		ASSERT_EQ(0, ioctl(self->n.vhost_fd,
				   VHOST_SET_VRING_BUSYLOOP_TIMEOUT, &b));
		ASSERT_EQ(0, queue_stat(&self->n, q, "busypoll_loops",
					&loops0[q]));
	}
	/* Small batches: the worker runs out of work and polls often. */
	traffic_while_invalidating(_metadata, self, variant, 4, after);
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, queue_stat(&self->n, q, "busypoll_loops",
					&loops1[q]));
		TH_LOG("vq%d: %" PRIu64 " busy-poll loops", q,
		       loops1[q] - loops0[q]);
		EXPECT_LT(loops0[q], loops1[q]) TH_LOG("vq%d never polled", q);
	}
}

/* ---- two devices of one process, two workers, one mm ------------------ */

/*
 * 6.12's vhost-net does not take VHOST_NEW_WORKER: a device's TX and RX
 * queues share its worker.  Two devices of one process have a worker each
 * on the same mm, which is what separate workers would give the map: one
 * mm event runs the notifier of queues two workers are using at that
 * moment.  Their rings are in one mapping, so every event invalidates all
 * four queues.
 */
#define WORKERS 2

FIXTURE(workers) {
	struct vnet n[WORKERS];
	void *rings;
	size_t rings_len;
	int old_default;
};

FIXTURE_VARIANT(workers) {
	bool map;
};

FIXTURE_VARIANT_ADD(workers, map_on) {
	.map = true,
};

FIXTURE_VARIANT_ADD(workers, map_off) {
	.map = false,
};

FIXTURE_SETUP(workers)
{
	size_t one = vnet_rings_size(NUM);
	int d, r;

	for (d = 0; d < WORKERS; d++) {
		self->n[d].vhost_fd = -1;
		self->n[d].tap_fd = -1;
		self->n[d].sock_fd = -1;
	}
	self->old_default = require_dev(_metadata, variant->map);
	self->rings_len = WORKERS * one;
	self->rings = vnet_map_anon(self->rings_len);
	ASSERT_NE(NULL, self->rings);
	for (d = 0; d < WORKERS; d++) {
		r = dev_open(&self->n[d], (char *)self->rings + d * one);
		ASSERT_EQ(0, r) TH_LOG("vnet_open %d: %s", d, strerror(-r));
		expect_dev_mode(_metadata, &self->n[d], variant->map);
	}
}

FIXTURE_TEARDOWN(workers)
{
	int d;

	for (d = 0; d < WORKERS; d++)
		vnet_close(&self->n[d]);
	if (self->rings)
		munmap(self->rings, self->rings_len);
	if (self->old_default >= 0)
		metamap_set_default(self->old_default);
}

/*
 * TX and RX of both devices at once (four threads, byte-exact) while the
 * invalidator forks and migrates the pages of all their rings; then a
 * quiet round on each.  Every queue carried every frame, saw every event
 * and is served by its map again after; no queue reports an error.
 */
TEST_F_TIMEOUT(workers, two_workers_one_mm_invalidating, 180)
{
	struct invalidator v = { .p = self->rings, .len = self->rings_len };
	static const char * const pkts[2] = { "rx_packets", "tx_packets" };
	struct metamap_stats before[WORKERS][2], storm[WORKERS][2], s;
	struct job jobs[WORKERS][2];
	pthread_t t[WORKERS][2], ti;
	uint64_t p0[WORKERS][2], p1;
	char why[VNET_WHY_LEN];
	int d, q;

	v.numa = !access("/sys/devices/system/node/node1", F_OK);
	for (d = 0; d < WORKERS; d++) {
		ASSERT_EQ(0, traffic(&self->n[d], 64, 64, 0, why))
			TH_LOG("dev %d: %s", d, why);
		for (q = 0; q < 2; q++) {
			struct job *j = &jobs[d][q];

			memset(j, 0, sizeof(*j));
			j->n = &self->n[d];
			j->dir = q ? VNET_TX : VNET_RX;
			j->rounds = CONC_ROUNDS;
			j->count = CONC_ROUND;
			j->batch = 16;
			j->seq = 1000 + d * 100000;
			ASSERT_EQ(0, vnet_metamap_stats(&self->n[d], q,
							&before[d][q]));
			ASSERT_EQ(0, queue_stat(&self->n[d], q, pkts[q],
						&p0[d][q]));
		}
	}
	ASSERT_EQ(0, pthread_create(&ti, NULL, invalidator_run, &v));
	for (d = 0; d < WORKERS; d++)
		for (q = 0; q < 2; q++)
			ASSERT_EQ(0, pthread_create(&t[d][q], NULL, job_run,
						    &jobs[d][q]));
	for (d = 0; d < WORKERS; d++)
		for (q = 0; q < 2; q++)
			pthread_join(t[d][q], NULL);
	invalidator_stop(ti, &v);
	TH_LOG("%d invalidating events (%s), %d failed", v.events,
	       v.numa ? "fork and migration" : "fork", v.errors);
	for (d = 0; d < WORKERS * 2; d++) {
		const struct job *j = &jobs[d / 2][d % 2];

		ASSERT_EQ(0, j->ret) TH_LOG("dev %d vq%d: %s", d / 2, d % 2,
					    j->why);
	}
	ASSERT_LT(0, v.events);

	for (d = 0; d < WORKERS; d++) {
		for (q = 0; q < 2; q++)
			ASSERT_EQ(0, vnet_metamap_stats(&self->n[d], q,
							&storm[d][q]));
		ASSERT_EQ(0, traffic(&self->n[d], 64, 64, 50000, why))
			TH_LOG("dev %d: %s", d, why);
		for (q = 0; q < 2; q++) {
			ASSERT_EQ(0, vnet_metamap_stats(&self->n[d], q, &s));
			log_stats(_metadata, d ? "dev 1" : "dev 0", q, &s);
			ASSERT_EQ(0, queue_stat(&self->n[d], q, pkts[q], &p1));
			EXPECT_EQ(CONC_ROUNDS * CONC_ROUND + 64, p1 - p0[d][q])
				TH_LOG("dev %d vq%d: %s", d, q, pkts[q]);
			EXPECT_EQ(0, vq_error_count(&self->n[d].vq[q]));
			EXPECT_EQ(variant->map, s.enabled);
			if (variant->map) {
				EXPECT_LE(before[d][q].invalidations + v.events,
					  s.invalidations)
					TH_LOG("dev %d vq%d", d, q);
				EXPECT_LT(before[d][q].remaps, s.remaps);
				EXPECT_LT(storm[d][q].fast, s.fast)
					TH_LOG("dev %d vq%d: the map served nothing after the storm",
					       d, q);
			} else {
				EXPECT_EQ(0, s.fast);
				EXPECT_EQ(0, s.sections);
			}
		}
	}
}

TEST_HARNESS_MAIN
