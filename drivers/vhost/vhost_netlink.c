// SPDX-License-Identifier: GPL-2.0
/*
 * The "vhost" generic netlink family: dev-get, dev-set, queue-get and the
 * monitor notifications.  Policies and the ops table are generated from
 * Documentation/netlink/specs/vhost.yaml into vhost_nl.[ch].
 *
 * Every handler runs under vhost_admin_lock, from the device lookup to the
 * last access (see admin_internal.h).  The owner's pid and the backend are
 * reported only to requesters with CAP_NET_ADMIN in the initial user
 * namespace, and never in notifications: they tell which process, and which
 * interface, belongs to which guest.
 */
#include <linux/if.h>
#include <net/genetlink.h>
#include <net/netlink.h>

#include "admin_internal.h"
#include "vhost_nl.h"

static int vhost_nl_put_stats(struct sk_buff *skb, int attr,
			      const struct vhost_admin_stats *st)
{
	struct nlattr *nest;
	int i;

	nest = nla_nest_start(skb, attr);
	if (!nest)
		return -EMSGSIZE;
	for_each_set_bit(i, st->has, VHOST_A_STATS_MAX + 1)
		if (nla_put_uint(skb, i, st->val[i])) {
			nla_nest_cancel(skb, nest);
			return -EMSGSIZE;
		}
	nla_nest_end(skb, nest);
	return 0;
}

static int vhost_nl_put_private(struct sk_buff *skb, struct vhost_dev *dev)
{
	char ifname[IFNAMSIZ];
	int ifindex;

	if (nla_put_u32(skb, VHOST_A_DEV_OWNER_PID, vhost_admin_owner_pid(dev)))
		return -EMSGSIZE;
	ifindex = dev->admin.ops->backend(dev, ifname);
	if (ifindex > 0 &&
	    (nla_put_u32(skb, VHOST_A_DEV_BACKEND_IFINDEX, ifindex) ||
	     nla_put_string(skb, VHOST_A_DEV_BACKEND_IFNAME, ifname)))
		return -EMSGSIZE;
	return 0;
}

/* One device; priv: include the owner and backend. */
static int vhost_nl_dev_fill(struct sk_buff *skb, struct vhost_dev *dev,
			     const struct genl_info *info, bool priv)
{
	struct vhost_admin_stats st;
	void *hdr;

	hdr = genlmsg_iput(skb, info);
	if (!hdr)
		return -EMSGSIZE;
	vhost_admin_dev_stats(dev, &st);
	if (nla_put_u32(skb, VHOST_A_DEV_ID, dev->admin.id) ||
	    nla_put_string(skb, VHOST_A_DEV_NAME, dev->admin.name) ||
	    nla_put_u32(skb, VHOST_A_DEV_TYPE, dev->admin.ops->type) ||
	    nla_put_u64_64bit(skb, VHOST_A_DEV_FEATURES,
			      READ_ONCE(dev->vqs[0]->acked_features),
			      VHOST_A_DEV_PAD) ||
	    nla_put_u32(skb, VHOST_A_DEV_NUM_QUEUES, dev->nvqs) ||
	    nla_put_u32(skb, VHOST_A_DEV_BUSYPOLL_US,
			vhost_admin_tunable(dev, VHOST_A_DEV_BUSYPOLL_US)) ||
	    nla_put_u8(skb, VHOST_A_DEV_ZEROCOPY,
		       vhost_admin_tunable(dev, VHOST_A_DEV_ZEROCOPY)) ||
	    nla_put_u32(skb, VHOST_A_DEV_ZCOPY_MIN_LEN,
			vhost_admin_tunable(dev, VHOST_A_DEV_ZCOPY_MIN_LEN)) ||
	    nla_put_u8(skb, VHOST_A_DEV_METAMAP,
		       vhost_admin_tunable(dev, VHOST_A_DEV_METAMAP)) ||
	    (priv && vhost_nl_put_private(skb, dev)) ||
	    vhost_nl_put_stats(skb, VHOST_A_DEV_STATS, &st)) {
		genlmsg_cancel(skb, hdr);
		return -EMSGSIZE;
	}
	genlmsg_end(skb, hdr);
	return 0;
}

/*
 * The device named by an id or a name attribute (both: they must agree).
 * Sets the extack and returns an ERR_PTR when there is none.
 */
