// SPDX-License-Identifier: GPL-2.0
/*
 * vhost_net_pps: a load generator for vhost-net, for measurements (not a
 * test).  One device, one TAP; a setting of the device (the metadata path,
 * TX zero-copy or busy polling) is switched at run time through the admin
 * plane (vhostctl), two or three values alternating over the rounds, the
 * order rotated every round.  With -k none nothing is switched: one fixed
 * configuration, no admin plane (the stock kernel has none); -v names it.
 *
 *   -T tx   the driver keeps the TX ring full like a guest driver: buffers
 *           written once, refilled in batches as they are used, one kick per
 *           batch when the device asks for one, the interrupt delayed to 3/4
 *           of the buffers in flight (virtqueue_enable_cb_delayed()).  With
 *           -x the TAP drops the frames with XDP (tun's batched XDP path),
 *           otherwise the stack drops them (unknown ethertype / no route).
 *           With -b the TAP is a port of a bridge whose other port is a
 *           dummy device, and the frames go to a unicast address the bridge
 *           never learns: flooded to the dummy only, which frees them
 *           without a copy (zero-copy can complete as zero-copy).
 *   -T rx   a thread injects frames into the TAP (AF_PACKET, qdisc bypass,
 *           sendmmsg), at most 256 in flight so that tun drops none;
 *           vhost-net receives them into the RX ring, the driver reaps and
 *           reposts buffers.  Counts what the driver received.  Each frame
 *           carries its own sequence number, as real traffic differs from
 *           frame to frame: with one frame sent again and again, every RX
 *           buffer page would hold the same bytes after each wrap of the
 *           ring, KSM would merge them (-A ksm), and each write would then
 *           copy the page to break the merge.
 *   -T rr   request/response: the driver sends one frame and waits (on the
 *           call eventfd, like an interrupt) for the answer, which a thread
 *           on an AF_PACKET socket of the TAP sends back.  Latency per round
 *           trip.
 *
 * Sizes: -s 60..1514 (frame bytes), or -s 65536: one 64 KiB TCP/IPv4 frame
 * with a GSO header (TSO) per packet, TX only.
 *
 * -o: the driver negotiates VIRTIO_F_IN_ORDER (struct vnet_opts.in_order):
 * it makes descriptors available in ring order and takes one used entry
 * for a batch of buffers, as vhost-net writes them on TX; the stock 6.12
 * kernel does not offer the feature.
 *
 * Output, one line per measurement (key=value, for scripts/bench-report):
 *
 *   sample test=tx size=64 knob=metamap mode=map round=0 secs=2.0001
 *          pkts=... pps=... worker_ns=... cpu_ns_per_pkt=... drv_ns=...
 *          mark_a=... mark_b=... drv_kicks=... drv_calls=...
 *          worker_sleeps=... drv_sleeps=... (voluntary context switches)
 *          kicks=... calls=... tx_packets=... rx_packets=... mm_fast=...
 *          mm_fallback=... mm_fills=... zc_sent=... zc_copied=...
 *          zc_stalls=... zc_backoff=... bp_loops=... bp_found=...
 *          used_reads=... used_bufs=... pl_fast=... pl_fallback=...
 *          pl_fills=... pl_inval=... activity=...
 *          [lat_mean_us= lat_p50_us= lat_p99_us=]
 *
 * (counters are deltas over the measurement, from the device's sysfs
 * statistics, 0 where the kernel has none; drv_kicks and drv_calls are the
 * driver's own kick writes and call signals; used_reads and used_bufs the
 * used-ring entries the driver read and the buffers it took back, both
 * queues (in order, one entry may return many buffers); pl_* the payload
 * map's copies served, copies through uaccess, pages found and callbacks,
 * both queues, from the device's fdinfo (0 without a payload map);
 * worker_ns is the
 * CPU time of
 * the vhost worker thread,
 * "vhost-<pid>", read with its thread CPU clock: /proc/<pid>/task/<tid>/stat's
 * utime + stime with ns resolution), then one "summary" line per mode and a
 * "ratio" line, and a "total" line with the device's packet counters over
 * the whole run.  The driver, the helper thread and the commands it runs
 * are on CPU 0, the worker on CPU 1 (-P: no pinning), so that CPU 1 runs
 * the worker and its interrupts only.
 *
 * Markers: each measurement starts and ends with a call into a region of
 * RET instructions at MARK_BASE (mark_a, mark_b: the offsets called, from
 * -M ID on, one more per call); the TCG plugin tools/vhost-bench/vcpucount.c
 * snapshots every vCPU's instruction counts there, so the host pairs them
 * with the sample line.  -m ID calls marker ID once and exits.
 *
 *   vhost_net_pps [-T tx|rx|rr] [-s bytes] [-n ring] [-r rounds] [-t secs]
 *                 [-w warm-up secs] [-k metamap|zerocopy|busypoll|none]
 *                 [-v A,B[,C]] [-C vhostctl] [-x xdp.o] [-b] [-M ID] [-P]
 *                 [-p usecs] [-o] [-A zap|ksm|numa|none]
 *   vhost_net_pps -m ID
 *
 * -A: what the host does to the owner's memory meanwhile, as a production
 * host does (issue 46): "zap", a thread of the owner's (on CPU 0) touches
 * and drops (MADV_DONTNEED) 64 KiB of its own memory, outside the rings
 * and buffers, every millisecond; "ksm", every VMA of the owner's is made
 * mergeable (PR_SET_MEMORY_MERGE) for the KSM daemon the caller runs;
 * "numa", nothing here: the caller turns NUMA balancing on
 * (kernel.numa_balancing).  The default, "none", leaves it quiet.
 *
 * -p: the owner's busy-poll time on both queues
 * (VHOST_SET_VRING_BUSYLOOP_TIMEOUT, which every kernel has): the worker
 * polls the socket and the ring instead of sleeping between packets.
 *
 * The default for -C is $VHOSTCTL, else the work tree's vhostctl, else the
 * one in $PATH.  Defaults: TX of 64-byte frames, ring 1024, 5 rounds of 2 s,
 * the metadata path off and map.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/vhost.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <sys/wait.h>

#include "vhost_net_lib.h"

#ifndef PR_SET_MEMORY_MERGE
#define PR_SET_MEMORY_MERGE 67
#endif

#define MAX_ROUNDS 64
#define MAX_VALS 3
/* The marker region (tools/vhost-bench/vcpucount.c): 2 MiB of RET. */
#define MARK_BASE 0x3ff000000000UL
#define MARK_SIZE (2UL << 20)
#define GSO_FRAME 65536
#define RR_TIMEOUT_MS 2000

