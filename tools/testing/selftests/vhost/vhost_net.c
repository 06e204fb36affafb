// SPDX-License-Identifier: GPL-2.0
/*
 * vhost-net datapath selftests: packets a userspace virtio-net driver puts
 * on its rings arrive byte-exact on the TAP's wire and the other way round,
 * across ring sizes, event idx, indirect descriptors, mergeable RX buffers,
 * in-order rings (VIRTIO_F_IN_ORDER: the driver then relies on the device's
 * single used entry per batch), wrap-around, reset and close with buffers
 * in flight, busy polling and buffers the device gives back unused.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/vhost.h>
#include <sys/ioctl.h>

#include "../kselftest_harness.h"
#include "vhost_net_lib.h"

#define WAIT_MS 10000

FIXTURE(vhost_net) {
	struct vnet n;
	uint8_t *tx, *rx;
};

FIXTURE_VARIANT(vhost_net) {
	unsigned int ring_num;
	bool event_idx;
	bool indirect;
	bool mrg_rxbuf;
	bool split_hdr;
	bool in_order;
};

FIXTURE_VARIANT_ADD(vhost_net, r256_evidx_mrg) {
	.ring_num = 256, .event_idx = true, .mrg_rxbuf = true,
};

FIXTURE_VARIANT_ADD(vhost_net, r1024_noevidx_splithdr) {
	.ring_num = 1024, .split_hdr = true,
};

FIXTURE_VARIANT_ADD(vhost_net, r256_indirect_evidx) {
	.ring_num = 256, .event_idx = true, .indirect = true, .split_hdr = true,
};

FIXTURE_VARIANT_ADD(vhost_net, r1024_indirect_noevidx_mrg) {
	.ring_num = 1024, .indirect = true, .split_hdr = true, .mrg_rxbuf = true,
};

/* In order: chains of one descriptor, of two (split header), indirect. */
FIXTURE_VARIANT_ADD(vhost_net, r256_evidx_mrg_inorder) {
	.ring_num = 256, .event_idx = true, .mrg_rxbuf = true, .in_order = true,
};

FIXTURE_VARIANT_ADD(vhost_net, r1024_noevidx_splithdr_inorder) {
	.ring_num = 1024, .split_hdr = true, .in_order = true,
};

FIXTURE_VARIANT_ADD(vhost_net, r256_indirect_evidx_mrg_inorder) {
	.ring_num = 256, .event_idx = true, .indirect = true, .split_hdr = true,
	.mrg_rxbuf = true, .in_order = true,
};

static int vnet_open_base(struct vnet *n, const FIXTURE_VARIANT(vhost_net) *v,
			  size_t buf_size, bool mrg, uint16_t base)
{
	struct vnet_opts o = {
		.ring_num = v->ring_num, .event_idx = v->event_idx,
		.indirect = v->indirect, .mrg_rxbuf = mrg,
		.split_hdr = v->split_hdr, .buf_size = buf_size,
		.in_order = v->in_order, .ring_base = base,
	};
	int r = vnet_open(n, &o);

	if (!r)
		vnet_rx_fill(n);
	return r;
}

static int vnet_open_variant(struct vnet *n, const FIXTURE_VARIANT(vhost_net) *v,
			     size_t buf_size, bool mrg)
{
	return vnet_open_base(n, v, buf_size, mrg, 0);
}

/*
 * The metadata mode this run is for: VHOST_NET_METAMAP (off, map, batch;
 * scripts/guest-selftests sets it for each of its three runs), or else the
 * default for new devices.  -1 if neither names a mode.
 */
static int run_mode(void)
{
	const char *e = getenv("VHOST_NET_METAMAP");

	return e ? metamap_mode_parse(e) : metamap_get_default();
}

/* The device's queues are in the mode the run is for. */
static void assert_run_mode(struct __test_metadata *_metadata, struct vnet *n)
{
	struct metamap_stats s;
	int q, want = run_mode();

	ASSERT_LE(0, want) TH_LOG("no metadata mode: VHOST_NET_METAMAP '%s', default %d",
				  getenv("VHOST_NET_METAMAP") ?: "", metamap_get_default());
	if (getenv("VHOST_NET_METAMAP"))
		ASSERT_EQ(want, metamap_get_default())
			TH_LOG("the default mode for new devices is not the run's");
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, vnet_metamap_stats(n, q, &s)) TH_LOG("vq%d: no metamap fdinfo", q);
		ASSERT_EQ(want, s.mode) TH_LOG("vq%d is in mode %d, the run is for %d",
					       q, s.mode, want);
	}
}

