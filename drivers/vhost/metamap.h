/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vhost metadata direct map: the descriptor table, avail ring and used ring of
 * a virtqueue accessed through the kernel's direct mapping of their pages
 * instead of uaccess.  See Documentation/networking/vhost-metamap.rst.
 */
#ifndef _VHOST_METAMAP_H
#define _VHOST_METAMAP_H

#include <linux/compiler.h>
#include <linux/limits.h>
#include <linux/mmu_notifier.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/u64_stats_sync.h>
#include <uapi/linux/vhost_netlink.h>
#include <uapi/linux/virtio_ring.h>

struct iov_iter;
struct vhost_dev;
struct vhost_iotlb;
struct vhost_iotlb_map;
struct vhost_virtqueue;
struct vhost_metamap;

enum vhost_metamap_part {
	VHOST_METAMAP_DESC,
	VHOST_METAMAP_AVAIL,
	VHOST_METAMAP_USED,
	VHOST_METAMAP_NPARTS,
};

/*
 * One ring part: a user address range watched by an interval notifier.
 * Set up by vhost_metamap_arm() under vq->mutex while the map is invalid;
 * kaddr[] is written under map->ring->lock.
 */
struct vhost_metamap_range {
	struct mmu_interval_notifier notifier;
	struct vhost_metamap *map;
	unsigned long uaddr;		/* first byte of the part */
	unsigned long len;		/* bytes of the part */
	unsigned int npages;		/* pages spanned, from uaddr's page */
	void **kaddr;			/* each page's kernel address; the
					 * safe page while the map is invalid
					 */
	bool registered;		/* notifier inserted */
};

/*
 * Counters.  The u64_stats_t ones have one writer, the vq->mutex holder,
 * under @syncp; invalidations is written by the notifier callback under
 * map->ring->lock.  Readers never lock.
 */
struct vhost_metamap_stats {
	u64_stats_t fast;	/* accesses through the map */
	u64_stats_t fallback;	/* accesses the map could not serve, mode map */
	u64_stats_t remaps;	/* successful map builds */
	u64_stats_t remap_failures; /* builds or registrations that failed */
	u64_stats_t sections;	/* map->ring->lock sections */
	u64_stats_t batched;	/* descriptors served from the read-ahead */
	u64_stats_t refused;	/* memory or a CPU the maps may not serve, seen */
	u64_stats_t uaccess_fills; /* read-aheads through uaccess */
	u64_stats_t poisoned;	/* accesses failed: a ring or buffer page poisoned */
	u64_stats_t payload_fast;	/* buffers read/written through it */
	u64_stats_t payload_fallback;	/* ... that uaccess finished (RX: all) */
	u64_stats_t payload_fills;	/* pages the payload map found */
	struct u64_stats_sync syncp;
	u64 invalidations;	/* notifier callbacks that hit the map */
	u64 payload_invalidations; /* ... that hit a memory region */
	u64 payload_slots;	/* entries of the payload map, 0 without one */
};

/* A copy of the counters, read together; see vhost_metamap_read_stats(). */
struct vhost_metamap_counts {
	u64 fast;
	u64 fallback;
	u64 invalidations;
	u64 remaps;
	u64 remap_failures;
	u64 sections;
	u64 batched;
	u64 refused;
	u64 uaccess_fills;
	u64 poisoned;
	u64 payload_fast;
	u64 payload_fallback;
	u64 payload_fills;
	u64 payload_invalidations;
	u64 payload_slots;
};

/* Avail entries read ahead in one section; see vhost_metamap_fill(). */
#define VHOST_METAMAP_BATCH	64
#define VHOST_METAMAP_NO_DESC	U16_MAX

/*
 * The read-ahead of vhost_get_vq_desc(): heads the driver has published,
 * from avail index @idx on, with the first descriptor of each head's chain,
 * read through the map or through one uaccess section.  The driver may
 * change neither before the device has used the chain, so these copies
 * stay right for as long as the entries are not used: after a discard
 * (last_avail_idx moved back) they are served again.  An entry is served
 * only while it is below vq->avail_idx, the ring is the one it was read
 * from (addresses, size, endianness) and the queue has no IOTLB; a miss,
 * a mode change, SET_VRING_BASE and vhost_vq_init_access() empty the
 * batch.  Everything here is the vq->mutex holder's.
 */
