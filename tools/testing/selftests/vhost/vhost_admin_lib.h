/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the admin plane selftests (vhost_admin*.c), over the C library
 * the kernel's YNL generator makes from Documentation/netlink/specs/vhost.yaml
 * (vhost-user.h) and tools/net/ynl/lib (ynl.h).
 */
#ifndef VHOST_ADMIN_LIB_H
#define VHOST_ADMIN_LIB_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <net/if.h>
#include <ynl.h>

#include "vhost-user.h"

/* A socket of the family in the caller's network namespace, or NULL. */
struct ynl_sock *adm_open(void);
/* The same, subscribed to the monitor group; NULL with *err = -errno. */
struct ynl_sock *adm_monitor(int *err);
/* The last request's error as -errno (0: none), and its extack message. */
int adm_err(struct ynl_sock *ys);
bool adm_msg_has(struct ynl_sock *ys, const char *text);

/* dev-get by id or name: the reply (vhost_dev_get_rsp_free()), or NULL. */
struct vhost_dev_get_rsp *adm_get(struct ynl_sock *ys, uint32_t id);
struct vhost_dev_get_rsp *adm_get_name(struct ynl_sock *ys, const char *name);

/* Tunables of a dev-set; -1 leaves one out of the request. */
struct adm_tun {
	int64_t busypoll_us, zerocopy, zcopy_min_len, metamap;
};

#define ADM_TUN(b, z, l, m) ((struct adm_tun){ (b), (z), (l), (m) })
#define ADM_TUN_NONE ADM_TUN(-1, -1, -1, -1)

/* dev-set of device id; 0 or -errno. */
int adm_set(struct ynl_sock *ys, uint32_t id, struct adm_tun t);

/* A dev-get dump of every device (vhost_dev_get_list_free()), or NULL. */
struct vhost_dev_get_list *adm_dev_dump(struct ynl_sock *ys);
/* Ids of a dev-get dump in dump order; how many (up to max), or -errno. */
int adm_dump_ids(struct ynl_sock *ys, uint32_t *ids, int max);
bool adm_dump_has(struct ynl_sock *ys, uint32_t id);

/* One stats-get reply: counters by VHOST_A_STATS_* attribute. */
struct adm_stats {
	uint32_t dev_id;
	int queue;			/* queue index, -1 for a device total */
	int queue_type;
	bool has[VHOST_A_STATS_MAX + 1];
	uint64_t v[VHOST_A_STATS_MAX + 1];
};

/*
 * stats-get dump: of device id (or every device if all), device totals or
 * per queue; up to max replies into out.  Returns how many, or -errno.
 */
int adm_stats(struct ynl_sock *ys, uint32_t id, bool all, bool per_queue,
	      struct adm_stats *out, int max);
/* A device's totals and its two queues' counters (rx, tx). */
int adm_stats_dev(struct ynl_sock *ys, uint32_t id, struct adm_stats *dev,
		  struct adm_stats *rxq, struct adm_stats *txq);
/*
 * The zero-copy outcomes of TX packets in s: with zero-copy on and nothing
 * in flight, tx-packets equals this sum (the spec's tx-packets identity).
 */
uint64_t adm_zcopy_outcomes(const struct adm_stats *s);
/* The spec's name of counter attr ("tx-packets"), or NULL. */
const char *adm_stat_name(int attr);
#define ADM_FIRST_COUNTER VHOST_A_STATS_RX_PACKETS

/* A notification, copied out of the library's. */
struct adm_ntf {
	int cmd;
	struct vhost_dev_get_rsp dev;	/* name, backend_ifname, label NULL */
	char name[IFNAMSIZ];
	char ifname[IFNAMSIZ];
	char label[VHOST_LABEL_LEN_MAX + 1];
};

/* The next notification within timeout_ms: 0, or -ETIMEDOUT / -errno. */
int adm_ntf_next(struct ynl_sock *ys, int timeout_ms, struct adm_ntf *n);
/* Notifications until none came for quiet_ms; how many (up to max kept). */
int adm_ntf_drain(struct ynl_sock *ys, int quiet_ms, struct adm_ntf *n,
		  int max);

/* Id of the device of an open /dev/vhost-net fd (vhostN), or -errno. */
int64_t vhost_fd_id(int fd);
/* An integer (decimal or 0x hex) from /sys/class/vhost/<name>/<file>. */
int sysfs_u64(const char *name, const char *file, uint64_t *v);
/* A module parameter (an integer, or Y/N as 1/0). */
int module_param_u64(const char *module, const char *param, uint64_t *v);
/* Monotonic milliseconds. */
double now_ms(void);

/*
 * For forked children, which cannot use the harness's assertions: print
 * the first check that failed and exit 1.  wait_child() returns the
 * child's exit status (128 + signal when killed), or -1.
 */
#define CHILD_CHECK(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "# %s:%d: child %d: %s\n",	\
				__FILE__, __LINE__, getpid(), #cond);	\
			fflush(stderr);					\
			_exit(1);					\
		}							\
	} while (0)
int wait_child(pid_t pid);

#endif
