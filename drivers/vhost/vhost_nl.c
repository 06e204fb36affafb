// SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause)
/* Do not edit directly, auto-generated from: */
/*	Documentation/netlink/specs/vhost.yaml */
/* YNL-GEN kernel source */

#include <net/netlink.h>
#include <net/genetlink.h>

#include "vhost_nl.h"

#include <uapi/linux/vhost_netlink.h>

/* Integer value ranges */
static const struct netlink_range_validation vhost_a_dev_admin_busypoll_us_range = {
	.max	= VHOST_BUSYPOLL_US_MAX,
};

static const struct netlink_range_validation vhost_a_dev_zcopy_min_len_range = {
	.min	= VHOST_ZCOPY_MIN_LEN_MIN,
	.max	= VHOST_ZCOPY_MIN_LEN_MAX,
};

static const struct netlink_range_validation vhost_a_policy_busypoll_us_max_range = {
	.max	= VHOST_BUSYPOLL_US_MAX,
};

/* VHOST_CMD_DEV_GET - do */
static const struct nla_policy vhost_dev_get_do_nl_policy[VHOST_A_DEV_MATCH_LABEL + 1] = {
	[VHOST_A_DEV_ID] = { .type = NLA_U32, },
	[VHOST_A_DEV_NAME] = { .type = NLA_NUL_STRING, .len = 15, },
	[VHOST_A_DEV_BACKEND_IFINDEX] = { .type = NLA_U32, },
	[VHOST_A_DEV_BACKEND_IFNAME] = { .type = NLA_NUL_STRING, .len = 15, },
	[VHOST_A_DEV_OWNER_PID] = { .type = NLA_U32, },
	[VHOST_A_DEV_MATCH_LABEL] = { .type = NLA_NUL_STRING, .len = VHOST_LABEL_LEN_MAX, },
};

/* VHOST_CMD_DEV_GET - dump */
static const struct nla_policy vhost_dev_get_dump_nl_policy[VHOST_A_DEV_MATCH_LABEL + 1] = {
	[VHOST_A_DEV_BACKEND_IFINDEX] = { .type = NLA_U32, },
	[VHOST_A_DEV_BACKEND_IFNAME] = { .type = NLA_NUL_STRING, .len = 15, },
	[VHOST_A_DEV_OWNER_PID] = { .type = NLA_U32, },
	[VHOST_A_DEV_MATCH_LABEL] = { .type = NLA_NUL_STRING, .len = VHOST_LABEL_LEN_MAX, },
};

/* VHOST_CMD_DEV_SET - do */
static const struct nla_policy vhost_dev_set_nl_policy[VHOST_A_DEV_MATCH_LABEL + 1] = {
	[VHOST_A_DEV_ID] = { .type = NLA_U32, },
	[VHOST_A_DEV_NAME] = { .type = NLA_NUL_STRING, .len = 15, },
	[VHOST_A_DEV_BACKEND_IFINDEX] = { .type = NLA_U32, },
	[VHOST_A_DEV_BACKEND_IFNAME] = { .type = NLA_NUL_STRING, .len = 15, },
	[VHOST_A_DEV_ADMIN_BUSYPOLL_US] = NLA_POLICY_FULL_RANGE(NLA_U32, &vhost_a_dev_admin_busypoll_us_range),
	[VHOST_A_DEV_ZEROCOPY] = NLA_POLICY_MAX(NLA_U32, 1),
	[VHOST_A_DEV_ZCOPY_MIN_LEN] = NLA_POLICY_FULL_RANGE(NLA_U32, &vhost_a_dev_zcopy_min_len_range),
	[VHOST_A_DEV_METAMAP] = NLA_POLICY_MAX(NLA_U32, 2),
	[VHOST_A_DEV_OWNER_PID] = { .type = NLA_U32, },
	[VHOST_A_DEV_MATCH_LABEL] = { .type = NLA_NUL_STRING, .len = VHOST_LABEL_LEN_MAX, },
	[VHOST_A_DEV_LABEL] = { .type = NLA_NUL_STRING, .len = VHOST_LABEL_LEN_MAX, },
};

/* VHOST_CMD_QUEUE_GET - do */
static const struct nla_policy vhost_queue_get_do_nl_policy[VHOST_A_QUEUE_INDEX + 1] = {
	[VHOST_A_QUEUE_DEV_ID] = { .type = NLA_U32, },
	[VHOST_A_QUEUE_INDEX] = { .type = NLA_U32, },
};

/* VHOST_CMD_QUEUE_GET - dump */
static const struct nla_policy vhost_queue_get_dump_nl_policy[VHOST_A_QUEUE_DEV_ID + 1] = {
	[VHOST_A_QUEUE_DEV_ID] = { .type = NLA_U32, },
};

/* VHOST_CMD_STATS_GET - dump */
static const struct nla_policy vhost_stats_get_nl_policy[VHOST_A_STATS_SCOPE + 1] = {
	[VHOST_A_STATS_DEV_ID] = { .type = NLA_U32, },
	[VHOST_A_STATS_SCOPE] = NLA_POLICY_MASK(NLA_UINT, 0x1),
};

