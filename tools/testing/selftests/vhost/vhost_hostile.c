// SPDX-License-Identifier: GPL-2.0
/*
 * vhost-net against a hostile or unusual driver, with the metadata direct
 * map on and off (variants map_on and map_off).  Each test drives the rings
 * by hand where the library's well-behaved driver would not do what the
 * test needs: it rewrites published entries, moves the avail index
 * backwards or too far, loops descriptor chains, keeps the used ring
 * read-only for a whole lap of the avail index, changes features while
 * traffic flows and switches ring endianness.  Both variants must give the
 * same result: the same error reports on the vring error eventfd, the same
 * used ring and the same bytes on the wire, and no byte written or sent
 * from outside the rings and buffers the driver named.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <linux/vhost.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "../kselftest_harness.h"
#include "vhost_net_lib.h"

#define NUM		256	/* ring size of every test */
#define PAGE		4096UL
#define HL		sizeof(struct virtio_net_hdr_v1)
#define GUARD		0x5a	/* what buffers hold that nothing may write */
#define SENTINEL	0xdeadbeefU	/* used entries nobody wrote */
#define WAIT_MS		10000
#define QUIET_MS	300	/* how long "nothing happens" is watched */
#define MEM_TOP		0x7ffffffff000ULL	/* as vhost_net_lib.c */

#define store_release(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
#define load_acquire(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)

FIXTURE(hostile) {
	struct vnet n;
	uint8_t *alt;		/* NUM more buffers: second versions of data */
	size_t alt_len;
	int old_default;
	int kmsg;		/* /dev/kmsg, positioned at the test's start */
};

FIXTURE_VARIANT(hostile) {
	bool map;
};

FIXTURE_VARIANT_ADD(hostile, map_on) {
	.map = true,
};

FIXTURE_VARIANT_ADD(hostile, map_off) {
	.map = false,
};

/* The fixture's device, in mode map or off, both queues' indices at base. */
static void hostile_open(struct __test_metadata *_metadata,
			 FIXTURE_DATA(hostile) *self, bool map, uint16_t base)
{
	struct vnet_opts o = { .ring_num = NUM, .event_idx = true,
			       .mrg_rxbuf = true, .ring_base = base };
	char why[VNET_WHY_LEN];
	int r;

	self->n.vhost_fd = -1;
	self->n.tap_fd = -1;
	self->n.sock_fd = -1;
	self->kmsg = -1;
	self->old_default = metamap_require_default(map ? METAMAP_MAP : METAMAP_OFF, why);
	ASSERT_LE(0, self->old_default) TH_LOG("%s", why);
	self->kmsg = kmsg_open();
	ASSERT_LE(0, self->kmsg) TH_LOG("/dev/kmsg: %s", strerror(errno));
	self->alt_len = NUM * 2048UL;
	self->alt = vnet_map_anon(self->alt_len);
	ASSERT_NE(NULL, self->alt);
	r = vnet_open(&self->n, &o);
	ASSERT_EQ(0, r) TH_LOG("vnet_open: %s", strerror(-r));
	vq_error_count(&self->n.vq[VNET_RX]);
	vq_error_count(&self->n.vq[VNET_TX]);
}

static void hostile_close(FIXTURE_DATA(hostile) *self)
{
	vnet_close(&self->n);
	if (self->alt)
		munmap(self->alt, self->alt_len);
	self->alt = NULL;
	if (self->kmsg >= 0)
		close(self->kmsg);
	self->kmsg = -1;
	if (self->old_default >= 0)
		metamap_set_default(self->old_default);
	self->old_default = -1;
}

FIXTURE_SETUP(hostile)
{
	hostile_open(_metadata, self, variant->map, 0);
}

FIXTURE_TEARDOWN(hostile)
{
	hostile_close(self);
}

#define EXPECT_NO_SPLAT() do { \
	char _what[256] = ""; \
	EXPECT_EQ(0, kmsg_splats(self->kmsg, _what, sizeof(_what), false)) \
		TH_LOG("kernel log: %s", _what); \
} while (0)

/*
 * Error eventfd signals of vq, waiting up to ms for the first one, then
 * QUIET_MS for more: one hostile step may be seen by more than one run of
 * the worker (a kick, the socket's poll), and every report of this step
 * must be counted here, not in the next one.
 */
static int err_wait(struct vq *vq, int ms)
{
	struct pollfd p = { .fd = vq->err_fd, .events = POLLIN };

	poll(&p, 1, ms);
	usleep(QUIET_MS * 1000);
	return vq_error_count(vq);
}

static uint16_t used_idx(const struct vq *vq)
{
	return load_acquire(&vq->used->idx);
}

/* Wait until used->idx is want; 0 or -ETIMEDOUT. */
static int wait_used(struct vq *vq, uint16_t want, int ms)
{
	struct pollfd p = { .fd = vq->call_fd, .events = POLLIN };
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (used_idx(vq) == want)
			return 0;
		poll(&p, 1, 10);
		vq_calls_collect(vq);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 > ms)
			return used_idx(vq) == want ? 0 : -ETIMEDOUT;
	}
}

/* Mark every used entry as unwritten. */
static void used_poison(struct vq *vq)
{
	unsigned int i;

	for (i = 0; i < vq->num; i++) {
		vq->used->ring[i].id = SENTINEL;
		vq->used->ring[i].len = SENTINEL;
	}
}

/* Used entries outside [from, to) of the used index that were written. */
static int used_written_outside(const struct vq *vq, uint16_t from,
				uint16_t to)
{
	unsigned int i;
	int bad = 0;

	for (i = 0; i < vq->num; i++) {
		uint16_t k = (uint16_t)(i - from) % vq->num;

		if (k < (uint16_t)(to - from))
			continue;
		if (vq->used->ring[i].id != SENTINEL ||
		    vq->used->ring[i].len != SENTINEL)
			bad++;
	}
	return bad;
}

static uint32_t used_id(const struct vq *vq, uint16_t idx)
{
	return vq->used->ring[idx % vq->num].id;
}

static uint32_t used_len(const struct vq *vq, uint16_t idx)
{
	return vq->used->ring[idx % vq->num].len;
}

static uint8_t *txb(struct vnet *n, unsigned int h)
{
	return n->bufs[VNET_TX] + (size_t)h * n->o.buf_size;
}

static uint8_t *rxb(struct vnet *n, unsigned int h)
{
	return n->bufs[VNET_RX] + (size_t)h * n->o.buf_size;
}

static uint8_t *altb(FIXTURE_DATA(hostile) *self, unsigned int h)
{
	return self->alt + (size_t)h * 2048;
}

/* Descriptor h: one device-readable buffer, a zero header and frame seq. */
static void tx_desc(struct vq *vq, uint16_t h, uint8_t *buf, uint32_t seq,
		    size_t len)
{
	memset(buf, 0, HL);
	frame_fill(buf + HL, len, NULL, seq);
	vq->desc[h].addr = (uintptr_t)buf;
	vq->desc[h].len = HL + len;
	vq->desc[h].flags = 0;
	vq->desc[h].next = 0;
}

/* Descriptor h: one device-writable buffer of len bytes. */
static void rx_desc(struct vq *vq, uint16_t h, uint8_t *buf, uint32_t len)
{
	vq->desc[h].addr = (uintptr_t)buf;
	vq->desc[h].len = len;
	vq->desc[h].flags = VRING_DESC_F_WRITE;
	vq->desc[h].next = 0;
}

static void avail_put(struct vq *vq, uint16_t idx, uint16_t head)
{
	vq->avail->ring[idx % vq->num] = head;
}

/* Publish avail index idx and kick, whatever the device's suppression. */
static void publish(struct vq *vq, uint16_t idx)
{
	store_release(&vq->avail->idx, idx);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	vq_notify(vq);
}

/* The next frame of ours from the wire; its length or -ETIMEDOUT. */
static int wire_take(struct vnet *n, uint8_t *f, size_t cap, int ms)
{
	int r;

	for (;;) {
		r = wire_recv(n, f, cap, ms);
		if (r < 0 || (r >= 14 && f[12] == (VNET_ETH_P >> 8) &&
			      f[13] == (VNET_ETH_P & 0xff)))
			return r;
	}
}

/* Whether the frame in f of len bytes is frame seq of want bytes. */
static bool frame_is(const uint8_t *f, int len, uint32_t seq, size_t want)
{
	uint8_t exp[2048];

	if (len != (int)want || want > sizeof(exp))
		return false;
	frame_fill(exp, want, NULL, seq);
	return !memcmp(exp, f, want);
}

