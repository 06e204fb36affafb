// SPDX-License-Identifier: GPL-2.0
/*
 * The vhost admin plane in one network namespace: the "vhost" generic
 * netlink family (through the library YNL generates from its spec),
 * /sys/class/vhost and the per-device tunables, checked against what the
 * userspace driver of vhost_net_lib really sent, received, kicked and was
 * called for.  Namespaces and user namespaces: vhost_admin_ns.c; a stalled
 * device and dumps of hundreds of devices: vhost_admin_scale.c.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/netlink.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <linux/vhost.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "vhost_admin_lib.h"
#include "vhost_net_lib.h"

/* How long "no notification" is waited for. */
#define QUIET_MS 300

FIXTURE(admin) {
	struct ynl_sock *ys;
	struct vnet n;
	bool open;
	char name[IFNAMSIZ];
	uint32_t id;
};

FIXTURE_SETUP(admin)
{
	memset(&self->n, 0, sizeof(self->n));
	self->ys = adm_open();
	/* The family is the feature under test: without it, a failure. */
	ASSERT_NE(NULL, self->ys)
		TH_LOG("no vhost generic netlink family (the vhost_admin module)");
}

FIXTURE_TEARDOWN(admin)
{
	if (self->open)
		vnet_close(&self->n);
	if (self->ys)
		ynl_sock_destroy(self->ys);
}

/* A device with rings set up and its backend attached; its name and id. */
static int open_dev_opts(FIXTURE_DATA(admin) *self, const struct vnet_opts *o)
{
	int r = vnet_open(&self->n, o);
	int64_t id;

	if (r)
		return r;
	self->open = true;
	vnet_rx_fill(&self->n);
	id = vhost_fd_id(self->n.vhost_fd);
	if (id < 0)
		return id;
	self->id = id;
	snprintf(self->name, sizeof(self->name), "vhost%u", self->id);
	return 0;
}

static int open_dev(FIXTURE_DATA(admin) *self, bool event_idx)
{
	struct vnet_opts o = { .ring_num = 256, .event_idx = event_idx };

	return open_dev_opts(self, &o);
}

static void close_dev(FIXTURE_DATA(admin) *self)
{
	vnet_close(&self->n);
	self->open = false;
}

TEST_F(admin, dump_lists_exactly_the_open_devices)
{
	uint32_t ids[3], got[16];
	int fds[3], i, j, n, seen;

	for (i = 0; i < 3; i++) {
		fds[i] = open("/dev/vhost-net", O_RDWR);
		ASSERT_GE(fds[i], 0);
		ASSERT_LE(0, vhost_fd_id(fds[i]));
		ids[i] = vhost_fd_id(fds[i]);
	}
	for (int round = 0; round < 3; round++) {
		n = adm_dump_ids(self->ys, got, 16);
		ASSERT_EQ(3 - round, n) TH_LOG("%s", self->ys->err.msg);
		for (i = round, seen = 0; i < 3; i++)
			for (j = 0; j < n; j++)
				seen += got[j] == ids[i];
		EXPECT_EQ(3 - round, seen);
		/* in id order */
		for (j = 1; j < n; j++)
			EXPECT_LT(got[j - 1], got[j]);
		/* Closing one removes it, and only it. */
		close(fds[round]);
	}
	EXPECT_EQ(0, adm_dump_ids(self->ys, got, 16));
}

TEST_F(admin, get_reports_device_state)
{
	struct vhost_dev_get_rsp *d, *d2;
	struct vhost_queue_get_req *qr;
	struct vhost_queue_get_rsp *q;
	uint64_t v, busy, minlen, zc;
	int map;

	ASSERT_EQ(0, module_param_u64("vhost_admin", "busypoll_us", &busy));
	ASSERT_EQ(0, module_param_u64("vhost_admin", "zcopy_min_len", &minlen));
	ASSERT_EQ(0, module_param_u64("vhost_net", "experimental_zcopytx", &zc));
	map = metamap_get_default();
	ASSERT_LE(0, map);
	ASSERT_EQ(0, open_dev(self, true));
	d = adm_get_name(self->ys, self->name);
	ASSERT_NE(NULL, d) TH_LOG("%s", self->ys->err.msg);
	EXPECT_EQ(self->id, d->id);
	ASSERT_NE(0, d->_present.name_len);
	EXPECT_STREQ(self->name, d->name);
	EXPECT_EQ(VHOST_DEV_TYPE_NET, d->type);
	EXPECT_EQ(2, d->num_queues);
	EXPECT_EQ(self->n.features, d->features);
	ASSERT_TRUE(!!d->_present.owner_pid);
	EXPECT_EQ(getpid(), d->owner_pid);
	ASSERT_NE(0, d->_present.backend_ifname_len);
	EXPECT_STREQ(self->n.ifname, d->backend_ifname);
	EXPECT_EQ(if_nametoindex(self->n.ifname), d->backend_ifindex);
	/* the TAP is in the device's own namespace */
	EXPECT_FALSE(!!d->_present.backend_netnsid);
	/* the module parameters' defaults */
	ASSERT_TRUE(d->_present.admin_busypoll_us && d->_present.zerocopy &&
		    d->_present.zcopy_min_len && d->_present.metamap);
	EXPECT_EQ(busy, d->admin_busypoll_us);
	EXPECT_EQ(!!zc, d->zerocopy);
	EXPECT_EQ(minlen, d->zcopy_min_len);
	EXPECT_EQ(map, d->metamap);

	/* by id, the same device */
	d2 = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d2);
	EXPECT_STREQ(self->name, d2->name);
	vhost_dev_get_rsp_free(d2);

	/* sysfs agrees */
	ASSERT_EQ(0, sysfs_u64(self->name, "owner_pid", &v));
	EXPECT_EQ(getpid(), v);
	ASSERT_EQ(0, sysfs_u64(self->name, "backend_ifindex", &v));
	EXPECT_EQ(d->backend_ifindex, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "features", &v));
	EXPECT_EQ(self->n.features, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "num_queues", &v));
	EXPECT_EQ(2, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "zcopy_min_len", &v));
	EXPECT_EQ(minlen, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "queues/vq1/num", &v));
	EXPECT_EQ(256, v);
	vhost_dev_get_rsp_free(d);

	/* each queue */
	for (uint32_t i = 0; i < 2; i++) {
		qr = vhost_queue_get_req_alloc();
		vhost_queue_get_req_set_dev_id(qr, self->id);
		vhost_queue_get_req_set_index(qr, i);
		q = vhost_queue_get(self->ys, qr);
		vhost_queue_get_req_free(qr);
		ASSERT_NE(NULL, q) TH_LOG("%s", self->ys->err.msg);
		EXPECT_EQ(self->id, q->dev_id);
		EXPECT_EQ(i, q->index);
		EXPECT_EQ(i == VNET_TX ? VHOST_QUEUE_TYPE_TX : VHOST_QUEUE_TYPE_RX,
			  q->type);
		EXPECT_EQ(256, q->num);
		EXPECT_EQ(0, q->owner_busypoll_us);
		EXPECT_EQ(busy, q->busypoll_us);
		EXPECT_TRUE(!!q->_present.metamap_valid);
		vhost_queue_get_rsp_free(q);
	}
}

TEST_F(admin, missing_device_is_enodev)
{
	struct vhost_queue_get_req *qr;
	struct vhost_dev_get_req *req;
	struct adm_stats st;
	char pad[IFNAMSIZ];

	EXPECT_EQ(NULL, adm_get_name(self->ys, "vhost999999"));
	EXPECT_EQ(-ENODEV, adm_err(self->ys));
	EXPECT_TRUE(adm_msg_has(self->ys, "device not found"))
		TH_LOG("%s", self->ys->err.msg);
	EXPECT_NE(0, self->ys->err.attr_offs);
	EXPECT_EQ(NULL, adm_get(self->ys, 999999));
	EXPECT_EQ(-ENODEV, adm_err(self->ys));
	EXPECT_EQ(-ENODEV, adm_set(self->ys, 999999, ADM_TUN(10, -1, -1, -1)));
	EXPECT_TRUE(adm_msg_has(self->ys, "device not found"));
	/* names that are not exactly vhost<id> */
	ASSERT_EQ(0, open_dev(self, true));
	snprintf(pad, sizeof(pad), "vhost0%u", self->id);
	EXPECT_EQ(NULL, adm_get_name(self->ys, pad));
	EXPECT_EQ(-ENODEV, adm_err(self->ys));
	/* by a backend that is not one */
	req = vhost_dev_get_req_alloc();
	vhost_dev_get_req_set_backend_ifindex(req, 1);	/* lo */
	EXPECT_EQ(NULL, vhost_dev_get(self->ys, req));
	EXPECT_EQ(-ENODEV, adm_err(self->ys));
	vhost_dev_get_req_set_backend_ifname(req, "nosuchif0");
	EXPECT_EQ(NULL, vhost_dev_get(self->ys, req));
	EXPECT_EQ(-ENODEV, adm_err(self->ys));
	vhost_dev_get_req_free(req);
	/* no selector at all */
	req = vhost_dev_get_req_alloc();
	EXPECT_EQ(NULL, vhost_dev_get(self->ys, req));
	EXPECT_EQ(-EINVAL, adm_err(self->ys));
	EXPECT_TRUE(adm_msg_has(self->ys, "required"))
		TH_LOG("%s", self->ys->err.msg);
	vhost_dev_get_req_free(req);
	/* the other ops */
	qr = vhost_queue_get_req_alloc();
	vhost_queue_get_req_set_dev_id(qr, 999999);
	vhost_queue_get_req_set_index(qr, 0);
	EXPECT_EQ(NULL, vhost_queue_get(self->ys, qr));
	EXPECT_EQ(-ENODEV, adm_err(self->ys));
	vhost_queue_get_req_free(qr);
	EXPECT_EQ(-ENODEV, adm_stats(self->ys, 999999, false, false, &st, 1));
	EXPECT_TRUE(adm_msg_has(self->ys, "device not found"))
		TH_LOG("%s", self->ys->err.msg);
}

TEST_F(admin, out_of_range_changes_nothing)
{
	static const struct { struct adm_tun t; const char *what; } bad[] = {
		{ ADM_TUN(VHOST_BUSYPOLL_US_MAX + 1, -1, -1, -1), "busypoll" },
		{ ADM_TUN(-1, 2, -1, -1), "zerocopy" },
		{ ADM_TUN(-1, -1, 0, -1), "zcopy-min-len 0" },
		{ ADM_TUN(-1, -1, VHOST_ZCOPY_MIN_LEN_MAX + 1, -1), "zcopy-min-len" },
		{ ADM_TUN(-1, -1, -1, VHOST_METAMAP_MODE_BATCH + 1), "metamap" },
		/* valid values beside an invalid one: none applied */
		{ ADM_TUN(77, 1, 300, VHOST_METAMAP_MODE_BATCH + 1),
		  "all but metamap valid" },
		{ ADM_TUN(77, 1, 0, 0), "all but zcopy-min-len valid" },
	};
	struct vhost_dev_get_rsp *before, *after;
	struct vhost_queue_get_req *qr;
	unsigned int i;

	ASSERT_EQ(0, open_dev(self, true));
	before = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, before);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-ERANGE, adm_set(self->ys, self->id, bad[i].t))
			TH_LOG("%s accepted", bad[i].what);
		EXPECT_NE(0, self->ys->err.attr_offs)
			TH_LOG("%s: no bad attribute", bad[i].what);
	}
	/* nothing to set at all */
	EXPECT_EQ(-EINVAL, adm_set(self->ys, self->id, ADM_TUN_NONE));
	EXPECT_TRUE(adm_msg_has(self->ys, "no tunable or label to set"))
		TH_LOG("%s", self->ys->err.msg);
	/* queue index out of range */
	qr = vhost_queue_get_req_alloc();
	vhost_queue_get_req_set_dev_id(qr, self->id);
	vhost_queue_get_req_set_index(qr, 2);
	EXPECT_EQ(NULL, vhost_queue_get(self->ys, qr));
	EXPECT_EQ(-ENOENT, adm_err(self->ys));
	EXPECT_TRUE(adm_msg_has(self->ys, "no such queue"));
	EXPECT_NE(0, self->ys->err.attr_offs);
	vhost_queue_get_req_free(qr);

	after = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, after);
	EXPECT_EQ(before->admin_busypoll_us, after->admin_busypoll_us);
	EXPECT_EQ(before->zerocopy, after->zerocopy);
	EXPECT_EQ(before->zcopy_min_len, after->zcopy_min_len);
	EXPECT_EQ(before->metamap, after->metamap);
	vhost_dev_get_rsp_free(before);
	vhost_dev_get_rsp_free(after);
}

static int queue_busypoll(struct ynl_sock *ys, uint32_t id, uint32_t index,
			  uint32_t *owner, uint32_t *eff)
{
	struct vhost_queue_get_req *qr = vhost_queue_get_req_alloc();
	struct vhost_queue_get_rsp *q;

	vhost_queue_get_req_set_dev_id(qr, id);
	vhost_queue_get_req_set_index(qr, index);
	q = vhost_queue_get(ys, qr);
	vhost_queue_get_req_free(qr);
	if (!q)
		return adm_err(ys) ?: -EIO;
	*owner = q->owner_busypoll_us;
	*eff = q->busypoll_us;
	vhost_queue_get_rsp_free(q);
	return 0;
}

