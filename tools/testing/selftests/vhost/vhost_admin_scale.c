// SPDX-License-Identifier: GPL-2.0
/*
 * The vhost admin plane under load: no lock is held across devices, so a
 * device whose worker is stalled (here on a userfaultfd page, holding its
 * queue's mutex) holds up nothing but itself, and a dev-set that has to
 * wait for that worker ends on SIGKILL; dumps of hundreds of devices,
 * which take several netlink messages, list every device that exists for
 * the whole dump exactly once, with all its queues, while other devices
 * come and go; hundreds of devices with zero-copy off cost no memory for
 * zero-copy's bookkeeping, which a device gets when zero-copy is turned
 * on, even mid-traffic.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_tun.h>
#include <linux/userfaultfd.h>
#include <linux/vhost.h>
#include <net/if.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "vhost_admin_lib.h"
#include "vhost_net_lib.h"

#define PAGE 4096UL

/*
 * The longest one operation on another device, or a lock-free one on the
 * stalled device, may take while a device is stalled for STALL_MS.  Under
 * TCG with a debug kernel, on a loaded host, the slowest (close: an RCU
 * grace period) took up to ~400 ms, setting up a whole device with its TAP
 * ~300 ms; the netlink operations a few ms.  One that waited for the
 * stalled worker would end only when the page comes, STALL_TAIL_MS or more
 * later.
 */
#define STALL_MS 3000
#define STALL_BOUND_MS 600
#define STALL_BOUND_SETUP_MS 1500
#define STALL_TAIL_MS 2500

FIXTURE(scale) {
	struct ynl_sock *ys;
	int uffd;
	struct vnet s;		/* the stalled device */
	bool s_open;
};

FIXTURE_SETUP(scale)
{
	self->uffd = -1;
	self->s_open = false;
	self->ys = adm_open();
	/* The family is the feature under test: without it, a failure. */
	ASSERT_NE(NULL, self->ys)
		TH_LOG("no vhost generic netlink family (the vhost_admin module)");
}

FIXTURE_TEARDOWN(scale)
{
	/* First: a worker waiting on the page is let go (as if unregistered). */
	if (self->uffd >= 0)
		close(self->uffd);
	if (self->s_open)
		vnet_close(&self->s);
	if (self->ys)
		ynl_sock_destroy(self->ys);
}

/* The slowest run of each kind of operation. */
struct lat {
	const char *what;
	double max_ms;
	int runs;
	int bound_ms;
};

enum {
	OP_OPEN, OP_OWNER, OP_CLOSE, OP_DEV_DUMP, OP_QUEUE_DUMP, OP_STATS_DUMP,
	OP_STATS_QUEUE_DUMP, OP_GET_STALLED, OP_QUEUE_GET_STALLED,
	OP_SET_OTHER, OP_SET_STALLED, OP_SYSFS_STALLED, OP_TAP_DEVICE,
	OP_MAX,
};

static struct lat lat[OP_MAX] = {
	[OP_OPEN] = { "open /dev/vhost-net" },
	[OP_OWNER] = { "VHOST_SET_OWNER" },
	[OP_CLOSE] = { "close" },
	[OP_DEV_DUMP] = { "dev-get dump" },
	[OP_QUEUE_DUMP] = { "queue-get dump" },
	[OP_STATS_DUMP] = { "stats-get dump" },
	[OP_STATS_QUEUE_DUMP] = { "stats-get dump, queues" },
	[OP_GET_STALLED] = { "dev-get of the stalled device" },
	[OP_QUEUE_GET_STALLED] = { "queue-get of its stalled queue" },
	[OP_SET_OTHER] = { "dev-set of another device" },
	[OP_SET_STALLED] = { "dev-set of the stalled device, lock-free tunables" },
	[OP_SYSFS_STALLED] = { "sysfs statistics of the stalled device" },
	[OP_TAP_DEVICE] = { "a device with rings and a TAP, set up and closed",
			    .bound_ms = STALL_BOUND_SETUP_MS },
};

static double t_start;

static void lat_begin(void)
{
	t_start = now_ms();
}

static void lat_end(int op)
{
	double t = now_ms() - t_start;

	if (t > lat[op].max_ms)
		lat[op].max_ms = t;
	lat[op].runs++;
}

#define TIMED(op, expr) ({ typeof(expr) __r; lat_begin(); __r = (expr); \
			   lat_end(op); __r; })

static bool queue_dump_has(struct ynl_sock *ys, uint32_t id)
{
	struct vhost_queue_get_req_dump *r = vhost_queue_get_req_dump_alloc();
	struct vhost_queue_get_list *l = vhost_queue_get_dump(ys, r);
	int n = 0;

	vhost_queue_get_req_dump_free(r);
	if (!l)
		return false;
	ynl_dump_foreach(l, q)
		n += q->dev_id == id;
	vhost_queue_get_list_free(l);
	return n == 2;
}

static bool stats_dump_has(struct ynl_sock *ys, uint32_t id, bool per_queue)
{
	static struct adm_stats st[64];
	int n = adm_stats(ys, 0, true, per_queue, st, 64), i, found = 0;

	for (i = 0; i < n; i++)
		found += st[i].dev_id == id;
	return found == (per_queue ? 2 : 1);
}

static bool queue_get_ok(struct ynl_sock *ys, uint32_t id, uint32_t index)
{
	struct vhost_queue_get_req *r = vhost_queue_get_req_alloc();
	struct vhost_queue_get_rsp *q;

	vhost_queue_get_req_set_dev_id(r, id);
	vhost_queue_get_req_set_index(r, index);
	q = vhost_queue_get(ys, r);
	vhost_queue_get_req_free(r);
	if (!q)
		return false;
	vhost_queue_get_rsp_free(q);
	return true;
}

static bool sysfs_ok(uint32_t id)
{
	char name[IFNAMSIZ];
	uint64_t v;

	snprintf(name, sizeof(name), "vhost%u", id);
	return !sysfs_u64(name, "statistics/tx_packets", &v) &&
	       !sysfs_u64(name, "queues/vq1/kicks", &v);
}

struct resolver {
	int uffd;
	uint8_t *page, *staged;
	double at;		/* when to put the page there */
	double done_at;
	int err;
};

/*
 * Put the page the worker waits for in place at r->at, whatever the test
 * is doing then: an operation that waits for the stalled worker ends then,
 * late, instead of never.
 */
