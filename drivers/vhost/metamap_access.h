/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The metadata accessors of the vhost core (vhost.c), inline: the queue's
 * mode is checked here, so that a queue in mode off, and every queue of a
 * device that never sets a mode (its vq->metamap is NULL), pays a load and
 * a branch per access instead of a call into vhost_metamap.  Included by vhost.c only, after
 * vhost.h (struct vhost_virtqueue).  See metamap.h.
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
 * Descriptor i of the table, at uaddr: the read-ahead holds the first
 * descriptor of the chain at vq->last_avail_idx, and in mode map the map
 * serves any other.
 */
static inline int vhost_metamap_get_desc(struct vhost_virtqueue *vq,
					 struct vring_desc *d, unsigned int i,
					 const struct vring_desc __user *uaddr)
{
	struct vhost_metamap *map = vhost_metamap_in(vq, VHOST_METAMAP_MODE_BATCH);

	return map ? __vhost_metamap_get_desc(map, d, i, uaddr) : 0;
}

static inline int vhost_metamap_get_head(struct vhost_virtqueue *vq, u16 idx,
					 __virtio16 *head)
{
	struct vhost_metamap *map = vhost_metamap_in(vq, VHOST_METAMAP_MODE_BATCH);

	return map ? __vhost_metamap_get_head(map, idx, head) : 0;
}

static inline int vhost_metamap_put_used(struct vhost_virtqueue *vq,
					 const struct vring_used_elem *heads,
					 struct vring_used_elem __user *uaddr,
					 unsigned int count)
{
	struct vhost_metamap *map = vhost_metamap_in(vq, VHOST_METAMAP_MODE_MAP);

	return map ? __vhost_metamap_put_used(map, heads, uaddr, count) : 0;
}

#else

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

#endif /* CONFIG_VHOST_METAMAP */
#endif /* _VHOST_METAMAP_ACCESS_H */