TEST_F(admin, set_applies_all_and_notifies)
{
	struct vhost_vring_state t = { .index = VNET_TX, .num = 100 };
	struct vhost_dev_get_rsp *d;
	struct adm_ntf ntf[4];
	struct ynl_sock *mon;
	uint32_t owner, eff;
	uint64_t v;
	int err, old_id;

	ASSERT_EQ(0, open_dev(self, true));
	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon) TH_LOG("monitor: %s", strerror(-err));

	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(50, 1, 512, 0)))
		TH_LOG("%s", self->ys->err.msg);
	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(50, d->admin_busypoll_us);
	EXPECT_EQ(1, d->zerocopy);
	EXPECT_EQ(512, d->zcopy_min_len);
	EXPECT_EQ(0, d->metamap);
	vhost_dev_get_rsp_free(d);
	ASSERT_EQ(0, sysfs_u64(self->name, "admin_busypoll_us", &v));
	EXPECT_EQ(50, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "zerocopy", &v));
	EXPECT_EQ(1, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "zcopy_min_len", &v));
	EXPECT_EQ(512, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "metamap", &v));
	EXPECT_EQ(0, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "queues/vq1/metamap_valid", &v));
	EXPECT_EQ(0, v);

	/*
	 * The admin's busy-poll time and the owner's per-queue one are
	 * reported apart; a queue uses the larger.
	 */
	ASSERT_EQ(0, ioctl(self->n.vhost_fd, VHOST_SET_VRING_BUSYLOOP_TIMEOUT, &t));
	ASSERT_EQ(0, queue_busypoll(self->ys, self->id, VNET_TX, &owner, &eff));
	EXPECT_EQ(100, owner);
	EXPECT_EQ(100, eff);
	ASSERT_EQ(0, queue_busypoll(self->ys, self->id, VNET_RX, &owner, &eff));
	EXPECT_EQ(0, owner);
	EXPECT_EQ(50, eff);
	ASSERT_EQ(0, sysfs_u64(self->name, "queues/vq1/owner_busypoll_us", &v));
	EXPECT_EQ(100, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "queues/vq0/busypoll_us", &v));
	EXPECT_EQ(50, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "admin_busypoll_us", &v));
	EXPECT_EQ(50, v);

	/* change, then close: two notifications, then an open: one more */
	old_id = self->id;
	close_dev(self);
	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_LE(3, adm_ntf_drain(mon, QUIET_MS, ntf, 4));
	EXPECT_EQ(VHOST_CMD_DEV_CHANGE_NTF, ntf[0].cmd);
	EXPECT_EQ(old_id, ntf[0].dev.id);
	EXPECT_EQ(50, ntf[0].dev.admin_busypoll_us);
	EXPECT_EQ(1, ntf[0].dev.zerocopy);
	/* Notifications carry the backend, never the owner. */
	EXPECT_FALSE(!!ntf[0].dev._present.owner_pid);
	EXPECT_TRUE(!!ntf[0].dev._present.backend_ifindex);
	EXPECT_EQ(VHOST_CMD_DEV_DEL_NTF, ntf[1].cmd);
	EXPECT_EQ(old_id, ntf[1].dev.id);
	EXPECT_EQ(VHOST_CMD_DEV_ADD_NTF, ntf[2].cmd);
	EXPECT_EQ(self->id, ntf[2].dev.id);
	EXPECT_STREQ(self->name, ntf[2].name);
	ynl_sock_destroy(mon);
}

/*
 * The notifications of the next QUIET_MS: exactly cmds, about device id;
 * the last one into *last.
 */
static int expect_ntfs(struct ynl_sock *mon, uint32_t id, const int *cmds,
		       int ncmds, struct adm_ntf *last)
{
	struct adm_ntf ntf[8];
	int n = adm_ntf_drain(mon, QUIET_MS, ntf, 8), i, bad = n != ncmds;

	if (last)
		memset(last, 0, sizeof(*last));

	for (i = 0; i < n && !bad; i++)
		bad = ntf[i].cmd != cmds[i] || ntf[i].dev.id != id;
	for (i = 0; bad && i < n && i < 8; i++)
		fprintf(stderr, "#   got %s of id %u\n",
			vhost_op_str(ntf[i].cmd), ntf[i].dev.id);
	if (bad) {
		fprintf(stderr, "#   %d notifications, want %d about id %u\n",
			n, ncmds, id);
		return -1;
	}
	if (n && last)
		*last = ntf[n - 1];
	return 0;
}

static const int add[] = { VHOST_CMD_DEV_ADD_NTF };
static const int del[] = { VHOST_CMD_DEV_DEL_NTF };
static const int change[] = { VHOST_CMD_DEV_CHANGE_NTF };

TEST_F(admin, notifications_only_on_real_change)
{
	struct vhost_dev_get_rsp *d;
	struct ynl_sock *mon;
	struct adm_ntf last;
	int err, fd;
	int64_t id;

	ASSERT_EQ(0, open_dev(self, true));
	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon) TH_LOG("monitor: %s", strerror(-err));
	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);

	/* the values it has: nothing */
	ASSERT_EQ(0, adm_set(self->ys, self->id,
			     ADM_TUN(d->admin_busypoll_us, d->zerocopy,
				     d->zcopy_min_len, d->metamap)));
	EXPECT_EQ(0, expect_ntfs(mon, self->id, NULL, 0, NULL));
	ASSERT_EQ(0, adm_set(self->ys, self->id,
			     ADM_TUN(d->admin_busypoll_us, -1, -1, -1)));
	EXPECT_EQ(0, expect_ntfs(mon, self->id, NULL, 0, NULL));
	/* one changed among unchanged ones: one */
	ASSERT_EQ(0, adm_set(self->ys, self->id,
			     ADM_TUN(d->admin_busypoll_us + 1, d->zerocopy,
				     -1, -1)));
	EXPECT_EQ(0, expect_ntfs(mon, self->id, change, 1, &last));
	EXPECT_EQ(d->admin_busypoll_us + 1, last.dev.admin_busypoll_us);
	vhost_dev_get_rsp_free(d);

	/*
	 * The backend is the TAP of the TX queue, else of the RX queue:
	 * detaching TX leaves it the same, detaching RX too changes it.
	 */
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, -1));
	EXPECT_EQ(0, expect_ntfs(mon, self->id, NULL, 0, NULL));
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_RX, -1));
	EXPECT_EQ(0, expect_ntfs(mon, self->id, change, 1, &last));
	EXPECT_FALSE(!!last.dev._present.backend_ifindex);
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_RX, self->n.tap_fd));
	EXPECT_EQ(0, expect_ntfs(mon, self->id, change, 1, &last));
	EXPECT_EQ(if_nametoindex(self->n.ifname), last.dev.backend_ifindex);
	EXPECT_STREQ(self->n.ifname, last.ifname);
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, self->n.tap_fd));
	EXPECT_EQ(0, expect_ntfs(mon, self->id, NULL, 0, NULL));
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_RX, self->n.tap_fd));
	EXPECT_EQ(0, expect_ntfs(mon, self->id, NULL, 0, NULL));

	/* An owner set, reset, set again: each a change. */
	fd = open("/dev/vhost-net", O_RDWR);
	ASSERT_LE(0, fd);
	id = vhost_fd_id(fd);
	ASSERT_LE(0, id);
	EXPECT_EQ(0, expect_ntfs(mon, id, add, 1, NULL));
	ASSERT_EQ(0, ioctl(fd, VHOST_SET_OWNER, NULL));
	EXPECT_EQ(0, expect_ntfs(mon, id, change, 1, NULL));
	ASSERT_EQ(0, ioctl(fd, VHOST_RESET_OWNER, NULL));
	EXPECT_EQ(0, expect_ntfs(mon, id, change, 1, NULL));
	ASSERT_EQ(0, ioctl(fd, VHOST_SET_OWNER, NULL));
	EXPECT_EQ(0, expect_ntfs(mon, id, change, 1, NULL));
	close(fd);
	EXPECT_EQ(0, expect_ntfs(mon, id, del, 1, NULL));
	ynl_sock_destroy(mon);
}

/*
 * dev-change-ntf is documented for feature changes too: the features are
 * part of what dev-get reports.
 */
TEST_F(admin, features_change_notifies)
{
	struct vhost_dev_get_rsp *d;
	struct ynl_sock *mon;
	struct adm_ntf last;
	uint64_t f = 1ULL << VIRTIO_F_VERSION_1;
	int err, fd;
	int64_t id;

	fd = open("/dev/vhost-net", O_RDWR);
	ASSERT_LE(0, fd);
	id = vhost_fd_id(fd);
	ASSERT_LE(0, id);
	ASSERT_EQ(0, ioctl(fd, VHOST_SET_OWNER, NULL));
	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon) TH_LOG("monitor: %s", strerror(-err));
	ASSERT_EQ(0, ioctl(fd, VHOST_SET_FEATURES, &f));
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(f, d->features);
	vhost_dev_get_rsp_free(d);
	ASSERT_EQ(0, expect_ntfs(mon, id, change, 1, &last));
	EXPECT_EQ(f, last.dev.features);
	/* the same again: nothing */
	ASSERT_EQ(0, ioctl(fd, VHOST_SET_FEATURES, &f));
	EXPECT_EQ(0, expect_ntfs(mon, id, NULL, 0, NULL));
	ynl_sock_destroy(mon);
	close(fd);
}

/* A set from a process that lacks CAP_NET_ADMIN; what it may still read. */
static void unprivileged_checks(FIXTURE_DATA(admin) *self, bool nobody)
{
	struct vhost_dev_get_list *l;
	struct vhost_dev_get_rsp *d;
	struct adm_stats st[2];
	struct ynl_sock *ys;
	uint64_t v;
	int err, n = 0;

	ys = adm_open();
	CHILD_CHECK(ys);
	/* refused by genetlink itself (uns-admin-perm): EPERM, no message */
	CHILD_CHECK(adm_set(ys, self->id, ADM_TUN(10, -1, -1, -1)) == -EPERM);
	d = adm_get(ys, self->id);
	CHILD_CHECK(d);
	CHILD_CHECK(d->id == self->id && d->_present.admin_busypoll_us);
	CHILD_CHECK(!d->_present.owner_pid);
	CHILD_CHECK(!d->_present.backend_ifindex);
	CHILD_CHECK(!d->_present.backend_ifname_len);
	CHILD_CHECK(!d->_present.backend_netnsid);
	vhost_dev_get_rsp_free(d);
	/* which device feeds a TAP is not learnt by selecting with it */
	{
		struct vhost_dev_get_req *req = vhost_dev_get_req_alloc();

		vhost_dev_get_req_set_backend_ifname(req, self->n.ifname);
		CHILD_CHECK(!vhost_dev_get(ys, req));
		CHILD_CHECK(adm_err(ys) == -EPERM);
		CHILD_CHECK(adm_msg_has(ys, "CAP_NET_ADMIN"));
		vhost_dev_get_req_free(req);
	}
	l = adm_dev_dump(ys);
	CHILD_CHECK(l);
	ynl_dump_foreach(l, o) {
		CHILD_CHECK(!o->_present.owner_pid);
		CHILD_CHECK(!o->_present.backend_ifindex);
		n += o->id == self->id;
	}
	vhost_dev_get_list_free(l);
	CHILD_CHECK(n == 1);
	/* statistics are no secret in the namespace, like a netdev's */
	CHILD_CHECK(adm_stats(ys, self->id, false, true, st, 2) == 2);
	/* no monitor */
	CHILD_CHECK(!adm_monitor(&err));
	CHILD_CHECK(err == -EPERM);
	if (nobody) {
		CHILD_CHECK(sysfs_u64(self->name, "owner_pid", &v) == -EACCES);
		CHILD_CHECK(sysfs_u64(self->name, "backend_ifindex", &v) ==
			    -EACCES);
	}
	CHILD_CHECK(!sysfs_u64(self->name, "statistics/tx_packets", &v));
	ynl_sock_destroy(ys);
}

TEST_F(admin, unprivileged_user_set_refused_get_redacted)
{
	struct vhost_dev_get_rsp *d;
	struct stat st;
	char path[128];
	pid_t pid;

	ASSERT_EQ(0, open_dev(self, true));
	snprintf(path, sizeof(path), "/sys/class/vhost/%s/owner_pid", self->name);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0400, st.st_mode & 0777);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		CHILD_CHECK(!setgid(65534) && !setuid(65534));
		unprivileged_checks(self, true);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(0, d->admin_busypoll_us);
	vhost_dev_get_rsp_free(d);
}

/* Root, but without CAP_NET_ADMIN in its effective set. */
TEST_F(admin, root_without_cap_net_admin_set_refused)
{
	pid_t pid;

	ASSERT_EQ(0, open_dev(self, true));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct __user_cap_header_struct h = {
			.version = _LINUX_CAPABILITY_VERSION_3,
		};
		struct __user_cap_data_struct c[2];

		CHILD_CHECK(!syscall(SYS_capget, &h, c));
		c[CAP_TO_INDEX(CAP_NET_ADMIN)].effective &=
			~CAP_TO_MASK(CAP_NET_ADMIN);
		c[CAP_TO_INDEX(CAP_NET_ADMIN)].permitted &=
			~CAP_TO_MASK(CAP_NET_ADMIN);
		CHILD_CHECK(!syscall(SYS_capset, &h, c));
		unprivileged_checks(self, false);
		_exit(0);
	}
	ASSERT_EQ(0, wait_child(pid));
}

/* Device totals and both queues. */
struct counts {
	struct adm_stats dev, rxq, txq;
};

static int get_counts(FIXTURE_DATA(admin) *self, struct counts *c)
{
	return adm_stats_dev(self->ys, self->id, &c->dev, &c->rxq, &c->txq);
}

#define D(c1, c0, f) ((c1).v[VHOST_A_STATS_##f] - (c0).v[VHOST_A_STATS_##f])

/*
 * Device totals are the sums of the queues'; each queue has the counters
 * of its direction only; sysfs statistics/ and queues/vqN/ show the same
 * numbers (nothing moves now).
 */
