// SPDX-License-Identifier: GPL-2.0
/*
 * Userspace virtio-net driver over /dev/vhost-net; see vhost_net_lib.h.
 *
 * Ring protocol follows the virtio 1.x split ring: descriptors and avail
 * entries are written before a release store of avail->idx; used->idx is
 * read with an acquire load before the used entries.  The driver keeps its
 * free list in private memory and rewrites every descriptor field it
 * publishes, so ring pages that lose their contents between operations (the
 * mm tests zap them) never corrupt driver state.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/userfaultfd.h>
#include <linux/vhost.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "vhost_net_lib.h"

#define PAGE_SZ 4096UL
#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((size_t)(a) - 1))
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MEM_TOP 0x7ffffffff000ULL	/* x86-64 TASK_SIZE_MAX */

static const uint8_t drv_mac[ETH_ALEN] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };

/* Orders the avail index store before reading the device's suppression. */
#define smp_mb() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define store_release(p, v) __atomic_store_n(p, v, __ATOMIC_RELEASE)
#define load_acquire(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)

size_t vring_desc_size(unsigned int num)
{
	return 16UL * num;
}

size_t vring_avail_size(unsigned int num)
{
	return 6 + 2UL * num;		/* flags, idx, ring[num], used_event */
}

size_t vring_used_size(unsigned int num)
{
	return 6 + 8UL * num;		/* flags, idx, ring[num], avail_event */
}

static int xioctl(int fd, unsigned long req, void *arg)
{
	return ioctl(fd, req, arg) < 0 ? -errno : 0;
}

/* The event-idx words past the end of the avail and used rings. */
static uint16_t *used_event(struct vq *vq)
{
	return &vq->avail->ring[vq->num];
}

static uint16_t *avail_event(struct vq *vq)
{
	return (uint16_t *)&vq->used->ring[vq->num];
}

static void vq_reset_state(struct vq *vq)
{
	unsigned int i;

	memset(vq->desc, 0, vring_desc_size(vq->num));
	memset(vq->avail, 0, vring_avail_size(vq->num));
	memset(vq->used, 0, vring_used_size(vq->num));
	/*
	 * At a base other than 0 the rings read as a driver's and a device's
	 * that ran up to it: nothing available, nothing used, each side's
	 * event index at the other's position (vhost reads used->idx when
	 * the backend is set, and takes it for its own).
	 */
	vq->avail_idx = vq->base;
	vq->last_used = vq->base;
	vq->kick_old = vq->base;
	vq->avail->idx = vq->base;
	vq->used->idx = vq->base;
	*used_event(vq) = vq->base;
	*avail_event(vq) = vq->base;
	vq->free_head = 0;
	vq->num_free = vq->num;
	for (i = 0; i < vq->num; i++)
		vq->next_free[i] = i + 1;
	if (vq->in_order) {
		/*
		 * The ring of descriptors goes on where the avail ring is:
		 * at a base, as after chains of one descriptor up to it.
		 */
		vq->free_head = vq->base % vq->num;
		vq->next_free[vq->num - 1] = 0;
		/* An entry the device did not write is never taken for new. */
		for (i = 0; i < vq->num; i++)
			vq->used->ring[i].id = VQ_USED_POISON;
	}
	vq->used_head = vq->free_head;
	vq->batch_last = -1;
	vq->batch_len = 0;
	vq->used_reads = 0;
	vq->used_bufs = 0;
}

int vq_init(struct vq *vq, const struct vnet_opts *o,
	    const struct vring_layout *l)
{
	unsigned int num = o->ring_num;
	size_t avail_off = vring_desc_size(num);
	size_t used_off = ALIGN_UP(avail_off + vring_avail_size(num), PAGE_SZ);

	memset(vq, 0, sizeof(*vq));
	vq->num = num;
	vq->event_idx = o->event_idx;
	vq->indirect = o->indirect;
	vq->in_order = o->in_order;
	vq->base = o->ring_base;
	vq->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	vq->call_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	vq->err_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	vq->chain_len = calloc(num, sizeof(*vq->chain_len));
	vq->in_len = calloc(num, sizeof(*vq->in_len));
	vq->next_free = calloc(num, sizeof(*vq->next_free));
	vq->ind = vnet_map_anon(ALIGN_UP(num * VQ_MAX_SG *
					 sizeof(struct vring_desc), PAGE_SZ));
	if (vq->kick_fd < 0 || vq->call_fd < 0 || vq->err_fd < 0 || !vq->chain_len ||
	    !vq->in_len || !vq->next_free || !vq->ind)
		return -ENOMEM;

	if (l) {
		vq->desc = l->desc;
		vq->avail = l->avail;
		vq->used = l->used;
	} else {
		vq->ring_len = ALIGN_UP(used_off + vring_used_size(num), PAGE_SZ);
		vq->ring_mem = vnet_map_anon(vq->ring_len);
		if (!vq->ring_mem)
			return -ENOMEM;
		vq->desc = vq->ring_mem;
		vq->avail = (void *)((char *)vq->ring_mem + avail_off);
		vq->used = (void *)((char *)vq->ring_mem + used_off);
	}
	vq_reset_state(vq);
	return 0;
}

void vq_fini(struct vq *vq)
{
	if (vq->kick_fd > 0)
		close(vq->kick_fd);
	if (vq->call_fd > 0)
		close(vq->call_fd);
	if (vq->err_fd > 0)
		close(vq->err_fd);
	if (vq->ring_mem)
		munmap(vq->ring_mem, vq->ring_len);
	if (vq->ind)
		munmap(vq->ind, ALIGN_UP(vq->num * VQ_MAX_SG *
					 sizeof(struct vring_desc), PAGE_SZ));
	free(vq->chain_len);
	free(vq->in_len);
	free(vq->next_free);
	memset(vq, 0, sizeof(*vq));
}

bool vq_has_used(const struct vq *vq)
{
	return load_acquire(&vq->used->idx) != vq->last_used;
}

/*
 * Publish a chain of n buffers (out device-readable ones first) and return
 * its head, or -ENOSPC.  The chain goes through an indirect table when the
 * queue uses them and n > 1.
 */
int vq_add(struct vq *vq, const struct iovec *iov, int out, int in)
{
	bool ind = vq->indirect && out + in > 1;
	int n = out + in, need = ind ? 1 : n, i;
	struct vring_desc *d;
	uint16_t head, idx;
	uint32_t in_len = 0;

	if (n > VQ_MAX_SG || vq->num_free < need)
		return -ENOSPC;
	head = vq->free_head;
	d = ind ? &vq->ind[head * VQ_MAX_SG] : NULL;
	idx = head;
	for (i = 0; i < n; i++) {
		struct vring_desc *e = ind ? &d[i] : &vq->desc[idx];
		uint16_t next = ind ? i + 1 : vq->next_free[idx];

		e->addr = (uintptr_t)iov[i].iov_base;
		e->len = iov[i].iov_len;
		if (i >= out)
			in_len += iov[i].iov_len;
		e->flags = (i >= out ? VRING_DESC_F_WRITE : 0) |
			   (i + 1 < n ? VRING_DESC_F_NEXT : 0);
		e->next = i + 1 < n ? next : 0;
		if (!ind && i + 1 < n)
			idx = next;
	}
	if (ind) {
		vq->desc[head].addr = (uintptr_t)d;
		vq->desc[head].len = n * sizeof(*d);
		vq->desc[head].flags = VRING_DESC_F_INDIRECT;
		vq->desc[head].next = 0;
		idx = head;
	}
	vq->free_head = vq->next_free[idx];
	vq->num_free -= need;
	vq->chain_len[head] = need;
	vq->in_len[head] = in_len;
	vq->avail->ring[vq->avail_idx % vq->num] = head;
	vq->avail_idx++;
	return head;
}

