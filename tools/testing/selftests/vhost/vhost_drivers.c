// SPDX-License-Identifier: GPL-2.0
/*
 * The vhost drivers other than vhost-net run the same vhost core, changed
 * by this series, and the package replaces them too: vhost-vsock,
 * vhost-scsi and vhost-vdpa (on a vdpa_sim_net device made for the test
 * with iproute2's vdpa, deleted after).  One variant per driver.
 *
 * Fixture vsock drives /dev/vhost-vsock from this process as a guest's
 * virtio-vsock driver would (vhost_net_lib's split rings, in this
 * process's memory): a stream socket of the host connects to it, and
 * what the host sends the "guest" echoes back, byte-checked, after each
 * of the mm events the metamap tests apply to vhost-net's rings.
 *
 * VHOST_SET_FEATURES decides how the rings in the owner's memory are
 * accessed (event index, the dirty log, the device IOTLB): like the
 * memory table and the rings, only the owner may set it.  A forked child
 * of the owner holds the same fd and is refused; the owner is not.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <endian.h>
#include <linux/vhost.h>
#include <linux/userfaultfd.h>
#include <linux/virtio_vsock.h>
#include <linux/vm_sockets.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "vhost_net_lib.h"

#define VDPA_NAME "vhtest-vdpa0"

FIXTURE(drv) {
	int fd;
	bool vdpa_added;
};

FIXTURE_VARIANT(drv) {
	const char *dev;	/* its character device; NULL: vdpa's */
};

FIXTURE_VARIANT_ADD(drv, vsock) {
	.dev = "/dev/vhost-vsock",
};

FIXTURE_VARIANT_ADD(drv, scsi) {
	.dev = "/dev/vhost-scsi",
};

FIXTURE_VARIANT_ADD(drv, vdpa) {
	.dev = NULL,
};

/* /dev/vhost-vdpa-N of the vdpa device VDPA_NAME in path, or -1. */
static int vdpa_chardev(char *path, size_t len)
{
	DIR *d = opendir("/sys/bus/vdpa/devices/" VDPA_NAME);
	struct dirent *e;
	int ret = -1;

	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, "vhost-vdpa-", 11)) {
			snprintf(path, len, "/dev/%s", e->d_name);
			ret = 0;
			break;
		}
	if (d)
		closedir(d);
	return ret;
}

FIXTURE_SETUP(drv)
{
	char path[300];
	int i, r;

	self->fd = -1;
	if (variant->dev) {
		snprintf(path, sizeof(path), "%s", variant->dev);
	} else {
		/* The simulator's net device, bound to vhost-vdpa. */
		r = system("vdpa dev add mgmtdev vdpasim_net name " VDPA_NAME);
		ASSERT_EQ(0, r) TH_LOG("vdpa dev add: status %#x", r);
		self->vdpa_added = true;
		for (i = 0; i < 100 && vdpa_chardev(path, sizeof(path)); i++)
			usleep(20000);
		ASSERT_EQ(0, vdpa_chardev(path, sizeof(path)))
			TH_LOG("no vhost-vdpa device for " VDPA_NAME);
		for (i = 0; i < 100 && access(path, F_OK); i++)
			usleep(20000);
	}
	/* The driver is what is under test: missing, a failure. */
	self->fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("%s: %s", path, strerror(errno));
}

FIXTURE_TEARDOWN(drv)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->vdpa_added &&
	    system("vdpa dev del " VDPA_NAME))
		TH_LOG("vdpa dev del " VDPA_NAME " failed");
}

/*
 * The owner's features, offered by the driver, set by a forked child of
 * the owner through the same fd: EPERM, and the features stay the
 * owner's to set, which it then does.
 */
TEST_F(drv, set_features_only_from_the_owner)
{
	uint64_t features = 0;
	int r;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_OWNER, NULL));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &features));
	TH_LOG("%s: features %#llx", variant->dev ?: "vhost-vdpa",
	       (unsigned long long)features);
	r = vhost_set_features_from_child(self->fd, features);
	EXPECT_EQ(EPERM, r)
		TH_LOG("the child's VHOST_SET_FEATURES: %s",
		       r ? strerror(r) : "accepted");
	EXPECT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &features))
		TH_LOG("the owner's VHOST_SET_FEATURES: %s", strerror(errno));
}