/* The next frame on the wire is frame seq of len bytes. */
static int wire_expect(struct vnet *n, uint32_t seq, size_t len, char *why)
{
	uint8_t f[2048];
	int r = wire_take(n, f, sizeof(f), WAIT_MS);

	if (r < 0)
		return snprintf(why, VNET_WHY_LEN, "frame %u: %s", seq,
				strerror(-r)), -1;
	if (!frame_is(f, r, seq, len))
		return snprintf(why, VNET_WHY_LEN,
				"frame %u: got %d bytes, seq %u", seq, r,
				r >= 18 ? frame_seq(f) : 0), -1;
	return 0;
}

/* No frame of ours arrives within QUIET_MS. */
static bool wire_quiet(struct vnet *n)
{
	uint8_t f[2048];

	return wire_take(n, f, sizeof(f), QUIET_MS) == -ETIMEDOUT;
}

static bool all_guard(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != GUARD)
			return false;
	return true;
}

/*
 * A received buffer of cap bytes: a header for one buffer, frame seq of len
 * bytes, and the guard after it, untouched.
 */
static bool rx_holds(const uint8_t *buf, size_t cap, uint32_t seq, size_t len)
{
	const struct virtio_net_hdr_v1 *h = (const void *)buf;

	return h->num_buffers == 1 && h->gso_type == 0 &&
	       frame_is(buf + HL, len, seq, len) &&
	       all_guard(buf + HL + len, cap - HL - len);
}

static int wire_send_seq(struct vnet *n, uint32_t seq, size_t len)
{
	uint8_t f[2048];

	frame_fill(f, len, NULL, seq);
	return wire_send(n, f, len);
}

/*
 * A driver that rewrites chains it published while the device was stopped:
 * vhost reads the ring only after the backend is attached, so the rewritten
 * version, and only that, goes out; on both paths.
 */
TEST_F(hostile, tx_rewrite_published_while_detached)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	char why[VNET_WHY_LEN];
	int k;

	used_poison(vq);
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, -1));
	for (k = 0; k < 8; k++) {
		tx_desc(vq, k, txb(&self->n, k), 1000 + k, 100);
		avail_put(vq, k, k);
	}
	publish(vq, 8);
	usleep(100000);
	/* Other heads, other buffers, other lengths: version B. */
	for (k = 0; k < 8; k++) {
		tx_desc(vq, 7 - k, altb(self, 7 - k), 2000 + k, 200 + k);
		avail_put(vq, k, 7 - k);
	}
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, self->n.tap_fd));
	vq_notify(vq);
	for (k = 0; k < 8; k++)
		ASSERT_EQ(0, wire_expect(&self->n, 2000 + k, 200 + k, why))
			TH_LOG("%s", why);
	EXPECT_TRUE(wire_quiet(&self->n));
	ASSERT_EQ(0, wait_used(vq, 8, WAIT_MS));
	for (k = 0; k < 8; k++)
		EXPECT_EQ(7 - k, used_id(vq, k));
	EXPECT_EQ(0, used_written_outside(vq, 0, 8));
	EXPECT_EQ(0, vq_error_count(vq));
	EXPECT_NO_SPLAT();
}

/*
 * Post 16 RX buffers (heads 0-15) and receive one frame, so that vhost has
 * read the avail ring ahead (with the map on, the batch holds heads 1-15
 * and their descriptors).  Every buffer and the alternative buffers are
 * filled with the guard first.
 */
static void rx_read_ahead_16(struct __test_metadata *_metadata,
			     FIXTURE_DATA(hostile) *self)
{
	struct vq *vq = &self->n.vq[VNET_RX];
	int k;

	memset(self->n.bufs[VNET_RX], GUARD, self->n.bufs_len);
	memset(self->alt, GUARD, self->alt_len);
	used_poison(vq);
	for (k = 0; k < 16; k++) {
		rx_desc(vq, k, rxb(&self->n, k), 2048);
		avail_put(vq, k, k);
	}
	publish(vq, 16);
	ASSERT_EQ(0, wire_send_seq(&self->n, 1, 100));
	ASSERT_EQ(0, wait_used(vq, 1, WAIT_MS));
	ASSERT_EQ(0, used_id(vq, 0));
	ASSERT_EQ(HL + 100, used_len(vq, 0));
	ASSERT_TRUE(rx_holds(rxb(&self->n, 0), 2048, 1, 100));
}

/*
 * The driver rewrites published, not yet used RX entries after vhost read
 * them ahead: avail entries 1-15 now name heads 16-30 (fresh buffers), and
 * the descriptors of heads 1-15 point at other buffers.  Virtio lets the
 * device use either version, so the map (which read ahead) and uaccess may
 * differ; but every used entry names a head of one version, the frame is
 * in a buffer that head's descriptor named in one version, byte-exact, and
 * no other byte of any buffer changed.
 */
TEST_F(hostile, rx_rewrite_after_read_ahead)
{
	struct vq *vq = &self->n.vq[VNET_RX];
	bool taken[2][NUM] = {};	/* [0]: rxb(h), [1]: altb(h) */
	int k, h, olds = 0, news = 0;

	rx_read_ahead_16(_metadata, self);
	for (k = 1; k < 16; k++) {
		rx_desc(vq, 15 + k, rxb(&self->n, 15 + k), 2048);
		rx_desc(vq, k, altb(self, k), 1024);
		avail_put(vq, k, 15 + k);
	}
	publish(vq, 16);
	for (k = 1; k < 16; k++)
		ASSERT_EQ(0, wire_send_seq(&self->n, 1 + k, 100 + k));
	ASSERT_EQ(0, wait_used(vq, 16, WAIT_MS))
		TH_LOG("used idx %u", used_idx(vq));
	taken[0][0] = true;
	for (k = 1; k < 16; k++) {
		uint32_t id = used_id(vq, k);
		bool in_old = rx_holds(rxb(&self->n, k), 2048, 1 + k, 100 + k);
		bool in_alt = rx_holds(altb(self, k), 1024, 1 + k, 100 + k);

		EXPECT_EQ(HL + 100 + k, used_len(vq, k));
		if (id == (uint32_t)k) {
			/* Old head: its old or its new descriptor. */
			EXPECT_TRUE(in_old != in_alt)
				TH_LOG("entry %d: head %u, frame not in one buffer", k, id);
			taken[0][k] = in_old;
			taken[1][k] = in_alt;
			olds++;
		} else if (id == (uint32_t)(15 + k)) {
			EXPECT_TRUE(rx_holds(rxb(&self->n, id), 2048, 1 + k, 100 + k))
				TH_LOG("entry %d: head %u without the frame", k, id);
			taken[0][id] = true;
			news++;
		} else {
			EXPECT_TRUE(false)
				TH_LOG("entry %d: head %u is of neither version", k, id);
		}
	}
	TH_LOG("%d entries served from the old version, %d from the new", olds,
	       news);
	for (h = 0; h < NUM; h++) {
		if (!taken[0][h])
			EXPECT_TRUE(all_guard(rxb(&self->n, h), 2048))
				TH_LOG("RX buffer %d written", h);
		if (!taken[1][h])
			EXPECT_TRUE(all_guard(altb(self, h), 2048))
				TH_LOG("alternative buffer %d written", h);
	}
	EXPECT_EQ(0, used_written_outside(vq, 0, 16));
	EXPECT_EQ(0, vq_error_count(vq));
	EXPECT_NO_SPLAT();
}

/*
 * The driver rewrites TX chains while vhost consumes them: every avail
 * entry is switched from head k to head 64 + k, and the descriptor of head
 * k to another buffer, right after the kick.  Whichever version vhost
 * reads, each frame on the wire is, byte for byte, one that the head in
 * its used entry pointed at; nothing else is sent.
 */
TEST_F_TIMEOUT(hostile, tx_rewrite_racing_consumption, 120)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	uint16_t base = 0;
	int round, k, olds = 0, news = 0;

	used_poison(vq);
	for (round = 0; round < 8; round++) {
		uint32_t a = round * 1000, b = a + 300, c = a + 600;

		for (k = 0; k < 64; k++) {
			tx_desc(vq, k, txb(&self->n, k), a + k, 60 + k);
			tx_desc(vq, 64 + k, txb(&self->n, 64 + k), b + k, 60 + k);
			avail_put(vq, base + k, k);
		}
		publish(vq, base + 64);
		for (k = 0; k < 64; k++) {
			avail_put(vq, base + k, 64 + k);
			tx_desc(vq, k, altb(self, k), c + k, 60 + k);
		}
		vq_notify(vq);
		ASSERT_EQ(0, wait_used(vq, base + 64, WAIT_MS));
		for (k = 0; k < 64; k++) {
			uint32_t id = used_id(vq, base + k);
			uint8_t f[2048];
			int r = wire_take(&self->n, f, sizeof(f), WAIT_MS);

			ASSERT_LT(0, r) TH_LOG("round %d: frame %d missing", round, k);
			EXPECT_EQ(0, used_len(vq, base + k));
			if (id == (uint32_t)k) {
				EXPECT_TRUE(frame_is(f, r, a + k, 60 + k) ||
					    frame_is(f, r, c + k, 60 + k))
					TH_LOG("round %d entry %d: head %u, frame %u",
					       round, k, id, frame_seq(f));
				olds++;
			} else if (id == (uint32_t)(64 + k)) {
				EXPECT_TRUE(frame_is(f, r, b + k, 60 + k))
					TH_LOG("round %d entry %d: head %u, frame %u",
					       round, k, id, frame_seq(f));
				news++;
			} else {
				EXPECT_TRUE(false)
					TH_LOG("round %d entry %d: head %u is of neither version",
					       round, k, id);
			}
		}
		base += 64;
	}
	TH_LOG("%d chains of the old version, %d of the new", olds, news);
	EXPECT_TRUE(wire_quiet(&self->n));
	EXPECT_EQ(base, used_idx(vq));
	EXPECT_EQ(0, vq_error_count(vq));
	EXPECT_NO_SPLAT();
}