enum test { T_TX, T_RX, T_RR };
static const char *const test_name[] = { "tx", "rx", "rr" };

static struct {
	enum test test;
	size_t len;
	unsigned int ring;
	int rounds;
	double secs, warm;
	const char *knob;
	const char *val[MAX_VALS];
	int nval;
	const char *ctl;
	const char *xdp;
	bool bridge;
	unsigned int busyloop_us;	/* -p */
	bool in_order;			/* -o */
	const char *activity;		/* -A */
	unsigned long mark_id;
	bool pin;
} cfg = {
	.test = T_TX, .len = 64, .ring = 1024, .rounds = 5, .secs = 2,
	.warm = 0.3, .knob = "metamap", .val = { "off", "map" }, .nval = 2,
	.activity = "none",
	.pin = true,
};

static struct vnet n;
static char devname[32];
static pid_t worker_tid;
static uint8_t *frame;
static struct virtio_net_hdr_v1 frame_hdr;
static atomic_bool stop_threads;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "vhost_net_pps: %s: %s\n", what, strerror(err));
	exit(1);
}

/* CPU time of a thread of this process in ns (MAKE_THREAD_CPUCLOCK). */
static uint64_t thread_cpu_ns(pid_t tid)
{
	clockid_t clk = tid ? (~(clockid_t)tid << 3) | 6 : CLOCK_THREAD_CPUTIME_ID;
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		return 0;
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* The device's vhost worker: thread "vhost-<owner pid>" of this process. */
static pid_t find_worker(void)
{
	char want[32], path[300], comm[64];
	struct dirent *d;
	pid_t tid = 0;
	DIR *dir;
	FILE *f;

	snprintf(want, sizeof(want), "vhost-%d", getpid());
	dir = opendir("/proc/self/task");
	while (dir && (d = readdir(dir))) {
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) &&
		    !strncmp(comm, want, strlen(want)) &&
		    (comm[strlen(want)] == '\n' || !comm[strlen(want)]))
			tid = atoi(d->d_name);
		fclose(f);
	}
	if (dir)
		closedir(dir);
	return tid;
}

/*
 * "vhost-name:\tvhostN" in the vhost fd's fdinfo; a kernel without the
 * admin plane has none, which only -k none accepts (no device counters).
 */
static void find_devname(void)
{
	if (!vhost_fd_name(n.vhost_fd, devname, sizeof(devname)))
		return;
	devname[0] = 0;
	if (strcmp(cfg.knob, "none"))
		die("no vhost-name in the device's fdinfo", ENOENT);
}

static void pin(pid_t tid, int cpu)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(tid, sizeof(s), &s);
}

/* Device counters, from /sys/class/vhost/<dev>/statistics. */
enum {
	S_TXP, S_RXP, S_KICKS, S_CALLS, S_FAST, S_FALLBACK, S_FILLS, S_ZCSENT,
	S_ZCCOPIED, S_ZCSTALLS, S_ZCBACKOFF, S_BPLOOPS, S_BPFOUND, S_N
};

static const char *const stat_file[S_N] = {
	"tx_packets", "rx_packets", "kicks", "calls", "metamap_fast",
	"metamap_fallback", "metamap_uaccess_fills", "zcopy_sent",
	"zcopy_copied", "zcopy_hol_stalls", "zcopy_backoff", "busypoll_loops",
	"busypoll_found",
};

static const char *const stat_key[S_N] = {
	"tx_packets", "rx_packets", "kicks", "calls", "mm_fast", "mm_fallback",
	"mm_fills", "zc_sent", "zc_copied", "zc_stalls", "zc_backoff",
	"bp_loops", "bp_found",
};

