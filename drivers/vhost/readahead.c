// SPDX-License-Identifier: GPL-2.0
/*
 * vhost metadata read-ahead.
 *
 * vhost_get_vq_desc() asks for one head and then one descriptor at a time,
 * each through its own uaccess call.  The read-ahead reads the heads the
 * driver has published from the one asked for on, and the first
 * descriptor of each head's chain, into the queue's batch (struct
 * vhost_metamap_batch) in one copy and one uaccess section, or in mode map
 * through the ring map (ringmap.c); the accessors of metamap_access.h serve
 * the next heads and descriptors from it.  The driver may change neither
 * an exposed head nor its descriptors before the device has used the
 * chain, so the copies stay right while they are served.
 *
 * Everything here runs under vq->mutex; the batch is that holder's.
 */
#include <linux/nospec.h>
#include <linux/uaccess.h>

#include "metamap_internal.h"

void vhost_metamap_drop_batch(struct vhost_virtqueue *vq)
{
	lockdep_assert_held(&vq->mutex);
	if (vq->metamap)
		vq->metamap->batch.n = 0;
}
EXPORT_SYMBOL_GPL(vhost_metamap_drop_batch);

/*
 * Whether the read-ahead may go through uaccess: the ring's addresses are
 * the owner's, not I/O virtual addresses of a device IOTLB, and the table
 * is aligned for 64-bit loads (a driver that does not align it, against
 * virtio, is served by the per-access path).  The rings passed
 * access_ok() when they were set (vq_access_ok()), and every entry read
 * lies inside them.  vq->mutex.
 */
static bool vhost_metamap_user_ok(const struct vhost_virtqueue *vq)
{
	return vq->desc && vq->avail && vq->num &&
	       IS_ALIGNED((unsigned long)vq->desc, sizeof(u64)) &&
	       !vq->iotlb && !READ_ONCE(vq->dev->iotlb);
}

/*
 * Heads from avail index idx on, n at most: one copy up to the ring's end
 * and one from its start, with no speculation barrier (the ring passed
 * access_ok() and every slot is masked into it); how many were read
 * before a fault, if any.
 */
static noinline unsigned int vhost_metamap_user_heads(struct vhost_metamap *map,
						      u16 idx, unsigned int n)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;
	const __virtio16 __user *ring = vq->avail->ring;
	unsigned int num = vq->num, k, run, slot, left;

	if (!access_ok(ring, num * sizeof(*ring)))
		return 0;
	for (k = 0; k < n; k += run) {
		slot = (u16)(idx + k) & (num - 1);
		run = min(n - k, num - slot);
		left = __copy_from_user(&b->head[k], &ring[slot],
					run * sizeof(*ring));
		if (unlikely(left))
			return k + (run * sizeof(*ring) - left) / sizeof(*ring);
	}
	return n;
}

/*
 * The first descriptor of the chain of each of the first n heads of the
 * batch, in one uaccess section (masked user pointers where the
 * architecture has them, so no speculation barrier either; open-coded,
 * as objtool wants to see it); how many heads are done (a fault stops
 * at the head whose descriptor it hit).  In order the heads are not in
 * the batch yet: they are the table entries from vq->next_avail_head on,
 * each the head of a chain, up to the first chain of several descriptors,
 * which ends the batch (vhost_metamap_in_order_run()).  A descriptor is
 * two aligned 64-bit words (vhost_metamap_user_ok() wants the table
 * aligned, as virtio does), copied as they are.
 */
static __always_inline unsigned int
__vhost_metamap_user_descs(struct vhost_metamap *map, unsigned int n,
			   const bool in_order, const bool le)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;
	/*
	 * The batch through pointers, not its arrays: UBSAN's bounds check
	 * of an array index calls a handler, which may not run with user
	 * access enabled (objtool).  k < n <= VHOST_METAMAP_BATCH
	 * (vhost_metamap_batch_len()).
	 */
	__virtio16 *head = b->head;
	struct vring_desc *desc = b->desc;
	u16 *didx = b->didx;
	const __virtio16 next = __cpu_to_virtio16(le, VRING_DESC_F_NEXT);
	const struct vring_desc __user *table = vq->desc;
	unsigned int num = vq->num, first = vq->next_avail_head, k, i;
	const u64 __user *u;
	u64 *d;

	if (!access_ok(table, num * sizeof(*table)))
		return 0;
	if (can_do_masked_user_access())
		table = masked_user_access_begin(table);
	else if (!user_read_access_begin(table, num * sizeof(*table)))
		return 0;
	for (k = 0; k < n; k++) {
		if (in_order) {
			i = (first + k) & (num - 1);
			head[k] = __cpu_to_virtio16(le, i);
		} else {
			i = __virtio16_to_cpu(le, head[k]);
			if (unlikely(i >= num)) {
				/* vhost_get_vq_desc() says what is wrong */
				didx[k] = VHOST_METAMAP_NO_DESC;
				continue;
			}
		}
		u = (const u64 __user *)&table[array_index_nospec(i, num)];
		d = (u64 *)&desc[k];
		unsafe_get_user(d[0], &u[0], fault);
		unsafe_get_user(d[1], &u[1], fault);
		didx[k] = i;
		if (in_order && (desc[k].flags & next))
			n = k + 1;	/* the last this batch keeps */
	}
	user_read_access_end();
	return n;
fault:
	user_read_access_end();
	return k;
}