FIXTURE_SETUP(vhost_net)
{
	int r;

	if (access("/dev/vhost-net", R_OK | W_OK))
		SKIP(return, "/dev/vhost-net: %s", strerror(errno));
	self->tx = malloc(VNET_BIG_FRAME);
	self->rx = malloc(VNET_BIG_FRAME);
	ASSERT_NE(NULL, self->tx);
	ASSERT_NE(NULL, self->rx);
	r = vnet_open_variant(&self->n, variant, 2048, variant->mrg_rxbuf);
	ASSERT_EQ(0, r) TH_LOG("vnet_open: %s", strerror(-r));
	assert_run_mode(_metadata, &self->n);
}

FIXTURE_TEARDOWN(vhost_net)
{
	vnet_close(&self->n);
	free(self->tx);
	free(self->rx);
}

static void tx_check(struct __test_metadata *_metadata,
		     FIXTURE_DATA(vhost_net) *self,
		     const size_t *lens, int nlens, int count, int batch)
{
	char why[VNET_WHY_LEN];

	ASSERT_EQ(0, vnet_check_tx(&self->n, lens, nlens, count, batch, 0, why))
		TH_LOG("%s", why);
}

static void rx_check(struct __test_metadata *_metadata,
		     FIXTURE_DATA(vhost_net) *self,
		     const size_t *lens, int nlens, int count, int batch)
{
	char why[VNET_WHY_LEN];

	ASSERT_EQ(0, vnet_check_rx(&self->n, lens, nlens, count, batch, 0, why))
		TH_LOG("%s", why);
}

TEST_F(vhost_net, tx_64)
{
	size_t len = 64;

	tx_check(_metadata, self, &len, 1, 4 * variant->ring_num, 512);
}

TEST_F(vhost_net, tx_1514)
{
	size_t len = 1514;

	tx_check(_metadata, self, &len, 1, 2 * variant->ring_num, 512);
}

TEST_F(vhost_net, tx_mixed_sizes)
{
	static const size_t lens[] = { 60, 61, 128, 333, 1000, 1514, 99, 1024 };

	tx_check(_metadata, self, lens, 8, 2000, 256);
}

TEST_F(vhost_net, tx_gso_64k)
{
	static const size_t lens[] = { VNET_BIG_FRAME, 9000, 3000, VNET_BIG_FRAME - 77 };

	vnet_close(&self->n);
	ASSERT_EQ(0, vnet_open_variant(&self->n, variant, 66 * 1024,
				       variant->mrg_rxbuf));
	tx_check(_metadata, self, lens, 4, 64, 16);
}

TEST_F(vhost_net, rx_64)
{
	size_t len = 64;

	rx_check(_metadata, self, &len, 1, 4 * variant->ring_num, 128);
}

TEST_F(vhost_net, rx_1514)
{
	size_t len = 1514;

	rx_check(_metadata, self, &len, 1, 2 * variant->ring_num, 128);
}

/* Mergeable buffers of 256 bytes: a full frame spans six of them. */
TEST_F(vhost_net, rx_mrg_small_buffers)
{
	static const size_t lens[] = { 1514, 60, 244, 245, 700 };
	struct virtio_net_hdr_v1 h;
	int r;

	vnet_close(&self->n);
	ASSERT_EQ(0, vnet_open_variant(&self->n, variant, 256, true));
	rx_check(_metadata, self, lens, 5, 1000, 32);

	frame_fill(self->tx, 1514, NULL, 7);
	ASSERT_EQ(0, wire_send(&self->n, self->tx, 1514));
	r = vnet_rx_one(&self->n, self->rx, VNET_BIG_FRAME, &h, WAIT_MS);
	ASSERT_EQ(1514, r);
	EXPECT_EQ(6, h.num_buffers);
}

/*
 * The 16-bit ring indices wrap, TX and RX, in every variant and mode.
 * Both queues start 2 * ring_num + 5 entries below 65536
 * (VHOST_SET_VRING_BASE, and the rings' idx and event words as a driver
 * and a device that ran that far leave them), so the avail, used and
 * event indices and the ring slots all cross 65535 -> 0 in the third
 * batch of each direction, not after a lap of 65536 frames; the indices
 * read back below 65536 - 2 * ring_num afterwards, which only a crossing
 * gives.  A full lap from 0 is ring_lap.full_lap_tx_rx, once per run.
 */
