/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-3-Clause) */
/* Do not edit directly, auto-generated from: */
/*	Documentation/netlink/specs/vhost.yaml */
/* YNL-GEN uapi header */

#ifndef _UAPI_LINUX_VHOST_NETLINK_H
#define _UAPI_LINUX_VHOST_NETLINK_H

#define VHOST_FAMILY_NAME	"vhost"
#define VHOST_FAMILY_VERSION	1

/**
 * enum vhost_dev_type - Kind of vhost device.
 * @VHOST_DEV_TYPE_NET: A vhost-net device (/dev/vhost-net).
 */
enum vhost_dev_type {
	VHOST_DEV_TYPE_NET = 1,
};

/**
 * enum vhost_queue_type - Direction of a virtqueue, as seen from the guest.
 */
enum vhost_queue_type {
	VHOST_QUEUE_TYPE_RX,
	VHOST_QUEUE_TYPE_TX,
};

/**
 * enum vhost_stats_scope - What a statistics reply covers.
 */
enum vhost_stats_scope {
	VHOST_STATS_SCOPE_QUEUE = 1,
};

/**
 * enum vhost_metamap_mode - How a queue reads the descriptor table and avail
 *   ring and writes the used ring (see vhost-metamap.rst).
 * @VHOST_METAMAP_MODE_OFF: Every ring access through uaccess, one at a time,
 *   as Linux 6.12 ships it.
 * @VHOST_METAMAP_MODE_MAP: The direct map: the avail entries and descriptors a
 *   batch needs are read ahead from the kernel mapping of the ring pages, and
 *   the used ring is written there. While the map cannot serve the queue
 *   (invalidated, dirty logging, memory it refuses), the read-ahead goes
 *   through uaccess as in batch. vhost-net also reads its TX buffers through
 *   kernel addresses of guest memory (the payload map).
 * @VHOST_METAMAP_MODE_BATCH: The read-ahead without the map: the avail entries
 *   and descriptors a batch needs are read in one uaccess section; the used
 *   ring is written through uaccess. No mm notifier is registered.
 */
enum vhost_metamap_mode {
	VHOST_METAMAP_MODE_OFF,
	VHOST_METAMAP_MODE_MAP,
	VHOST_METAMAP_MODE_BATCH,
};

/**
 * enum vhost_busypoll_source - What decides the busy-poll time of a queue.
 * @VHOST_BUSYPOLL_SOURCE_OWNER: The owner's VHOST_SET_VRING_BUSYLOOP_TIMEOUT,
 *   the larger (or both are 0).
 * @VHOST_BUSYPOLL_SOURCE_ADMIN: The device's admin-busypoll-us, the larger.
 * @VHOST_BUSYPOLL_SOURCE_POLICY: The bound of the host's policy
 *   (busypoll-us-max of the device's network namespace, a tenant's), which cut
 *   the larger of the two.
 */
enum vhost_busypoll_source {
	VHOST_BUSYPOLL_SOURCE_OWNER,
	VHOST_BUSYPOLL_SOURCE_ADMIN,
	VHOST_BUSYPOLL_SOURCE_POLICY,
};

/**
 * enum vhost_tunable - The tunables of a device (attributes of dev-set), as a
 *   namespace's policy grants them.
 */
enum vhost_tunable {
	VHOST_TUNABLE_ADMIN_BUSYPOLL_US = 1,
	VHOST_TUNABLE_ZEROCOPY = 2,
	VHOST_TUNABLE_ZCOPY_MIN_LEN = 4,
	VHOST_TUNABLE_METAMAP = 8,
	VHOST_TUNABLE_LABEL = 16,
};

#define VHOST_BUSYPOLL_US_MAX	1000000
#define VHOST_ZCOPY_MIN_LEN_MIN	256
#define VHOST_ZCOPY_MIN_LEN_MAX	65536
#define VHOST_LABEL_LEN_MAX	255

enum {
	VHOST_A_DEV_ID = 1,
	VHOST_A_DEV_NAME,
	VHOST_A_DEV_TYPE,
	VHOST_A_DEV_OWNER_PID,
	VHOST_A_DEV_BACKEND_IFINDEX,
	VHOST_A_DEV_BACKEND_IFNAME,
	VHOST_A_DEV_BACKEND_NETNSID,
	VHOST_A_DEV_FEATURES,
	VHOST_A_DEV_NUM_QUEUES,
	VHOST_A_DEV_ADMIN_BUSYPOLL_US,
	VHOST_A_DEV_ZEROCOPY,
	VHOST_A_DEV_ZCOPY_MIN_LEN,
	VHOST_A_DEV_METAMAP,
	VHOST_A_DEV_LABEL,
	VHOST_A_DEV_MATCH_LABEL,
	VHOST_A_DEV_DEFAULTS_UNSET,