static void *resolve(void *arg)
{
	struct resolver *r = arg;
	struct uffdio_copy copy = {
		.dst = (uintptr_t)r->page,
		.src = (uintptr_t)r->staged,
		.len = PAGE,
	};
	double wait = r->at - now_ms();

	if (wait > 0)
		usleep(wait * 1000);
	r->err = ioctl(r->uffd, UFFDIO_COPY, &copy) ? -errno : 0;
	r->done_at = now_ms();
	return NULL;
}

struct prober {
	int fd;
	bool done;		/* __atomic */
	int err;
};

/* A vring ioctl of the stalled device: needs the queue's mutex. */
static void *get_vring_base(void *arg)
{
	struct vhost_vring_state st = { .index = VNET_TX };
	struct prober *p = arg;

	p->err = ioctl(p->fd, VHOST_GET_VRING_BASE, &st) ? -errno : 0;
	__atomic_store_n(&p->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/* The stalled device of stall_device(). */
struct stall {
	uint8_t *page;		/* where its TX buffer is */
	uint8_t *staged;	/* what the page will hold */
	int64_t id;
	double at;		/* when the worker faulted */
};

/*
 * self->s, a device (zero-copy off) whose TX worker faults on a
 * userfaultfd page of a guest buffer (a header and a 60-byte frame, seq
 * 1) and waits there, holding the TX queue's mutex, until the page is put
 * in place (resolve()).  Its wire socket is kept if wire.
 */
static void stall_device(struct __test_metadata *_metadata,
			 FIXTURE_DATA(scale) *self, bool wire, struct stall *st)
{
	struct vnet_opts o = { .ring_num = 64, .event_idx = true };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct pollfd pfd = { .events = POLLIN };
	struct uffd_msg msg;
	int fd, err;

	/* CONFIG_USERFAULTFD is in the selftests' config */
	fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	err = fd < 0 ? errno : 0;
	ASSERT_LE(0, fd) TH_LOG("userfaultfd: %s", strerror(err));
	self->uffd = fd;
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_API, &api));
	st->page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, st->page);
	st->staged = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, st->staged);
	reg.range.start = (uintptr_t)st->page;
	reg.range.len = PAGE;
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_REGISTER, &reg));

	fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	st->id = vhost_fd_id(fd);
	ASSERT_LE(0, st->id);
	/* whatever the module's default (before an owner, as the host may) */
	ASSERT_EQ(0, adm_set(self->ys, st->id, ADM_TUN(-1, 0, -1, -1)));
	ASSERT_EQ(0, vnet_open_fd(&self->s, &o, fd));
	self->s_open = true;
	if (!wire) {
		close(self->s.sock_fd);
		self->s.sock_fd = -1;
	}
	memset(st->staged, 0, self->s.hdr_len);
	frame_fill(st->staged + self->s.hdr_len, 60, NULL, 1);

	/* A TX buffer (header and frame) in the page: the worker faults. */
	ASSERT_EQ(0, vnet_tx_add_buf(&self->s, st->page, self->s.hdr_len + 60));
	vnet_kick(&self->s, VNET_TX);
	pfd.fd = self->uffd;
	ASSERT_EQ(1, poll(&pfd, 1, 10000)) TH_LOG("the worker did not fault");
	ASSERT_EQ((ssize_t)sizeof(msg), read(self->uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	ASSERT_EQ((uintptr_t)st->page, msg.arg.pagefault.address & ~(PAGE - 1));
	st->at = now_ms();
}

/*
 * One device's TX worker faults on a userfaultfd page of a guest buffer
 * and waits there, holding the TX queue's mutex, for seconds.  Meanwhile
 * devices are opened, owned and closed, everything is dumped (the stalled
 * device too), other devices are changed, and the stalled one's own
 * tunables that need none of its locks (busy polling, zcopy-min-len),
 * each within STALL_BOUND_MS.  Only what needs that queue's mutex (a
 * vring ioctl of the stalled device) waits, and completes once the page
 * is there.  (A dev-set that switches the map or zero-copy waits too:
 * dev_set_waiting_for_a_stalled_worker_ends_on_sigkill.)
 */
TEST_F_TIMEOUT(scale, stalled_device_holds_up_no_other, 180)
{
	struct vnet_opts o = { .ring_num = 64, .event_idx = true };
	struct adm_stats dev, rxq, txq;
	struct resolver res = {};
	struct prober probe = {};
	struct vhost_dev_get_rsp *d;
	pthread_t th, res_th;
	struct stall st;
	struct vnet other;
	double stalled;
	int64_t sid, oid, id;
	int fd, i, rounds;

	ASSERT_EQ(0, vnet_open(&other, &o));
	oid = vhost_fd_id(other.vhost_fd);
	ASSERT_LE(0, oid);
	stall_device(_metadata, self, false, &st);
	sid = st.id;
	probe.fd = self->s.vhost_fd;
	stalled = st.at;
	res.uffd = self->uffd;
	res.page = st.page;
	res.staged = st.staged;
	res.at = stalled + STALL_MS + STALL_TAIL_MS;
	ASSERT_EQ(0, pthread_create(&res_th, NULL, resolve, &res));

	for (rounds = 0; now_ms() - stalled < STALL_MS; rounds++) {
		fd = TIMED(OP_OPEN, open("/dev/vhost-net", O_RDWR));
		ASSERT_LE(0, fd);
		ASSERT_EQ(0, TIMED(OP_OWNER, ioctl(fd, VHOST_SET_OWNER, NULL)));
		id = vhost_fd_id(fd);
		ASSERT_LE(0, id);
		ASSERT_EQ(0, TIMED(OP_CLOSE, close(fd)));

		ASSERT_TRUE(TIMED(OP_DEV_DUMP, adm_dump_has(self->ys, sid)));
		ASSERT_TRUE(TIMED(OP_QUEUE_DUMP, queue_dump_has(self->ys, sid)));
		ASSERT_TRUE(TIMED(OP_STATS_DUMP,
				  stats_dump_has(self->ys, sid, false)));
		ASSERT_TRUE(TIMED(OP_STATS_QUEUE_DUMP,
				  stats_dump_has(self->ys, sid, true)));
		d = TIMED(OP_GET_STALLED, adm_get(self->ys, sid));
		ASSERT_NE(NULL, d);
		vhost_dev_get_rsp_free(d);
		ASSERT_TRUE(TIMED(OP_QUEUE_GET_STALLED,
				  queue_get_ok(self->ys, sid, VNET_TX)));
		ASSERT_EQ(0, TIMED(OP_SET_OTHER,
				   adm_set(self->ys, oid,
					   ADM_TUN(rounds & 7, rounds & 1,
						   300 + rounds, -1))));
		ASSERT_EQ(0, TIMED(OP_SET_STALLED,
				   adm_set(self->ys, sid,
					   ADM_TUN(rounds & 7, -1,
						   300 + rounds, -1))));
		ASSERT_TRUE(TIMED(OP_SYSFS_STALLED, sysfs_ok(sid)));
		if (rounds % 4 == 0) {
			struct vnet t;

			lat_begin();
			ASSERT_EQ(0, vnet_open(&t, &o));
			vnet_close(&t);
			lat_end(OP_TAP_DEVICE);
		}
	}
	/* still stalled: nothing was used */
	EXPECT_FALSE(vq_has_used(&self->s.vq[VNET_TX]));
	TH_LOG("%d rounds in %.0f ms of stall", rounds, now_ms() - stalled);
	for (i = 0; i < OP_MAX; i++) {
		int bound = lat[i].bound_ms ?: STALL_BOUND_MS;

		TH_LOG("%-50s max %6.1f ms of %d", lat[i].what, lat[i].max_ms,
		       lat[i].runs);
		EXPECT_LT(lat[i].max_ms, bound) TH_LOG("%s", lat[i].what);
		EXPECT_LT(0, lat[i].runs);
	}

	/*
	 * What needs the queue's mutex waits for the worker, which goes on
	 * once the page is there.
	 */
	ASSERT_EQ(0, pthread_create(&th, NULL, get_vring_base, &probe));
	usleep(STALL_TAIL_MS * 1000 / 2);
	if (now_ms() < res.at)
		EXPECT_FALSE(__atomic_load_n(&probe.done, __ATOMIC_ACQUIRE))
			TH_LOG("the stalled queue's mutex was free");
	pthread_join(res_th, NULL);
	ASSERT_EQ(0, res.err);
	pthread_join(th, NULL);
	TH_LOG("stalled %.0f ms; the vring ioctl ended %.0f ms after the page came",
	       res.done_at - stalled, now_ms() - res.done_at);
	EXPECT_TRUE(probe.done);
	EXPECT_EQ(0, probe.err);
	EXPECT_EQ(0, vnet_tx_drain(&self->s, 5000));
	ASSERT_EQ(0, adm_stats_dev(self->ys, sid, &dev, &rxq, &txq));
	EXPECT_EQ(1, dev.v[VHOST_A_STATS_TX_PACKETS]);
	vnet_close(&other);
	munmap(st.staged, PAGE);
}

/* How long a dev-set that waits for the stalled worker is watched waiting. */
#define BLOCKED_MS 500
/* How soon a dev-set killed while it waits must be gone. */
#define KILLED_MS 1000

/*
 * dev-set t of device id (or, given a label, of the devices labelled so:
 * the map's mode of t only) in a child, which writes a byte to *ready
 * before it sends the request and the result (0 or -errno) to *done
 * after.  No file of the parent's stays open in the child: the parent's
 * close() of a device is its last.
 */
static pid_t set_in_child(uint32_t id, const char *label, struct adm_tun t,
			  int *ready, int *done)
{
	int r[2], d[2];
	pid_t pid;

	if (pipe(r) || pipe(d))
		return -1;
	pid = fork();
	if (pid) {
		close(r[1]);
		close(d[1]);
		*ready = r[0];
		*done = d[0];
		return pid;
	}
	{
		struct vhost_dev_set_req *req;
		struct ynl_sock *ys;
		int fd, err;

		for (fd = 3; fd < 1024; fd++)
			if (fd != r[1] && fd != d[1])
				close(fd);
		ys = adm_open();
		CHILD_CHECK(ys);
		CHILD_CHECK(write(r[1], "", 1) == 1);
		if (label) {
			req = vhost_dev_set_req_alloc();
			CHILD_CHECK(req);
			vhost_dev_set_req_set_match_label(req, label);
			vhost_dev_set_req_set_metamap(req, t.metamap);
			err = vhost_dev_set(ys, req) ? adm_err(ys) ?: -EIO : 0;
		} else {
			err = adm_set(ys, id, t);
		}
		CHILD_CHECK(write(d[1], &err, sizeof(err)) == sizeof(err));
		_exit(0);
	}
}

/* Whether fd has something to read within ms. */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

/* The state letter of process pid, as /proc/PID/stat has it, or '?'. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

/*
 * Reap child pid within ms; its wait status, or -1 if it is still there
 * (then killed and reaped all the same).
 */
static int reap_within(pid_t pid, int ms)
{
	double end = now_ms() + ms;
	int status;

	do {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(2000);
	} while (now_ms() < end);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/*
 * A dev-set that switches the metadata map, or turns zero-copy on, needs
 * the queues of the device (its mutexes, which the datapath holds across
 * each batch): on a device whose TX worker is stalled on a userfaultfd
 * page, holding its queue's mutex, it waits, in the kernel (state D:
 * TASK_KILLABLE); SIGKILL ends the wait at once, and the request changes
 * nothing.  Meanwhile another device is
 * changed and the stalled one read within STALL_BOUND_MS.  Once the page
 * is there, the device sends the frame it held, takes both changes at
 * once and carries traffic, byte-exact.
 */
TEST_F_TIMEOUT(scale, dev_set_waiting_for_a_stalled_worker_ends_on_sigkill, 90)
{
	struct vnet_opts o = { .ring_num = 64, .event_idx = true };
	struct uffdio_copy copy = { .len = PAGE };
	struct adm_stats dev, rxq, txq;
	struct vhost_dev_get_rsp *d;
	char why[VNET_WHY_LEN];
	uint8_t frame[1514];
	int64_t oid, map0, other;
	struct stall st;
	struct vnet n2;
	int kind;

	ASSERT_EQ(0, vnet_open(&n2, &o));
	oid = vhost_fd_id(n2.vhost_fd);
	ASSERT_LE(0, oid);
	stall_device(_metadata, self, true, &st);
	d = adm_get(self->ys, st.id);
	ASSERT_NE(NULL, d);
	map0 = d->metamap;
	ASSERT_EQ(0, d->zerocopy);
	vhost_dev_get_rsp_free(d);
	other = map0 == METAMAP_OFF ? METAMAP_MAP : METAMAP_OFF;

	for (kind = 0; kind < 2; kind++) {
		struct adm_tun t = kind ? ADM_TUN(-1, 1, -1, -1) :
					  ADM_TUN(-1, -1, -1, other);
		const char *what = kind ? "zerocopy on" : "metamap switch";
		int ready, done, status, err;
		double t0;
		pid_t pid;

		pid = set_in_child(st.id, NULL, t, &ready, &done);
		ASSERT_LT(0, pid);
		ASSERT_TRUE(readable(ready, 5000)) TH_LOG("%s: no client", what);
		/* it waits */
		EXPECT_FALSE(readable(done, BLOCKED_MS))
			TH_LOG("%s: dev-set ended while the worker was stalled",
			       what);
		EXPECT_EQ(0, waitpid(pid, &status, WNOHANG));
		/* in the kernel, killably (TASK_KILLABLE reads as D) */
		EXPECT_EQ('D', proc_state(pid)) TH_LOG("%s", what);
		/* and holds up no other device, nor a read of this one */
		t0 = now_ms();
		EXPECT_EQ(0, adm_set(self->ys, oid, ADM_TUN(kind, kind, -1, other)));
		d = adm_get(self->ys, st.id);
		EXPECT_NE(NULL, d);
		vhost_dev_get_rsp_free(d);
		EXPECT_LT(now_ms() - t0, STALL_BOUND_MS)
			TH_LOG("%s: another device's dev-set and this one's dev-get took %.0f ms",
			       what, now_ms() - t0);
		/* until killed, at once */
		t0 = now_ms();
		ASSERT_EQ(0, kill(pid, SIGKILL));
		status = reap_within(pid, KILLED_MS);
		TH_LOG("%s: the waiting client was gone %.0f ms after SIGKILL",
		       what, now_ms() - t0);
		EXPECT_NE(-1, status) TH_LOG("%s: not gone within %d ms of SIGKILL",
					     what, KILLED_MS);
		EXPECT_TRUE(status != -1 && WIFSIGNALED(status) &&
			    WTERMSIG(status) == SIGKILL)
			TH_LOG("%s: wait status %#x", what, status);
		if (readable(done, 0) &&
		    read(done, &err, sizeof(err)) == sizeof(err))
			TH_LOG("%s: the client's dev-set returned %d", what, err);
		close(ready);
		close(done);
		/* changing nothing */
		d = adm_get(self->ys, st.id);
		ASSERT_NE(NULL, d);
		EXPECT_EQ(map0, d->metamap);
		EXPECT_EQ(0, d->zerocopy);
		vhost_dev_get_rsp_free(d);
	}
	EXPECT_FALSE(vq_has_used(&self->s.vq[VNET_TX]));

	/* the page comes: the frame goes, the device is itself again */
	copy.dst = (uintptr_t)st.page;
	copy.src = (uintptr_t)st.staged;
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_COPY, &copy));
	ASSERT_EQ(0, vnet_tx_drain(&self->s, 5000));
	ASSERT_EQ(60, wire_recv(&self->s, frame, sizeof(frame), 5000));
	EXPECT_EQ(0, memcmp(frame, st.staged + self->s.hdr_len, 60));
	ASSERT_EQ(0, adm_stats_dev(self->ys, st.id, &dev, &rxq, &txq));
	EXPECT_EQ(1, dev.v[VHOST_A_STATS_TX_PACKETS]);
	ASSERT_EQ(0, adm_set(self->ys, st.id, ADM_TUN(-1, 1, -1, other)));
	d = adm_get(self->ys, st.id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(other, d->metamap);
	EXPECT_EQ(1, d->zerocopy);
	vhost_dev_get_rsp_free(d);
	vnet_rx_fill(&self->s);
	EXPECT_EQ(0, vnet_check_mix(&self->s, 20, true, 2, why)) TH_LOG("%s", why);
	vnet_close(&n2);
	munmap(st.staged, PAGE);
}

/* dev-set of a label (ADM_TUN_NONE but the label): 0 or -errno. */
static int set_label(struct ynl_sock *ys, uint32_t id, const char *label)
{
	struct vhost_dev_set_req *req = vhost_dev_set_req_alloc();
	int r;

	vhost_dev_set_req_set_id(req, id);
	vhost_dev_set_req_set_label(req, label);
	r = vhost_dev_set(ys, req) ? adm_err(ys) ?: -EIO : 0;
	vhost_dev_set_req_free(req);
	return r;
}

struct vnet_closer {
	struct vnet *n;
	bool done;		/* __atomic */
};

static void *close_vnet(void *arg)
{
	struct vnet_closer *c = arg;

	vnet_close(c->n);
	__atomic_store_n(&c->done, true, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * A dev-set by label selects a device whose TX worker is stalled (holding
 * its queue's mutex) and another one, and waits for the stalled queue.
 * The other device's owner closes it meanwhile: the close() waits for no
 * one's request (it waited, uninterruptibly, until the request ended when
 * the request held a reference on every device it selected).  Once the
 * page is there, the request changes the device that is left, and
 * succeeds.
 */
TEST_F_TIMEOUT(scale, close_waits_for_no_other_devices_request, 90)
{
	struct vnet_opts o = { .ring_num = 64, .event_idx = true };
	struct uffdio_copy copy = { .len = PAGE };
	struct vhost_dev_get_rsp *d;
	struct vnet_closer cl = {};
	int ready, done, err, status;
	int64_t oid, map0, other;
	char label[32];
	struct stall st;
	struct vnet n2;
	pthread_t th;
	double t0;
	pid_t pid;

	ASSERT_EQ(0, vnet_open(&n2, &o));
	oid = vhost_fd_id(n2.vhost_fd);
	ASSERT_LE(0, oid);
	stall_device(_metadata, self, false, &st);
	d = adm_get(self->ys, st.id);
	ASSERT_NE(NULL, d);
	map0 = d->metamap;
	vhost_dev_get_rsp_free(d);
	other = map0 == METAMAP_OFF ? METAMAP_MAP : METAMAP_OFF;
	snprintf(label, sizeof(label), "cw-%d", getpid());
	ASSERT_EQ(0, set_label(self->ys, oid, label));
	ASSERT_EQ(0, set_label(self->ys, st.id, label));

	pid = set_in_child(0, label, ADM_TUN(-1, -1, -1, other), &ready, &done);
	ASSERT_LT(0, pid);
	ASSERT_TRUE(readable(ready, 5000));
	/* it waits for the stalled queue */
	EXPECT_FALSE(readable(done, BLOCKED_MS));
	/* the other device's close() does not */
	cl.n = &n2;
	t0 = now_ms();
	ASSERT_EQ(0, pthread_create(&th, NULL, close_vnet, &cl));
	while (!__atomic_load_n(&cl.done, __ATOMIC_ACQUIRE) &&
	       now_ms() - t0 < STALL_BOUND_MS)
		usleep(5000);
	TH_LOG("the other device's close() %s after %.0f ms",
	       cl.done ? "returned" : "still waited", now_ms() - t0);
	EXPECT_TRUE(__atomic_load_n(&cl.done, __ATOMIC_ACQUIRE))
		TH_LOG("close() waited for a request on another device");
	if (!__atomic_load_n(&cl.done, __ATOMIC_ACQUIRE)) {
		/* end the request, and with it the close() */
		kill(pid, SIGKILL);
		reap_within(pid, KILLED_MS);
		pthread_join(th, NULL);
		close(ready);
		close(done);
		return;
	}
	pthread_join(th, NULL);
	/* the page comes: the request changes the device that is left */
	copy.dst = (uintptr_t)st.page;
	copy.src = (uintptr_t)st.staged;
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_COPY, &copy));
	ASSERT_TRUE(readable(done, 5000)) TH_LOG("the request did not end");
	ASSERT_EQ((ssize_t)sizeof(err), read(done, &err, sizeof(err)));
	EXPECT_EQ(0, err);
	status = reap_within(pid, KILLED_MS);
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	close(ready);
	close(done);
	d = adm_get(self->ys, st.id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(other, d->metamap);
	vhost_dev_get_rsp_free(d);
	EXPECT_EQ(0, vnet_tx_drain(&self->s, 5000));
	munmap(st.staged, PAGE);
}

/* SUnreclaim + VmallocUsed of /proc/meminfo, in KiB, or -1. */
/*
 * Unreclaimable kernel memory (slab, including kmalloc's large pages, and
 * vmalloc) in KiB, or -1.  /proc/meminfo reads the global counters, which
 * lag each CPU's unfolded deltas by up to its stat threshold (tens of
 * pages on a small guest): a write to vm/stat_refresh folds them first, so
 * two readings differ by what was allocated between them, not by where the
 * per-CPU deltas stood (38.8 KiB a device measured for a 64 KiB
 * allocation in CI at c628d60 without it).
 */
static long kernel_kib(void)
{
	char line[128];
	int found = 0;
	long sum = 0, v;
	int rfd = open("/proc/sys/vm/stat_refresh", O_WRONLY | O_CLOEXEC);
	FILE *f;

	if (rfd < 0)
		return -1;
	if (write(rfd, "1", 1) != 1) {
		close(rfd);
		return -1;
	}
	close(rfd);
	f = fopen("/proc/meminfo", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SUnreclaim: %ld kB", &v) == 1 ||
		    sscanf(line, "VmallocUsed: %ld kB", &v) == 1) {
			sum += v;
			found++;
		}
	fclose(f);
	return found == 2 ? sum : -1;
}

/* A new queue of the multi-queue TAP name (made by the first): fd or -errno. */
static int tap_queue(char name[IFNAMSIZ])
{
	struct ifreq ifr = {
		.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE,
	};
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr)) {
		err = -errno;
		close(fd);
		return err;
	}
	memcpy(name, ifr.ifr_name, IFNAMSIZ);
	return fd;
}