/*
 * In order: the oldest buffer comes back.  Unless a batch is being taken,
 * the used entry at its position says which buffer the batch ends with
 * (it may be this one) and how much was written to that one; the others
 * come back with the length they offered.  The entry is poisoned once
 * read, so that the device must write it again to hand a buffer back.
 */
static int vq_get_used_in_order(struct vq *vq, uint32_t *len)
{
	uint16_t head = vq->used_head, h, ready;
	struct vring_used_elem *e;
	unsigned int k;

	ready = load_acquire(&vq->used->idx) - vq->last_used;
	if (!ready)
		return -EAGAIN;
	if (!vq->chain_len[head])
		return -EPROTO;		/* used beyond what was given */
	if (vq->batch_last < 0) {
		e = &vq->used->ring[vq->last_used % vq->num];
		vq->used_reads++;
		if (e->id >= vq->num || !vq->chain_len[e->id])
			return -EPROTO;
		/*
		 * The batch is every buffer from the oldest to e->id: the
		 * used index must have moved past all of them with this
		 * entry (a buffer used out of order, before older ones, is
		 * caught here).
		 */
		for (k = 1, h = head; h != e->id; k++) {
			h = (h + vq->chain_len[h]) % vq->num;
			if (!vq->chain_len[h] || k >= vq->num)
				return -EPROTO;
		}
		if (k > ready)
			return -EPROTO;
		vq->batch_last = e->id;
		vq->batch_len = e->len;
		e->id = VQ_USED_POISON;
	}
	if (len)
		*len = head == vq->batch_last ? vq->batch_len : vq->in_len[head];
	if (head == vq->batch_last)
		vq->batch_last = -1;
	vq->last_used++;
	vq->used_bufs++;
	vq->used_head = (head + vq->chain_len[head]) % vq->num;
	vq->num_free += vq->chain_len[head];
	vq->chain_len[head] = 0;
	return head;
}

/* Take the next used entry: its head (freed) and length, or -EAGAIN. */
int vq_get_used(struct vq *vq, uint32_t *len)
{
	struct vring_used_elem *e;
	uint16_t head, last;
	int i;

	if (vq->in_order)
		return vq_get_used_in_order(vq, len);
	if (!vq_has_used(vq))
		return -EAGAIN;
	e = &vq->used->ring[vq->last_used % vq->num];
	vq->used_reads++;
	head = e->id;
	if (len)
		*len = e->len;
	if (head >= vq->num || !vq->chain_len[head])
		return -EPROTO;
	vq->last_used++;
	vq->used_bufs++;
	for (i = 1, last = head; i < vq->chain_len[head]; i++)
		last = vq->next_free[last];
	vq->next_free[last] = vq->free_head;
	vq->free_head = head;
	vq->num_free += vq->chain_len[head];
	vq->chain_len[head] = 0;
	return head;
}

void vq_publish(struct vq *vq)
{
	store_release(&vq->avail->idx, vq->avail_idx);
}

void vq_notify(struct vq *vq)
{
	uint64_t one = 1;

	if (write(vq->kick_fd, &one, sizeof(one)) != sizeof(one))
		perror("kick");
	else
		vq->kicks++;
}

uint64_t vq_calls_collect(struct vq *vq)
{
	uint64_t v;

	if (read(vq->call_fd, &v, sizeof(v)) == sizeof(v))
		vq->calls += v;
	return vq->calls;
}

static bool vq_kick_needed(struct vq *vq)
{
	uint16_t new = vq->avail_idx, old = vq->kick_old;

	smp_mb();	/* avail->idx visible before we read the suppression */
	vq->kick_old = new;
	if (vq->event_idx)
		return vring_need_event(load_acquire(avail_event(vq)), new, old);
	return !(vq->used->flags & VRING_USED_F_NO_NOTIFY);
}

void vq_kick(struct vq *vq)
{
	vq_publish(vq);
	if (vq_kick_needed(vq))
		vq_notify(vq);
}

int vq_wait(struct vq *vq, int timeout_ms)
{
	struct pollfd p = { .fd = vq->call_fd, .events = POLLIN };
	uint64_t v;

	for (;;) {
		if (vq_has_used(vq))
			return 0;
		/* Ask for a call on the next used entry, then look again. */
		if (vq->event_idx)
			store_release(used_event(vq), vq->last_used);
		else
			store_release(&vq->avail->flags, 0);
		/* Pairs with vhost's barrier between used idx and the event. */
		smp_mb();
		if (vq_has_used(vq))
			return 0;
		if (poll(&p, 1, timeout_ms) <= 0)
			return vq_has_used(vq) ? 0 : -ETIMEDOUT;
		if (read(vq->call_fd, &v, sizeof(v)) == sizeof(v))
			vq->calls += v;
		else if (errno != EAGAIN)
			return -errno;
	}
}

static int tap_open(struct vnet *n)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR };
	int len = n->hdr_len, off = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6;
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, IFNAMSIZ, "vhtest%%d");
	if (ioctl(fd, TUNSETIFF, &ifr) < 0 ||
	    ioctl(fd, TUNSETVNETHDRSZ, &len) < 0 ||
	    ioctl(fd, TUNSETOFFLOAD, off) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	memcpy(n->ifname, ifr.ifr_name, IFNAMSIZ);
	n->tap_fd = fd;
	return 0;
}

static int wire_open(struct vnet *n)
{
	struct ifreq ifr = {};
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_protocol = htons(ETH_P_ALL) };
	int rcvbuf = 64 << 20;
	/*
	 * Protocol 0: a packet socket made for ETH_P_ALL hears every
	 * interface from socket() on, and would keep what other devices'
	 * traffic put on their TAPs before bind() narrowed it to ours.
	 */
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	n->sock_fd = fd;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", n->ifname);
	if (ioctl(fd, SIOCGIFINDEX, &ifr) < 0)
		return -errno;
	sll.sll_ifindex = ifr.ifr_ifindex;
	/* Up before bind: binding to a down link leaves ENETDOWN pending. */
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0)
		return -errno;
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		return -errno;
	/* Without CAP_NET_ADMIN (a user namespace's root): what rmem_max allows. */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) &&
	    (errno != EPERM ||
	     setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf))))
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &rcvbuf, sizeof(rcvbuf)) &&
	    (errno != EPERM ||
	     setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &rcvbuf, sizeof(rcvbuf))))
		return -errno;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		return -errno;
	return 0;
}

static int vq_set_addr(int vhost_fd, int idx, const struct vq *vq)
{
	struct vhost_vring_addr addr = {
		.index = idx,
		.desc_user_addr = (uintptr_t)vq->desc,
		.avail_user_addr = (uintptr_t)vq->avail,
		.used_user_addr = (uintptr_t)vq->used,
	};

	return xioctl(vhost_fd, VHOST_SET_VRING_ADDR, &addr);
}

int vnet_set_vring_addr(struct vnet *n, int qidx)
{
	return vq_set_addr(n->vhost_fd, qidx, &n->vq[qidx]);
}

