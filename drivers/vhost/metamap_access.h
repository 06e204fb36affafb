/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The metadata accessors of the vhost core (vhost.c), inline: the queue's
 * mode is checked here, so that a queue in mode off, and every queue of a
 * device that never sets a mode (its vq->metamap is NULL), pays a load and
 * a branch per access instead of a call into vhost_metamap.  Included by
 * vhost.c and net.c (the payload map's copy), after vhost.h (struct
 * vhost_virtqueue).  See metamap.h.
 */
#ifndef _VHOST_METAMAP_ACCESS_H
#define _VHOST_METAMAP_ACCESS_H

#include <linux/nospec.h>

#include "vhost.h"

#ifdef CONFIG_VHOST_METAMAP

/* The queue's read-ahead and map if its mode is at least @mode, or NULL. */
static inline struct vhost_metamap *vhost_metamap_in(struct vhost_virtqueue *vq,
						     u8 mode)
{
	struct vhost_metamap *map = vq->metamap;

	if (!map || map->mode == VHOST_METAMAP_MODE_OFF)
		return NULL;
	if (mode == VHOST_METAMAP_MODE_MAP &&
	    map->mode != VHOST_METAMAP_MODE_MAP)
		return NULL;
	return map;
}

/*
 * Whether the queue's ring accesses involve the read-ahead or the map at
 * all: its mode is not off, or a poisoned page quarantines it.  Both
 * change under vq->mutex only, so that a caller holding it may take the
 * answer for the whole of its work (vhost_get_vq_desc()).
 */
static inline bool vhost_metamap_engaged(struct vhost_virtqueue *vq)
{
	return vq->metamap_engaged;
}

/*
 * Whether every access to the queue's ring must fail: a read through the
 * map found a ring page poisoned, and memory failure handling has not
 * unmapped it yet.  Checked before each ring access, uaccess ones too, so
 * that the worker never touches the page again; vq->mutex held.
 */
static inline bool vhost_metamap_poisoned(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = vq->metamap;

	return map && unlikely(READ_ONCE(map->quarantined)) &&
	       __vhost_metamap_poisoned(map);
}

/*
 * The accessors.  vhost_metamap_put16() answers true when it did the store
 * through the map, false when the caller must use uaccess.  The others
 * return 1 when they did the access (through the map, or for heads and
 * descriptors through the read-ahead, which may use uaccess), 0 when the
 * caller must use uaccess, -EIO when the access must fail (the read found
 * a ring page poisoned).  vq->mutex held.  The 16-bit store never sleeps;
 * the others may, to rebuild an invalid map or fault ring pages in.  The
 * 16-bit loads (indices, flags, event words) stay with uaccess: a single
 * load that cannot tear, which a copy through the map could not cheapen.
 */
static inline bool vhost_metamap_put16(struct vhost_virtqueue *vq,
				       void __user *uaddr, __virtio16 val)
{
	struct vhost_metamap *map = vhost_metamap_in(vq, VHOST_METAMAP_MODE_MAP);

	return map && __vhost_metamap_put16(map, uaddr, val);
}

/*
 * Entry k of the read-ahead for avail index idx, served inline: below what
 * was read and below vq->avail_idx (a driver may lower its index).  Every
 * other change of the ring (addresses, size, endianness, features, base,
 * mode, reset, an IOTLB) empties the batch where it is made, and a miss
 * goes to readahead.c, which checks them all again.  -1 on a miss.
 */
static __always_inline int vhost_metamap_batch_k(const struct vhost_metamap *map,
						 const struct vhost_virtqueue *vq,
						 u16 idx)
{
	const struct vhost_metamap_batch *b = &map->batch;
	u16 k = idx - b->idx;

	if (k >= b->n || k >= (u16)(vq->avail_idx - b->idx))
		return -1;
	return array_index_nospec(k, b->n);
}

/*
 * Descriptor i of the table, at uaddr: the read-ahead holds the first
 * descriptor of the chain at vq->last_avail_idx, and in mode map the map
 * serves any other.
 */