/* Post TX chains for avail indices [from, to), heads idx % NUM. */
static void tx_post(struct vnet *n, uint16_t from, uint16_t to, uint32_t seq0)
{
	struct vq *vq = &n->vq[VNET_TX];
	uint16_t i;

	for (i = from; i != to; i++) {
		tx_desc(vq, i % NUM, txb(n, i % NUM), seq0 + i, 64 + i % 64);
		avail_put(vq, i, i % NUM);
	}
}

/* Frames of tx_post(from, to, seq0) arrive, in order; then nothing. */
static int tx_expect(struct vnet *n, uint16_t from, uint16_t to,
		     uint32_t seq0, char *why)
{
	uint16_t i;

	for (i = from; i != to; i++)
		if (wire_expect(n, seq0 + i, 64 + i % 64, why))
			return -1;
	if (!wire_quiet(n))
		return snprintf(why, VNET_WHY_LEN, "more frames than published"),
		       -1;
	return 0;
}

/*
 * The avail index moves back below what vhost has consumed: an error is
 * reported and nothing is sent or used.  Publishing forward from the old
 * index again works.
 */
TEST_F(hostile, tx_lower_avail_idx_after_consumed)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	char why[VNET_WHY_LEN];

	used_poison(vq);
	tx_post(&self->n, 0, 8, 100);
	publish(vq, 8);
	ASSERT_EQ(0, tx_expect(&self->n, 0, 8, 100, why)) TH_LOG("%s", why);
	ASSERT_EQ(0, wait_used(vq, 8, WAIT_MS));
	EXPECT_EQ(0, vq_error_count(vq));

	/* Bait: valid chains in the slots the lowered index would expose. */
	tx_post(&self->n, 4, 8, 200);
	publish(vq, 4);
	EXPECT_LE(1, err_wait(vq, 3000)) TH_LOG("no error for a lowered index");
	EXPECT_TRUE(wire_quiet(&self->n));
	EXPECT_EQ(8, used_idx(vq));

	tx_post(&self->n, 8, 12, 300);
	publish(vq, 12);
	ASSERT_EQ(0, tx_expect(&self->n, 8, 12, 300, why)) TH_LOG("%s", why);
	ASSERT_EQ(0, wait_used(vq, 12, WAIT_MS));
	EXPECT_EQ(0, used_written_outside(vq, 0, 12));
	EXPECT_NO_SPLAT();
}

/*
 * A driver that negotiates VIRTIO_F_IN_ORDER and then publishes heads out
 * of ring order: vhost reads the first head from the avail ring (after
 * the setup, and again after VHOST_SET_VRING_BASE) and takes the chains
 * in ring order from there, whatever the avail ring says; a TX batch
 * comes back through one used entry, the last chain's id at the position
 * of the first.  A head past the ring size, where vhost does read one, is
 * an error; nothing is read or written outside the rings.
 */
TEST_F(hostile, in_order_heads_out_of_ring_order)
{
	struct vnet_opts o = { .ring_num = NUM, .event_idx = true,
			       .in_order = true };
	struct vq *vq = &self->n.vq[VNET_TX];
	struct vhost_vring_state s = { .index = VNET_TX };
	char why[VNET_WHY_LEN];
	uint16_t i;

	vnet_close(&self->n);
	ASSERT_EQ(0, vnet_open(&self->n, &o));
	vq = &self->n.vq[VNET_TX];
	used_poison(vq);
	/* Every slot a valid chain: frame seq 1000 + slot. */
	for (i = 0; i < NUM; i++)
		tx_desc(vq, i, txb(&self->n, i), 1000 + i, 64 + i % 64);
	/* The avail ring says 3, 0, 1, 2, 7, 6, 5, 4. */
	for (i = 0; i < 8; i++)
		avail_put(vq, i, ((uint16_t[]){ 3, 0, 1, 2, 7, 6, 5, 4 })[i]);
	publish(vq, 8);
	/* In ring order from the first head read: slots 3 to 10. */
	for (i = 3; i < 11; i++) {
		ASSERT_EQ(0, wire_expect(&self->n, 1000 + i, 64 + i % 64, why))
			TH_LOG("%s", why);
	}
	EXPECT_TRUE(wire_quiet(&self->n));
	ASSERT_EQ(0, wait_used(vq, 8, WAIT_MS));
	EXPECT_EQ(10, used_id(vq, 0));
	EXPECT_EQ(0, used_written_outside(vq, 0, 1));
	EXPECT_EQ(0, vq_error_count(vq));

	/* Stopped and restarted at its base: the avail ring says where. */
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, -1));
	ASSERT_EQ(0, ioctl(self->n.vhost_fd, VHOST_GET_VRING_BASE, &s));
	EXPECT_EQ(8, s.num);
	ASSERT_EQ(0, ioctl(self->n.vhost_fd, VHOST_SET_VRING_BASE, &s));
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, self->n.tap_fd));
	used_poison(vq);
	avail_put(vq, 8, 200);
	for (i = 9; i < 12; i++)
		avail_put(vq, i, 0);
	publish(vq, 12);
	for (i = 200; i < 204; i++) {
		ASSERT_EQ(0, wire_expect(&self->n, 1000 + i, 64 + i % 64, why))
			TH_LOG("%s", why);
	}
	EXPECT_TRUE(wire_quiet(&self->n));
	ASSERT_EQ(0, wait_used(vq, 12, WAIT_MS));
	EXPECT_EQ(203, used_id(vq, 8));
	EXPECT_EQ(0, used_written_outside(vq, 8, 9));

	/* A head past the ring where vhost reads one: an error, nothing used. */
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, -1));
	s.num = 12;
	ASSERT_EQ(0, ioctl(self->n.vhost_fd, VHOST_SET_VRING_BASE, &s));
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, self->n.tap_fd));
	avail_put(vq, 12, NUM + 5);
	publish(vq, 13);
	EXPECT_LE(1, err_wait(vq, 3000)) TH_LOG("no error for head NUM + 5");
	EXPECT_TRUE(wire_quiet(&self->n));
	EXPECT_EQ(12, used_idx(vq));
	EXPECT_NO_SPLAT();
}

/*
 * An avail index more than NUM ahead of what vhost consumed is an error,
 * and no entry is consumed, even though every slot holds a valid chain;
 * exactly NUM ahead is fine.
 */
TEST_F(hostile, tx_avail_idx_beyond_num)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	char why[VNET_WHY_LEN];

	used_poison(vq);
	tx_post(&self->n, 0, NUM, 0);
	publish(vq, NUM + 1);
	EXPECT_LE(1, err_wait(vq, 3000)) TH_LOG("no error for idx num + 1");
	EXPECT_TRUE(wire_quiet(&self->n));
	EXPECT_EQ(0, used_idx(vq));
	EXPECT_EQ(0, used_written_outside(vq, 0, 0));

	/* A sane index again: exactly what it publishes goes out. */
	publish(vq, 8);
	ASSERT_EQ(0, tx_expect(&self->n, 0, 8, 0, why)) TH_LOG("%s", why);
	ASSERT_EQ(0, wait_used(vq, 8, WAIT_MS));
	EXPECT_EQ(0, vq_error_count(vq));

	/* NUM ahead of the used index is the most a driver may publish. */
	tx_post(&self->n, 8, 8 + NUM, 5000);
	publish(vq, 8 + NUM);
	ASSERT_EQ(0, tx_expect(&self->n, 8, 8 + NUM, 5000, why))
		TH_LOG("%s", why);
	ASSERT_EQ(0, wait_used(vq, 8 + NUM, WAIT_MS));
	EXPECT_EQ(0, vq_error_count(vq));
	EXPECT_NO_SPLAT();
}