static void check_consistent(struct __test_metadata *_metadata,
			     FIXTURE_DATA(admin) *self, const struct counts *c)
{
	const struct adm_stats *q[2] = { &c->rxq, &c->txq };
	char name[32], file[64], *s;
	uint64_t v;
	int a, i;

	EXPECT_EQ(VHOST_QUEUE_TYPE_RX, c->rxq.queue_type);
	EXPECT_EQ(VHOST_QUEUE_TYPE_TX, c->txq.queue_type);
	EXPECT_FALSE(c->rxq.has[VHOST_A_STATS_TX_PACKETS]);
	EXPECT_FALSE(c->rxq.has[VHOST_A_STATS_TX_ERRORS]);
	EXPECT_FALSE(c->rxq.has[VHOST_A_STATS_ZCOPY_SENT]);
	EXPECT_FALSE(c->txq.has[VHOST_A_STATS_RX_PACKETS]);
	EXPECT_TRUE(c->txq.has[VHOST_A_STATS_ZCOPY_FALLBACK]);
	for (a = ADM_FIRST_COUNTER; a <= VHOST_A_STATS_MAX; a++) {
		uint64_t sum = 0;
		bool any = false;

		for (i = 0; i < 2; i++) {
			any |= q[i]->has[a];
			sum += q[i]->v[a];
		}
		EXPECT_EQ(any, c->dev.has[a]) TH_LOG("%s", adm_stat_name(a));
		EXPECT_EQ(sum, c->dev.v[a]) TH_LOG("%s", adm_stat_name(a));

		/* the file of counter rx-packets is rx_packets */
		snprintf(name, sizeof(name), "%s", adm_stat_name(a));
		for (s = name; *s; s++)
			*s = *s == '-' ? '_' : *s;
		snprintf(file, sizeof(file), "statistics/%s", name);
		ASSERT_EQ(0, sysfs_u64(self->name, file, &v)) TH_LOG("%s", file);
		EXPECT_EQ(c->dev.v[a], v) TH_LOG("%s", file);
		for (i = 0; i < 2; i++) {
			int r;

			snprintf(file, sizeof(file), "queues/vq%d/%s", i, name);
			r = sysfs_u64(self->name, file, &v);
			EXPECT_EQ(q[i]->has[a] ? 0 : -ENOENT, r) TH_LOG("%s", file);
			if (!r)
				EXPECT_EQ(q[i]->v[a], v) TH_LOG("%s", file);
		}
	}
}

TEST_F(admin, stats_equal_driver_counts)
{
	static const size_t lens[] = { 60, 64, 128, 600, 1514 };
	struct vhost_dev_get_rsp *d;
	struct counts c0, c1;
	char why[VNET_WHY_LEN];
	uint64_t bytes = 0;
	int i, n = 500;

	ASSERT_EQ(0, open_dev(self, false));
	ASSERT_EQ(0, get_counts(self, &c0));
	ASSERT_EQ(0, vnet_check_tx(&self->n, lens, 5, n, 16, 1, why)) TH_LOG("%s", why);
	ASSERT_EQ(0, vnet_check_rx(&self->n, lens, 5, n, 16, 1, why)) TH_LOG("%s", why);
	for (i = 0; i < n; i++)
		bytes += lens[i % 5];
	ASSERT_EQ(0, get_counts(self, &c1));

	EXPECT_EQ(n, D(c1.dev, c0.dev, TX_PACKETS));
	EXPECT_EQ(bytes, D(c1.dev, c0.dev, TX_BYTES));
	EXPECT_EQ(n, D(c1.dev, c0.dev, RX_PACKETS));
	EXPECT_EQ(bytes, D(c1.dev, c0.dev, RX_BYTES));
	EXPECT_EQ(0, c1.dev.v[VHOST_A_STATS_TX_ERRORS]);
	/* every eventfd write and every signal, exactly */
	EXPECT_EQ(self->n.vq[VNET_TX].kicks, c1.txq.v[VHOST_A_STATS_KICKS]);
	EXPECT_EQ(self->n.vq[VNET_RX].kicks, c1.rxq.v[VHOST_A_STATS_KICKS]);
	EXPECT_EQ(vq_calls_collect(&self->n.vq[VNET_TX]),
		  c1.txq.v[VHOST_A_STATS_CALLS]);
	EXPECT_EQ(vq_calls_collect(&self->n.vq[VNET_RX]),
		  c1.rxq.v[VHOST_A_STATS_CALLS]);
	EXPECT_EQ(0, c1.dev.v[VHOST_A_STATS_ZCOPY_SENT]);
	check_consistent(_metadata, self, &c1);
	/* The device's metadata mode served the rings. */
	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);
	if (d->metamap == VHOST_METAMAP_MODE_MAP) {
		EXPECT_GT(c1.dev.v[VHOST_A_STATS_METAMAP_FAST], 0);
	} else {
		EXPECT_EQ(0, c1.dev.v[VHOST_A_STATS_METAMAP_FAST]);
	}
	if (d->metamap == VHOST_METAMAP_MODE_BATCH) {
		EXPECT_GT(c1.dev.v[VHOST_A_STATS_METAMAP_UACCESS_FILLS], 0);
	}
	vhost_dev_get_rsp_free(d);
}

/*
 * Run the device's worker (a thread "vhost-PID" of this process) on CPU 1
 * and this thread on CPU 0, as a guest's vCPU and its vhost worker would
 * be: a busy-polling worker must not share its CPU with the driver it
 * waits for.
 */
static int pin_worker_apart(void)
{
	char path[48], comm[32], want[32];
	cpu_set_t one, zero;
	int found = -ENOENT;
	struct dirent *d;
	DIR *dir;
	FILE *f;

	CPU_ZERO(&zero);
	CPU_SET(0, &zero);
	CPU_ZERO(&one);
	CPU_SET(1, &one);
	snprintf(want, sizeof(want), "vhost-%d", getpid());
	dir = opendir("/proc/self/task");
	if (!dir)
		return -errno;
	while ((d = readdir(dir))) {
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/comm", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f) && !strncmp(comm, want, strlen(want)) &&
		    !sched_setaffinity(atoi(d->d_name), sizeof(one), &one))
			found = 0;
		fclose(f);
	}
	closedir(dir);
	if (sched_setaffinity(0, sizeof(zero), &zero))
		return -errno;
	return found;
}

/*
 * TX one 64-byte packet at a time, each waited for (a request/response
 * pattern), with no wire: the stack drops the frames.
 */
static int ping_pong(struct vnet *n, int count)
{
	uint8_t frame[64];
	int r = 0;

	frame_fill(frame, sizeof(frame), NULL, 1);
	for (int i = 0; i < count && !r; i++) {
		r = vnet_tx_one(n, frame, sizeof(frame), NULL, 2000);
		while (!r && n->tx_pending)
			if (vnet_tx_reap(n) == 0)
				r = vq_wait(&n->vq[VNET_TX], 2000);
	}
	return r;
}

TEST_F(admin, busypoll_polls_and_saves_kicks)
{
	struct counts c0, c1, c2;
	uint64_t kicks_off, kicks_on;
	int n = 200;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "busy polling needs a second CPU");
	ASSERT_EQ(0, open_dev(self, false));
	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	ASSERT_EQ(0, pin_worker_apart());
	ASSERT_EQ(0, get_counts(self, &c0));
	ASSERT_EQ(0, ping_pong(&self->n, n));
	ASSERT_EQ(0, get_counts(self, &c1));
	EXPECT_EQ(0, c1.dev.v[VHOST_A_STATS_BUSYPOLL_LOOPS]);

	/* 10 ms: far longer than a round trip of this driver under TCG */
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(10000, -1, -1, -1)));
	ASSERT_EQ(0, ping_pong(&self->n, n));
	ASSERT_EQ(0, get_counts(self, &c2));

	kicks_off = D(c1.txq, c0.txq, KICKS);
	kicks_on = D(c2.txq, c1.txq, KICKS);
	TH_LOG("kicks for %d packets: %llu without busy polling, %llu with",
	       n, (unsigned long long)kicks_off, (unsigned long long)kicks_on);
	TH_LOG("busy polling: %llu loops, %llu found work, %llu us",
	       (unsigned long long)c2.txq.v[VHOST_A_STATS_BUSYPOLL_LOOPS],
	       (unsigned long long)c2.txq.v[VHOST_A_STATS_BUSYPOLL_FOUND],
	       (unsigned long long)c2.txq.v[VHOST_A_STATS_BUSYPOLL_NS] / 1000);
	EXPECT_GT(c2.txq.v[VHOST_A_STATS_BUSYPOLL_LOOPS], 0);
	EXPECT_GT(c2.txq.v[VHOST_A_STATS_BUSYPOLL_FOUND], 0);
	EXPECT_GT(c2.txq.v[VHOST_A_STATS_BUSYPOLL_NS], 0);
	EXPECT_LT(kicks_on * 2, kicks_off);
	EXPECT_EQ(self->n.vq[VNET_TX].kicks, c2.txq.v[VHOST_A_STATS_KICKS]);
	EXPECT_EQ(2 * n, c2.dev.v[VHOST_A_STATS_TX_PACKETS]);
}

/* Wait until no zero-copy buffer is in flight; 0 or -ETIMEDOUT. */
static int zcopy_settle(FIXTURE_DATA(admin) *self, struct counts *c)
{
	for (int i = 0; i < 100; i++) {
		if (get_counts(self, c))
			return -EIO;
		if (!c->txq.v[VHOST_A_STATS_ZCOPY_PENDING])
			return 0;
		usleep(20000);
	}
	return -ETIMEDOUT;
}

/*
 * A packet delivered to a local socket has its zero-copy pages copied (a
 * zero-copy fallback, after which vhost backs off), so this test has no
 * wire socket: the stack drops the frames (unknown ethertype), which
 * completes them as successful zero-copy sends.
 */
/*
 * A zero-copy send shorter than what the TAP copies into the skb's linear
 * part (tun's GOODCOPY_LEN, 128 bytes) leaves the skb that long anyway,
 * its tail whatever follows in the guest's buffer: a 64-byte frame went
 * out as 128 bytes (found by make stress).  zcopy-min-len may not go below
 * 256, what vhost-net always used; frames of every small size stay
 * byte-exact with zero-copy on at the smallest value allowed.
 */
TEST_F(admin, zcopy_min_len_floor)
{
	static const size_t lens[] = { 60, 64, 100, 127, 128, 129, 255, 256, 300 };
	char why[VNET_WHY_LEN];
	int r;

	ASSERT_EQ(0, open_dev(self, false));
	r = adm_set(self->ys, self->id, ADM_TUN(-1, 1, 255, -1));
	EXPECT_EQ(-ERANGE, r) TH_LOG("zcopy-min-len 255 accepted");
	r = adm_set(self->ys, self->id, ADM_TUN(-1, 1, 64, -1));
	EXPECT_EQ(-ERANGE, r) TH_LOG("zcopy-min-len 64 accepted");
	if (r)
		ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, 256, -1)));
	ASSERT_EQ(0, vnet_check_tx(&self->n, lens, ARRAY_SIZE(lens), 900, 16, 1,
				   why)) TH_LOG("%s", why);
}

TEST_F(admin, zerocopy_large_zero_copied_small_copied)
{
	struct counts c1, c2;
	uint64_t zc, hol;
	int n = 100;

	ASSERT_EQ(0, open_dev(self, true));
	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	/* off: nothing goes zero-copy */
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 1514, n));
	ASSERT_EQ(0, get_counts(self, &c1));
	EXPECT_EQ(0, adm_zcopy_outcomes(&c1.txq));

	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, -1, -1)));
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 1514, n));
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 64, n));
	ASSERT_EQ(0, zcopy_settle(self, &c2));
	zc = D(c2.txq, c1.txq, ZCOPY_SENT);
	hol = D(c2.txq, c1.txq, ZCOPY_HOL_STALLS);
	TH_LOG("%d large: %llu zero-copy, %llu copied (pending)", n,
	       (unsigned long long)zc, (unsigned long long)hol);
	EXPECT_GT(zc, n / 2);
	EXPECT_EQ(n, zc + hol);
	EXPECT_EQ(0, D(c2.txq, c1.txq, ZCOPY_FALLBACK));
	EXPECT_EQ(n, D(c2.txq, c1.txq, ZCOPY_COPIED));
	EXPECT_EQ(3 * n, c2.txq.v[VHOST_A_STATS_TX_PACKETS]);
	EXPECT_EQ(2 * n, adm_zcopy_outcomes(&c2.txq));
}

/*
 * In order (VIRTIO_F_IN_ORDER) with zero-copy on: the queue copies every
 * frame (zcopy-in-order), since one zero-copy buffer held by a lower layer
 * would hold up every later one (see the next test), and every buffer
 * comes back in the order it was given (the driver checks that the used
 * index covers each batch the used entries name).  To the wire
 * byte-exact; with nobody listening too; the counters add up.
 */
TEST_F(admin, zerocopy_in_order)
{
	static const size_t lens[] = { 1514, 64, 1514, 1514, 100, 1000, 60 };
	struct vnet_opts o = {
		.ring_num = 256, .event_idx = true, .in_order = true,
	};
	struct virtio_net_hdr_v1 h = {};
	char why[VNET_WHY_LEN];
	uint8_t frame[1514];
	struct counts c0, c1;
	int i, n = 700, quiet = 600;
	size_t len;

	ASSERT_EQ(0, open_dev_opts(self, &o));
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, -1, -1)));
	ASSERT_EQ(0, get_counts(self, &c0));
	ASSERT_EQ(0, vnet_check_tx(&self->n, lens, ARRAY_SIZE(lens), n, 32, 1,
				   why)) TH_LOG("%s", why);
	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	for (i = 0; i < quiet; i++) {
		len = i % 3 ? 1514 : 64;
		frame_fill(frame, len, NULL, i);
		ASSERT_EQ(0, vnet_tx_one(&self->n, frame, len, &h, 2000))
			TH_LOG("frame %d", i);
	}
	ASSERT_EQ(0, vnet_tx_drain(&self->n, 2000));
	ASSERT_EQ(0, zcopy_settle(self, &c1));
	TH_LOG("%llu zero-copy, %llu fell back, %llu copied in order; %llu buffers back through %llu used entries",
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_SENT),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_FALLBACK),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_IN_ORDER),
	       (unsigned long long)self->n.vq[VNET_TX].used_bufs,
	       (unsigned long long)self->n.vq[VNET_TX].used_reads);
	EXPECT_EQ(n + quiet, D(c1.txq, c0.txq, TX_PACKETS));
	EXPECT_EQ(0, D(c1.txq, c0.txq, TX_ERRORS));
	EXPECT_EQ(D(c1.txq, c0.txq, TX_PACKETS),
		  adm_zcopy_outcomes(&c1.txq) - adm_zcopy_outcomes(&c0.txq));
	EXPECT_EQ(0, D(c1.txq, c0.txq, ZCOPY_SENT));
	EXPECT_EQ(0, D(c1.txq, c0.txq, ZCOPY_FALLBACK));
	EXPECT_EQ(n + quiet, D(c1.txq, c0.txq, ZCOPY_IN_ORDER));
	EXPECT_EQ(n + quiet, self->n.vq[VNET_TX].used_bufs);
	/* The entries the device wrote are those the driver read. */
	EXPECT_EQ(self->n.vq[VNET_TX].used_reads,
		  D(c1.txq, c0.txq, USED_ENTRIES));
	EXPECT_EQ(0, vq_error_count(&self->n.vq[VNET_TX]));
}

