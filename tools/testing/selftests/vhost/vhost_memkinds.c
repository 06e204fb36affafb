// SPDX-License-Identifier: GPL-2.0
/*
 * vhost-net rings in memory of unusual kinds: userfaultfd-registered
 * (missing and write-protect modes), memfd_secret, hardware-poisoned,
 * PROT_NONE and read-only, and a descriptor table off its 16-byte
 * alignment, and a read through the map that finds poison.  The metadata
 * direct map must refuse what it cannot serve (GUP's refusals and its own
 * count in refused, nothing goes through the map) and leave the rings to
 * uaccess, whose result must be the same with the map on and off (variants
 * map_on and map_off): byte-exact traffic where uaccess reaches the rings,
 * an error on the vring error eventfd where it cannot, and never a kernel
 * splat (the VM runner fails on any; the tests also scan the log).
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
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#include "../kselftest_harness.h"
#include "vhost_net_lib.h"

#define PAGE 4096UL
#define NUM 256
#define PAGE_DOWN(p) ((void *)((uintptr_t)(p) & ~(PAGE - 1)))

#ifndef MADV_HWPOISON
#define MADV_HWPOISON 100
#endif
#ifndef __NR_memfd_secret
#define __NR_memfd_secret 447
#endif

FIXTURE(memkinds) {
	struct vnet n;
	void *alloc;			/* ring memory the driver uses */
	size_t alloc_len;
	void *view;			/* a second mapping of it, or NULL */
	size_t view_len;
	int old_default;
	uint32_t seq;
	struct uffd_srv u;
	bool sigbus_set;
	struct sigaction old_sigbus;
	bool hwpoison_filtered;
};

FIXTURE_VARIANT(memkinds) {
	bool map;
};

FIXTURE_VARIANT_ADD(memkinds, map_on) {
	.map = true,
};

FIXTURE_VARIANT_ADD(memkinds, map_off) {
	.map = false,
};

/* A device whose rings are the standard layout at rings. */
static int open_at(FIXTURE_DATA(memkinds) *self, void *rings, bool fill)
{
	struct vring_layout l[2];
	struct vnet_opts o = {
		.ring_num = NUM, .event_idx = true, .mrg_rxbuf = true,
		.layout = { &l[0], &l[1] },
	};
	int r;

	vnet_rings_layout(rings, NUM, l);
	memset(rings, 0, vnet_rings_size(NUM));
	r = vnet_open(&self->n, &o);
	if (!r && fill)
		vnet_rx_fill(&self->n);
	return r;
}

/*
 * Make mode the default of new devices and return the old default.  The
 * module parameter is the feature under test: missing or read-only, the
 * test fails.  A mode written but not read back is restored first.
 */
static int require_mode(struct __test_metadata *_metadata, int mode)
{
	char why[VNET_WHY_LEN];
	int old = metamap_require_default(mode, why);

	ASSERT_LE(0, old) TH_LOG("%s", why);
	return old;
}

FIXTURE_SETUP(memkinds)
{
	int r;

	self->n.vhost_fd = -1;
	self->n.tap_fd = -1;
	self->n.sock_fd = -1;
	self->u.fd = -1;
	self->u.stop = -1;
	r = access("/dev/vhost-net", R_OK | W_OK) ? -errno : 0;
	ASSERT_EQ(0, r) TH_LOG("/dev/vhost-net: %s", strerror(-r));
	self->old_default = require_mode(_metadata, variant->map ? METAMAP_MAP :
								  METAMAP_OFF);
	self->alloc_len = vnet_rings_size(NUM);
	self->alloc = vnet_map_anon(self->alloc_len);
	ASSERT_NE(NULL, self->alloc);
}

#define HWPOISON_DIR "/sys/kernel/debug/hwpoison"
#define KPF_NOPAGE 20

/*
 * Make memory failure handling leave every page as it is, or stop that
 * (CONFIG_HWPOISON_INJECT's filter: only a page whose stable flags hold
 * KPF_NOPAGE, which no page in use holds, would be handled).  0 or -errno.
 */
static int hwpoison_filter_all(bool on)
{
	char v[32];
	int r;

	if (!on)
		return write_str(HWPOISON_DIR "/corrupt-filter-enable", "0");
	snprintf(v, sizeof(v), "%llu", 1ULL << KPF_NOPAGE);
	r = write_str(HWPOISON_DIR "/corrupt-filter-flags-mask", v);
	if (!r)
		r = write_str(HWPOISON_DIR "/corrupt-filter-flags-value", v);
	if (!r)
		r = write_str(HWPOISON_DIR "/corrupt-filter-enable", "1");
	return r;
}

FIXTURE_TEARDOWN(memkinds)
{
	vnet_close(&self->n);
	uffd_stop(&self->u);
	if (self->sigbus_set)
		sigaction(SIGBUS, &self->old_sigbus, NULL);
	if (self->hwpoison_filtered)
		hwpoison_filter_all(false);
	if (self->alloc)
		munmap(self->alloc, self->alloc_len);
	if (self->view)
		munmap(self->view, self->view_len);
	if (self->old_default >= 0)
		metamap_set_default(self->old_default);
}

/* count frames each way, byte-exact. */
static void traffic(struct __test_metadata *_metadata,
		    FIXTURE_DATA(memkinds) *self, int count)
{
	char why[VNET_WHY_LEN];

	ASSERT_EQ(0, vnet_check_mix(&self->n, count, true, self->seq, why))
		TH_LOG("%s", why);
	self->seq += count;
}

static void tx_traffic(struct __test_metadata *_metadata,
		       FIXTURE_DATA(memkinds) *self, int count)
{
	char why[VNET_WHY_LEN];

	ASSERT_EQ(0, vnet_check_mix(&self->n, count, false, self->seq, why))
		TH_LOG("%s", why);
	self->seq += count;
}

static void stats(struct __test_metadata *_metadata,
		  FIXTURE_DATA(memkinds) *self, int q, struct metamap_stats *s)
{
	int r = vnet_metamap_stats(&self->n, q, s);

	ASSERT_EQ(0, r) TH_LOG("vq%d fdinfo: %s (no refused counter?)", q,
			       strerror(-r));
	TH_LOG("vq%d: enabled=%d valid=%d fast=%lu fallback=%lu inval=%lu remaps=%lu failures=%lu refused=%lu",
	       q, s->enabled, s->valid, s->fast, s->fallback, s->invalidations,
	       s->remaps, s->remap_failures, s->refused);
}

static uint64_t fast_now(struct __test_metadata *_metadata,
			 FIXTURE_DATA(memkinds) *self, int q)
{
	struct metamap_stats s;

	stats(_metadata, self, q, &s);
	return s.fast;
}

/*
 * Queue q's rings were not served by the map: with the map on, nothing
 * went through the map since fast0 was read (0: since setup), the map is
 * not valid, and either the refused counter grew (@refused) or the map was
 * never built (a ring whose avail index uaccess cannot read is never asked
 * of the map); with the map off, nothing was refused and nothing mapped.
 */
static void expect_unserved(struct __test_metadata *_metadata,
			    FIXTURE_DATA(memkinds) *self,
			    const FIXTURE_VARIANT(memkinds) *variant, int q,
			    uint64_t fast0, bool refused)
{
	struct metamap_stats s;

	stats(_metadata, self, q, &s);
	EXPECT_EQ(variant->map, s.enabled);
	if (!variant->map) {
		EXPECT_EQ(0, s.refused);
		EXPECT_EQ(0, s.fast);
		return;
	}
	if (refused) {
		EXPECT_LT(0, s.refused) TH_LOG("vq%d: not refused", q);
	} else {
		EXPECT_EQ(0, s.remaps) TH_LOG("vq%d: built", q);
	}
	EXPECT_EQ(fast0, s.fast) TH_LOG("vq%d: used the map", q);
	EXPECT_EQ(0, s.valid);
}

static void expect_refused(struct __test_metadata *_metadata,
			   FIXTURE_DATA(memkinds) *self,
			   const FIXTURE_VARIANT(memkinds) *variant, int q,
			   uint64_t fast0)
{
	expect_unserved(_metadata, self, variant, q, fast0, true);
}

/* Queue q's rings are ordinary: the map (if on) carried them. */
static void expect_mapped(struct __test_metadata *_metadata,
			  FIXTURE_DATA(memkinds) *self,
			  const FIXTURE_VARIANT(memkinds) *variant, int q)
{
	struct metamap_stats s;

	stats(_metadata, self, q, &s);
	EXPECT_EQ(variant->map, s.enabled);
	EXPECT_EQ(0, s.refused);
	if (variant->map) {
		EXPECT_LT(0, s.fast);
	} else {
		EXPECT_EQ(0, s.fast);
	}
}

/* Splats in the kernel log since kmsg_open() (closes fd). */
static int kmsg_scan(int fd, bool log_all)
{
	int hits = kmsg_splats(fd, NULL, 0, log_all);

	if (fd >= 0)
		close(fd);
	return hits;
}

/* The userfaultfd features, or -errno; a probe on a throwaway fd. */