#define BARE_NUM 64
#define BARE_MEM_TOP 0x7ffffffff000ULL	/* as vnet_setup(): all of it */

/*
 * What bare devices share: rings (2 pages a queue) and eventfds.  They
 * never carry a packet, so they may.
 */
struct bare {
	uint8_t *rings;
	int kick, call;
};

/*
 * A device set up as vnet_setup() does (owner, features, memory, rings,
 * backend), whose zerocopy the host set before its owner (and its map
 * off: nothing else is done for it as it goes); its backend is a queue of
 * a multi-queue TAP, as a guest's queue pairs have.  The fd, or -errno.
 */
static int bare_open(struct ynl_sock *ys, const struct bare *b, int tapq,
		     bool zc, int64_t *id)
{
	struct {
		struct vhost_memory m;
		struct vhost_memory_region r;
	} mem = { .m.nregions = 1, .r.memory_size = BARE_MEM_TOP };
	uint64_t features = 1ULL << VIRTIO_F_VERSION_1, have;
	int fd, q, err;

	fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	*id = vhost_fd_id(fd);
	err = *id < 0 ? (int)*id :
	      adm_set(ys, *id, ADM_TUN(-1, zc, -1, METAMAP_OFF));
#define BARE_IOCTL(req, arg) \
	(err = err ?: ioctl(fd, req, arg) ? -errno : 0)
	BARE_IOCTL(VHOST_SET_OWNER, NULL);
	BARE_IOCTL(VHOST_GET_FEATURES, &have);
	BARE_IOCTL(VHOST_SET_FEATURES, &features);
	BARE_IOCTL(VHOST_SET_MEM_TABLE, &mem);
	for (q = 0; q < 2; q++) {
		uint8_t *r = b->rings + q * 2 * PAGE;
		struct vhost_vring_state num = { .index = q, .num = BARE_NUM };
		struct vhost_vring_state base = { .index = q };
		struct vhost_vring_addr addr = {
			.index = q,
			.desc_user_addr = (uintptr_t)r,
			.avail_user_addr = (uintptr_t)r + 16 * BARE_NUM,
			.used_user_addr = (uintptr_t)r + PAGE,
		};
		struct vhost_vring_file kick = { .index = q, .fd = b->kick };
		struct vhost_vring_file call = { .index = q, .fd = b->call };
		struct vhost_vring_file be = { .index = q, .fd = tapq };

		BARE_IOCTL(VHOST_SET_VRING_NUM, &num);
		BARE_IOCTL(VHOST_SET_VRING_BASE, &base);
		BARE_IOCTL(VHOST_SET_VRING_ADDR, &addr);
		BARE_IOCTL(VHOST_SET_VRING_KICK, &kick);
		BARE_IOCTL(VHOST_SET_VRING_CALL, &call);
		BARE_IOCTL(VHOST_NET_SET_BACKEND, &be);
	}
#undef BARE_IOCTL
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

struct closer {
	int *fds;
	int n, step, first;
};

static void *close_some(void *arg)
{
	struct closer *c = arg;

	for (int i = c->first; i < c->n; i += c->step)
		close(c->fds[i]);
	return NULL;
}

/*
 * Close n fds from 8 threads: each close of a device or a TAP queue waits
 * for an RCU grace period, which concurrent closes share.
 */
static void close_all(int *fds, int n)
{
	struct closer c[8];
	pthread_t th[8];
	bool started[8];
	int i;

	for (i = 0; i < 8; i++) {
		c[i] = (struct closer){ fds, n, 8, i };
		started[i] = !pthread_create(&th[i], NULL, close_some, &c[i]);
		if (!started[i])
			close_some(&c[i]);
	}
	for (i = 0; i < 8; i++)
		if (started[i])
			pthread_join(th[i], NULL);
}

#define NZC 200		/* devices with zero-copy off, and as many on */
#define ZC_BLOCK 10	/* opened ZC_BLOCK at a time, off and on by turns */
/*
 * Per device, what zero-copy on costs more: its array of UIO_MAXIOV
 * ubuf_info is 48 KiB, which kmalloc takes as an order-4 page (64 KiB).
 * Were it allocated for every device, the two kinds would cost the same:
 * the test asks for half of it, as far from either answer as it can be
 * (62.8 to 76.8 KiB measured; slab pages, taken whole as a block needs
 * them, are the rest of the spread).
 */
#define UBUFS_KIB 64
/*
 * The medians still move with what the guest did before (one CI run in
 * dozens measured 18.6 KiB, the same guest then 38.8 and 57.0): measured
 * again, up to ZC_ATTEMPTS times, each attempt logged.  A kernel that
 * allocates the array with zero-copy off measures about 0 in every one.
 */
#define ZC_ATTEMPTS 3

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

static long median_long(long *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_long);
	return n & 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Zero-copy's bookkeeping (an array of UIO_MAXIOV ubuf_info, 48 KiB) is
 * allocated for a device only when zero-copy is on: 200 devices owned,
 * with rings and a backend, with zero-copy off cost at least half of
 * UBUFS_KIB each less unreclaimable kernel memory (slab, vmalloc) than 200
 * with it on.  The two kinds are opened in alternate blocks of ZC_BLOCK, and the
 * blocks' medians are compared: what else the kernel allocates or frees
 * meanwhile (an RCU batch, a TAP or worker an earlier test left to free,
 * a deferred uevent) lands in a few blocks of either kind and moves no
 * median, where it moved a sum by up to 30 KiB a device (CI at b6ca2a5).
 */
TEST_F_TIMEOUT(scale, zerocopy_off_costs_no_ubufs_for_200_devices, 240)
{
	static int fds[2 * NZC + 2], ids[2 * NZC];
	char tap[2][IFNAMSIZ] = { "vhzc%d", "vhzc%d" };
	static long blk_kib[2][NZC / ZC_BLOCK];
	long kib[2] = { 0, 0 }, med[2], before, after;
	int i, k, blk, nfd = 0, bad = 0, attempt;
	struct rlimit rl;
	struct bare b;
	double t0;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_max < 8 * NZC)
		rl.rlim_max = 8 * NZC;
	rl.rlim_cur = rl.rlim_max;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));
	b.rings = vnet_map_anon(4 * PAGE);
	ASSERT_NE(NULL, b.rings);
	b.kick = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	b.call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_LE(0, b.kick);
	ASSERT_LE(0, b.call);
	/* a TAP for each kind, made before counting */
	for (k = 0; k < 2; k++) {
		fds[nfd] = tap_queue(tap[k]);
		ASSERT_LE(0, fds[nfd]) TH_LOG("TAP: %s", strerror(-fds[nfd]));
		nfd++;
	}

	for (attempt = 1; attempt <= ZC_ATTEMPTS; attempt++) {
		nfd = 2;
		kib[0] = 0;
		kib[1] = 0;
		t0 = now_ms();
		for (blk = 0; blk < 2 * NZC / ZC_BLOCK; blk++) {
			bool zc = blk & 1;
			int q[ZC_BLOCK];

			/* its TAP queues first: the same for both kinds */
			for (i = 0; i < ZC_BLOCK; i++) {
				q[i] = tap_queue(tap[zc]);
				ASSERT_LE(0, q[i]) TH_LOG("TAP queue: %s", strerror(-q[i]));
				fds[nfd++] = q[i];
			}
			before = kernel_kib();
			ASSERT_LE(0, before);
			for (i = 0; i < ZC_BLOCK; i++) {
				int64_t id = -1;
				int fd = bare_open(self->ys, &b, q[i], zc, &id);

				ASSERT_LE(0, fd) TH_LOG("device %d: %s", nfd,
							strerror(-fd));
				fds[nfd++] = fd;
				ids[blk * ZC_BLOCK + i] = id;
			}
			after = kernel_kib();
			ASSERT_LE(0, after);
			kib[zc] += after - before;
			blk_kib[zc][blk / 2] = after - before;
		}
		TH_LOG("%d devices opened in %.0f ms", 2 * NZC, now_ms() - t0);
		/* each has the zerocopy it was given */
		for (i = 0; i < 2 * NZC; i++) {
			struct vhost_dev_get_rsp *d = adm_get(self->ys, ids[i]);

			bad += !d || d->zerocopy != (uint32_t)((i / ZC_BLOCK) & 1);
			if (d)
				vhost_dev_get_rsp_free(d);
		}
		EXPECT_EQ(0, bad);
		med[0] = median_long(blk_kib[0], NZC / ZC_BLOCK);
		med[1] = median_long(blk_kib[1], NZC / ZC_BLOCK);
		TH_LOG("unreclaimable kernel memory per device: %.1f KiB with zero-copy off, %.1f KiB on (means %.1f, %.1f)",
		       (double)med[0] / ZC_BLOCK, (double)med[1] / ZC_BLOCK,
		       (double)kib[0] / NZC, (double)kib[1] / NZC);
		if (med[1] - med[0] >= (long)UBUFS_KIB / 2 * ZC_BLOCK ||
		    attempt == ZC_ATTEMPTS)
			break;
		TH_LOG("attempt %d of %d: the difference under half of %d KiB, again",
		       attempt, ZC_ATTEMPTS, UBUFS_KIB);
		close_all(fds + 2, nfd - 2);
	}
	EXPECT_GE(med[1] - med[0], (long)UBUFS_KIB / 2 * ZC_BLOCK)
		TH_LOG("zero-copy on costs %.1f KiB a device more, not about %d",
		       (double)(med[1] - med[0]) / ZC_BLOCK, UBUFS_KIB);
	t0 = now_ms();
	close_all(fds, nfd);
	TH_LOG("closed in %.0f ms", now_ms() - t0);
	close(b.kick);
	close(b.call);
	munmap(b.rings, 4 * PAGE);
}

