/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/* Do not edit directly, auto-generated from: */
/*	Documentation/netlink/specs/vhost.yaml */
/* YNL-GEN kernel header */

#ifndef _LINUX_VHOST_GEN_H
#define _LINUX_VHOST_GEN_H

#include <net/netlink.h>
#include <net/genetlink.h>

#include <uapi/linux/vhost_netlink.h>

int vhost_nl_dev_get_doit(struct sk_buff *skb, struct genl_info *info);
int vhost_nl_dev_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb);
int vhost_nl_dev_set_doit(struct sk_buff *skb, struct genl_info *info);
int vhost_nl_queue_get_doit(struct sk_buff *skb, struct genl_info *info);
int vhost_nl_queue_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb);
int vhost_nl_stats_get_dumpit(struct sk_buff *skb, struct netlink_callback *cb);
int vhost_nl_policy_get_doit(struct sk_buff *skb, struct genl_info *info);
int vhost_nl_policy_set_doit(struct sk_buff *skb, struct genl_info *info);
int vhost_nl_defaults_get_doit(struct sk_buff *skb, struct genl_info *info);
int vhost_nl_defaults_set_doit(struct sk_buff *skb, struct genl_info *info);

enum {
	VHOST_NLGRP_MONITOR,
	VHOST_NLGRP_WATCH,
};

extern struct genl_family vhost_nl_family;

#endif /* _LINUX_VHOST_GEN_H */