struct vhost_metamap_batch {
	u16 idx;		/* avail index of head[0] */
	u16 n;			/* entries read, at most the ring size */
	bool is_le;		/* vq->is_le when they were read */
	unsigned int num;	/* vq->num when they were read */
	const void __user *ring_desc;	/* vq->desc when they were read */
	const void __user *ring_avail;	/* vq->avail when they were read */
	__virtio16 head[VHOST_METAMAP_BATCH];
	u16 didx[VHOST_METAMAP_BATCH];	/* desc[k]'s index, or NO_DESC */
	struct vring_desc desc[VHOST_METAMAP_BATCH];
};

/*
 * translate_desc()'s cache: regions of the device's memory table (never of
 * an IOTLB) that a translation of the queue found, each overlapping no
 * other region, so that it is the one vhost_iotlb_itree_first() finds for
 * any address in it.  Copies, not pointers into the table.  Emptied when
 * the table changes (vhost_metamap_mem_changed()) and with the rest of the
 * queue's state (vhost_metamap_release()); an empty entry has perm 0 and
 * start > last.  Everything here is the vq->mutex holder's.
 */
#define VHOST_METAMAP_XLATE	2

struct vhost_metamap_xlate {
	u64 start;		/* guest address of the region's first byte */
	u64 last;		/* and of its last */
	u64 addr;		/* the owner's address of start */
	u32 perm;		/* VHOST_ACCESS_* */
};

/*
 * The payload map (mode map): the buffers descriptors point to, read (TX)
 * and written (RX) through kernel addresses of guest memory.  Each range
 * of the memory table's regions is watched by an interval notifier of the
 * queue's; a small cache of page translations, direct-mapped by the
 * owner's page number, holds a page's kernel address: an invalidation
 * forgets the entries of the pages it covers and no other (the notifier's
 * sequence serves only the fills in flight).  Allocated when the queue is
 * armed in mode map with a memory table, freed when it is not.
 */
/*
 * A range of the owner's addresses the payload map may serve, watched by
 * one notifier: the memory table's regions merged where they overlap or
 * touch (a table of 64 aliases of guest RAM is one range, one callback per
 * event), sorted by address.
 */
struct vhost_metamap_region {
	struct mmu_interval_notifier notifier;
	struct vhost_metamap *map;
	unsigned long start;		/* the owner's first address */
	unsigned long end;		/* and the first after the range */
};

/*
 * Page translations per queue, a power of two, direct-mapped by the owner's
 * page number: VHOST_METAMAP_PAGES to start with (a ring of 1024 TX buffers
 * of a page each, make bench's, fits; contiguous buffers take distinct
 * entries), twice as many each time the admission's credit runs out
 * (vhost_metamap_payload_grow()), up to VHOST_METAMAP_PAGES_MAX and no
 * more than the memory table's pages rounded up to a power of two.  32
 * KiB per queue in mode map, 512 KiB at most, charged to the owner's
 * memory cgroup.
 */
#define VHOST_METAMAP_PAGES	1024
#define VHOST_METAMAP_PAGES_MAX	16384

/*
 * An entry is valid while @upfn is the owner's page it was found for: a
 * region's callback sets @upfn to ~0 in each entry of a page it
 * invalidates, under map->ring->lock, and nothing else of the table.
 */
struct vhost_metamap_page {
	unsigned long upfn;		/* owner's address >> PAGE_SHIFT, or ~0 */
	unsigned long seen;		/* the page last refused here, or 0 */
	void *kaddr;			/* the page's kernel address */
	bool write;			/* found for write: stores allowed */
};

/* A piece of a copy through the payload map: @len bytes to @dst. */
struct vhost_metamap_to {
	void *dst;
	size_t len;
};

/*
 * Writes @n bytes of a frame, from its byte @off, to @dst: called inside a
 * section of the payload map (__vhost_metamap_copy_to_iter()), so loads
 * and stores only (skb_copy_bits() of a frame in kernel memory).
 */
typedef void (*vhost_metamap_copy_t)(void *arg, size_t off, void *dst,
				     size_t n);

/*
 * The pages one write through the payload map may span: a 1500-byte frame
 * in buffers of any size and alignment (three pages at most) and its
 * header's; a larger buffer is written through uaccess.  An invalidation
 * waits for this much copying at most.
 */
#define VHOST_METAMAP_WRITE_PAGES	4

/*
 * What a fill of the payload map costs, in copies served by its fast path
 * (vhost_metamap_payload_admit()); its credit holds a whole map's worth
 * of fills at most.
 */
#define VHOST_METAMAP_FILL_COST	16