/*
 * RX, after vhost read ahead 16 entries and used one, the avail index is
 * set to bad_idx.  vhost may use what it already saw published (entries
 * 1-15), then must report the bad index and stop: slots 16-31 hold valid
 * unpublished buffers that must stay untouched.  Publishing up to 32 then
 * delivers the frame that waited into head 16.
 */
static void rx_bad_idx_after_read_ahead(struct __test_metadata *_metadata,
					FIXTURE_DATA(hostile) *self,
					uint16_t bad_idx)
{
	struct vq *vq = &self->n.vq[VNET_RX];
	int k;

	rx_read_ahead_16(_metadata, self);
	for (k = 16; k < 32; k++) {
		rx_desc(vq, k, rxb(&self->n, k), 2048);
		avail_put(vq, k, k);
	}
	publish(vq, bad_idx);
	for (k = 1; k <= 16; k++)
		ASSERT_EQ(0, wire_send_seq(&self->n, 1 + k, 100 + k));
	ASSERT_EQ(0, wait_used(vq, 16, WAIT_MS))
		TH_LOG("used idx %u", used_idx(vq));
	EXPECT_LE(1, err_wait(vq, 3000)) TH_LOG("no error for idx %u", bad_idx);
	usleep(QUIET_MS * 1000);
	EXPECT_EQ(16, used_idx(vq));
	for (k = 1; k < 16; k++) {
		EXPECT_EQ(k, used_id(vq, k));
		EXPECT_EQ(HL + 100 + k, used_len(vq, k));
		EXPECT_TRUE(rx_holds(rxb(&self->n, k), 2048, 1 + k, 100 + k));
	}
	for (k = 16; k < NUM; k++)
		EXPECT_TRUE(all_guard(rxb(&self->n, k), 2048))
			TH_LOG("unpublished buffer %d written", k);
	EXPECT_EQ(0, used_written_outside(vq, 0, 16));

	publish(vq, 32);
	ASSERT_EQ(0, wait_used(vq, 17, WAIT_MS));
	EXPECT_EQ(16, used_id(vq, 16));
	EXPECT_TRUE(rx_holds(rxb(&self->n, 16), 2048, 17, 116));
	usleep(QUIET_MS * 1000);
	EXPECT_EQ(17, used_idx(vq));
	EXPECT_EQ(0, used_written_outside(vq, 0, 17));
	EXPECT_EQ(0, vq_error_count(vq));
}

/* The avail index moves back (16 -> 4) while vhost has entries read ahead. */
TEST_F(hostile, rx_lower_avail_idx_after_read_ahead)
{
	rx_bad_idx_after_read_ahead(_metadata, self, 4);
	EXPECT_NO_SPLAT();
}

/* The avail index jumps NUM + 1 past what vhost will have consumed. */
TEST_F(hostile, rx_avail_idx_beyond_num_after_read_ahead)
{
	rx_bad_idx_after_read_ahead(_metadata, self, 16 + NUM + 1);
	EXPECT_NO_SPLAT();
}

/*
 * A descriptor chain whose NEXT points back into itself (first to itself,
 * then 0 -> 1 -> 0): vhost reports a loop and consumes nothing; once the
 * driver ends the chain, the two-buffer frame goes out.
 */
TEST_F(hostile, tx_desc_chain_loop)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	uint8_t *b0 = txb(&self->n, 0), *b1 = txb(&self->n, 1), f[300];
	char why[VNET_WHY_LEN];

	used_poison(vq);
	frame_fill(f, sizeof(f), NULL, 77);
	memset(b0, 0, HL);
	memcpy(b0 + HL, f, 100);
	memcpy(b1, f + 100, sizeof(f) - 100);
	vq->desc[0] = (struct vring_desc){ .addr = (uintptr_t)b0,
		.len = HL + 100, .flags = VRING_DESC_F_NEXT, .next = 0 };
	vq->desc[1] = (struct vring_desc){ .addr = (uintptr_t)b1,
		.len = sizeof(f) - 100, .flags = VRING_DESC_F_NEXT, .next = 0 };
	avail_put(vq, 0, 0);
	publish(vq, 1);
	EXPECT_LE(1, err_wait(vq, 3000)) TH_LOG("no error for a self loop");
	EXPECT_TRUE(wire_quiet(&self->n));
	EXPECT_EQ(0, used_idx(vq));

	vq->desc[0].next = 1;
	vq_notify(vq);
	EXPECT_LE(1, err_wait(vq, 3000)) TH_LOG("no error for 0 -> 1 -> 0");
	EXPECT_TRUE(wire_quiet(&self->n));
	EXPECT_EQ(0, used_idx(vq));

	vq->desc[1].flags = 0;
	vq_notify(vq);
	ASSERT_EQ(0, wire_expect(&self->n, 77, sizeof(f), why)) TH_LOG("%s", why);
	ASSERT_EQ(0, wait_used(vq, 1, WAIT_MS));
	EXPECT_EQ(0, used_id(vq, 0));
	EXPECT_EQ(0, used_written_outside(vq, 0, 1));
	EXPECT_TRUE(wire_quiet(&self->n));
	EXPECT_EQ(0, vq_error_count(vq));
	EXPECT_NO_SPLAT();
}

/*
 * The same with an indirect table whose second entry chains back to the
 * first (the device negotiated indirect descriptors).
 */
TEST_F(hostile, tx_indirect_chain_loop)
{
	struct vnet_opts o = { .ring_num = NUM, .event_idx = true,
			       .mrg_rxbuf = true, .indirect = true };
	struct vq *vq;
	struct vring_desc *ind;
	uint8_t *b0, *b1, f[300];
	char why[VNET_WHY_LEN];

	vnet_close(&self->n);
	ASSERT_EQ(0, vnet_open(&self->n, &o));
	vq = &self->n.vq[VNET_TX];
	ind = vq->ind;
	b0 = txb(&self->n, 0);
	b1 = txb(&self->n, 1);
	used_poison(vq);
	frame_fill(f, sizeof(f), NULL, 78);
	memset(b0, 0, HL);
	memcpy(b0 + HL, f, 100);
	memcpy(b1, f + 100, sizeof(f) - 100);
	ind[0] = (struct vring_desc){ .addr = (uintptr_t)b0, .len = HL + 100,
		.flags = VRING_DESC_F_NEXT, .next = 1 };
	ind[1] = (struct vring_desc){ .addr = (uintptr_t)b1,
		.len = sizeof(f) - 100, .flags = VRING_DESC_F_NEXT, .next = 0 };
	vq->desc[0] = (struct vring_desc){ .addr = (uintptr_t)ind,
		.len = 2 * sizeof(*ind), .flags = VRING_DESC_F_INDIRECT };
	avail_put(vq, 0, 0);
	publish(vq, 1);
	EXPECT_LE(1, err_wait(vq, 3000)) TH_LOG("no error for an indirect loop");
	EXPECT_TRUE(wire_quiet(&self->n));
	EXPECT_EQ(0, used_idx(vq));

	ind[1].flags = 0;
	vq_notify(vq);
	ASSERT_EQ(0, wire_expect(&self->n, 78, sizeof(f), why)) TH_LOG("%s", why);
	ASSERT_EQ(0, wait_used(vq, 1, WAIT_MS));
	EXPECT_EQ(0, used_id(vq, 0));
	EXPECT_EQ(0, used_written_outside(vq, 0, 1));
	EXPECT_EQ(0, vq_error_count(vq));
	EXPECT_NO_SPLAT();
}

/*
 * Wrap while the map is invalid.  Chain t (a running count) goes in avail
 * slot t % NUM with head wrap_head(t), whose buffer holds frame t: the head
 * at an avail index changes from one lap of the 16-bit index to the next,
 * so an entry served from an earlier lap shows on the wire as a wrong frame
 * and in the used ring as a wrong head.
 */
#define WRAP_BATCH	128	/* divides 65536: no batch spans a lap */
#define WRAP_FRAME	128	/* receive buffer per frame */

static uint16_t wrap_head(uint32_t t)
{
	return (t + 37 * (t >> 16)) % NUM;
}

static size_t wrap_len(uint32_t t)
{
	return 60 + (t % 5) * 4;
}

struct wire_batch {
	struct mmsghdr m[WRAP_BATCH];
	struct iovec iov[WRAP_BATCH];
	struct sockaddr_ll from[WRAP_BATCH];
	uint8_t buf[WRAP_BATCH][WRAP_FRAME];
};