/*
 * One copy of the section each, so that the plain one tests no order, and
 * one per byte order, so that the loop converts no entry at run time.
 */
static noinline unsigned int vhost_metamap_user_descs(struct vhost_metamap *map,
						      unsigned int n)
{
	if (vhost_is_little_endian(map->vq))
		return __vhost_metamap_user_descs(map, n, false, true);
	return __vhost_metamap_user_descs(map, n, false, false);
}

static noinline unsigned int
vhost_metamap_user_descs_in_order(struct vhost_metamap *map, unsigned int n)
{
	if (vhost_is_little_endian(map->vq))
		return __vhost_metamap_user_descs(map, n, true, true);
	return __vhost_metamap_user_descs(map, n, true, false);
}

/*
 * The read-ahead through uaccess: the heads and descriptors
 * vhost_metamap_fill() reads through the map, in one copy for the heads
 * (two at the ring's wrap; none in order: they are counted) and one
 * uaccess section for their descriptors instead of one per access.  A fault ends it: what was read
 * before stays, and the access that faulted is made again by the
 * per-access path, which reports it.  The ring passed access_ok() when it
 * was set (vq_access_ok()) and every entry read lies inside it.  Returns
 * the number of heads read.
 */
static unsigned int vhost_metamap_fill_user(struct vhost_metamap *map, u16 idx)
{
	struct vhost_virtqueue *vq = map->vq;
	unsigned int n;

	might_fault();
	vhost_metamap_batch_start(map, idx);
	n = vhost_metamap_batch_len(vq, idx, vq->num);
	if (vhost_metamap_in_order(vq)) {
		n = vhost_metamap_user_descs_in_order(map, n);
	} else {
		n = vhost_metamap_user_heads(map, idx, n);
		if (n)
			n = vhost_metamap_user_descs(map, n);
	}
	map->batch.n = n;
	if (n)		/* one that faulted before reading anything is none */
		vhost_metamap_stat_inc(map, &map->stats.uaccess_fills);
	return n;
}

/*
 * Entry k of the batch, if it may be served: below vq->avail_idx, read
 * from the ring as it is now, and no IOTLB since.  A driver that took
 * entries back (lowered its avail index) loses those read ahead beyond it
 * for good, so that what it publishes there again is read again.
 */
static bool vhost_metamap_batched(struct vhost_metamap *map, u16 k)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;
	u16 published = vq->avail_idx - b->idx;

	if (published < b->n)
		b->n = published;
	return k < b->n && b->is_le == vq->is_le && b->num == vq->num &&
	       b->ring_desc == vq->desc && b->ring_avail == vq->avail &&
	       !vq->iotlb && !READ_ONCE(vq->dev->iotlb);
}

/*
 * A new read-ahead from avail index idx: through the map in mode map if it
 * can serve, through uaccess otherwise.  The miss that asks for it
 * empties the batch first, so that an entry read through the per-access
 * path is never followed by one read ahead before it, in this lap or
 * 65536 chains ago.  Returns the entries read, or -EIO if the map found
 * poison (nothing is read through uaccess then).
 */
static int vhost_metamap_refill(struct vhost_metamap *map, u16 idx)
{
	struct vhost_metamap_batch *b = &map->batch;

	b->n = 0;
	if (map->mode == VHOST_METAMAP_MODE_MAP &&
	    vhost_metamap_ring_fill(map, idx) < 0)
		return -EIO;
	if (!b->n && vhost_metamap_user_ok(map->vq))
		vhost_metamap_fill_user(map, idx);
	return b->n;
}

/*
 * The head at avail index idx: from the read-ahead, filled from idx on if
 * it does not hold it.
 */
int __vhost_metamap_get_head(struct vhost_metamap *map, u16 idx,
			     __virtio16 *head)
{
	struct vhost_metamap_batch *b = &map->batch;
	u16 k = idx - b->idx;
	int ret;

	if (!vhost_metamap_batched(map, k)) {
		ret = vhost_metamap_refill(map, idx);
		if (ret <= 0)
			return ret;
		k = 0;
	}
	*head = b->head[array_index_nospec(k, b->n)];
	return 1;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_get_head);

/*
 * Descriptor i, at uaddr in the table: from the read-ahead if it is the
 * first descriptor of the chain at vq->last_avail_idx (in order, the
 * read-ahead is filled for the chain that starts at i when it does not
 * hold it), through the map in mode map otherwise.
 */
int __vhost_metamap_get_desc(struct vhost_metamap *map, struct vring_desc *d,
			     unsigned int i,
			     const struct vring_desc __user *uaddr)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;
	u16 k = vq->last_avail_idx - b->idx;

	if (!vhost_metamap_batched(map, k) && vhost_metamap_in_order(vq) &&
	    i == (vq->next_avail_head & (vq->num - 1))) {
		if (vhost_metamap_refill(map, vq->last_avail_idx) < 0)
			return -EIO;
		k = 0;
	}
	if (vhost_metamap_batched(map, k)) {
		k = array_index_nospec(k, b->n);
		if (b->didx[k] == i) {
			*d = b->desc[k];
			vhost_metamap_stat_inc(map, &map->stats.batched);
			return 1;
		}
	}
	if (map->mode != VHOST_METAMAP_MODE_MAP)
		return 0;
	return vhost_metamap_ring_get_desc(map, d, uaddr);
}
EXPORT_SYMBOL_GPL(__vhost_metamap_get_desc);
