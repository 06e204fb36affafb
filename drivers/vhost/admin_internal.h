/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the vhost_admin module's files (admin.c: registry, tunables,
 * statistics, sysfs; vhost_netlink.c: the generic netlink family).
 */
#ifndef _VHOST_ADMIN_INTERNAL_H
#define _VHOST_ADMIN_INTERNAL_H

#include <linux/mutex.h>
#include <linux/netlink.h>
#include <uapi/linux/vhost_netlink.h>

#include "vhost.h"

/*
 * vhost_admin_lock protects the registry (which devices exist) and
 * serialises every admin operation: a netlink handler holds it from the
 * lookup of a device to its last access, and a device leaves the registry
 * under it before it is torn down, so a handler never sees a dying device.
 * Lock order: vhost_admin_lock -> vq->mutex.  It is never taken by sysfs
 * callbacks (device removal waits for those with the lock dropped) nor on
 * the datapath.
 */
extern struct mutex vhost_admin_lock;

/* Statistics of a queue or a device, indexed by VHOST_A_STATS_*. */
struct vhost_admin_stats {
	u64 val[VHOST_A_STATS_MAX + 1];
	DECLARE_BITMAP(has, VHOST_A_STATS_MAX + 1);
};

struct vhost_dev *vhost_admin_find(u32 id);
struct vhost_dev *vhost_admin_find_name(const char *name);
struct vhost_dev *vhost_admin_next(unsigned long *id);

void vhost_admin_queue_stats(struct vhost_dev *dev, unsigned int index,
			     struct vhost_admin_stats *st);
void vhost_admin_dev_stats(struct vhost_dev *dev, struct vhost_admin_stats *st);
u32 vhost_admin_owner_pid(struct vhost_dev *dev);
u32 vhost_admin_tunable(struct vhost_dev *dev, int attr);
int vhost_admin_set_tunables(struct vhost_dev *dev,
			     const struct vhost_tunables *tun,
			     struct netlink_ext_ack *extack);

/* Netlink notifications; called with vhost_admin_lock held. */
void vhost_nl_dev_notify(struct vhost_dev *dev, u32 cmd);
int vhost_nl_init(void);
void vhost_nl_exit(void);

#endif /* _VHOST_ADMIN_INTERNAL_H */