TEST_F(vhost_net, ring_wrap_tx_rx)
{
	const uint16_t base = 65536 - 2 * variant->ring_num - 5;
	struct vq *vq = self->n.vq;
	size_t len = 60;

	vnet_close(&self->n);
	ASSERT_EQ(0, vnet_open_base(&self->n, variant, 2048, variant->mrg_rxbuf, base));
	tx_check(_metadata, self, &len, 1, 4 * variant->ring_num + 7, 1024);
	rx_check(_metadata, self, &len, 1, 4 * variant->ring_num + 5, 128);
	EXPECT_GT(base, vq[VNET_TX].last_used) TH_LOG("TX used index %u", vq[VNET_TX].last_used);
	EXPECT_GT(base, vq[VNET_TX].avail_idx);
	EXPECT_GT(base, vq[VNET_RX].last_used) TH_LOG("RX used index %u", vq[VNET_RX].last_used);
	EXPECT_GT(base, vq[VNET_RX].avail_idx);
}

/*
 * One frame out, one in, in turn, every size from 60 to 1459 bytes in
 * steps of 37 (mod 1400): 120 rounds from 60 entries below 65536, so both
 * queues cross the 16-bit wrap half-way.
 */
TEST_F(vhost_net, tx_rx_interleaved)
{
	struct virtio_net_hdr_v1 h = {};
	int i, r;

	vnet_close(&self->n);
	ASSERT_EQ(0, vnet_open_base(&self->n, variant, 2048, variant->mrg_rxbuf, 65536 - 60));
	for (i = 0; i < 120; i++) {
		size_t len = 60 + (i * 37) % 1400;

		frame_fill(self->tx, len, NULL, i);
		ASSERT_EQ(0, vnet_tx_one(&self->n, self->tx, len, &h, WAIT_MS));
		ASSERT_EQ(0, wire_send(&self->n, self->tx, len));
		r = wire_recv(&self->n, self->rx, VNET_BIG_FRAME, WAIT_MS);
		ASSERT_EQ((int)len, r);
		ASSERT_EQ(0, memcmp(self->tx, self->rx, len));
		r = vnet_rx_one(&self->n, self->rx, VNET_BIG_FRAME, NULL, WAIT_MS);
		ASSERT_EQ((int)len, r);
		ASSERT_EQ(0, memcmp(self->tx, self->rx, len));
	}
}

/* Detach the backend, reset the owner, set up again: traffic resumes. */
TEST_F(vhost_net, reset_owner_and_resetup)
{
	size_t len = 200;
	int i;

	tx_check(_metadata, self, &len, 1, 300, 100);
	rx_check(_metadata, self, &len, 1, 300, 100);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, vnet_reset_owner(&self->n));
		ASSERT_EQ(0, vnet_setup(&self->n));
		vnet_rx_fill(&self->n);
		tx_check(_metadata, self, &len, 1, 300, 100);
		rx_check(_metadata, self, &len, 1, 300, 100);
	}
}

/*
 * Close the vhost fd with a full TX ring and posted RX buffers: whatever
 * went out is intact, nothing hangs, frames that waited in the TAP are
 * intact, and a new device on the same TAP works.
 */