int vq_attach(int vhost_fd, int idx, const struct vq *vq)
{
	struct vhost_vring_state num = { .index = idx, .num = vq->num };
	struct vhost_vring_state base = { .index = idx, .num = vq->base };
	struct vhost_vring_file kick = { .index = idx, .fd = vq->kick_fd };
	struct vhost_vring_file call = { .index = idx, .fd = vq->call_fd };
	struct vhost_vring_file err = { .index = idx, .fd = vq->err_fd };
	int r;

	r = xioctl(vhost_fd, VHOST_SET_VRING_NUM, &num);
	if (!r)
		r = xioctl(vhost_fd, VHOST_SET_VRING_BASE, &base);
	if (!r)
		r = vq_set_addr(vhost_fd, idx, vq);
	if (!r)
		r = xioctl(vhost_fd, VHOST_SET_VRING_KICK, &kick);
	if (!r)
		r = xioctl(vhost_fd, VHOST_SET_VRING_CALL, &call);
	if (!r)
		r = xioctl(vhost_fd, VHOST_SET_VRING_ERR, &err);
	return r;
}

int vnet_set_rings(struct vnet *n)
{
	int i, r;

	for (i = 0; i < 2; i++) {
		r = vq_attach(n->vhost_fd, i, &n->vq[i]);
		if (r)
			return r;
	}
	return 0;
}

int vhost_set_mem_all(int vhost_fd)
{
	struct {
		struct vhost_memory m;
		struct vhost_memory_region r;
	} mem = {
		.m.nregions = 1,
		.r = { .guest_phys_addr = 0, .memory_size = MEM_TOP,
		       .userspace_addr = 0 },
	};

	return xioctl(vhost_fd, VHOST_SET_MEM_TABLE, &mem);
}

int vnet_set_backend(struct vnet *n, int qidx, int fd)
{
	struct vhost_vring_file b = { .index = qidx, .fd = fd };

	return xioctl(n->vhost_fd, VHOST_NET_SET_BACKEND, &b);
}

int vnet_reset_owner(struct vnet *n)
{
	int r = vnet_set_backend(n, VNET_RX, -1);

	if (!r)
		r = vnet_set_backend(n, VNET_TX, -1);
	if (!r)
		r = xioctl(n->vhost_fd, VHOST_RESET_OWNER, NULL);
	vq_reset_state(&n->vq[0]);
	vq_reset_state(&n->vq[1]);
	n->tx_pending = 0;
	return r;
}

int vnet_iotlb_identity(int vhost_fd)
{
	struct vhost_msg_v2 m = {
		.type = VHOST_IOTLB_MSG_V2,
		.iotlb = { .iova = 0, .size = MEM_TOP, .uaddr = 0,
			   .perm = VHOST_ACCESS_RW, .type = VHOST_IOTLB_UPDATE },
	};

	return write(vhost_fd, &m, sizeof(m)) == sizeof(m) ? 0 : -errno;
}

void *vnet_map_anon(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = write(fd, s, strlen(s));
	close(fd);
	return r < 0 ? -errno : r == (ssize_t)strlen(s) ? 0 : -EIO;
}

int read_str(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = read(fd, buf, len - 1);
	close(fd);
	if (r < 0)
		return -errno;
	buf[r] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int pagemap_read(const void *p, uint64_t *e, size_t n)
{
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	off_t off = (uintptr_t)p / getpagesize() * sizeof(*e);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = pread(fd, e, n * sizeof(*e), off);
	close(fd);
	if (r < 0)
		return -errno;
	return r == (ssize_t)(n * sizeof(*e)) ? 0 : -EIO;
}

uint64_t pfn_of(const void *p)
{
	uint64_t e;

	if (pagemap_read(p, &e, 1) || !(e & PM_PRESENT))
		return 0;
	return e & PM_PFN;
}

/*
 * KSM's knobs, and what ksm_start() sets them to: ksmd scans often and
 * everything (smart scan would skip pages that did not merge before), and
 * runs only while a test waits for a merge.
 */
#define KSM_DIR "/sys/kernel/mm/ksm/"
static const char *const ksm_knobs[KSM_KNOBS] = {
	"sleep_millisecs", "pages_to_scan", "smart_scan", "run",
};

static const char *const ksm_values[KSM_KNOBS] = { "10", "1000", "0", "0" };

/* KSM is in the selftests' config and in Debian's: its absence fails. */
int ksm_start(struct ksm_saved *s, char *why, size_t len)
{
	char path[64];
	int i, r;

	for (i = 0; i < KSM_KNOBS; i++) {
		snprintf(path, sizeof(path), KSM_DIR "%s", ksm_knobs[i]);
		r = read_str(path, s->old[i], sizeof(s->old[i]));
		if (r) {
			snprintf(why, len, "%s: %s (CONFIG_KSM)", path,
				 strerror(-r));
			return r;
		}
	}
	s->saved = true;
	for (i = 0; i < KSM_KNOBS; i++) {
		snprintf(path, sizeof(path), KSM_DIR "%s", ksm_knobs[i]);
		r = write_str(path, ksm_values[i]);
		if (r) {
			snprintf(why, len, "%s: %s", path, strerror(-r));
			return r;
		}
	}
	return 0;
}

void ksm_restore(struct ksm_saved *s)
{
	char path[64];
	int i;

	if (!s->saved)
		return;
	write_str(KSM_DIR "run", "2");
	for (i = 0; i < KSM_KNOBS; i++) {
		snprintf(path, sizeof(path), KSM_DIR "%s", ksm_knobs[i]);
		write_str(path, s->old[i]);
	}
	s->saved = false;
}

/*
 * (6.12's /proc/kpageflags cannot tell a KSM page: it shows KPF_KSM for
 * every anonymous page, fs/proc/page.c testing mapping & PAGE_MAPPING_KSM.)
 */
bool ksm_same(const void *p, const void *q)
{
	uint64_t pfn = pfn_of(p);

	return pfn && pfn == pfn_of(q);
}

int ksm_run(char *const *a, char *const *b, int np, int *ms)
{
	int i, n = 0;

	if (write_str(KSM_DIR "run", "1"))
		return -1;
	for (*ms = 0; *ms < KSM_WAIT_MS && n < np; *ms += 50) {
		usleep(50000);
		for (i = 0, n = 0; i < np; i++)
			n += ksm_same(a[i], b[i]);
	}
	if (write_str(KSM_DIR "run", "0"))
		return -1;
	return n;
}

int kmsg_open(void)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd >= 0)
		lseek(fd, 0, SEEK_END);
	return fd;
}

