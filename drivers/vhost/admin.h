/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vhost admin plane: device names, tunables, statistics, sysfs and the
 * "vhost" generic netlink family.  See Documentation/networking/vhost-admin.rst.
 *
 * This header is included by vhost.h: the statistics and the per-device
 * admin state live in struct vhost_virtqueue and struct vhost_dev, and the
 * inline helpers below are what vhost.c and the device drivers call on their
 * hot paths.  The registry, sysfs and netlink code is the vhost_admin module.
 */
#ifndef _VHOST_ADMIN_H
#define _VHOST_ADMIN_H

#include <linux/atomic.h>
#include <linux/pid.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/u64_stats_sync.h>

struct device;
struct kobject;
struct vhost_dev;
struct vhost_virtqueue;

/**
 * struct vhost_vq_stats - counters of one virtqueue
 * @packets: packets moved through the queue (RX: into guest buffers; TX:
 *	out of guest buffers to the backend)
 * @bytes: their frame bytes, virtio-net header excluded
 * @calls: guest notifications signalled
 * @busypoll_loops: busy-poll loops run by this queue's handler
 * @busypoll_ns: time spent in them
 * @busypoll_found: loops that ended because work arrived
 * @zcopy_sent: TX packets sent zero-copy
 * @zcopy_copied: TX packets copied because shorter than zcopy_min_len
 * @zcopy_hol_stalls: TX packets copied because too many zero-copy buffers
 *	were pending (head-of-line blocking) or zero-copy backed off
 * @zcopy_pending: zero-copy buffers not completed yet (a gauge)
 * @syncp: for 32-bit readers
 * @kicks: guest kicks seen by the kick eventfd's wakeup
 *
 * Every field but @kicks has a single writer: the holder of the queue's
 * vq->mutex (u64_stats rules).  @kicks is written by the eventfd wakeup,
 * which runs in the kicker's context, so it is atomic.  Readers never lock.
 */
struct vhost_vq_stats {
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t calls;
	u64_stats_t busypoll_loops;
	u64_stats_t busypoll_ns;
	u64_stats_t busypoll_found;
	u64_stats_t zcopy_sent;
	u64_stats_t zcopy_copied;
	u64_stats_t zcopy_hol_stalls;
	u64_stats_t zcopy_pending;
	struct u64_stats_sync syncp;
	atomic64_t kicks;
};

/**
 * struct vhost_tunables - what an administrator may set per device
 * @busypoll_us: every queue busy-polls for at least this long (us)
 * @zcopy_min_len: TX packets shorter than this are copied
 * @zerocopy: TX zero-copy on
 * @metamap: metadata direct map on
 *
 * Written by the admin plane under vhost_admin_lock; the datapath reads each
 * field once per batch with READ_ONCE() (under its vq->mutex), so a change
 * takes effect at the next batch.  The direct map switch itself is applied
 * to every queue under its vq->mutex.
 */
struct vhost_tunables {
	u32 busypoll_us;
	u32 zcopy_min_len;
	bool zerocopy;
	bool metamap;
};

/**
 * struct vhost_admin_ops - what a device type tells the admin plane
 * @type: VHOST_DEV_TYPE_* of the uapi
 * @queue_type: VHOST_QUEUE_TYPE_* of queue @index
 * @backend: interface index of the backend, its name copied to @ifname
 *	(IFNAMSIZ bytes); 0 when there is none.  May sleep.
 */
struct vhost_admin_ops {
	u32 type;
	u32 (*queue_type)(unsigned int index);
	int (*backend)(struct vhost_dev *dev, char *ifname);
};

struct vhost_admin_queue;

/**
 * struct vhost_admin - admin state of a vhost device, in struct vhost_dev
 * @ops: device type; NULL while the device is not registered
 * @tun: tunables, see struct vhost_tunables
 * @id: device id, the N of the name vhostN
 * @name: vhostN
 * @cdev: class device /sys/class/vhost/vhostN
 * @queues_kobj: its queues/ directory
 * @queues: one kobject per virtqueue, queues/vqN
 * @lock: protects @owner
 * @owner: thread group of the process that set the owner, or NULL
 *
 * @ops, @id, @name, @cdev and @queues are set before the device is published
 * in the registry and cleared after it is removed from it.
 */
struct vhost_admin {
	const struct vhost_admin_ops *ops;
	struct vhost_tunables tun;
	u32 id;
	char name[16];
	struct device *cdev;
	struct kobject *queues_kobj;
	struct vhost_admin_queue **queues;
	spinlock_t lock;	/* protects owner */
	struct pid *owner;
};

static inline void vhost_vq_stats_init(struct vhost_vq_stats *s)
{
	memset(s, 0, sizeof(*s));
	u64_stats_init(&s->syncp);
}

/* The vq->mutex holder counts a packet of len frame bytes. */
static inline void vhost_vq_stats_packet(struct vhost_vq_stats *s, u64 len)
{
	u64_stats_update_begin(&s->syncp);
	u64_stats_inc(&s->packets);
	u64_stats_add(&s->bytes, len);
	u64_stats_update_end(&s->syncp);
}

/* The vq->mutex holder bumps one counter. */
static inline void vhost_vq_stats_inc(struct vhost_vq_stats *s,
				      u64_stats_t *counter)
{
	u64_stats_update_begin(&s->syncp);
	u64_stats_inc(counter);
	u64_stats_update_end(&s->syncp);
}

/* The vq->mutex holder counts one busy-poll loop of ns nanoseconds. */
static inline void vhost_vq_stats_busypoll(struct vhost_vq_stats *s, u64 ns,
					   bool found)
{
	u64_stats_update_begin(&s->syncp);
	u64_stats_inc(&s->busypoll_loops);
	u64_stats_add(&s->busypoll_ns, ns);
	if (found)
		u64_stats_inc(&s->busypoll_found);
	u64_stats_update_end(&s->syncp);
}

/* The vq->mutex holder sets the pending zero-copy gauge. */
static inline void vhost_vq_stats_zcopy_pending(struct vhost_vq_stats *s,
						u64 pending)
{
	u64_stats_update_begin(&s->syncp);
	u64_stats_set(&s->zcopy_pending, pending);
	u64_stats_update_end(&s->syncp);
}

static inline void vhost_admin_dev_init(struct vhost_admin *a)
{
	memset(a, 0, sizeof(*a));
	spin_lock_init(&a->lock);
}

/* Record the owner's thread group (NULL: no owner). */
static inline void vhost_admin_set_owner(struct vhost_admin *a,
					 struct pid *tgid)
{
	struct pid *old;

	spin_lock(&a->lock);
	old = a->owner;
	a->owner = get_pid(tgid);
	spin_unlock(&a->lock);
	put_pid(old);
}

int vhost_admin_register(struct vhost_dev *dev,
			 const struct vhost_admin_ops *ops, bool zerocopy);
void vhost_admin_unregister(struct vhost_dev *dev);
void vhost_admin_show_fdinfo(struct seq_file *m, struct vhost_dev *dev);

#endif /* _VHOST_ADMIN_H */