TEST_F(vhost_net, close_with_buffers_in_flight)
{
	struct virtio_net_hdr_v1 h = {};
	struct vnet *n = &self->n;
	size_t len = 1000;
	int i, r, got = 0;
	uint32_t last = 999;

	for (i = 0; ; i++) {
		frame_fill(self->tx, len, NULL, i);
		if (vnet_tx_add(n, &h, self->tx, len))
			break;
	}
	for (i = 0; i < 64; i++) {
		frame_fill(self->tx, 100, NULL, 1000 + i);
		ASSERT_EQ(0, wire_send(n, self->tx, 100));
	}
	vnet_kick(n, VNET_TX);
	/* The device is at work on the ring when it goes: one frame is out. */
	r = wire_recv(n, self->rx, VNET_BIG_FRAME, WAIT_MS);
	ASSERT_EQ((int)len, r);
	frame_fill(self->tx, len, NULL, got++);
	ASSERT_EQ(0, memcmp(self->tx, self->rx, len));
	close(n->vhost_fd);
	n->vhost_fd = -1;

	/* The rest of what went out is whole and in order; then silence. */
	while ((r = wire_recv(n, self->rx, VNET_BIG_FRAME, 200)) > 0) {
		ASSERT_EQ((int)len, r);
		frame_fill(self->tx, len, NULL, got);
		ASSERT_EQ(0, memcmp(self->tx, self->rx, len)) TH_LOG("frame %d", got);
		got++;
	}
	ASSERT_EQ(-ETIMEDOUT, r);
	EXPECT_LE(got, (int)variant->ring_num);
	TH_LOG("%d of %u frames went out before close", got, variant->ring_num);

	ASSERT_EQ(0, vnet_reopen(n));
	vnet_rx_fill(n);
	/*
	 * Frames the old device left in the TAP arrive whole, in order, each
	 * once; those it had taken before it went are gone with its buffers.
	 */
	for (i = 0; (r = vnet_rx_one(n, self->rx, VNET_BIG_FRAME, NULL, 200)) > 0; i++) {
		uint32_t seq = frame_seq(self->rx);

		ASSERT_EQ(100, r);
		ASSERT_LE(1000 + i, seq);
		ASSERT_GT(1064, seq);
		ASSERT_LT(last, seq) TH_LOG("frame %u after frame %u", seq, last);
		last = seq;
		frame_fill(self->tx, 100, NULL, seq);
		ASSERT_EQ(0, memcmp(self->tx, self->rx, 100));
	}
	ASSERT_EQ(-ETIMEDOUT, r);
	len = 100;
	tx_check(_metadata, self, &len, 1, 50, 50);
	rx_check(_metadata, self, &len, 1, 50, 50);
}

/* A counter of the device's, from its sysfs statistics; -1 on error. */
static int64_t dev_stat(struct vnet *n, const char *counter)
{
	char path[128], name[32];
	uint64_t v;
	FILE *f;
	int r;

	if (vhost_fd_name(n->vhost_fd, name, sizeof(name)))
		return -1;
	snprintf(path, sizeof(path), "/sys/class/vhost/%s/statistics/%s",
		 name, counter);
	f = fopen(path, "r");
	if (!f)
		return -1;
	r = fscanf(f, "%" SCNu64, &v);
	fclose(f);
	return r == 1 ? (int64_t)v : -1;
}

/*
 * 64 TX buffers published at once come back through one used entry in
 * order (two if the worker flushed between), through one each otherwise.
 * RX buffers come back through one entry each either way: each entry
 * carries the length written into its buffer.
 */
TEST_F(vhost_net, used_entries_per_batch)
{
	struct vq *tq = &self->n.vq[VNET_TX], *rq = &self->n.vq[VNET_RX];
	struct virtio_net_hdr_v1 h = {};
	uint64_t reads, bufs;
	int64_t e0, e1, e2;
	size_t len = 60;
	int i, r;

	e0 = dev_stat(&self->n, "used_entries");
	ASSERT_LE(0, e0);
	reads = tq->used_reads;
	bufs = tq->used_bufs;
	for (i = 0; i < 64; i++) {
		frame_fill(self->tx, len, NULL, i);
		ASSERT_EQ(0, vnet_tx_add(&self->n, &h, self->tx, len));
	}
	ASSERT_EQ(0, vnet_tx_drain(&self->n, WAIT_MS));
	for (i = 0; i < 64; i++) {
		r = wire_recv(&self->n, self->rx, VNET_BIG_FRAME, WAIT_MS);
		ASSERT_EQ((int)len, r);
		frame_fill(self->tx, len, NULL, i);
		ASSERT_EQ(0, memcmp(self->tx, self->rx, len)) TH_LOG("frame %d", i);
	}
	bufs = tq->used_bufs - bufs;
	reads = tq->used_reads - reads;
	TH_LOG("TX: %llu buffers back through %llu used entries",
	       (unsigned long long)bufs, (unsigned long long)reads);
	EXPECT_EQ(64, bufs);
	if (variant->in_order) {
		EXPECT_GE(2, reads);
	} else {
		EXPECT_EQ(64, reads);
	}
	/* The device counts the entries it wrote: those the driver read. */
	e1 = dev_stat(&self->n, "used_entries");
	EXPECT_EQ((int64_t)reads, e1 - e0);

	reads = rq->used_reads;
	bufs = rq->used_bufs;
	rx_check(_metadata, self, &len, 1, 64, 64);
	EXPECT_EQ(64, rq->used_bufs - bufs);
	EXPECT_EQ(rq->used_bufs - bufs, rq->used_reads - reads);
	e2 = dev_stat(&self->n, "used_entries");
	EXPECT_EQ((int64_t)(rq->used_reads - reads), e2 - e1);
}