/* Frames t0..t0 + count - 1 arrive on the wire, in order, byte-exact. */
static int wrap_expect(struct vnet *n, struct wire_batch *w, uint32_t t0,
		       int count, char *why)
{
	struct pollfd p = { .fd = n->sock_fd, .events = POLLIN };
	uint32_t t = t0;
	int i, got;

	while (t != t0 + count) {
		if (poll(&p, 1, WAIT_MS) <= 0)
			return snprintf(why, VNET_WHY_LEN, "frame %u missing", t),
			       -1;
		for (i = 0; i < WRAP_BATCH; i++) {
			w->iov[i].iov_base = w->buf[i];
			w->iov[i].iov_len = WRAP_FRAME;
			w->m[i].msg_hdr = (struct msghdr){
				.msg_name = &w->from[i],
				.msg_namelen = sizeof(w->from[i]),
				.msg_iov = &w->iov[i], .msg_iovlen = 1 };
		}
		got = recvmmsg(n->sock_fd, w->m, WRAP_BATCH, MSG_DONTWAIT, NULL);
		if (got < 0 && errno == EAGAIN)
			continue;
		if (got < 0)
			return snprintf(why, VNET_WHY_LEN, "recvmmsg: %s",
					strerror(errno)), -1;
		for (i = 0; i < got; i++) {
			uint8_t *f = w->buf[i];
			int len = w->m[i].msg_len;

			if (w->from[i].sll_pkttype == PACKET_OUTGOING ||
			    len < 14 || f[12] != (VNET_ETH_P >> 8) ||
			    f[13] != (VNET_ETH_P & 0xff))
				continue;
			if (t == t0 + count)
				return snprintf(why, VNET_WHY_LEN,
						"frame %u: more than sent",
						frame_seq(f)), -1;
			if (!frame_is(f, len, t, wrap_len(t)))
				return snprintf(why, VNET_WHY_LEN,
						"chain %u (avail idx %u, head %u): got frame %u of %d bytes",
						t, (uint16_t)t, wrap_head(t),
						len >= 18 ? frame_seq(f) : 0,
						len), -1;
			t++;
		}
	}
	return 0;
}

/* Post chains t0..t0 + count - 1, kick, check the wire. */
static int wrap_batch(struct vnet *n, struct wire_batch *w, uint32_t t0,
		      int count, char *why)
{
	struct vq *vq = &n->vq[VNET_TX];
	uint32_t t;

	for (t = t0; t != t0 + count; t++) {
		uint16_t h = wrap_head(t);

		tx_desc(vq, h, txb(n, h), t, wrap_len(t));
		avail_put(vq, t, h);
	}
	publish(vq, t0 + count);
	return wrap_expect(n, w, t0, count, why);
}

/* As wrap_batch(), and the used entries name the heads in order. */
static int wrap_batch_used(struct vnet *n, struct wire_batch *w, uint32_t t0,
			   int count, uint16_t *used, char *why)
{
	struct vq *vq = &n->vq[VNET_TX];
	int i;

	if (wrap_batch(n, w, t0, count, why))
		return -1;
	if (wait_used(vq, *used + count, WAIT_MS))
		return snprintf(why, VNET_WHY_LEN, "used idx %u, want %u",
				used_idx(vq), (uint16_t)(*used + count)), -1;
	for (i = 0; i < count; i++, (*used)++)
		if (used_id(vq, *used) != wrap_head(t0 + i))
			return snprintf(why, VNET_WHY_LEN,
					"chain %u: used id %u, want %u", t0 + i,
					used_id(vq, *used), wrap_head(t0 + i)),
			       -1;
	return 0;
}

/*
 * The used ring is read-only for lap chains from chain t0 + pre on (the
 * device's indices start at t0): the map cannot be (re)built, frames
 * still go out, used writes fail and vhost reports them, and the driver
 * re-posts buffers without used entries.  Whatever the map read ahead
 * before must not be served when the avail index comes round again; after
 * the used ring is writable again traffic is byte-exact, the used entries
 * name the new lap's heads, and the map carries it.
 */
static void wrap_readonly(struct __test_metadata *_metadata,
			  FIXTURE_DATA(hostile) *self, bool map, uint32_t t0,
			  uint32_t lap)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	struct wire_batch *w = calloc(1, sizeof(*w));
	struct metamap_stats s0, s1, s2;
	const uint32_t pre = 4 * WRAP_BATCH;
	char why[VNET_WHY_LEN];
	uint16_t used = t0;
	struct timespec a, b;
	uint32_t t = t0;
	int errs;

	ASSERT_NE(NULL, w);
	for (; t < t0 + pre; t += WRAP_BATCH)
		ASSERT_EQ(0, wrap_batch_used(&self->n, w, t, WRAP_BATCH, &used,
					     why)) TH_LOG("%s", why);
	ASSERT_EQ(0, vnet_metamap_stats(&self->n, VNET_TX, &s0));
	if (map)
		EXPECT_EQ(1, s0.valid);
	EXPECT_EQ(0, vq_error_count(vq));

	ASSERT_EQ(0, mprotect(vq->used, PAGE, PROT_READ));
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (; t < t0 + pre + lap; t += WRAP_BATCH) {
		int r = wrap_batch(&self->n, w, t, WRAP_BATCH, why);

		vnet_metamap_stats(&self->n, VNET_TX, &s1);
		if (t == t0 + pre || r)
			TH_LOG("chains %u-%u: used idx %u, map valid=%d fast=%lu batched=%lu sections=%lu remaps=%lu failures=%lu invalidations=%lu",
			       t, t + WRAP_BATCH - 1, used_idx(vq), s1.valid,
			       s1.fast, s1.batched, s1.sections, s1.remaps,
			       s1.remap_failures, s1.invalidations);
		ASSERT_EQ(0, r) TH_LOG("read-only used ring: %s", why);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	TH_LOG("%u chains with the used ring read-only in %ld ms", lap,
	       (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000);
	errs = vq_error_count(vq);
	EXPECT_LE(1, errs) TH_LOG("no error for failed used writes");
	ASSERT_EQ(0, vnet_metamap_stats(&self->n, VNET_TX, &s1));
	EXPECT_EQ(0, s1.valid);

	/* Stop the queue (flushes the worker), unprotect, start it again. */
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, -1));
	EXPECT_EQ(used, used_idx(vq)) TH_LOG("used ring written while read-only");
	ASSERT_EQ(0, mprotect(vq->used, PAGE, PROT_READ | PROT_WRITE));
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, self->n.tap_fd));
	vq_error_count(vq);
	for (; t < t0 + pre + lap + 8 * WRAP_BATCH; t += WRAP_BATCH)
		ASSERT_EQ(0, wrap_batch_used(&self->n, w, t, WRAP_BATCH, &used,
					     why)) TH_LOG("after: %s", why);
	EXPECT_EQ(0, vq_error_count(vq));
	ASSERT_EQ(0, vnet_metamap_stats(&self->n, VNET_TX, &s2));
	TH_LOG("vq1: fast %lu -> %lu -> %lu, batched %lu -> %lu -> %lu, fallback %lu -> %lu, remaps %lu, failures %lu",
	       s0.fast, s1.fast, s2.fast, s0.batched, s1.batched, s2.batched,
	       s0.fallback, s1.fallback, s2.remaps, s2.remap_failures);
	if (map) {
		/*
		 * Nothing came through the map while it could not be built;
		 * the read-ahead went through uaccess instead, and every
		 * chain it served was one of this lap (wrap_expect()).
		 */
		EXPECT_EQ(s0.fast, s1.fast);
		EXPECT_LT(s0.uaccess_fills, s1.uaccess_fills);
		EXPECT_EQ(1, s2.valid);
		EXPECT_LT(s1.fast, s2.fast);
	} else {
		EXPECT_EQ(0, s2.fast);
	}
	free(w);
	EXPECT_NO_SPLAT();
}

/*
 * The read-only stretch crosses the 16-bit wrap, in both variants: the
 * device starts 6 batches below 65536 (VHOST_SET_VRING_BASE and the ring's
 * indices), 4 go out with the ring writable, and the read-only stretch of
 * 4 batches crosses 65535 -> 0 after its second.  The stale-lap case (an
 * entry read ahead at the same avail index 65536 chains earlier) needs a
 * real lap: hostile_lap.
 */
TEST_F(hostile, wrap_used_ring_readonly)
{
	const uint16_t base = 65536 - 6 * WRAP_BATCH;

	hostile_close(self);
	hostile_open(_metadata, self, variant->map, base);
	wrap_readonly(_metadata, self, variant->map, base, 4 * WRAP_BATCH);
}

/*
 * More than a whole lap of the 16-bit avail index (65536 + 256 chains)
 * with the used ring read-only, through the map's uaccess fallback, from
 * index 0: whatever the map read ahead before the ring went read-only sits
 * at the avail indices the lap comes round to, with other heads, and must
 * not be served.  Once per run, map on.
 */
FIXTURE(hostile_lap) {
	FIXTURE_DATA(hostile) h;
};

FIXTURE_SETUP(hostile_lap)
{
	hostile_open(_metadata, &self->h, true, 0);
}

FIXTURE_TEARDOWN(hostile_lap)
{
	hostile_close(&self->h);
}

