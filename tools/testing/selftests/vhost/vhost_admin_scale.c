// SPDX-License-Identifier: GPL-2.0
/*
 * The vhost admin plane under load: no lock is held across devices, so a
 * device whose worker is stalled (here on a userfaultfd page, holding its
 * queue's mutex) holds up nothing but itself; dumps of hundreds of devices,
 * which take several netlink messages, list every device that exists for
 * the whole dump exactly once, with all its queues, while other devices
 * come and go.
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
#include <linux/userfaultfd.h>
#include <linux/vhost.h>
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
	[OP_SET_STALLED] = { "dev-set of the stalled device" },
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

/*
 * One device's TX worker faults on a userfaultfd page of a guest buffer
 * and waits there, holding the TX queue's mutex, for seconds.  Meanwhile
 * devices are opened, owned and closed, everything is dumped (the stalled
 * device too), other devices and the stalled one's own tunables are
 * changed, each within STALL_BOUND_MS.  Only what needs that queue's mutex
 * (a vring ioctl of the stalled device) waits, and completes once the page
 * is there.
 */
TEST_F_TIMEOUT(scale, stalled_device_holds_up_no_other, 180)
{
	struct vnet_opts o = { .ring_num = 64, .event_idx = true };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct pollfd pfd = { .events = POLLIN };
	struct adm_stats dev, rxq, txq;
	struct resolver res = {};
	struct prober probe = {};
	struct vhost_dev_get_rsp *d;
	struct uffd_msg msg;
	uint8_t *page, *staged;
	pthread_t th, res_th;
	struct vnet other;
	double stalled;
	int64_t sid, oid, id;
	int fd, i, rounds;

	/* CONFIG_USERFAULTFD is in the selftests' config */
	fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	i = fd < 0 ? errno : 0;
	ASSERT_LE(0, fd) TH_LOG("userfaultfd: %s", strerror(i));
	self->uffd = fd;
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_API, &api));
	page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	/* what the page will hold: the header and a frame */
	staged = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, staged);
	reg.range.start = (uintptr_t)page;
	reg.range.len = PAGE;
	ASSERT_EQ(0, ioctl(self->uffd, UFFDIO_REGISTER, &reg));

	ASSERT_EQ(0, vnet_open(&self->s, &o));
	self->s_open = true;
	close(self->s.sock_fd);
	self->s.sock_fd = -1;
	sid = vhost_fd_id(self->s.vhost_fd);
	ASSERT_LE(0, sid);
	ASSERT_EQ(0, vnet_open(&other, &o));
	oid = vhost_fd_id(other.vhost_fd);
	ASSERT_LE(0, oid);
	probe.fd = self->s.vhost_fd;
	memset(staged, 0, self->s.hdr_len);
	frame_fill(staged + self->s.hdr_len, 60, NULL, 1);

	/* A TX buffer (header and frame) in the page: the worker faults. */
	ASSERT_EQ(0, vnet_tx_add_buf(&self->s, page, self->s.hdr_len + 60));
	vnet_kick(&self->s, VNET_TX);
	pfd.fd = self->uffd;
	ASSERT_EQ(1, poll(&pfd, 1, 10000)) TH_LOG("the worker did not fault");
	ASSERT_EQ((ssize_t)sizeof(msg), read(self->uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	ASSERT_EQ((uintptr_t)page, msg.arg.pagefault.address & ~(PAGE - 1));
	stalled = now_ms();
	res.uffd = self->uffd;
	res.page = page;
	res.staged = staged;
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
					   ADM_TUN(rounds & 7, rounds & 1,
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
	munmap(staged, PAGE);
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
		dl = vhost_dev_get_dump(self->ys);
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
