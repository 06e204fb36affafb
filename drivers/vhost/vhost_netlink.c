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
 * user namespace that owns that network namespace; the monitor group needs
 * it to join (the notifications carry the backend).
 */
#include <linux/if.h>
#include <linux/netdevice.h>
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
 * A reference on the device one selector attribute (of type type) selects
 * in net, or an ERR_PTR with the extack set.
 */
static struct vhost_dev *vhost_nl_dev_select(struct sk_buff *skb,
					     struct genl_info *info,
					     struct net *net, int type,
					     struct nlattr *attr)
{
	struct vhost_dev *dev;
	struct net_device *nd;
	int ifindex;

	switch (type) {
	case VHOST_A_DEV_ID:
		dev = vhost_admin_get(net, nla_get_u32(attr));
		break;
	case VHOST_A_DEV_NAME:
		dev = vhost_admin_get_name(net, nla_data(attr));
		break;
	default:
		/* Which device feeds which interface is privileged. */
		if (!vhost_nl_capable(skb, net)) {
			NL_SET_ERR_MSG_ATTR(info->extack, attr,
					    "CAP_NET_ADMIN over the network namespace required");
			return ERR_PTR(-EPERM);
		}
		if (type == VHOST_A_DEV_BACKEND_IFINDEX) {
			ifindex = nla_get_u32(attr);
		} else {
			rcu_read_lock();
			nd = dev_get_by_name_rcu(net, nla_data(attr));
			ifindex = nd ? nd->ifindex : 0;
			rcu_read_unlock();
		}
		dev = vhost_admin_get_backend(net, ifindex);
		if (IS_ERR(dev)) {
			NL_SET_ERR_MSG_ATTR(info->extack, attr,
					    "several devices feed this interface: select one by id");
			return dev;
		}
		break;
	}
	if (!dev) {
		NL_SET_ERR_MSG_ATTR(info->extack, attr, "device not found");
		return ERR_PTR(-ENODEV);
	}
	return dev;
}

/*
 * A reference on the device a request selects: by id, name, backend
 * interface index or backend interface name (in the requester's namespace;
 * the backend selectors need CAP_NET_ADMIN there); when several are given
 * they must select the same device.  Sets the extack and returns an
 * ERR_PTR when there is none.
 */
static struct vhost_dev *vhost_nl_dev_lookup(struct sk_buff *skb,
					     struct genl_info *info)
{
	static const int sel[] = {
		VHOST_A_DEV_ID, VHOST_A_DEV_NAME, VHOST_A_DEV_BACKEND_IFINDEX,
		VHOST_A_DEV_BACKEND_IFNAME,
	};
	struct net *net = genl_info_net(info);
	struct vhost_dev *dev = NULL, *d;
	int i;

	for (i = 0; i < ARRAY_SIZE(sel); i++) {
		struct nlattr *attr = info->attrs[sel[i]];

		if (!attr)
			continue;
		d = vhost_nl_dev_select(skb, info, net, sel[i], attr);
		if (IS_ERR(d) || (dev && d != dev)) {
			if (!IS_ERR(d)) {
				vhost_admin_put(d);
				NL_SET_ERR_MSG_ATTR(info->extack, attr,
						    "the device selectors do not agree");
				d = ERR_PTR(-EINVAL);
			}
			if (dev)
				vhost_admin_put(dev);
			return d;
		}
		if (dev)
			vhost_admin_put(d);
		dev = d;
	}
	if (!dev) {
		NL_SET_ERR_MSG(info->extack,
			       "device id, name or backend interface required");
		return ERR_PTR(-EINVAL);
	}
	return dev;
}

int vhost_nl_dev_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	bool priv = vhost_nl_capable(skb, genl_info_net(info));
	struct vhost_dev *dev;
	struct sk_buff *rsp;
	int err;

	dev = vhost_nl_dev_lookup(skb, info);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	rsp = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	err = rsp ? vhost_nl_dev_fill(rsp, dev, info, priv, priv) : -ENOMEM;
	vhost_admin_put(dev);
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

int vhost_nl_dev_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct vhost_nl_dump_ctx *ctx = vhost_nl_dump_ctx(cb);
	struct net *net = sock_net(skb->sk);
	bool priv = vhost_nl_capable(cb->skb, net);
	struct vhost_dev *dev;
	int err;

	while ((dev = vhost_nl_dump_next(net, ctx, NULL))) {
		err = vhost_nl_dev_fill(skb, dev, genl_info_dump(cb), priv,
					priv);
		if (err) {
			vhost_admin_put(dev);
			return err;
		}
		vhost_nl_dump_done(dev, ctx);
	}
	return 0;
}