static bool kmsg_is_splat(const char *text)
{
	static const char * const bad[] = {
		"BUG:", "WARNING:", "KASAN", "UBSAN:", "KFENCE:", "Oops",
		"Call Trace:", "Kernel panic", "possible circular locking",
		"suspicious RCU usage", "sleeping function called",
		"inconsistent lock state", "possible recursive locking",
		"blocked for more than", "FAULT_FLAG_ALLOW_RETRY missing",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		if (strstr(text, bad[i]))
			return true;
	return false;
}

/*
 * Whether a kernel log line is the stack dump's header of a report that
 * carries one by design: the OOM killer's (tests provoke it) and an
 * allocation failure's (make stress injects them).  The first "Call
 * Trace:" within REPORT_LINES lines of such a report's first line is its
 * own and not a splat; every other pattern is, there as anywhere (a
 * WARNING another CPU printed meanwhile, a second stack dump).  As
 * scripts/scan-splat.
 */
#define REPORT_LINES 80

struct kmsg_report {
	int lines;	/* lines left in the window, 0 if none is open */
};

static bool kmsg_report_exempt(struct kmsg_report *rp, const char *text)
{
	if (strstr(text, "invoked oom-killer:") ||
	    strstr(text, "page allocation failure:") ||
	    strstr(text, "vmalloc error:"))
		rp->lines = REPORT_LINES;
	if (!rp->lines)
		return false;
	if (strstr(text, "Call Trace:")) {
		rp->lines = 0;
		return true;
	}
	rp->lines--;
	return false;
}

int kmsg_splats(int fd, char *what, size_t len, bool log_all)
{
	struct kmsg_report rp = {};
	char rec[2048], *text, *nl;
	int hits = 0;
	bool bad;
	ssize_t r;

	/* Fail closed: a log that cannot be read is not a clean one. */
	if (fd < 0) {
		if (len)
			snprintf(what, len, "/dev/kmsg could not be opened");
		printf("# kernel: /dev/kmsg could not be opened   <-- no log\n");
		return 1;
	}
	for (;;) {
		r = read(fd, rec, sizeof(rec) - 1);
		if (r < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (r < 0 && errno != EAGAIN) {
			if (!hits++ && len)
				snprintf(what, len, "reading /dev/kmsg: %s", strerror(errno));
			break;
		}
		if (r <= 0)
			break;
		rec[r] = '\0';
		text = strchr(rec, ';');
		text = text ? text + 1 : rec;
		nl = strchr(text, '\n');
		if (nl)
			*nl = '\0';
		bad = !kmsg_report_exempt(&rp, text) && kmsg_is_splat(text);
		if (bad && !hits++ && len)
			snprintf(what, len, "%s", text);
		if (bad || log_all)
			printf("# kernel: %s%s\n", text, bad ? "   <-- splat" : "");
	}
	fflush(stdout);
	return hits;
}

int vnet_setup(struct vnet *n)
{
	uint64_t have;
	int r;

	r = xioctl(n->vhost_fd, VHOST_SET_OWNER, NULL);
	if (!r)
		r = xioctl(n->vhost_fd, VHOST_GET_FEATURES, &have);
	if (r)
		return r;
	if ((have & n->features) != n->features)
		return -EOPNOTSUPP;
	if (n->o.iotlb) {
		uint64_t bf = 1ULL << VHOST_BACKEND_F_IOTLB_MSG_V2;

		r = xioctl(n->vhost_fd, VHOST_SET_BACKEND_FEATURES, &bf);
		if (r)
			return r;
	}
	r = xioctl(n->vhost_fd, VHOST_SET_FEATURES, &n->features);
	if (!r && n->o.iotlb)
		r = vnet_iotlb_identity(n->vhost_fd);
	if (!r)
		r = vhost_set_mem_all(n->vhost_fd);
	if (!r)
		r = vnet_set_rings(n);
	if (!r)
		r = vnet_set_backend(n, VNET_RX, n->tap_fd);
	if (!r)
		r = vnet_set_backend(n, VNET_TX, n->tap_fd);
	return r;
}

int vnet_reopen(struct vnet *n)
{
	if (n->vhost_fd >= 0)
		close(n->vhost_fd);
	vq_reset_state(&n->vq[VNET_RX]);
	vq_reset_state(&n->vq[VNET_TX]);
	n->tx_pending = 0;
	n->vhost_fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
	if (n->vhost_fd < 0)
		return -errno;
	return vnet_setup(n);
}

int vnet_open(struct vnet *n, const struct vnet_opts *o)
{
	return vnet_open_fd(n, o, -1);
}

int vnet_open_fd(struct vnet *n, const struct vnet_opts *o, int vhost_fd)
{
	int i, r;

	memset(n, 0, sizeof(*n));
	n->tap_fd = -1;
	n->sock_fd = -1;
	n->vhost_fd = vhost_fd;
	n->o = *o;
	if (!n->o.ring_num)
		n->o.ring_num = 256;
	if (!n->o.buf_size)
		n->o.buf_size = 2048;
	n->hdr_len = sizeof(struct virtio_net_hdr_v1);
	n->features = 1ULL << VIRTIO_F_VERSION_1;
	if (o->event_idx)
		n->features |= 1ULL << VIRTIO_RING_F_EVENT_IDX;
	if (o->indirect)
		n->features |= 1ULL << VIRTIO_RING_F_INDIRECT_DESC;
	if (o->mrg_rxbuf)
		n->features |= 1ULL << VIRTIO_NET_F_MRG_RXBUF;
	if (o->iotlb)
		n->features |= 1ULL << VIRTIO_F_ACCESS_PLATFORM;
	if (o->in_order)
		n->features |= 1ULL << VIRTIO_F_IN_ORDER;

	for (i = 0; i < 2; i++) {
		r = vq_init(&n->vq[i], &n->o, n->o.layout[i]);
		if (r)
			goto err;
	}
	n->bufs_len = n->o.ring_num * n->o.buf_size;
	for (i = 0; i < 2; i++) {
		n->bufs[i] = vnet_map_anon(n->bufs_len);
		if (!n->bufs[i]) {
			r = -ENOMEM;
			goto err;
		}
	}
	r = tap_open(n);
	if (!r)
		r = wire_open(n);
	if (r)
		goto err;
	if (n->vhost_fd < 0)
		n->vhost_fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
	if (n->vhost_fd < 0) {
		r = -errno;
		goto err;
	}
	r = vnet_setup(n);
	if (r)
		goto err;
	return 0;
err:
	vnet_close(n);
	return r;
}

void vnet_close(struct vnet *n)
{
	int i;

	if (n->vhost_fd >= 0)
		close(n->vhost_fd);
	if (n->sock_fd >= 0)
		close(n->sock_fd);
	if (n->tap_fd >= 0)
		close(n->tap_fd);
	for (i = 0; i < 2; i++) {
		vq_fini(&n->vq[i]);
		if (n->bufs[i])
			munmap(n->bufs[i], n->bufs_len);
		n->bufs[i] = NULL;
	}
	n->vhost_fd = -1;
	n->tap_fd = -1;
	n->sock_fd = -1;
}

int vnet_tx_add(struct vnet *n, const struct virtio_net_hdr_v1 *hdr,
		const void *data, size_t len)
{
	struct vq *vq = &n->vq[VNET_TX];
	size_t hl = n->hdr_len;
	struct iovec iov[2];
	uint8_t *buf;
	int head;

	if (hl + len > n->o.buf_size)
		return -EMSGSIZE;
	/* The buffer of a chain is the one of its head; the head is free. */
	head = vq->free_head;
	if (vq->num_free < (n->o.split_hdr && !vq->indirect ? 2 : 1))
		return -ENOSPC;
	buf = n->bufs[VNET_TX] + (size_t)head * n->o.buf_size;
	if (hdr)
		memcpy(buf, hdr, hl);
	else
		memset(buf, 0, hl);
	memcpy(buf + hl, data, len);
	iov[0].iov_base = buf;
	if (n->o.split_hdr) {
		iov[0].iov_len = hl;
		iov[1].iov_base = buf + hl;
		iov[1].iov_len = len;
		head = vq_add(vq, iov, 2, 0);
	} else {
		iov[0].iov_len = hl + len;
		head = vq_add(vq, iov, 1, 0);
	}
	if (head >= 0)
		n->tx_pending++;
	return head < 0 ? head : 0;
}

int vnet_tx_add_buf(struct vnet *n, void *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	int head = vq_add(&n->vq[VNET_TX], &iov, 1, 0);

	if (head < 0)
		return head;
	n->tx_pending++;
	return 0;
}

void vnet_kick(struct vnet *n, int qidx)
{
	vq_kick(&n->vq[qidx]);
}

int vnet_tx_reap(struct vnet *n)
{
	int got = 0, r;

	while ((r = vq_get_used(&n->vq[VNET_TX], NULL)) >= 0)
		got++;
	n->tx_pending -= got;
	return r == -EAGAIN ? got : r;
}

int vnet_tx_one(struct vnet *n, const void *data, size_t len,
		const struct virtio_net_hdr_v1 *hdr, int timeout_ms)
{
	int r;

	for (;;) {
		r = vnet_tx_add(n, hdr, data, len);
		if (r != -ENOSPC)
			break;
		vnet_kick(n, VNET_TX);
		r = vnet_tx_reap(n);
		if (r < 0)
			return r;
		if (r == 0) {
			r = vq_wait(&n->vq[VNET_TX], timeout_ms);
			if (r)
				return r;
		}
	}
	if (!r)
		vnet_kick(n, VNET_TX);
	return r;
}

int vnet_tx_drain(struct vnet *n, int timeout_ms)
{
	int r;

	vnet_kick(n, VNET_TX);
	while (n->tx_pending) {
		r = vnet_tx_reap(n);
		if (r < 0)
			return r;
		if (r == 0 && n->tx_pending) {
			r = vq_wait(&n->vq[VNET_TX], timeout_ms);
			if (r)
				return r;
		}
	}
	return 0;
}

int vnet_tx_burst(struct vnet *n, size_t len, int count)
{
	uint8_t frame[1514];
	int r = 0;

	if (len > sizeof(frame))
		return -EINVAL;
	frame_fill(frame, len, NULL, 7);
	for (int i = 0; i < count && !r; i++)
		r = vnet_tx_one(n, frame, len, NULL, 2000);
	return r ?: vnet_tx_drain(n, 2000);
}

int vnet_rx_fill(struct vnet *n)
{
	return vnet_rx_post(n, n->vq[VNET_RX].num);
}

int vnet_rx_post(struct vnet *n, unsigned int count)
{
	struct vq *vq = &n->vq[VNET_RX];
	unsigned int added = 0;

	while (vq->num_free && added < count) {
		struct iovec iov = {
			.iov_base = n->bufs[VNET_RX] +
				    (size_t)vq->free_head * n->o.buf_size,
			.iov_len = n->o.buf_size,
		};

		if (vq_add(vq, &iov, 0, 1) < 0)
			break;
		added++;
	}
	if (added)
		vq_kick(vq);
	return added;
}

static int rx_next_buf(struct vnet *n, uint8_t **buf, uint32_t *len,
		       int timeout_ms)
{
	struct vq *vq = &n->vq[VNET_RX];
	int head, r;

	if (!vq_has_used(vq)) {
		r = vq_wait(vq, timeout_ms);
		if (r)
			return r;
	}
	head = vq_get_used(vq, len);
	if (head < 0)
		return head;
	if (*len > n->o.buf_size)
		return -EPROTO;
	*buf = n->bufs[VNET_RX] + (size_t)head * n->o.buf_size;
	return 0;
}

int vnet_rx_add_buf(struct vnet *n, void *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	int head = vq_add(&n->vq[VNET_RX], &iov, 0, 1);

	if (head < 0)
		return head;
	vq_kick(&n->vq[VNET_RX]);
	return 0;
}

int vnet_rx_used(struct vnet *n, int timeout_ms)
{
	struct vq *vq = &n->vq[VNET_RX];
	uint32_t len;
	int r;

	if (!vq_has_used(vq)) {
		r = vq_wait(vq, timeout_ms);
		if (r)
			return r;
	}
	r = vq_get_used(vq, &len);
	return r < 0 ? r : (int)len;
}

int vnet_rx_expect(struct vnet *n, uint8_t *buf, size_t buf_len,
		   uint8_t fill, uint32_t seq, size_t len, char *why)
{
	const struct virtio_net_hdr_v1 *h = (const void *)buf;
	size_t hl = n->hdr_len, i;
	uint8_t frame[1514];
	int r;

	if (len > sizeof(frame) || hl + len > buf_len) {
		snprintf(why, VNET_WHY_LEN, "frame %zu in a buffer of %zu", len,
			 buf_len);
		return -1;
	}
	frame_fill(frame, len, NULL, seq);
	r = vnet_rx_add_buf(n, buf, buf_len);
	if (!r)
		r = wire_send(n, frame, len);
	if (!r)
		r = vnet_rx_used(n, 5000);
	if (r != (int)(hl + len)) {
		snprintf(why, VNET_WHY_LEN, "frame %u: %d bytes written, want %zu%s%s",
			 seq, r, hl + len, r < 0 ? " " : "",
			 r < 0 ? strerror(-r) : "");
		return -1;
	}
	if ((n->features & (1ULL << VIRTIO_NET_F_MRG_RXBUF)) &&
	    h->num_buffers != 1) {
		snprintf(why, VNET_WHY_LEN, "frame %u: num_buffers %u", seq,
			 h->num_buffers);
		return -1;
	}
	if (memcmp(frame, buf + hl, len)) {
		snprintf(why, VNET_WHY_LEN, "the buffer holds frame %u, want %u",
			 frame_seq(buf + hl), seq);
		return -1;
	}
	for (i = hl + len; i < buf_len && buf[i] == fill; i++)
		;
	if (i < buf_len) {
		snprintf(why, VNET_WHY_LEN, "frame %u: byte %zu of the buffer written",
			 seq, i);
		return -1;
	}
	return 0;
}

int vnet_rx_one(struct vnet *n, void *frame, size_t len,
		struct virtio_net_hdr_v1 *hdr, int timeout_ms)
{
	size_t hl = n->hdr_len, got = 0;
	unsigned int nbufs = 1, i;
	uint32_t blen;
	uint8_t *buf;
	int r;

	r = rx_next_buf(n, &buf, &blen, timeout_ms);
	if (r)
		return r;
	if (blen < hl)
		return -EPROTO;
	if (hdr)
		memcpy(hdr, buf, hl);
	if (n->features & (1ULL << VIRTIO_NET_F_MRG_RXBUF))
		nbufs = ((struct virtio_net_hdr_v1 *)buf)->num_buffers;
	if (!nbufs)
		return -EPROTO;
	for (i = 0; i < nbufs; i++) {
		size_t off = i ? 0 : hl, take;

		if (i) {
			r = rx_next_buf(n, &buf, &blen, timeout_ms);
			if (r)
				return r == -ETIMEDOUT ? -EPROTO : r;
		}
		take = blen - off;
		if (got + take > len)
			return -EMSGSIZE;
		memcpy((uint8_t *)frame + got, buf + off, take);
		got += take;
	}
	if (!n->o.rx_manual && (n->vq[VNET_RX].num_free >= 32 ||
				n->vq[VNET_RX].num_free == n->vq[VNET_RX].num))
		vnet_rx_fill(n);
	return got;
}

int vnet_link_set(struct vnet *n, bool up)
{
	struct ifreq ifr = {};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r = 0;

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", n->ifname);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		r = -errno;
	} else {
		ifr.ifr_flags = up ? ifr.ifr_flags | IFF_UP :
				     ifr.ifr_flags & ~IFF_UP;
		if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
			r = -errno;
	}
	close(fd);
	return r;
}

int vnet_tap_sndbuf(struct vnet *n, int bytes)
{
	return xioctl(n->tap_fd, TUNSETSNDBUF, &bytes);
}

int vnet_tap_stat(struct vnet *n, const char *counter, uint64_t *v)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/class/net/%s/statistics/%s",
		 n->ifname, counter);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%" SCNu64, v) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