static inline int vhost_metamap_get_desc(struct vhost_virtqueue *vq,
					 struct vring_desc *d, unsigned int i,
					 const struct vring_desc __user *uaddr)
{
	struct vhost_metamap *map = vhost_metamap_in(vq, VHOST_METAMAP_MODE_BATCH);
	int k;

	if (!map)
		return 0;
	k = vhost_metamap_batch_k(map, vq, vq->last_avail_idx);
	if (likely(k >= 0) && map->batch.didx[k] == i) {
		*d = map->batch.desc[k];
		u64_stats_update_begin(&map->stats.syncp);
		u64_stats_inc(&map->stats.batched);
		u64_stats_update_end(&map->stats.syncp);
		return 1;
	}
	return __vhost_metamap_get_desc(map, d, i, uaddr);
}

static inline int vhost_metamap_get_head(struct vhost_virtqueue *vq, u16 idx,
					 __virtio16 *head)
{
	struct vhost_metamap *map = vhost_metamap_in(vq, VHOST_METAMAP_MODE_BATCH);
	int k;

	if (!map)
		return 0;
	k = vhost_metamap_batch_k(map, vq, idx);
	if (likely(k >= 0)) {
		*head = map->batch.head[k];
		return 1;
	}
	return __vhost_metamap_get_head(map, idx, head);
}

static inline int vhost_metamap_put_used(struct vhost_virtqueue *vq,
					 const struct vring_used_elem *heads,
					 struct vring_used_elem __user *uaddr,
					 unsigned int count)
{
	struct vhost_metamap *map = vhost_metamap_in(vq, VHOST_METAMAP_MODE_MAP);

	return map ? __vhost_metamap_put_used(map, heads, uaddr, count) : 0;
}

/*
 * The chain at vq->last_avail_idx, if the read-ahead holds its head and
 * its first descriptor (in order, only if it is the chain the last one
 * ended at): its head, with *d that descriptor; -1 otherwise, and
 * vhost_get_vq_desc() reads the head as usual.  Only for a queue
 * vhost_metamap_engaged(), which has its state; in mode off (a quarantine)
 * its batch is empty.
 */
static __always_inline int vhost_metamap_peek(struct vhost_virtqueue *vq,
					      struct vring_desc *d)
{
	struct vhost_metamap *map = vq->metamap;
	unsigned int head;
	int k;

	k = vhost_metamap_batch_k(map, vq, vq->last_avail_idx);
	if (k < 0)
		return -1;
	head = map->batch.didx[k];
	if (head == VHOST_METAMAP_NO_DESC)
		return -1;
	if (vhost_has_feature(vq, VIRTIO_F_IN_ORDER) &&
	    (!vq->next_avail_head_known ||
	     head != (vq->next_avail_head & (vq->num - 1))))
		return -1;
	*d = map->batch.desc[k];
	u64_stats_update_begin(&map->stats.syncp);
	u64_stats_inc(&map->stats.batched);
	u64_stats_update_end(&map->stats.syncp);
	return head;
}

/*
 * translate_desc() of a descriptor [addr, last] of a queue without an
 * IOTLB: if a region the queue's translations found before holds it all
 * with @access (struct vhost_metamap_xlate), the one iovec it takes, in
 * *iov, and 1, without a walk of the memory table; 0 otherwise.
 */
static __always_inline int vhost_metamap_xlate(struct vhost_virtqueue *vq,
					       u64 addr, u64 last, int access,
					       struct iovec *iov)
{
	struct vhost_metamap *map = vhost_metamap_in(vq, VHOST_METAMAP_MODE_BATCH);
	const struct vhost_metamap_xlate *x;
	unsigned int i;

	if (!map || unlikely(last < addr))
		return 0;
	for (i = 0; i < VHOST_METAMAP_XLATE; i++) {
		x = &map->xlate[i];
		if (addr >= x->start && last <= x->last && (x->perm & access)) {
			iov->iov_base = (void __user *)(unsigned long)
					(x->addr + addr - x->start);
			iov->iov_len = last - addr + 1;
			return 1;
		}
	}
	return 0;
}

/* Whether the queue's buffers may be read through the payload map. */
static inline bool vhost_metamap_payload_mapped(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = vq->metamap;

	return map && map->payload;
}

