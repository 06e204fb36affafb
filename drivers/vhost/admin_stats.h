/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writers of a virtqueue's counters (struct vhost_vq_stats in admin.h), for
 * the device drivers' datapaths.  Each one is the single u64_stats writer of
 * the queue: the holder of its vq->mutex.
 */
#ifndef _VHOST_ADMIN_STATS_H
#define _VHOST_ADMIN_STATS_H

#include <linux/lockdep.h>
#include <linux/u64_stats_sync.h>

#include "vhost.h"

/* Count n packets of len frame bytes in all. */
static inline void vhost_vq_stats_packets(struct vhost_virtqueue *vq, u64 n,
					  u64 len)
{
	struct vhost_vq_stats *s = vq->stats;

	lockdep_assert_held(&vq->mutex);
	u64_stats_update_begin(&s->syncp);
	u64_stats_add(&s->packets, n);
	u64_stats_add(&s->bytes, len);
	u64_stats_update_end(&s->syncp);
}

/* Count a packet of len frame bytes. */
static inline void vhost_vq_stats_packet(struct vhost_virtqueue *vq, u64 len)
{
	vhost_vq_stats_packets(vq, 1, len);
}

/* Add n to counter, one of *vq->stats. */
static inline void vhost_vq_stats_add(struct vhost_virtqueue *vq,
				      u64_stats_t *counter, u64 n)
{
	lockdep_assert_held(&vq->mutex);
	u64_stats_update_begin(&vq->stats->syncp);
	u64_stats_add(counter, n);
	u64_stats_update_end(&vq->stats->syncp);
}

/* Count one busy-poll loop of ns nanoseconds; found: work arrived. */
static inline void vhost_vq_stats_busypoll(struct vhost_virtqueue *vq, u64 ns,
					   bool found)
{
	struct vhost_vq_stats *s = vq->stats;

	lockdep_assert_held(&vq->mutex);
	u64_stats_update_begin(&s->syncp);
	u64_stats_inc(&s->busypoll_loops);
	u64_stats_add(&s->busypoll_ns, ns);
	if (found)
		u64_stats_inc(&s->busypoll_found);
	u64_stats_update_end(&s->syncp);
}

/* Set the pending zero-copy gauge. */
static inline void vhost_vq_stats_zcopy_pending(struct vhost_virtqueue *vq,
						u64 pending)
{
	lockdep_assert_held(&vq->mutex);
	u64_stats_update_begin(&vq->stats->syncp);
	u64_stats_set(&vq->stats->zcopy_pending, pending);
	u64_stats_update_end(&vq->stats->syncp);
}

#endif /* _VHOST_ADMIN_STATS_H */
