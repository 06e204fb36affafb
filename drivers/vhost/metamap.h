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
#include <linux/nospec.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <uapi/linux/virtio_ring.h>

struct vhost_dev;
struct vhost_virtqueue;
struct vhost_metamap;

enum vhost_metamap_part {
	VHOST_METAMAP_DESC,
	VHOST_METAMAP_AVAIL,
	VHOST_METAMAP_USED,
	VHOST_METAMAP_NPARTS,
};

/* One ring part: a user address range watched by an interval notifier. */
struct vhost_metamap_range {
	struct mmu_interval_notifier notifier;
	struct vhost_metamap *map;
	unsigned long uaddr;		/* first byte of the part */
	unsigned long len;		/* bytes of the part */
	unsigned int npages;		/* pages spanned, from uaddr's page */
	void **kaddr;			/* kernel address of each page */
	bool registered;		/* notifier inserted */
};

/* Counters; see struct vhost_metamap for who writes which. */
struct vhost_metamap_stats {
	u64 fast;		/* accesses through the map */
	u64 fallback;		/* accesses through uaccess, map enabled */
	u64 invalidations;	/* notifier callbacks that hit the map */
	u64 remaps;		/* successful map builds */
	u64 remap_failures;	/* builds that failed (fault, race) */
	u64 sections;		/* sections opened (map->lock taken for a batch) */
	u64 batched;		/* chains fetched from the batch, no section */
};

/* Avail entries read ahead in one section; see vhost_metamap_fill(). */
#define VHOST_METAMAP_BATCH	64
#define VHOST_METAMAP_NO_DESC	U16_MAX

/*
 * Heads the driver has published, from avail index @idx on, with the
 * descriptor of each head that is a whole chain (neither NEXT nor INDIRECT).
 * The driver may change neither before the device has used the chain, so
 * these copies stay right for as long as the entries are not used: after a
 * discard (last_avail_idx moved back) they are served again.  Everything
 * here is the vq->mutex holder's; vhost_metamap_release() empties it.
 */
struct vhost_metamap_batch {
	u16 idx;		/* avail index of head[0] */
	u16 n;			/* entries read */
	__virtio16 head[VHOST_METAMAP_BATCH];
	u16 didx[VHOST_METAMAP_BATCH];	/* desc[k]'s index, or NO_DESC */
	struct vring_desc desc[VHOST_METAMAP_BATCH];
};

/**
 * struct vhost_metamap - per-virtqueue metadata direct map
 * @lock: protects @valid and the pages behind every range's kaddr[] against
 *	the invalidate callback.  Readers hold it only around accesses to the
 *	mapped memory (a section), never across anything that can fault or
 *	sleep.  The callback takes it, clears @valid, drops it; once it has
 *	returned no reader touches the old pages again.
 * @valid: the kaddr[] of every range map the ring; written under @lock,
 *	peeked at with READ_ONCE() to skip the lock when there is no map.
 * @held: the vq->mutex holder holds @lock for a section (vhost_metamap_begin)
 * @enabled: the fast path may be used on this queue; vq->mutex.
 * @retry_at: jiffies before which a failed build is not retried; vq->mutex.
 * @num: ring size the ranges were registered for; vq->mutex.
 * @features: acked features the ranges were sized for; vq->mutex.
 * @range: the three ring parts; the ranges themselves change under vq->mutex
 *	only, with @valid false.
 * @batch: avail entries and descriptors read ahead; vq->mutex.
 * @stats: invalidations is written under @lock, everything else by the
 *	vq->mutex holder; read locklessly.
 */
struct vhost_metamap {
	spinlock_t lock;	/* vs. the invalidate callback, see above */
	bool valid;
	bool held;
	bool enabled;
	unsigned long retry_at;
	unsigned int num;
	u64 features;
	struct vhost_metamap_range range[VHOST_METAMAP_NPARTS];
	struct vhost_metamap_stats stats;
	struct vhost_metamap_batch batch;
};