#define VS_PAGE 4096UL
#define VS_RING 64		/* entries per queue */
#define VS_BUF 4096		/* bytes per buffer, header included */
#define VS_HDR sizeof(struct virtio_vsock_hdr)
#define VS_PORT 5151
#define VS_BUF_ALLOC (256 << 10)	/* the guest's receive buffer */
#define VS_AREA (2UL << 20)	/* a huge page: rings and buffers */
#define VS_RX_OFF (64UL << 10)
#define VS_TX_OFF (VS_RX_OFF + VS_RING * VS_BUF)
#define VS_HOST_CID 2		/* VHOST_VSOCK_DEFAULT_HOST_CID */
#define VS_RX 0			/* the queues, as vhost-vsock numbers them */
#define VS_TX 1

FIXTURE(vsock) {
	int fd;			/* /dev/vhost-vsock */
	int sock;		/* the host's end, AF_VSOCK */
	uint64_t cid;		/* the guest's */
	uint8_t *map;		/* VS_AREA * 2, unaligned */
	uint8_t *area;		/* VS_AREA aligned: rings, then buffers */
	struct vq vq[2];	/* VS_RX, VS_TX */
	uint8_t *rx_buf[VS_RING];	/* by RX head */
	unsigned int tx_slot;
	uint32_t host_port;	/* the connection's, once requested */
	uint32_t fwd_cnt;	/* payload bytes the guest took */
	uint64_t rx_pkts, tx_pkts;
	struct ksm_saved ksm;	/* KSM's knobs, put back at the end */
	char why[160];
};

static struct vring_layout vs_layout(uint8_t *area, int q)
{
	uint8_t *r = area + q * 8 * VS_PAGE;

	return (struct vring_layout) {
		.desc = r,
		.avail = r + vring_desc_size(VS_RING),
		.used = r + 4 * VS_PAGE,
	};
}

/* Queue a packet of the guest's on TX: 0, or -errno. */
static int vs_send(FIXTURE_DATA(vsock) *self, uint16_t op, const void *data,
		   uint32_t len)
{
	struct vq *tx = &self->vq[VS_TX];
	uint8_t *buf = self->area + VS_TX_OFF +
		       (size_t)(self->tx_slot % VS_RING) * VS_BUF;
	struct virtio_vsock_hdr *h = (void *)buf;
	struct iovec iov = { .iov_base = buf, .iov_len = VS_HDR + len };
	int r;

	/* Buffers come back in order: the slot is free once one is. */
	while ((r = vq_get_used(tx, NULL)) >= 0)
		;
	while (!tx->num_free) {
		r = vq_wait(tx, 5000);
		if (r)
			return r;
		while (vq_get_used(tx, NULL) >= 0)
			;
	}
	memset(h, 0, VS_HDR);
	h->src_cid = htole64(self->cid);
	h->dst_cid = htole64(VS_HOST_CID);
	h->src_port = htole32(VS_PORT);
	h->dst_port = htole32(self->host_port);
	h->len = htole32(len);
	h->type = htole16(VIRTIO_VSOCK_TYPE_STREAM);
	h->op = htole16(op);
	h->buf_alloc = htole32(VS_BUF_ALLOC);
	h->fwd_cnt = htole32(self->fwd_cnt);
	if (len)
		memcpy(buf + VS_HDR, data, len);
	r = vq_add(tx, &iov, 1, 0);
	if (r < 0)
		return r;
	self->tx_slot++;
	self->tx_pkts++;
	vq_kick(tx);
	return 0;
}

/*
 * The guest's driver: take what the host put on RX, answer (a request
 * with a response, data with the same data, a shutdown with a reset),
 * give the buffer back.  Packets handled, or -1 with self->why.
 */