/* The TX queue's counters once no zero-copy buffer is in flight. */
static int txq_settled(struct ynl_sock *ys, uint32_t id, struct adm_stats *txq)
{
	struct adm_stats dev, rxq;

	for (int i = 0; i < 100; i++) {
		int r = adm_stats_dev(ys, id, &dev, &rxq, txq);

		if (r)
			return r;
		if (!txq->v[VHOST_A_STATS_ZCOPY_PENDING])
			return 0;
		usleep(20000);
	}
	return -ETIMEDOUT;
}

#define D(c1, c0, f) ((c1).v[VHOST_A_STATS_##f] - (c0).v[VHOST_A_STATS_##f])

/* Turns zero-copy of device id on once it has sent after TX packets. */
struct switcher {
	uint32_t id;
	uint64_t after;
	uint64_t at;		/* tx-packets when it asked */
	int err;
	double ms;		/* how long the dev-set took */
};

static void *switch_zerocopy_on(void *arg)
{
	struct switcher *sw = arg;
	struct ynl_sock *ys = adm_open();
	struct adm_stats dev, rxq, txq;
	double t0, end = now_ms() + 30000;

	sw->err = -ETIMEDOUT;
	if (!ys) {
		sw->err = -ENOENT;
		return NULL;
	}
	while (now_ms() < end) {
		if (adm_stats_dev(ys, sw->id, &dev, &rxq, &txq)) {
			sw->err = -EIO;
			break;
		}
		if (dev.v[VHOST_A_STATS_TX_PACKETS] < sw->after) {
			usleep(1000);
			continue;
		}
		sw->at = dev.v[VHOST_A_STATS_TX_PACKETS];
		t0 = now_ms();
		sw->err = adm_set(ys, sw->id, ADM_TUN(-1, 1, -1, -1));
		sw->ms = now_ms() - t0;
		break;
	}
	ynl_sock_destroy(ys);
	return NULL;
}