#ifdef CONFIG_VHOST_METAMAP

void vhost_metamap_dev_init(struct vhost_dev *dev);
void vhost_metamap_init(struct vhost_virtqueue *vq);
void vhost_metamap_release(struct vhost_virtqueue *vq);
void vhost_metamap_config_changed(struct vhost_virtqueue *vq);
void vhost_metamap_set_enabled(struct vhost_virtqueue *vq, bool on);
void vhost_metamap_begin(struct vhost_virtqueue *vq);
bool __vhost_metamap_get16(struct vhost_metamap *map, unsigned int p,
			   const void __user *uaddr, __virtio16 *val);
bool __vhost_metamap_put16(struct vhost_metamap *map, void __user *uaddr,
			   __virtio16 val);
bool __vhost_metamap_get_desc(struct vhost_metamap *map, struct vring_desc *d,
			      const struct vring_desc __user *uaddr);
bool vhost_metamap_fill(struct vhost_virtqueue *vq, u16 idx,
			__virtio16 *head);
bool vhost_metamap_put_used(struct vhost_metamap *map,
			    const struct vring_used_elem *heads,
			    struct vring_used_elem __user *uaddr,
			    unsigned int count);
void vhost_metamap_show_fdinfo(struct seq_file *m, struct vhost_virtqueue *vq,
			       unsigned int index);

/*
 * The fast path, inline in vhost.c: inside a section (map->held, so
 * map->lock is held and the map valid) an access is a bounds check and a
 * load or store.  Everything else (no section, an access the map cannot
 * serve) goes to the out-of-line functions above, which answer false when
 * the caller must use uaccess.
 */

/*
 * Kernel address of [uaddr, uaddr + size) in part p, or NULL when that is
 * outside the part or crosses a page.  uaddr derives from guest-controlled
 * indices and this path has no uaccess speculation barrier, so the page
 * index is clamped with array_index_nospec().  Caller holds map->lock.
 */
static __always_inline void *__vhost_metamap_kaddr(const struct vhost_metamap *map,
						   int p, unsigned long uaddr,
						   size_t size)
{
	const struct vhost_metamap_range *r = &map->range[p];
	unsigned long off = uaddr - r->uaddr;	/* wraps if uaddr < r->uaddr */
	unsigned long pg;

	if (unlikely(off > r->len - size))
		return NULL;
	off += offset_in_page(r->uaddr);
	if (unlikely(offset_in_page(off) + size > PAGE_SIZE))
		return NULL;
	pg = array_index_nospec(off >> PAGE_SHIFT, (unsigned long)r->npages);
	return r->kaddr[pg] + offset_in_page(off);
}

/* Lockless readers see the counter whole; its writer holds vq->mutex. */
static __always_inline void vhost_metamap_count_fast(struct vhost_metamap *map)
{
	WRITE_ONCE(map->stats.fast, map->stats.fast + 1);
}

static __always_inline bool vhost_metamap_get16(struct vhost_metamap *map,
						unsigned int p,
						const void __user *uaddr,
						__virtio16 *val)
{
	__virtio16 *k;

	if (likely(map->held)) {
		k = __vhost_metamap_kaddr(map, p, (unsigned long)uaddr,
					  sizeof(*k));
		if (likely(k)) {
			*val = READ_ONCE(*k);
			vhost_metamap_count_fast(map);
			return true;
		}
	}
	return map->enabled && __vhost_metamap_get16(map, p, uaddr, val);
}

static __always_inline bool vhost_metamap_put16(struct vhost_metamap *map,
						void __user *uaddr,
						__virtio16 val)
{
	__virtio16 *k;

	if (likely(map->held)) {
		k = __vhost_metamap_kaddr(map, VHOST_METAMAP_USED,
					  (unsigned long)uaddr, sizeof(*k));
		if (likely(k)) {
			WRITE_ONCE(*k, val);
			vhost_metamap_count_fast(map);
			return true;
		}
	}
	return map->enabled && __vhost_metamap_put16(map, uaddr, val);
}