/*
 * Save the (quiet) rings and drop their pages, then put one frame on the
 * wire without the driver touching a ring: the vhost worker is the first to
 * need the RX ring pages back, and must get them from the handler (with the
 * map on, it would rebuild the map here; the range is registered, so the
 * map must refuse instead of GUP running into handle_userfault()).  The
 * frame must arrive intact.  Returns with the rings present again.
 */
static void zap_and_refault(struct __test_metadata *_metadata,
			    FIXTURE_DATA(memkinds) *self, uint64_t fast0[2])
{
	struct uffd_srv *u = &self->u;
	uint8_t frame[300], got[300];
	unsigned int other;
	int i, r;

	usleep(200000);		/* vhost done with its last ring writes */
	memcpy(u->shadow, u->base, u->len);
	ASSERT_EQ(0, madvise(u->base, u->len, MADV_DONTNEED));
	for (i = 0; fast0 && i < 2; i++)
		fast0[i] = fast_now(_metadata, self, i);
	other = uffd_count(&u->other);
	frame_fill(frame, sizeof(frame), NULL, 0xfa017);
	ASSERT_EQ(0, wire_send(&self->n, frame, sizeof(frame)));
	for (i = 0; i < 1000 && uffd_count(&u->other) == other; i++)
		usleep(10000);
	ASSERT_LT(other, uffd_count(&u->other))
		TH_LOG("the vhost worker took no fault on the dropped rings");
	r = vnet_rx_one(&self->n, got, sizeof(got), NULL, 10000);
	ASSERT_EQ((int)sizeof(frame), r);
	ASSERT_EQ(0, memcmp(frame, got, sizeof(frame)));
	EXPECT_EQ(0, uffd_count(&u->errors))
		TH_LOG("handler: %s", strerror(u->last_errno));
}

/*
 * Rings in an anonymous region registered for missing faults before the
 * device exists.  The map must refuse them (never armed on such a range),
 * and everything goes through uaccess, whose faults the handler answers:
 * first the library's zeroing of the rings, then, after the pages are
 * dropped mid-run, the vhost worker's reads of them.  Traffic byte-exact.
 */
TEST_F_TIMEOUT(memkinds, uffd_missing_before_setup, 120)
{
	char why[VNET_WHY_LEN];
	int kfd, r;

	r = uffd_start(&self->u, 0, self->alloc, self->alloc_len, why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	kfd = kmsg_open();
	ASSERT_EQ(0, uffd_register(&self->u, self->alloc, self->alloc_len,
				   UFFDIO_REGISTER_MODE_MISSING));
	ASSERT_EQ(0, open_at(self, self->alloc, true));
	EXPECT_LE(self->alloc_len / PAGE, uffd_count(&self->u.missing));
	traffic(_metadata, self, 200);
	zap_and_refault(_metadata, self, NULL);
	traffic(_metadata, self, 300);
	TH_LOG("%u missing faults answered, %u of vhost",
	       uffd_count(&self->u.missing), uffd_count(&self->u.other));
	EXPECT_EQ(0, uffd_count(&self->u.errors));
	EXPECT_EQ(0, kmsg_scan(kfd, false));
	expect_refused(_metadata, self, variant, VNET_TX, 0);
	expect_refused(_metadata, self, variant, VNET_RX, 0);
}

/*
 * The map is built, then the rings are registered for missing faults and
 * dropped with MADV_DONTNEED.  The map's next rebuild must refuse the range
 * (GUP cannot wait for the handler: "FAULT_FLAG_ALLOW_RETRY missing" and a
 * stack dump, then -EFAULT, on a kernel that tries) and uaccess gets the
 * saved content from the handler.  No splat, no SIGBUS, traffic byte-exact,
 * nothing through the map after the drop.
 */
TEST_F_TIMEOUT(memkinds, uffd_missing_after_map_dontneed, 120)
{
	char why[VNET_WHY_LEN];
	uint64_t fast0[2];
	int kfd, q, r;

	ASSERT_EQ(0, open_at(self, self->alloc, true));
	traffic(_metadata, self, 200);
	for (q = 0; q < 2; q++)
		expect_mapped(_metadata, self, variant, q);
	r = uffd_start(&self->u, 0, self->alloc, self->alloc_len, why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	ASSERT_EQ(0, uffd_register(&self->u, self->alloc, self->alloc_len,
				   UFFDIO_REGISTER_MODE_MISSING));
	kfd = kmsg_open();
	zap_and_refault(_metadata, self, fast0);
	traffic(_metadata, self, 300);
	TH_LOG("%u missing faults answered, %u of vhost",
	       uffd_count(&self->u.missing), uffd_count(&self->u.other));
	EXPECT_LT(0, uffd_count(&self->u.missing));
	EXPECT_EQ(0, uffd_count(&self->u.errors));
	EXPECT_EQ(0, kmsg_scan(kfd, false));
	for (q = 0; q < 2; q++)
		expect_refused(_metadata, self, variant, q, fast0[q]);
}

/*
 * Rounds of: write-protect the TX used ring page, send frames.  Every round
 * vhost's used-ring writes must fault, the handler lifts the protection,
 * and the writes complete: the driver sees every buffer used, frames
 * byte-exact.  The driver never writes that page, so every write-protect
 * fault is vhost's.
 */
static void wp_rounds(struct __test_metadata *_metadata,
		      FIXTURE_DATA(memkinds) *self, void *used, int rounds)
{
	unsigned int wp0;
	int i;

	for (i = 0; i < rounds; i++) {
		wp0 = uffd_count(&self->u.wp);
		ASSERT_EQ(0, uffd_protect(&self->u, used, PAGE));
		tx_traffic(_metadata, self, 100);
		EXPECT_LT(wp0, uffd_count(&self->u.wp))
			TH_LOG("round %d: no write-protect fault", i);
	}
	TH_LOG("%u write-protect faults, %u of other threads",
	       uffd_count(&self->u.wp), uffd_count(&self->u.other));
	EXPECT_EQ(0, uffd_count(&self->u.wp_test));
	EXPECT_EQ(0, uffd_count(&self->u.errors))
		TH_LOG("handler: %s", strerror(self->u.last_errno));
}

/*
 * The TX used ring page registered for write-protect faults before setup:
 * the map must refuse the TX queue and leave the RX queue, whose rings are
 * in another VMA, alone.
 */
TEST_F_TIMEOUT(memkinds, uffd_wp_used_before_setup, 120)
{
	struct vring_layout l[2];
	char why[VNET_WHY_LEN];
	void *used;
	int kfd, r;

	vnet_rings_layout(self->alloc, NUM, l);
	used = PAGE_DOWN(l[VNET_TX].used);
	r = uffd_start(&self->u, UFFD_FEATURE_PAGEFAULT_FLAG_WP, self->alloc,
		       self->alloc_len, why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	kfd = kmsg_open();
	ASSERT_EQ(0, uffd_register(&self->u, used, PAGE,
				   UFFDIO_REGISTER_MODE_WP));
	ASSERT_EQ(0, open_at(self, self->alloc, true));
	wp_rounds(_metadata, self, used, 4);
	traffic(_metadata, self, 200);
	EXPECT_EQ(0, kmsg_scan(kfd, false));
	expect_refused(_metadata, self, variant, VNET_TX, 0);
	expect_mapped(_metadata, self, variant, VNET_RX);
}

/*
 * The same, registered and protected once the map is built: protecting
 * invalidates it, and the rebuild must refuse the range rather than fault
 * the page for write with GUP (which cannot wait for the handler).
 */
TEST_F_TIMEOUT(memkinds, uffd_wp_used_after_map, 120)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	char why[VNET_WHY_LEN];
	uint64_t fast0;
	void *used;
	int kfd, r;

	ASSERT_EQ(0, open_at(self, self->alloc, true));
	traffic(_metadata, self, 200);
	expect_mapped(_metadata, self, variant, VNET_TX);
	used = PAGE_DOWN(vq->used);
	r = uffd_start(&self->u, UFFD_FEATURE_PAGEFAULT_FLAG_WP, self->alloc,
		       self->alloc_len, why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	ASSERT_EQ(0, uffd_register(&self->u, used, PAGE,
				   UFFDIO_REGISTER_MODE_WP));
	kfd = kmsg_open();
	ASSERT_EQ(0, uffd_protect(&self->u, used, PAGE));
	fast0 = fast_now(_metadata, self, VNET_TX);
	wp_rounds(_metadata, self, used, 4);
	traffic(_metadata, self, 200);
	EXPECT_EQ(0, kmsg_scan(kfd, false));
	expect_refused(_metadata, self, variant, VNET_TX, fast0);
}

/*
 * Rings in memfd_secret(2) memory, which is not in the kernel's direct map:
 * the map must refuse them; uaccess reaches them, traffic byte-exact.
 */
TEST_F(memkinds, memfd_secret_rings)
{
	size_t len = vnet_rings_size(NUM);
	int fd = syscall(__NR_memfd_secret, O_CLOEXEC), err = errno;
	void *p;

	/* CONFIG_SECRETMEM is in the selftests' config, enabled by default */
	ASSERT_LE(0, fd) TH_LOG("memfd_secret: %s%s", strerror(err),
				err == ENOSYS ?
				" (CONFIG_SECRETMEM off or secretmem.enable=0)" : "");
	ASSERT_EQ(0, ftruncate(fd, len));
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	ASSERT_NE(MAP_FAILED, p) TH_LOG("mmap secretmem: %s", strerror(errno));
	munmap(self->alloc, self->alloc_len);
	self->alloc = p;
	self->alloc_len = len;
	ASSERT_EQ(0, open_at(self, p, true));
	traffic(_metadata, self, 500);
	expect_refused(_metadata, self, variant, VNET_TX, 0);
	expect_refused(_metadata, self, variant, VNET_RX, 0);
}

static volatile sig_atomic_t sigbus_count;
static volatile int sigbus_code;
static void *volatile sigbus_addr;

/*
 * MADV_HWPOISON sends the caller a SIGBUS (BUS_MCEERR_AR) on its way out of
 * madvise(); it is only recorded.  Any other one means a poisoned page was
 * touched, and returning would touch it again: fail.
 */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	sigbus_code = si->si_code;
	sigbus_addr = si->si_addr;
	if (++sigbus_count > 1)
		_exit(KSFT_FAIL);
}

static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	long v = -1;

	if (fd >= 0 && read(fd, buf, sizeof(buf) - 1) > 0)
		v = strtol(buf, NULL, 10);
	if (fd >= 0)
		close(fd);
	return v;
}

struct rx_bg {
	struct vnet *n;
	uint32_t seq;
	int count;
	int r;
	char why[VNET_WHY_LEN];
};

static void *rx_bg_run(void *arg)
{
	static const size_t lens[] = { 60, 1514, 200, 777 };
	struct rx_bg *b = arg;

	b->r = vnet_check_rx(b->n, lens, 4, b->count, 32, b->seq, b->why);
	return NULL;
}

/*
 * Poison the TX queue's avail ring or descriptor table page while RX
 * traffic flows on the same device, then kick TX.  The poisoning unmaps the
 * page (invalidating the map); vhost's read of it fails and it reports the
 * error on the error eventfd; no frame leaves; the host survives, with only
 * memory-failure's own log lines; the RX queue goes on byte-exact; a new
 * device in fresh memory works byte-exact.  Poisoned pages stay leaked.
 */
static void hwpoison_tx(struct __test_metadata *_metadata,
			FIXTURE_DATA(memkinds) *self,
			const FIXTURE_VARIANT(memkinds) *variant, bool desc)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	struct sigaction sa = { .sa_sigaction = on_sigbus,
				.sa_flags = SA_SIGINFO };
	struct rx_bg rx = { .n = &self->n, .count = 300 };
	struct metamap_stats s;
	uint8_t frame[200], got[200];
	struct pollfd p;
	void *page;
	pthread_t t;
	int kfd, r;

	/* CONFIG_MEMORY_FAILURE is in the selftests' config */
	ASSERT_EQ(0, geteuid()) TH_LOG("MADV_HWPOISON needs CAP_SYS_ADMIN");
	ASSERT_EQ(0, access("/proc/sys/vm/memory_failure_early_kill", F_OK))
		TH_LOG("no CONFIG_MEMORY_FAILURE");
	ASSERT_EQ(1, read_long("/proc/sys/vm/memory_failure_recovery"))
		TH_LOG("vm.memory_failure_recovery is not 1: poisoning would panic");
	ASSERT_EQ(0, open_at(self, self->alloc, true));
	traffic(_metadata, self, 200);
	expect_mapped(_metadata, self, variant, VNET_TX);
	p = (struct pollfd){ .fd = vq->err_fd, .events = POLLIN };

	ASSERT_EQ(0, sigaction(SIGBUS, &sa, &self->old_sigbus));
	self->sigbus_set = true;
	sigbus_count = 0;
	usleep(200000);		/* TX idle: nothing reads its rings now */
	if (desc) {
		/* A chain whose descriptor is on the page, published after. */
		frame_fill(frame, sizeof(frame), NULL, 0xdead);
		ASSERT_EQ(0, vnet_tx_add(&self->n, NULL, frame, sizeof(frame)));
	}
	page = PAGE_DOWN(desc ? (void *)vq->desc : (void *)vq->avail);
	rx.seq = self->seq;
	self->seq += rx.count;
	ASSERT_EQ(0, pthread_create(&t, NULL, rx_bg_run, &rx));
	usleep(50000);
	kfd = kmsg_open();
	r = madvise(page, PAGE, MADV_HWPOISON) ? -errno : 0;
	if (r)
		pthread_join(t, NULL);
	ASSERT_EQ(0, r) TH_LOG("MADV_HWPOISON: %s", strerror(-r));
	TH_LOG("SIGBUS on poisoning: %d, si_code %d (BUS_MCEERR_AR %d), addr %p, page %p",
	       (int)sigbus_count, sigbus_code, BUS_MCEERR_AR, sigbus_addr,
	       page);
	if (desc)
		vq_publish(vq);		/* avail ring page is intact */
	vq_notify(vq);
	EXPECT_EQ(1, poll(&p, 1, 10000)) TH_LOG("no error from vhost");
	EXPECT_LE(1, vq_error_count(vq));
	EXPECT_EQ(-ETIMEDOUT, wire_recv(&self->n, got, sizeof(got), 500))
		TH_LOG("a frame left through a poisoned ring");
	pthread_join(t, NULL);
	EXPECT_EQ(0, rx.r) TH_LOG("rx during the poisoning: %s", rx.why);
	EXPECT_EQ(0, kmsg_scan(kfd, true));

	stats(_metadata, self, VNET_TX, &s);
	if (variant->map) {
		EXPECT_LE(1, s.invalidations);
		EXPECT_EQ(0, s.valid);
	}
	/* New device, fresh memory; the old rings (and the page) go. */
	vnet_close(&self->n);
	munmap(self->alloc, self->alloc_len);
	self->alloc = vnet_map_anon(self->alloc_len);
	ASSERT_NE(NULL, self->alloc);
	ASSERT_EQ(0, open_at(self, self->alloc, true));
	traffic(_metadata, self, 300);
	expect_mapped(_metadata, self, variant, VNET_TX);
	expect_mapped(_metadata, self, variant, VNET_RX);
}