struct snap {
	double t;
	uint64_t worker_ns, drv_ns, pkts, kicks, calls;
	uint64_t worker_sleeps, drv_sleeps;	/* voluntary context switches */
	uint64_t used_reads, used_bufs;	/* the driver's, both queues */
	uint64_t pl_fast, pl_fallback, pl_fills, pl_inval;	/* both queues */
	unsigned long mark;
	uint64_t st[S_N];
};

static void read_stats(uint64_t *st)
{
	char path[128], buf[32];
	int i, fd;
	ssize_t r;

	for (i = 0; i < S_N; i++) {
		snprintf(path, sizeof(path), "/sys/class/vhost/%s/statistics/%s",
			 devname, stat_file[i]);
		st[i] = 0;
		fd = devname[0] ? open(path, O_RDONLY) : -1;
		if (fd < 0)
			continue;
		r = read(fd, buf, sizeof(buf) - 1);
		if (r > 0) {
			buf[r] = 0;
			st[i] = strtoull(buf, NULL, 10);
		}
		close(fd);
	}
}

static uint64_t pkts_done;	/* packets (or round trips) counted so far */
static bool marks_mapped;

/* The marker region: every byte a RET, so any offset is a marker. */
static void marks_map(void)
{
	void *p = mmap((void *)MARK_BASE, MARK_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (p != (void *)MARK_BASE) {
		fprintf(stderr, "vhost_net_pps: no marker region at %#lx: %s\n",
			MARK_BASE, strerror(errno));
		return;
	}
	memset(p, 0xc3, MARK_SIZE);
	if (mprotect(p, MARK_SIZE, PROT_READ | PROT_EXEC))
		die("mprotect the marker region", errno);
	marks_mapped = true;
}

/* Calls the next marker; returns its id. */
static unsigned long mark(void)
{
	unsigned long id = cfg.mark_id++ % MARK_SIZE;

	if (marks_mapped)
		((void (*)(void))(MARK_BASE + id))();
	return id;
}

/*
 * Voluntary context switches of a thread of this process (0: the calling
 * thread): how often it went to sleep, e.g. the worker waiting for work.
 */
static uint64_t thread_sleeps(pid_t tid)
{
	char path[64], line[128];
	uint64_t v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status",
		 tid ? tid : (int)syscall(SYS_gettid));
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %" SCNu64, &v) == 1)
			break;
	fclose(f);
	return v;
}

/* The start of a measurement: marker, then counters; the end: reversed. */
/* The payload map's counters of both queues, 0 where fdinfo has none. */
static void payload_stats(struct snap *s)
{
	struct metamap_stats m;
	int q;

	s->pl_fast = 0;
	s->pl_fallback = 0;
	s->pl_fills = 0;
	s->pl_inval = 0;
	for (q = 0; q < 2; q++) {
		if (vnet_metamap_stats(&n, q, &m))
			continue;
		s->pl_fast += m.payload_fast;
		s->pl_fallback += m.payload_fallback;
		s->pl_fills += m.payload_fills;
		s->pl_inval += m.payload_invalidations;
	}
}

/*
 * -A zap: 64 KiB of the owner's, outside the rings and buffers, touched
 * and dropped every millisecond until the run ends: an mm event in the
 * memory table's region (all of the address space) each time.
 */
static void *zapper(void *arg)
{
	const size_t len = 64 << 10;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t off;

	(void)arg;
	if (p == MAP_FAILED)
		return NULL;
	if (cfg.pin)
		pin(0, 0);
	while (!atomic_load(&stop_threads)) {
		for (off = 0; off < len; off += 4096)
			p[off] = 1;
		madvise(p, len, MADV_DONTNEED);
		usleep(1000);
	}
	munmap(p, len);
	return NULL;
}

static void take(struct snap *s, bool start)
{
	if (start)
		s->mark = mark();
	read_stats(s->st);
	s->pkts = pkts_done;
	s->kicks = n.vq[VNET_TX].kicks + n.vq[VNET_RX].kicks;
	s->calls = n.vq[VNET_TX].calls + n.vq[VNET_RX].calls;
	s->used_reads = n.vq[VNET_TX].used_reads + n.vq[VNET_RX].used_reads;
	s->used_bufs = n.vq[VNET_TX].used_bufs + n.vq[VNET_RX].used_bufs;
	payload_stats(s);
	s->worker_ns = thread_cpu_ns(worker_tid);
	s->drv_ns = thread_cpu_ns(0);
	s->worker_sleeps = worker_tid ? thread_sleeps(worker_tid) : 0;
	s->drv_sleeps = thread_sleeps(0);
	s->t = now();
	if (!start)
		s->mark = mark();
}

/* vhostctl set dev vhostN KNOB VALUE */
static void set_knob(const char *val)
{
	char cmd[512];
	int r;

	if (!strcmp(cfg.knob, "none"))
		return;
	snprintf(cmd, sizeof(cmd), "%s set dev %s %s %s", cfg.ctl, devname,
		 !strcmp(cfg.knob, "busypoll") ? "busypoll-us" : cfg.knob, val);
	r = system(cmd);
	if (r == -1 || !WIFEXITED(r) || WEXITSTATUS(r)) {
		fprintf(stderr, "vhost_net_pps: '%s' failed (status %d)\n", cmd, r);
		exit(3);
	}
}

