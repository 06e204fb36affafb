/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The metadata accessors of the vhost core (vhost.c), inline: the queue's
 * mode is checked here, so that a queue in mode off, and every queue of a
 * device that never sets a mode, pays a load and a branch per access
 * instead of a call into vhost_metamap.  Included by vhost.c only, after
 * vhost.h (struct vhost_virtqueue).  See metamap.h.
 */
#ifndef _VHOST_METAMAP_ACCESS_H
#define _VHOST_METAMAP_ACCESS_H

#include <linux/nospec.h>

#include "vhost.h"

#ifdef CONFIG_VHOST_METAMAP

/*
 * The accessors: each answers true when it did the access (through the
 * map, or for vhost_metamap_get_head() through the read-ahead, which may
 * use uaccess), false when the caller must use uaccess.  vq->mutex held.
 * The 16-bit store and the descriptor accessor never sleep;
 * vhost_metamap_get_head() and vhost_metamap_put_used() may sleep to
 * rebuild an invalid map or fault ring pages in.  The 16-bit loads
 * (indices, flags, event words) stay with uaccess: a single load that
 * cannot tear and that the exception fixup recovers from a machine check
 * (within the limit vhost-metamap.rst's "Memory errors" describes), which
 * no kernel load through the map can be both of.
 */
static inline bool vhost_metamap_put16(struct vhost_virtqueue *vq,
				       void __user *uaddr, __virtio16 val)
{
	return vq->metamap.mode == VHOST_METAMAP_MODE_MAP &&
	       __vhost_metamap_put16(vq, uaddr, val);
}

static inline bool vhost_metamap_get_desc(struct vhost_virtqueue *vq,
					  struct vring_desc *d,
					  const struct vring_desc __user *uaddr)
{
	return vq->metamap.mode == VHOST_METAMAP_MODE_MAP &&
	       __vhost_metamap_get_desc(vq, d, uaddr);
}

static inline bool vhost_metamap_get_head(struct vhost_virtqueue *vq, u16 idx,
					  __virtio16 *head)
{
	return vq->metamap.mode != VHOST_METAMAP_MODE_OFF &&
	       __vhost_metamap_get_head(vq, idx, head);
}

static inline bool vhost_metamap_put_used(struct vhost_virtqueue *vq,
					  const struct vring_used_elem *heads,
					  struct vring_used_elem __user *uaddr,
					  unsigned int count)
{
	return vq->metamap.mode == VHOST_METAMAP_MODE_MAP &&
	       __vhost_metamap_put_used(vq, heads, uaddr, count);
}

/*
 * The chain at vq->last_avail_idx if the read-ahead holds it whole (one
 * descriptor, neither NEXT nor INDIRECT): its head, with *d pointing at
 * the descriptor, or -1; vhost_get_vq_desc() then needs no ring access.
 * An entry is served while it is below vq->avail_idx and the queue has no
 * IOTLB, and in order (VIRTIO_F_IN_ORDER) only if it is the chain the last
 * one ended at; every other change of the ring (addresses, size, endianness,
 * features, base, mode, reset) empties the batch where it is made, and
 * vhost_metamap_get_head() checks them all again at every read-ahead.
 */
static inline int vhost_metamap_next(struct vhost_virtqueue *vq,
				     const struct vring_desc **d)
{
	struct vhost_metamap_batch *b = &vq->metamap.batch;
	u16 k = vq->last_avail_idx - b->idx;

	if (k >= b->n || k >= (u16)(vq->avail_idx - b->idx) || vq->iotlb)
		return -1;
	k = array_index_nospec(k, b->n);
	if (b->didx[k] == VHOST_METAMAP_NO_DESC)
		return -1;
	/* In order, only the chain the last one ended at (see fill). */
	if (vhost_has_feature(vq, VIRTIO_F_IN_ORDER) &&
	    (!vq->next_avail_head_known ||
	     b->didx[k] != (vq->next_avail_head & (vq->num - 1))))
		return -1;
	u64_stats_update_begin(&vq->stats.syncp);
	u64_stats_inc(&vq->metamap.stats.batched);
	u64_stats_update_end(&vq->stats.syncp);
	*d = &b->desc[k];
	return b->didx[k];
}

#else

static inline bool vhost_metamap_put16(struct vhost_virtqueue *vq,
				       void __user *uaddr, __virtio16 val)
{
	return false;
}

static inline bool vhost_metamap_get_desc(struct vhost_virtqueue *vq,
					  struct vring_desc *d,
					  const struct vring_desc __user *uaddr)
{
	return false;
}

static inline bool vhost_metamap_get_head(struct vhost_virtqueue *vq, u16 idx,
					  __virtio16 *head)
{
	return false;
}

static inline bool vhost_metamap_put_used(struct vhost_virtqueue *vq,
					  const struct vring_used_elem *heads,
					  struct vring_used_elem __user *uaddr,
					  unsigned int count)
{
	return false;
}

static inline int vhost_metamap_next(struct vhost_virtqueue *vq,
				     const struct vring_desc **d)
{
	return -1;
}

#endif /* CONFIG_VHOST_METAMAP */
#endif /* _VHOST_METAMAP_ACCESS_H */