int wire_send(struct vnet *n, const void *frame, size_t len)
{
	ssize_t r = send(n->sock_fd, frame, len, 0);

	if (r < 0)
		return -errno;
	return r == (ssize_t)len ? 0 : -EIO;
}

int wire_recv(struct vnet *n, void *frame, size_t len, int timeout_ms)
{
	struct pollfd p = { .fd = n->sock_fd, .events = POLLIN };
	struct sockaddr_ll from;
	socklen_t fl;
	ssize_t r;

	for (;;) {
		if (poll(&p, 1, timeout_ms) <= 0)
			return -ETIMEDOUT;
		fl = sizeof(from);
		r = recvfrom(n->sock_fd, frame, len, MSG_TRUNC,
			     (struct sockaddr *)&from, &fl);
		if (r < 0)
			return -errno;
		/* Only what entered the TAP from vhost; not what left it. */
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		return r > (ssize_t)len ? -EMSGSIZE : (int)r;
	}
}

static uint8_t pattern(uint32_t seq, size_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

void frame_fill(uint8_t *f, size_t len, const uint8_t *src, uint32_t seq)
{
	size_t i;

	memset(f, 0xff, ETH_ALEN);
	memcpy(f + ETH_ALEN, src ? src : drv_mac, ETH_ALEN);
	f[12] = VNET_ETH_P >> 8;
	f[13] = VNET_ETH_P & 0xff;
	frame_set_seq(f, seq);
	for (i = 18; i < len; i++)
		f[i] = pattern(seq, i);
}

void frame_set_seq(uint8_t *f, uint32_t seq)
{
	f[14] = seq >> 24;
	f[15] = seq >> 16;
	f[16] = seq >> 8;
	f[17] = seq;
}

uint32_t frame_seq(const uint8_t *f)
{
	return (uint32_t)f[14] << 24 | f[15] << 16 | f[16] << 8 | f[17];
}

static uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static uint32_t csum_add(uint32_t sum, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += p[len - 1] << 8;
	return sum;
}

void frame_fill_tcp(uint8_t *f, size_t len, uint32_t seq)
{
	uint8_t *ip = f + 14, *tcp = ip + 20;
	size_t ip_len = len - 14, tcp_len = ip_len - 20, i;
	uint32_t ps;
	uint16_t c;

	memset(f, 0, 54);
	memcpy(f, "\x02\x00\x00\x00\x00\x02", ETH_ALEN);
	memcpy(f + ETH_ALEN, drv_mac, ETH_ALEN);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[2] = ip_len >> 8;
	ip[3] = ip_len;
	ip[6] = 0x40;			/* DF */
	ip[8] = 64;
	ip[9] = 6;			/* TCP */
	memcpy(ip + 12, "\x0a\x00\x00\x01\x0a\x00\x00\x02", 8);
	c = ~csum_fold(csum_add(0, ip, 20));
	ip[10] = c >> 8;
	ip[11] = c;
	tcp[0] = 0x9c;			/* port 40000 -> 5001 */
	tcp[1] = 0x40;
	tcp[2] = 0x13;
	tcp[3] = 0x89;
	tcp[4] = seq >> 24;
	tcp[5] = seq >> 16;
	tcp[6] = seq >> 8;
	tcp[7] = seq;
	tcp[12] = 5 << 4;
	tcp[13] = 0x18;			/* PSH, ACK */
	tcp[14] = 0xff;			/* window */
	tcp[15] = 0xff;
	for (i = 54; i < len; i++)
		f[i] = pattern(seq, i);
	/* CHECKSUM_PARTIAL: the field holds the pseudo-header sum. */
	ps = csum_add(0, ip + 12, 8) + 6 + tcp_len;
	c = csum_fold(ps);
	tcp[16] = c >> 8;
	tcp[17] = c;
}

void hdr_fill_tso(struct virtio_net_hdr_v1 *h, size_t len, uint16_t mss)
{
	memset(h, 0, sizeof(*h));
	h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	h->gso_type = len - 54 > mss ? VIRTIO_NET_HDR_GSO_TCPV4 :
				       VIRTIO_NET_HDR_GSO_NONE;
	h->hdr_len = 54;
	h->gso_size = len - 54 > mss ? mss : 0;
	h->csum_start = 34;
	h->csum_offset = 16;
}

static size_t make_frame(uint8_t *f, size_t len, uint32_t seq,
			 struct virtio_net_hdr_v1 *h)
{
	if (len > 1514) {
		frame_fill_tcp(f, len, seq);
		hdr_fill_tso(h, len, 1448);
	} else {
		frame_fill(f, len, NULL, seq);
		memset(h, 0, sizeof(*h));
	}
	return len;
}

#define WHY(...) (snprintf(why, VNET_WHY_LEN, __VA_ARGS__), -1)
#define CHECK_WAIT_MS 10000

/* One frame of a check: put frame seq on its way, or take it and compare. */
static int check_send(struct vnet *n, int dir, size_t len, uint32_t seq,
		      uint8_t *tx, char *why)
{
	struct virtio_net_hdr_v1 h;
	int r;

	make_frame(tx, len, seq, &h);
	if (dir == VNET_TX) {
		r = vnet_tx_one(n, tx, len, &h, CHECK_WAIT_MS);
		return r ? WHY("tx %u: %s", seq, strerror(-r)) : 0;
	}
	return wire_send(n, tx, len) ? WHY("wire send %u: %s", seq,
					   strerror(errno)) : 0;
}

static int check_recv(struct vnet *n, int dir, size_t len, uint32_t seq,
		      uint8_t *tx, uint8_t *rx, char *why)
{
	struct virtio_net_hdr_v1 h = {}, want;
	int r;

	if (dir == VNET_TX)
		r = wire_recv(n, rx, VNET_BIG_FRAME, CHECK_WAIT_MS);
	else
		r = vnet_rx_one(n, rx, VNET_BIG_FRAME, &h, CHECK_WAIT_MS);
	make_frame(tx, len, seq, &want);
	if (r != (int)len && r >= 60)	/* which frame came instead */
		return WHY("frame %u: %d bytes (those of frame %u), want %zu",
			   seq, r, frame_seq(rx), len);
	if (r != (int)len)
		return WHY("frame %u: %d bytes, want %zu", seq, r, len);
	if (memcmp(tx, rx, len))
		return WHY("frame %u differs (it says it is frame %u)", seq,
			   frame_seq(rx));
	if (dir == VNET_RX && h.gso_type)
		return WHY("frame %u: gso_type %d", seq, h.gso_type);
	return 0;
}

static int vnet_check(struct vnet *n, int dir, const size_t *lens, int nlens,
		      int count, int batch, uint32_t seq0, char *why)
{
	uint8_t *tx = malloc(VNET_BIG_FRAME), *rx = malloc(VNET_BIG_FRAME);
	int sent = 0, seen = 0, r = 0;

	if (!tx || !rx)
		r = WHY("out of memory");
	while (!r && seen < count) {
		int end = sent + batch < count ? sent + batch : count;

		for (; !r && sent < end; sent++)
			r = check_send(n, dir, lens[sent % nlens], seq0 + sent,
				       tx, why);
		for (; !r && seen < sent; seen++)
			r = check_recv(n, dir, lens[seen % nlens], seq0 + seen,
				       tx, rx, why);
	}
	if (!r && dir == VNET_TX && vnet_tx_drain(n, CHECK_WAIT_MS))
		r = WHY("TX buffers not all used: %" PRIu64 " pending",
			n->tx_pending);
	/* Nothing more arrives, on the wire or in the driver's RX ring. */
	if (!r && dir == VNET_TX &&
	    wire_recv(n, rx, VNET_BIG_FRAME, 50) != -ETIMEDOUT)
		r = WHY("more frames than sent");
	if (!r && dir == VNET_RX &&
	    vnet_rx_one(n, rx, VNET_BIG_FRAME, NULL, 50) != -ETIMEDOUT)
		r = WHY("more frames received than sent (frame %u)", frame_seq(rx));
	free(tx);
	free(rx);
	return r;
}

int vnet_check_tx(struct vnet *n, const size_t *lens, int nlens, int count,
		  int batch, uint32_t seq0, char *why)
{
	return vnet_check(n, VNET_TX, lens, nlens, count, batch, seq0, why);
}

int vnet_check_rx(struct vnet *n, const size_t *lens, int nlens, int count,
		  int batch, uint32_t seq0, char *why)
{
	return vnet_check(n, VNET_RX, lens, nlens, count, batch, seq0, why);
}

int vnet_check_mix(struct vnet *n, int count, bool rx, uint32_t seq0,
		   char *why)
{
	static const size_t lens[] = { 60, 1514, 200, 777 };
	char what[VNET_WHY_LEN];

	if (vnet_check_tx(n, lens, 4, count, 64, seq0, what)) {
		snprintf(why, VNET_WHY_LEN, "tx: %.*s", VNET_WHY_LEN - 5, what);
		return -1;
	}
	if (rx && vnet_check_rx(n, lens, 4, count, 64, seq0, what)) {
		snprintf(why, VNET_WHY_LEN, "rx: %.*s", VNET_WHY_LEN - 5, what);
		return -1;
	}
	return 0;
}

/* Copy what follows "key" in fd's fdinfo line starting with it. */
static int fdinfo_get(int fd, const char *key, char *val, size_t len)
{
	char path[64], line[512];
	int found = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (found && fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, strlen(key)))
			continue;
		line[strcspn(line, "\n")] = '\0';
		snprintf(val, len, "%s", line + strlen(key) +
			 strspn(line + strlen(key), " \t"));
		found = 0;
	}
	fclose(f);
	return found;
}

