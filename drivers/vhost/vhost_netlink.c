// SPDX-License-Identifier: GPL-2.0
/*
 * The "vhost" generic netlink family: dev-get, dev-set, queue-get,
 * stats-get and the monitor notifications.  Policies and the ops table are
 * generated from Documentation/netlink/specs/vhost.yaml into vhost_nl.[ch].
 *
 * Every request sees only the devices of its own network namespace
 * (genl_info_net()), through references taken by the registry's lookups
 * (admin_internal.h); no handler holds a lock across devices.  Changing a
 * device and reading its owner and backend need CAP_NET_ADMIN over the
 * user namespace that owns that network namespace (dev-set's is declared
 * in the spec); the monitor group needs it to join (the notifications carry
 * the backend); the watch group, for monitoring without it, gets them
 * without the backend.  Unless that is CAP_NET_ADMIN in the initial user
 * namespace, dev-set changes only what the namespace's policy grants, which
 * only the host's administrators set (policy-set).  The permissions table
 * is in vhost-admin.rst.
 */
#include <linux/if.h>
#include <linux/log2.h>
#include <linux/netdevice.h>
#include <linux/pid.h>
#include <net/genetlink.h>
#include <net/netlink.h>
#include <net/sock.h>
#include <uapi/linux/net_namespace.h>

#include "admin_internal.h"
#include "vhost_nl.h"

static bool vhost_nl_capable(const struct sk_buff *skb, struct net *net)
{
	return netlink_ns_capable(skb, net->user_ns, CAP_NET_ADMIN);
}

static int vhost_nl_put_backend(struct sk_buff *skb, struct vhost_dev *dev)
{
	char ifname[IFNAMSIZ];
	int ifindex, nsid;

	ifindex = vhost_admin_backend(dev, &nsid, ifname);
	if (!ifindex)
		return 0;
	if (nla_put_u32(skb, VHOST_A_DEV_BACKEND_IFINDEX, ifindex) ||
	    (ifname[0] &&
	     nla_put_string(skb, VHOST_A_DEV_BACKEND_IFNAME, ifname)) ||
	    (nsid != NETNSA_NSID_NOT_ASSIGNED &&
	     nla_put_s32(skb, VHOST_A_DEV_BACKEND_NETNSID, nsid)))
		return -EMSGSIZE;
	return 0;
}

static int vhost_nl_put_label(struct sk_buff *skb, struct vhost_dev *dev)
{
	char label[VHOST_LABEL_LEN_MAX + 1];

	if (!vhost_admin_label(dev, label))
		return 0;
	return nla_put_string(skb, VHOST_A_DEV_LABEL, label);
}

/*
 * One device: identity and configuration.  owner: include the owner's pid
 * (requesters with the capability, never notifications); backend: include
 * the backend (the same, and notifications).
 */
static int vhost_nl_dev_fill(struct sk_buff *skb, struct vhost_dev *dev,
			     const struct genl_info *info, bool owner,
			     bool backend)
{
	void *hdr;

	hdr = genlmsg_iput(skb, info);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, VHOST_A_DEV_ID, dev->admin.id) ||
	    nla_put_string(skb, VHOST_A_DEV_NAME, dev->admin.name) ||
	    nla_put_u32(skb, VHOST_A_DEV_TYPE, dev->admin.ops->type) ||
	    nla_put_uint(skb, VHOST_A_DEV_FEATURES,
			 READ_ONCE(dev->vqs[0]->acked_features)) ||
	    nla_put_u32(skb, VHOST_A_DEV_NUM_QUEUES, dev->nvqs) ||
	    nla_put_u32(skb, VHOST_A_DEV_ADMIN_BUSYPOLL_US,
			vhost_admin_tunable(dev, VHOST_A_DEV_ADMIN_BUSYPOLL_US)) ||
	    nla_put_u32(skb, VHOST_A_DEV_ZEROCOPY,
			vhost_admin_tunable(dev, VHOST_A_DEV_ZEROCOPY)) ||
	    nla_put_u32(skb, VHOST_A_DEV_ZCOPY_MIN_LEN,
			vhost_admin_tunable(dev, VHOST_A_DEV_ZCOPY_MIN_LEN)) ||
	    nla_put_u32(skb, VHOST_A_DEV_METAMAP,
			vhost_admin_tunable(dev, VHOST_A_DEV_METAMAP)) ||
	    vhost_nl_put_label(skb, dev) ||
	    (owner && nla_put_u32(skb, VHOST_A_DEV_OWNER_PID,
				  vhost_admin_owner_pid(dev))) ||
	    (backend && vhost_nl_put_backend(skb, dev))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/*
 * Selecting devices.  A request names devices by id or name (one device),
 * or by backend interface (every device that feeds it: the queue pairs of
 * a multiqueue TAP), owner or label; with several selectors, the devices
 * all of them select.  The backend and owner selectors need CAP_NET_ADMIN
 * over the requester's network namespace, as reading them does.
 */
enum {
	VHOST_NL_SEL_ID,
	VHOST_NL_SEL_NAME,
	VHOST_NL_SEL_IFINDEX,
	VHOST_NL_SEL_IFNAME,
	VHOST_NL_SEL_OWNER,
	VHOST_NL_SEL_LABEL,
	VHOST_NL_NSEL,
};