TEST_F_TIMEOUT(hostile_lap, wrap_65536_chains_used_ring_readonly, 300)
{
	wrap_readonly(_metadata, &self->h, true, 0, 65536 + 2 * WRAP_BATCH);
}

/*
 * Traffic that keeps flowing while the main thread changes the device's
 * features: TX and RX batches in turn, byte-exact, kicking always and
 * polling the used rings, so that it depends on no notification
 * suppression (which changes meaning when EVENT_IDX flips).
 */
struct flow {
	struct vnet *n;
	pthread_t thread;
	int tx_batch, rx_batch;		/* frames per batch */
	bool stop;			/* __atomic */
	bool tx_busy;			/* __atomic: a TX batch is published */
	uint64_t frames;		/* __atomic: frames checked */
	uint32_t seq;
	int failed;
	char why[VNET_WHY_LEN];
};

static size_t flow_len(uint32_t seq)
{
	return 60 + (seq * 53) % 1455;
}

/* Wait up to WAIT_MS for vq to have a used entry; kick it now and then. */
static int flow_wait(struct vq *vq)
{
	struct pollfd p = { .fd = vq->call_fd, .events = POLLIN };
	int i;

	for (i = 0; i < WAIT_MS / 10; i++) {
		if (vq_has_used(vq))
			return 0;
		if (i % 10 == 9)
			vq_notify(vq);
		poll(&p, 1, 10);
		vq_calls_collect(vq);
	}
	return vq_has_used(vq) ? 0 : -ETIMEDOUT;
}

static int flow_tx(struct flow *fl, char *why)
{
	struct vnet *n = fl->n;
	uint8_t f[1600];
	int i, r;

	for (i = 0; i < fl->tx_batch; i++) {
		uint32_t seq = fl->seq + i;

		frame_fill(f, flow_len(seq), NULL, seq);
		while ((r = vnet_tx_add(n, NULL, f, flow_len(seq))) == -ENOSPC) {
			publish(&n->vq[VNET_TX], n->vq[VNET_TX].avail_idx);
			if (!vnet_tx_reap(n) && flow_wait(&n->vq[VNET_TX]))
				return snprintf(why, VNET_WHY_LEN,
						"tx %u: no room", seq), -1;
		}
		if (r)
			return snprintf(why, VNET_WHY_LEN, "tx %u: %s", seq,
					strerror(-r)), -1;
	}
	publish(&n->vq[VNET_TX], n->vq[VNET_TX].avail_idx);
	__atomic_store_n(&fl->tx_busy, true, __ATOMIC_RELAXED);
	for (i = 0; i < fl->tx_batch; i++) {
		uint32_t seq = fl->seq + i;
		int tries = WAIT_MS / 100;

		/* Kick again while waiting: a stall must not need a driver. */
		while ((r = wire_take(n, f, sizeof(f), 100)) == -ETIMEDOUT &&
		       --tries)
			vq_notify(&n->vq[VNET_TX]);
		if (!frame_is(f, r, seq, flow_len(seq)))
			return snprintf(why, VNET_WHY_LEN,
					"tx %u: got %d bytes, seq %u", seq, r,
					r >= 18 ? frame_seq(f) : 0), -1;
	}
	__atomic_store_n(&fl->tx_busy, false, __ATOMIC_RELAXED);
	/* All buffers back, so that the next batch goes out whole. */
	while (n->tx_pending)
		if (!vnet_tx_reap(n) && flow_wait(&n->vq[VNET_TX]))
			return snprintf(why, VNET_WHY_LEN,
					"tx %u: buffers not used", fl->seq), -1;
	fl->seq += fl->tx_batch;
	return 0;
}

static int flow_rx(struct flow *fl, char *why)
{
	struct vnet *n = fl->n;
	struct virtio_net_hdr_v1 h;
	uint8_t f[2048];
	int i, r;

	for (i = 0; i < fl->rx_batch; i++)
		if (wire_send_seq(n, fl->seq + i, flow_len(fl->seq + i)))
			return snprintf(why, VNET_WHY_LEN, "wire send: %s",
					strerror(errno)), -1;
	for (i = 0; i < fl->rx_batch; i++) {
		uint32_t seq = fl->seq + i;

		do {
			if (flow_wait(&n->vq[VNET_RX]))
				return snprintf(why, VNET_WHY_LEN,
						"rx %u: nothing received", seq),
				       -1;
			r = vnet_rx_one(n, f, sizeof(f), &h, 1000);
			/* Our frames only: skip what the stack sends. */
		} while (r >= 14 && (f[12] != (VNET_ETH_P >> 8) ||
				     f[13] != (VNET_ETH_P & 0xff)));
		if (!frame_is(f, r, seq, flow_len(seq)))
			return snprintf(why, VNET_WHY_LEN,
					"rx %u: got %d bytes, seq %u", seq, r,
					r >= 18 ? frame_seq(f) : 0), -1;
	}
	vnet_rx_fill(n);
	vq_notify(&n->vq[VNET_RX]);
	fl->seq += fl->rx_batch;
	return 0;
}

static void *flow_run(void *arg)
{
	struct flow *fl = arg;

	while (!__atomic_load_n(&fl->stop, __ATOMIC_RELAXED)) {
		if (flow_tx(fl, fl->why) || flow_rx(fl, fl->why)) {
			fl->failed = 1;
			break;
		}
		__atomic_add_fetch(&fl->frames, fl->tx_batch + fl->rx_batch,
				   __ATOMIC_RELAXED);
	}
	return NULL;
}

static int flow_start(struct flow *fl, struct vnet *n, int tx_batch,
		      int rx_batch)
{
	memset(fl, 0, sizeof(*fl));
	fl->n = n;
	fl->tx_batch = tx_batch;
	fl->rx_batch = rx_batch;
	vnet_rx_fill(n);
	vq_notify(&n->vq[VNET_RX]);
	return pthread_create(&fl->thread, NULL, flow_run, fl);
}

/* Wait until the flow checked more frames than it had; false on failure. */
static bool flow_progress(struct flow *fl, uint64_t more)
{
	uint64_t want = __atomic_load_n(&fl->frames, __ATOMIC_RELAXED) + more;
	int i;

	for (i = 0; i < 2 * WAIT_MS / 10; i++) {
		if (__atomic_load_n(&fl->frames, __ATOMIC_RELAXED) >= want)
			return true;
		if (fl->failed)
			return false;
		usleep(10000);
	}
	return false;
}

static void flow_stop(struct flow *fl)
{
	__atomic_store_n(&fl->stop, true, __ATOMIC_RELAXED);
	pthread_join(fl->thread, NULL);
	/* Leave no TX buffer behind: drain what is still in flight. */
	while (fl->n->tx_pending && !flow_wait(&fl->n->vq[VNET_TX]))
		vnet_tx_reap(fl->n);
}

/*
 * A device IOTLB answering every miss with the identity map, as a VMM with
 * an identity-mapped vIOMMU would.
 */
struct iotlb_server {
	int fd;
	pthread_t thread;
	bool stop;			/* __atomic */
	int misses;			/* __atomic */
	int updates, refused;
};

static void *iotlb_run(void *arg)
{
	struct iotlb_server *s = arg;
	struct pollfd p = { .fd = s->fd, .events = POLLIN };
	struct vhost_msg_v2 m;

	while (!__atomic_load_n(&s->stop, __ATOMIC_RELAXED)) {
		if (poll(&p, 1, 20) <= 0 || read(s->fd, &m, sizeof(m)) != sizeof(m))
			continue;
		if (m.type != VHOST_IOTLB_MSG_V2 || m.iotlb.type != VHOST_IOTLB_MISS)
			continue;
		__atomic_add_fetch(&s->misses, 1, __ATOMIC_RELAXED);
		if (vnet_iotlb_identity(s->fd))
			s->refused++;	/* the IOTLB went away meanwhile */
		else
			s->updates++;
	}
	return NULL;
}

static int features_set(struct vnet *n, uint64_t f)
{
	return ioctl(n->vhost_fd, VHOST_SET_FEATURES, &f) ? -errno : 0;
}

/*
 * Switch the device IOTLB on or off.  Either way vhost forgets the ring
 * addresses (they change meaning: IOVAs or user addresses), so a VMM sets
 * them again, as QEMU does; here IOVA == VA, so the same addresses.
 */
static int features_set_iotlb(struct vnet *n, uint64_t f)
{
	int r = features_set(n, f), q;

	for (q = 0; q < 2 && !r; q++)
		r = vnet_set_vring_addr(n, q);
	/* What vhost skipped while it had no ring addresses: go on. */
	for (q = 0; q < 2 && !r; q++)
		vq_notify(&n->vq[q]);
	return r;
}