int vhost_fd_name(int fd, char *name, size_t len)
{
	return fdinfo_get(fd, "vhost-name:", name, len);
}

struct payload_delta payload_delta(const struct metamap_stats *a,
				   const struct metamap_stats *b)
{
	struct payload_delta d;

	snprintf(d.s, sizeof(d.s), "fast %" PRIu64 ", fallback %" PRIu64
		 ", fills %" PRIu64 ", invalidations %" PRIu64,
		 b->payload_fast - a->payload_fast,
		 b->payload_fallback - a->payload_fallback,
		 b->payload_fills - a->payload_fills,
		 b->payload_invalidations - a->payload_invalidations);
	return d;
}

int vnet_metamap_stats(struct vnet *n, int qidx, struct metamap_stats *s)
{
	char key[32], val[256];
	int r;

	snprintf(key, sizeof(key), "vq%d-metamap:", qidx);
	r = fdinfo_get(n->vhost_fd, key, val, sizeof(val));
	if (r)
		return r;
	/* payload_slots came last: a kernel without it reads as -1 */
	s->payload_slots = -1;
	if (sscanf(val, "mode=%d valid=%d fast=%" SCNu64 " fallback=%" SCNu64
		   " invalidations=%" SCNu64 " remaps=%" SCNu64
		   " remap_failures=%" SCNu64 " sections=%" SCNu64
		   " batched=%" SCNu64 " refused=%" SCNu64
		   " uaccess_fills=%" SCNu64 " poisoned=%" SCNu64
		   " payload_fast=%" SCNu64 " payload_fallback=%" SCNu64
		   " payload_fills=%" SCNu64 " payload_invalidations=%" SCNu64
		   " payload_slots=%" SCNd64,
		   &s->mode, &s->valid, &s->fast, &s->fallback,
		   &s->invalidations, &s->remaps, &s->remap_failures,
		   &s->sections, &s->batched, &s->refused,
		   &s->uaccess_fills, &s->poisoned, &s->payload_fast,
		   &s->payload_fallback, &s->payload_fills,
		   &s->payload_invalidations, &s->payload_slots) < 16)
		return -EINVAL;
	s->enabled = s->mode == METAMAP_MAP;
	return 0;
}