static const int vhost_nl_sel_attr[VHOST_NL_NSEL] = {
	[VHOST_NL_SEL_ID] = VHOST_A_DEV_ID,
	[VHOST_NL_SEL_NAME] = VHOST_A_DEV_NAME,
	[VHOST_NL_SEL_IFINDEX] = VHOST_A_DEV_BACKEND_IFINDEX,
	[VHOST_NL_SEL_IFNAME] = VHOST_A_DEV_BACKEND_IFNAME,
	[VHOST_NL_SEL_OWNER] = VHOST_A_DEV_OWNER_PID,
	[VHOST_NL_SEL_LABEL] = VHOST_A_DEV_MATCH_LABEL,
};

/**
 * struct vhost_nl_sel - the selectors of a request
 * @attr: each selector's attribute, NULL when not given
 * @ifindex: the interface backend-ifname names now, 0 when none
 * @owner: the process owner-pid names (a reference), NULL when none
 * @n: how many selectors were given
 */
struct vhost_nl_sel {
	struct nlattr *attr[VHOST_NL_NSEL];
	int ifindex;
	struct pid *owner;
	unsigned int n;
};

/* The devices a request selected, each with a reference. */
struct vhost_nl_devs {
	struct vhost_dev **dev;
	unsigned int n;
};

/*
 * The selectors of a request (tb); skb is the request, for the capability.
 * Returns 0, or -EPERM with the extack set; vhost_nl_sel_release() after.
 */
static int vhost_nl_sel_parse(struct sk_buff *skb, struct nlattr **tb,
			      struct net *net, struct netlink_ext_ack *extack,
			      struct vhost_nl_sel *sel)
{
	struct net_device *nd;
	int i;

	memset(sel, 0, sizeof(*sel));
	for (i = 0; i < VHOST_NL_NSEL; i++) {
		struct nlattr *attr = tb[vhost_nl_sel_attr[i]];

		if (!attr)
			continue;
		/* Which device feeds what, or whose it is, is privileged. */
		if ((i == VHOST_NL_SEL_IFINDEX || i == VHOST_NL_SEL_IFNAME ||
		     i == VHOST_NL_SEL_OWNER) && !vhost_nl_capable(skb, net)) {
			NL_SET_ERR_MSG_ATTR(extack, attr,
					    "CAP_NET_ADMIN over the network namespace required");
			return -EPERM;
		}
		sel->attr[i] = attr;
		sel->n++;
	}
	if (sel->attr[VHOST_NL_SEL_IFNAME]) {
		rcu_read_lock();
		nd = dev_get_by_name_rcu(net,
					 nla_data(sel->attr[VHOST_NL_SEL_IFNAME]));
		sel->ifindex = nd ? nd->ifindex : 0;
		rcu_read_unlock();
	}
	/* In the requester's pid namespace; a pid of 0 is nobody's. */
	if (sel->attr[VHOST_NL_SEL_OWNER])
		sel->owner = find_get_pid(nla_get_u32(sel->attr[VHOST_NL_SEL_OWNER]));
	return 0;
}

static void vhost_nl_sel_release(struct vhost_nl_sel *sel)
{
	put_pid(sel->owner);
}

/* Whether selector i (given) selects dev. */
static bool vhost_nl_sel_match(struct vhost_dev *dev,
			       const struct vhost_nl_sel *sel, int i)
{
	const struct nlattr *attr = sel->attr[i];

	switch (i) {
	case VHOST_NL_SEL_ID:
		return dev->admin.id == nla_get_u32(attr);
	case VHOST_NL_SEL_NAME:
		return !strcmp(dev->admin.name, nla_data(attr));
	case VHOST_NL_SEL_IFINDEX:
		return vhost_admin_feeds(dev, nla_get_u32(attr));
	case VHOST_NL_SEL_IFNAME:
		return vhost_admin_feeds(dev, sel->ifindex);
	case VHOST_NL_SEL_OWNER:
		return sel->owner && vhost_admin_owned_by(dev, sel->owner);
	default:
		return vhost_admin_label_is(dev, nla_data(attr));
	}
}

/* Whether every given selector selects dev. */
static bool vhost_nl_sel_all(struct vhost_dev *dev,
			     const struct vhost_nl_sel *sel)
{
	int i;

	for (i = 0; i < VHOST_NL_NSEL; i++)
		if (sel->attr[i] && !vhost_nl_sel_match(dev, sel, i))
			return false;
	return true;
}

static void vhost_nl_devs_put(struct vhost_nl_devs *devs)
{
	while (devs->n)
		vhost_admin_put(devs->dev[--devs->n]);
	kfree(devs->dev);
	devs->dev = NULL;
}

/* Add dev (a reference, which this takes) to devs: 0 or -ENOMEM. */
static int vhost_nl_devs_add(struct vhost_nl_devs *devs, struct vhost_dev *dev)
{
	struct vhost_dev **d;

	if (is_power_of_2(devs->n + 1)) {
		d = krealloc_array(devs->dev, (devs->n + 1) * 2, sizeof(*d),
				   GFP_KERNEL);
		if (!d) {
			vhost_admin_put(dev);
			return -ENOMEM;
		}
		devs->dev = d;
	}
	devs->dev[devs->n++] = dev;
	return 0;
}