/*
 * Wait until the worker is in the middle of a TX batch of the flow: the
 * batch is published and vhost has used part of it, so the rest of it is
 * still to be read, a section per read-ahead batch.
 */
static bool flow_tx_busy(struct flow *fl)
{
	return __atomic_load_n(&fl->tx_busy, __ATOMIC_RELAXED);
}

static void flow_wait_tx_running(struct flow *fl)
{
	struct vq *vq = &fl->n->vq[VNET_TX];
	uint16_t u0;
	int i;

	for (i = 0; i < 5000 && !flow_tx_busy(fl); i++)
		usleep(1000);
	u0 = used_idx(vq);
	for (i = 0; i < 50000 && used_idx(vq) == u0 && flow_tx_busy(fl); i++)
		usleep(20);
}

/* Wait up to ms for the direct map's fast counter of q to pass old. */
static bool fast_grows(struct vnet *n, int q, uint64_t old, int ms)
{
	struct metamap_stats s;
	int i;

	for (i = 0; i < ms / 10; i++) {
		if (!vnet_metamap_stats(n, q, &s) && s.fast > old)
			return true;
		usleep(10000);
	}
	return false;
}

/*
 * VIRTIO_F_ACCESS_PLATFORM switched on with VHOST_SET_FEATURES while TX and
 * RX run, as a VMM does when the guest enables its vIOMMU, and off again,
 * eight times, each time while the worker is in the middle of a batch of
 * 224 TX chains.  vhost must ask for the translations (IOTLB misses on the
 * vhost fd), stop using the direct map while the IOTLB is on, and resume
 * byte-exact once the identity map is filled in; with no splat.  On the
 * original map code the worker took an IOTLB miss (a GFP_KERNEL
 * allocation) inside a map section: vhost_init_device_iotlb() sets
 * dev->iotlb before it takes the queues' mutexes, and translate_desc()
 * looks at dev->iotlb: "BUG: sleeping function called from invalid
 * context".
 */
TEST_F_TIMEOUT(hostile, set_features_access_platform_mid_traffic, 120)
{
	uint64_t base = self->n.features, have = 0;
	uint64_t ap = 1ULL << VIRTIO_F_ACCESS_PLATFORM;
	uint64_t bf = 1ULL << VHOST_BACKEND_F_IOTLB_MSG_V2;
	struct iotlb_server srv = { .fd = self->n.vhost_fd };
	struct metamap_stats a, b;
	char why[VNET_WHY_LEN];
	static const size_t lens[] = { 60, 1514, 300 };
	struct flow fl;
	int round, m0, i;

	ASSERT_EQ(0, ioctl(self->n.vhost_fd, VHOST_GET_FEATURES, &have));
	ASSERT_TRUE(have & ap) TH_LOG("vhost-net does not offer ACCESS_PLATFORM");
	ASSERT_EQ(0, ioctl(self->n.vhost_fd, VHOST_SET_BACKEND_FEATURES, &bf));
	ASSERT_EQ(0, fcntl(self->n.vhost_fd, F_SETFL, O_NONBLOCK));
	ASSERT_EQ(0, pthread_create(&srv.thread, NULL, iotlb_run, &srv));
	ASSERT_EQ(0, flow_start(&fl, &self->n, 224, 32));
	EXPECT_TRUE(flow_progress(&fl, 64)) TH_LOG("no traffic: %s", fl.why);

	for (round = 0; round < 8 && !fl.failed; round++) {
		m0 = __atomic_load_n(&srv.misses, __ATOMIC_RELAXED);
		flow_wait_tx_running(&fl);
		ASSERT_EQ(0, features_set_iotlb(&self->n, base | ap));
		for (i = 0; i < 500 && __atomic_load_n(&srv.misses,
						       __ATOMIC_RELAXED) == m0; i++)
			usleep(10000);
		EXPECT_LT(m0, srv.misses) TH_LOG("round %d: no IOTLB miss", round);
		EXPECT_TRUE(flow_progress(&fl, 64))
			TH_LOG("round %d: traffic did not resume through the IOTLB: %s",
			       round, fl.why);
		/* The map stays out of the way of the IOTLB. */
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, VNET_TX, &a));
		EXPECT_TRUE(flow_progress(&fl, 64));
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, VNET_TX, &b));
		EXPECT_EQ(0, b.valid);
		EXPECT_EQ(a.fast, b.fast) TH_LOG("round %d: map used under the IOTLB",
						 round);

		ASSERT_EQ(0, features_set_iotlb(&self->n, base));
		EXPECT_TRUE(flow_progress(&fl, 64))
			TH_LOG("round %d: traffic stopped without the IOTLB: %s",
			       round, fl.why);
		if (variant->map)
			EXPECT_TRUE(fast_grows(&self->n, VNET_TX, b.fast, 5000))
				TH_LOG("round %d: the map did not come back", round);
	}
	flow_stop(&fl);
	__atomic_store_n(&srv.stop, true, __ATOMIC_RELAXED);
	pthread_join(srv.thread, NULL);
	TH_LOG("%lu frames, %d misses, %d updates, %d refused", fl.frames,
	       srv.misses, srv.updates, srv.refused);
	EXPECT_EQ(0, fl.failed) TH_LOG("traffic: %s", fl.why);

	ASSERT_EQ(0, vnet_metamap_stats(&self->n, VNET_TX, &a));
	ASSERT_EQ(0, vnet_check_tx(&self->n, lens, 3, 300, 32, 1u << 30, why))
		TH_LOG("tx after: %s", why);
	ASSERT_EQ(0, vnet_check_rx(&self->n, lens, 3, 300, 32, 1u << 30, why))
		TH_LOG("rx after: %s", why);
	ASSERT_EQ(0, vnet_metamap_stats(&self->n, VNET_TX, &b));
	EXPECT_EQ(variant->map, b.enabled);
	if (variant->map) {
		EXPECT_EQ(1, b.valid);
		EXPECT_LT(a.fast, b.fast);
	} else {
		EXPECT_EQ(0, b.fast);
	}
	EXPECT_EQ(0, vq_error_count(&self->n.vq[VNET_TX]));
	EXPECT_EQ(0, vq_error_count(&self->n.vq[VNET_RX]));
	EXPECT_NO_SPLAT();
}

/*
 * VIRTIO_RING_F_EVENT_IDX switched off and on 20 times while TX and RX run:
 * the avail and used rings change length with it.  Traffic stays
 * byte-exact; afterwards the map is valid again and carries the traffic.
 */
TEST_F_TIMEOUT(hostile, set_features_event_idx_flips_mid_traffic, 120)
{
	uint64_t base = self->n.features;
	uint64_t ev = 1ULL << VIRTIO_RING_F_EVENT_IDX;
	static const size_t lens[] = { 60, 1514, 300 };
	struct metamap_stats a[2], b;
	char why[VNET_WHY_LEN];
	struct flow fl;
	int i, q;

	ASSERT_TRUE(base & ev);
	ASSERT_EQ(0, flow_start(&fl, &self->n, 16, 16));
	EXPECT_TRUE(flow_progress(&fl, 64)) TH_LOG("no traffic: %s", fl.why);
	for (i = 0; i < 20 && !fl.failed; i++) {
		ASSERT_EQ(0, features_set(&self->n, i & 1 ? base : base & ~ev));
		EXPECT_TRUE(flow_progress(&fl, 32))
			TH_LOG("flip %d: traffic stopped: %s", i, fl.why);
	}
	flow_stop(&fl);
	TH_LOG("%lu frames", fl.frames);
	EXPECT_EQ(0, fl.failed) TH_LOG("traffic: %s", fl.why);

	/*
	 * The suppression fields vhost last wrote may be of the other mode:
	 * one round that kicks always, so that vhost writes them in this one.
	 */
	fl.stop = false;
	fl.seq = 1u << 20;
	ASSERT_EQ(0, flow_tx(&fl, why)) TH_LOG("%s", why);
	ASSERT_EQ(0, flow_rx(&fl, why)) TH_LOG("%s", why);
	for (q = 0; q < 2; q++)
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, &a[q]));
	ASSERT_EQ(0, vnet_check_tx(&self->n, lens, 3, 300, 32, 1u << 30, why))
		TH_LOG("tx after: %s", why);
	ASSERT_EQ(0, vnet_check_rx(&self->n, lens, 3, 300, 32, 1u << 30, why))
		TH_LOG("rx after: %s", why);
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, &b));
		TH_LOG("vq%d: valid=%d fast %lu -> %lu", q, b.valid, a[q].fast,
		       b.fast);
		EXPECT_EQ(variant->map, b.enabled);
		if (variant->map) {
			EXPECT_EQ(1, b.valid);
			EXPECT_LT(a[q].fast, b.fast);
		} else {
			EXPECT_EQ(0, b.fast);
		}
	}
	EXPECT_EQ(0, vq_error_count(&self->n.vq[VNET_TX]));
	EXPECT_EQ(0, vq_error_count(&self->n.vq[VNET_RX]));
	EXPECT_NO_SPLAT();
}