static const char *const metamap_mode_names[] = {
	[METAMAP_OFF] = "off", [METAMAP_MAP] = "map", [METAMAP_BATCH] = "batch",
};

int metamap_mode_parse(const char *s)
{
	int m;

	for (m = 0; m < (int)ARRAY_SIZE(metamap_mode_names); m++)
		if (!strcmp(s, metamap_mode_names[m]))
			return m;
	return -1;
}

int metamap_get_default(void)
{
	char buf[16] = "";
	FILE *f = fopen(METAMAP_PARAM, "r");
	int ok;

	if (!f)
		return -1;
	ok = fscanf(f, "%15s", buf) == 1;
	fclose(f);
	return ok ? metamap_mode_parse(buf) : -1;
}

int metamap_set_default(int mode)
{
	int old = metamap_get_default();

	if (old < 0 || mode < 0 || mode >= (int)ARRAY_SIZE(metamap_mode_names) ||
	    write_str(METAMAP_PARAM, metamap_mode_names[mode]))
		return -1;
	return old;
}

int metamap_require_default(int mode, char *why)
{
	static const char *const p = METAMAP_PARAM;
	int old = metamap_set_default(mode), now;

	if (old < 0) {
		snprintf(why, VNET_WHY_LEN, "%s: %s", p,
			 access(p, F_OK) ?
			 "missing (no vhost_metamap module with a mode parameter)" :
			 access(p, W_OK) ? "not writable" : "the write failed");
		return -1;
	}
	now = metamap_get_default();
	if (now != mode) {
		metamap_set_default(old);
		snprintf(why, VNET_WHY_LEN, "%s: mode %d written, %d read back",
			 p, mode, now);
		return -1;
	}
	return old;
}

static size_t vring_part_offsets(unsigned int num, size_t *avail, size_t *used)
{
	*avail = vring_desc_size(num);
	*used = ALIGN_UP(*avail + vring_avail_size(num), PAGE_SZ);
	return ALIGN_UP(*used + vring_used_size(num), PAGE_SZ);
}

size_t vnet_rings_size(unsigned int num)
{
	size_t a, u;

	return 2 * vring_part_offsets(num, &a, &u);
}