/*
 * Copy the buffer @from describes into the @nto pieces @to through the
 * payload map of a queue in mode map (__vhost_metamap_copy_from_iter()):
 * the bytes copied, the rest for uaccess; -EIO for poison.  vq->mutex.
 */
static inline ssize_t vhost_metamap_copy_from_iter(struct vhost_virtqueue *vq,
						   const struct vhost_metamap_to *to,
						   unsigned int nto,
						   struct iov_iter *from)
{
	struct vhost_metamap *map = vq->metamap;

	if (!map || !map->payload)
		return 0;
	return __vhost_metamap_copy_from_iter(map, to, nto, from);
}

/*
 * Write a received frame into the buffer @to describes through the payload
 * map of a queue in mode map (__vhost_metamap_copy_to_iter()): all of it,
 * or nothing (0) and the caller writes it through uaccess.  vq->mutex.
 */
static inline ssize_t vhost_metamap_copy_to_iter(struct vhost_virtqueue *vq,
						 const void *hdr, size_t hlen,
						 size_t skip, size_t len,
						 vhost_metamap_copy_t copy,
						 void *arg, struct iov_iter *to)
{
	struct vhost_metamap *map = vq->metamap;

	if (!map || !map->payload)
		return 0;
	return __vhost_metamap_copy_to_iter(map, hdr, hlen, skip, len, copy,
					    arg, to);
}

/* What translate_desc() found in the memory table, for the next one. */
static inline void vhost_metamap_xlate_fill(struct vhost_virtqueue *vq,
					    struct vhost_iotlb *umem,
					    const struct vhost_iotlb_map *region)
{
	struct vhost_metamap *map = vhost_metamap_in(vq, VHOST_METAMAP_MODE_BATCH);

	if (map)
		__vhost_metamap_xlate_fill(map, umem, region);
}

#else

static inline bool vhost_metamap_engaged(struct vhost_virtqueue *vq)
{
	return false;
}

static inline bool vhost_metamap_poisoned(struct vhost_virtqueue *vq)
{
	return false;
}

static inline bool vhost_metamap_put16(struct vhost_virtqueue *vq,
				       void __user *uaddr, __virtio16 val)
{
	return false;
}

static inline int vhost_metamap_get_desc(struct vhost_virtqueue *vq,
					 struct vring_desc *d, unsigned int i,
					 const struct vring_desc __user *uaddr)
{
	return 0;
}

static inline int vhost_metamap_get_head(struct vhost_virtqueue *vq, u16 idx,
					 __virtio16 *head)
{
	return 0;
}

static inline int vhost_metamap_put_used(struct vhost_virtqueue *vq,
					 const struct vring_used_elem *heads,
					 struct vring_used_elem __user *uaddr,
					 unsigned int count)
{
	return 0;
}

static inline int vhost_metamap_peek(struct vhost_virtqueue *vq,
				     struct vring_desc *d)
{
	return -1;
}

static inline int vhost_metamap_xlate(struct vhost_virtqueue *vq, u64 addr,
				      u64 last, int access, struct iovec *iov)
{
	return 0;
}

static inline void vhost_metamap_xlate_fill(struct vhost_virtqueue *vq,
					    struct vhost_iotlb *umem,
					    const struct vhost_iotlb_map *region) {}

static inline bool vhost_metamap_payload_mapped(struct vhost_virtqueue *vq)
{
	return false;
}

static inline ssize_t vhost_metamap_copy_from_iter(struct vhost_virtqueue *vq,
						   const struct vhost_metamap_to *to,
						   unsigned int nto,
						   struct iov_iter *from)
{
	return 0;
}

static inline ssize_t vhost_metamap_copy_to_iter(struct vhost_virtqueue *vq,
						 const void *hdr, size_t hlen,
						 size_t skip, size_t len,
						 vhost_metamap_copy_t copy,
						 void *arg, struct iov_iter *to)
{
	return 0;
}

#endif /* CONFIG_VHOST_METAMAP */
#endif /* _VHOST_METAMAP_ACCESS_H */
