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
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/refcount.h>
#include <linux/seq_file.h>
#include <linux/spinlock.h>
#include <linux/types.h>
#include <linux/u64_stats_sync.h>
#include <linux/uidgid.h>
#include <linux/workqueue.h>
#include <net/net_trackers.h>

struct device;
struct kobject;
struct net;
struct net_device;
struct vhost_dev;
struct vhost_virtqueue;

/**
 * struct vhost_vq_stats - counters of one virtqueue
 * @packets: packets moved through the queue (RX: into guest buffers; TX:
 *	out of guest buffers, accepted by the backend)
 * @bytes: their frame bytes, virtio-net header excluded
 * @tx_errors: TX packets the backend refused, or vhost-net dropped for a
 *	header the backend would refuse (returned to the guest unsent)
 * @busypoll_loops: busy-poll loops run by this queue's handler
 * @busypoll_ns: time spent in them
 * @busypoll_found: loops that ended because work arrived
 * @zcopy_sent: TX packets whose zero-copy transmission completed without
 *	their pages being copied
 * @zcopy_fallback: TX packets sent zero-copy whose pages were copied after
 *	all (the completion said so)
 * @zcopy_copied: TX packets copied with zero-copy on, being shorter than
 *	zcopy_min_len
 * @zcopy_hol_stalls: TX packets copied with zero-copy on because too many
 *	zero-copy buffers were pending (head-of-line blocking)
 * @zcopy_backoff: TX packets copied with zero-copy on because it backed off
 *	after failed completions
 * @zcopy_in_order: TX packets copied with zero-copy on because the queue is
 *	in order (VIRTIO_F_IN_ORDER), where a held zero-copy buffer would
 *	hold up every later one
 * @zcopy_pending: zero-copy buffers sent and not completed yet (a gauge)
 * @calls: guest notifications signalled
 * @used_entries: used ring entries written
 * @syncp: for 32-bit readers
 * @kick: guest kicks seen by the kick eventfd's wakeup (@kick.kicks), in a
 *	cache line of their own, written in the kicker's context
 *
 * Each counter has one writer at a time: everything but @kick by the
 * holder of the queue's vq->mutex (u64_stats rules; the writers in
 * admin_stats.h and vhost.c assert it), @kick by vhost_poll_wakeup() under
 * the kick eventfd's waitqueue lock.  None is atomic.  Readers never lock.
 * Embedded by the device drivers that register with the admin plane, in
 * their own per-queue state (vhost-net's struct vhost_net_virtqueue), and
 * pointed at by vq->stats; other queues have none.
 */
struct vhost_vq_stats {
	u64_stats_t packets;
	u64_stats_t bytes;
	u64_stats_t tx_errors;
	u64_stats_t busypoll_loops;
	u64_stats_t busypoll_ns;
	u64_stats_t busypoll_found;
	u64_stats_t zcopy_sent;
	u64_stats_t zcopy_fallback;
	u64_stats_t zcopy_copied;
	u64_stats_t zcopy_hol_stalls;
	u64_stats_t zcopy_backoff;
	u64_stats_t zcopy_in_order;
	u64_stats_t zcopy_pending;
	u64_stats_t calls;
	u64_stats_t used_entries;
	struct u64_stats_sync syncp;
	struct {
		u64_stats_t kicks;
		struct u64_stats_sync syncp;
	} kick ____cacheline_aligned_in_smp;
};

/* Count a guest kick; the kick eventfd's waitqueue lock held. */
static inline void vhost_vq_stats_kick(struct vhost_vq_stats *s)
{
	u64_stats_update_begin(&s->kick.syncp);
	u64_stats_inc(&s->kick.kicks);
	u64_stats_update_end(&s->kick.syncp);
}

/**
 * struct vhost_tunables - what an administrator may set per device
 * @busypoll_us: every queue busy-polls for at least this long (us)
 * @zcopy_min_len: TX packets shorter than this are copied
 * @zerocopy: TX zero-copy on
 * @metamap: how the queues access ring metadata, enum vhost_metamap_mode
 *
 * Written by the admin plane under the device's admin mutex; the datapath
 * reads each field once per batch with READ_ONCE() (under its vq->mutex), so
 * a change takes effect at the next batch.  The metadata mode itself is
 * applied to every queue under its vq->mutex.
 */
struct vhost_tunables {
	u32 busypoll_us;
	u32 zcopy_min_len;
	bool zerocopy;
	u8 metamap;
};

/**
 * struct vhost_admin_ops - what a device type tells the admin plane
 * @type: VHOST_DEV_TYPE_* of the uapi
 * @queue_type: VHOST_QUEUE_TYPE_* of queue @index
 * @zerocopy_prepare: allocate what zero-copy needs before the zerocopy
 *	tunable is switched on (NULL: nothing to allocate).  Devices allocate
 *	nothing for zero-copy while it is off.  Returns 0, -ENOMEM, or -EINTR
 *	when a fatal signal interrupted it; what it allocated stays with the
 *	device (it is freed with the device's owner) whether or not the
 *	tunable is then switched on.  Context: dev->mutex and the admin
 *	mutex held; sleeps killably.
 * @zerocopy_capable: whether the device's backend can send zero-copy
 *	(true while it has none; NULL: always).  Context: dev->mutex held.
 */