void vnet_rings_layout(void *mem, unsigned int num, struct vring_layout l[2])
{
	size_t a, u, one = vring_part_offsets(num, &a, &u);
	int i;

	for (i = 0; i < 2; i++) {
		char *base = (char *)mem + i * one;

		l[i].desc = base;
		l[i].avail = base + a;
		l[i].used = base + u;
	}
}

int vq_error_count(struct vq *vq)
{
	uint64_t v = 0;

	if (read(vq->err_fd, &v, sizeof(v)) != sizeof(v))
		return 0;
	return (int)v;
}

int64_t uffd_features(void)
{
	struct uffdio_api api = { .api = UFFD_API };
	int fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK), r;

	if (fd < 0)
		return -errno;
	r = ioctl(fd, UFFDIO_API, &api) ? -errno : 0;
	close(fd);
	return r ? r : (int64_t)api.features;
}

static bool page_zero(const uint8_t *p)
{
	size_t i;

	for (i = 0; i < PAGE_SZ; i++)
		if (p[i])
			return false;
	return true;
}

static void uffd_error(struct uffd_srv *u)
{
	__atomic_store_n(&u->last_errno, errno, __ATOMIC_RELAXED);
	__atomic_fetch_add(&u->errors, 1, __ATOMIC_RELAXED);
}

/* A missing page: its saved content, the zero page for a read of zeroes. */
static void uffd_missing(struct uffd_srv *u, unsigned long addr, bool write)
{
	unsigned long off = addr - (unsigned long)u->base;
	int r;

	if (addr < (unsigned long)u->base || off >= u->len) {
		errno = ERANGE;
		uffd_error(u);
		return;
	}
	/* Counted first: the ioctl wakes the faulting thread. */
	__atomic_fetch_add(&u->missing, 1, __ATOMIC_RELAXED);
	if (!write && page_zero(u->shadow + off)) {
		struct uffdio_zeropage z = { .range = { addr, PAGE_SZ } };

		r = ioctl(u->fd, UFFDIO_ZEROPAGE, &z);
	} else {
		struct uffdio_copy c = {
			.dst = addr, .src = (uintptr_t)(u->shadow + off),
			.len = PAGE_SZ,
		};

		r = ioctl(u->fd, UFFDIO_COPY, &c);
	}
	if (r && errno == EEXIST) {
		/* Another thread's fault filled it: wake this one. */
		struct uffdio_range w = { addr, PAGE_SZ };

		r = ioctl(u->fd, UFFDIO_WAKE, &w);
	}
	if (r)
		uffd_error(u);
}

/* A write to a write-protected page: lift the protection, which wakes. */
static void uffd_unprotect(struct uffd_srv *u, unsigned long addr)
{
	struct uffdio_writeprotect wp = { .range = { addr, PAGE_SZ }, .mode = 0 };

	/* Counted first: lifting the protection wakes the faulting thread. */
	__atomic_fetch_add(&u->wp, 1, __ATOMIC_RELAXED);
	if (ioctl(u->fd, UFFDIO_WRITEPROTECT, &wp))
		uffd_error(u);
}

static void *uffd_run(void *arg)
{
	struct uffd_srv *u = arg;
	struct pollfd p[2] = {
		{ .fd = u->fd, .events = POLLIN },
		{ .fd = u->stop, .events = POLLIN },
	};
	struct uffd_msg m;
	unsigned long addr;
	bool wp;

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			uffd_error(u);
			break;
		}
		if (p[1].revents)
			break;
		if (read(u->fd, &m, sizeof(m)) != sizeof(m)) {
			if (errno != EAGAIN)
				uffd_error(u);
			continue;
		}
		if (m.event != UFFD_EVENT_PAGEFAULT) {
			errno = EPROTO;
			uffd_error(u);
			continue;
		}
		addr = m.arg.pagefault.address & ~(PAGE_SZ - 1);
		wp = m.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP;
		/* Counted before the fault is resolved, which wakes its thread. */
		if ((pid_t)m.arg.pagefault.feat.ptid != u->tid)
			__atomic_fetch_add(&u->other, 1, __ATOMIC_RELAXED);
		else if (wp)
			__atomic_fetch_add(&u->wp_test, 1, __ATOMIC_RELAXED);
		if (wp)
			uffd_unprotect(u, addr);
		else
			uffd_missing(u, addr, m.arg.pagefault.flags &
					      UFFD_PAGEFAULT_FLAG_WRITE);
	}
	return NULL;
}

/*
 * A userfaultfd with the features asked for (and the faulting thread's id),
 * its handler running, missing faults in [base, base + len) served from a
 * shadow copy (zeroes at first).  0, or -1 with the reason in why:
 * userfaultfd with these features is in the selftests' config, so a
 * kernel without it fails the test.
 */
int uffd_start(struct uffd_srv *u, uint64_t want, void *base,
	       size_t len, char *why)
{
	int64_t have = uffd_features();
	struct uffdio_api api = { .api = UFFD_API };

	want |= UFFD_FEATURE_THREAD_ID;
	if (have < 0) {
		snprintf(why, VNET_WHY_LEN, "userfaultfd: %s", strerror(-have));
		return -1;
	}
	if ((have & want) != want) {
		snprintf(why, VNET_WHY_LEN,
			 "userfaultfd features %#lx, want %#lx",
			 (unsigned long)have, (unsigned long)want);
		return -1;
	}
	u->base = base;
	u->len = len;
	u->tid = syscall(SYS_gettid);
	u->shadow = vnet_map_anon(len);
	u->fd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	u->stop = eventfd(0, EFD_CLOEXEC);
	api.features = want;
	if (!u->shadow || u->fd < 0 || u->stop < 0 ||
	    ioctl(u->fd, UFFDIO_API, &api) ||
	    pthread_create(&u->thread, NULL, uffd_run, u)) {
		snprintf(why, VNET_WHY_LEN, "userfaultfd setup: %s",
			 strerror(errno));
		return -1;
	}
	u->features = api.features;
	u->running = true;
	return 0;
}

void uffd_stop(struct uffd_srv *u)
{
	uint64_t one = 1;

	if (u->running && write(u->stop, &one, sizeof(one)) == sizeof(one))
		pthread_join(u->thread, NULL);
	u->running = false;
	if (u->fd >= 0)
		close(u->fd);
	if (u->stop >= 0)
		close(u->stop);
	u->fd = -1;
	u->stop = -1;
	if (u->shadow)
		munmap(u->shadow, u->len);
	u->shadow = NULL;
}

int uffd_register(struct uffd_srv *u, void *p, size_t len, uint64_t mode)
{
	struct uffdio_register r = {
		.range = { (uintptr_t)p, len }, .mode = mode,
	};

	return ioctl(u->fd, UFFDIO_REGISTER, &r) ? -errno : 0;
}

int uffd_protect(struct uffd_srv *u, void *p, size_t len)
{
	struct uffdio_writeprotect wp = {
		.range = { (uintptr_t)p, len },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};

	return ioctl(u->fd, UFFDIO_WRITEPROTECT, &wp) ? -errno : 0;
}

unsigned int uffd_count(unsigned int *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

int vhost_set_features_from_child(int vhost_fd, uint64_t features)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid)
		_exit(ioctl(vhost_fd, VHOST_SET_FEATURES, &features) ?
		      errno & 0xff : 0);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}