#define NMID 1500	/* frames sent while zero-copy is turned on */

/*
 * A device with zero-copy off (no array for it) gets zero-copy turned on
 * while it transmits: every frame still reaches the wire in order with
 * its bytes; from then on its TX packets are zero-copy outcomes (the
 * spec's tx-packets: sent + fallback + copied + hol-stalls + backoff once
 * nothing is in flight).  The wire is a local socket, so zero-copy sends
 * to it fall back (zcopy-fallback); with nobody listening they complete
 * as zero-copy (zcopy-sent).
 */
TEST_F_TIMEOUT(scale, zerocopy_turned_on_mid_traffic, 120)
{
	static const size_t lens[] = { 60, 1514, 777, 300 };
	struct vnet_opts o = { .ring_num = 256, .event_idx = true };
	struct adm_stats c0, c1, c2, c3;
	struct switcher sw = { .after = 100 };
	struct vhost_dev_get_rsp *d;
	char why[VNET_WHY_LEN];
	struct vnet n;
	pthread_t th;
	int64_t id;
	int fd, r;

	fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	id = vhost_fd_id(fd);
	ASSERT_LE(0, id);
	ASSERT_EQ(0, adm_set(self->ys, id, ADM_TUN(-1, 0, -1, -1)));
	ASSERT_EQ(0, vnet_open_fd(&n, &o, fd));
	vnet_rx_fill(&n);
	ASSERT_EQ(0, txq_settled(self->ys, id, &c0));

	sw.id = id;
	ASSERT_EQ(0, pthread_create(&th, NULL, switch_zerocopy_on, &sw));
	r = vnet_check_tx(&n, lens, ARRAY_SIZE(lens), NMID, 32, 1, why);
	pthread_join(th, NULL);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	ASSERT_EQ(0, sw.err) TH_LOG("dev-set zerocopy on: %s", strerror(-sw.err));
	TH_LOG("zero-copy turned on after %llu of %d frames, in %.1f ms",
	       (unsigned long long)sw.at, NMID, sw.ms);
	EXPECT_LT(sw.at, NMID) TH_LOG("turned on after the traffic");
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(1, d->zerocopy);
	vhost_dev_get_rsp_free(d);
	ASSERT_EQ(0, txq_settled(self->ys, id, &c1));
	EXPECT_EQ(NMID, D(c1, c0, TX_PACKETS));
	EXPECT_EQ(0, D(c1, c0, TX_ERRORS));
	/* those after the switch only */
	EXPECT_LT(0, adm_zcopy_outcomes(&c1) - adm_zcopy_outcomes(&c0));
	EXPECT_GE(NMID - sw.at, adm_zcopy_outcomes(&c1) - adm_zcopy_outcomes(&c0));

	/* zero-copy on all along: every packet an outcome */
	ASSERT_EQ(0, vnet_check_mix(&n, 40, true, NMID + 1, why)) TH_LOG("%s", why);
	ASSERT_EQ(0, txq_settled(self->ys, id, &c2));
	EXPECT_EQ(40, D(c2, c1, TX_PACKETS));
	EXPECT_EQ(D(c2, c1, TX_PACKETS), adm_zcopy_outcomes(&c2) - adm_zcopy_outcomes(&c1));
	/* nobody listening: zero-copy completes */
	close(n.sock_fd);
	n.sock_fd = -1;
	ASSERT_EQ(0, vnet_tx_burst(&n, 1514, 200));
	ASSERT_EQ(0, txq_settled(self->ys, id, &c3));
	TH_LOG("since the switch: %llu zero-copy, %llu fell back, %llu copied short, %llu hol, %llu backed off",
	       (unsigned long long)D(c3, c0, ZCOPY_SENT),
	       (unsigned long long)D(c3, c0, ZCOPY_FALLBACK),
	       (unsigned long long)D(c3, c0, ZCOPY_COPIED),
	       (unsigned long long)D(c3, c0, ZCOPY_HOL_STALLS),
	       (unsigned long long)D(c3, c0, ZCOPY_BACKOFF));
	EXPECT_EQ(200, D(c3, c2, TX_PACKETS));
	EXPECT_EQ(D(c3, c2, TX_PACKETS), adm_zcopy_outcomes(&c3) - adm_zcopy_outcomes(&c2));
	EXPECT_LT(0, D(c3, c2, ZCOPY_SENT));
	EXPECT_LT(0, D(c3, c0, ZCOPY_FALLBACK));
	EXPECT_EQ(0, D(c3, c0, TX_ERRORS));
	vnet_close(&n);
}