TEST_F_TIMEOUT(memkinds, hwpoison_tx_avail_mid_run, 120)
{
	hwpoison_tx(_metadata, self, variant, false);
}

TEST_F_TIMEOUT(memkinds, hwpoison_tx_desc_mid_run, 120)
{
	hwpoison_tx(_metadata, self, variant, true);
}

#define FAIL_MC "/sys/kernel/debug/fail_vhost_metamap_mc"
#define FAIL_PAYLOAD_MC "/sys/kernel/debug/fail_vhost_metamap_payload_mc"

/*
 * Arm the fault attribute at dir (FAIL_MC: each section of the ring map
 * evaluates it once; FAIL_PAYLOAD_MC: each copy through the payload map)
 * for its next `times` evaluations, or disarm it (0).
 */
static int fail_arm(const char *dir, int times)
{
	char path[96], v[16];
	int r;

	snprintf(v, sizeof(v), "%d", times);
	snprintf(path, sizeof(path), "%s/verbose", dir);
	r = write_str(path, "0");
	snprintf(path, sizeof(path), "%s/interval", dir);
	if (!r)
		r = write_str(path, "1");
	snprintf(path, sizeof(path), "%s/probability", dir);
	if (!r)
		r = write_str(path, times ? "100" : "0");
	snprintf(path, sizeof(path), "%s/times", dir);
	if (!r)
		r = write_str(path, v);
	return r;
}

#define PM_UFFD_WP (1ULL << 57)

/* The /proc/self/pagemap entry of the page at addr (PM_PRESENT on error). */
static uint64_t pagemap_entry(void *addr)
{
	uint64_t e;

	return pagemap_read(addr, &e, 1) ? PM_PRESENT : e;
}

/* The page at addr is no longer mapped (pagemap: not present). */
static bool page_unmapped(void *addr)
{
	return !(pagemap_entry(addr) & PM_PRESENT);
}

/*
 * A read through the map finds the TX avail ring's page poisoned: fault
 * injection (fail_vhost_metamap_mc) gives the answer copy_mc_to_kernel()
 * gives when it consumes an uncorrectable memory error, which no emulator
 * raises; what follows is the kernel's own.  The access fails with a vring
 * error and nothing goes out; the page goes to memory failure handling,
 * which unmaps it from the owner; until then, and however often the guest
 * kicks, nothing of the ring is read again, through the map or the
 * uaccess read-ahead (no section, no fill: the worker never consumes the
 * poison twice); once the owner has a fresh page with the ring's content
 * there, the frame goes out byte-exact and the map serves again.  With the
 * map off nothing reads through copy_mc_to_kernel(): the injection never
 * fires.  What this does not cover: the machine check itself (its
 * recovery in copy_mc_to_kernel() is the kernel's), and modes off and
 * batch, which read the ring through uaccess as stock vhost does
 * (vhost-metamap.rst, "Memory errors").
 */