/*
 * Busy polling on both queues (the owner's VHOST_SET_VRING_BUSYLOOP_TIMEOUT):
 * the TX batch is flushed before the worker polls, RX buffers are handed
 * back before it polls, and traffic both ways stays byte-exact.
 */
TEST_F(vhost_net, busypoll_tx_rx)
{
	struct vhost_vring_state b = { .num = 50 };
	static const size_t lens[] = { 60, 1514, 200, 777 };
	char why[VNET_WHY_LEN];

	for (b.index = 0; b.index < 2; b.index++) {
		ASSERT_EQ(0, ioctl(self->n.vhost_fd,
				   VHOST_SET_VRING_BUSYLOOP_TIMEOUT, &b));
	}
	ASSERT_EQ(0, vnet_check_tx(&self->n, lens, 4, 600, 7, 0, why))
		TH_LOG("%s", why);
	ASSERT_EQ(0, vnet_check_rx(&self->n, lens, 4, 600, 5, 0, why))
		TH_LOG("%s", why);
	ASSERT_EQ(0, vnet_check_mix(&self->n, 300, true, 1000, why))
		TH_LOG("%s", why);
	EXPECT_EQ(0, vq_error_count(&self->n.vq[VNET_TX]));
	EXPECT_EQ(0, vq_error_count(&self->n.vq[VNET_RX]));
	/* The worker did poll. */
	EXPECT_LT(0, dev_stat(&self->n, "busypoll_loops"));
}

/*
 * A frame larger than the RX buffer (no mergeable buffers): vhost takes
 * the buffer, finds it too small, gives it back unused and drops the
 * frame.  The next frame lands in that same buffer: in order, the driver
 * takes its buffers back oldest first, so one skipped would hand it the
 * wrong one.
 */
TEST_F(vhost_net, rx_too_small_buffer_given_back)
{
	static const size_t small = 100;
	struct vnet_opts o = {
		.ring_num = variant->ring_num, .event_idx = variant->event_idx,
		.indirect = variant->indirect, .split_hdr = variant->split_hdr,
		.in_order = variant->in_order, .buf_size = 256,
	};
	char why[VNET_WHY_LEN];
	int i, r;

	vnet_close(&self->n);
	ASSERT_EQ(0, vnet_open(&self->n, &o));
	vnet_rx_fill(&self->n);
	for (i = 0; i < 3; i++) {
		frame_fill(self->tx, 1000, NULL, 500 + i);
		ASSERT_EQ(0, wire_send(&self->n, self->tx, 1000));
		frame_fill(self->tx, small, NULL, 600 + i);
		ASSERT_EQ(0, wire_send(&self->n, self->tx, small));
		r = vnet_rx_one(&self->n, self->rx, VNET_BIG_FRAME, NULL, WAIT_MS);
		ASSERT_EQ((int)small, r);
		ASSERT_EQ(0, memcmp(self->tx, self->rx, small))
			TH_LOG("frame %d came as frame %u", 600 + i,
			       frame_seq(self->rx));
	}
	EXPECT_EQ(3, self->n.vq[VNET_RX].used_bufs);
	ASSERT_EQ(0, vnet_check_rx(&self->n, &small, 1, 3 * variant->ring_num,
				   32, 700, why)) TH_LOG("%s", why);
}

/*
 * Mergeable buffers: a frame needs six 256-byte buffers and two are
 * posted.  vhost takes them, runs out, gives them back and waits; once
 * more are posted the frame arrives whole, in the buffers from the first
 * one posted on.  The queue starts 15 entries below 65536, so in the
 * third round the six buffers span the end of the ring, the 16-bit wrap
 * and, in order, the end of the descriptor table.
 */