	__VHOST_A_DEV_MAX,
	VHOST_A_DEV_MAX = (__VHOST_A_DEV_MAX - 1)
};

enum {
	VHOST_A_QUEUE_DEV_ID = 1,
	VHOST_A_QUEUE_INDEX,
	VHOST_A_QUEUE_TYPE,
	VHOST_A_QUEUE_NUM,
	VHOST_A_QUEUE_OWNER_BUSYPOLL_US,
	VHOST_A_QUEUE_BUSYPOLL_US,
	VHOST_A_QUEUE_METAMAP_VALID,
	VHOST_A_QUEUE_WORKER_PID,
	VHOST_A_QUEUE_BUSYPOLL_SOURCE,

	__VHOST_A_QUEUE_MAX,
	VHOST_A_QUEUE_MAX = (__VHOST_A_QUEUE_MAX - 1)
};

enum {
	VHOST_A_STATS_DEV_ID = 1,
	VHOST_A_STATS_QUEUE_INDEX,
	VHOST_A_STATS_QUEUE_TYPE,
	VHOST_A_STATS_SCOPE,
	VHOST_A_STATS_RX_PACKETS,
	VHOST_A_STATS_RX_BYTES,
	VHOST_A_STATS_TX_PACKETS,
	VHOST_A_STATS_TX_BYTES,
	VHOST_A_STATS_KICKS,
	VHOST_A_STATS_CALLS,
	VHOST_A_STATS_BUSYPOLL_LOOPS,
	VHOST_A_STATS_BUSYPOLL_NS,
	VHOST_A_STATS_BUSYPOLL_FOUND,
	VHOST_A_STATS_ZCOPY_SENT,
	VHOST_A_STATS_ZCOPY_COPIED,
	VHOST_A_STATS_ZCOPY_PENDING,
	VHOST_A_STATS_ZCOPY_HOL_STALLS,
	VHOST_A_STATS_METAMAP_FAST,
	VHOST_A_STATS_METAMAP_FALLBACK,
	VHOST_A_STATS_METAMAP_INVALIDATIONS,
	VHOST_A_STATS_METAMAP_REMAPS,
	VHOST_A_STATS_METAMAP_REMAP_FAILURES,
	VHOST_A_STATS_METAMAP_REFUSED,
	VHOST_A_STATS_TX_ERRORS,
	VHOST_A_STATS_ZCOPY_FALLBACK,
	VHOST_A_STATS_ZCOPY_BACKOFF,
	VHOST_A_STATS_METAMAP_UACCESS_FILLS,
	VHOST_A_STATS_USED_ENTRIES,
	VHOST_A_STATS_ZCOPY_IN_ORDER,
	VHOST_A_STATS_METAMAP_POISONED,

	__VHOST_A_STATS_MAX,
	VHOST_A_STATS_MAX = (__VHOST_A_STATS_MAX - 1)
};

enum {
	VHOST_A_POLICY_GRANTS = 1,
	VHOST_A_POLICY_BUSYPOLL_US_MAX,
	VHOST_A_POLICY_TENANT,

	__VHOST_A_POLICY_MAX,
	VHOST_A_POLICY_MAX = (__VHOST_A_POLICY_MAX - 1)
};

enum {
	VHOST_CMD_DEV_GET = 1,
	VHOST_CMD_DEV_SET,
	VHOST_CMD_QUEUE_GET,
	VHOST_CMD_STATS_GET,
	VHOST_CMD_DEV_ADD_NTF,
	VHOST_CMD_DEV_DEL_NTF,
	VHOST_CMD_DEV_CHANGE_NTF,
	VHOST_CMD_POLICY_GET,
	VHOST_CMD_POLICY_SET,
	VHOST_CMD_DEFAULTS_GET,
	VHOST_CMD_DEFAULTS_SET,

	__VHOST_CMD_MAX,
	VHOST_CMD_MAX = (__VHOST_CMD_MAX - 1)
};

#define VHOST_MCGRP_MONITOR	"monitor"
#define VHOST_MCGRP_WATCH	"watch"

#endif /* _UAPI_LINUX_VHOST_NETLINK_H */