static struct vhost_dev *vhost_nl_dev_lookup(struct genl_info *info,
					     int id_attr, int name_attr)
{
	struct nlattr *id = info->attrs[id_attr];
	struct nlattr *name = name_attr ? info->attrs[name_attr] : NULL;
	struct vhost_dev *dev;

	lockdep_assert_held(&vhost_admin_lock);
	if (!id && !name) {
		NL_SET_ERR_MSG(info->extack, "device id or name required");
		return ERR_PTR(-EINVAL);
	}
	dev = id ? vhost_admin_find(nla_get_u32(id)) :
		   vhost_admin_find_name(nla_data(name));
	if (!dev) {
		NL_SET_BAD_ATTR(info->extack, id ?: name);
		NL_SET_ERR_MSG(info->extack, "device not found");
		return ERR_PTR(-ENODEV);
	}
	if (id && name && strcmp(dev->admin.name, nla_data(name))) {
		NL_SET_BAD_ATTR(info->extack, name);
		NL_SET_ERR_MSG(info->extack, "device id and name do not match");
		return ERR_PTR(-EINVAL);
	}
	return dev;
}

int vhost_nl_dev_get_doit(struct sk_buff *skb, struct genl_info *info)
{
	struct vhost_dev *dev;
	struct sk_buff *rsp;
	int err;

	rsp = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	mutex_lock(&vhost_admin_lock);
	dev = vhost_nl_dev_lookup(info, VHOST_A_DEV_ID, VHOST_A_DEV_NAME);
	err = IS_ERR(dev) ? PTR_ERR(dev) :
	      vhost_nl_dev_fill(rsp, dev, info,
				netlink_capable(skb, CAP_NET_ADMIN));
	mutex_unlock(&vhost_admin_lock);
	if (err) {
		nlmsg_free(rsp);
		return err;
	}
	return genlmsg_reply(rsp, info);
}

struct vhost_nl_dump_ctx {
	unsigned long id;	/* next device */
	unsigned int queue;	/* next queue of that device (queue-get) */
};

static struct vhost_nl_dump_ctx *vhost_nl_dump_ctx(struct netlink_callback *cb)
{
	NL_ASSERT_DUMP_CTX_FITS(struct vhost_nl_dump_ctx);
	return (struct vhost_nl_dump_ctx *)cb->ctx;
}

int vhost_nl_dev_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	struct vhost_nl_dump_ctx *ctx = vhost_nl_dump_ctx(cb);
	bool priv = netlink_capable(cb->skb, CAP_NET_ADMIN);
	struct vhost_dev *dev;
	int err = 0;

	mutex_lock(&vhost_admin_lock);
	for (; (dev = vhost_admin_next(&ctx->id)); ctx->id++) {
		err = vhost_nl_dev_fill(skb, dev, genl_info_dump(cb), priv);
		if (err)
			break;
	}
	mutex_unlock(&vhost_admin_lock);
	return err;
}

int vhost_nl_dev_set_doit(struct sk_buff *skb, struct genl_info *info)
{
	static const int tunable_attrs[] = {
		VHOST_A_DEV_BUSYPOLL_US, VHOST_A_DEV_ZEROCOPY,
		VHOST_A_DEV_ZCOPY_MIN_LEN, VHOST_A_DEV_METAMAP,
	};
	struct nlattr **tb = info->attrs;
	struct vhost_tunables tun;
	struct vhost_dev *dev;
	bool any = false;
	int i, err;

	for (i = 0; i < ARRAY_SIZE(tunable_attrs); i++)
		any |= !!tb[tunable_attrs[i]];
	mutex_lock(&vhost_admin_lock);
	dev = vhost_nl_dev_lookup(info, VHOST_A_DEV_ID, VHOST_A_DEV_NAME);
	if (IS_ERR(dev)) {
		err = PTR_ERR(dev);
		goto out;
	}
	if (!any) {
		NL_SET_ERR_MSG(info->extack, "no tunable to set");
		err = -EINVAL;
		goto out;
	}
	/* The policy checked every range: from here on nothing can fail. */
	tun = dev->admin.tun;
	if (tb[VHOST_A_DEV_BUSYPOLL_US])
		tun.busypoll_us = nla_get_u32(tb[VHOST_A_DEV_BUSYPOLL_US]);
	if (tb[VHOST_A_DEV_ZEROCOPY])
		tun.zerocopy = nla_get_u8(tb[VHOST_A_DEV_ZEROCOPY]);
	if (tb[VHOST_A_DEV_ZCOPY_MIN_LEN])
		tun.zcopy_min_len = nla_get_u32(tb[VHOST_A_DEV_ZCOPY_MIN_LEN]);
	if (tb[VHOST_A_DEV_METAMAP])
		tun.metamap = nla_get_u8(tb[VHOST_A_DEV_METAMAP]);
	err = vhost_admin_set_tunables(dev, &tun, info->extack);
	if (!err)
		vhost_nl_dev_notify(dev, VHOST_CMD_DEV_CHANGE_NTF);
out:
	mutex_unlock(&vhost_admin_lock);
	return err;
}