TEST_F(vhost_net, rx_mrg_short_of_buffers_retried)
{
	struct vnet_opts o = {
		.ring_num = variant->ring_num, .event_idx = variant->event_idx,
		.indirect = variant->indirect, .split_hdr = variant->split_hdr,
		.in_order = variant->in_order, .mrg_rxbuf = true, .buf_size = 256,
		.rx_manual = true, .ring_base = 65536 - 15,
	};
	struct virtio_net_hdr_v1 h;
	unsigned int i, rounds = 6;
	int r;

	vnet_close(&self->n);
	ASSERT_EQ(0, vnet_open(&self->n, &o));
	for (i = 0; i < rounds; i++) {
		ASSERT_EQ(2, vnet_rx_post(&self->n, 2));
		frame_fill(self->tx, 1514, NULL, 800 + i);
		ASSERT_EQ(0, wire_send(&self->n, self->tx, 1514));
		/* Nothing can arrive in two buffers. */
		EXPECT_EQ(-ETIMEDOUT, vnet_rx_one(&self->n, self->rx,
						  VNET_BIG_FRAME, &h, 20));
		ASSERT_EQ(4, vnet_rx_post(&self->n, 4));
		r = vnet_rx_one(&self->n, self->rx, VNET_BIG_FRAME, &h, WAIT_MS);
		ASSERT_EQ(1514, r);
		EXPECT_EQ(6, h.num_buffers);
		ASSERT_EQ(0, memcmp(self->tx, self->rx, 1514))
			TH_LOG("round %u: frame %u came", i, frame_seq(self->rx));
	}
	EXPECT_EQ(0, vq_error_count(&self->n.vq[VNET_RX]));
	EXPECT_GT(64, self->n.vq[VNET_RX].last_used) TH_LOG("the used index did not wrap");
}

/*
 * Stop both queues mid-traffic, read their bases and set them again (what
 * a migration does): traffic resumes where it stopped.  In order with
 * chains of two descriptors the next chain's descriptor is not the avail
 * index modulo the ring size; vhost reads it from the avail ring.
 */
TEST_F(vhost_net, vring_base_resume)
{
	static const size_t lens[] = { 60, 1514, 333 };
	char why[VNET_WHY_LEN];
	int q, round;

	for (round = 0; round < 3; round++) {
		ASSERT_EQ(0, vnet_check_tx(&self->n, lens, 3, 77, 11,
					   round * 1000, why)) TH_LOG("%s", why);
		ASSERT_EQ(0, vnet_check_rx(&self->n, lens, 3, 77, 11,
					   round * 1000 + 500, why))
			TH_LOG("%s", why);
		for (q = 0; q < 2; q++) {
			struct vhost_vring_state s = { .index = q };

			ASSERT_EQ(0, vnet_set_backend(&self->n, q, -1));
			ASSERT_EQ(0, ioctl(self->n.vhost_fd,
					   VHOST_GET_VRING_BASE, &s));
			EXPECT_EQ(self->n.vq[q].last_used, s.num);
			ASSERT_EQ(0, ioctl(self->n.vhost_fd,
					   VHOST_SET_VRING_BASE, &s));
			ASSERT_EQ(0, vnet_set_backend(&self->n, q,
						      self->n.tap_fd));
		}
	}
	ASSERT_EQ(0, vnet_check_mix(&self->n, 200, true, 9000, why))
		TH_LOG("%s", why);
}

struct flood {
	struct vnet *n;
	bool stop;		/* __atomic */
	int sent;
};

/* Frames out of one device's TAP, as fast as it takes them. */
static void *flood_run(void *arg)
{
	struct flood *f = arg;
	uint8_t frame[60];

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		frame_fill(frame, sizeof(frame), NULL, 0x40000000 + f->sent);
		if (!vnet_tx_one(f->n, frame, sizeof(frame), NULL, 100))
			f->sent++;
		vnet_tx_reap(f->n);
	}
	return NULL;
}

/*
 * A device opened while another one's frames flow hears only its own TAP
 * (ten devices, one after the other; the library's, so in mode map only:
 * scripts/guest-selftests excludes it from the other modes' runs).
 * The wire's packet socket used to hear every interface from socket()
 * until bind() narrowed it, and kept what it heard then: another
 * device's frame came first in a byte-exact check (found by make stress).
 */