static int vs_pump(FIXTURE_DATA(vsock) *self, int timeout_ms)
{
	struct vq *rx = &self->vq[VS_RX];
	int head, n = 0, r;
	uint32_t len;

	if (!vq_has_used(rx) && vq_wait(rx, timeout_ms))
		return 0;
	while ((head = vq_get_used(rx, &len)) >= 0) {
		uint8_t *buf = self->rx_buf[head];
		struct virtio_vsock_hdr *h = (void *)buf;
		uint32_t plen = le32toh(h->len);
		uint16_t op = le16toh(h->op);
		struct iovec iov = { .iov_base = buf, .iov_len = VS_BUF };

		if (len < VS_HDR || len != VS_HDR + plen ||
		    le64toh(h->dst_cid) != self->cid ||
		    le64toh(h->src_cid) != VS_HOST_CID ||
		    le32toh(h->dst_port) != VS_PORT) {
			snprintf(self->why, sizeof(self->why),
				 "RX packet %llu: used length %u, header len %u, cid %llu->%llu, port %u",
				 (unsigned long long)self->rx_pkts, len, plen,
				 (unsigned long long)le64toh(h->src_cid),
				 (unsigned long long)le64toh(h->dst_cid),
				 le32toh(h->dst_port));
			return -1;
		}
		self->rx_pkts++;
		r = 0;
		switch (op) {
		case VIRTIO_VSOCK_OP_REQUEST:
			self->host_port = le32toh(h->src_port);
			r = vs_send(self, VIRTIO_VSOCK_OP_RESPONSE, NULL, 0);
			break;
		case VIRTIO_VSOCK_OP_RW:
			self->fwd_cnt += plen;
			r = vs_send(self, VIRTIO_VSOCK_OP_RW, buf + VS_HDR, plen);
			break;
		case VIRTIO_VSOCK_OP_SHUTDOWN:
			r = vs_send(self, VIRTIO_VSOCK_OP_RST, NULL, 0);
			break;
		case VIRTIO_VSOCK_OP_CREDIT_REQUEST:
			r = vs_send(self, VIRTIO_VSOCK_OP_CREDIT_UPDATE, NULL, 0);
			break;
		}
		if (r) {
			snprintf(self->why, sizeof(self->why), "TX: %s",
				 strerror(-r));
			return -1;
		}
		head = vq_add(rx, &iov, 0, 1);
		if (head < 0) {
			snprintf(self->why, sizeof(self->why), "RX repost: %s",
				 strerror(-head));
			return -1;
		}
		self->rx_buf[head] = buf;
		n++;
	}
	vq_kick(rx);
	return n;
}

FIXTURE_SETUP(vsock)
{
	uint64_t features = (1ULL << VIRTIO_F_VERSION_1) |
			    (1ULL << VIRTIO_RING_F_EVENT_IDX), have = 0;
	struct vnet_opts o = { .ring_num = VS_RING, .event_idx = true };
	int i, q, r, running = 1;

	self->fd = -1;
	self->sock = -1;
	self->map = mmap(NULL, 2 * VS_AREA, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->map);
	self->area = (uint8_t *)(((uintptr_t)self->map + VS_AREA - 1) &
				 ~(VS_AREA - 1));
	ASSERT_EQ(0, madvise(self->area, VS_AREA, MADV_HUGEPAGE));
	memset(self->area, 0, VS_AREA);
	for (q = 0; q < 2; q++) {
		struct vring_layout l = vs_layout(self->area, q);

		ASSERT_EQ(0, vq_init(&self->vq[q], &o, &l));
	}
	/* The driver is what is under test: missing, a failure. */
	self->fd = open("/dev/vhost-vsock", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("/dev/vhost-vsock: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_OWNER, NULL));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &have));
	ASSERT_EQ(features, have & features);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &features));
	ASSERT_EQ(0, vhost_set_mem_all(self->fd));
	for (q = 0; q < 2; q++)
		ASSERT_EQ(0, vq_attach(self->fd, q, &self->vq[q]))
			TH_LOG("queue %d: %s", q, strerror(errno));
	/* A CID of its own: another test's may be taken. */
	self->cid = 1000 + getpid() % 100000;
	for (i = 0; i < 100; i++, self->cid++) {
		r = ioctl(self->fd, VHOST_VSOCK_SET_GUEST_CID, &self->cid);
		if (!r || errno != EADDRINUSE)
			break;
	}
	ASSERT_EQ(0, r) TH_LOG("SET_GUEST_CID: %s", strerror(errno));
	for (i = 0; i < VS_RING; i++) {
		uint8_t *buf = self->area + VS_RX_OFF + (size_t)i * VS_BUF;
		struct iovec iov = { .iov_base = buf, .iov_len = VS_BUF };
		int head = vq_add(&self->vq[VS_RX], &iov, 0, 1);

		ASSERT_LE(0, head);
		self->rx_buf[head] = buf;
	}
	vq_kick(&self->vq[VS_RX]);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_VSOCK_SET_RUNNING, &running));
}

FIXTURE_TEARDOWN(vsock)
{
	int q;

	if (self->sock >= 0)
		close(self->sock);
	if (self->fd >= 0)
		close(self->fd);
	for (q = 0; q < 2; q++)
		vq_fini(&self->vq[q]);
	if (self->map && self->map != MAP_FAILED)
		munmap(self->map, 2 * VS_AREA);
	ksm_restore(&self->ksm);
}

