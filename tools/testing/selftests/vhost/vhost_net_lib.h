/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A userspace virtio-net driver for /dev/vhost-net, for selftests and the
 * benchmark.  Guest physical addresses equal this process's virtual addresses
 * (one memory region covers the whole user address space), so rings and
 * buffers may live in any mapping: anonymous, memfd, hugetlbfs.
 *
 * The vhost backend is a TAP with a virtio-net header.  The other end of the
 * wire is an AF_PACKET socket bound to the TAP: what the driver transmits
 * arrives there, what is sent there is received by the driver.
 */
#ifndef VHOST_NET_LIB_H
#define VHOST_NET_LIB_H

#include <stdbool.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <net/if.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <linux/virtio_net.h>
#include <linux/virtio_ring.h>

#define VNET_RX 0
#define VNET_TX 1
#define VNET_ETH_P 0x88b5	/* IEEE local experimental ethertype */

/* Where a ring's three parts are; NULL fields are allocated by the library. */
struct vring_layout {
	void *desc;
	void *avail;
	void *used;
};

/* One split virtqueue as seen by the driver. */
struct vq {
	unsigned int num;
	bool event_idx;
	bool indirect;
	uint16_t base;			/* the indices' start, vnet_opts.ring_base */
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	void *ring_mem;			/* library-allocated ring memory, or NULL */
	size_t ring_len;
	int kick_fd;
	int call_fd;
	int err_fd;			/* signalled by vq_err() in vhost */
	uint64_t kicks;			/* kick eventfd writes */
	uint64_t calls;			/* call eventfd signals read */
	uint16_t avail_idx;		/* next avail->idx to publish */
	uint16_t last_used;		/* next used entry to consume */
	uint16_t kick_old;		/* avail_idx at the last kick decision */
	uint16_t free_head;
	uint16_t num_free;
	uint16_t *next_free;		/* private free list, by descriptor */
	uint16_t *chain_len;		/* descriptors per head (1 when indirect) */
	uint32_t *in_len;		/* device-writable bytes per head */
	struct vring_desc *ind;		/* num indirect tables of VQ_MAX_SG entries */
	/*
	 * In order (VIRTIO_F_IN_ORDER): descriptors are made available in
	 * ring order (next_free is the ring, and stays so) and come back in
	 * that order; one used entry may stand for a batch of buffers, the
	 * last of which it names, at the position of the first.
	 */
	bool in_order;
	uint16_t used_head;		/* in order: the oldest buffer's head */
	int32_t batch_last;		/* in order: the batch's last head, or -1 */
	uint32_t batch_len;		/* in order: its used length */
	uint64_t used_reads;		/* used entries read */
	uint64_t used_bufs;		/* buffers taken back */
};

#define VQ_MAX_SG 8
#define VQ_USED_POISON 0xffffffffu	/* in order: a used id already read */

struct vnet_opts {
	unsigned int ring_num;		/* power of two, default 256 */
	bool event_idx;
	bool indirect;			/* TX chains go through indirect tables */
	bool mrg_rxbuf;
	bool split_hdr;			/* TX header in its own descriptor */
	bool iotlb;			/* VIRTIO_F_ACCESS_PLATFORM, IOVA == VA */
	bool in_order;			/* VIRTIO_F_IN_ORDER, see struct vq */
	bool rx_manual;			/* vnet_rx_one() posts no buffers */
	/*
	 * Where both queues' avail and used indices start (VHOST_SET_VRING_BASE
	 * and the rings' idx fields), as if the driver had run that far: a
	 * base a few entries below 65536 crosses the 16-bit wrap at once.
	 */
	uint16_t ring_base;
	size_t buf_size;		/* per-buffer size, default 2048 */
	const struct vring_layout *layout[2];	/* optional ring placement */
};

struct vnet {
	struct vnet_opts o;
	int vhost_fd;
	int tap_fd;
	int sock_fd;			/* AF_PACKET on the TAP: the wire */
	char ifname[IFNAMSIZ];
	uint64_t features;
	size_t hdr_len;
	struct vq vq[2];
	uint8_t *bufs[2];		/* ring_num buffers of buf_size per vq */
	size_t bufs_len;
	uint64_t tx_pending;		/* TX buffers given, not yet used */
};

/* Ring memory layout sizes, as virtio 1.x split rings define them. */
size_t vring_desc_size(unsigned int num);
size_t vring_avail_size(unsigned int num);
size_t vring_used_size(unsigned int num);

/* Whole device: TAP, vhost-net fd, owner, features, memory, rings, backend. */
int vnet_open(struct vnet *n, const struct vnet_opts *o);
/* The same on an open /dev/vhost-net fd (or -1), which n then owns. */
int vnet_open_fd(struct vnet *n, const struct vnet_opts *o, int vhost_fd);
void vnet_close(struct vnet *n);