#define NSTABLE 300
#define NCHURN 150
#define NDEV (NSTABLE + NCHURN)

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Keys (a device id, or id * 2 + queue index) seen by a dump: each of
 * want[] exactly once, no key twice.  Returns the number of problems,
 * the first described in why.
 */
static int check_keys(uint64_t *seen, int nseen, const uint64_t *want,
		      int nwant, const char *what, char *why, size_t len)
{
	int i, bad = 0;

	qsort(seen, nseen, sizeof(*seen), cmp_u64);
	for (i = 1; i < nseen; i++)
		if (seen[i] == seen[i - 1] && !bad++)
			snprintf(why, len, "%s: %llu twice", what,
				 (unsigned long long)seen[i]);
	for (i = 0; i < nwant; i++)
		if (!bsearch(&want[i], seen, nseen, sizeof(*seen), cmp_u64) &&
		    !bad++)
			snprintf(why, len, "%s: %llu missing", what,
				 (unsigned long long)want[i]);
	return bad;
}

/* Open and close churn devices (their fds in fds[]) until stop is readable. */
static void churn(int *fds, int n, int stop)
{
	struct pollfd p = { .fd = stop, .events = POLLIN };
	unsigned int seed = getpid();
	long cycles = 0;

	while (!poll(&p, 1, 0)) {
		int i = rand_r(&seed) % n;

		close(fds[i]);
		fds[i] = open("/dev/vhost-net", O_RDWR);
		CHILD_CHECK(fds[i] >= 0);
		cycles++;
	}
	printf("# %ld devices closed and opened by process %d\n", cycles,
	       getpid());
	fflush(stdout);
}