static int vhost_nl_queue_fill(struct sk_buff *skb, struct vhost_dev *dev,
			       unsigned int index, const struct genl_info *info)
{
	struct vhost_virtqueue *vq = dev->vqs[index];
	struct vhost_admin_stats st = {};
	void *hdr;

	hdr = genlmsg_iput(skb, info);
	if (!hdr)
		return -EMSGSIZE;
	vhost_admin_queue_stats(dev, index, &st);
	if (nla_put_u32(skb, VHOST_A_QUEUE_DEV_ID, dev->admin.id) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_INDEX, index) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_TYPE,
			dev->admin.ops->queue_type(index)) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_NUM, READ_ONCE(vq->num)) ||
	    nla_put_u32(skb, VHOST_A_QUEUE_BUSYPOLL_US,
			READ_ONCE(vq->busyloop_timeout)) ||
	    nla_put_u8(skb, VHOST_A_QUEUE_METAMAP_VALID,
		       READ_ONCE(vq->metamap.valid)) ||
	    vhost_nl_put_stats(skb, VHOST_A_QUEUE_STATS, &st)) {
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
	rsp = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!rsp)
		return -ENOMEM;
	mutex_lock(&vhost_admin_lock);
	dev = vhost_nl_dev_lookup(info, VHOST_A_QUEUE_DEV_ID, 0);
	if (IS_ERR(dev)) {
		err = PTR_ERR(dev);
	} else if (index >= dev->nvqs) {
		NL_SET_BAD_ATTR(info->extack, info->attrs[VHOST_A_QUEUE_INDEX]);
		NL_SET_ERR_MSG(info->extack, "no such queue");
		err = -ENOENT;
	} else {
		err = vhost_nl_queue_fill(rsp, dev, index, info);
	}
	mutex_unlock(&vhost_admin_lock);
	if (err) {
		nlmsg_free(rsp);
		return err;
	}
	return genlmsg_reply(rsp, info);
}

int vhost_nl_queue_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb)
{
	const struct genl_info *info = genl_info_dump(cb);
	struct vhost_nl_dump_ctx *ctx = vhost_nl_dump_ctx(cb);
	struct nlattr *filter = info->attrs[VHOST_A_QUEUE_DEV_ID];
	struct vhost_dev *dev;
	int err = 0;

	mutex_lock(&vhost_admin_lock);
	if (filter) {
		if (!vhost_admin_find(nla_get_u32(filter))) {
			NL_SET_BAD_ATTR(cb->extack, filter);
			NL_SET_ERR_MSG(cb->extack, "device not found");
			err = -ENODEV;
			goto out;
		}
		ctx->id = max_t(unsigned long, ctx->id, nla_get_u32(filter));
	}
	for (; (dev = vhost_admin_next(&ctx->id)); ctx->id++, ctx->queue = 0) {
		if (filter && ctx->id != nla_get_u32(filter))
			break;
		for (; ctx->queue < dev->nvqs; ctx->queue++) {
			err = vhost_nl_queue_fill(skb, dev, ctx->queue, info);
			if (err)
				goto out;
		}
	}
out:
	mutex_unlock(&vhost_admin_lock);
	return err;
}

/* Tell the monitor group about dev; no owner or backend (see above). */
void vhost_nl_dev_notify(struct vhost_dev *dev, u32 cmd)
{
	struct genl_info info;
	struct sk_buff *ntf;

	lockdep_assert_held(&vhost_admin_lock);
	genl_info_init_ntf(&info, &vhost_nl_family, cmd);
	ntf = genlmsg_new(GENLMSG_DEFAULT_SIZE, GFP_KERNEL);
	if (!ntf)
		return;
	if (vhost_nl_dev_fill(ntf, dev, &info, false)) {
		nlmsg_free(ntf);
		return;
	}
	rcu_read_lock();
	genlmsg_multicast_allns(&vhost_nl_family, ntf, 0, VHOST_NLGRP_MONITOR);
	rcu_read_unlock();
}

int vhost_nl_init(void)
{
	return genl_register_family(&vhost_nl_family);
}

void vhost_nl_exit(void)
{
	genl_unregister_family(&vhost_nl_family);
}