/* The host connects to the guest's port: 0, or -1 with self->why. */
static int vs_connect(FIXTURE_DATA(vsock) *self)
{
	struct sockaddr_vm a = {
		.svm_family = AF_VSOCK,
		.svm_cid = self->cid,
		.svm_port = VS_PORT,
	};
	struct pollfd p = { .events = POLLOUT };
	socklen_t el = sizeof(int);
	int i, err = 0;

	self->sock = socket(AF_VSOCK, SOCK_STREAM | SOCK_NONBLOCK |
			    SOCK_CLOEXEC, 0);
	if (self->sock < 0) {
		snprintf(self->why, sizeof(self->why), "AF_VSOCK: %s",
			 strerror(errno));
		return -1;
	}
	p.fd = self->sock;
	if (!connect(self->sock, (struct sockaddr *)&a, sizeof(a)))
		return 0;
	if (errno != EINPROGRESS) {
		snprintf(self->why, sizeof(self->why), "connect: %s",
			 strerror(errno));
		return -1;
	}
	for (i = 0; i < 100; i++) {
		if (vs_pump(self, 50) < 0)
			return -1;
		if (poll(&p, 1, 0) == 1)
			break;
	}
	if (getsockopt(self->sock, SOL_SOCKET, SO_ERROR, &err, &el) || err ||
	    !(p.revents & POLLOUT)) {
		snprintf(self->why, sizeof(self->why),
			 "connect to CID %llu: %s (%llu packets came)",
			 (unsigned long long)self->cid,
			 err ? strerror(err) : "no answer",
			 (unsigned long long)self->rx_pkts);
		return -1;
	}
	return 0;
}

/*
 * len bytes of a pattern of seed through the guest and back: sent by the
 * host, echoed by the guest, received by the host with the same bytes.
 * 0, or -1 with self->why.
 */
static int vs_echo(FIXTURE_DATA(vsock) *self, size_t len, unsigned int seed)
{
	static uint8_t out[1 << 17], in[1 << 17];
	size_t sent = 0, got = 0, i;
	int idle = 0;
	ssize_t r;

	if (len > sizeof(out))
		return -1;
	for (i = 0; i < len; i++)
		out[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
	while (got < len) {
		if (sent < len) {
			r = send(self->sock, out + sent, len - sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (r > 0) {
				sent += r;
			} else if (errno != EAGAIN) {
				snprintf(self->why, sizeof(self->why),
					 "send: %s", strerror(errno));
				return -1;
			}
		}
		r = vs_pump(self, 20);
		if (r < 0)
			return -1;
		idle = r ? 0 : idle + 1;
		r = recv(self->sock, in + got, len - got, MSG_DONTWAIT);
		if (r > 0) {
			got += r;
			idle = 0;
		} else if (r == 0 || errno != EAGAIN) {
			snprintf(self->why, sizeof(self->why), "recv: %s",
				 r ? strerror(errno) : "closed");
			return -1;
		}
		if (idle > 250) {
			snprintf(self->why, sizeof(self->why),
				 "%zu of %zu bytes sent, %zu back, for 5 s nothing",
				 sent, len, got);
			return -1;
		}
	}
	if (memcmp(in, out, len)) {
		for (i = 0; in[i] == out[i]; i++)
			;
		snprintf(self->why, sizeof(self->why),
			 "%zu bytes back, the first differing at %zu", len, i);
		return -1;
	}
	return 0;
}

/* Sizes that end inside a buffer, fill one, and span many. */
static const size_t vs_lens[] = { 1, 100, VS_BUF - VS_HDR, VS_BUF - VS_HDR + 1,
				  20000, 1 << 16, 1 << 17 };

/*
 * Until the device has nothing more for the guest (the host's credit
 * updates come when it reads): the rings are still while the test
 * changes their memory.
 */
static int vs_quiesce(FIXTURE_DATA(vsock) *self)
{
	int r, i;

	for (i = 0; i < 50; i++) {
		r = vs_pump(self, 100);
		if (r <= 0)
			return r;
	}
	return -1;
}

static void vs_round(struct __test_metadata *_metadata,
		     FIXTURE_DATA(vsock) *self, const char *after)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(vs_lens); i++)
		ASSERT_EQ(0, vs_echo(self, vs_lens[i], i))
			TH_LOG("after %s, %zu bytes: %s", after, vs_lens[i],
			       self->why);
}