/* vhost ioctls, each returning 0 or -errno. */
int vnet_set_rings(struct vnet *n);
int vnet_set_vring_addr(struct vnet *n, int qidx);	/* vq's desc/avail/used */
int vnet_set_backend(struct vnet *n, int qidx, int fd);
int vnet_reset_owner(struct vnet *n);
int vnet_setup(struct vnet *n);		/* owner..backend on an open fd */
int vnet_reopen(struct vnet *n);	/* close the vhost fd, set up a new one */

/* Transmit path. vnet_tx_add copies hdr (may be NULL) and data into a buffer. */
int vnet_tx_add(struct vnet *n, const struct virtio_net_hdr_v1 *hdr,
		const void *data, size_t len);
/*
 * Queue one TX descriptor of len bytes of caller memory at buf, virtio-net
 * header first, as is (nothing is copied or read); vnet_kick() publishes it.
 */
int vnet_tx_add_buf(struct vnet *n, void *buf, size_t len);
/* Publish avail idx and kick if the device asks for it. */
void vnet_kick(struct vnet *n, int qidx);
/* Reap used TX buffers; returns how many. */
int vnet_tx_reap(struct vnet *n);
/* Send one packet, waiting for room when the ring is full; kicks. */
int vnet_tx_one(struct vnet *n, const void *data, size_t len,
		const struct virtio_net_hdr_v1 *hdr, int timeout_ms);
/* Wait until every TX buffer given has been used; 0 or -ETIMEDOUT. */
int vnet_tx_drain(struct vnet *n, int timeout_ms);
/* Send count frames of len bytes (frame_fill()) and wait until all are used. */
int vnet_tx_burst(struct vnet *n, size_t len, int count);

/* Receive path. */
int vnet_rx_fill(struct vnet *n);	/* post every free RX buffer */
int vnet_rx_post(struct vnet *n, unsigned int count);	/* at most count */
/*
 * With rx_manual: post one RX buffer of len bytes of caller memory at buf
 * (the device writes the virtio-net header, then the frame) and kick;
 * wait up to timeout_ms for the next used RX buffer: the bytes the device
 * wrote, or -ETIMEDOUT.
 */
int vnet_rx_add_buf(struct vnet *n, void *buf, size_t len);
int vnet_rx_used(struct vnet *n, int timeout_ms);
/*
 * With rx_manual: post the buffer at buf (buf_len bytes, each the byte fill:
 * nothing is written to it here), send frame seq of len bytes (frame_fill())
 * into the TAP and check the buffer: the header (num_buffers 1 with
 * mergeable buffers), the frame byte-exact, every byte after it still
 * fill.  0, or -1 with the reason in why.
 */
int vnet_rx_expect(struct vnet *n, uint8_t *buf, size_t buf_len,
		   uint8_t fill, uint32_t seq, size_t len, char *why);
/*
 * Next received packet, waiting up to timeout_ms.  Copies the virtio-net
 * header and the frame (gathered from num_buffers buffers with mergeable
 * RX buffers) out; returns the frame length, or -ETIMEDOUT / -EPROTO.
 */
int vnet_rx_one(struct vnet *n, void *frame, size_t len,
		struct virtio_net_hdr_v1 *hdr, int timeout_ms);

/* The TAP: link up or down, its socket send buffer, its netdev counters. */
int vnet_link_set(struct vnet *n, bool up);
int vnet_tap_sndbuf(struct vnet *n, int bytes);
int vnet_tap_stat(struct vnet *n, const char *counter, uint64_t *v);

/* The wire. */
int wire_send(struct vnet *n, const void *frame, size_t len);
int wire_recv(struct vnet *n, void *frame, size_t len, int timeout_ms);

/*
 * The split-ring driver alone, for the other vhost drivers' queues:
 * vq_init() allocates a queue's state and eventfds (and its rings, unless
 * l places them), vq_attach() gives them to queue idx of a vhost fd;
 * vq_add() makes a chain of out device-readable then in device-writable
 * buffers available (its head, or -ENOSPC), vq_get_used() takes back the
 * next used one (its head and written length, or -EAGAIN).
 */
int vq_init(struct vq *vq, const struct vnet_opts *o,
	    const struct vring_layout *l);
void vq_fini(struct vq *vq);
int vq_attach(int vhost_fd, int idx, const struct vq *vq);
int vq_add(struct vq *vq, const struct iovec *iov, int out, int in);
int vq_get_used(struct vq *vq, uint32_t *len);
/* One memory region: guest physical addresses are this process's. */
int vhost_set_mem_all(int vhost_fd);
/*
 * VHOST_SET_FEATURES on a vhost fd from a forked child, which holds the
 * fd but is not its owner: the child's errno, 0 if it was accepted, -1 if
 * the child did not run to its end.
 */
