/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of the vhost_metamap module share and nothing else sees:
 *
 * - metamap.c: each queue's state (struct vhost_metamap), its mode, its
 *   counters, the module, and what both maps need (the safe page, the
 *   poison checks, the callbacks' timing, fault injection);
 * - readahead.c: the read-ahead of heads and descriptors through uaccess,
 *   and the accessors vhost.c calls through metamap_access.h;
 * - ringmap.c: the ring map, the descriptor table, avail and used rings
 *   through the kernel addresses of their pages;
 * - payload.c: the payload map, the buffers through the kernel addresses
 *   of the guest memory's pages.
 *
 * Locking is described where the lock is: struct vhost_metamap, metamap.h.
 */
#ifndef _VHOST_METAMAP_INTERNAL_H
#define _VHOST_METAMAP_INTERNAL_H

#include <linux/jiffies.h>
#include <linux/mmu_notifier.h>
#include <linux/u64_stats_sync.h>

#include "vhost.h"

/* A build that lost the race this many times in a row gives up until later. */
#define VHOST_METAMAP_BUILD_TRIES	8
#define VHOST_METAMAP_RETRY_DELAY	msecs_to_jiffies(10)
/* The split ring's descriptor table alignment (virtio 1.x, 2.7.5). */
#define VHOST_METAMAP_DESC_ALIGN	16

/* metamap.c */
extern void *vhost_metamap_safe;
bool vhost_metamap_dcache_aliasing(struct vhost_metamap *map);
void vhost_metamap_callback_took(u64 t0);
void vhost_metamap_engage(struct vhost_virtqueue *vq,
			  const struct vhost_metamap *map);
bool vhost_metamap_inject_mc(void);
bool vhost_metamap_inject_payload_mc(void);
bool vhost_metamap_poison_gone(struct vhost_metamap *map, unsigned long uaddr,
			       unsigned long pfn, unsigned long *check_at);

/* ringmap.c */
void vhost_metamap_ring_release(struct vhost_metamap *map);
void vhost_metamap_arm(struct vhost_virtqueue *vq);
bool vhost_metamap_current(const struct vhost_metamap *map);
int vhost_metamap_ring_fill(struct vhost_metamap *map, u16 idx);
int vhost_metamap_ring_get_desc(struct vhost_metamap *map,
				struct vring_desc *d,
				const struct vring_desc __user *uaddr);

/* payload.c */
void vhost_metamap_payload_arm(struct vhost_virtqueue *vq);
void vhost_metamap_payload_release(struct vhost_metamap *map);

/*
 * Where the kaddr[] of an invalid map point, and what a mispredicted
 * lookup of the payload map reads: see vhost_metamap_safe in metamap.c.
 */
static inline void *vhost_metamap_safe_page(void)
{
	return vhost_metamap_safe;
}

/*
 * Add n to counter, one of map->stats: the u64_stats writer, the vq->mutex
 * holder; lockless readers see each counter whole.
 */
static inline void vhost_metamap_stat_add(struct vhost_metamap *map,
					  u64_stats_t *counter, unsigned int n)
{
	lockdep_assert_held(&map->vq->mutex);
	u64_stats_update_begin(&map->stats.syncp);
	u64_stats_add(counter, n);
	u64_stats_update_end(&map->stats.syncp);
}

static inline void vhost_metamap_stat_inc(struct vhost_metamap *map,
					  u64_stats_t *counter)
{
	vhost_metamap_stat_add(map, counter, 1);
}

/*
 * mmu_interval_read_begin() without its wait: false while an invalidation
 * of the range is in progress, which may last as long as the owner's
 * threads keep invalidating it, and the worker holds vq->mutex.  The
 * caller then copies through uaccess and tries again later.  On a kernel
 * without mmu_interval_read_try_begin() (the DKMS package on a
 * distribution's kernel: its mm/ is not ours to patch), the wait stays.
 */
static inline bool vhost_metamap_read_begin(struct mmu_interval_notifier *mni,
					    unsigned long *seq)
{
#ifdef VHOST_METAMAP_STOCK_MM
	*seq = mmu_interval_read_begin(mni);
	return true;
#else
	return mmu_interval_read_try_begin(mni, seq);
#endif
}

/* Remember which ring a new read-ahead from avail index idx comes from. */
static inline void vhost_metamap_batch_start(struct vhost_metamap *map, u16 idx)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;

	b->n = 0;
	b->idx = idx;
	b->is_le = vq->is_le;
	b->num = vq->num;
	b->ring_desc = vq->desc;
	b->ring_avail = vq->avail;
}

/*
 * How many entries a read-ahead from avail index idx reads: those the
 * driver has published (below vq->avail_idx, which was read with the
 * barrier that orders these reads after it), at most VHOST_METAMAP_BATCH,
 * never more than the ring holds.
 */
static inline unsigned int vhost_metamap_batch_len(struct vhost_virtqueue *vq,
						   u16 idx, unsigned int num)
{
	return min3((unsigned int)(u16)(vq->avail_idx - idx),
		    (unsigned int)VHOST_METAMAP_BATCH, num);
}

/*
 * Whether the read-ahead counts the heads instead of reading them: in
 * order (VIRTIO_F_IN_ORDER) the driver makes descriptors available in ring
 * order, so the chains from vq->last_avail_idx on start at
 * vq->next_avail_head and follow each other in the table, once a head read
 * from the avail ring has said where they are.
 */
static inline bool vhost_metamap_in_order(struct vhost_virtqueue *vq)
{
	return vq->next_avail_head_known &&
	       vhost_has_feature(vq, VIRTIO_F_IN_ORDER);
}

#endif /* _VHOST_METAMAP_INTERNAL_H */