#define HOLD_BR "vhbr0"
#define HOLD_DUMMY "vhdum0"
#define HOLD_MS 4000
/* The held frames' destination, which the bridge forwards to the dummy. */
#define HOLD_MAC "02:00:00:00:aa:01"
static const uint8_t hold_mac[ETH_ALEN] = { 2, 0, 0, 0, 0xaa, 1 };

static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void hold_rig_del(void)
{
	sh("ip link del " HOLD_BR " 2>/dev/null");
	sh("ip link del " HOLD_DUMMY " 2>/dev/null");
}

/*
 * A bridge with the TAP and a dummy port whose netem qdisc holds every
 * frame for HOLD_MS: the bridge forwards each frame from the TAP to
 * HOLD_MAC to the dummy only (a static entry: a flooded frame is cloned,
 * and cloning copies a zero-copy frame's pages), and there the zero-copy
 * frame's pages stay referenced, as behind a shaping qdisc or a paused NIC.
 */
static int hold_rig_add(const char *tap)
{
	hold_rig_del();
	return sh("ip link add " HOLD_BR " type bridge && ip link add " HOLD_DUMMY
		  " type dummy && ip link set " HOLD_DUMMY " master " HOLD_BR
		  " && tc qdisc add dev " HOLD_DUMMY
		  " root netem delay %dms limit 10000 && ip link set " HOLD_DUMMY
		  " up && ip link set " HOLD_BR " up && bridge fdb add " HOLD_MAC
		  " dev " HOLD_DUMMY " master static && ip link set %s master " HOLD_BR
		  " && ip link set %s up",
		  HOLD_MS, tap, tap);
}

/* One 1514-byte frame, then count 64-byte ones, each kicked, to HOLD_MAC. */
static int send_large_then_small(struct vnet *n, int count)
{
	uint8_t frame[1514];
	int i, r;

	frame_fill(frame, sizeof(frame), NULL, 1);
	memcpy(frame, hold_mac, ETH_ALEN);
	r = vnet_tx_one(n, frame, sizeof(frame), NULL, 2000);
	frame_fill(frame, 64, NULL, 2);
	memcpy(frame, hold_mac, ETH_ALEN);
	for (i = 0; i < count && !r; i++)
		r = vnet_tx_one(n, frame, 64, NULL, 2000);
	return r;
}

/*
 * A zero-copy frame held by a lower layer stalls nothing in order.  The
 * rig first shows it holds a zero-copy frame: on a queue not in order, the
 * large frame goes zero-copy and stays in flight while the small frames
 * after it, copied, come back at once.  In order, where the device must
 * use buffers in the order they were made available, the same frames all
 * come back within 500 ms: the queue copies (zcopy-in-order).  Before the
 * fix the in-order queue sent the large frame zero-copy and the small ones
 * waited behind it for HOLD_MS.
 */
TEST_F_TIMEOUT(admin, zerocopy_in_order_held_frame_stalls_nothing, 60)
{
	struct vnet_opts o = { .ring_num = 256, .event_idx = true };
	struct counts c0, c1;
	int small = 20, r;
	double t0, ms;

	/* not in order: the rig holds the zero-copy frame */
	ASSERT_EQ(0, open_dev_opts(self, &o));
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, -1, -1)));
	/* a packet socket on the TAP would copy every frame on receipt */
	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	ASSERT_EQ(0, hold_rig_add(self->n.ifname))
		TH_LOG("bridge, dummy and netem (CONFIG_BRIDGE, CONFIG_DUMMY, CONFIG_NET_SCH_NETEM)");
	ASSERT_EQ(0, get_counts(self, &c0));
	ASSERT_EQ(0, send_large_then_small(&self->n, small));
	usleep(500 * 1000);
	vnet_tx_reap(&self->n);
	ASSERT_EQ(0, get_counts(self, &c1));
	TH_LOG("not in order: %llu of %d back after 500 ms, %llu zero-copy pending; sent %llu fallback %llu copied %llu backoff %llu hol %llu",
	       (unsigned long long)self->n.vq[VNET_TX].used_bufs, small + 1,
	       (unsigned long long)c1.txq.v[VHOST_A_STATS_ZCOPY_PENDING],
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_SENT),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_FALLBACK),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_COPIED),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_BACKOFF),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_HOL_STALLS));
	ASSERT_EQ(1, c1.txq.v[VHOST_A_STATS_ZCOPY_PENDING])
		TH_LOG("the rig did not hold a zero-copy frame");
	EXPECT_EQ(small, self->n.vq[VNET_TX].used_bufs);
	close_dev(self);

	/* in order: nothing waits for the held frame */
	o.in_order = true;
	ASSERT_EQ(0, open_dev_opts(self, &o));
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, -1, -1)));
	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	ASSERT_EQ(0, hold_rig_add(self->n.ifname));
	ASSERT_EQ(0, get_counts(self, &c0));
	t0 = now_ms();
	ASSERT_EQ(0, send_large_then_small(&self->n, small));
	r = vnet_tx_drain(&self->n, 500);
	ms = now_ms() - t0;
	ASSERT_EQ(0, get_counts(self, &c1));
	TH_LOG("in order: %llu of %d back in %.0f ms; zero-copy %llu sent, %llu pending, %llu copied in order",
	       (unsigned long long)self->n.vq[VNET_TX].used_bufs, small + 1,
	       ms, (unsigned long long)D(c1.txq, c0.txq, ZCOPY_SENT),
	       (unsigned long long)c1.txq.v[VHOST_A_STATS_ZCOPY_PENDING],
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_IN_ORDER));
	EXPECT_EQ(0, r) TH_LOG("buffers held up behind the held frame");
	EXPECT_LT(ms, 1000);
	EXPECT_EQ(small + 1, self->n.vq[VNET_TX].used_bufs);
	EXPECT_EQ(0, c1.txq.v[VHOST_A_STATS_ZCOPY_PENDING]);
	EXPECT_EQ(small + 1, D(c1.txq, c0.txq, ZCOPY_IN_ORDER));
	EXPECT_EQ(small + 1, D(c1.txq, c0.txq, TX_PACKETS));
	close_dev(self);
	hold_rig_del();
}

/*
 * The identities, under traffic of every kind: with zero-copy on
 * and nothing in flight, tx-packets = zcopy-sent + zcopy-fallback +
 * zcopy-copied + zcopy-hol-stalls + zcopy-backoff; tx-packets and
 * tx-bytes are what the driver sent and what the TAP received; rx what was
 * injected; device = sum of queues = sysfs; kicks and calls the driver's.
 */
TEST_F(admin, counters_add_up_under_traffic)
{
	static const size_t lens[] = { 60, 1514, 300, 1000, 1400, 200 };
	uint64_t tap_pk0, tap_pk1, tap_by0, tap_by1, bytes = 0;
	char why[VNET_WHY_LEN];
	struct counts c0, c1;
	int i, n = 600, nrx = 300;

	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, -1, -1)));
	ASSERT_EQ(0, get_counts(self, &c0));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_packets", &tap_pk0));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_bytes", &tap_by0));

	/* to the wire (a local socket: zero-copy falls back, backs off) */
	ASSERT_EQ(0, vnet_check_tx(&self->n, lens, 6, n, 32, 1, why)) TH_LOG("%s", why);
	for (i = 0; i < n; i++)
		bytes += lens[i % 6];
	ASSERT_EQ(0, vnet_check_rx(&self->n, lens, 6, nrx, 32, 1, why)) TH_LOG("%s", why);
	/* then nobody listens: zero-copy completes */
	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 1514, 200));
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 100, 50));
	n += 250;
	bytes += 200 * 1514 + 50 * 100;
	ASSERT_EQ(0, zcopy_settle(self, &c1));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_packets", &tap_pk1));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_bytes", &tap_by1));

	TH_LOG("tx %llu: zero-copy %llu sent, %llu fell back; copied %llu short, %llu hol, %llu back-off",
	       (unsigned long long)D(c1.txq, c0.txq, TX_PACKETS),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_SENT),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_FALLBACK),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_COPIED),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_HOL_STALLS),
	       (unsigned long long)D(c1.txq, c0.txq, ZCOPY_BACKOFF));
	EXPECT_EQ(n, D(c1.txq, c0.txq, TX_PACKETS));
	EXPECT_EQ(bytes, D(c1.txq, c0.txq, TX_BYTES));
	EXPECT_EQ(0, D(c1.txq, c0.txq, TX_ERRORS));
	EXPECT_EQ(D(c1.txq, c0.txq, TX_PACKETS),
		  adm_zcopy_outcomes(&c1.txq) - adm_zcopy_outcomes(&c0.txq));
	/* each kind was there */
	EXPECT_GT(D(c1.txq, c0.txq, ZCOPY_SENT), 0);
	EXPECT_GT(D(c1.txq, c0.txq, ZCOPY_FALLBACK), 0);
	EXPECT_GT(D(c1.txq, c0.txq, ZCOPY_COPIED), 0);
	/* what the TAP received from its user side */
	EXPECT_EQ(D(c1.txq, c0.txq, TX_PACKETS), tap_pk1 - tap_pk0);
	EXPECT_EQ(D(c1.txq, c0.txq, TX_BYTES), tap_by1 - tap_by0);
	/* what was injected */
	EXPECT_EQ(nrx, D(c1.rxq, c0.rxq, RX_PACKETS));
	for (i = 0, bytes = 0; i < nrx; i++)
		bytes += lens[i % 6];
	EXPECT_EQ(bytes, D(c1.rxq, c0.rxq, RX_BYTES));
	/* the driver's own counts */
	EXPECT_EQ(self->n.vq[VNET_TX].kicks, c1.txq.v[VHOST_A_STATS_KICKS]);
	EXPECT_EQ(self->n.vq[VNET_RX].kicks, c1.rxq.v[VHOST_A_STATS_KICKS]);
	EXPECT_EQ(vq_calls_collect(&self->n.vq[VNET_TX]),
		  c1.txq.v[VHOST_A_STATS_CALLS]);
	EXPECT_EQ(vq_calls_collect(&self->n.vq[VNET_RX]),
		  c1.rxq.v[VHOST_A_STATS_CALLS]);
	check_consistent(_metadata, self, &c1);
}

/*
 * What the TAP refuses is a TX error, returned to the guest: a link that
 * is down fails tun's sendmsg (-EIO) on the path that sends one packet at
 * a time, copied (socket send buffer below INT_MAX: no batching) or
 * zero-copy.  On the batched path tun takes every packet, whatever the
 * link: they are sent as far as vhost can tell, and counted so on both
 * sides.
 */
TEST_F(admin, tx_errors_count_what_the_tap_refused)
{
	uint64_t pk0, pk1, q0, q1;
	struct counts c0, c1, c2, c3, c4;
	int n = 40;

	ASSERT_EQ(0, open_dev(self, true));
	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	ASSERT_EQ(0, vnet_tap_sndbuf(&self->n, 1 << 20));
	ASSERT_EQ(0, vnet_link_set(&self->n, false));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_packets", &pk0));
	ASSERT_EQ(0, get_counts(self, &c0));
	/* copied: every buffer comes back, counted as an error */
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 1514, n));
	ASSERT_EQ(0, get_counts(self, &c1));
	EXPECT_EQ(n, D(c1.txq, c0.txq, TX_ERRORS));
	EXPECT_EQ(0, D(c1.txq, c0.txq, TX_PACKETS));
	EXPECT_EQ(0, D(c1.txq, c0.txq, TX_BYTES));
	/* zero-copy: the same, and no zero-copy outcome either */
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, -1, -1)));
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 1514, n));
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 64, n));
	ASSERT_EQ(0, zcopy_settle(self, &c2));
	EXPECT_EQ(2 * n, D(c2.txq, c1.txq, TX_ERRORS));
	EXPECT_EQ(0, D(c2.txq, c1.txq, TX_PACKETS));
	EXPECT_EQ(0, adm_zcopy_outcomes(&c2.txq));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_packets", &pk1));
	EXPECT_EQ(pk0, pk1);
	/* link up: sent */
	ASSERT_EQ(0, vnet_link_set(&self->n, true));
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 1514, n));
	ASSERT_EQ(0, zcopy_settle(self, &c3));
	EXPECT_EQ(0, D(c3.txq, c2.txq, TX_ERRORS));
	EXPECT_EQ(n, D(c3.txq, c2.txq, TX_PACKETS));
	EXPECT_EQ(n, adm_zcopy_outcomes(&c3.txq));
	/* batched, link down again: tun takes them */
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 0, -1, -1)));
	ASSERT_EQ(0, vnet_tap_sndbuf(&self->n, INT_MAX));
	ASSERT_EQ(0, vnet_link_set(&self->n, false));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_packets", &q0));
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 1514, n));
	ASSERT_EQ(0, get_counts(self, &c4));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_packets", &q1));
	TH_LOG("batched to a down TAP: %llu sent, %llu errors; the TAP counted %llu",
	       (unsigned long long)D(c4.txq, c3.txq, TX_PACKETS),
	       (unsigned long long)D(c4.txq, c3.txq, TX_ERRORS),
	       (unsigned long long)(q1 - q0));
	EXPECT_EQ(n, D(c4.txq, c3.txq, TX_PACKETS) + D(c4.txq, c3.txq, TX_ERRORS));
	EXPECT_EQ(D(c4.txq, c3.txq, TX_PACKETS), q1 - q0);
	check_consistent(_metadata, self, &c4);
}