/*
 * Legacy (pre-1.0) big-endian rings, VHOST_SET_VRING_ENDIAN.  The driver
 * writes every ring field big-endian itself.
 */
static int set_endian(struct vnet *n, int q, unsigned int e)
{
	struct vhost_vring_state s = { .index = q, .num = e };

	return ioctl(n->vhost_fd, VHOST_SET_VRING_ENDIAN, &s) ? -errno : 0;
}

/* A new vhost device for n without VERSION_1; 0, or -errno. */
static int reopen_legacy(struct vnet *n)
{
	n->features &= ~(1ULL << VIRTIO_F_VERSION_1);
	return vnet_reopen(n);
}

/* Stop queue q, set its ring endianness, start it again. */
static int restart_endian(struct vnet *n, int q, unsigned int e)
{
	int r = vnet_set_backend(n, q, -1);

	if (!r)
		r = set_endian(n, q, e);
	if (!r)
		r = vnet_set_backend(n, q, n->tap_fd);
	return r;
}

static void be_tx_desc(struct vq *vq, uint16_t h, uint8_t *buf, uint32_t seq,
		       size_t len)
{
	memset(buf, 0, HL);
	frame_fill(buf + HL, len, NULL, seq);
	vq->desc[h].addr = htobe64((uintptr_t)buf);
	vq->desc[h].len = htobe32(HL + len);
	vq->desc[h].flags = 0;
	vq->desc[h].next = 0;
}

static void be_rx_desc(struct vq *vq, uint16_t h, uint8_t *buf, uint32_t len)
{
	vq->desc[h].addr = htobe64((uintptr_t)buf);
	vq->desc[h].len = htobe32(len);
	vq->desc[h].flags = htobe16(VRING_DESC_F_WRITE);
	vq->desc[h].next = 0;
}

static void be_publish(struct vq *vq, uint16_t idx)
{
	store_release(&vq->avail->idx, htobe16(idx));
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	vq_notify(vq);
}

static int be_wait_used(struct vq *vq, uint16_t want, int ms)
{
	int i;

	for (i = 0; i < ms; i++) {
		if (be16toh(load_acquire(&vq->used->idx)) == want)
			return 0;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

/* A received buffer as rx_holds(), with num_buffers big-endian. */
static bool be_rx_holds(const uint8_t *buf, size_t cap, uint32_t seq,
			size_t len)
{
	const struct virtio_net_hdr_v1 *h = (const void *)buf;

	return be16toh(h->num_buffers) == 1 &&
	       frame_is(buf + HL, len, seq, len) &&
	       all_guard(buf + HL + len, cap - HL - len);
}

/*
 * Traffic both ways through big-endian legacy rings, 512 frames each,
 * byte-exact, with big-endian used entries; the map serves such rings like
 * any other.
 */
TEST_F_TIMEOUT(hostile, be_legacy_rings_traffic, 120)
{
	struct vq *tx = &self->n.vq[VNET_TX], *rx = &self->n.vq[VNET_RX];
	struct metamap_stats s[2];
	char why[VNET_WHY_LEN];
	uint32_t t;
	int r, q;

	ASSERT_EQ(0, reopen_legacy(&self->n));
	r = restart_endian(&self->n, VNET_TX, VHOST_VRING_BIG_ENDIAN);
	/* The test config has CONFIG_VHOST_CROSS_ENDIAN_LEGACY=y. */
	ASSERT_EQ(0, r) TH_LOG("VHOST_SET_VRING_ENDIAN: %s", strerror(-r));
	ASSERT_EQ(0, restart_endian(&self->n, VNET_RX, VHOST_VRING_BIG_ENDIAN));

	for (t = 0; t < 512; t += 64) {
		uint16_t i;

		for (i = t; i != t + 64; i++) {
			be_tx_desc(tx, i % NUM, txb(&self->n, i % NUM), i,
				   60 + i % 700);
			tx->avail->ring[i % NUM] = htobe16(i % NUM);
		}
		be_publish(tx, t + 64);
		for (i = t; i != t + 64; i++)
			ASSERT_EQ(0, wire_expect(&self->n, i, 60 + i % 700, why))
				TH_LOG("%s", why);
		ASSERT_EQ(0, be_wait_used(tx, t + 64, WAIT_MS));
		for (i = t; i != t + 64; i++)
			ASSERT_EQ(i % NUM, be32toh(tx->used->ring[i % NUM].id));
	}
	EXPECT_TRUE(wire_quiet(&self->n));

	memset(self->n.bufs[VNET_RX], GUARD, self->n.bufs_len);
	for (t = 0; t < 512; t += 64) {
		uint16_t i;

		for (i = t; i != t + 64; i++) {
			memset(rxb(&self->n, i % NUM), GUARD, 2048);
			be_rx_desc(rx, i % NUM, rxb(&self->n, i % NUM), 2048);
			rx->avail->ring[i % NUM] = htobe16(i % NUM);
		}
		be_publish(rx, t + 64);
		for (i = t; i != t + 64; i++)
			ASSERT_EQ(0, wire_send_seq(&self->n, i, 60 + i % 700));
		ASSERT_EQ(0, be_wait_used(rx, t + 64, WAIT_MS));
		for (i = t; i != t + 64; i++) {
			uint32_t id = be32toh(rx->used->ring[i % NUM].id);

			ASSERT_EQ(i % NUM, id);
			ASSERT_EQ(HL + 60 + i % 700,
				  be32toh(rx->used->ring[i % NUM].len));
			ASSERT_TRUE(be_rx_holds(rxb(&self->n, id), 2048, i,
						60 + i % 700));
		}
	}
	for (q = 0; q < 2; q++) {
		ASSERT_EQ(0, vnet_metamap_stats(&self->n, q, &s[q]));
		EXPECT_EQ(variant->map, s[q].enabled);
		if (variant->map) {
			EXPECT_LT(0, s[q].fast);
		} else {
			EXPECT_EQ(0, s[q].fast);
		}
	}
	EXPECT_EQ(0, vq_error_count(tx));
	EXPECT_EQ(0, vq_error_count(rx));
	EXPECT_NO_SPLAT();
}

/*
 * Ring endianness changes under entries vhost read ahead: a legacy
 * little-endian RX ring with 16 buffers posted and one used (the map read
 * the other 15 ahead) is stopped, rewritten big-endian in place (same heads
 * and buffers), switched to big-endian and started again without
 * SET_VRING_BASE.  The 15 entries must be read again as big-endian: the
 * next frames land in heads 1-15 with no error.
 */
TEST_F(hostile, be_endian_switch_forgets_read_ahead)
{
	struct vq *vq = &self->n.vq[VNET_RX];
	int r, k;

	ASSERT_EQ(0, reopen_legacy(&self->n));
	r = restart_endian(&self->n, VNET_RX, VHOST_VRING_LITTLE_ENDIAN);
	/* The test config has CONFIG_VHOST_CROSS_ENDIAN_LEGACY=y. */
	ASSERT_EQ(0, r) TH_LOG("VHOST_SET_VRING_ENDIAN: %s", strerror(-r));
	rx_read_ahead_16(_metadata, self);

	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_RX, -1));
	vq->used->idx = htobe16(1);
	for (k = 1; k < 16; k++) {
		be_rx_desc(vq, k, rxb(&self->n, k), 2048);
		vq->avail->ring[k] = htobe16(k);
	}
	vq->avail->idx = htobe16(16);
	ASSERT_EQ(0, set_endian(&self->n, VNET_RX, VHOST_VRING_BIG_ENDIAN));
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_RX, self->n.tap_fd));
	vq_notify(vq);
	for (k = 1; k < 16; k++)
		ASSERT_EQ(0, wire_send_seq(&self->n, 1 + k, 100 + k));
	ASSERT_EQ(0, be_wait_used(vq, 16, WAIT_MS))
		TH_LOG("used idx %u, %d errors reported", be16toh(vq->used->idx),
		       vq_error_count(vq));
	for (k = 1; k < 16; k++) {
		EXPECT_EQ(k, be32toh(vq->used->ring[k].id));
		EXPECT_TRUE(be_rx_holds(rxb(&self->n, k), 2048, 1 + k, 100 + k))
			TH_LOG("frame %d not in buffer %d", 1 + k, k);
	}
	for (k = 16; k < NUM; k++)
		EXPECT_TRUE(all_guard(rxb(&self->n, k), 2048))
			TH_LOG("buffer %d written", k);
	EXPECT_EQ(0, vq_error_count(vq));
	EXPECT_NO_SPLAT();
}

TEST_HARNESS_MAIN