int vhost_nl_dev_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	static const int tunable_attrs[] = {
		VHOST_A_DEV_ADMIN_BUSYPOLL_US, VHOST_A_DEV_ZEROCOPY,
		VHOST_A_DEV_ZCOPY_MIN_LEN, VHOST_A_DEV_METAMAP,
	};
	struct net *net = genl_info_net(info);
	struct nlattr **tb = info->attrs;
	struct vhost_tunables tun;
	struct vhost_dev *dev;
	bool any = false;
	int i, err;

	if (!vhost_nl_capable(skb, net)) {
		NL_SET_ERR_MSG(info->extack,
			       "CAP_NET_ADMIN over the network namespace required");
		return -EPERM;
	}
	for (i = 0; i < ARRAY_SIZE(tunable_attrs); i++)
		any |= !!tb[tunable_attrs[i]];
	if (!any) {
		NL_SET_ERR_MSG(info->extack, "no tunable to set");
		return -EINVAL;
	}
	dev = vhost_nl_dev_lookup(skb, info);
	if (IS_ERR(dev))
		return PTR_ERR(dev);
	/* Lock order in admin.h; only the map switch needs dev->mutex. */
	if (tb[VHOST_A_DEV_METAMAP])
		mutex_lock(&dev->mutex);
	mutex_lock(&dev->admin.mutex);
	/* The policy checked every range: from here on nothing can fail. */
	tun = dev->admin.tun;
	if (tb[VHOST_A_DEV_ADMIN_BUSYPOLL_US])
		tun.busypoll_us =
			nla_get_u32(tb[VHOST_A_DEV_ADMIN_BUSYPOLL_US]);
	if (tb[VHOST_A_DEV_ZEROCOPY])
		tun.zerocopy = nla_get_u32(tb[VHOST_A_DEV_ZEROCOPY]);
	if (tb[VHOST_A_DEV_ZCOPY_MIN_LEN])
		tun.zcopy_min_len = nla_get_u32(tb[VHOST_A_DEV_ZCOPY_MIN_LEN]);
	if (tb[VHOST_A_DEV_METAMAP])
		tun.metamap = nla_get_u32(tb[VHOST_A_DEV_METAMAP]);
	if (!memcmp(&tun, &dev->admin.tun, sizeof(tun))) {
		err = 0;
	} else {
		err = vhost_admin_set_tunables(dev, &tun, info->extack);
		if (!err)
			vhost_nl_dev_notify(dev, VHOST_CMD_DEV_CHANGE_NTF);
	}
	mutex_unlock(&dev->admin.mutex);
	if (tb[VHOST_A_DEV_METAMAP])
		mutex_unlock(&dev->mutex);
	vhost_admin_put(dev);
	return err;
}

static int vhost_nl_queue_fill(struct sk_buff *skb, struct vhost_dev *dev,
			       unsigned int index, const struct genl_info *info)
{
	struct vhost_virtqueue *vq = dev->vqs[index];
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
	    nla_put_u32(skb, VHOST_A_QUEUE_METAMAP_VALID,
			READ_ONCE(vq->metamap.valid))) {
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
	err = rsp ? vhost_nl_queue_fill(rsp, dev, index, info) : -ENOMEM;
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
	struct vhost_dev *dev;
	int err;

	err = vhost_nl_dump_filter(cb, filter);
	if (err)
		return err;
	while ((dev = vhost_nl_dump_next(net, ctx, filter))) {
		for (; ctx->queue < dev->nvqs; ctx->queue++) {
			err = vhost_nl_queue_fill(skb, dev, ctx->queue, info);
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

/*
 * Tell net's monitor group about dev (identity, configuration, backend; not
 * the owner's pid, which means something else in every pid namespace).
 * Only when someone listens there.
 */
void vhost_nl_dev_notify_net(struct vhost_dev *dev, u32 cmd, struct net *net)
{
	struct genl_info info;
	struct sk_buff *ntf;

	if (!genl_has_listeners(&vhost_nl_family, net, VHOST_NLGRP_MONITOR))
		return;
	genl_info_init_ntf(&info, &vhost_nl_family, cmd);
	ntf = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!ntf)
		return;
	if (vhost_nl_dev_fill(ntf, dev, &info, false, true)) {
		nlmsg_free(ntf);
		return;
	}
	genlmsg_multicast_netns(&vhost_nl_family, net, ntf, 0,
				VHOST_NLGRP_MONITOR, GFP_KERNEL);
}

/* The same, to the namespace the device belongs to. */
void vhost_nl_dev_notify(struct vhost_dev *dev, u32 cmd)
{
	vhost_nl_dev_notify_net(dev, cmd, READ_ONCE(dev->admin.net));
}

int vhost_nl_init(void)
{
	return genl_register_family(&vhost_nl_family);
}

void vhost_nl_exit(void)
{
	genl_unregister_family(&vhost_nl_family);
}