/*
 * A TAP deleted under a device: tun fails every send (-EBADFD), batched or
 * not.  Those are TX errors, and the spec says their buffers are returned
 * to the guest.  The device feeds no interface any more: no backend is
 * reported (not the index the TAP had, which a new interface may take).
 */
TEST_F(admin, tx_errors_tap_deleted_buffers_returned)
{
	struct vhost_dev_get_rsp *d;
	struct counts c0, c1;
	char cmd[64];
	int n = 20, r;

	ASSERT_EQ(0, open_dev(self, true));
	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	snprintf(cmd, sizeof(cmd), "ip link del dev %s", self->n.ifname);
	r = system(cmd);
	ASSERT_EQ(0, r) TH_LOG("%s: status %#x", cmd, r);
	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);
	EXPECT_FALSE(!!d->_present.backend_ifindex);
	EXPECT_EQ(0, d->_present.backend_ifname_len);
	vhost_dev_get_rsp_free(d);
	ASSERT_EQ(0, get_counts(self, &c0));
	r = vnet_tx_burst(&self->n, 1514, n);
	ASSERT_EQ(0, get_counts(self, &c1));
	TH_LOG("%d sent to a deleted TAP: %llu errors, %llu sent, %llu not returned, %d vq errors",
	       n, (unsigned long long)D(c1.txq, c0.txq, TX_ERRORS),
	       (unsigned long long)D(c1.txq, c0.txq, TX_PACKETS),
	       (unsigned long long)self->n.tx_pending,
	       vq_error_count(&self->n.vq[VNET_TX]));
	EXPECT_EQ(n, D(c1.txq, c0.txq, TX_ERRORS));
	EXPECT_EQ(0, D(c1.txq, c0.txq, TX_PACKETS));
	EXPECT_EQ(0, r) TH_LOG("buffers not returned: %s", strerror(-r));
}

/*
 * A TX frame whose header asks for a checksum beyond it, on the batched
 * path: vhost-net drops it as tun would, a TX error, its buffer returned,
 * nothing sent; the frames after it are sent and counted as packets.
 */
TEST_F(admin, tx_errors_count_a_malformed_csum_frame)
{
	struct virtio_net_hdr_v1 hdr = {
		.flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
		.csum_start = 1000,
	};
	struct vq *vq = &self->n.vq[VNET_TX];
	struct counts c0, c1, c2;
	uint8_t frame[200];
	uint64_t q0, q1;
	int n = 8;

	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_packets", &q0));
	ASSERT_EQ(0, get_counts(self, &c0));
	frame_fill(frame, sizeof(frame), NULL, 0x4e02);
	ASSERT_LE(0, vnet_tx_add(&self->n, &hdr, frame, sizeof(frame)));
	vq_publish(vq);
	vq_notify(vq);
	ASSERT_EQ(0, vnet_tx_drain(&self->n, 5000))
		TH_LOG("the malformed frame's buffer was not returned");
	ASSERT_EQ(0, get_counts(self, &c1));
	ASSERT_EQ(0, vnet_tap_stat(&self->n, "rx_packets", &q1));
	EXPECT_EQ(1, D(c1.txq, c0.txq, TX_ERRORS));
	EXPECT_EQ(0, D(c1.txq, c0.txq, TX_PACKETS));
	EXPECT_EQ(0, D(c1.txq, c0.txq, TX_BYTES));
	EXPECT_EQ(q0, q1);
	ASSERT_EQ(0, vnet_tx_burst(&self->n, 60, n));
	ASSERT_EQ(0, get_counts(self, &c2));
	EXPECT_EQ(0, D(c2.txq, c1.txq, TX_ERRORS));
	EXPECT_EQ(n, D(c2.txq, c1.txq, TX_PACKETS));
	check_consistent(_metadata, self, &c2);
}

/* dev-get and dev-set select by backend interface in one request. */
TEST_F(admin, select_by_backend_interface)
{
	struct vhost_dev_set_req *sr;
	struct vhost_dev_get_req *req;
	struct vhost_dev_get_rsp *d;
	struct vnet other;
	struct vnet_opts o = { .ring_num = 64 };
	int64_t other_id;

	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, vnet_open(&other, &o));
	other_id = vhost_fd_id(other.vhost_fd);
	ASSERT_LE(0, other_id);

	req = vhost_dev_get_req_alloc();
	vhost_dev_get_req_set_backend_ifname(req, self->n.ifname);
	d = vhost_dev_get(self->ys, req);
	ASSERT_NE(NULL, d) TH_LOG("%s", self->ys->err.msg);
	EXPECT_EQ(self->id, d->id);
	vhost_dev_get_rsp_free(d);
	vhost_dev_get_req_set_backend_ifindex(req, if_nametoindex(self->n.ifname));
	vhost_dev_get_req_set_id(req, self->id);
	vhost_dev_get_req_set_name(req, self->name);
	d = vhost_dev_get(self->ys, req);
	ASSERT_NE(NULL, d) TH_LOG("%s", self->ys->err.msg);
	EXPECT_EQ(self->id, d->id);
	vhost_dev_get_rsp_free(d);
	/* selectors that disagree: refused, the culprit pointed at */
	vhost_dev_get_req_set_backend_ifname(req, other.ifname);
	EXPECT_EQ(NULL, vhost_dev_get(self->ys, req));
	EXPECT_EQ(-EINVAL, adm_err(self->ys));
	EXPECT_TRUE(adm_msg_has(self->ys, "do not agree"))
		TH_LOG("%s", self->ys->err.msg);
	EXPECT_NE(0, self->ys->err.attr_offs);
	vhost_dev_get_req_free(req);

	/* set by interface name: that device, and only it */
	sr = vhost_dev_set_req_alloc();
	vhost_dev_set_req_set_backend_ifname(sr, other.ifname);
	vhost_dev_set_req_set_zcopy_min_len(sr, 1000);
	ASSERT_EQ(0, vhost_dev_set(self->ys, sr)) TH_LOG("%s", self->ys->err.msg);
	vhost_dev_set_req_free(sr);
	d = adm_get(self->ys, other_id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(1000, d->zcopy_min_len);
	vhost_dev_get_rsp_free(d);
	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);
	EXPECT_NE(1000, d->zcopy_min_len);
	vhost_dev_get_rsp_free(d);
	/* by index, disagreeing with the id: nothing changes */
	sr = vhost_dev_set_req_alloc();
	vhost_dev_set_req_set_id(sr, self->id);
	vhost_dev_set_req_set_backend_ifindex(sr, if_nametoindex(other.ifname));
	vhost_dev_set_req_set_zcopy_min_len(sr, 2000);
	EXPECT_NE(0, vhost_dev_set(self->ys, sr));
	EXPECT_EQ(-EINVAL, adm_err(self->ys));
	EXPECT_TRUE(adm_msg_has(self->ys, "do not agree"));
	vhost_dev_set_req_free(sr);
	d = adm_get(self->ys, other_id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(1000, d->zcopy_min_len);
	vhost_dev_get_rsp_free(d);

	/*
	 * Two devices feeding one interface (as the queues of a multiqueue
	 * TAP do): dev-set by the interface sets both; dev-get, which
	 * answers about one device, refuses to pick one.
	 */
	ASSERT_EQ(0, vnet_set_backend(&other, VNET_TX, self->n.tap_fd));
	ASSERT_EQ(0, vnet_set_backend(&other, VNET_RX, self->n.tap_fd));
	sr = vhost_dev_set_req_alloc();
	vhost_dev_set_req_set_backend_ifname(sr, self->n.ifname);
	vhost_dev_set_req_set_zcopy_min_len(sr, 3000);
	EXPECT_EQ(0, vhost_dev_set(self->ys, sr)) TH_LOG("%s", self->ys->err.msg);
	vhost_dev_set_req_free(sr);
	d = adm_get(self->ys, other_id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(3000, d->zcopy_min_len);
	vhost_dev_get_rsp_free(d);
	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(3000, d->zcopy_min_len);
	vhost_dev_get_rsp_free(d);
	req = vhost_dev_get_req_alloc();
	vhost_dev_get_req_set_backend_ifname(req, self->n.ifname);
	EXPECT_EQ(NULL, vhost_dev_get(self->ys, req));
	EXPECT_EQ(-EINVAL, adm_err(self->ys));
	EXPECT_TRUE(adm_msg_has(self->ys, "several devices match"))
		TH_LOG("%s", self->ys->err.msg);
	vhost_dev_get_req_free(req);
	vnet_close(&other);
}

/* Queue pairs of a multiqueue TAP, one vhost-net device each, as QEMU. */
#define MQ_PAIRS 4

/* The queues of a multiqueue TAP: fds[n], its name into ifname. */
static int mq_tap_open(int *fds, int n, char *ifname)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR |
					  IFF_MULTI_QUEUE };
	int i, len = sizeof(struct virtio_net_hdr_v1);

	snprintf(ifr.ifr_name, IFNAMSIZ, "vhmq%%d");
	for (i = 0; i < n; i++) {
		fds[i] = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
		if (fds[i] < 0 || ioctl(fds[i], TUNSETIFF, &ifr) < 0 ||
		    ioctl(fds[i], TUNSETVNETHDRSZ, &len) < 0)
			return -errno;
	}
	snprintf(ifname, IFNAMSIZ, "%s", ifr.ifr_name);
	return 0;
}

/* dev-set by selector of the tunable zcopy-min-len (and a label). */
static int set_by(struct ynl_sock *ys, const char *ifname, int owner,
		  const char *match, uint32_t zmin, const char *label)
{
	struct vhost_dev_set_req *sr = vhost_dev_set_req_alloc();
	int r;

	if (ifname)
		vhost_dev_set_req_set_backend_ifname(sr, ifname);
	if (owner)
		vhost_dev_set_req_set_owner_pid(sr, owner);
	if (match)
		vhost_dev_set_req_set_match_label(sr, match);
	if (zmin)
		vhost_dev_set_req_set_zcopy_min_len(sr, zmin);
	if (label)
		vhost_dev_set_req_set_label(sr, label);
	/* The generated setter takes "" for absent: "" removes the label. */
	if (label && !*label)
		sr->_present.label_len = 1;
	r = vhost_dev_set(ys, sr) ? adm_err(ys) ?: -EIO : 0;
	vhost_dev_set_req_free(sr);
	return r;
}

/* How many devices of ids[n] have zcopy-min-len zmin (and label). */
static int count_with(struct ynl_sock *ys, const uint32_t *ids, int n,
		      uint32_t zmin, const char *label)
{
	struct vhost_dev_get_rsp *d;
	int i, c = 0;

	for (i = 0; i < n; i++) {
		d = adm_get(ys, ids[i]);
		if (!d)
			continue;
		c += d->zcopy_min_len == zmin &&
		     (!label || (d->label && !strcmp(d->label, label)));
		vhost_dev_get_rsp_free(d);
	}
	return c;
}

/* How many devices a dev-get dump filtered by ifname or label lists. */
static int dump_count(struct ynl_sock *ys, const char *ifname,
		      const char *match, int owner)
{
	struct vhost_dev_get_req_dump *req = vhost_dev_get_req_dump_alloc();
	struct vhost_dev_get_list *l;
	int n = 0;

	if (ifname)
		vhost_dev_get_req_dump_set_backend_ifname(req, ifname);
	if (match)
		vhost_dev_get_req_dump_set_match_label(req, match);
	if (owner)
		vhost_dev_get_req_dump_set_owner_pid(req, owner);
	l = vhost_dev_get_dump(ys, req);
	vhost_dev_get_req_dump_free(req);
	if (!l)
		return adm_err(ys) ?: -EIO;
	ynl_dump_foreach(l, d)
		n++;
	vhost_dev_get_list_free(l);
	return n;
}

/*
 * A virtio-net NIC of MQ_PAIRS queue pairs as QEMU sets it up: a
 * multiqueue TAP, one vhost-net device per queue pair, each fed by one
 * queue of the TAP.  One dev-set by the TAP's name sets them all; a value
 * refused changes none; a label set on them selects them, as does their
 * owner; each queue reports the worker serving it, a thread of the owner.
 */