int vhost_set_features_from_child(int vhost_fd, uint64_t features);

/* Publish avail->idx; kick whatever the device's suppression says. */
void vq_kick(struct vq *vq);
void vq_publish(struct vq *vq);
void vq_notify(struct vq *vq);

/* Wait for the call eventfd of a queue, with interrupts enabled. */
int vq_wait(struct vq *vq, int timeout_ms);
/* Add the call eventfd's pending signals to vq->calls; returns vq->calls. */
uint64_t vq_calls_collect(struct vq *vq);
bool vq_has_used(const struct vq *vq);

/*
 * Byte-exact traffic checks.  vnet_check_tx transmits count frames of the
 * lengths in lens[] (cycled; above 1514 bytes as TSO), batch at a time, and
 * checks that each arrives on the wire in order with the same bytes;
 * vnet_check_rx sends them into the TAP and checks what the driver receives.
 * Both return 0, or -1 with the reason in why[].
 */
#define VNET_WHY_LEN 160
#define VNET_BIG_FRAME (14 + 65535)
int vnet_check_tx(struct vnet *n, const size_t *lens, int nlens, int count,
		  int batch, uint32_t seq0, char *why);
int vnet_check_rx(struct vnet *n, const size_t *lens, int nlens, int count,
		  int batch, uint32_t seq0, char *why);
/*
 * The tests' usual traffic: count frames of a mix of sizes (60, 1514, 200
 * and 777 bytes) out, then, if rx, as many in, 64 at a time, byte-exact.
 */
int vnet_check_mix(struct vnet *n, int count, bool rx, uint32_t seq0,
		   char *why);

/* A vhost fd's device name (vhostN), from its fdinfo. */
int vhost_fd_name(int fd, char *name, size_t len);
/* Counters of the metadata direct map, from the vhost fd's fdinfo. */
/* Metadata modes, as the uapi's enum vhost_metamap_mode numbers them. */
enum { METAMAP_OFF, METAMAP_MAP, METAMAP_BATCH };
struct metamap_stats {
	int mode;		/* METAMAP_* */
	int enabled;		/* mode is METAMAP_MAP */
	int valid;
	uint64_t fast, fallback, invalidations, remaps, remap_failures;
	uint64_t sections, batched;
	uint64_t refused;	/* ring memory the map may not serve, seen */
	uint64_t uaccess_fills;	/* read-aheads through uaccess */
	uint64_t poisoned;	/* accesses failed on a poisoned ring page */
	uint64_t payload_fast;	/* buffer copies through the payload map */
	uint64_t payload_fallback; /* ... that uaccess finished */
	uint64_t payload_fills;	/* pages the payload map found */
	uint64_t payload_invalidations;	/* notifier calls on its regions */
	int64_t payload_slots;	/* its page translations now; -1: not said */
};

int vnet_metamap_stats(struct vnet *n, int qidx, struct metamap_stats *s);

/* The payload map's counters from a to b, as text for a test's log. */
struct payload_delta {
	char s[128];
};

struct payload_delta payload_delta(const struct metamap_stats *a,
				   const struct metamap_stats *b);

/* A mode's number from its name (off, map, batch), or -1. */
int metamap_mode_parse(const char *s);
/*
 * Default mode for new devices (the module parameter, METAMAP_*); returns
 * the old one or -1.
 */
int metamap_set_default(int mode);
/* The default mode for new devices, METAMAP_*, or -1. */
int metamap_get_default(void);
#define METAMAP_PARAM "/sys/module/vhost_metamap/parameters/mode"
/*
 * The tests' way to set it: the module parameter is a feature under test,
 * so the old default, or -1 with the reason in why[VNET_WHY_LEN]: the
 * parameter missing, read-only, the write failing, or another mode read
 * back (the old one is then restored).
 */
int metamap_require_default(int mode, char *why);

/* Standard ring layout of both queues in caller memory of vnet_rings_size. */
size_t vnet_rings_size(unsigned int num);
void vnet_rings_layout(void *mem, unsigned int num, struct vring_layout l[2]);
/* Nonzero if vhost signalled the queue's error eventfd since the last call. */
int vq_error_count(struct vq *vq);

/* Write s to the file at path (procfs, sysfs): 0 or -errno. */
int write_str(const char *path, const char *s);
/* The first line of a small file, without its newline: 0 or -errno. */
int read_str(const char *path, char *buf, size_t len);