/*
 * The payload map of a queue.  Everything here belongs to the vq->mutex
 * holder, but for what the invalidate callbacks touch under map->ring->lock:
 * the regions' notifier sequences and the @upfn of the entries of the
 * pages they invalidate; so @page and @mask change under map->ring->lock too
 * (vhost_metamap_payload_grow()).
 */
struct vhost_metamap_payload {
	unsigned int nregions;
	unsigned int credit;		/* fills allowed, x FILL_COST */
	unsigned int mask;		/* entries in @page, minus one */
	unsigned int max;		/* entries @page may grow to */
	bool grow;			/* credit ran out: grow after the section */
	struct vhost_metamap_region *regions;
	struct vhost_metamap_page *page;	/* mask + 1 entries */
};

/**
 * struct vhost_metamap_ring - the state of a queue's maps (mode map's)
 * @lock: protects @valid, the pages behind every range's kaddr[] and the
 *	payload map's entries against the invalidate callbacks.  It is taken
 *	only inside ringmap.c and payload.c, around loads and stores of
 *	mapped guest memory (a section): never across anything that can
 *	fault, sleep, allocate, print or take another lock.  The ring's
 *	callback takes it, clears @valid, points kaddr[] at the safe page,
 *	drops it; a region's callback takes it, moves the region's notifier
 *	sequence and forgets the payload map's entries of the pages it
 *	covers.  Once a callback has returned no reader touches the old
 *	pages.
 * @valid: the kaddr[] of every range map the ring; written under @lock,
 *	peeked at with READ_ONCE() to skip the lock when there is no map.
 *	While false, every kaddr[] entry points at the safe page.
 * @armed: the notifiers are registered for the ring described by @num,
 *	@features and the ranges; vq->mutex.  Only ioctl context arms.
 * @num: ring size the ranges were registered for; vq->mutex.
 * @features: acked features the ranges were sized for; vq->mutex.
 * @retry_at: jiffies before which a failed build is not retried; vq->mutex.
 * @poison_pfn: the page to hand to memory_failure() after the section
 *	that found it, then the page the quarantine waits to see go; vq->mutex.
 * @poison_uaddr: the owner's address of that page; vq->mutex.
 * @poison_check_at: jiffies before which the quarantine is not checked
 *	again; vq->mutex.
 * @payload_poison_upfn: the owner's page (address >> PAGE_SHIFT) where a
 *	copy through the payload map read poison, or 0: every copy of a
 *	buffer in that page fails (vhost_metamap_payload_poisoned()) until
 *	the page there is no longer the poisoned one; vq->mutex.
 * @payload_poison_pfn: that poisoned page, which no fill of the payload
 *	map takes while quarantined; vq->mutex.
 * @payload_poison_check_at: as @poison_check_at, for that quarantine.
 * @range: the three ring parts; the ranges themselves change under vq->mutex
 *	only, with @valid false.
 *
 * Allocated for a queue the first time it is to enter mode map
 * (vhost_metamap_prepare()), kept until the device is freed: a queue that
 * never enters mode map carries none of it.
 */
struct vhost_metamap_ring {
	spinlock_t lock;	/* vs. the invalidate callbacks, see above */
	bool valid;
	bool armed;
	unsigned int num;
	u64 features;
	unsigned long retry_at;
	unsigned long poison_pfn;
	unsigned long poison_uaddr;
	unsigned long poison_check_at;
	unsigned long payload_poison_upfn;
	unsigned long payload_poison_pfn;
	unsigned long payload_poison_check_at;
	struct vhost_metamap_range range[VHOST_METAMAP_NPARTS];
};

/**
 * struct vhost_metamap - per-virtqueue read-ahead and metadata direct maps
 * @mode: how the queue accesses its ring, an enum vhost_metamap_mode:
 *	off (uaccess only), map (the maps; the uaccess read-ahead while the
 *	ring map cannot serve), batch (the uaccess read-ahead); vq->mutex.
 * @quarantined: a read through the ring map hit poison at
 *	@ring->poison_uaddr: every access to the queue's ring fails
 *	(vhost_metamap_poisoned()) until the page there is no longer the
 *	poisoned one (memory failure handling unmapped it).  Set under
 *	@ring->lock by the reader, cleared by the vq->mutex holder.
 * @vq: the queue this is the state of.
 * @ring: the maps' state, or NULL before the queue's first mode map;
 *	published under vq->mutex, freed with the device.
 * @payload: the payload map, or NULL; allocated, armed and freed under
 *	vq->mutex (in mode map only), its entries written under @ring->lock.
 * @stats: see struct vhost_metamap_stats.
 * @batch: avail entries and descriptors read ahead; vq->mutex.
 * @xlate: translate_desc()'s regions, see struct vhost_metamap_xlate;
 *	vq->mutex.
 * @xlate_next: the entry the next region found replaces; vq->mutex.
 *
 * Allocated for a queue when its mode first becomes something other than
 * off (vhost_metamap_prepare()), by the devices that use it, and freed
 * with the device (vhost_metamap_dev_free()): a queue that never leaves
 * mode off costs a NULL pointer.
 */