/*
 * The one device an id or name selects, if it agrees with every other
 * selector: 0, or -ENODEV / -EINVAL with the extack set.
 */
static int vhost_nl_select_one(struct net *net, const struct vhost_nl_sel *sel,
			       struct netlink_ext_ack *extack,
			       struct vhost_nl_devs *devs)
{
	struct nlattr *by = sel->attr[VHOST_NL_SEL_ID];
	struct vhost_dev *dev;
	int i;

	if (by)
		dev = vhost_admin_get(net, nla_get_u32(by));
	else
		dev = vhost_admin_get_name(net,
					   nla_data(sel->attr[VHOST_NL_SEL_NAME]));
	if (!dev) {
		NL_SET_ERR_MSG_ATTR(extack, by ?: sel->attr[VHOST_NL_SEL_NAME],
				    "device not found");
		return -ENODEV;
	}
	for (i = 0; i < VHOST_NL_NSEL; i++) {
		if (sel->attr[i] && !vhost_nl_sel_match(dev, sel, i)) {
			vhost_admin_put(dev);
			NL_SET_ERR_MSG_ATTR(extack, sel->attr[i],
					    "the device selectors do not agree");
			return -EINVAL;
		}
	}
	return vhost_nl_devs_add(devs, dev);
}

/*
 * The devices selected by backend, owner or label: every device of the
 * namespace is looked at, each under a reference of its own, no lock
 * held across them.  None: -ENODEV pointing at a selector that selects
 * nothing by itself, else -EINVAL (they select nothing together).
 */
static int vhost_nl_select_many(struct net *net, const struct vhost_nl_sel *sel,
				struct netlink_ext_ack *extack,
				struct vhost_nl_devs *devs)
{
	bool seen[VHOST_NL_NSEL] = {};
	struct vhost_dev *dev;
	unsigned long id = 0;
	int i, err;

	while ((dev = vhost_admin_get_next(net, &id))) {
		bool all = true;

		id++;
		for (i = 0; i < VHOST_NL_NSEL; i++) {
			if (!sel->attr[i])
				continue;
			if (vhost_nl_sel_match(dev, sel, i))
				seen[i] = true;
			else
				all = false;
		}
		if (!all) {
			vhost_admin_put(dev);
			continue;
		}
		err = vhost_nl_devs_add(devs, dev);
		if (err)
			return err;
	}
	if (devs->n)
		return 0;
	for (i = 0; i < VHOST_NL_NSEL; i++) {
		if (sel->attr[i] && !seen[i]) {
			NL_SET_ERR_MSG_ATTR(extack, sel->attr[i],
					    "device not found");
			return -ENODEV;
		}
	}
	NL_SET_ERR_MSG(extack, "no device matches all the selectors");
	return -EINVAL;
}

/*
 * References on the devices a request selects (vhost_nl_devs_put()
 * after): at least one, or an error with the extack set.
 */
static int vhost_nl_select(struct sk_buff *skb, struct genl_info *info,
			   struct vhost_nl_devs *devs)
{
	struct net *net = genl_info_net(info);
	struct vhost_nl_sel sel;
	int err;

	memset(devs, 0, sizeof(*devs));
	err = vhost_nl_sel_parse(skb, info->attrs, net, info->extack, &sel);
	if (err)
		return err;
	if (!sel.n) {
		NL_SET_ERR_MSG(info->extack,
			       "device id, name, backend interface, owner or label required");
		NL_SET_ERR_ATTR_MISS(info->extack, NULL, VHOST_A_DEV_ID);
		err = -EINVAL;
	} else if (sel.attr[VHOST_NL_SEL_ID] || sel.attr[VHOST_NL_SEL_NAME]) {
		err = vhost_nl_select_one(net, &sel, info->extack, devs);
	} else {
		err = vhost_nl_select_many(net, &sel, info->extack, devs);
	}
	vhost_nl_sel_release(&sel);
	if (err)
		vhost_nl_devs_put(devs);
	return err;
}

int vhost_nl_dev_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	bool priv = vhost_nl_capable(skb, genl_info_net(info));
	struct vhost_nl_devs devs;
	struct sk_buff *rsp;
	int err;

	err = vhost_nl_select(skb, info, &devs);
	if (err)
		return err;
	if (devs.n > 1) {
		NL_SET_ERR_MSG(info->extack,
			       "several devices match: select one by id, or dump with these selectors");
		vhost_nl_devs_put(&devs);
		return -EINVAL;
	}
	rsp = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	err = rsp ? vhost_nl_dev_fill(rsp, devs.dev[0], info, priv, priv) :
		    -ENOMEM;
	vhost_nl_devs_put(&devs);
	if (err) {
		nlmsg_free(rsp);
		return err;
	}
	return genlmsg_reply(rsp, info);
}

struct vhost_nl_dump_ctx {
	unsigned long id;	/* the device the dump is in, or the next */
	unsigned int queue;	/* next queue of device id */
	bool started;		/* the device filter was checked */
};