TEST_F_TIMEOUT(memkinds, poisoned_ring_read_fails_until_page_replaced, 90)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	struct sigaction sa = { .sa_sigaction = on_sigbus,
				.sa_flags = SA_SIGINFO };
	uint8_t frame[200], got[200], saved[PAGE];
	struct metamap_stats s0, s;
	struct pollfd p;
	void *page;
	int kfd, i;

	if (access("/sys/kernel/debug/failslab", F_OK))
		SKIP(return, "kernel without CONFIG_FAULT_INJECTION_DEBUG_FS");
	/* A kernel with fault injection and without ours is a failure. */
	ASSERT_EQ(0, access(FAIL_MC, F_OK)) TH_LOG("no %s", FAIL_MC);
	ASSERT_EQ(1, read_long("/proc/sys/vm/memory_failure_recovery"))
		TH_LOG("vm.memory_failure_recovery is not 1");
	ASSERT_EQ(0, open_at(self, self->alloc, true));
	traffic(_metadata, self, 100);
	page = PAGE_DOWN((void *)vq->avail);
	ASSERT_TRUE(page != PAGE_DOWN((void *)vq->desc) &&
		    page != PAGE_DOWN((void *)vq->used))
		TH_LOG("the avail ring shares its page");
	p = (struct pollfd){ .fd = vq->err_fd, .events = POLLIN };
	ASSERT_EQ(0, sigaction(SIGBUS, &sa, &self->old_sigbus));
	self->sigbus_set = true;
	sigbus_count = 0;
	usleep(100000);		/* TX idle: nothing reads its rings now */

	frame_fill(frame, sizeof(frame), NULL, 0xbeef);
	ASSERT_EQ(0, vnet_tx_add(&self->n, NULL, frame, sizeof(frame)));
	vq_publish(vq);
	memcpy(saved, page, PAGE);
	kfd = kmsg_open();
	ASSERT_EQ(0, fail_arm(FAIL_MC, 1)) TH_LOG("arming %s", FAIL_MC);
	vq_notify(vq);
	if (!variant->map) {
		ASSERT_EQ((int)sizeof(frame),
			  wire_recv(&self->n, got, sizeof(got), 10000));
		ASSERT_EQ(0, memcmp(frame, got, sizeof(frame)));
		ASSERT_EQ(0, vnet_tx_drain(&self->n, 10000));
		EXPECT_EQ(1, read_long(FAIL_MC "/times")) TH_LOG("injected");
		fail_arm(FAIL_MC, 0);
		stats(_metadata, self, VNET_TX, &s);
		EXPECT_EQ(0, s.poisoned);
		traffic(_metadata, self, 100);
		EXPECT_EQ(0, kmsg_scan(kfd, false));
		return;
	}
	EXPECT_EQ(1, poll(&p, 1, 10000)) TH_LOG("no error from vhost");
	EXPECT_LE(1, vq_error_count(vq));
	EXPECT_EQ(0, read_long(FAIL_MC "/times")) TH_LOG("not injected");
	fail_arm(FAIL_MC, 0);
	stats(_metadata, self, VNET_TX, &s0);
	EXPECT_LE(1, s0.poisoned);
	EXPECT_EQ(0, s0.valid);

	/* Kicks while the page is handled: errors, no read of the ring. */
	for (i = 0; i < 3; i++) {
		vq_notify(vq);
		EXPECT_EQ(1, poll(&p, 1, 10000)) TH_LOG("no error, kick %d", i);
		vq_error_count(vq);
	}
	for (i = 0; i < 500 && !page_unmapped(page); i++)
		usleep(10000);
	EXPECT_TRUE(page_unmapped(page)) TH_LOG("memory failure left the page");
	vq_notify(vq);
	EXPECT_EQ(1, poll(&p, 1, 10000)) TH_LOG("no error after the unmap");
	vq_error_count(vq);
	EXPECT_EQ(-ETIMEDOUT, wire_recv(&self->n, got, sizeof(got), 300))
		TH_LOG("a frame left through a poisoned ring");
	stats(_metadata, self, VNET_TX, &s);
	EXPECT_EQ(s0.sections, s.sections) TH_LOG("the map read the ring");
	EXPECT_EQ(s0.fast, s.fast);
	EXPECT_EQ(s0.uaccess_fills, s.uaccess_fills)
		TH_LOG("the read-ahead read the ring");
	EXPECT_EQ(0, sigbus_count) TH_LOG("the test touched the page");

	/* The owner maps a fresh page with the ring's content. */
	ASSERT_EQ(page, mmap(page, PAGE, PROT_READ | PROT_WRITE,
			     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	memcpy(page, saved, PAGE);
	vq_notify(vq);
	ASSERT_EQ((int)sizeof(frame), wire_recv(&self->n, got, sizeof(got),
						10000));
	ASSERT_EQ(0, memcmp(frame, got, sizeof(frame)));
	ASSERT_EQ(0, vnet_tx_drain(&self->n, 10000));
	traffic(_metadata, self, 200);
	/* served by the map again (GUP refused the unmapped page meanwhile) */
	stats(_metadata, self, VNET_TX, &s);
	EXPECT_EQ(1, s.valid);
	EXPECT_LT(s0.fast, s.fast);
	EXPECT_EQ(0, kmsg_scan(kfd, true));
}

/* A TX buffer at buf: a virtio-net header of zeroes, then frame seq. */
static void buf_write(FIXTURE_DATA(memkinds) *self, uint8_t *buf, size_t len,
		      uint32_t seq)
{
	memset(buf, 0, self->n.hdr_len);
	frame_fill(buf + self->n.hdr_len, len, NULL, seq);
}

/*
 * Send the TX buffer at buf (header, then len bytes of frame) and expect
 * the frame want on the wire.  want is the caller's: the test thread must
 * not read a page the vhost worker is to fault in.
 */
static void send_expect(struct __test_metadata *_metadata,
			FIXTURE_DATA(memkinds) *self, uint8_t *buf,
			const uint8_t *want, size_t len, const char *after)
{
	uint8_t got[256];
	int r;

	ASSERT_EQ(0, vnet_tx_add_buf(&self->n, buf, self->n.hdr_len + len));
	vnet_kick(&self->n, VNET_TX);
	r = wire_recv(&self->n, got, sizeof(got), 10000);
	ASSERT_EQ((int)len, r) TH_LOG("after %s", after);
	EXPECT_EQ(0, memcmp(want, got, len))
		TH_LOG("after %s: frame %u on the wire, want %u", after,
		       frame_seq(got), frame_seq(want));
	ASSERT_EQ(0, vnet_tx_drain(&self->n, 10000));
}

/* The TX queue's counters, without a log line (for polling). */
static struct metamap_stats q_stats(struct __test_metadata *_metadata,
				    FIXTURE_DATA(memkinds) *self, int q)
{
	struct metamap_stats s = {};
	int r = vnet_metamap_stats(&self->n, q, &s);

	ASSERT_EQ(0, r) TH_LOG("vq%d fdinfo: %s", q, strerror(-r));
	return s;
}

static struct metamap_stats tx_stats(struct __test_metadata *_metadata,
				     FIXTURE_DATA(memkinds) *self)
{
	return q_stats(_metadata, self, VNET_TX);
}

/*
 * Send the TX buffer at buf, whose page is not mapped, in the region the
 * handler serves: the vhost worker's copy faults and waits for the
 * handler's UFFDIO_COPY of the shadow page, whose frame goes out.  One
 * missing fault, the worker's.  In mode map the payload map refused the
 * page (GUP cannot wait for the handler) and uaccess finished the copy.
 */
static void uffd_missing_send(struct __test_metadata *_metadata,
			      FIXTURE_DATA(memkinds) *self,
			      const FIXTURE_VARIANT(memkinds) *variant,
			      uint8_t *buf, size_t len, const char *after)
{
	struct uffd_srv *u = &self->u;
	unsigned int missing = uffd_count(&u->missing);
	unsigned int other = uffd_count(&u->other);
	const uint8_t *want = u->shadow + (buf - (uint8_t *)u->base);
	struct metamap_stats s0, s1;

	ASSERT_TRUE(page_unmapped(buf)) TH_LOG("%s: the page is mapped", after);
	s0 = tx_stats(_metadata, self);
	send_expect(_metadata, self, buf, want + self->n.hdr_len, len, after);
	s1 = tx_stats(_metadata, self);
	EXPECT_EQ(missing + 1, uffd_count(&u->missing))
		TH_LOG("after %s", after);
	EXPECT_EQ(other + 1, uffd_count(&u->other))
		TH_LOG("after %s: the fault was not the vhost worker's", after);
	if (variant->map) {
		EXPECT_EQ(s0.payload_fast, s1.payload_fast)
			TH_LOG("after %s: the payload map served a missing page",
			       after);
		EXPECT_EQ(s0.payload_fallback + 1, s1.payload_fallback);
	}
}

/*
 * A TX buffer in userfaultfd memory (a guest's RAM in postcopy
 * migration): one page registered for missing and write-protect faults.
 * Never touched, it is sent: the worker's copy waits for the handler's
 * UFFDIO_COPY and carries the frame copied.  Mapped now, it is written
 * and sent twice: read as any page (in mode map, through the payload
 * map), no fault.  Write-protected, it is sent (no fault: vhost only
 * reads, and the protection stays), then written by the driver (its own
 * fault lifts the protection) and sent.  Dropped (MADV_DONTNEED), it is
 * sent again: the handler's new copy goes out, not the dropped page's
 * frame.  The payload map never sends GUP into handle_userfault(): no
 * "FAULT_FLAG_ALLOW_RETRY missing" in the log.
 */
TEST_F_TIMEOUT(memkinds, uffd_tx_buffer_missing_and_wp, 60)
{
	struct uffd_srv *u = &self->u;
	struct metamap_stats s0, s1, s;
	char why[VNET_WHY_LEN];
	unsigned int wp_test;
	size_t len = 200;
	uint8_t *buf;
	int kfd, r;

	ASSERT_EQ(0, open_at(self, self->alloc, true));
	traffic(_metadata, self, 100);
	buf = vnet_map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	r = uffd_start(u, UFFD_FEATURE_PAGEFAULT_FLAG_WP, buf, PAGE, why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	ASSERT_EQ(0, uffd_register(u, buf, PAGE, UFFDIO_REGISTER_MODE_MISSING |
						 UFFDIO_REGISTER_MODE_WP));
	kfd = kmsg_open();
	s0 = tx_stats(_metadata, self);

	buf_write(self, u->shadow, len, 0x29001);
	uffd_missing_send(_metadata, self, variant, buf, len,
			  "the handler's first copy");

	s1 = tx_stats(_metadata, self);
	buf_write(self, buf, len, 0x29002);
	send_expect(_metadata, self, buf, buf + self->n.hdr_len, len,
		    "a write to the mapped page");
	buf_write(self, buf, len, 0x29003);
	send_expect(_metadata, self, buf, buf + self->n.hdr_len, len,
		    "a second write");
	s = tx_stats(_metadata, self);
	if (variant->map)
		EXPECT_LT(s1.payload_fast, s.payload_fast)
			TH_LOG("the mapped page not read through the payload map");

	ASSERT_EQ(0, uffd_protect(u, buf, PAGE));
	ASSERT_NE(0, pagemap_entry(buf) & PM_UFFD_WP);
	s1 = tx_stats(_metadata, self);
	send_expect(_metadata, self, buf, buf + self->n.hdr_len, len,
		    "UFFDIO_WRITEPROTECT");
	EXPECT_NE(0, pagemap_entry(buf) & PM_UFFD_WP)
		TH_LOG("a send lifted the write protection");
	EXPECT_EQ(0, uffd_count(&u->wp)) TH_LOG("a send took a write fault");
	s = tx_stats(_metadata, self);
	if (variant->map)
		EXPECT_LT(s1.payload_fast, s.payload_fast)
			TH_LOG("the protected page not read through the payload map");
	wp_test = uffd_count(&u->wp_test);
	buf_write(self, buf, len, 0x29004);
	EXPECT_EQ(wp_test + 1, uffd_count(&u->wp_test));
	send_expect(_metadata, self, buf, buf + self->n.hdr_len, len,
		    "the driver's write fault");

	ASSERT_EQ(0, madvise(buf, PAGE, MADV_DONTNEED));
	buf_write(self, u->shadow, len, 0x29005);
	uffd_missing_send(_metadata, self, variant, buf, len,
			  "MADV_DONTNEED and the handler's new copy");

	TH_LOG("%u missing faults, %u of vhost, %u write-protect faults",
	       uffd_count(&u->missing), uffd_count(&u->other),
	       uffd_count(&u->wp));
	EXPECT_EQ(0, uffd_count(&u->errors))
		TH_LOG("handler: %s", strerror(u->last_errno));
	EXPECT_EQ(0, kmsg_scan(kfd, false));
	s1 = tx_stats(_metadata, self);
	TH_LOG("payload: %s", payload_delta(&s0, &s1).s);
	if (!variant->map)
		EXPECT_EQ(0, s1.payload_fast + s1.payload_fallback +
			     s1.payload_fills + s1.payload_invalidations);
	traffic(_metadata, self, 100);
}

/*
 * A TX buffer whose page a userfaultfd registered with UFFD_USER_MODE_ONLY
 * provides (postcopy migration's pages are late the same way): the
 * worker's fault is a kernel-mode one, which such a userfaultfd does not
 * deliver, so the copy fails and the chain is given back.  The page
 * arrives 300 ms later (UFFDIO_COPY, as the owner's handler would do it)
 * with no second kick: the frame must leave, byte-exact, on a retry; and
 * the tries meanwhile were a backoff's few (counted in mode map, where
 * each is a payload map fallback), not a busy loop.
 */
TEST_F_TIMEOUT(memkinds, tx_fault_that_heals_sends_without_a_kick, 60)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {};
	struct uffdio_copy cp = {};
	struct metamap_stats s0, s1;
	uint8_t *buf, *src, got[256];
	size_t len = 200, hl;
	int ufd, r;

	ASSERT_EQ(0, open_at(self, self->alloc, true));
	hl = self->n.hdr_len;
	traffic(_metadata, self, 100);
	buf = vnet_map_anon(PAGE);	/* never touched: missing */
	src = vnet_map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, src);
	buf_write(self, src, len, 0x29500);
	ufd = syscall(__NR_userfaultfd,
		      O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
	ASSERT_LE(0, ufd) TH_LOG("userfaultfd(UFFD_USER_MODE_ONLY): %s",
				 strerror(errno));
	ASSERT_EQ(0, ioctl(ufd, UFFDIO_API, &api));
	reg.range.start = (uintptr_t)buf;
	reg.range.len = PAGE;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	ASSERT_EQ(0, ioctl(ufd, UFFDIO_REGISTER, &reg));

	s0 = tx_stats(_metadata, self);
	ASSERT_EQ(0, vnet_tx_add_buf(&self->n, buf, hl + len));
	vnet_kick(&self->n, VNET_TX);
	EXPECT_EQ(-ETIMEDOUT, wire_recv(&self->n, got, sizeof(got), 300))
		TH_LOG("a frame left from a missing page");
	s1 = tx_stats(_metadata, self);
	if (variant->map) {
		TH_LOG("%lu tries in 300 ms with the page missing",
		       s1.payload_fallback - s0.payload_fallback);
		EXPECT_LE(s0.payload_fallback + 2, s1.payload_fallback)
			TH_LOG("no retry without a kick");
		EXPECT_GE(s0.payload_fallback + 15, s1.payload_fallback)
			TH_LOG("the worker busy-retried the buffer");
	}

	/* the page arrives; no kick */
	cp.dst = (uintptr_t)buf;
	cp.src = (uintptr_t)src;
	cp.len = PAGE;
	ASSERT_EQ(0, ioctl(ufd, UFFDIO_COPY, &cp));
	r = wire_recv(&self->n, got, sizeof(got), 2000);
	ASSERT_EQ((int)len, r) TH_LOG("the frame did not leave once its page came");
	EXPECT_EQ(0, memcmp(src + hl, got, len))
		TH_LOG("frame %u on the wire, want %u", frame_seq(got),
		       frame_seq(src + hl));
	ASSERT_EQ(0, vnet_tx_drain(&self->n, 5000));
	close(ufd);
	munmap(buf, PAGE);
	munmap(src, PAGE);
	traffic(_metadata, self, 100);
}

/*
 * An RX buffer in userfaultfd memory, write-protected (a guest's RAM while
 * QEMU tracks its writes with userfaultfd).  Received into once before
 * the page is registered: in mode map the payload map holds it for write.
 * Registered and write-protected, received into again without the driver
 * touching it: the device's write must take the write-protect fault, from
 * the vhost worker, and the handler lift the protection, before the frame
 * is in the page; a write through a translation kept from before would
 * bypass the protection.  Received into a third time: the page is
 * writable again, no fault.  The payload map does not serve a page of a
 * registered VMA: those writes go through uaccess.
 */
TEST_F_TIMEOUT(memkinds, uffd_rx_buffer_wp, 60)
{
	struct uffd_srv *u = &self->u;
	struct metamap_stats s0, s1, s2;
	char why[VNET_WHY_LEN];
	unsigned int other;
	uint8_t *buf;
	int kfd, r;

	ASSERT_EQ(0, open_at(self, self->alloc, false));
	tx_traffic(_metadata, self, 100);
	buf = vnet_map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	memset(buf, 0xa5, PAGE);
	kfd = kmsg_open();
	s0 = q_stats(_metadata, self, VNET_RX);
	ASSERT_EQ(0, vnet_rx_expect(&self->n, buf, 1024, 0xa5, 0x29101, 200,
				    why))
		TH_LOG("the first receive: %s", why);
	s1 = q_stats(_metadata, self, VNET_RX);
	if (variant->map)
		EXPECT_EQ(s0.payload_fast + 1, s1.payload_fast)
			TH_LOG("the first receive not through the payload map");

	r = uffd_start(u, UFFD_FEATURE_PAGEFAULT_FLAG_WP, buf, PAGE, why);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	ASSERT_EQ(0, uffd_register(u, buf, PAGE, UFFDIO_REGISTER_MODE_WP));
	ASSERT_EQ(0, uffd_protect(u, buf, PAGE));
	ASSERT_NE(0, pagemap_entry(buf) & PM_UFFD_WP);
	other = uffd_count(&u->other);
	ASSERT_EQ(0, vnet_rx_expect(&self->n, buf, 1024, 0xa5, 0x29102, 200,
				    why))
		TH_LOG("a receive into the protected page: %s", why);
	EXPECT_EQ(1, uffd_count(&u->wp))
		TH_LOG("the device wrote a write-protected page without a fault");
	EXPECT_EQ(other + 1, uffd_count(&u->other))
		TH_LOG("the fault was not the vhost worker's");
	EXPECT_EQ(0, pagemap_entry(buf) & PM_UFFD_WP);

	ASSERT_EQ(0, vnet_rx_expect(&self->n, buf, 1024, 0xa5, 0x29103, 200,
				    why))
		TH_LOG("a receive after the handler: %s", why);
	EXPECT_EQ(1, uffd_count(&u->wp));
	EXPECT_EQ(0, uffd_count(&u->errors))
		TH_LOG("handler: %s", strerror(u->last_errno));
	EXPECT_EQ(0, kmsg_scan(kfd, false));
	s2 = q_stats(_metadata, self, VNET_RX);
	TH_LOG("payload: %s", payload_delta(&s1, &s2).s);
	if (variant->map) {
		/* The registered page: uaccess both times. */
		EXPECT_EQ(s1.payload_fast, s2.payload_fast);
		EXPECT_EQ(s1.payload_fallback + 2, s2.payload_fallback);
		EXPECT_LE(1, s2.payload_invalidations - s1.payload_invalidations);
	} else {
		EXPECT_EQ(0, s2.payload_fast + s2.payload_fallback +
			     s2.payload_fills + s2.payload_invalidations);
	}
	munmap(buf, PAGE);
}

/*
 * Without a payload map (modes off and batch) no buffer is read through
 * copy_mc_to_kernel(): the armed FAIL_PAYLOAD_MC is never evaluated, the
 * frame goes out the first time, and no counter of the payload map moves.
 */
static void payload_mc_unserved(struct __test_metadata *_metadata,
				FIXTURE_DATA(memkinds) *self, uint8_t *buf,
				size_t len, int mode)
{
	struct metamap_stats s;

	s = tx_stats(_metadata, self);
	ASSERT_EQ(mode, s.mode);
	buf_write(self, buf, len, 0x29100 + mode);
	ASSERT_EQ(0, fail_arm(FAIL_PAYLOAD_MC, 1))
		TH_LOG("arming %s", FAIL_PAYLOAD_MC);
	send_expect(_metadata, self, buf, buf + self->n.hdr_len, len,
		    "arming the injection");
	EXPECT_EQ(1, read_long(FAIL_PAYLOAD_MC "/times"))
		TH_LOG("injected in mode %d", mode);
	fail_arm(FAIL_PAYLOAD_MC, 0);
	stats(_metadata, self, VNET_TX, &s);
	EXPECT_EQ(0, s.poisoned);
	EXPECT_EQ(0, s.payload_fast + s.payload_fallback + s.payload_fills +
		     s.payload_invalidations);
}

/*
 * Send the TX buffer at buf (frames seq, seq + 1, ...) until the payload
 * map reads it: a page met first is not filled.
 */
static void payload_map_holds(struct __test_metadata *_metadata,
			      FIXTURE_DATA(memkinds) *self, uint8_t *buf,
			      size_t len, uint32_t seq)
{
	struct metamap_stats s0, s;
	int i;

	s0 = tx_stats(_metadata, self);
	for (i = 0; i < 3; i++) {
		buf_write(self, buf, len, seq + i);
		send_expect(_metadata, self, buf, buf + self->n.hdr_len, len,
			    "a write");
		s = tx_stats(_metadata, self);
		if (s.payload_fast > s0.payload_fast)
			break;
	}
	ASSERT_LT(s0.payload_fast, s.payload_fast)
		TH_LOG("the payload map never read the buffer");
}

/*
 * Queue the TX buffer at buf (len bytes of frame after the header) with
 * FAIL_PAYLOAD_MC armed once, kick, and wait until poisoned counts the
 * copy that found the page poisoned.  Returns the counters from before the
 * kick in *before, and those after.
 */
static struct metamap_stats payload_poison_send(struct __test_metadata *_metadata,
						FIXTURE_DATA(memkinds) *self,
						uint8_t *buf, size_t len,
						struct metamap_stats *before)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	struct metamap_stats s0, s;
	int i;

	s0 = tx_stats(_metadata, self);
	*before = s0;
	ASSERT_EQ(0, fail_arm(FAIL_PAYLOAD_MC, 1))
		TH_LOG("arming %s", FAIL_PAYLOAD_MC);
	ASSERT_EQ(0, vnet_tx_add_buf(&self->n, buf, self->n.hdr_len + len));
	vq_publish(vq);
	vq_notify(vq);
	for (i = 0, s = s0; i < 1000 && s.poisoned == s0.poisoned; i++) {
		usleep(10000);
		s = tx_stats(_metadata, self);
	}
	EXPECT_EQ(0, read_long(FAIL_PAYLOAD_MC "/times")) TH_LOG("not injected");
	fail_arm(FAIL_PAYLOAD_MC, 0);
	EXPECT_EQ(s0.poisoned + 1, s.poisoned);
	return s;
}