struct vhost_metamap {
	u8 mode;
	bool quarantined;
	struct vhost_virtqueue *vq;
	struct vhost_metamap_ring *ring;
	struct vhost_metamap_payload *payload;
	struct vhost_metamap_stats stats;
	struct vhost_metamap_batch batch;
	struct vhost_metamap_xlate xlate[VHOST_METAMAP_XLATE];
	unsigned int xlate_next;
};

#ifdef CONFIG_VHOST_METAMAP

int vhost_metamap_dev_init(struct vhost_dev *dev);
int vhost_metamap_prepare(struct vhost_dev *dev, u8 mode);
void vhost_metamap_dev_free(struct vhost_dev *dev);
void vhost_metamap_release(struct vhost_virtqueue *vq);
void vhost_metamap_config_changed(struct vhost_virtqueue *vq);
void vhost_metamap_drop_batch(struct vhost_virtqueue *vq);
void vhost_metamap_mem_changed(struct vhost_virtqueue *vq);
void vhost_metamap_set_mode(struct vhost_virtqueue *vq, u8 mode);
u8 vhost_metamap_mode(const struct vhost_virtqueue *vq);
bool vhost_metamap_valid(const struct vhost_virtqueue *vq);

bool __vhost_metamap_poisoned(struct vhost_metamap *map);
bool __vhost_metamap_put16(struct vhost_metamap *map, void __user *uaddr,
			   __virtio16 val);
int __vhost_metamap_get_desc(struct vhost_metamap *map, struct vring_desc *d,
			     unsigned int i,
			     const struct vring_desc __user *uaddr);
int __vhost_metamap_get_head(struct vhost_metamap *map, u16 idx,
			     __virtio16 *head);
void __vhost_metamap_xlate_fill(struct vhost_metamap *map,
				struct vhost_iotlb *umem,
				const struct vhost_iotlb_map *region);
ssize_t __vhost_metamap_copy_to_iter(struct vhost_metamap *map,
				     const void *hdr, size_t hlen,
				     size_t skip, size_t len,
				     vhost_metamap_copy_t copy, void *arg,
				     struct iov_iter *to);
ssize_t __vhost_metamap_copy_from_iter(struct vhost_metamap *map,
				       const struct vhost_metamap_to *to,
				       unsigned int nto, struct iov_iter *from);
int __vhost_metamap_put_used(struct vhost_metamap *map,
			     const struct vring_used_elem *heads,
			     struct vring_used_elem __user *uaddr,
			     unsigned int count);

/*
 * The accessors vhost.c calls are the inline wrappers of these in
 * metamap_access.h, which check the queue's mode first.
 */
void vhost_metamap_read_stats(struct vhost_virtqueue *vq,
			      struct vhost_metamap_counts *c);
void vhost_metamap_show_fdinfo(struct seq_file *m, struct vhost_virtqueue *vq,
			       unsigned int index);

#else

static inline int vhost_metamap_dev_init(struct vhost_dev *dev)
{
	return 0;
}

static inline int vhost_metamap_prepare(struct vhost_dev *dev, u8 mode)
{
	return 0;
}

static inline void vhost_metamap_dev_free(struct vhost_dev *dev) {}
static inline void vhost_metamap_release(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_config_changed(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_drop_batch(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_mem_changed(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_set_mode(struct vhost_virtqueue *vq,
					  u8 mode) {}

static inline u8 vhost_metamap_mode(const struct vhost_virtqueue *vq)
{
	return VHOST_METAMAP_MODE_OFF;
}

static inline bool vhost_metamap_valid(const struct vhost_virtqueue *vq)
{
	return false;
}

static inline void vhost_metamap_read_stats(struct vhost_virtqueue *vq,
					    struct vhost_metamap_counts *c)
{
	memset(c, 0, sizeof(*c));
}

static inline void vhost_metamap_show_fdinfo(struct seq_file *m,
					     struct vhost_virtqueue *vq,
					     unsigned int index) {}

#endif /* CONFIG_VHOST_METAMAP */
#endif /* _VHOST_METAMAP_H */