/* /proc/self/pagemap (root sees the page frames) */
#define PM_PRESENT (1ULL << 63)
#define PM_SWAP (1ULL << 62)
#define PM_PFN ((1ULL << 55) - 1)
/* The pagemap entries of the n pages from p: 0 or -errno. */
int pagemap_read(const void *p, uint64_t *e, size_t n);
/* The page frame backing the page at p, or 0. */
uint64_t pfn_of(const void *p);

/*
 * KSM, for tests that merge pages under vhost: ksm_start() saves KSM's
 * knobs in *s and sets them (ksmd scans often and everything, and runs
 * only inside ksm_run()); ksm_restore() unmerges everything KSM merged
 * and puts the knobs back (nothing if ksm_start() saved nothing).
 */
#define KSM_KNOBS 4
#define KSM_WAIT_MS 60000	/* ksm_run()'s longest wait for a merge */
struct ksm_saved {
	bool saved;
	char old[KSM_KNOBS][16];
};

int ksm_start(struct ksm_saved *s, char *why, size_t len);
void ksm_restore(struct ksm_saved *s);
/*
 * Whether the private anonymous pages at p and q are one page frame,
 * which only KSM makes them.
 */
bool ksm_same(const void *p, const void *q);
/*
 * Run ksmd until each page of a[] is one page frame with the page of b[]
 * at the same index, or KSM_WAIT_MS passed, and stop it: the merged pages
 * stay merged, nothing merges again behind the test's back.  Returns how
 * many pairs are merged (-1: ksmd could not be started or stopped); the
 * time waited goes to *ms.
 */
int ksm_run(char *const *a, char *const *b, int np, int *ms);

/* Private anonymous read-write memory, or NULL. */
void *vnet_map_anon(size_t len);
/* Map every IOVA of the device IOTLB to the same user address. */
int vnet_iotlb_identity(int vhost_fd);

/*
 * /dev/kmsg positioned at its end (what the kernel logs from now on), or -1.
 * kmsg_splats() reads the records logged since: it returns how many look
 * like a kernel splat (the patterns scripts/scan-splat fails on, and GUP's
 * userfaultfd complaint), copies the first into what (if len), and prints
 * each as a KTAP comment (every record if log_all).  It fails closed: a
 * log it cannot read (fd < 0, a read error) counts as a splat.
 */
int kmsg_open(void);
int kmsg_splats(int fd, char *what, size_t len, bool log_all);

/* Helpers for tests: a frame of our ethertype with a seeded payload. */
void frame_fill(uint8_t *frame, size_t len, const uint8_t *src_mac,
		uint32_t seq);
uint32_t frame_seq(const uint8_t *frame);
/* The sequence number frame_fill() writes, written again (bytes 14-17). */
void frame_set_seq(uint8_t *frame, uint32_t seq);
/* An IPv4/TCP frame of len bytes and its GSO header for a TSO send. */
void frame_fill_tcp(uint8_t *frame, size_t len, uint32_t seq);
void hdr_fill_tso(struct virtio_net_hdr_v1 *hdr, size_t len, uint16_t mss);

/* A userfaultfd and the thread that answers its faults. */
struct uffd_srv {
	int fd;
	int stop;			/* eventfd: the thread exits */
	pthread_t thread;
	bool running;
	uint64_t features;		/* granted by UFFDIO_API */
	char *base;			/* region missing faults are served in */
	size_t len;
	uint8_t *shadow;		/* its content, page by page */
	pid_t tid;			/* the test thread */
	/* Written by the handler, read with __atomic loads. */
	unsigned int missing;		/* missing faults answered */
	unsigned int wp;		/* write-protect faults answered */
	unsigned int other;		/* ... of them by another thread (vhost) */
	unsigned int wp_test;		/* write-protect faults of the test thread */
	unsigned int errors;
	int last_errno;
};

/*
 * uffd_start: a userfaultfd with the features asked for (and the faulting
 * thread's id), its handler running, missing faults in [base, base + len)
 * served from a shadow copy (zeroes at first), write-protect faults
 * answered by lifting the protection.  0, or -1 with the reason in why:
 * userfaultfd with these features is in the selftests' config, so a
 * kernel without it fails the test.  uffd_stop ends it.
 */
int64_t uffd_features(void);
int uffd_start(struct uffd_srv *u, uint64_t want, void *base,
	       size_t len, char *why);
void uffd_stop(struct uffd_srv *u);
int uffd_register(struct uffd_srv *u, void *p, size_t len, uint64_t mode);
int uffd_protect(struct uffd_srv *u, void *p, size_t len);
unsigned int uffd_count(unsigned int *c);	/* a counter of the handler's */

#endif