TEST_F(admin, multiqueue_tap_by_tap_label_owner)
{
	struct vnet_opts o = { .ring_num = 64 };
	struct vnet v[MQ_PAIRS];
	int fds[MQ_PAIRS], i, q;
	uint32_t ids[MQ_PAIRS + 1];
	char mq[IFNAMSIZ], path[64], comm[32], want[128];
	struct vhost_queue_get_req *qr;
	struct vhost_queue_get_rsp *qa;
	struct adm_ntf ntf[MQ_PAIRS + 2];
	struct ynl_sock *mon;
	int err, n;
	uint32_t prev = 0;
	uint64_t wp;
	FILE *f;

	memset(fds, -1, sizeof(fds));
	ASSERT_EQ(0, open_dev(self, true));	/* a device of another TAP */
	ASSERT_EQ(0, mq_tap_open(fds, MQ_PAIRS, mq));
	for (i = 0; i < MQ_PAIRS; i++) {
		int64_t id;

		ASSERT_EQ(0, vnet_open(&v[i], &o));
		ASSERT_EQ(0, vnet_set_backend(&v[i], VNET_TX, fds[i]));
		ASSERT_EQ(0, vnet_set_backend(&v[i], VNET_RX, fds[i]));
		id = vhost_fd_id(v[i].vhost_fd);
		ASSERT_LE(0, id);
		ids[i] = id;
	}
	ids[MQ_PAIRS] = self->id;
	EXPECT_EQ(MQ_PAIRS, dump_count(self->ys, mq, NULL, 0));
	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon) TH_LOG("monitor: %s", strerror(-err));

	/* no selector: refused, the missing attribute named */
	EXPECT_EQ(-EINVAL, set_by(self->ys, NULL, 0, NULL, 700, NULL));
	EXPECT_TRUE(adm_msg_has(self->ys, "owner or label required"))
		TH_LOG("%s", self->ys->err.msg);
	EXPECT_TRUE(adm_msg_has(self->ys, "missing attribute: .id"))
		TH_LOG("%s", self->ys->err.msg);

	/* one request by the TAP's name: every queue pair's device */
	EXPECT_EQ(0, set_by(self->ys, mq, 0, NULL, 700, "web01"))
		TH_LOG("%s", self->ys->err.msg);
	EXPECT_EQ(MQ_PAIRS, count_with(self->ys, ids, MQ_PAIRS, 700, "web01"));
	EXPECT_EQ(0, count_with(self->ys, ids + MQ_PAIRS, 1, 700, NULL));
	/* each notified once, the label in the notification */
	n = adm_ntf_drain(mon, QUIET_MS, ntf, ARRAY_SIZE(ntf));
	EXPECT_EQ(MQ_PAIRS, n);
	for (i = 0; i < n && i < MQ_PAIRS; i++) {
		EXPECT_EQ(VHOST_CMD_DEV_CHANGE_NTF, ntf[i].cmd);
		EXPECT_EQ(ids[i], ntf[i].dev.id);
		EXPECT_STREQ("web01", ntf[i].label);
	}
	snprintf(path, sizeof(path), "vhost%u", ids[0]);
	snprintf(want, sizeof(want), "/sys/class/vhost/%s/label", path);
	f = fopen(want, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(comm, sizeof(comm), f));
	fclose(f);
	EXPECT_STREQ("web01\n", comm);

	/* a refused value (below zcopy-min-len-min) changes none */
	EXPECT_EQ(-ERANGE, set_by(self->ys, mq, 0, NULL, 100, NULL));
	EXPECT_EQ(MQ_PAIRS, count_with(self->ys, ids, MQ_PAIRS, 700, "web01"));
	/* a label longer than the spec's bound: none */
	{
		char big[VHOST_LABEL_LEN_MAX + 2];

		memset(big, 'x', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		EXPECT_NE(0, set_by(self->ys, mq, 0, NULL, 800, big));
	}
	EXPECT_EQ(MQ_PAIRS, count_with(self->ys, ids, MQ_PAIRS, 700, "web01"));
	EXPECT_EQ(0, adm_ntf_drain(mon, QUIET_MS, ntf, ARRAY_SIZE(ntf)));

	/* the label selects them: dev-set, a filtered dump; dev-get refuses */
	EXPECT_EQ(0, set_by(self->ys, NULL, 0, "web01", 900, NULL))
		TH_LOG("%s", self->ys->err.msg);
	EXPECT_EQ(MQ_PAIRS, count_with(self->ys, ids, MQ_PAIRS, 900, "web01"));
	EXPECT_EQ(0, count_with(self->ys, ids + MQ_PAIRS, 1, 900, NULL));
	EXPECT_EQ(MQ_PAIRS, dump_count(self->ys, NULL, "web01", 0));
	EXPECT_EQ(0, dump_count(self->ys, NULL, "web02", 0));
	EXPECT_EQ(-ENODEV, set_by(self->ys, NULL, 0, "web02", 900, NULL));
	EXPECT_TRUE(adm_msg_has(self->ys, "device not found"));
	/* label and TAP together: those both select; none: refused */
	EXPECT_EQ(-EINVAL, set_by(self->ys, self->n.ifname, 0, "web01", 901,
				  NULL));
	EXPECT_TRUE(adm_msg_has(self->ys, "no device matches all"))
		TH_LOG("%s", self->ys->err.msg);

	/* the owner (this process) selects all five */
	EXPECT_EQ(MQ_PAIRS + 1, dump_count(self->ys, NULL, NULL, getpid()));
	EXPECT_EQ(0, set_by(self->ys, NULL, getpid(), NULL, 1100, NULL))
		TH_LOG("%s", self->ys->err.msg);
	EXPECT_EQ(MQ_PAIRS + 1, count_with(self->ys, ids, MQ_PAIRS + 1, 1100,
					   NULL));
	/* a label "" takes it away */
	EXPECT_EQ(0, set_by(self->ys, mq, 0, NULL, 0, ""));
	EXPECT_EQ(0, dump_count(self->ys, NULL, "web01", 0));

	/*
	 * Each queue's worker: a thread of the owner, the same for the two
	 * queues of a device, another for each device.
	 */
	for (i = 0; i < MQ_PAIRS; i++) {
		uint32_t w[2] = {};

		for (q = 0; q < 2; q++) {
			qr = vhost_queue_get_req_alloc();
			vhost_queue_get_req_set_dev_id(qr, ids[i]);
			vhost_queue_get_req_set_index(qr, q);
			qa = vhost_queue_get(self->ys, qr);
			vhost_queue_get_req_free(qr);
			ASSERT_NE(NULL, qa) TH_LOG("%s", self->ys->err.msg);
			ASSERT_TRUE(!!qa->_present.worker_pid);
			w[q] = qa->worker_pid;
			vhost_queue_get_rsp_free(qa);
			snprintf(path, sizeof(path), "vhost%u", ids[i]);
			snprintf(want, sizeof(want), "queues/vq%d/worker_pid", q);
			ASSERT_EQ(0, sysfs_u64(path, want, &wp));
			EXPECT_EQ(w[q], wp);
		}
		EXPECT_EQ(w[0], w[1]);
		EXPECT_NE(getpid(), w[0]);
		snprintf(path, sizeof(path), "/proc/self/task/%u/comm", w[0]);
		f = fopen(path, "r");
		ASSERT_NE(NULL, f) TH_LOG("worker %u is no thread of ours", w[0]);
		ASSERT_NE(NULL, fgets(comm, sizeof(comm), f));
		fclose(f);
		snprintf(want, sizeof(want), "vhost-%d\n", getpid());
		EXPECT_STREQ(want, comm);
		EXPECT_NE(prev, w[0]);
		prev = w[0];
	}
	/* no owner, no worker */
	ASSERT_EQ(0, vnet_reset_owner(&v[0]));
	qr = vhost_queue_get_req_alloc();
	vhost_queue_get_req_set_dev_id(qr, ids[0]);
	vhost_queue_get_req_set_index(qr, 0);
	qa = vhost_queue_get(self->ys, qr);
	vhost_queue_get_req_free(qr);
	ASSERT_NE(NULL, qa);
	EXPECT_FALSE(!!qa->_present.worker_pid);
	vhost_queue_get_rsp_free(qa);

	ynl_sock_destroy(mon);
	for (i = 0; i < MQ_PAIRS; i++) {
		vnet_close(&v[i]);
		close(fds[i]);
	}
}

/* The kernel's uevents (NETLINK_KOBJECT_UEVENT, group 1): a fd or -errno. */
static int uevent_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
			NETLINK_KOBJECT_UEVENT);
	int sz = 4 << 20;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof(sz));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* One uevent: "KEY=VALUE" strings, NUL-separated. */
struct uev {
	char buf[8192];
	ssize_t len;
};

/* The value of key in e, or NULL. */
static const char *uev_get(const struct uev *e, const char *key)
{
	size_t kl = strlen(key);
	ssize_t off = 0;

	while (off < e->len) {
		const char *s = e->buf + off;

		if (!strncmp(s, key, kl) && s[kl] == '=')
			return s + kl + 1;
		off += strlen(s) + 1;
	}
	return NULL;
}

/* The next uevent of vhost device name within timeout_ms: 0 or -errno. */
static int uev_next(int fd, const char *name, int timeout_ms, struct uev *e)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	double end = now_ms() + timeout_ms;
	const char *path, *sub;
	size_t nl = strlen(name);

	for (;;) {
		int left = end - now_ms();

		if (left <= 0 || poll(&p, 1, left) <= 0)
			return -ETIMEDOUT;
		e->len = recv(fd, e->buf, sizeof(e->buf) - 1, 0);
		if (e->len < 0)
			return -errno;
		e->buf[e->len] = 0;
		path = uev_get(e, "DEVPATH");
		sub = uev_get(e, "SUBSYSTEM");
		if (path && sub && !strcmp(sub, "vhost") &&
		    strlen(path) > nl && path[strlen(path) - nl - 1] == '/' &&
		    !strcmp(path + strlen(path) - nl, name))
			return 0;
	}
}

/*
 * udev hears of a device once it is published (dev-get finds it at its
 * ADD), and of its owner, backend and label as they are set (CHANGE): each
 * uevent carries what a rule decides on, the id, the owner's uid, whether
 * the backend is in the device's namespace, the label; never the owner's
 * pid or the backend's name (vhost-admin.rst, "Security model").
 * Tunables alone send none.
 */
TEST_F(admin, uevents_carry_identity_owner_backend_label)
{
	struct vhost_dev_get_rsp *d;
	char want[32];
	struct uev e;
	int fd;

	fd = uevent_open();
	ASSERT_LE(0, fd) TH_LOG("uevent socket: %s", strerror(-fd));
	ASSERT_EQ(0, open_dev(self, true));

	ASSERT_EQ(0, uev_next(fd, self->name, 2000, &e));
	EXPECT_STREQ("add", uev_get(&e, "ACTION"));
	snprintf(want, sizeof(want), "%u", self->id);
	ASSERT_NE(NULL, uev_get(&e, "VHOST_ID"));
	EXPECT_STREQ(want, uev_get(&e, "VHOST_ID"));
	d = adm_get_name(self->ys, self->name);
	EXPECT_NE(NULL, d);
	if (d)
		vhost_dev_get_rsp_free(d);

	/* VHOST_SET_OWNER */
	ASSERT_EQ(0, uev_next(fd, self->name, 2000, &e));
	EXPECT_STREQ("change", uev_get(&e, "ACTION"));
	snprintf(want, sizeof(want), "%u", geteuid());
	ASSERT_NE(NULL, uev_get(&e, "VHOST_OWNER_UID"));
	EXPECT_STREQ(want, uev_get(&e, "VHOST_OWNER_UID"));
	EXPECT_EQ(NULL, uev_get(&e, "VHOST_OWNER_PID"));
	EXPECT_EQ(NULL, uev_get(&e, "VHOST_BACKEND_NETNS"));

	/* VHOST_NET_SET_BACKEND (the first queue's; the second adds none) */
	ASSERT_EQ(0, uev_next(fd, self->name, 2000, &e));
	EXPECT_STREQ("change", uev_get(&e, "ACTION"));
	EXPECT_STREQ("own", uev_get(&e, "VHOST_BACKEND_NETNS"));
	EXPECT_EQ(NULL, uev_get(&e, "VHOST_BACKEND_IFNAME"));
	EXPECT_EQ(NULL, uev_get(&e, "VHOST_BACKEND_IFINDEX"));
	EXPECT_EQ(-ETIMEDOUT, uev_next(fd, self->name, QUIET_MS, &e));

	/* tunables: no uevent; a label: one, with it */
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(7, -1, -1, -1)));
	EXPECT_EQ(-ETIMEDOUT, uev_next(fd, self->name, QUIET_MS, &e));
	ASSERT_EQ(0, set_by(self->ys, self->n.ifname, 0, NULL, 0, "web 01"));
	ASSERT_EQ(0, uev_next(fd, self->name, 2000, &e));
	EXPECT_STREQ("change", uev_get(&e, "ACTION"));
	EXPECT_STREQ("web 01", uev_get(&e, "VHOST_LABEL"));
	EXPECT_STREQ("own", uev_get(&e, "VHOST_BACKEND_NETNS"));
	/* the same label again: nothing changed, nothing sent */
	ASSERT_EQ(0, set_by(self->ys, self->n.ifname, 0, NULL, 0, "web 01"));
	EXPECT_EQ(-ETIMEDOUT, uev_next(fd, self->name, QUIET_MS, &e));

	/* the device's uevent file shows the same properties */
	{
		char path[128], line[128];
		bool id = false, label = false;
		FILE *f;

		snprintf(path, sizeof(path), "/sys/class/vhost/%s/uevent",
			 self->name);
		f = fopen(path, "r");
		ASSERT_NE(NULL, f);
		snprintf(want, sizeof(want), "VHOST_ID=%u\n", self->id);
		while (fgets(line, sizeof(line), f)) {
			id |= !strcmp(line, want);
			label |= !strcmp(line, "VHOST_LABEL=web 01\n");
		}
		fclose(f);
		EXPECT_TRUE(id);
		EXPECT_TRUE(label);
	}
	close_dev(self);
	ASSERT_EQ(0, uev_next(fd, self->name, 2000, &e));
	EXPECT_STREQ("remove", uev_get(&e, "ACTION"));
	close(fd);
}

/* The lines of a file into buf (NUL-terminated): its length, or -errno. */
static ssize_t read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = 0;
	close(fd);
	return n;
}

/* Whether a uevent or the text of a uevent file names the owner or backend. */
static bool uev_private(const struct uev *e, const char *file)
{
	static const char * const keys[] = {
		"VHOST_OWNER_PID", "VHOST_BACKEND_IFNAME",
		"VHOST_BACKEND_IFINDEX",
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(keys); i++) {
		if (e && uev_get(e, keys[i])) {
			fprintf(stderr, "# uevent has %s=%s\n", keys[i],
				uev_get(e, keys[i]));
			return true;
		}
		if (file && strstr(file, keys[i])) {
			fprintf(stderr, "# uevent file has %s\n", keys[i]);
			return true;
		}
	}
	return false;
}