static struct vhost_nl_dump_ctx *vhost_nl_dump_ctx(struct netlink_callback *cb)
{
	NL_ASSERT_DUMP_CTX_FITS(struct vhost_nl_dump_ctx);
	return (struct vhost_nl_dump_ctx *)cb->ctx;
}

/*
 * A reference on the next device of the dump (the one it is in, if still
 * there), NULL at the end or past the device filter selects (if any); its
 * first queue is dumped next if it is not the one the dump was in.
 */
static struct vhost_dev *vhost_nl_dump_next(struct net *net,
					    struct vhost_nl_dump_ctx *ctx,
					    const struct nlattr *filter)
{
	unsigned long id = ctx->id;
	struct vhost_dev *dev;

	dev = vhost_admin_get_next(net, &id);
	if (dev && filter && id != nla_get_u32(filter)) {
		vhost_admin_put(dev);
		return NULL;
	}
	if (dev && id != ctx->id) {
		ctx->id = id;
		ctx->queue = 0;
	}
	return dev;
}

static void vhost_nl_dump_done(struct vhost_dev *dev,
			       struct vhost_nl_dump_ctx *ctx)
{
	vhost_admin_put(dev);
	ctx->id++;
	ctx->queue = 0;
}

/* Every device, or those the backend, owner or label filters select. */
int vhost_nl_dev_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genl_info *info = genl_info_dump(cb);
	struct vhost_nl_dump_ctx *ctx = vhost_nl_dump_ctx(cb);
	struct net *net = sock_net(skb->sk);
	bool priv = vhost_nl_capable(cb->skb, net);
	struct vhost_nl_sel sel;
	struct vhost_dev *dev;
	int err;

	err = vhost_nl_sel_parse(cb->skb, info->attrs, net, cb->extack, &sel);
	if (err)
		return err;
	while ((dev = vhost_nl_dump_next(net, ctx, NULL))) {
		if (vhost_nl_sel_all(dev, &sel)) {
			err = vhost_nl_dev_fill(skb, dev, info, priv, priv);
			if (err) {
				vhost_admin_put(dev);
				break;
			}
		}
		vhost_nl_dump_done(dev, ctx);
	}
	vhost_nl_sel_release(&sel);
	return err;
}

#define VHOST_NL_NOT_GRANTED \
	" not granted to this network namespace by the host's vhost policy"

/*
 * A tenant's refusal to set attr.  Whole strings: a formatted extack
 * message is cut at NETLINK_MAX_FMTMSG_LEN.
 */
static void vhost_nl_not_granted(struct netlink_ext_ack *extack,
				 const struct nlattr *attr)
{
	switch (nla_type(attr)) {
	case VHOST_A_DEV_ADMIN_BUSYPOLL_US:
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "admin-busypoll-us" VHOST_NL_NOT_GRANTED);
		break;
	case VHOST_A_DEV_ZEROCOPY:
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "zerocopy" VHOST_NL_NOT_GRANTED);
		break;
	case VHOST_A_DEV_ZCOPY_MIN_LEN:
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "zcopy-min-len" VHOST_NL_NOT_GRANTED);
		break;
	case VHOST_A_DEV_METAMAP:
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "metamap" VHOST_NL_NOT_GRANTED);
		break;
	default:
		NL_SET_ERR_MSG_ATTR(extack, attr,
				    "label" VHOST_NL_NOT_GRANTED);
		break;
	}
}

/*
 * The host's administrators (CAP_NET_ADMIN in the initial user namespace)
 * may set anything; a namespace's own (which the op's uns-admin-perm let
 * in) only what the host granted the namespace, within its bound.
 * unset: the tunables (VHOST_TUNABLE_*) whose defaults defaults-set
 * removes, which need the same grants (0 for dev-set).
 * Returns 0 or -EPERM with the extack set.
 */
static int vhost_nl_dev_set_allowed(struct sk_buff *skb,
				    struct genl_info *info, struct net *net,
				    int ntunables, u32 unset)
{
	struct nlattr *busypoll = info->attrs[VHOST_A_DEV_ADMIN_BUSYPOLL_US];
	struct vhost_admin_policy pol;
	int i;

	if (netlink_capable(skb, CAP_NET_ADMIN))
		return 0;
	vhost_admin_get_policy(net, &pol);
	for (i = 0; i < ntunables; i++) {
		struct nlattr *attr = info->attrs[vhost_admin_tunables[i].attr];

		if (attr && !(pol.grants & vhost_admin_tunables[i].grant)) {
			vhost_nl_not_granted(info->extack, attr);
			return -EPERM;
		}
	}
	if (unset & ~pol.grants) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    info->attrs[VHOST_A_DEV_DEFAULTS_UNSET],
				    "defaults-unset names a tunable" VHOST_NL_NOT_GRANTED);
		return -EPERM;
	}
	if (busypoll && nla_get_u32(busypoll) > pol.busypoll_max) {
		NL_SET_ERR_MSG_ATTR_FMT(info->extack, busypoll,
					"admin-busypoll-us above %u, the bound of the host's vhost policy here",
					pol.busypoll_max);
		return -EPERM;
	}
	return 0;
}

