// SPDX-License-Identifier: GPL-2.0
/*
 * Bugs of upstream's vhost-net that this series fixes, each tested with
 * upstream's uapi alone (no admin plane, no metadata map, no counter of
 * ours), so that one binary shows each bug on a stock kernel (6.12, and
 * 7.2, where each is still there) and its fix on ours:
 *
 * - tx_batch_refused_returns_the_buffers: a TX batch the TAP refuses as a
 *   whole (its interface deleted under the device) must give the guest its
 *   buffers back; stock forgets them (vhost_tx_batch() resets done_idx
 *   without adding the heads to the used ring).
 * - tx_unreadable_buffer_no_busy_loop: a TX buffer vhost cannot read (its
 *   page unmapped) must not make the worker retry it in a loop; stock
 *   gives it back and polls the writable socket, which queues the handler
 *   again at once, for ever.  The worker's CPU time is the measure.
 * - tx_malformed_csum_header_dropped: a TX frame whose virtio-net header
 *   asks for a checksum beyond the frame (csum_start + csum_offset past
 *   its end) must be dropped, as tun drops it on the copy path; stock's
 *   batched path gives it back and polls the socket: the same busy loop.
 * - set_features_only_from_the_owner: VHOST_SET_FEATURES from a process
 *   that holds the fd but is not the owner (a forked child) is refused
 *   with EPERM, as the memory table and the rings already are; stock
 *   accepts it.  vhost_drivers tests the same of vsock, scsi and vdpa.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/vhost.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "../kselftest_harness.h"
#include "vhost_net_lib.h"

#define PAGE 4096

FIXTURE(fixes) {
	struct vnet n;
};

FIXTURE_SETUP(fixes)
{
	struct vnet_opts o = { .ring_num = 256, .event_idx = true };
	int r;

	r = vnet_open(&self->n, &o);
	ASSERT_EQ(0, r) TH_LOG("vnet_open: %s", strerror(-r));
}

FIXTURE_TEARDOWN(fixes)
{
	vnet_close(&self->n);
}

/*
 * TX frames of 1514 bytes take the batched path (the TAP's sndbuf is
 * unlimited, the frame fits a page: vhost_net_build_xdp()), which hands
 * the batch to tun at once; with the interface gone tun refuses it whole
 * (-EBADFD).  Every buffer must come back, used with length 0, as the
 * copy path gives back a packet the backend refuses.
 */
TEST_F(fixes, tx_batch_refused_returns_the_buffers)
{
	char cmd[64];
	int n = 20, r;

	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	snprintf(cmd, sizeof(cmd), "ip link del dev %s", self->n.ifname);
	r = system(cmd);
	ASSERT_EQ(0, r) TH_LOG("%s: status %#x", cmd, r);
	r = vnet_tx_burst(&self->n, 1514, n);
	EXPECT_EQ(0, r) TH_LOG("%d frames to a deleted TAP: %llu buffers not returned (%s)",
			       n, (unsigned long long)self->n.tx_pending,
			       strerror(-r));
}

/* The vhost worker's thread of this process (comm vhost-PID), or -1. */
static int worker_tid(void)
{
	char path[300], comm[32];
	struct dirent *e;
	int tid = -1;
	DIR *d;

	d = opendir("/proc/self/task");
	if (!d)
		return -1;
	while (tid < 0 && (e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (!read_str(path, comm, sizeof(comm)) &&
		    !strncmp(comm, "vhost-", 6))
			tid = atoi(e->d_name);
	}
	closedir(d);
	return tid;
}

/* A thread's user + system time, in clock ticks, or -1. */
static long cpu_ticks(int tid)
{
	unsigned long ut, st;
	char path[64], buf[1024], *p;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	if (read_str(path, buf, sizeof(buf)))
		return -1;
	p = strrchr(buf, ')');
	/* after the comm: state, then fields 4 to 13; utime, stime are 14, 15 */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &ut, &st) != 2)
		return -1;
	return ut + st;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Kick the TX queue once and watch the worker for 500 ms: its CPU time,
 * in ms, and the wall time watched, or a negative errno.  A worker that
 * retries a buffer in a loop spends most of it.
 */
static int kick_and_watch(struct vnet *n, double *cpu_ms, double *wall_ms)
{
	long hz = sysconf(_SC_CLK_TCK), t0, t1;
	struct vq *vq = &n->vq[VNET_TX];
	int tid = worker_tid();
	double w0;

	if (tid < 0)
		return -ESRCH;
	t0 = cpu_ticks(tid);
	w0 = mono_s();
	vq_publish(vq);
	vq_notify(vq);
	usleep(500000);
	t1 = cpu_ticks(tid);
	*wall_ms = (mono_s() - w0) * 1e3;
	if (t0 < 0 || t1 < 0)
		return -EIO;
	*cpu_ms = (t1 - t0) * 1e3 / hz;
	return 0;
}

/* A tenth of the time watched at most, and never less than two ticks. */
static bool no_busy_loop(double cpu_ms, double wall_ms)
{
	return cpu_ms <= wall_ms / 10 + 2e3 / sysconf(_SC_CLK_TCK);
}

