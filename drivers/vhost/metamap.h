/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vhost metadata direct map: the descriptor table, avail ring and used ring of
 * a virtqueue accessed through the kernel's direct mapping of their pages
 * instead of uaccess.  See Documentation/networking/vhost-metamap.rst.
 */
#ifndef _VHOST_METAMAP_H
#define _VHOST_METAMAP_H

#include <linux/compiler.h>
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
 * @stats: fast, fallback, remaps and remap_failures are written by the
 *	vq->mutex holder, invalidations under @lock; read locklessly.
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
};

#ifdef CONFIG_VHOST_METAMAP

void vhost_metamap_dev_init(struct vhost_dev *dev);
void vhost_metamap_init(struct vhost_virtqueue *vq);
void vhost_metamap_release(struct vhost_virtqueue *vq);
void vhost_metamap_config_changed(struct vhost_virtqueue *vq);
void vhost_metamap_set_enabled(struct vhost_virtqueue *vq, bool on);
void vhost_metamap_begin(struct vhost_virtqueue *vq);
void vhost_metamap_end(struct vhost_virtqueue *vq);
bool vhost_metamap_get16(struct vhost_virtqueue *vq, unsigned int p,
			 const void __user *uaddr, __virtio16 *val);
bool vhost_metamap_put16(struct vhost_virtqueue *vq, void __user *uaddr,
			 __virtio16 val);
bool vhost_metamap_get_desc(struct vhost_virtqueue *vq, struct vring_desc *d,
			    unsigned int idx);
bool vhost_metamap_put_used(struct vhost_virtqueue *vq,
			    const struct vring_used_elem *heads,
			    unsigned int idx, unsigned int count);
void vhost_metamap_show_fdinfo(struct seq_file *m, struct vhost_virtqueue *vq,
			       unsigned int index);

#else

static inline void vhost_metamap_dev_init(struct vhost_dev *dev) {}
static inline void vhost_metamap_init(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_release(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_config_changed(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_set_enabled(struct vhost_virtqueue *vq,
					     bool on) {}
static inline void vhost_metamap_begin(struct vhost_virtqueue *vq) {}
static inline void vhost_metamap_end(struct vhost_virtqueue *vq) {}
static inline bool vhost_metamap_get16(struct vhost_virtqueue *vq,
				       unsigned int p,
				       const void __user *uaddr,
				       __virtio16 *val)
{
	return false;
}

static inline bool vhost_metamap_put16(struct vhost_virtqueue *vq,
				       void __user *uaddr, __virtio16 val)
{
	return false;
}

static inline bool vhost_metamap_get_desc(struct vhost_virtqueue *vq,
					  struct vring_desc *d,
					  unsigned int idx)
{
	return false;
}

static inline bool vhost_metamap_put_used(struct vhost_virtqueue *vq,
					  const struct vring_used_elem *heads,
					  unsigned int idx, unsigned int count)
{
	return false;
}

static inline void vhost_metamap_show_fdinfo(struct seq_file *m,
					     struct vhost_virtqueue *vq,
					     unsigned int index) {}

#endif /* CONFIG_VHOST_METAMAP */
#endif /* _VHOST_METAMAP_H */