/* ---- TX ---------------------------------------------------------------- */

static size_t tx_buf_len(void)
{
	return n.hdr_len + cfg.len;
}

/* Every TX buffer holds the header and frame once; posting is a descriptor. */
static void tx_prefill(void)
{
	unsigned int i;

	for (i = 0; i < n.vq[VNET_TX].num; i++) {
		uint8_t *b = n.bufs[VNET_TX] + (size_t)i * n.o.buf_size;

		memcpy(b, &frame_hdr, n.hdr_len);
		memcpy(b + n.hdr_len, frame, cfg.len);
	}
}

/*
 * Like vq_add() in the library for one device-readable buffer, no copy.  In
 * order the free list is the ring itself, so the heads follow each other.
 */
static bool tx_post(void)
{
	struct vq *vq = &n.vq[VNET_TX];
	uint16_t head;

	if (!vq->num_free)
		return false;
	head = vq->free_head;
	vq->desc[head].addr = (uintptr_t)(n.bufs[VNET_TX] +
					  (size_t)head * n.o.buf_size);
	vq->desc[head].len = tx_buf_len();
	vq->desc[head].flags = 0;
	vq->desc[head].next = 0;
	vq->free_head = vq->next_free[head];
	vq->num_free--;
	vq->chain_len[head] = 1;
	vq->avail->ring[vq->avail_idx % vq->num] = head;
	vq->avail_idx++;
	n.tx_pending++;
	return true;
}

/*
 * Wait for used TX buffers with the interrupt delayed until 3/4 of those in
 * flight are used, as virtqueue_enable_cb_delayed() does.
 */
static int tx_wait(int timeout_ms)
{
	struct vq *vq = &n.vq[VNET_TX];
	struct pollfd p = { .fd = vq->call_fd, .events = POLLIN };
	uint16_t *used_event = &vq->avail->ring[vq->num];
	uint16_t bufs = n.tx_pending * 3 / 4;
	uint64_t v;

	__atomic_store_n(used_event, (uint16_t)(vq->last_used + bufs),
			 __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	while (!vq_has_used(vq)) {
		if (poll(&p, 1, timeout_ms) <= 0)
			return vq_has_used(vq) ? 0 : -ETIMEDOUT;
		if (read(vq->call_fd, &v, sizeof(v)) == sizeof(v))
			vq->calls += v;
	}
	return 0;
}

static void tx_run(double until)
{
	int r;

	do {
		while (tx_post())
			;
		vnet_kick(&n, VNET_TX);
		r = vnet_tx_reap(&n);
		if (r < 0)
			die("TX reap", -r);
		if (!r && tx_wait(5000))
			die("TX stalled", ETIMEDOUT);
		pkts_done += r;
	} while (now() < until);
}

static void tx_pause(void)
{
	int r = vnet_tx_drain(&n, 5000);

	if (r)
		die("TX drain", -r);
}

/* ---- RX ---------------------------------------------------------------- */

static int open_inject_sock(void)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	int one = 1, sndbuf = 4 << 20;
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("AF_PACKET socket", errno);
	sll.sll_ifindex = if_nametoindex(n.ifname);
	/* Protocol 0: send only, no tap on the device (no clone per frame). */
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		die("bind AF_PACKET", errno);
	setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf));
	return fd;
}

static atomic_bool inject_on;
static uint8_t rxbuf[VNET_BIG_FRAME];

/*
 * RX injection is closed-loop: at most RX_WINDOW frames injected and not yet
 * received, fewer than tun's queue (500) holds, so none is dropped and none
 * is generated in vain (under -icount every instruction counts): while the
 * worker is the bottleneck the queue never runs dry, and the injector sleeps
 * on a futex instead of spinning.  The driver wakes it every RX_BATCH frames
 * when it waits.
 */
#define RX_BATCH 32
#define RX_WINDOW 256
static _Atomic uint32_t rx_received;	/* frames the driver received */
static _Atomic int inj_waiting;
static uint32_t injected;