struct vhost_admin_ops {
	u32 type;
	u32 (*queue_type)(unsigned int index);
	int (*zerocopy_prepare)(struct vhost_dev *dev);
	bool (*zerocopy_capable)(struct vhost_dev *dev);
};

struct vhost_admin_queue;

/**
 * struct vhost_admin_label - a device's label, replaced whole
 * @rcu: freed after a grace period: readers do not lock
 * @s: the label, NUL-terminated, not empty
 */
struct vhost_admin_label {
	struct rcu_head rcu;
	char s[];
};

/**
 * struct vhost_admin - admin state of a vhost device, in struct vhost_dev
 * @ops: device type; NULL while the device is not registered
 * @tun: tunables, see struct vhost_tunables
 * @id: device id, the N of the name vhostN
 * @serial: tells the device from a later one of the same @id: a number no
 *	other device of this boot had, set at registration
 * @name: vhostN
 * @cdev: class device /sys/class/vhost/vhostN
 * @queues_kobj: its queues/ directory
 * @queues: one kobject per virtqueue, queues/vqN
 * @refs: references of admin operations (lookups), plus one of the
 *	registry while the device is in it; vhost_admin_unregister() waits
 *	for them to go, so an operation holds one only while it works on
 *	this device (never while it waits on another's locks)
 * @mutex: serialises changes of @tun, @owner, the backend and @label
 * @lock: protects @owner, @owner_uid and each queue's worker (struct
 *	vhost_admin_queue)
 * @owner: thread group of the owner, or NULL
 * @label: the label an administrator gave the device, or NULL; written
 *	under @mutex, read under RCU
 * @net: network namespace the device belongs to, that of the process that
 *	opened it, for the device's whole life (reference held); its id is
 *	allocated there
 * @backend: the interface the device feeds, followed into whatever
 *	namespace it moves to, NULL when there is none or it was unregistered;
 *	a reference (@backend_tracker), written under admin.c's
 *	vhost_backends_mutex, read under RCU
 * @backend_tracker: the reference's tracker
 * @backend_node: in admin.c's table of backends while @backend is set
 * @backend_work: tells that @backend moved, was renamed or went
 * @uid: effective uid of the process that opened the device, whose uevent
 *	budget its uevents use
 * @owner_uid: effective uid of the owner when it became the owner
 * @busypoll_max: the host's bound on every queue's busy-poll time, whoever
 *	set it (U32_MAX: none); written under the namespace's policy lock,
 *	read by the datapath with READ_ONCE()
 * @uevent_work: sends the uevent that waited for the budget
 * @uevent_pending: a uevent is waiting for the budget (under @mutex)
 * @announced: the ADD uevent went out (under @mutex)
 *
 * A device's uevents tell what changed, not each change: when its opener
 * is over budget (vhost_admin_uevent()), they wait and are sent as one,
 * with the properties of the moment; a device closed before its ADD went
 * out sends none.
 *
 * @ops, @id, @name, @net, @cdev and @queues are set before the device is
 * published in the registry and cleared after it has left it.  Lock order:
 * vhost_dev.mutex -> @mutex -> vq->mutex (vhost-net reports owner and
 * backend changes with vhost_dev.mutex held; dev-set of the map or of
 * zero-copy takes all three, each killably); @lock is innermost and covers
 * loads and stores only.
 */
struct vhost_admin {
	const struct vhost_admin_ops *ops;
	struct vhost_tunables tun;
	u32 id;
	u64 serial;
	char name[16];
	struct device *cdev;
	struct kobject *queues_kobj;
	struct vhost_admin_queue **queues;
	refcount_t refs;
	struct mutex mutex;	/* serialises tun, owner, backend changes */
	spinlock_t lock;	/* protects owner, owner_uid, workers */
	struct pid *owner;
	struct vhost_admin_label __rcu *label;
	struct net *net;
	struct net_device __rcu *backend;
	netdevice_tracker backend_tracker;
	struct hlist_node backend_node;
	struct work_struct backend_work;
	bool uevent_pending;
	bool announced;
	kuid_t uid;
	kuid_t owner_uid;
	u32 busypoll_max;
	struct delayed_work uevent_work;
};

static inline void vhost_vq_stats_init(struct vhost_vq_stats *s)
{
	memset(s, 0, sizeof(*s));
	u64_stats_init(&s->syncp);
	u64_stats_init(&s->kick.syncp);
}

static inline void vhost_admin_dev_init(struct vhost_admin *a)
{
	memset(a, 0, sizeof(*a));
	mutex_init(&a->mutex);
	spin_lock_init(&a->lock);
	a->busypoll_max = U32_MAX;
}

int vhost_admin_register(struct vhost_dev *dev,
			 const struct vhost_admin_ops *ops, bool zerocopy);
void vhost_admin_unregister(struct vhost_dev *dev);
void vhost_admin_set_owner(struct vhost_dev *dev, bool owned);
void vhost_admin_set_backend(struct vhost_dev *dev, int ifindex,
			     struct net *net);
void vhost_admin_changed(struct vhost_dev *dev);
u32 vhost_admin_busypoll(struct vhost_dev *dev, struct vhost_virtqueue *vq);
void vhost_admin_show_fdinfo(struct seq_file *m, struct vhost_dev *dev);

#endif /* _VHOST_ADMIN_H */