/*
 * 300 devices stay open while 150 others, between them in id order, are
 * closed and new ones opened by another process, continuously.  Every dump
 * (several netlink messages each) lists each of the 300 exactly once, and
 * both queues of each; nothing twice.
 */
TEST_F_TIMEOUT(scale, dumps_of_300_devices_while_others_come_and_go, 300)
{
	static int fds[NDEV];
	static uint64_t want_dev[NSTABLE], want_q[2 * NSTABLE];
	static uint64_t seen[4 * NDEV + 64];
	static struct adm_stats st[2 * NDEV + 64];
	struct vhost_queue_get_req_dump *qr;
	struct vhost_queue_get_list *ql;
	struct vhost_dev_get_list *dl;
	int i, k, c, n, nw = 0, bad = 0, rounds, stop[2];
	static int mine[NCHURN];
	struct rlimit rl;
	char why[128] = "";
	pid_t pid[2];
	double t0;

	ASSERT_EQ(0, getrlimit(RLIMIT_NOFILE, &rl));
	if (rl.rlim_max < 4 * NDEV)
		rl.rlim_max = 4 * NDEV;
	rl.rlim_cur = rl.rlim_max;
	ASSERT_EQ(0, setrlimit(RLIMIT_NOFILE, &rl));

	/* stable and churn devices interleaved in id order */
	t0 = now_ms();
	for (i = 0; i < NDEV; i++) {
		fds[i] = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fds[i]) TH_LOG("device %d: %s", i, strerror(errno));
		if (i % 3 != 1) {
			int64_t id = vhost_fd_id(fds[i]);

			ASSERT_LE(0, id);
			want_dev[nw] = id;
			want_q[2 * nw] = id * 2;
			want_q[2 * nw + 1] = id * 2 + 1;
			nw++;
		}
	}
	TH_LOG("%d devices opened in %.0f ms", NDEV, now_ms() - t0);
	ASSERT_EQ(NSTABLE, nw);

	/* two processes, one CPU each, take half the churn devices each */
	ASSERT_EQ(0, pipe(stop));
	for (c = 0; c < 2; c++) {
		pid[c] = fork();
		ASSERT_LE(0, pid[c]);
		if (pid[c])
			continue;
		close(stop[1]);
		for (i = 0, k = 0; i < NDEV; i++) {
			if (i % 3 == 1 && (i / 3) % 2 == c)
				mine[k++] = fds[i];
			else
				close(fds[i]);
		}
		churn(mine, k, stop[0]);
		_exit(0);
	}
	close(stop[0]);
	for (i = 1; i < NDEV; i += 3)
		close(fds[i]);

	t0 = now_ms();
	for (rounds = 0; rounds < 3 || now_ms() - t0 < 8000; rounds++) {
		if (rounds >= 100)
			break;
		/* devices */
		dl = adm_dev_dump(self->ys);
		ASSERT_NE(NULL, dl) TH_LOG("%s", self->ys->err.msg);
		n = 0;
		ynl_dump_foreach(dl, d)
			if (n < 4 * NDEV)
				seen[n++] = d->id;
		vhost_dev_get_list_free(dl);
		bad += check_keys(seen, n, want_dev, NSTABLE, "dev-get", why,
				  sizeof(why));
		/* queues */
		qr = vhost_queue_get_req_dump_alloc();
		ql = vhost_queue_get_dump(self->ys, qr);
		vhost_queue_get_req_dump_free(qr);
		ASSERT_NE(NULL, ql) TH_LOG("%s", self->ys->err.msg);
		n = 0;
		ynl_dump_foreach(ql, q)
			if (n < 4 * NDEV)
				seen[n++] = (uint64_t)q->dev_id * 2 + q->index;
		vhost_queue_get_list_free(ql);
		bad += check_keys(seen, n, want_q, 2 * NSTABLE, "queue-get",
				  why, sizeof(why));
		/* statistics, both scopes */
		n = adm_stats(self->ys, 0, true, false, st, 2 * NDEV + 64);
		ASSERT_LT(0, n) TH_LOG("%s", self->ys->err.msg);
		for (i = 0; i < n; i++)
			seen[i] = st[i].dev_id;
		bad += check_keys(seen, n, want_dev, NSTABLE, "stats-get", why,
				  sizeof(why));
		n = adm_stats(self->ys, 0, true, true, st, 2 * NDEV + 64);
		ASSERT_LT(0, n) TH_LOG("%s", self->ys->err.msg);
		for (i = 0; i < n; i++)
			seen[i] = (uint64_t)st[i].dev_id * 2 + st[i].queue;
		bad += check_keys(seen, n, want_q, 2 * NSTABLE,
				  "stats-get per queue", why, sizeof(why));
	}
	TH_LOG("%d rounds of 4 dumps in %.0f ms", rounds, now_ms() - t0);
	close(stop[1]);
	EXPECT_EQ(0, wait_child(pid[0]));
	EXPECT_EQ(0, wait_child(pid[1]));
	EXPECT_EQ(0, bad) TH_LOG("%s", why);
	t0 = now_ms();
	for (i = 0; i < NDEV; i++)
		if (i % 3 != 1)
			close(fds[i]);
	TH_LOG("closed in %.0f ms", now_ms() - t0);
}

TEST_HARNESS_MAIN