static void futex_wait(_Atomic uint32_t *p, uint32_t val, long ns)
{
	struct timespec ts = { 0, ns };

	syscall(SYS_futex, p, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *p)
{
	syscall(SYS_futex, p, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

/* The driver received one frame. */
static void rx_credit(void)
{
	uint32_t r = atomic_fetch_add(&rx_received, 1) + 1;

	if (!(r % RX_BATCH) && atomic_load(&inj_waiting))
		futex_wake(&rx_received);
}

/*
 * Sends frames into the TAP while inject_on, RX_WINDOW at most in flight,
 * each with the next sequence number (frame_set_seq()).
 */
static void *injector(void *arg)
{
	static uint8_t f[RX_BATCH][1514];
	struct mmsghdr m[RX_BATCH];
	struct iovec iov[RX_BATCH];
	int fd = open_inject_sock(), i, stuck = 0;
	uint32_t r, seq = 0;

	(void)arg;
	if (cfg.pin)
		pin(0, 0);
	memset(m, 0, sizeof(m));
	for (i = 0; i < RX_BATCH; i++) {
		memcpy(f[i], frame, cfg.len);
		iov[i].iov_base = f[i];
		iov[i].iov_len = cfg.len;
		m[i].msg_hdr.msg_iov = &iov[i];
		m[i].msg_hdr.msg_iovlen = 1;
	}
	while (!atomic_load(&stop_threads)) {
		if (!atomic_load(&inject_on)) {
			usleep(1000);
			injected = atomic_load(&rx_received);
			continue;
		}
		r = atomic_load(&rx_received);
		if (injected - r > RX_WINDOW - RX_BATCH) {
			atomic_store(&inj_waiting, 1);
			r = atomic_load(&rx_received);
			if (injected - r > RX_WINDOW - RX_BATCH)
				futex_wait(&rx_received, r, 10000000);
			atomic_store(&inj_waiting, 0);
			/* Frames lost on the way (none expected): resync. */
			if (atomic_load(&rx_received) == r && ++stuck >= 20) {
				injected = r;
				stuck = 0;
			}
			continue;
		}
		stuck = 0;
		for (i = 0; i < RX_BATCH; i++)
			frame_set_seq(f[i], seq + i);
		i = sendmmsg(fd, m, RX_BATCH, 0);
		seq += i > 0 ? i : 0;
		if (i < 0 && errno != ENOBUFS && errno != EAGAIN)
			die("sendmmsg", errno);
		injected += i > 0 ? i : 0;
	}
	close(fd);
	return NULL;
}

static void rx_run(double until)
{
	int r;

	atomic_store(&inject_on, true);
	do {
		r = vnet_rx_one(&n, rxbuf, sizeof(rxbuf), NULL, 5000);
		if (r < 0)
			die("RX", -r);
		rx_credit();
		pkts_done++;
	} while (now() < until);
}

static void rx_pause(void)
{
	atomic_store(&inject_on, false);
	/* What tun still queues arrives within the timeout; drop it. */
	while (vnet_rx_one(&n, rxbuf, sizeof(rxbuf), NULL, 100) >= 0)
		rx_credit();
}

/* ---- RR ---------------------------------------------------------------- */

#define HIST_US 20000
static uint32_t hist[HIST_US + 1];
static int rr_fd;

/* Answers every request frame arriving from vhost with a frame back. */
static void *responder(void *arg)
{
	struct pollfd p = { .fd = rr_fd, .events = POLLIN };
	uint8_t req[2048];
	ssize_t r;

	(void)arg;
	if (cfg.pin)
		pin(0, 0);
	while (!atomic_load(&stop_threads)) {
		r = recv(rr_fd, req, sizeof(req), MSG_DONTWAIT);
		if (r < 0) {
			if (errno != EAGAIN)
				die("responder recv", errno);
			poll(&p, 1, 100);
			continue;
		}
		/* The answer: same size, the request's sequence number. */
		memcpy(req, "\x02\x00\x00\x00\x00\x01", ETH_ALEN);
		if (send(rr_fd, req, r, 0) < 0 && errno != ENOBUFS)
			die("responder send", errno);
	}
	return NULL;
}

static int open_rr_sock(void)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_protocol = htons(VNET_ETH_P) };
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(VNET_ETH_P));

	if (fd < 0)
		die("AF_PACKET socket", errno);
	/* Our ethertype only: it sees requests, not its own answers. */
	sll.sll_ifindex = if_nametoindex(n.ifname);
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		die("bind AF_PACKET", errno);
	return fd;
}

static double lat_sum;

static void rr_run(double until)
{
	double t0, t;
	uint32_t seq = 0;
	int r, us;

	do {
		frame[17] = ++seq;
		t0 = now();
		r = vnet_tx_one(&n, frame, cfg.len, NULL, RR_TIMEOUT_MS);
		if (r)
			die("RR send", -r);
		r = vnet_rx_one(&n, rxbuf, sizeof(rxbuf), NULL, RR_TIMEOUT_MS);
		if (r < 0)
			die("RR receive", -r);
		t = now();
		vnet_tx_reap(&n);
		lat_sum += t - t0;
		us = (t - t0) * 1e6;
		hist[us > HIST_US ? HIST_US : us]++;
		pkts_done++;
	} while (t < until);
}

static void rr_pause(void)
{
	vnet_tx_drain(&n, 5000);
}

static double hist_pct(double q)
{
	uint64_t total = 0, acc = 0;
	int i;

	for (i = 0; i <= HIST_US; i++)
		total += hist[i];
	for (i = 0; i <= HIST_US; i++) {
		acc += hist[i];
		if (acc >= q * total)
			return i + 0.5;
	}
	return HIST_US;
}

/* ---- driver ------------------------------------------------------------ */

static void run(double until)
{
	switch (cfg.test) {
	case T_TX:
		tx_run(until);
		break;
	case T_RX:
		rx_run(until);
		break;
	case T_RR:
		rr_run(until);
		break;
	}
}

