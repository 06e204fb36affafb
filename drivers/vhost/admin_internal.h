/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared by the vhost_admin module's files (admin.c: registry, tunables,
 * statistics, sysfs; vhost_netlink.c: the generic netlink family).
 */
#ifndef _VHOST_ADMIN_INTERNAL_H
#define _VHOST_ADMIN_INTERNAL_H

#include <linux/netlink.h>
#include <uapi/linux/vhost_netlink.h>

#include "vhost.h"

/*
 * The registry: each network namespace has an xarray of its devices by id
 * (struct vhost_admin_net in admin.c).  A lookup takes a reference on the
 * device (struct vhost_admin.refs) under that xarray's spinlock, so it sees
 * and locks only the requester's namespace; the device's release removes it
 * from the registry and waits for the references to go.  No admin lock is
 * global: a handler blocked on one device (its mutexes, which a stalled
 * worker may hold) holds up that device's release only.
 */
struct vhost_dev *vhost_admin_get(struct net *net, u32 id);
struct vhost_dev *vhost_admin_get_serial(struct net *net, u32 id, u64 serial);
struct vhost_dev *vhost_admin_get_name(struct net *net, const char *name);
struct vhost_dev *vhost_admin_get_next(struct net *net, unsigned long *id);
void vhost_admin_put(struct vhost_dev *dev);

/* Counters of a queue or a device, indexed by VHOST_A_STATS_*. */
struct vhost_admin_stats {
	u64 val[VHOST_A_STATS_MAX + 1];
	DECLARE_BITMAP(has, VHOST_A_STATS_MAX + 1);
};

/* The first VHOST_A_STATS_* attribute that is a counter. */
#define VHOST_ADMIN_FIRST_COUNTER VHOST_A_STATS_RX_PACKETS

void vhost_admin_queue_stats(struct vhost_dev *dev, unsigned int index,
			     struct vhost_admin_stats *st);
void vhost_admin_dev_stats(struct vhost_dev *dev, struct vhost_admin_stats *st);
u32 vhost_admin_tunable(struct vhost_dev *dev, int attr);
u32 vhost_admin_owner_pid(struct vhost_dev *dev);
bool vhost_admin_owned_by(struct vhost_dev *dev, struct pid *pid);
bool vhost_admin_label(struct vhost_dev *dev, char *buf);
bool vhost_admin_label_is(struct vhost_dev *dev, const char *s);
struct vhost_admin_label *vhost_admin_label_alloc(const char *s);
bool vhost_admin_set_label(struct vhost_dev *dev, struct vhost_admin_label *l);
bool vhost_admin_feeds(struct vhost_dev *dev, int ifindex);
u32 vhost_admin_queue_worker(struct vhost_dev *dev, unsigned int index);
int vhost_admin_backend(struct vhost_dev *dev, int *nsid, char *ifname);
u32 vhost_admin_queue_busypoll(struct vhost_dev *dev, unsigned int index);
u32 vhost_admin_queue_busypoll_source(struct vhost_dev *dev,
				      unsigned int index);
bool vhost_admin_label_valid(const char *s);
int vhost_admin_prepare_tunables(struct vhost_dev *dev,
				 const struct vhost_tunables *tun,
				 struct netlink_ext_ack *extack);

/**
 * struct vhost_admin_need - what a tenant's dev-set needs of the policy
 * @grants: VHOST_TUNABLE_* flags of what it sets
 * @busypoll_us: the admin-busypoll-us it sets, if @grants has it
 */
struct vhost_admin_need {
	u32 grants;
	u32 busypoll_us;
};

int vhost_admin_set(struct vhost_dev *dev, const struct vhost_tunables *tun,
		    struct vhost_admin_label **label,
		    const struct vhost_admin_need *need, bool *changed,
		    struct netlink_ext_ack *extack);

/**
 * struct vhost_admin_policy - what the host lets a namespace's tenants change
 * @grants: VHOST_TUNABLE_* flags of the tunables they may set
 * @busypoll_max: the largest admin-busypoll-us they may set
 */
struct vhost_admin_policy {
	u32 grants;
	u32 busypoll_max;
};

/* A tunable (or the label): its VHOST_A_DEV_* attribute and its grant. */
struct vhost_admin_tunable {
	int attr;
	u32 grant;
};

#define VHOST_ADMIN_NTUNABLES 5
extern const struct vhost_admin_tunable
	vhost_admin_tunables[VHOST_ADMIN_NTUNABLES];

u32 vhost_tunables_get(const struct vhost_tunables *tun, int attr);
void vhost_tunables_set(struct vhost_tunables *tun, int attr, u32 val);

/**
 * struct vhost_admin_defaults - what a device of a namespace gets with its
 *	owner
 * @set: bit VHOST_A_DEV_* of each tunable given a default
 * @tun: the defaults of those
 */
struct vhost_admin_defaults {
	u32 set;
	struct vhost_tunables tun;
};

void vhost_admin_get_defaults(struct net *net, struct vhost_admin_defaults *d);
void vhost_admin_set_defaults(struct net *net,
			      const struct vhost_admin_defaults *d, u32 unset);

bool vhost_admin_tenant(struct net *net);
void vhost_admin_get_policy(struct net *net, struct vhost_admin_policy *pol);
void vhost_admin_set_policy(struct net *net, const u32 *grants,
			    const u32 *busypoll_max);

/* Netlink notification to the device's namespace. */
void vhost_nl_dev_notify(struct vhost_dev *dev, u32 cmd);
int vhost_nl_init(void);
void vhost_nl_exit(void);

#endif /* _VHOST_ADMIN_INTERNAL_H */