/*
 * A TX copy through the payload map finds the buffer's page poisoned:
 * fault injection (fail_vhost_metamap_payload_mc) gives the answer
 * copy_mc_to_kernel() gives for an uncorrectable memory error, as
 * poisoned_ring_read_fails_until_page_replaced does for the ring.  The
 * frame is not sent: the chain stays unused and nothing reads the page
 * again until the next kick (on real hardware a retry would consume the
 * poison again); poisoned counts one; the page goes to memory failure
 * handling, which unmaps it from the owner (the test never touches it:
 * SIGBUS).  A kick then finds the page gone (GUP refuses it, uaccess
 * faults): a fault, tried again after a backoff (a fault may heal), a few
 * tries in 300 ms, not a worker spinning on the buffer (before vhost-net
 * waited for a kick there, 1240 tries in 300 ms); still nothing sent, no
 * second poison.  A
 * fresh page at the buffer's address with the frame written again (moved
 * in whole), and a kick: the frame goes out byte-exact, read through the
 * payload map.  In modes off and batch nothing copies through
 * copy_mc_to_kernel(): the attribute never fires, the frame goes out the
 * first time.
 */
TEST_F_TIMEOUT(memkinds, poisoned_buffer_read_drops_frame_until_page_replaced,
	       90)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	struct sigaction sa = { .sa_sigaction = on_sigbus,
				.sa_flags = SA_SIGINFO };
	uint8_t want[200], got[200];
	struct metamap_stats s0, s1, s;
	size_t hl, len = sizeof(want);
	uint8_t *buf, *fresh;
	int kfd, i, r;

	if (access("/sys/kernel/debug/failslab", F_OK))
		SKIP(return, "kernel without CONFIG_FAULT_INJECTION_DEBUG_FS");
	/* A kernel with fault injection and without ours is a failure. */
	ASSERT_EQ(0, access(FAIL_PAYLOAD_MC, F_OK))
		TH_LOG("no %s", FAIL_PAYLOAD_MC);
	ASSERT_EQ(1, read_long("/proc/sys/vm/memory_failure_recovery"))
		TH_LOG("vm.memory_failure_recovery is not 1");
	ASSERT_EQ(0, open_at(self, self->alloc, true));
	hl = self->n.hdr_len;
	traffic(_metadata, self, 100);
	buf = vnet_map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	if (!variant->map) {
		payload_mc_unserved(_metadata, self, buf, len, METAMAP_OFF);
		vnet_close(&self->n);
		ASSERT_LE(0, metamap_set_default(METAMAP_BATCH));
		ASSERT_EQ(0, open_at(self, self->alloc, true));
		payload_mc_unserved(_metadata, self, buf, len, METAMAP_BATCH);
		traffic(_metadata, self, 100);
		munmap(buf, PAGE);
		return;
	}

	payload_map_holds(_metadata, self, buf, len, 0x29200);

	ASSERT_EQ(0, sigaction(SIGBUS, &sa, &self->old_sigbus));
	self->sigbus_set = true;
	sigbus_count = 0;
	buf_write(self, buf, len, 0x29300);
	memcpy(want, buf + hl, len);
	kfd = kmsg_open();
	s = payload_poison_send(_metadata, self, buf, len, &s0);
	/* Not sent: a retry would read the poisoned page again. */
	EXPECT_EQ(-ETIMEDOUT, wire_recv(&self->n, got, sizeof(got), 300))
		TH_LOG("a frame left from a poisoned page (frame %u)",
		       frame_seq(got));
	EXPECT_EQ(0, vnet_tx_reap(&self->n)) TH_LOG("the chain was used");
	s = tx_stats(_metadata, self);
	TH_LOG("after the poison: poisoned +%lu, payload fast +%lu, fallback +%lu",
	       s.poisoned - s0.poisoned, s.payload_fast - s0.payload_fast,
	       s.payload_fallback - s0.payload_fallback);
	EXPECT_EQ(s0.payload_fast + s0.payload_fallback,
		  s.payload_fast + s.payload_fallback)
		TH_LOG("the buffer was read again before a kick");
	for (i = 0; i < 500 && !page_unmapped(buf); i++)
		usleep(10000);
	EXPECT_TRUE(page_unmapped(buf)) TH_LOG("memory failure left the page");

	/*
	 * A kick while the page is gone: tried, refused, nothing sent.  (The
	 * chain queued again if it was used, a failure reported above.)
	 */
	if (!self->n.tx_pending) {
		ASSERT_EQ(0, vnet_tx_add_buf(&self->n, buf, hl + len));
		vq_publish(vq);
	}
	s0 = tx_stats(_metadata, self);
	vq_notify(vq);
	for (i = 0, s = s0; i < 500 && s.payload_fallback == s0.payload_fallback;
	     i++) {
		usleep(10000);
		s = tx_stats(_metadata, self);
	}
	EXPECT_LT(s0.payload_fallback, s.payload_fallback)
		TH_LOG("the kick did not try the buffer");
	EXPECT_EQ(-ETIMEDOUT, wire_recv(&self->n, got, sizeof(got), 300))
		TH_LOG("a frame left from an unmapped page");
	s = tx_stats(_metadata, self);
	TH_LOG("one kick while the page is gone: %lu tries",
	       s.payload_fallback - s0.payload_fallback);
	/* a backoff's tries (1, 2, 4 ... 100 ms apart), not a busy loop */
	EXPECT_GE(s0.payload_fallback + 15, s.payload_fallback)
		TH_LOG("the worker busy-retried the buffer");
	EXPECT_EQ(s0.poisoned, s.poisoned);
	EXPECT_EQ(s0.payload_fast, s.payload_fast);
	EXPECT_EQ(0, sigbus_count) TH_LOG("the test touched the page");

	/*
	 * The owner puts a fresh page there with the frame written again:
	 * written first, then moved in (mremap), so that a worker reading
	 * the buffer meanwhile finds either no page or the frame.
	 */
	fresh = vnet_map_anon(PAGE);
	ASSERT_NE(NULL, fresh);
	buf_write(self, fresh, len, 0x29300);
	s0 = tx_stats(_metadata, self);
	ASSERT_EQ(buf, mremap(fresh, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
			      buf));
	vq_notify(vq);
	r = wire_recv(&self->n, got, sizeof(got), 10000);
	ASSERT_EQ((int)len, r);
	ASSERT_EQ(0, memcmp(want, got, len));
	ASSERT_EQ(0, vnet_tx_drain(&self->n, 10000));
	stats(_metadata, self, VNET_TX, &s1);
	EXPECT_LT(s0.payload_fast, s1.payload_fast)
		TH_LOG("the fresh page not read through the payload map");
	EXPECT_EQ(s0.poisoned, s1.poisoned);
	EXPECT_EQ(0, kmsg_scan(kfd, true));
	traffic(_metadata, self, 100);
	munmap(buf, PAGE);
}