static void pause_traffic(void)
{
	switch (cfg.test) {
	case T_TX:
		tx_pause();
		break;
	case T_RX:
		rx_pause();
		break;
	case T_RR:
		rr_pause();
		break;
	}
}

static void run_cmd(const char *fmt, const char *a, const char *b)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	if (system(cmd)) {
		fprintf(stderr, "vhost_net_pps: '%s' failed\n", cmd);
		exit(3);
	}
}

static char br_name[IFNAMSIZ], dummy_name[IFNAMSIZ];

/*
 * The TAP and a dummy device, ports of one bridge; the frames' destination
 * is a unicast address nobody sends from, so the bridge floods them to the
 * dummy alone (no clone, which would copy zero-copy frags) and the dummy
 * frees them.  The bridge itself is not promiscuous: nothing goes up its
 * stack.
 */
static void bridge_setup(void)
{
	snprintf(br_name, sizeof(br_name), "vbr%d", getpid() % 100000);
	snprintf(dummy_name, sizeof(dummy_name), "vdum%d", getpid() % 100000);
	run_cmd("ip link add %s type bridge%s", br_name, "");
	run_cmd("ip link add %s type dummy%s", dummy_name, "");
	run_cmd("ip link set %s master %s", n.ifname, br_name);
	run_cmd("ip link set %s master %s", dummy_name, br_name);
	run_cmd("ip link set %s up && ip link set %s up", dummy_name, br_name);
	run_cmd("ip link set %s up%s", n.ifname, "");
	memcpy(frame, "\x02\x00\x00\x00\xbe\x01", ETH_ALEN);
}

static void bridge_remove(void)
{
	if (!br_name[0])
		return;
	run_cmd("ip link del %s && ip link del %s", dummy_name, br_name);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void setup(void)
{
	struct vnet_opts o = { .ring_num = cfg.ring, .event_idx = true,
			       .in_order = cfg.in_order };
	char cmd[512];
	int r, i;

	if (cfg.len > 1514)
		o.buf_size = (sizeof(struct virtio_net_hdr_v1) + cfg.len + 4095) &
			     ~4095UL;
	r = vnet_open(&n, &o);
	if (r)
		die("vnet_open", -r);
	find_devname();
	worker_tid = find_worker();
	if (!worker_tid)
		fprintf(stderr, "vhost_net_pps: no vhost worker thread found\n");
	for (i = 0; cfg.busyloop_us && i < 2; i++) {
		struct vhost_vring_state bl = { .index = i,
						.num = cfg.busyloop_us };

		if (ioctl(n.vhost_fd, VHOST_SET_VRING_BUSYLOOP_TIMEOUT, &bl))
			die("VHOST_SET_VRING_BUSYLOOP_TIMEOUT", errno);
	}
	if (cfg.pin && sysconf(_SC_NPROCESSORS_ONLN) >= 2) {
		pin(0, 0);
		if (worker_tid)
			pin(worker_tid, 1);
	}

	frame = calloc(1, VNET_BIG_FRAME);
	if (cfg.len > 1514) {
		frame_fill_tcp(frame, cfg.len, 1);
		hdr_fill_tso(&frame_hdr, cfg.len, 1448);
	} else {
		frame_fill(frame, cfg.len, NULL, 1);
	}
	/* The wire socket of the library taps every frame: only RR needs one. */
	close(n.sock_fd);
	n.sock_fd = -1;
	if (cfg.bridge)
		bridge_setup();

	if (cfg.xdp && cfg.test == T_TX) {
		snprintf(cmd, sizeof(cmd),
			 "ip link set dev %s xdp obj %s sec xdp", n.ifname, cfg.xdp);
		if (system(cmd)) {
			fprintf(stderr, "vhost_net_pps: '%s' failed\n", cmd);
			exit(3);
		}
	}
	if (cfg.test == T_TX)
		tx_prefill();
	if (cfg.test == T_RX || cfg.test == T_RR)
		vnet_rx_fill(&n);
	if (cfg.test == T_RR)
		rr_fd = open_rr_sock();
}

static void print_sample(int mode, int round, const struct snap *a,
			 const struct snap *b)
{
	uint64_t pk = b->pkts - a->pkts;
	double secs = b->t - a->t, wns = b->worker_ns - a->worker_ns;
	int i;

	printf("sample test=%s size=%zu knob=%s mode=%s round=%d secs=%.4f pkts=%" PRIu64
	       " pps=%.1f worker_ns=%.0f cpu_ns_per_pkt=%.1f drv_ns=%" PRIu64
	       " mark_a=%lu mark_b=%lu drv_kicks=%" PRIu64
	       " drv_calls=%" PRIu64 " worker_sleeps=%" PRIu64
	       " drv_sleeps=%" PRIu64,
	       test_name[cfg.test], cfg.len, cfg.knob, cfg.val[mode], round,
	       secs, pk, pk / secs, wns, pk ? wns / pk : 0,
	       b->drv_ns - a->drv_ns, a->mark, b->mark, b->kicks - a->kicks,
	       b->calls - a->calls, b->worker_sleeps - a->worker_sleeps,
	       b->drv_sleeps - a->drv_sleeps);
	for (i = 0; i < S_N; i++)
		printf(" %s=%" PRIu64, stat_key[i], b->st[i] - a->st[i]);
	printf(" used_reads=%" PRIu64 " used_bufs=%" PRIu64,
	       b->used_reads - a->used_reads, b->used_bufs - a->used_bufs);
	printf(" pl_fast=%" PRIu64 " pl_fallback=%" PRIu64 " pl_fills=%" PRIu64
	       " pl_inval=%" PRIu64 " activity=%s", b->pl_fast - a->pl_fast,
	       b->pl_fallback - a->pl_fallback, b->pl_fills - a->pl_fills,
	       b->pl_inval - a->pl_inval, cfg.activity);
	if (cfg.test == T_RR)
		printf(" lat_mean_us=%.2f lat_p50_us=%.1f lat_p99_us=%.1f",
		       pk ? lat_sum / pk * 1e6 : 0, hist_pct(0.5), hist_pct(0.99));
	printf("\n");
	fflush(stdout);
}

/*
 * $VHOSTCTL, else the work tree's tools/vhostctl/vhostctl when this binary
 * is in build/selftests/vhost or build/bench/bin, else vhostctl in $PATH.
 */
static const char *default_ctl(void)
{
	static char path[4096];
	ssize_t r;
	char *p;

	if (getenv("VHOSTCTL"))
		return getenv("VHOSTCTL");
	r = readlink("/proc/self/exe", path, sizeof(path) - 64);
	if (r > 0) {
		path[r] = 0;
		p = strrchr(path, '/');
		if (p) {
			snprintf(p, 64, "/../../../tools/vhostctl/vhostctl");
			if (!access(path, X_OK))
				return path;
		}
	}
	return "vhostctl";
}

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s [-T tx|rx|rr] [-s bytes] [-n ring] [-r rounds] [-t secs]\n"
		"          [-w warm-up secs] [-k metamap|zerocopy|busypoll|none]\n"
		"          [-v A,B[,C]] [-C vhostctl] [-x xdp.o] [-b (bridge to a dummy)]\n"
		"          [-M first marker id] [-P (no pinning)]\n"
		"          [-p busy-poll usecs (the owner's, both queues)]\n"
		"          [-o (VIRTIO_F_IN_ORDER)] [-A zap|ksm|numa|none]\n"
		"       %s -m ID (call marker ID)\n", argv0, argv0);
	exit(2);
}