/*
 * What the 0400 files hide, no other channel shows to an unprivileged
 * user of the host (uid 65534): neither the uevent file nor the uevents it
 * hears name the owner's pid or the backend; the queues' worker_pid (a
 * thread of the owner) is 0400 like owner_pid, and queue-get leaves
 * worker-pid out for it, not for root.
 */
TEST_F(admin, owner_and_backend_private_on_every_channel)
{
	struct vhost_queue_get_req *req;
	struct vhost_queue_get_rsp *q;
	char path[160];
	struct stat st;
	int sv[2], go;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct vhost_queue_get_rsp *cq;
		struct vhost_queue_get_req *cr;
		struct ynl_sock *ys;
		char name[IFNAMSIZ], text[4096];
		struct uev e;
		int fd, n = 0;

		close(sv[0]);
		CHILD_CHECK(!setgid(65534) && !setuid(65534));
		fd = uevent_open();
		CHILD_CHECK(fd >= 0);
		CHILD_CHECK(write(sv[1], "r", 1) == 1);
		CHILD_CHECK(read(sv[1], name, sizeof(name)) > 0);
		/* ADD, owner, backend: every one heard, none private */
		while (!uev_next(fd, name, 2000, &e)) {
			CHILD_CHECK(!uev_private(&e, NULL));
			n++;
		}
		CHILD_CHECK(n >= 3);
		snprintf(path, sizeof(path), "/sys/class/vhost/%s/uevent", name);
		CHILD_CHECK(read_file(path, text, sizeof(text)) > 0);
		CHILD_CHECK(strstr(text, "VHOST_OWNER_UID=0\n"));
		CHILD_CHECK(strstr(text, "VHOST_BACKEND_NETNS=own\n"));
		CHILD_CHECK(!uev_private(NULL, text));
		snprintf(path, sizeof(path),
			 "/sys/class/vhost/%s/queues/vq0/worker_pid", name);
		CHILD_CHECK(read_file(path, text, sizeof(text)) == -EACCES);
		ys = adm_open();
		CHILD_CHECK(ys);
		cr = vhost_queue_get_req_alloc();
		vhost_queue_get_req_set_dev_id(cr, atoi(name + 5));
		vhost_queue_get_req_set_index(cr, 0);
		cq = vhost_queue_get(ys, cr);
		CHILD_CHECK(cq && !cq->_present.worker_pid);
		vhost_queue_get_rsp_free(cq);
		vhost_queue_get_req_free(cr);
		ynl_sock_destroy(ys);
		_exit(0);
	}
	close(sv[1]);
	ASSERT_EQ(1, read(sv[0], &go, 1));
	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_LT(0, write(sv[0], self->name, strlen(self->name) + 1));
	EXPECT_EQ(0, wait_child(pid));
	close(sv[0]);

	snprintf(path, sizeof(path), "/sys/class/vhost/%s/queues/vq0/worker_pid",
		 self->name);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0400, st.st_mode & 0777);
	/* the host's administrator still reads it */
	req = vhost_queue_get_req_alloc();
	vhost_queue_get_req_set_dev_id(req, self->id);
	vhost_queue_get_req_set_index(req, 0);
	q = vhost_queue_get(self->ys, req);
	ASSERT_NE(NULL, q);
	EXPECT_NE(0, (int)q->_present.worker_pid);
	vhost_queue_get_rsp_free(q);
	vhost_queue_get_req_free(req);
}

/*
 * How many uevents of the vhost subsystem fd has queued until none came
 * for quiet_ms: drained; *adds counts the ADDs, *seen whether one was of
 * the device named name (if not NULL).
 */
static int uev_count_vhost(int fd, int quiet_ms, int *adds, const char *name,
			   bool *seen, char *last_add)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	const char *sub, *act, *path;
	struct uev e;
	int n = 0;

	while (poll(&p, 1, quiet_ms) > 0) {
		e.len = recv(fd, e.buf, sizeof(e.buf) - 1, 0);
		if (e.len <= 0)
			break;
		e.buf[e.len] = 0;
		sub = uev_get(&e, "SUBSYSTEM");
		act = uev_get(&e, "ACTION");
		if (sub && !strcmp(sub, "vhost")) {
			n++;
			if (adds && act && !strcmp(act, "add"))
				(*adds)++;
			path = uev_get(&e, "DEVPATH");
			if (name && act && !strcmp(act, "add") && path &&
			    strrchr(path, '/') && !strcmp(strrchr(path, '/') + 1, name))
				*seen = true;
			if (last_add && act && !strcmp(act, "add") && path &&
			    strrchr(path, '/'))
				snprintf(last_add, IFNAMSIZ, "%s",
					 strrchr(path, '/') + 1);
		}
	}
	return n;
}

/* Set a parameter of the vhost_admin module: 0 or -errno. */
static int admin_param_set(const char *param, uint64_t v)
{
	char path[128], buf[32];
	int fd, n, r = 0;

	snprintf(path, sizeof(path), "/sys/module/vhost_admin/parameters/%s",
		 param);
	n = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, buf, n) != n)
		r = -errno;
	close(fd);
	return r;
}

/* The storm's budget, below what the attacker reaches even under TCG. */
#define STORM_BURST 5
#define STORM_RATE 2

/*
 * An unprivileged user that opens and closes /dev/vhost-net in a loop (it
 * is 0666 as systemd ships it) costs the host's udevd a bounded number of
 * uevents: its ADDs come within its budget (uevent_burst, then uevent_rate
 * a second; set low here, STORM_*, for a guest that cannot open devices
 * faster than the defaults allow), each REMOVE only after an ADD; the
 * others are merged into nothing, as the device closed before its turn.
 * A device it then keeps open is still announced, late.  STORM_OPENS
 * (default 400) open/close, by STORM_PROCS processes (default 1) of the
 * user; STORM_PARAMS=keep measures the module's own budget instead of
 * STORM_*.  Uevents are counted as they come: a long storm would overflow
 * the socket.
 */
TEST_F_TIMEOUT(admin, uevent_storm_of_one_user_is_bounded, 3600)
{
	int opens = getenv("STORM_OPENS") ? atoi(getenv("STORM_OPENS")) : 400;
	int procs = getenv("STORM_PROCS") ? atoi(getenv("STORM_PROCS")) : 1;
	bool keep = getenv("STORM_PARAMS") &&
		    !strcmp(getenv("STORM_PARAMS"), "keep");
	int fd, n = 0, adds = 0, late_adds = 0, sv[2], r1, r2;
	char name[IFNAMSIZ] = "", last_add[IFNAMSIZ] = "";
	uint64_t rate = 0, burst = 0, use_rate, use_burst;
	bool seen = false;
	double t0, secs, bound;
	char c;
	struct stat st;
	pid_t pid;

	ASSERT_LT(0, procs);
	ASSERT_EQ(0, stat("/dev/vhost-net", &st));
	ASSERT_EQ(0, module_param_u64("vhost_admin", "uevent_rate", &rate));
	ASSERT_EQ(0, module_param_u64("vhost_admin", "uevent_burst", &burst));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	fd = uevent_open();
	ASSERT_LE(0, fd);
	use_rate = keep ? rate : STORM_RATE;
	use_burst = keep ? burst : STORM_BURST;
	ASSERT_EQ(0, admin_param_set("uevent_rate", use_rate));
	ASSERT_EQ(0, admin_param_set("uevent_burst", use_burst));
	t0 = now_ms();
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		int i, p, v;

		close(sv[0]);
		/* as systemd's 50-udev-default.rules makes it: 0666 */
		CHILD_CHECK(!unshare(CLONE_NEWNS));
		CHILD_CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
		CHILD_CHECK(!mount("tmpfs", "/mnt", "tmpfs", 0, NULL));
		CHILD_CHECK(!mknod("/mnt/vhost-net", S_IFCHR | 0666, st.st_rdev));
		CHILD_CHECK(!chmod("/mnt/vhost-net", 0666));
		CHILD_CHECK(!setgid(65534) && !setuid(65534));
		for (p = 0; p < procs; p++) {
			pid_t w = fork();

			CHILD_CHECK(w >= 0);
			if (w)
				continue;
			for (i = p; i < opens; i += procs) {
				v = open("/mnt/vhost-net", O_RDWR | O_CLOEXEC);
				CHILD_CHECK(v >= 0);
				close(v);
			}
			_exit(0);
		}
		for (p = 0; p < procs; p++) {
			int st;

			CHILD_CHECK(wait(&st) > 0 && WIFEXITED(st) &&
				    !WEXITSTATUS(st));
		}
		/* one it keeps: announced once its budget allows */
		v = open("/mnt/vhost-net", O_RDWR | O_CLOEXEC);
		CHILD_CHECK(v >= 0);
		CHILD_CHECK(!vhost_fd_name(v, name, sizeof(name)));
		CHILD_CHECK(write(sv[1], name, sizeof(name)) == sizeof(name));
		CHILD_CHECK(read(sv[1], &c, 1) == 1);
		_exit(0);
	}
	close(sv[1]);
	/* counted as they come, until the storm is over */
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = sv[0], .events = POLLIN },
			{ .fd = fd, .events = POLLIN },
		};

		ASSERT_LT(0, poll(p, 2, -1));
		if (p[1].revents & POLLIN)
			n += uev_count_vhost(fd, 0, &adds, NULL, NULL, last_add);
		else if (p[0].revents)
			break;
	}
	EXPECT_EQ(sizeof(name), read(sv[0], name, sizeof(name)));
	name[IFNAMSIZ - 1] = 0;
	secs = (now_ms() - t0) / 1000;
	/* the kept device's ADD, sent late or already counted (the last) */
	seen = !strcmp(last_add, name);
	n += uev_count_vhost(fd, 1000 + 1000 / use_rate, &adds, name, &seen,
			     NULL);
	EXPECT_EQ(1, write(sv[0], "c", 1));
	EXPECT_EQ(0, wait_child(pid));
	close(sv[0]);
	late_adds = adds;
	/* the device it kept was announced; its REMOVE follows its ADD */
	n += uev_count_vhost(fd, 1000, &adds, NULL, NULL, NULL);
	r1 = admin_param_set("uevent_rate", rate);
	r2 = admin_param_set("uevent_burst", burst);
	EXPECT_EQ(0, r1);
	EXPECT_EQ(0, r2);
	bound = use_burst + use_rate * (secs + 2);
	TH_LOG("%d open/close by uid 65534 (%d processes) in %.1f s: %d vhost uevents reached udevd (%.1f/s, %d ADD), bound %.0f ADD at %llu/s after %llu",
	       opens, procs, secs, n, n / secs, adds, bound,
	       (unsigned long long)use_rate, (unsigned long long)use_burst);
	EXPECT_LE(late_adds, bound);
	EXPECT_LE(n, 2 * adds);
	/* the kept device was announced while open; nothing added after */
	EXPECT_TRUE(seen) TH_LOG("no ADD of %s", name);
	EXPECT_EQ(adds, late_adds);
	close(fd);
}

/*
 * A label is printable ASCII: a newline (which would forge a KEY=VALUE
 * line in the uevent file), an escape sequence, a byte that is not ASCII
 * are refused with EINVAL and the extack's reason; the label stays.
 */
TEST_F(admin, label_charset_refused_with_extack)
{
	static const char * const bad[] = {
		"x\nVHOST_FORGED=1", "\x1b[31mred", "tab\there", "caf\xc3\xa9",
		"del\x7f",
	};
	char path[128], text[4096];
	struct vhost_dev_get_rsp *d;
	unsigned int i;

	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, set_by(self->ys, self->n.ifname, 0, NULL, 0, "web 01 ~{}"));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		EXPECT_EQ(-EINVAL, set_by(self->ys, self->n.ifname, 0, NULL, 0,
					  bad[i])) TH_LOG("label %u", i);
		EXPECT_TRUE(adm_msg_has(self->ys, "printable ASCII"));
	}
	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);
	EXPECT_STREQ("web 01 ~{}", d->label);
	vhost_dev_get_rsp_free(d);
	snprintf(path, sizeof(path), "/sys/class/vhost/%s/uevent", self->name);
	ASSERT_LT(0, read_file(path, text, sizeof(text)));
	EXPECT_EQ(NULL, strstr(text, "FORGED"));
}

/*
 * A kick pending when the kick eventfd is set (vhost_poll_start() finds
 * it) is counted once, under the eventfd's waitqueue lock like every
 * other (lockdep asserts it; a splat fails the run), while the guest
 * keeps kicking: the count is exactly the kicks made.
 */
TEST_F(admin, kick_pending_at_poll_start_counted_once)
{
	struct adm_stats dev, rxq, txq;
	struct vhost_vring_file f = { .index = 1 };
	uint64_t before, one = 1;
	int i, efd[2];

	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, adm_stats_dev(self->ys, self->id, &dev, &rxq, &txq));
	before = txq.v[VHOST_A_STATS_KICKS];
	for (i = 0; i < 2; i++) {
		efd[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		ASSERT_LE(0, efd[i]);
		/* pending before the poll starts */
		ASSERT_EQ(sizeof(one), write(efd[i], &one, sizeof(one)));
	}
	for (i = 0; i < 64; i++) {
		f.fd = efd[i & 1];
		ASSERT_EQ(0, ioctl(self->n.vhost_fd, VHOST_SET_VRING_KICK, &f));
	}
	ASSERT_EQ(0, adm_stats_dev(self->ys, self->id, &dev, &rxq, &txq));
	EXPECT_EQ(before + 64, txq.v[VHOST_A_STATS_KICKS]);
	close(efd[0]);
	close(efd[1]);
}

/*
 * Zero-copy on a backend that cannot send it (a packet socket): set, with
 * a warning saying its packets are copied; on a TAP, no warning.
 */
