// SPDX-License-Identifier: GPL-2.0
/*
 * vhost-net datapath selftests: packets a userspace virtio-net driver puts
 * on its rings arrive byte-exact on the TAP's wire and the other way round,
 * across ring sizes, event idx, indirect descriptors, mergeable RX buffers,
 * wrap-around, reset and close with buffers in flight.
 */
#define _GNU_SOURCE
#include <errno.h>
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

static int vnet_open_variant(struct vnet *n, const FIXTURE_VARIANT(vhost_net) *v,
			     size_t buf_size, bool mrg)
{
	struct vnet_opts o = {
		.ring_num = v->ring_num, .event_idx = v->event_idx,
		.indirect = v->indirect, .mrg_rxbuf = mrg,
		.split_hdr = v->split_hdr, .buf_size = buf_size,
	};
	int r = vnet_open(n, &o);

	if (!r)
		vnet_rx_fill(n);
	return r;
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

/* More than 65536 buffers: the 16-bit ring indices wrap. */
TEST_F_TIMEOUT(vhost_net, ring_wrap_tx_rx, 900)
{
	size_t len = 60;

	tx_check(_metadata, self, &len, 1, 65536 + 3 * variant->ring_num + 7,
		 1024);
	rx_check(_metadata, self, &len, 1, 65536 + 5, 128);
}

TEST_F(vhost_net, tx_rx_interleaved)
{
	struct virtio_net_hdr_v1 h = {};
	int i, r;

	for (i = 0; i < 500; i++) {
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
	close(n->vhost_fd);
	n->vhost_fd = -1;

	while ((r = wire_recv(n, self->rx, VNET_BIG_FRAME, 500)) > 0) {
		ASSERT_EQ((int)len, r);
		frame_fill(self->tx, len, NULL, got);
		ASSERT_EQ(0, memcmp(self->tx, self->rx, len));
		got++;
	}
	EXPECT_LE(got, (int)variant->ring_num);
	TH_LOG("%d of %u frames went out before close", got, variant->ring_num);

	ASSERT_EQ(0, vnet_reopen(n));
	vnet_rx_fill(n);
	/* Frames the old device left in the TAP arrive whole, in order. */
	for (i = 0; (r = vnet_rx_one(n, self->rx, VNET_BIG_FRAME, NULL, 500)) > 0; i++) {
		uint32_t seq = frame_seq(self->rx);

		ASSERT_EQ(100, r);
		ASSERT_LE(1000 + i, seq);
		ASSERT_GT(1064, seq);
		frame_fill(self->tx, 100, NULL, seq);
		ASSERT_EQ(0, memcmp(self->tx, self->rx, 100));
	}
	len = 100;
	tx_check(_metadata, self, &len, 1, 50, 50);
	rx_check(_metadata, self, &len, 1, 50, 50);
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
 * A device opened while another one's frames flow hears only its own TAP.
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
	for (i = 0; i < 20; i++) {
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

TEST_HARNESS_MAIN