static __always_inline bool
vhost_metamap_get_desc(struct vhost_metamap *map, struct vring_desc *d,
		       const struct vring_desc __user *uaddr)
{
	struct vring_desc *k;

	if (likely(map->held)) {
		k = __vhost_metamap_kaddr(map, VHOST_METAMAP_DESC,
					  (unsigned long)uaddr, sizeof(*k));
		if (likely(k)) {
			*d = *k;
			vhost_metamap_count_fast(map);
			return true;
		}
	}
	return map->enabled && __vhost_metamap_get_desc(map, d, uaddr);
}

/*
 * The read-ahead batch.  A chain whose head and descriptor are in it needs
 * no section at all: vhost_get_vq_desc() takes it from here, without the
 * accessors.  Returns the chain's head and points d at its descriptor, or
 * -1 when the chain is not in the batch whole.
 */
static __always_inline int vhost_metamap_next(struct vhost_metamap *map,
					      u16 idx,
					      const struct vring_desc **d)
{
	const struct vhost_metamap_batch *b = &map->batch;
	u16 k = idx - b->idx;

	if (k < b->n && b->didx[k] != VHOST_METAMAP_NO_DESC) {
		WRITE_ONCE(map->stats.batched, map->stats.batched + 1);
		*d = &b->desc[k];
		return b->didx[k];
	}
	return -1;
}

/*
 * Inside a section, the head at avail index idx: from the batch, or, on a
 * miss, from a new batch read from idx on.  False: the caller reads it.
 */
static __always_inline bool vhost_metamap_get_head(struct vhost_virtqueue *vq,
						   struct vhost_metamap *map,
						   u16 idx, __virtio16 *head)
{
	const struct vhost_metamap_batch *b = &map->batch;
	u16 k = idx - b->idx;

	if (!map->held)
		return false;
	if (k < b->n) {
		*head = b->head[k];
		return true;
	}
	return vhost_metamap_fill(vq, idx, head);
}

/* Close a section: the caller is about to do something that may fault. */
static __always_inline void vhost_metamap_end(struct vhost_metamap *map)
{
	if (map->held) {
		map->held = false;
		spin_unlock(&map->lock);
	}
}

#else

static inline void vhost_metamap_dev_init(struct vhost_dev *dev) {}
static inline void vhost_metamap_init(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_release(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_config_changed(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_set_enabled(struct vhost_virtqueue *vq,
					     bool on) {}
static inline void vhost_metamap_begin(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_end(struct vhost_metamap *map) {}
static inline bool vhost_metamap_get16(struct vhost_metamap *map,
				       unsigned int p,
				       const void __user *uaddr,
				       __virtio16 *val)
{
	return false;
}

static inline bool vhost_metamap_put16(struct vhost_metamap *map,
				       void __user *uaddr, __virtio16 val)
{
	return false;
}

static inline bool vhost_metamap_get_desc(struct vhost_metamap *map,
					  struct vring_desc *d,
					  const struct vring_desc __user *uaddr)
{
	return false;
}

static inline int vhost_metamap_next(struct vhost_metamap *map, u16 idx,
				     const struct vring_desc **d)
{
	return -1;
}

static inline bool vhost_metamap_get_head(struct vhost_virtqueue *vq,
					  struct vhost_metamap *map,
					  u16 idx, __virtio16 *head)
{
	return false;
}

static inline bool vhost_metamap_put_used(struct vhost_metamap *map,
					  const struct vring_used_elem *heads,
					  struct vring_used_elem __user *uaddr,
					  unsigned int count)
{
	return false;
}

static inline void vhost_metamap_show_fdinfo(struct seq_file *m,
					     struct vhost_virtqueue *vq,
					     unsigned int index) {}

#endif /* CONFIG_VHOST_METAMAP */
#endif /* _VHOST_METAMAP_H */