/* The request's tunables over the device's (tun, a copy of them). */
static void vhost_nl_tunables_apply(struct nlattr **tb,
				    struct vhost_tunables *tun)
{
	/* The policy checked every range. */
	if (tb[VHOST_A_DEV_ADMIN_BUSYPOLL_US])
		tun->busypoll_us =
			nla_get_u32(tb[VHOST_A_DEV_ADMIN_BUSYPOLL_US]);
	if (tb[VHOST_A_DEV_ZEROCOPY])
		tun->zerocopy = nla_get_u32(tb[VHOST_A_DEV_ZEROCOPY]);
	if (tb[VHOST_A_DEV_ZCOPY_MIN_LEN])
		tun->zcopy_min_len = nla_get_u32(tb[VHOST_A_DEV_ZCOPY_MIN_LEN]);
	if (tb[VHOST_A_DEV_METAMAP])
		tun->metamap = nla_get_u32(tb[VHOST_A_DEV_METAMAP]);
}

/*
 * dev-set on one device: prepare (everything that can refuse the values
 * or fail for want of memory; nothing changes), or apply (tunables and
 * label, which *label gives and this takes; a tenant's need of the policy
 * checked again where they are stored).  Lock order in admin.h;
 * switching the map or zero-copy needs dev->mutex.  A worker stalled in
 * the device may keep these for long: the waits end on a fatal signal.
 */
static int vhost_nl_dev_set_one(struct vhost_dev *dev, struct genl_info *info,
				bool prepare, struct vhost_admin_label **label,
				const struct vhost_admin_need *need)
{
	struct nlattr **tb = info->attrs;
	struct vhost_tunables tun;
	bool dev_lock, changed;
	int err = -EINTR;

	dev_lock = tb[VHOST_A_DEV_METAMAP] || tb[VHOST_A_DEV_ZEROCOPY];
	if (dev_lock && mutex_lock_killable(&dev->mutex))
		return -EINTR;
	if (mutex_lock_killable(&dev->admin.mutex))
		goto out_unlock_dev;
	tun = dev->admin.tun;
	vhost_nl_tunables_apply(tb, &tun);
	if (prepare) {
		err = vhost_admin_prepare_tunables(dev, &tun, info->extack);
		goto out_unlock;
	}
	err = vhost_admin_set(dev, &tun, tb[VHOST_A_DEV_LABEL] ? label : NULL,
			      need, &changed, info->extack);
	if (!err && changed)
		vhost_nl_dev_notify(dev, VHOST_CMD_DEV_CHANGE_NTF);
	/* dev->mutex is held: tb[VHOST_A_DEV_ZEROCOPY] is dev_lock's */
	if (!err && tun.zerocopy && tb[VHOST_A_DEV_ZEROCOPY] &&
	    dev->admin.ops->zerocopy_capable &&
	    !dev->admin.ops->zerocopy_capable(dev))
		NL_SET_ERR_MSG_ATTR(info->extack, tb[VHOST_A_DEV_ZEROCOPY],
				    "zero-copy is on, but the backend cannot send zero-copy: its packets are copied");
out_unlock:
	mutex_unlock(&dev->admin.mutex);
out_unlock_dev:
	if (dev_lock)
		mutex_unlock(&dev->mutex);
	return err;
}

/*
 * A device of a dev-set, by id and serial: the request waits on each
 * device's locks for as long as a stalled worker holds them, and a
 * reference held meanwhile on another device would make that device's
 * close() wait for it (vhost_admin_unregister()).  So the request holds
 * a reference only on the device it works on, looked up again for each
 * step; a device closed meanwhile is not changed (it is gone).
 */
struct vhost_nl_key {
	u32 id;
	u64 serial;
};

static int vhost_nl_dev_set_key(struct net *net, const struct vhost_nl_key *k,
				struct genl_info *info, bool prepare,
				struct vhost_admin_label **label,
				const struct vhost_admin_need *need)
{
	struct vhost_dev *dev = vhost_admin_get_serial(net, k->id, k->serial);
	int err;

	if (!dev)
		return 0;
	err = vhost_nl_dev_set_one(dev, info, prepare, label, need);
	vhost_admin_put(dev);
	return err;
}

/* The new label for each of n devices (NULL entries: none). */
static struct vhost_admin_label **
vhost_nl_labels_alloc(const struct nlattr *attr, unsigned int n)
{
	struct vhost_admin_label **l;
	unsigned int i;

	l = kcalloc(n, sizeof(*l), GFP_KERNEL);
	for (i = 0; l && attr && i < n; i++) {
		l[i] = vhost_admin_label_alloc(nla_data(attr));
		if (IS_ERR(l[i])) {
			while (i--)
				kfree(l[i]);
			kfree(l);
			return NULL;
		}
	}
	return l;
}

/*
 * All or nothing over several devices: each is prepared in turn, which
 * refuses what any of them would refuse and allocates what any needs,
 * before the first is changed.  Then each is changed, which can fail only
 * when the requester is being killed or a tenant's grant was revoked
 * meanwhile.  A device closed after it was selected is skipped
 * (struct vhost_nl_key).
 */