/*
 * One TX buffer in a page that is unmapped (inside the memory table's one
 * region, so translation succeeds and the copy faults), one kick, then
 * 500 ms of watching the worker.  Retrying in a loop costs it most of
 * that; waiting for a kick, or retrying after a backoff, nearly nothing.
 * Then the page comes back with a frame in it: a retry or a kick sends
 * it, and the queue carries traffic again.
 */
TEST_F(fixes, tx_unreadable_buffer_no_busy_loop)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	size_t len = 200, hl = self->n.hdr_len;
	uint8_t want[200], got[200];
	uint8_t *buf, *fill;
	double cpu, wall;
	int r;

	ASSERT_EQ(0, vnet_tx_burst(&self->n, 60, 8));
	buf = vnet_map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	/* Mapped before buf goes, so that it does not take buf's place. */
	fill = vnet_map_anon(PAGE);
	ASSERT_NE(NULL, fill);
	ASSERT_EQ(0, munmap(buf, PAGE));
	ASSERT_EQ(0, vnet_tx_add_buf(&self->n, buf, hl + len));
	r = kick_and_watch(&self->n, &cpu, &wall);
	ASSERT_EQ(0, r) TH_LOG("the worker's CPU time: %s", strerror(-r));
	TH_LOG("the worker ran %.0f ms of the %.0f ms after one kick", cpu, wall);
	EXPECT_TRUE(no_busy_loop(cpu, wall))
		TH_LOG("the worker retried the unreadable buffer in a loop");

	/*
	 * The first burst's frames off the wire while the page is still
	 * gone: a kernel that tries the buffer again after a backoff may
	 * send the frame as soon as the page is back, before the kick.
	 */
	while (wire_recv(&self->n, got, sizeof(got), 50) >= 0)
		;
	/*
	 * The page back with the frame in it, in one step (a page filled
	 * elsewhere and moved there): a retry that read the page between
	 * an mmap() and the fill would send zeroes.  Sent by the next kick
	 * at latest.
	 */
	memset(fill, 0, hl);
	frame_fill(fill + hl, len, NULL, 0x4e00);
	memcpy(want, fill + hl, len);
	ASSERT_EQ(buf, mremap(fill, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, buf));
	vq_notify(vq);
	r = wire_recv(&self->n, got, sizeof(got), 10000);
	ASSERT_EQ((int)len, r);
	EXPECT_EQ(0, memcmp(want, got, len)) {
		size_t i = 0, z = 0;

		while (i < len && want[i] == got[i])
			i++;
		for (size_t j = 0; j < len; j++)
			z += !got[j];
		TH_LOG("first difference at byte %zu (%02x, want %02x); %zu zero bytes",
		       i, got[i], want[i], z);
	}
	EXPECT_EQ(0, vnet_tx_drain(&self->n, 10000));
	EXPECT_EQ(0, vnet_tx_burst(&self->n, 60, 8));
	munmap(buf, PAGE);
}

/*
 * A 200-byte frame whose header asks for a checksum at byte 1000:
 * vhost_net_build_xdp() refuses it (-EINVAL), as tun's
 * virtio_net_hdr_to_skb() refuses it on the copy path, where vhost-net
 * drops the frame (the buffer used, nothing sent).  The batched path must
 * drop it too: used, nothing on the wire, no busy loop, and the frames
 * after it sent.
 */
TEST_F(fixes, tx_malformed_csum_header_dropped)
{
	struct virtio_net_hdr_v1 hdr = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.csum_start = 1000,
		.csum_offset = 0,
	};
	uint8_t frame[200], got[256];
	double cpu, wall;
	int r;

	ASSERT_EQ(0, vnet_tx_burst(&self->n, 60, 8));
	while (wire_recv(&self->n, got, sizeof(got), 50) >= 0)
		;	/* the burst's frames */
	frame_fill(frame, sizeof(frame), NULL, 0x4e01);
	ASSERT_LE(0, vnet_tx_add(&self->n, &hdr, frame, sizeof(frame)));
	r = kick_and_watch(&self->n, &cpu, &wall);
	ASSERT_EQ(0, r) TH_LOG("the worker's CPU time: %s", strerror(-r));
	TH_LOG("the worker ran %.0f ms of the %.0f ms after one kick", cpu, wall);
	EXPECT_TRUE(no_busy_loop(cpu, wall))
		TH_LOG("the worker retried the malformed frame in a loop");
	EXPECT_EQ(0, vnet_tx_drain(&self->n, 2000))
		TH_LOG("the malformed frame's buffer was not given back");
	r = wire_recv(&self->n, got, sizeof(got), 100);
	EXPECT_EQ(-ETIMEDOUT, r) TH_LOG("a frame of %d bytes left", r);
	EXPECT_EQ(0, vnet_tx_burst(&self->n, 60, 8));
}

/*
 * The owner's forked child holds the fd: VHOST_SET_FEATURES from it is
 * refused with EPERM and changes nothing; the owner's own call with the
 * same features is accepted.
 */
TEST_F(fixes, set_features_only_from_the_owner)
{
	uint64_t f = self->n.features;

	EXPECT_EQ(EPERM, vhost_set_features_from_child(self->n.vhost_fd, f));
	EXPECT_EQ(0, ioctl(self->n.vhost_fd, VHOST_SET_FEATURES, &f));
	EXPECT_EQ(0, vnet_tx_burst(&self->n, 60, 8));
}

TEST_HARNESS_MAIN