TEST_F(admin, zerocopy_on_a_packet_socket_warns)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_protocol = htons(ETH_P_ALL) };
	struct vhost_dev_get_rsp *d;
	int fd;

	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, -1, -1)));
	EXPECT_FALSE(adm_msg_has(self->ys, "cannot send zero-copy"))
		TH_LOG("%s", self->ys->err.msg);
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 0, -1, -1)));

	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	ASSERT_LE(0, fd);
	sll.sll_ifindex = if_nametoindex(self->n.ifname);
	ASSERT_EQ(0, bind(fd, (struct sockaddr *)&sll, sizeof(sll)));
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, fd));
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, -1, -1)));
	/* a warning: the ack has the message (no offset: that is errors') */
	EXPECT_TRUE(adm_msg_has(self->ys, "cannot send zero-copy: its packets are copied"))
		TH_LOG("no warning: \"%s\"", self->ys->err.msg);
	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(1, d->zerocopy);
	vhost_dev_get_rsp_free(d);
	close(fd);
}

/*
 * A macvtap backend (the other one that sends zero-copy) is reported as a
 * TAP is: backend-ifname, selection by it, VHOST_BACKEND_IFNAME.
 */
TEST_F(admin, macvtap_is_reported_as_backend)
{
	struct vhost_dev_get_req *req;
	struct vhost_dev_get_rsp *d;
	char path[64], mvt[IFNAMSIZ];
	int fd, len = sizeof(struct virtio_net_hdr_v1);
	unsigned int ifindex;

	snprintf(mvt, sizeof(mvt), "vhmvt%d", getpid() % 100000);
	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, system("ip link add name vhmvtlow type dummy 2>/dev/null; ip link set vhmvtlow up"));
	snprintf(path, sizeof(path),
		 "ip link add link vhmvtlow name %s type macvtap && ip link set %s up",
		 mvt, mvt);
	ASSERT_EQ(0, system(path)) TH_LOG("no macvtap (CONFIG_MACVTAP)");
	ifindex = if_nametoindex(mvt);
	ASSERT_NE(0, ifindex);
	snprintf(path, sizeof(path), "/dev/tap%u", ifindex);
	fd = open(path, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd) TH_LOG("%s: %s", path, strerror(errno));
	ASSERT_EQ(0, ioctl(fd, TUNSETVNETHDRSZ, &len));
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_TX, fd));
	ASSERT_EQ(0, vnet_set_backend(&self->n, VNET_RX, fd));

	d = adm_get(self->ys, self->id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(ifindex, d->backend_ifindex);
	EXPECT_TRUE(d->backend_ifname && !strcmp(d->backend_ifname, mvt))
		TH_LOG("backend-ifname %s", d->backend_ifname ?: "(none)");
	vhost_dev_get_rsp_free(d);
	req = vhost_dev_get_req_alloc();
	vhost_dev_get_req_set_backend_ifname(req, mvt);
	d = vhost_dev_get(self->ys, req);
	vhost_dev_get_req_free(req);
	ASSERT_NE(NULL, d) TH_LOG("%s", self->ys->err.msg);
	EXPECT_EQ(self->id, d->id);
	vhost_dev_get_rsp_free(d);
	/* and zero-copy on it is no warning */
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(-1, 1, -1, -1)));
	EXPECT_FALSE(adm_msg_has(self->ys, "cannot send zero-copy"));

	close_dev(self);
	close(fd);
	snprintf(path, sizeof(path), "ip link del %s; ip link del vhmvtlow", mvt);
	EXPECT_EQ(0, system(path));
}

/* A closed device's id is not given to the next one. */
TEST_F(admin, ids_are_not_reused_at_once)
{
	int64_t ids[8];
	int fd, i, j;

	for (i = 0; i < 8; i++) {
		fd = open("/dev/vhost-net", O_RDWR);
		ASSERT_GE(fd, 0);
		ids[i] = vhost_fd_id(fd);
		ASSERT_LE(0, ids[i]);
		close(fd);
		for (j = 0; j < i; j++)
			EXPECT_NE(ids[j], ids[i]);
	}
	EXPECT_EQ(NULL, adm_get(self->ys, ids[7]));
	EXPECT_EQ(-ENODEV, adm_err(self->ys));
}

struct toggler {
	uint32_t id;
	bool stop;		/* __atomic */
	int sets, errors;
};

/* Flip zerocopy and cycle the metadata mode as fast as netlink goes. */
static void *toggle(void *arg)
{
	struct toggler *t = arg;
	struct ynl_sock *ys = adm_open();

	if (!ys) {
		t->errors++;
		return NULL;
	}
	for (int i = 0; !__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE); i++) {
		if (adm_set(ys, t->id, ADM_TUN(-1, i & 1, -1, (i >> 1) % 3)))
			t->errors++;
		t->sets++;
		usleep(2000);
	}
	ynl_sock_destroy(ys);
	return NULL;
}

TEST_F(admin, switch_zerocopy_and_metamap_mid_traffic)
{
	static const size_t lens[] = { 64, 1514, 300, 1000, 900 };
	struct toggler t = { 0 };
	char why[VNET_WHY_LEN];
	struct counts c;
	pthread_t th;
	uint64_t v;
	int n = 3000, r;

	ASSERT_EQ(0, open_dev(self, true));
	t.id = self->id;
	ASSERT_EQ(0, pthread_create(&th, NULL, toggle, &t));
	r = vnet_check_tx(&self->n, lens, 5, n, 32, 0, why);
	if (!r)
		r = vnet_check_rx(&self->n, lens, 5, n / 3, 32, 0, why);
	__atomic_store_n(&t.stop, true, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	TH_LOG("%d switches during the traffic", t.sets);
	EXPECT_EQ(0, t.errors);
	EXPECT_GT(t.sets, 4);
	ASSERT_EQ(0, zcopy_settle(self, &c));
	EXPECT_EQ(n, c.dev.v[VHOST_A_STATS_TX_PACKETS]);
	EXPECT_EQ(n / 3, c.dev.v[VHOST_A_STATS_RX_PACKETS]);
	EXPECT_EQ(0, c.dev.v[VHOST_A_STATS_TX_ERRORS]);
	/* Both paths were taken. */
	EXPECT_GT(c.txq.v[VHOST_A_STATS_ZCOPY_SENT] +
		  c.txq.v[VHOST_A_STATS_ZCOPY_FALLBACK], 0);
	EXPECT_GT(c.dev.v[VHOST_A_STATS_METAMAP_FAST], 0);
	/* The last setting stuck on every queue. */
	ASSERT_EQ(0, sysfs_u64(self->name, "metamap", &v));
	if (!v) {
		ASSERT_EQ(0, sysfs_u64(self->name, "queues/vq1/metamap_valid", &v));
		EXPECT_EQ(0, v);
	}
}

/* One run of cli.py: its arguments, its output file, what it printed. */
struct cli_run {
	char args[512];
	char out_path[64];
	char out[1 << 15];
	pid_t pid;
	int status;
};

/* Start "cd <ynl> && cli.py --spec <spec> <args>", output to a file. */
static int cli_start(struct cli_run *r, const char *tree, int n)
{
	char *cmd;

	snprintf(r->out_path, sizeof(r->out_path), "/tmp/vhost-admin-cli.%d.%d",
		 getpid(), n);
	if (asprintf(&cmd,
		     "cd %s/tools/net/ynl && exec python3 ./cli.py --output-json --spec %s %s > %s 2>&1",
		     tree, "../../../Documentation/netlink/specs/vhost.yaml",
		     r->args, r->out_path) < 0)
		return -ENOMEM;
	r->status = -1;
	r->pid = fork();
	if (r->pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	free(cmd);
	return r->pid < 0 ? -errno : 0;
}

/* Its exit status, once it has ended, and its output. */
static void cli_collect(struct cli_run *r)
{
	FILE *f = fopen(r->out_path, "r");
	size_t n = 0;

	if (f) {
		n = fread(r->out, 1, sizeof(r->out) - 1, f);
		fclose(f);
		unlink(r->out_path);
	}
	r->out[n] = 0;
}

/*
 * The 6.12 tree's generic YNL client, given our spec, validates it against
 * the genetlink schema (no --no-schema) and does or dumps every operation,
 * reports an error with its extack, and prints the notifications of
 * changes made meanwhile.  Python under TCG with KASAN is slow (10-20 s a
 * run): the runs go in parallel.
 */
TEST_F_TIMEOUT(admin, ynl_cli_does_and_dumps_every_op, 300)
{
	/* The project's build/linux, next to build/selftests/vhost. */
	const char *tree = getenv("VHOST_TREE") ?: "../../linux";
	enum { MULTI, DEV_DUMP, QUEUE_DUMP, STATS_DUMP, ERROR, MONITOR, NRUNS };
	static struct cli_run runs[NRUNS];
	char path[512], want[64];
	double t0 = now_ms();
	int i, left, status;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/tools/net/ynl/cli.py", tree);
	i = access(path, R_OK) ? -errno : 0;
	ASSERT_EQ(0, i) TH_LOG("%s: %s (no kernel tree with tools/net/ynl: set VHOST_TREE)",
			       path, strerror(-i));
	ASSERT_EQ(0, open_dev(self, true));
	/* what the multi run sets too (then changing nothing) */
	ASSERT_EQ(0, adm_set(self->ys, self->id, ADM_TUN(7, -1, -1, -1)));

	/* the do operations, in one request */
	snprintf(runs[MULTI].args, sizeof(runs[MULTI].args),
		 "--multi dev-get '{\"id\": %u}' --multi dev-get '{\"backend-ifname\": \"%s\"}' --multi queue-get '{\"dev-id\": %u, \"index\": 1}' --multi dev-set '{\"name\": \"%s\", \"admin-busypoll-us\": 7}'",
		 self->id, self->n.ifname, self->id, self->name);
	snprintf(runs[DEV_DUMP].args, sizeof(runs[0].args), "--dump dev-get");
	snprintf(runs[QUEUE_DUMP].args, sizeof(runs[0].args),
		 "--dump queue-get --json '{\"dev-id\": %u}'", self->id);
	snprintf(runs[STATS_DUMP].args, sizeof(runs[0].args),
		 "--dump stats-get --json '{\"scope\": \"queue\"}'");
	snprintf(runs[ERROR].args, sizeof(runs[0].args),
		 "--do dev-set --json '{\"id\": %u, \"zerocopy\": 2}'", self->id);
	snprintf(runs[MONITOR].args, sizeof(runs[0].args),
		 "--subscribe monitor --sleep 5");
	for (i = 0; i < NRUNS; i++)
		ASSERT_EQ(0, cli_start(&runs[i], tree, i));

	/* changes for the monitor, every 250 ms until every run ended */
	for (i = 0, left = NRUNS; left && now_ms() - t0 < 250000; i++) {
		EXPECT_EQ(0, adm_set(self->ys, self->id,
				     ADM_TUN(-1, -1, 300 + (i & 1), -1)));
		usleep(250000);
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			for (int k = 0; k < NRUNS; k++)
				if (runs[k].pid == pid)
					runs[k].status = WIFEXITED(status) ?
						WEXITSTATUS(status) : 128;
			left--;
		}
	}
	TH_LOG("%d runs of cli.py in %.1f s", NRUNS, (now_ms() - t0) / 1000);
	for (i = 0; i < NRUNS; i++)
		cli_collect(&runs[i]);

	for (i = 0; i < NRUNS; i++)
		EXPECT_EQ(i == ERROR ? 1 : 0, runs[i].status)
			TH_LOG("%s: %s", runs[i].args, runs[i].out);
	snprintf(want, sizeof(want), "\"name\": \"%s\"", self->name);
	EXPECT_NE(NULL, strstr(runs[MULTI].out, want)) TH_LOG("%s", runs[MULTI].out);
	snprintf(want, sizeof(want), "\"backend-ifname\": \"%s\"", self->n.ifname);
	EXPECT_NE(NULL, strstr(runs[MULTI].out, want)) TH_LOG("%s", runs[MULTI].out);
	EXPECT_NE(NULL, strstr(runs[MULTI].out, "\"owner-busypoll-us\": 0"))
		TH_LOG("%s", runs[MULTI].out);
	EXPECT_NE(NULL, strstr(runs[MULTI].out, "\"busypoll-us\": 7"))
		TH_LOG("%s", runs[MULTI].out);
	snprintf(want, sizeof(want), "\"id\": %u", self->id);
	EXPECT_NE(NULL, strstr(runs[DEV_DUMP].out, want)) TH_LOG("%s", runs[DEV_DUMP].out);
	EXPECT_NE(NULL, strstr(runs[DEV_DUMP].out, "\"admin-busypoll-us\": 7"))
		TH_LOG("%s", runs[DEV_DUMP].out);
	snprintf(want, sizeof(want), "\"dev-id\": %u", self->id);
	EXPECT_NE(NULL, strstr(runs[QUEUE_DUMP].out, want)) TH_LOG("%s", runs[QUEUE_DUMP].out);
	EXPECT_NE(NULL, strstr(runs[QUEUE_DUMP].out, "\"metamap-valid\""))
		TH_LOG("%s", runs[QUEUE_DUMP].out);
	EXPECT_NE(NULL, strstr(runs[STATS_DUMP].out, want)) TH_LOG("%s", runs[STATS_DUMP].out);
	EXPECT_NE(NULL, strstr(runs[STATS_DUMP].out, "\"queue-type\": \"tx\""))
		TH_LOG("%s", runs[STATS_DUMP].out);
	EXPECT_NE(NULL, strstr(runs[STATS_DUMP].out, "\"tx-packets\""))
		TH_LOG("%s", runs[STATS_DUMP].out);
	/* the error and the attribute it points at */
	EXPECT_NE(NULL, strstr(runs[ERROR].out, "zerocopy")) TH_LOG("%s", runs[ERROR].out);
	/* notifications */
	EXPECT_NE(NULL, strstr(runs[MONITOR].out, "dev-change-ntf"))
		TH_LOG("%s", runs[MONITOR].out);
	snprintf(want, sizeof(want), "\"id\": %u", self->id);
	EXPECT_NE(NULL, strstr(runs[MONITOR].out, want)) TH_LOG("%s", runs[MONITOR].out);
}

TEST_HARNESS_MAIN