TEST(wire_hears_only_its_tap)
{
	struct vnet_opts o = { .ring_num = 256, .event_idx = true };
	static const size_t len = 60;
	struct vnet a, b;
	struct flood f = { .n = &a };
	char why[VNET_WHY_LEN];
	pthread_t t;
	int i;

	if (access("/dev/vhost-net", R_OK | W_OK))
		SKIP(return, "/dev/vhost-net: %s", strerror(errno));
	ASSERT_EQ(0, vnet_open(&a, &o));
	ASSERT_EQ(0, pthread_create(&t, NULL, flood_run, &f));
	for (i = 0; i < 10; i++) {
		ASSERT_EQ(0, vnet_open(&b, &o));
		EXPECT_EQ(0, vnet_check_tx(&b, &len, 1, 10, 10, i * 10, why))
			TH_LOG("device %d: %s", i, why);
		vnet_close(&b);
	}
	__atomic_store_n(&f.stop, true, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	TH_LOG("%d frames out of the other device meanwhile", f.sent);
	EXPECT_LT(100, f.sent);
	vnet_close(&a);
}

/* The ring checks vhost makes, with or without a fast path. */
TEST_F(vhost_net, bad_ring_setup_rejected)
{
	struct vhost_vring_state s = { .index = VNET_RX, .num = 100 };
	struct vhost_vring_addr a = {
		.index = VNET_RX,
		.desc_user_addr = (uintptr_t)self->n.vq[VNET_RX].desc,
		.avail_user_addr = (uintptr_t)self->n.vq[VNET_RX].avail + 1,
		.used_user_addr = (uintptr_t)self->n.vq[VNET_RX].used,
	};
	int fd = self->n.vhost_fd;
	size_t len = 64;

	/* A running queue's size cannot change. */
	s.num = 512;
	EXPECT_EQ(-1, ioctl(fd, VHOST_SET_VRING_NUM, &s));
	EXPECT_EQ(EBUSY, errno);

	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_RX, -1));
	s.num = 100;
	EXPECT_EQ(-1, ioctl(fd, VHOST_SET_VRING_NUM, &s));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(fd, VHOST_SET_VRING_ADDR, &a));
	EXPECT_EQ(EINVAL, errno);
	a.avail_user_addr -= 1;
	a.used_user_addr += 2;
	EXPECT_EQ(-1, ioctl(fd, VHOST_SET_VRING_ADDR, &a));
	EXPECT_EQ(EINVAL, errno);

	/* Beyond the user address space: refused when the backend attaches. */
	a.used_user_addr = 0x800000000000ULL;
	EXPECT_EQ(0, ioctl(fd, VHOST_SET_VRING_ADDR, &a));
	EXPECT_EQ(-EFAULT, vnet_set_backend(&self->n, VNET_RX, self->n.tap_fd));
	/* ... and at once on a queue that has a backend. */
	a.index = VNET_TX;
	EXPECT_EQ(-1, ioctl(fd, VHOST_SET_VRING_ADDR, &a));
	EXPECT_EQ(EINVAL, errno);

	/* The TX queue still works. */
	tx_check(_metadata, self, &len, 1, 10, 10);
}

/*
 * A whole lap of the 16-bit indices from 0, more than 65536 frames each
 * way, through the direct map: that a real lap works, beyond the crossing
 * ring_wrap_tx_rx checks in every variant and mode.  Once per SMAP mode:
 * scripts/guest-selftests runs this fixture in the map run only (-F
 * ring_lap in the others), and the setup asserts the mode is map.
 */
FIXTURE(ring_lap) {
	struct vnet n;
};

FIXTURE_SETUP(ring_lap)
{
	struct vnet_opts o = { .ring_num = 256, .event_idx = true, .mrg_rxbuf = true };
	struct metamap_stats s;

	ASSERT_EQ(0, vnet_open(&self->n, &o));
	vnet_rx_fill(&self->n);
	ASSERT_EQ(0, vnet_metamap_stats(&self->n, VNET_TX, &s));
	ASSERT_EQ(METAMAP_MAP, s.mode) TH_LOG("the lap is the map's: run it in mode map");
}

FIXTURE_TEARDOWN(ring_lap)
{
	vnet_close(&self->n);
}

TEST_F_TIMEOUT(ring_lap, full_lap_tx_rx, 900)
{
	char why[VNET_WHY_LEN];
	size_t len = 60;

	ASSERT_EQ(0, vnet_check_tx(&self->n, &len, 1, 65536 + 3 * 256 + 7, 1024, 0, why))
		TH_LOG("%s", why);
	ASSERT_EQ(0, vnet_check_rx(&self->n, &len, 1, 65536 + 5, 128, 0, why))
		TH_LOG("%s", why);
}

TEST_HARNESS_MAIN