/*
 * A TX copy through the payload map finds the buffer's page poisoned, and
 * memory failure handling cannot unmap it (its filter makes it leave every
 * page, as it leaves a page it fails to handle): the page is quarantined.
 * The frame is not sent, and every kick after that fails the copy before
 * reading anything, through the map or through uaccess, each counted in
 * poisoned: one machine check per poisoned page, however often the guest
 * kicks (before, the entry stayed valid and the next kick read the page
 * again through the map: on silicon a machine check per kick).  Once the
 * owner maps another page there the quarantine lifts and the frame goes
 * out byte-exact.  Only mode map has a payload map: in mode off (map_off)
 * the armed attribute never fires and the frame goes out at once.
 */
TEST_F_TIMEOUT(memkinds, poisoned_buffer_quarantined_while_mapped, 90)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	uint8_t want[200], got[200];
	struct metamap_stats s0, s;
	size_t hl, len = sizeof(want);
	uint8_t *buf, *fresh;
	int kfd, i, k, r;

	if (access("/sys/kernel/debug/failslab", F_OK))
		SKIP(return, "kernel without CONFIG_FAULT_INJECTION_DEBUG_FS");
	ASSERT_EQ(0, access(FAIL_PAYLOAD_MC, F_OK))
		TH_LOG("no %s", FAIL_PAYLOAD_MC);
	if (!variant->map) {
		/* Mode off: no payload map, nothing to quarantine. */
		ASSERT_EQ(0, open_at(self, self->alloc, true));
		buf = vnet_map_anon(PAGE);
		ASSERT_NE(NULL, buf);
		payload_mc_unserved(_metadata, self, buf, len, METAMAP_OFF);
		traffic(_metadata, self, 100);
		munmap(buf, PAGE);
		return;
	}
	if (access(HWPOISON_DIR, F_OK) && system("modprobe -q hwpoison_inject"))
		TH_LOG("modprobe hwpoison_inject failed");
	ASSERT_EQ(0, access(HWPOISON_DIR, F_OK))
		TH_LOG("no %s (CONFIG_HWPOISON_INJECT)", HWPOISON_DIR);
	ASSERT_EQ(0, open_at(self, self->alloc, true));
	hl = self->n.hdr_len;
	traffic(_metadata, self, 100);
	buf = vnet_map_anon(PAGE);
	ASSERT_NE(NULL, buf);
	payload_map_holds(_metadata, self, buf, len, 0x29500);

	buf_write(self, buf, len, 0x29600);
	memcpy(want, buf + hl, len);
	kfd = kmsg_open();
	self->hwpoison_filtered = true;
	r = hwpoison_filter_all(true);
	ASSERT_EQ(0, r) TH_LOG("the hwpoison filter: %s", strerror(-r));
	s = payload_poison_send(_metadata, self, buf, len, &s0);
	ASSERT_EQ(s0.poisoned + 1, s.poisoned);

	/* Kicks while the page stays: refused, nothing read, nothing sent. */
	for (k = 1; k <= 3; k++) {
		usleep(30000);	/* past the quarantine's 10 ms between checks */
		vq_notify(vq);
		for (i = 0; i < 500 && s.poisoned < s0.poisoned + 1 + k; i++) {
			usleep(10000);
			s = tx_stats(_metadata, self);
		}
		EXPECT_EQ(s0.poisoned + 1 + k, s.poisoned)
			TH_LOG("kick %d: not refused as poisoned", k);
	}
	EXPECT_EQ(-ETIMEDOUT, wire_recv(&self->n, got, sizeof(got), 300))
		TH_LOG("a frame left from a quarantined page (frame %u)",
		       frame_seq(got));
	EXPECT_EQ(0, vnet_tx_reap(&self->n)) TH_LOG("the chain was used");
	EXPECT_FALSE(page_unmapped(buf)) TH_LOG("memory failure unmapped the page");
	s = tx_stats(_metadata, self);
	TH_LOG("after 3 kicks: poisoned +%lu, payload fast +%lu, fallback +%lu, fills +%lu",
	       s.poisoned - s0.poisoned, s.payload_fast - s0.payload_fast,
	       s.payload_fallback - s0.payload_fallback,
	       s.payload_fills - s0.payload_fills);
	EXPECT_EQ(s0.payload_fast, s.payload_fast)
		TH_LOG("the quarantined page was read through the map");
	EXPECT_EQ(s0.payload_fallback, s.payload_fallback)
		TH_LOG("the quarantined page was read through uaccess");

	/* Another page there: the quarantine lifts, the frame goes out. */
	fresh = vnet_map_anon(PAGE);
	ASSERT_NE(NULL, fresh);
	buf_write(self, fresh, len, 0x29600);
	ASSERT_EQ(buf, mremap(fresh, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED,
			      buf));
	s0 = tx_stats(_metadata, self);
	usleep(30000);
	vq_notify(vq);
	r = wire_recv(&self->n, got, sizeof(got), 10000);
	ASSERT_EQ((int)len, r);
	ASSERT_EQ(0, memcmp(want, got, len));
	ASSERT_EQ(0, vnet_tx_drain(&self->n, 10000));
	s = tx_stats(_metadata, self);
	EXPECT_EQ(s0.poisoned, s.poisoned);
	self->hwpoison_filtered = false;
	EXPECT_EQ(0, hwpoison_filter_all(false));
	EXPECT_EQ(0, kmsg_scan(kfd, true));
	traffic(_metadata, self, 100);
	munmap(buf, PAGE);
}