int main(int argc, char **argv)
{
	double res[MAX_VALS][MAX_ROUNDS], worker[MAX_VALS][MAX_ROUNDS];
	bool vals_given = false;
	pthread_t thr, zap;
	int opt, i, m;
	char *v;

	cfg.ctl = default_ctl();
	while ((opt = getopt(argc, argv, "T:s:n:r:t:w:k:v:C:x:bM:m:Pp:oA:")) != -1) {
		switch (opt) {
		case 'T':
			for (i = 0; i < 3 && strcmp(optarg, test_name[i]); i++)
				;
			if (i == 3)
				usage(argv[0]);
			cfg.test = i;
			break;
		case 's':
			cfg.len = atoi(optarg);
			break;
		case 'n':
			cfg.ring = atoi(optarg);
			break;
		case 'r':
			cfg.rounds = atoi(optarg);
			break;
		case 't':
			cfg.secs = atof(optarg);
			break;
		case 'w':
			cfg.warm = atof(optarg);
			break;
		case 'k':
			cfg.knob = optarg;
			if (strcmp(optarg, "metamap") && strcmp(optarg, "zerocopy") &&
			    strcmp(optarg, "busypoll") && strcmp(optarg, "none"))
				usage(argv[0]);
			break;
		case 'v':
			v = strdup(optarg);
			for (cfg.nval = 0; v && cfg.nval < MAX_VALS; cfg.nval++)
				cfg.val[cfg.nval] = strsep(&v, ",");
			if (v)
				usage(argv[0]);
			vals_given = true;
			break;
		case 'p':
			cfg.busyloop_us = atoi(optarg);
			break;
		case 'b':
			cfg.bridge = true;
			break;
		case 'o':
			cfg.in_order = true;
			break;
		case 'A':
			cfg.activity = optarg;
			if (strcmp(optarg, "zap") && strcmp(optarg, "ksm") &&
			    strcmp(optarg, "numa") && strcmp(optarg, "none"))
				usage(argv[0]);
			break;
		case 'M':
			cfg.mark_id = strtoul(optarg, NULL, 0);
			break;
		case 'm':
			cfg.mark_id = strtoul(optarg, NULL, 0);
			marks_map();
			mark();
			return marks_mapped ? 0 : 1;
		case 'C':
			cfg.ctl = optarg;
			break;
		case 'x':
			cfg.xdp = optarg;
			break;
		case 'P':
			cfg.pin = false;
			break;
		default:
			usage(argv[0]);
		}
	}
	/* The values compared, unless -v named them. */
	if (!vals_given && !strcmp(cfg.knob, "busypoll")) {
		cfg.val[0] = "0";
		cfg.val[1] = "50";
	} else if (!vals_given && !strcmp(cfg.knob, "zerocopy")) {
		cfg.val[1] = "on";
	} else if (!vals_given && !strcmp(cfg.knob, "none")) {
		cfg.val[0] = "fixed";
		cfg.nval = 1;
	}
	/* -k none: one value; otherwise two or three to compare. */
	if ((!strcmp(cfg.knob, "none") ? cfg.nval != 1 : cfg.nval < 2) ||
	    cfg.rounds < 1 || cfg.rounds > MAX_ROUNDS || cfg.len < 60 ||
	    (cfg.len > 1514 && (cfg.len > GSO_FRAME || cfg.test != T_TX)) ||
	    cfg.secs <= 0 || cfg.ring < 64 || cfg.ring > 32768 ||
	    (cfg.ring & (cfg.ring - 1)))
		usage(argv[0]);

	marks_map();
	/* Before the rings and buffers exist: every VMA mergeable. */
	if (!strcmp(cfg.activity, "ksm") && prctl(PR_SET_MEMORY_MERGE, 1, 0, 0, 0)) {
		fprintf(stderr, "vhost_net_pps: PR_SET_MEMORY_MERGE: %s\n",
			strerror(errno));
		return 1;
	}
	setup();
	printf("# vhost_net_pps test=%s size=%zu ring=%u rounds=%d secs=%.2f warm=%.2f knob=%s values=%s%s%s%s%s dev=%s tap=%s worker=%d xdp=%s bridge=%s marks=%s in_order=%s activity=%s\n",
	       test_name[cfg.test], cfg.len, cfg.ring, cfg.rounds, cfg.secs,
	       cfg.warm, cfg.knob, cfg.val[0], cfg.nval > 1 ? "," : "",
	       cfg.nval > 1 ? cfg.val[1] : "", cfg.nval > 2 ? "," : "",
	       cfg.nval > 2 ? cfg.val[2] : "", devname[0] ? devname : "none",
	       n.ifname, worker_tid, cfg.xdp ? "on" : "off",
	       cfg.bridge ? "dummy" : "off", marks_mapped ? "on" : "off",
	       cfg.in_order ? "on" : "off", cfg.activity);
	fflush(stdout);
	if (!strcmp(cfg.activity, "zap"))
		pthread_create(&zap, NULL, zapper, NULL);
	if (cfg.test == T_RX)
		pthread_create(&thr, NULL, injector, NULL);
	if (cfg.test == T_RR)
		pthread_create(&thr, NULL, responder, NULL);

	for (i = 0; i < cfg.rounds; i++) {
		for (m = 0; m < cfg.nval; m++) {
			/* Who goes first rotates from round to round. */
			int mode = (i + m) % cfg.nval;
			struct snap a, b;

			pause_traffic();
			set_knob(cfg.val[mode]);
			run(now() + cfg.warm);
			memset(hist, 0, sizeof(hist));
			lat_sum = 0;
			take(&a, true);
			run(a.t + cfg.secs);
			take(&b, false);
			print_sample(mode, i, &a, &b);
			res[mode][i] = cfg.test == T_RR ?
				(b.t - a.t) / (b.pkts - a.pkts) * 1e6 :
				(b.pkts - a.pkts) / (b.t - a.t);
			worker[mode][i] = (double)(b.worker_ns - a.worker_ns) /
					  (b.pkts - a.pkts);
		}
	}
	pause_traffic();
	/* Whole-run totals of the device, warm-ups included (for profiles). */
	{
		uint64_t st[S_N];

		read_stats(st);
		printf("total test=%s size=%zu tx_packets=%" PRIu64
		       " rx_packets=%" PRIu64 "\n", test_name[cfg.test], cfg.len,
		       st[S_TXP], st[S_RXP]);
	}
	atomic_store(&stop_threads, true);
	if (cfg.test == T_RX || cfg.test == T_RR)
		pthread_join(thr, NULL);
	if (!strcmp(cfg.activity, "zap"))
		pthread_join(zap, NULL);
	for (m = 0; m < cfg.nval; m++) {
		qsort(res[m], cfg.rounds, sizeof(double), cmp);
		qsort(worker[m], cfg.rounds, sizeof(double), cmp);
	}
	for (m = 0; m < cfg.nval; m++)
		printf("summary test=%s size=%zu knob=%s mode=%s unit=%s min=%.1f median=%.1f max=%.1f worker_ns_per_pkt=%.1f\n",
		       test_name[cfg.test], cfg.len, cfg.knob, cfg.val[m],
		       cfg.test == T_RR ? "us" : "pps", res[m][0],
		       res[m][cfg.rounds / 2], res[m][cfg.rounds - 1],
		       worker[m][cfg.rounds / 2]);
	for (m = 1; m < cfg.nval; m++)
		printf("ratio test=%s size=%zu knob=%s %s/%s=%.3f\n",
		       test_name[cfg.test], cfg.len, cfg.knob, cfg.val[m],
		       cfg.val[0], res[m][cfg.rounds / 2] / res[0][cfg.rounds / 2]);
	vnet_close(&n);
	bridge_remove();
	return 0;
}