int vhost_nl_dev_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net = genl_info_net(info);
	struct nlattr **tb = info->attrs;
	struct vhost_admin_need need = {}, *tenant = NULL;
	struct vhost_admin_label **labels;
	struct vhost_nl_key *keys;
	struct vhost_nl_devs devs;
	unsigned int i, n;
	int err;

	for (i = 0; i < VHOST_ADMIN_NTUNABLES; i++)
		if (tb[vhost_admin_tunables[i].attr])
			need.grants |= vhost_admin_tunables[i].grant;
	if (!need.grants) {
		NL_SET_ERR_MSG(info->extack, "no tunable or label to set");
		return -EINVAL;
	}
	if (tb[VHOST_A_DEV_LABEL] &&
	    !vhost_admin_label_valid(nla_data(tb[VHOST_A_DEV_LABEL]))) {
		NL_SET_ERR_MSG_ATTR(info->extack, tb[VHOST_A_DEV_LABEL],
				    "a label is printable ASCII (0x20 to 0x7e): no control character, no other byte");
		return -EINVAL;
	}
	err = vhost_nl_dev_set_allowed(skb, info, net, VHOST_ADMIN_NTUNABLES, 0);
	if (err)
		return err;
	if (!netlink_capable(skb, CAP_NET_ADMIN)) {
		if (tb[VHOST_A_DEV_ADMIN_BUSYPOLL_US])
			need.busypoll_us =
				nla_get_u32(tb[VHOST_A_DEV_ADMIN_BUSYPOLL_US]);
		tenant = &need;
	}
	err = vhost_nl_select(skb, info, &devs);
	if (err)
		return err;
	n = devs.n;
	keys = kmalloc_array(n, sizeof(*keys), GFP_KERNEL);
	labels = vhost_nl_labels_alloc(tb[VHOST_A_DEV_LABEL], n);
	for (i = 0; keys && i < n; i++) {
		keys[i].id = devs.dev[i]->admin.id;
		keys[i].serial = devs.dev[i]->admin.serial;
	}
	vhost_nl_devs_put(&devs);
	if (!keys || !labels) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0; n > 1 && i < n && !err; i++)
		err = vhost_nl_dev_set_key(net, &keys[i], info, true, NULL,
					   tenant);
	for (i = 0; i < n && !err; i++)
		err = vhost_nl_dev_set_key(net, &keys[i], info, false,
					   &labels[i], tenant);
out:
	for (i = 0; labels && i < n; i++)
		kfree(labels[i]);
	kfree(labels);
	kfree(keys);
	return err;
}

/* The reply of a do about the namespace, its attributes put by fill. */
static int vhost_nl_ns_reply(struct genl_info *info,
			     int (*fill)(struct sk_buff *rsp, struct net *net))
{
	struct sk_buff *rsp;
	void *hdr;

	rsp = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	hdr = genlmsg_iput(rsp, info);
	if (!hdr || fill(rsp, genl_info_net(info))) {
		nlmsg_free(rsp);
		return -EMSGSIZE;
	}
	genlmsg_end(rsp, hdr);
	return genlmsg_reply(rsp, info);
}

static int vhost_nl_defaults_fill(struct sk_buff *rsp, struct net *net)
{
	struct vhost_admin_defaults d;
	int i, attr;

	vhost_admin_get_defaults(net, &d);
	for (i = 0; i < VHOST_ADMIN_NTUNABLES; i++) {
		attr = vhost_admin_tunables[i].attr;
		if ((d.set & BIT(attr)) &&
		    nla_put_u32(rsp, attr, vhost_tunables_get(&d.tun, attr)))
			return -EMSGSIZE;
	}
	return 0;
}

int vhost_nl_defaults_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	return vhost_nl_ns_reply(info, vhost_nl_defaults_fill);
}

/*
 * What a device gets with its owner, set by whoever may set those
 * tunables on the namespace's devices (the op's uns-admin-perm, then the
 * policy, as dev-set).
 */
int vhost_nl_defaults_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct net *net = genl_info_net(info);
	struct nlattr *unset_attr = info->attrs[VHOST_A_DEV_DEFAULTS_UNSET];
	struct vhost_admin_defaults d = {};
	u32 unset = 0, unset_tun = 0;
	struct nlattr *attr;
	int i, err;

	if (unset_attr)
		unset_tun = nla_get_uint(unset_attr);
	if (unset_tun & VHOST_TUNABLE_LABEL) {
		NL_SET_ERR_MSG_ATTR(info->extack, unset_attr,
				    "the label has no default");
		return -EINVAL;
	}
	/* The label, last, is no default (nor in the op's attributes). */
	for (i = 0; i < VHOST_ADMIN_NTUNABLES - 1; i++) {
		if (unset_tun & vhost_admin_tunables[i].grant)
			unset |= BIT(vhost_admin_tunables[i].attr);
		attr = info->attrs[vhost_admin_tunables[i].attr];
		if (!attr)
			continue;
		if (unset_tun & vhost_admin_tunables[i].grant) {
			NL_SET_ERR_MSG_ATTR(info->extack, attr,
					    "a default both given and removed");
			return -EINVAL;
		}
		d.set |= BIT(nla_type(attr));
		vhost_tunables_set(&d.tun, nla_type(attr), nla_get_u32(attr));
	}
	if (!d.set && !unset) {
		NL_SET_ERR_MSG(info->extack, "no default to set or remove");
		return -EINVAL;
	}
	if (d.tun.metamap != VHOST_METAMAP_MODE_OFF &&
	    !IS_ENABLED(CONFIG_VHOST_METAMAP)) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    info->attrs[VHOST_A_DEV_METAMAP],
				    "kernel built without the metadata direct map and read-ahead");
		return -EOPNOTSUPP;
	}
	err = vhost_nl_dev_set_allowed(skb, info, net,
				       VHOST_ADMIN_NTUNABLES - 1, unset_tun);
	if (!err)
		vhost_admin_set_defaults(net, &d, unset);
	return err;
}