/* VHOST_CMD_POLICY_SET - do */
static const struct nla_policy vhost_policy_set_nl_policy[VHOST_A_POLICY_BUSYPOLL_US_MAX + 1] = {
	[VHOST_A_POLICY_GRANTS] = NLA_POLICY_MASK(NLA_UINT, 0x1f),
	[VHOST_A_POLICY_BUSYPOLL_US_MAX] = NLA_POLICY_FULL_RANGE(NLA_U32, &vhost_a_policy_busypoll_us_max_range),
};

/* VHOST_CMD_DEFAULTS_SET - do */
static const struct nla_policy vhost_defaults_set_nl_policy[VHOST_A_DEV_DEFAULTS_UNSET + 1] = {
	[VHOST_A_DEV_ADMIN_BUSYPOLL_US] = NLA_POLICY_FULL_RANGE(NLA_U32, &vhost_a_dev_admin_busypoll_us_range),
	[VHOST_A_DEV_ZEROCOPY] = NLA_POLICY_MAX(NLA_U32, 1),
	[VHOST_A_DEV_ZCOPY_MIN_LEN] = NLA_POLICY_FULL_RANGE(NLA_U32, &vhost_a_dev_zcopy_min_len_range),
	[VHOST_A_DEV_METAMAP] = NLA_POLICY_MAX(NLA_U32, 2),
	[VHOST_A_DEV_DEFAULTS_UNSET] = NLA_POLICY_MASK(NLA_UINT, 0x1f),
};

/* Ops table for vhost */
static const struct genl_split_ops vhost_nl_ops[] = {
	{
		.cmd		= VHOST_CMD_DEV_GET,
		.doit		= vhost_nl_dev_get_doit,
		.policy		= vhost_dev_get_do_nl_policy,
		.maxattr	= VHOST_A_DEV_MATCH_LABEL,
		.flags		= GENL_CMD_CAP_DO,
	},
	{
		.cmd		= VHOST_CMD_DEV_GET,
		.dumpit		= vhost_nl_dev_get_dumpit,
		.policy		= vhost_dev_get_dump_nl_policy,
		.maxattr	= VHOST_A_DEV_MATCH_LABEL,
		.flags		= GENL_CMD_CAP_DUMP,
	},
	{
		.cmd		= VHOST_CMD_DEV_SET,
		.doit		= vhost_nl_dev_set_doit,
		.policy		= vhost_dev_set_nl_policy,
		.maxattr	= VHOST_A_DEV_MATCH_LABEL,
		.flags		= GENL_UNS_ADMIN_PERM | GENL_CMD_CAP_DO,
	},
	{
		.cmd		= VHOST_CMD_QUEUE_GET,
		.doit		= vhost_nl_queue_get_doit,
		.policy		= vhost_queue_get_do_nl_policy,
		.maxattr	= VHOST_A_QUEUE_INDEX,
		.flags		= GENL_CMD_CAP_DO,
	},
	{
		.cmd		= VHOST_CMD_QUEUE_GET,
		.dumpit		= vhost_nl_queue_get_dumpit,
		.policy		= vhost_queue_get_dump_nl_policy,
		.maxattr	= VHOST_A_QUEUE_DEV_ID,
		.flags		= GENL_CMD_CAP_DUMP,
	},
	{
		.cmd		= VHOST_CMD_STATS_GET,
		.dumpit		= vhost_nl_stats_get_dumpit,
		.policy		= vhost_stats_get_nl_policy,
		.maxattr	= VHOST_A_STATS_SCOPE,
		.flags		= GENL_CMD_CAP_DUMP,
	},
	{
		.cmd	= VHOST_CMD_POLICY_GET,
		.doit	= vhost_nl_policy_get_doit,
		.flags	= GENL_CMD_CAP_DO,
	},
	{
		.cmd		= VHOST_CMD_POLICY_SET,
		.doit		= vhost_nl_policy_set_doit,
		.policy		= vhost_policy_set_nl_policy,
		.maxattr	= VHOST_A_POLICY_BUSYPOLL_US_MAX,
		.flags		= GENL_ADMIN_PERM | GENL_CMD_CAP_DO,
	},
	{
		.cmd	= VHOST_CMD_DEFAULTS_GET,
		.doit	= vhost_nl_defaults_get_doit,
		.flags	= GENL_CMD_CAP_DO,
	},
	{
		.cmd		= VHOST_CMD_DEFAULTS_SET,
		.doit		= vhost_nl_defaults_set_doit,
		.policy		= vhost_defaults_set_nl_policy,
		.maxattr	= VHOST_A_DEV_DEFAULTS_UNSET,
		.flags		= GENL_UNS_ADMIN_PERM | GENL_CMD_CAP_DO,
	},
};

static const struct genl_multicast_group vhost_nl_mcgrps[] = {
	[VHOST_NLGRP_MONITOR] = { "monitor", .flags = GENL_MCAST_CAP_NET_ADMIN, },
	[VHOST_NLGRP_WATCH] = { "watch", },
};

struct genl_family vhost_nl_family __ro_after_init = {
	.name		= VHOST_FAMILY_NAME,
	.version	= VHOST_FAMILY_VERSION,
	.netnsok	= true,
	.parallel_ops	= true,
	.module		= THIS_MODULE,
	.split_ops	= vhost_nl_ops,
	.n_split_ops	= ARRAY_SIZE(vhost_nl_ops),
	.mcgrps		= vhost_nl_mcgrps,
	.n_mcgrps	= ARRAY_SIZE(vhost_nl_mcgrps),
};