/* mprotect the whole pages of [p, p + len). */
static int protect_part(void *p, size_t len, int prot)
{
	uintptr_t lo = (uintptr_t)PAGE_DOWN(p);
	uintptr_t hi = ((uintptr_t)p + len + PAGE - 1) & ~(PAGE - 1);

	return mprotect((void *)lo, hi - lo, prot) ? -errno : 0;
}

#define PART_DESC 1
#define PART_AVAIL 2

/*
 * Rings in a memfd mapped twice: the driver (the library) works through
 * self->alloc, vhost is given the same offsets in self->view, where the
 * desc and/or avail pages of the queues in qmask get prot before the device
 * is set up (a first device, set up to initialise the rings, is closed).
 */
static int open_aliased(FIXTURE_DATA(memkinds) *self, unsigned int qmask,
			unsigned int parts, int prot)
{
	size_t len = vnet_rings_size(NUM);
	struct vring_layout v[2], d[2];
	int fd = memfd_create("vhost-rings", MFD_CLOEXEC), q, r;

	if (fd < 0 || ftruncate(fd, len))
		return -errno;
	munmap(self->alloc, self->alloc_len);
	self->alloc = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	self->view = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (self->alloc == MAP_FAILED || self->view == MAP_FAILED) {
		r = -errno;
		if (self->alloc == MAP_FAILED)
			self->alloc = NULL;
		if (self->view == MAP_FAILED)
			self->view = NULL;
		return r;
	}
	self->alloc_len = len;
	self->view_len = len;
	r = open_at(self, self->alloc, false);
	if (r)
		return r;
	close(self->n.vhost_fd);
	self->n.vhost_fd = -1;

	vnet_rings_layout(self->view, NUM, v);
	for (q = 0; q < 2; q++) {
		if (!(qmask & 1 << q))
			continue;
		r = 0;
		if (parts & PART_DESC)
			r = protect_part(v[q].desc, vring_desc_size(NUM), prot);
		if (!r && (parts & PART_AVAIL))
			r = protect_part(v[q].avail, vring_avail_size(NUM),
					 prot);
		if (r)
			return r;
	}
	for (q = 0; q < 2; q++) {
		struct vq *vq = &self->n.vq[q];

		d[q] = (struct vring_layout){ vq->desc, vq->avail, vq->used };
		vq->desc = v[q].desc;
		vq->avail = v[q].avail;
		vq->used = v[q].used;
	}
	self->n.vhost_fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
	r = self->n.vhost_fd < 0 ? -errno : vnet_setup(&self->n);
	for (q = 0; q < 2; q++) {
		self->n.vq[q].desc = d[q].desc;
		self->n.vq[q].avail = d[q].avail;
		self->n.vq[q].used = d[q].used;
	}
	if (!r)
		vnet_rx_fill(&self->n);
	return r;
}