static int vhost_nl_policy_fill(struct sk_buff *rsp, struct net *net)
{
	struct vhost_admin_policy pol;

	vhost_admin_get_policy(net, &pol);
	if (nla_put_uint(rsp, VHOST_A_POLICY_GRANTS, pol.grants) ||
	    nla_put_u32(rsp, VHOST_A_POLICY_BUSYPOLL_US_MAX, pol.busypoll_max) ||
	    nla_put_u32(rsp, VHOST_A_POLICY_TENANT, vhost_admin_tenant(net)))
		return -EMSGSIZE;
	return 0;
}

int vhost_nl_policy_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	return vhost_nl_ns_reply(info, vhost_nl_policy_fill);
}

/* Only the host's administrators get here (admin-perm in the spec). */
int vhost_nl_policy_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct nlattr *grants = info->attrs[VHOST_A_POLICY_GRANTS];
	struct nlattr *max = info->attrs[VHOST_A_POLICY_BUSYPOLL_US_MAX];
	struct net *net = genl_info_net(info);
	u32 g = 0, m = 0;

	if (!vhost_admin_tenant(net)) {
		NL_SET_ERR_MSG(info->extack,
			       "this network namespace is administered from the initial user namespace: no vhost policy applies");
		return -EINVAL;
	}
	if (!grants && !max) {
		NL_SET_ERR_MSG(info->extack, "no policy attribute to set");
		return -EINVAL;
	}
	if (grants)
		g = nla_get_uint(grants);
	if (max)
		m = nla_get_u32(max);
	vhost_admin_set_policy(net, grants ? &g : NULL, max ? &m : NULL);
	return 0;
}

/* One queue; priv: include its worker (a thread of the owner). */
static int vhost_nl_queue_fill(struct sk_buff *skb, struct vhost_dev *dev,
			       unsigned int index, const struct genl_info *info,
			       bool priv)
{
	struct vhost_virtqueue *vq = dev->vqs[index];
	u32 worker = priv ? vhost_admin_queue_worker(dev, index) : 0;
	void *hdr;

	hdr = genlmsg_iput(skb, info);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, VHOST_A_QUEUE_DEV_ID, dev->admin.id) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_INDEX, index) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_TYPE,
			dev->admin.ops->queue_type(index)) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_NUM, READ_ONCE(vq->num)) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_OWNER_BUSYPOLL_US,
			READ_ONCE(vq->busyloop_timeout)) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_BUSYPOLL_US,
			vhost_admin_queue_busypoll(dev, index)) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_BUSYPOLL_SOURCE,
			vhost_admin_queue_busypoll_source(dev, index)) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_METAMAP_VALID,
			vhost_metamap_valid(vq)) ||
	    (worker && nla_put_u32(skb, VHOST_A_QUEUE_WORKER_PID, worker))) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

int vhost_nl_queue_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct vhost_dev *dev;
	struct sk_buff *rsp;
	u32 index;
	int err;

	if (GENL_REQ_ATTR_CHECK(info, VHOST_A_QUEUE_DEV_ID) ||
	    GENL_REQ_ATTR_CHECK(info, VHOST_A_QUEUE_INDEX))
		return -EINVAL;
	index = nla_get_u32(info->attrs[VHOST_A_QUEUE_INDEX]);
	dev = vhost_admin_get(genl_info_net(info),
			      nla_get_u32(info->attrs[VHOST_A_QUEUE_DEV_ID]));
	if (!dev) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    info->attrs[VHOST_A_QUEUE_DEV_ID],
				    "device not found");
		return -ENODEV;
	}
	if (index >= dev->nvqs) {
		NL_SET_ERR_MSG_ATTR(info->extack,
				    info->attrs[VHOST_A_QUEUE_INDEX],
				    "no such queue");
		vhost_admin_put(dev);
		return -ENOENT;
	}
	rsp = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	err = rsp ? vhost_nl_queue_fill(rsp, dev, index, info,
					vhost_nl_capable(skb,
							 genl_info_net(info))) :
		    -ENOMEM;
	vhost_admin_put(dev);
	if (err) {
		nlmsg_free(rsp);
		return err;
	}
	return genlmsg_reply(rsp, info);
}

/*
 * The device a dump is filtered on, checked on the first call: -ENODEV if
 * the requester cannot see it.  Later calls end the dump when it is gone.
 */
static int vhost_nl_dump_filter(struct netlink_callback *cb,
				struct nlattr *filter)
{
	struct vhost_nl_dump_ctx *ctx = vhost_nl_dump_ctx(cb);
	struct vhost_dev *dev;
	u32 id;