/* KiB of the area mapped by huge pages, from smaps; -1 if not found. */
static long vs_huge_kib(FIXTURE_DATA(vsock) *self)
{
	char line[256];
	unsigned long lo, hi, a = (uintptr_t)self->area;
	bool in = false;
	long kib = -1;
	FILE *f = fopen("/proc/self/smaps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = lo <= a && a < hi;
		else if (in && sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
			break;
	}
	if (f)
		fclose(f);
	return kib;
}

/* Every page of the area to the other NUMA node: pages there, or -errno. */
static long vs_move_pages(FIXTURE_DATA(vsock) *self)
{
	enum { N = VS_AREA / VS_PAGE };
	static void *pages[N];
	static int nodes[N], status[N];
	long moved = 0, i;

	for (i = 0; i < N; i++)
		pages[i] = self->area + i * VS_PAGE;
	if (syscall(SYS_move_pages, 0, N, pages, NULL, status, 0))
		return -errno;
	for (i = 0; i < N; i++)
		nodes[i] = status[i] == 0;
	if (syscall(SYS_move_pages, 0, N, pages, nodes, status, 2 /* MPOL_MF_MOVE */) < 0)
		return -errno;
	/*
	 * Where each page is now: the status of a huge page's second page
	 * says -EBUSY, its folio taken by the first, though it moved.
	 */
	if (syscall(SYS_move_pages, 0, N, pages, NULL, status, 0))
		return -errno;
	for (i = 0; i < N; i++)
		moved += status[i] == nodes[i];
	return moved;
}

#define VS_KSM_PAGES (VS_RX_OFF / VS_PAGE)

/*
 * KSM merges the pages of the rings that hold something (the others would
 * merge with any page of zeroes) with copies of them in a mapping of their
 * own, while the queues are quiet; the merged pages stay merged until the
 * device or the driver writes them.  Returns how many were merged, -1 if
 * ksmd could not be run; *np the pages tried, *ms the time it took.
 */
static int vs_ksm_merge(FIXTURE_DATA(vsock) *self, int *np, int *ms)
{
	static const char zero[VS_PAGE];
	char *pages[VS_KSM_PAGES], *twins[VS_KSM_PAGES];
	char *twin;
	int i, n;

	*np = 0;
	if (ksm_start(&self->ksm, self->why, sizeof(self->why)))
		return -1;
	twin = vnet_map_anon(VS_RX_OFF);
	if (!twin) {
		snprintf(self->why, sizeof(self->why), "mmap: %s",
			 strerror(errno));
		return -1;
	}
	for (i = 0; i < (int)VS_KSM_PAGES; i++) {
		char *p = (char *)self->area + (size_t)i * VS_PAGE;

		if (!memcmp(p, zero, VS_PAGE))
			continue;
		pages[*np] = p;
		twins[*np] = twin + (size_t)i * VS_PAGE;
		memcpy(twins[*np], p, VS_PAGE);
		(*np)++;
	}
	n = -1;
	if (madvise(self->area, VS_RX_OFF, MADV_MERGEABLE) ||
	    madvise(twin, VS_RX_OFF, MADV_MERGEABLE)) {
		snprintf(self->why, sizeof(self->why), "MADV_MERGEABLE: %s",
			 strerror(errno));
	} else {
		n = ksm_run(pages, twins, *np, ms);
		if (n < 0)
			snprintf(self->why, sizeof(self->why),
				 "starting or stopping ksmd failed");
	}
	munmap(twin, VS_RX_OFF);
	return n;
}

/*
 * vhost-vsock's queues (mode off: only vhost-net engages the metadata
 * map) carry a stream byte-exact after each mm event the metamap tests
 * apply to vhost-net's rings, with the rings and buffers in one huge
 * page: none, the huge page split and collapsed again, every page moved
 * to the other NUMA node, a fork's copy-on-write (the parent writes the
 * rings, the device writes the used ring of the parent's copy), the
 * rings and buffers discarded (MADV_DONTNEED) with the rings' content
 * put back, the whole area unmapped and mapped again with it, and the
 * RX buffers missing, each filled by a userfaultfd handler when the
 * worker first writes it.
 */
TEST_F_TIMEOUT(vsock, stream_through_mm_events, 120)
{
	size_t len = 8 * VS_PAGE * 2;	/* both queues' rings */
	struct uffd_srv u = { .fd = -1, .stop = -1 };
	uint8_t *save = malloc(len);
	int pipefd[2], status;
	int merged, np, ms = 0;
	long huge, moved;
	pid_t pid;

	ASSERT_NE(NULL, save);
	ASSERT_EQ(0, vs_connect(self)) TH_LOG("%s", self->why);
	vs_round(_metadata, self, "connecting");

	huge = vs_huge_kib(self);
	EXPECT_EQ(2048, huge) TH_LOG("the area is not one huge page (%ld KiB)", huge);
	/* Split by changing one page's protection, then back and collapse. */
	ASSERT_EQ(0, mprotect(self->area + VS_AREA - VS_PAGE, VS_PAGE, PROT_READ));
	ASSERT_EQ(0, mprotect(self->area + VS_AREA - VS_PAGE, VS_PAGE,
			      PROT_READ | PROT_WRITE));
	huge = vs_huge_kib(self);
	EXPECT_EQ(0, huge) TH_LOG("not split: %ld KiB huge", huge);
	vs_round(_metadata, self, "a huge page split");
	ASSERT_EQ(0, madvise(self->area, VS_AREA, 25 /* MADV_COLLAPSE */))
		TH_LOG("MADV_COLLAPSE: %s", strerror(errno));
	EXPECT_EQ(2048, vs_huge_kib(self));
	vs_round(_metadata, self, "a collapse");

	ASSERT_EQ(0, access("/sys/devices/system/node/node1", F_OK))
		TH_LOG("one NUMA node: the guest boots with numa=fake=2");
	moved = vs_move_pages(self);
	EXPECT_EQ((long)(VS_AREA / VS_PAGE), moved)
		TH_LOG("move_pages: %ld", moved);
	vs_round(_metadata, self, "migration to the other node");

	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char c;

		close(pipefd[1]);
		_exit(read(pipefd[0], &c, 1) == 0 ? 0 : 1);
	}
	close(pipefd[0]);
	vs_round(_metadata, self, "fork");
	close(pipefd[1]);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	vs_round(_metadata, self, "the child's exit");

	ASSERT_EQ(0, vs_quiesce(self)) TH_LOG("%s", self->why);
	merged = vs_ksm_merge(self, &np, &ms);
	ASSERT_LE(1, np) TH_LOG("no ring page to merge: %s", self->why);
	EXPECT_EQ(np, merged) TH_LOG("%s", self->why);
	TH_LOG("KSM: %d of %d ring pages merged with copies in %d ms", merged,
	       np, ms);
	vs_round(_metadata, self, "a KSM merge of the rings");

	ASSERT_EQ(0, vs_quiesce(self)) TH_LOG("%s", self->why);
	memcpy(save, self->area, len);
	ASSERT_EQ(0, madvise(self->area, VS_AREA, MADV_DONTNEED));
	memcpy(self->area, save, len);
	vs_round(_metadata, self, "MADV_DONTNEED");

	ASSERT_EQ(0, vs_quiesce(self)) TH_LOG("%s", self->why);
	memcpy(save, self->area, len);
	ASSERT_EQ(self->area, mmap(self->area, VS_AREA, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0));
	memcpy(self->area, save, len);
	vs_round(_metadata, self, "munmap and mmap");

	/* The RX buffers missing, each filled by userfaultfd as vhost writes it. */
	ASSERT_EQ(0, vs_quiesce(self)) TH_LOG("%s", self->why);
	ASSERT_EQ(0, uffd_start(&u, 0, self->area + VS_RX_OFF,
				VS_RING * VS_BUF, self->why))
		TH_LOG("%s", self->why);
	ASSERT_EQ(0, uffd_register(&u, self->area + VS_RX_OFF,
				   VS_RING * VS_BUF,
				   UFFDIO_REGISTER_MODE_MISSING));
	ASSERT_EQ(0, madvise(self->area + VS_RX_OFF, VS_RING * VS_BUF,
			     MADV_DONTNEED));
	vs_round(_metadata, self, "userfaultfd");
	TH_LOG("userfaultfd: %u faults answered, %u of them vhost's, %u errors",
	       uffd_count(&u.missing), uffd_count(&u.other),
	       uffd_count(&u.errors));
	EXPECT_LE(1, uffd_count(&u.other));
	EXPECT_EQ(0, uffd_count(&u.errors));
	uffd_stop(&u);

	TH_LOG("CID %llu: %llu packets received, %llu sent, %u bytes echoed",
	       (unsigned long long)self->cid,
	       (unsigned long long)self->rx_pkts,
	       (unsigned long long)self->tx_pkts, self->fwd_cnt);
	free(save);
}

TEST_HARNESS_MAIN