/*
 * The TX queue's desc table or avail ring PROT_NONE where vhost sees it
 * (the driver writes through another mapping of the same pages).  The map
 * must not serve the TX queue (GUP refuses the desc table when the map is
 * built; an avail ring uaccess cannot read is never asked of the map);
 * uaccess cannot read the ring either, so a kick gets an error on the
 * error eventfd and no frame out, while the RX queue works byte-exact.
 * Once readable again, the pending frame and what follows go out
 * byte-exact.
 */
static void prot_none_tx(struct __test_metadata *_metadata,
			 FIXTURE_DATA(memkinds) *self,
			 const FIXTURE_VARIANT(memkinds) *variant,
			 unsigned int part)
{
	struct vq *vq = &self->n.vq[VNET_TX];
	static const size_t len = 500;
	struct vring_layout v[2];
	uint8_t frame[200], got[200];
	char why[VNET_WHY_LEN];
	struct pollfd p;
	int r;

	r = open_aliased(self, 1 << VNET_TX, part, PROT_NONE);
	ASSERT_EQ(0, r) TH_LOG("setup: %s", strerror(-r));
	p = (struct pollfd){ .fd = vq->err_fd, .events = POLLIN };
	ASSERT_EQ(0, vnet_check_rx(&self->n, &len, 1, 300, 64, self->seq, why))
		TH_LOG("rx: %s", why);
	self->seq += 300;

	frame_fill(frame, sizeof(frame), NULL, 0xbad);
	ASSERT_EQ(0, vnet_tx_add(&self->n, NULL, frame, sizeof(frame)));
	vq_publish(vq);
	vq_notify(vq);
	EXPECT_EQ(1, poll(&p, 1, 10000)) TH_LOG("no error from vhost");
	EXPECT_LE(1, vq_error_count(vq));
	EXPECT_EQ(-ETIMEDOUT, wire_recv(&self->n, got, sizeof(got), 300));
	/* desc: the map is built and GUP refuses it; avail: never asked */
	expect_unserved(_metadata, self, variant, VNET_TX, 0,
			part == PART_DESC);
	expect_mapped(_metadata, self, variant, VNET_RX);

	vnet_rings_layout(self->view, NUM, v);
	ASSERT_EQ(0, protect_part(part == PART_DESC ? (void *)v[VNET_TX].desc :
				  (void *)v[VNET_TX].avail, PAGE,
				  PROT_READ | PROT_WRITE));
	vq_notify(vq);
	r = wire_recv(&self->n, got, sizeof(got), 10000);
	ASSERT_EQ((int)sizeof(frame), r) TH_LOG("pending frame: %d", r);
	ASSERT_EQ(0, memcmp(frame, got, sizeof(frame)));
	ASSERT_EQ(0, vnet_tx_drain(&self->n, 10000));
	traffic(_metadata, self, 200);
}

TEST_F_TIMEOUT(memkinds, prot_none_tx_desc, 90)
{
	prot_none_tx(_metadata, self, variant, PART_DESC);
}

TEST_F_TIMEOUT(memkinds, prot_none_tx_avail, 90)
{
	prot_none_tx(_metadata, self, variant, PART_AVAIL);
}

/*
 * Desc tables and avail rings of both queues read-only where vhost sees
 * them: vhost only reads them, so traffic flows byte-exact, and the map
 * serves them as uaccess does (GUP faults them in for read; the map never
 * writes there).
 */
TEST_F_TIMEOUT(memkinds, read_only_desc_avail, 90)
{
	int r = open_aliased(self, 1 << VNET_TX | 1 << VNET_RX,
			     PART_DESC | PART_AVAIL, PROT_READ);

	ASSERT_EQ(0, r) TH_LOG("setup: %s", strerror(-r));
	traffic(_metadata, self, 500);
	expect_mapped(_metadata, self, variant, VNET_TX);
	expect_mapped(_metadata, self, variant, VNET_RX);
}

/*
 * Descriptor tables at off mod 16 (SET_VRING_ADDR checks the alignment of
 * avail and used only), each spanning two pages: the map must refuse them;
 * uaccess reads the descriptors, traffic byte-exact.  The read-ahead
 * through uaccess, the map's fallback, takes a table aligned to 8 bytes
 * (two 64-bit loads a descriptor); one that is not, it leaves to the
 * per-access path.
 */
static void desc_unaligned(struct __test_metadata *_metadata,
			   FIXTURE_DATA(memkinds) *self,
			   const FIXTURE_VARIANT(memkinds) *variant,
			   size_t off)
{
	struct vnet_opts o = { .ring_num = NUM, .event_idx = true,
			       .mrg_rxbuf = true };
	struct vring_layout l[2];
	int q, r;

	munmap(self->alloc, self->alloc_len);
	self->alloc_len = 8 * PAGE;
	self->alloc = vnet_map_anon(self->alloc_len);
	ASSERT_NE(NULL, self->alloc);
	for (q = 0; q < 2; q++) {
		char *b = (char *)self->alloc + q * 4 * PAGE;

		l[q].desc = b + off;
		l[q].avail = b + 2 * PAGE;
		l[q].used = b + 3 * PAGE;
		o.layout[q] = &l[q];
	}
	r = vnet_open(&self->n, &o);
	ASSERT_EQ(0, r) TH_LOG("desc at %zu mod 16: %s", off, strerror(-r));
	vnet_rx_fill(&self->n);
	traffic(_metadata, self, 500);
	expect_refused(_metadata, self, variant, VNET_TX, 0);
	expect_refused(_metadata, self, variant, VNET_RX, 0);
	for (q = 0; q < 2; q++) {
		struct metamap_stats s;

		stats(_metadata, self, q, &s);
		if (variant->map && off % 8 == 0) {
			EXPECT_LT(0, s.uaccess_fills)
				TH_LOG("vq%d: no read-ahead at %zu mod 16", q, off);
		} else {
			EXPECT_EQ(0, s.uaccess_fills)
				TH_LOG("vq%d: read ahead at %zu mod 16", q, off);
		}
	}
}

TEST_F(memkinds, desc_table_8_mod_16)
{
	desc_unaligned(_metadata, self, variant, 8);
}

TEST_F(memkinds, desc_table_2_mod_16)
{
	desc_unaligned(_metadata, self, variant, 2);
}

TEST_HARNESS_MAIN