	if (!filter || ctx->started)
		return 0;
	id = nla_get_u32(filter);
	dev = vhost_admin_get(sock_net(cb->skb->sk), id);
	if (!dev) {
		NL_SET_ERR_MSG_ATTR(cb->extack, filter, "device not found");
		return -ENODEV;
	}
	vhost_admin_put(dev);
	ctx->id = id;
	ctx->started = true;
	return 0;
}

int vhost_nl_queue_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genl_info *info = genl_info_dump(cb);
	struct vhost_nl_dump_ctx *ctx = vhost_nl_dump_ctx(cb);
	struct nlattr *filter = info->attrs[VHOST_A_QUEUE_DEV_ID];
	struct net *net = sock_net(skb->sk);
	bool priv = vhost_nl_capable(cb->skb, net);
	struct vhost_dev *dev;
	int err;

	err = vhost_nl_dump_filter(cb, filter);
	if (err)
		return err;
	while ((dev = vhost_nl_dump_next(net, ctx, filter))) {
		for (; ctx->queue < dev->nvqs; ctx->queue++) {
			err = vhost_nl_queue_fill(skb, dev, ctx->queue, info,
						  priv);
			if (err) {
				vhost_admin_put(dev);
				return err;
			}
		}
		vhost_nl_dump_done(dev, ctx);
	}
	return 0;
}

/* One statistics message: a device's sums (queue < 0) or one queue's. */
static int vhost_nl_stats_fill(struct sk_buff *skb, struct vhost_dev *dev,
			       int queue, const struct genl_info *info)
{
	struct vhost_admin_stats st = {};
	void *hdr;
	int i;

	if (queue < 0)
		vhost_admin_dev_stats(dev, &st);
	else
		vhost_admin_queue_stats(dev, queue, &st);
	hdr = genlmsg_iput(skb, info);
	if (!hdr)
		return -EMSGSIZE;
	if (nla_put_u32(skb, VHOST_A_STATS_DEV_ID, dev->admin.id) ||
	    (queue >= 0 &&
	     (nla_put_u32(skb, VHOST_A_STATS_QUEUE_INDEX, queue) ||
	      nla_put_u32(skb, VHOST_A_STATS_QUEUE_TYPE,
			  dev->admin.ops->queue_type(queue)))))
		goto err;
	for_each_set_bit(i, st.has, VHOST_A_STATS_MAX + 1)
		if (nla_put_uint(skb, i, st.val[i]))
			goto err;
	genlmsg_end(skb, hdr);
	return 0;
err:
	genlmsg_cancel(skb, hdr);
	return -EMSGSIZE;
}

int vhost_nl_stats_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genl_info *info = genl_info_dump(cb);
	struct vhost_nl_dump_ctx *ctx = vhost_nl_dump_ctx(cb);
	struct nlattr *filter = info->attrs[VHOST_A_STATS_DEV_ID];
	struct net *net = sock_net(skb->sk);
	bool per_queue = false;
	struct vhost_dev *dev;
	int err;

	if (info->attrs[VHOST_A_STATS_SCOPE])
		per_queue = nla_get_uint(info->attrs[VHOST_A_STATS_SCOPE]) &
			    VHOST_STATS_SCOPE_QUEUE;
	err = vhost_nl_dump_filter(cb, filter);
	if (err)
		return err;
	while ((dev = vhost_nl_dump_next(net, ctx, filter))) {
		if (!per_queue) {
			err = vhost_nl_stats_fill(skb, dev, -1, info);
		} else {
			for (; ctx->queue < dev->nvqs; ctx->queue++) {
				err = vhost_nl_stats_fill(skb, dev, ctx->queue,
							  info);
				if (err)
					break;
			}
		}
		if (err) {
			vhost_admin_put(dev);
			return err;
		}
		vhost_nl_dump_done(dev, ctx);
	}
	return 0;
}

/* One notification to group of net: about dev, with the backend or not. */
static void vhost_nl_dev_notify_grp(struct vhost_dev *dev, u32 cmd,
				    unsigned int group, bool backend)
{
	struct net *net = dev->admin.net;
	struct genl_info info;
	struct sk_buff *ntf;

	if (!genl_has_listeners(&vhost_nl_family, net, group))
		return;
	genl_info_init_ntf(&info, &vhost_nl_family, cmd);
	ntf = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!ntf)
		return;
	if (vhost_nl_dev_fill(ntf, dev, &info, false, backend)) {
		nlmsg_free(ntf);
		return;
	}
	genlmsg_multicast_netns(&vhost_nl_family, net, ntf, 0, group,
				GFP_KERNEL);
}

/*
 * Tell the groups of the device's namespace about dev: monitor (joined
 * with CAP_NET_ADMIN over it) with the backend, watch (anyone) without;
 * neither the owner's pid, which means something else in every pid
 * namespace.  Only where someone listens.
 */
void vhost_nl_dev_notify(struct vhost_dev *dev, u32 cmd)
{
	vhost_nl_dev_notify_grp(dev, cmd, VHOST_NLGRP_MONITOR, true);
	vhost_nl_dev_notify_grp(dev, cmd, VHOST_NLGRP_WATCH, false);
}

int vhost_nl_init(void)
{
	return genl_register_family(&vhost_nl_family);
}

void vhost_nl_exit(void)
{
	genl_unregister_family(&vhost_nl_family);
}
