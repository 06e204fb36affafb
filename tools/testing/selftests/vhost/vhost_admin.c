// SPDX-License-Identifier: GPL-2.0
/*
 * The vhost admin plane: the "vhost" generic netlink family (libnl-genl-3),
 * /sys/class/vhost and the per-device tunables, checked against what the
 * userspace driver of vhost_net_lib really sent, received, kicked and was
 * called for.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/vhost_netlink.h>
#include <netlink/attr.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>
#include <sched.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "vhost_net_lib.h"

#define MAX_DEVS 64

/* One dev-get or queue-get reply, or a notification. */
struct obj {
	int cmd;
	bool has[VHOST_A_DEV_MAX + 1];
	uint64_t v[VHOST_A_DEV_MAX + 1];
	char name[IFNAMSIZ];
	char ifname[IFNAMSIZ];
	bool has_st[VHOST_A_STATS_MAX + 1];
	uint64_t st[VHOST_A_STATS_MAX + 1];
};

struct nlc {
	struct nl_sock *sk;
	int family;
	int err;			/* of the last request */
	char msg[256];			/* its extack message */
	bool bad_attr;			/* the kernel pointed at an attribute */
	struct obj objs[MAX_DEVS];
	int nobjs;
};

static uint64_t attr_uint(struct nlattr *a)
{
	return nla_len(a) == 8 ? nla_get_u64(a) : nla_get_u32(a);
}

static int parse_obj(struct nl_msg *m, void *arg)
{
	struct nlc *c = arg;
	struct genlmsghdr *g = nlmsg_data(nlmsg_hdr(m));
	struct nlattr *tb[VHOST_A_DEV_MAX + 1], *st[VHOST_A_STATS_MAX + 1];
	int stats_attr = VHOST_A_DEV_STATS, max = VHOST_A_DEV_MAX, i;
	struct obj *o;

	if (c->nobjs == MAX_DEVS)
		return NL_SKIP;
	o = &c->objs[c->nobjs++];
	memset(o, 0, sizeof(*o));
	o->cmd = g->cmd;
	if (g->cmd == VHOST_CMD_QUEUE_GET) {
		stats_attr = VHOST_A_QUEUE_STATS;
		max = VHOST_A_QUEUE_MAX;
	}
	if (genlmsg_parse(nlmsg_hdr(m), 0, tb, max, NULL))
		return NL_SKIP;
	for (i = 1; i <= max; i++) {
		if (!tb[i])
			continue;
		o->has[i] = true;
		if (i == stats_attr) {
			nla_parse_nested(st, VHOST_A_STATS_MAX, tb[i], NULL);
			for (int s = 1; s <= VHOST_A_STATS_MAX; s++)
				if (st[s]) {
					o->has_st[s] = true;
					o->st[s] = attr_uint(st[s]);
				}
		} else if (max == VHOST_A_DEV_MAX && i == VHOST_A_DEV_NAME) {
			snprintf(o->name, sizeof(o->name), "%s", nla_get_string(tb[i]));
		} else if (max == VHOST_A_DEV_MAX && i == VHOST_A_DEV_BACKEND_IFNAME) {
			snprintf(o->ifname, sizeof(o->ifname), "%s", nla_get_string(tb[i]));
		} else if (nla_len(tb[i]) == 1) {
			o->v[i] = nla_get_u8(tb[i]);
		} else {
			o->v[i] = attr_uint(tb[i]);
		}
	}
	return NL_OK;
}

/* The kernel's error and its extack message. */
static int on_error(struct sockaddr_nl *sa, struct nlmsgerr *e, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	struct nlc *c = arg;
	size_t off;

	c->err = e->error;
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return NL_STOP;
	off = NLMSG_HDRLEN + sizeof(*e);
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)nlh + off),
		      nlh->nlmsg_len - off, NULL))
		return NL_STOP;
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(c->msg, sizeof(c->msg), "%s",
			 nla_get_string(tb[NLMSGERR_ATTR_MSG]));
	c->bad_attr = tb[NLMSGERR_ATTR_OFFS] != NULL;
	return NL_STOP;
}

static int no_seq_check(struct nl_msg *m, void *arg)
{
	return NL_OK;
}

static int on_ack(struct nl_msg *m, void *arg)
{
	((struct nlc *)arg)->err = 0;
	return NL_STOP;
}

static int on_finish(struct nl_msg *m, void *arg)
{
	struct nlmsghdr *nlh = nlmsg_hdr(m);

	/* A dump that failed says so in NLMSG_DONE. */
	if (nlh->nlmsg_len >= NLMSG_HDRLEN + sizeof(int))
		((struct nlc *)arg)->err = *(int *)nlmsg_data(nlh);
	return NL_STOP;
}

static int nlc_open(struct nlc *c)
{
	int one = 1;

	memset(c, 0, sizeof(*c));
	c->sk = nl_socket_alloc();
	if (!c->sk || genl_connect(c->sk))
		return -1;
	setsockopt(nl_socket_get_fd(c->sk), SOL_NETLINK, NETLINK_EXT_ACK,
		   &one, sizeof(one));
	c->family = genl_ctrl_resolve(c->sk, VHOST_FAMILY_NAME);
	return c->family < 0 ? -1 : 0;
}

static void nlc_close(struct nlc *c)
{
	if (c->sk)
		nl_socket_free(c->sk);
	c->sk = NULL;
}

static struct nl_msg *nlc_msg(struct nlc *c, int cmd, int flags)
{
	struct nl_msg *m = nlmsg_alloc();

	genlmsg_put(m, NL_AUTO_PORT, NL_AUTO_SEQ, c->family, 0, flags, cmd,
		    VHOST_FAMILY_VERSION);
	return m;
}

/* Send m, collect replies into c->objs; returns the kernel's error. */
static int nlc_run(struct nlc *c, struct nl_msg *m)
{
	struct nl_cb *cb = nl_cb_alloc(NL_CB_CUSTOM);

	c->err = 1;
	c->nobjs = 0;
	c->msg[0] = 0;
	c->bad_attr = false;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, parse_obj, c);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_ack, c);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_finish, c);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, c);
	if (nl_send_auto(c->sk, m) < 0)
		c->err = -EIO;
	while (c->err == 1)
		if (nl_recvmsgs(c->sk, cb) < 0 && c->err == 1)
			c->err = -EIO;
	nl_cb_put(cb);
	nlmsg_free(m);
	return c->err;
}

static int dev_dump(struct nlc *c)
{
	return nlc_run(c, nlc_msg(c, VHOST_CMD_DEV_GET, NLM_F_DUMP));
}

static int dev_get(struct nlc *c, const char *name, struct obj *o)
{
	struct nl_msg *m = nlc_msg(c, VHOST_CMD_DEV_GET, NLM_F_ACK);
	int err;

	nla_put_string(m, VHOST_A_DEV_NAME, name);
	err = nlc_run(c, m);
	if (!err && c->nobjs == 1)
		*o = c->objs[0];
	return err ?: c->nobjs == 1 ? 0 : -EPROTO;
}

static int queue_get(struct nlc *c, uint32_t id, uint32_t index, struct obj *o)
{
	struct nl_msg *m = nlc_msg(c, VHOST_CMD_QUEUE_GET, NLM_F_ACK);
	int err;

	nla_put_u32(m, VHOST_A_QUEUE_DEV_ID, id);
	nla_put_u32(m, VHOST_A_QUEUE_INDEX, index);
	err = nlc_run(c, m);
	if (!err && c->nobjs == 1)
		*o = c->objs[0];
	return err ?: c->nobjs == 1 ? 0 : -EPROTO;
}

/* Tunables to set; -1 leaves one out of the request. */
struct tun {
	int64_t busypoll_us, zerocopy, zcopy_min_len, metamap;
};

#define TUN_NONE { -1, -1, -1, -1 }

static int dev_set(struct nlc *c, const char *name, struct tun t)
{
	struct nl_msg *m = nlc_msg(c, VHOST_CMD_DEV_SET, NLM_F_ACK);

	nla_put_string(m, VHOST_A_DEV_NAME, name);
	if (t.busypoll_us >= 0)
		nla_put_u32(m, VHOST_A_DEV_BUSYPOLL_US, t.busypoll_us);
	if (t.zerocopy >= 0)
		nla_put_u8(m, VHOST_A_DEV_ZEROCOPY, t.zerocopy);
	if (t.zcopy_min_len >= 0)
		nla_put_u32(m, VHOST_A_DEV_ZCOPY_MIN_LEN, t.zcopy_min_len);
	if (t.metamap >= 0)
		nla_put_u8(m, VHOST_A_DEV_METAMAP, t.metamap);
	return nlc_run(c, m);
}

static int sysfs_u64(const char *name, const char *file, uint64_t *v)
{
	char path[256];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/class/vhost/%s/%s", name, file);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%" SCNi64, v) == 1;
	fclose(f);
	return ok ? 0 : -EINVAL;
}

FIXTURE(admin) {
	struct nlc nl;
	struct vnet n;
	bool open;
	char name[IFNAMSIZ];
	struct obj dev;
};

FIXTURE_SETUP(admin)
{
	memset(&self->n, 0, sizeof(self->n));
	if (nlc_open(&self->nl))
		SKIP(return, "no vhost generic netlink family");
}

FIXTURE_TEARDOWN(admin)
{
	if (self->open)
		vnet_close(&self->n);
	nlc_close(&self->nl);
}

/* A device with rings set up and its backend attached, and its name. */
static int open_dev(FIXTURE_DATA(admin) *self, bool event_idx)
{
	struct vnet_opts o = { .ring_num = 256, .event_idx = event_idx };
	int r = vnet_open(&self->n, &o);

	if (r)
		return r;
	self->open = true;
	vnet_rx_fill(&self->n);
	return vhost_fd_name(self->n.vhost_fd, self->name,
			     sizeof(self->name));
}

static int refresh(FIXTURE_DATA(admin) *self)
{
	return dev_get(&self->nl, self->name, &self->dev);
}

TEST_F(admin, dump_lists_exactly_the_open_devices)
{
	char names[3][IFNAMSIZ];
	int fds[3], i, j, seen;

	for (i = 0; i < 3; i++) {
		fds[i] = open("/dev/vhost-net", O_RDWR);
		ASSERT_GE(fds[i], 0);
		ASSERT_EQ(0, vhost_fd_name(fds[i], names[i], IFNAMSIZ));
	}
	for (int round = 0; round < 2; round++) {
		ASSERT_EQ(0, dev_dump(&self->nl));
		EXPECT_EQ(3 - round, self->nl.nobjs);
		for (i = round, seen = 0; i < 3; i++)
			for (j = 0; j < self->nl.nobjs; j++)
				seen += !strcmp(self->nl.objs[j].name, names[i]);
		EXPECT_EQ(3 - round, seen);
		/* Closing the first one removes it, and only it. */
		close(fds[round]);
	}
	close(fds[2]);
	ASSERT_EQ(0, dev_dump(&self->nl));
	EXPECT_EQ(0, self->nl.nobjs);
}

TEST_F(admin, get_reports_device_state)
{
	struct nl_msg *m;
	struct obj o;
	uint64_t v;

	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, refresh(self));
	o = self->dev;
	EXPECT_EQ(VHOST_DEV_TYPE_NET, o.v[VHOST_A_DEV_TYPE]);
	EXPECT_EQ(2, o.v[VHOST_A_DEV_NUM_QUEUES]);
	EXPECT_EQ(self->n.features, o.v[VHOST_A_DEV_FEATURES]);
	EXPECT_EQ(getpid(), o.v[VHOST_A_DEV_OWNER_PID]);
	EXPECT_STREQ(self->n.ifname, o.ifname);
	EXPECT_EQ(if_nametoindex(self->n.ifname), o.v[VHOST_A_DEV_BACKEND_IFINDEX]);
	/* by id, the same device */
	m = nlc_msg(&self->nl, VHOST_CMD_DEV_GET, NLM_F_ACK);
	nla_put_u32(m, VHOST_A_DEV_ID, o.v[VHOST_A_DEV_ID]);
	ASSERT_EQ(0, nlc_run(&self->nl, m));
	EXPECT_STREQ(self->name, self->nl.objs[0].name);
	/* sysfs agrees */
	ASSERT_EQ(0, sysfs_u64(self->name, "owner_pid", &v));
	EXPECT_EQ(getpid(), v);
	ASSERT_EQ(0, sysfs_u64(self->name, "backend_ifindex", &v));
	EXPECT_EQ(o.v[VHOST_A_DEV_BACKEND_IFINDEX], v);
	ASSERT_EQ(0, sysfs_u64(self->name, "features", &v));
	EXPECT_EQ(self->n.features, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "queues/vq1/num", &v));
	EXPECT_EQ(256, v);
}

TEST_F(admin, missing_device_is_enodev)
{
	struct obj o;
	struct nl_msg *m;

	EXPECT_EQ(-ENODEV, dev_get(&self->nl, "vhost999999", &o));
	EXPECT_STREQ("device not found", self->nl.msg);
	EXPECT_TRUE(self->nl.bad_attr);
	EXPECT_EQ(-ENODEV, dev_set(&self->nl, "vhost999999",
				   (struct tun){ 10, -1, -1, -1 }));
	EXPECT_STREQ("device not found", self->nl.msg);
	/* neither id nor name */
	m = nlc_msg(&self->nl, VHOST_CMD_DEV_GET, NLM_F_ACK);
	EXPECT_EQ(-EINVAL, nlc_run(&self->nl, m));
	EXPECT_STREQ("device id or name required", self->nl.msg);
	EXPECT_EQ(-ENODEV, queue_get(&self->nl, 999999, 0, &o));
}

TEST_F(admin, out_of_range_changes_nothing)
{
	static const struct { struct tun t; const char *what; } bad[] = {
		{ { VHOST_BUSYPOLL_US_MAX + 1, -1, -1, -1 }, "busypoll-us" },
		{ { -1, 2, -1, -1 }, "zerocopy" },
		{ { -1, -1, 0, -1 }, "zcopy-min-len 0" },
		{ { -1, -1, VHOST_ZCOPY_MIN_LEN_MAX + 1, -1 }, "zcopy-min-len" },
		{ { -1, -1, -1, 2 }, "metamap" },
		/* valid values beside an invalid one: none applied */
		{ { 77, 1, 300, 2 }, "all but metamap valid" },
		{ { 77, 1, 0, 0 }, "all but zcopy-min-len valid" },
	};
	struct obj before, after, q;
	unsigned int i;

	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, refresh(self));
	before = self->dev;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		EXPECT_EQ(-ERANGE, dev_set(&self->nl, self->name, bad[i].t))
			TH_LOG("%s accepted", bad[i].what);
		EXPECT_NE(0, self->nl.msg[0]) TH_LOG("%s: no extack", bad[i].what);
		EXPECT_TRUE(self->nl.bad_attr);
	}
	/* nothing to set at all */
	EXPECT_EQ(-EINVAL, dev_set(&self->nl, self->name, (struct tun)TUN_NONE));
	EXPECT_STREQ("no tunable to set", self->nl.msg);
	/* queue index out of range */
	EXPECT_EQ(-ENOENT, queue_get(&self->nl, before.v[VHOST_A_DEV_ID], 2, &q));
	EXPECT_STREQ("no such queue", self->nl.msg);

	ASSERT_EQ(0, refresh(self));
	after = self->dev;
	for (i = VHOST_A_DEV_BUSYPOLL_US; i <= VHOST_A_DEV_METAMAP; i++)
		EXPECT_EQ(before.v[i], after.v[i]);
}

TEST_F(admin, set_applies_all_and_notifies)
{
	struct nl_cb *cb;
	struct nlc mon;
	struct pollfd p;
	uint64_t v;
	int grp;

	ASSERT_EQ(0, open_dev(self, true));
	ASSERT_EQ(0, nlc_open(&mon));
	grp = genl_ctrl_resolve_grp(mon.sk, VHOST_FAMILY_NAME, VHOST_MCGRP_MONITOR);
	ASSERT_GE(grp, 0);
	ASSERT_EQ(0, nl_socket_add_membership(mon.sk, grp));

	ASSERT_EQ(0, dev_set(&self->nl, self->name,
			     (struct tun){ 50, 1, 512, 0 }));
	ASSERT_EQ(0, refresh(self));
	EXPECT_EQ(50, self->dev.v[VHOST_A_DEV_BUSYPOLL_US]);
	EXPECT_EQ(1, self->dev.v[VHOST_A_DEV_ZEROCOPY]);
	EXPECT_EQ(512, self->dev.v[VHOST_A_DEV_ZCOPY_MIN_LEN]);
	EXPECT_EQ(0, self->dev.v[VHOST_A_DEV_METAMAP]);
	ASSERT_EQ(0, sysfs_u64(self->name, "busypoll_us", &v));
	EXPECT_EQ(50, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "zerocopy", &v));
	EXPECT_EQ(1, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "zcopy_min_len", &v));
	EXPECT_EQ(512, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "metamap", &v));
	EXPECT_EQ(0, v);
	/* The owner's own per-queue timeout is untouched. */
	ASSERT_EQ(0, sysfs_u64(self->name, "queues/vq0/busypoll_us", &v));
	EXPECT_EQ(0, v);

	/* change, then close: two notifications, then an open: one more */
	vnet_close(&self->n);
	self->open = false;
	ASSERT_EQ(0, open_dev(self, true));
	p.fd = nl_socket_get_fd(mon.sk);
	p.events = POLLIN;
	mon.nobjs = 0;
	cb = nl_cb_alloc(NL_CB_CUSTOM);
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, no_seq_check, NULL);
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, parse_obj, &mon);
	while (mon.nobjs < 3 && poll(&p, 1, 2000) > 0)
		nl_recvmsgs(mon.sk, cb);
	nl_cb_put(cb);
	ASSERT_EQ(3, mon.nobjs);
	EXPECT_EQ(VHOST_CMD_DEV_CHANGE_NTF, mon.objs[0].cmd);
	EXPECT_EQ(50, mon.objs[0].v[VHOST_A_DEV_BUSYPOLL_US]);
	EXPECT_EQ(VHOST_CMD_DEV_DEL_NTF, mon.objs[1].cmd);
	EXPECT_STREQ(mon.objs[0].name, mon.objs[1].name);
	EXPECT_EQ(VHOST_CMD_DEV_ADD_NTF, mon.objs[2].cmd);
	EXPECT_STREQ(self->name, mon.objs[2].name);
	/* Notifications never carry the owner or the backend. */
	EXPECT_FALSE(mon.objs[0].has[VHOST_A_DEV_OWNER_PID]);
	EXPECT_FALSE(mon.objs[0].has[VHOST_A_DEV_BACKEND_IFNAME]);
	nlc_close(&mon);
}

TEST_F(admin, unprivileged_set_refused_get_redacted)
{
	struct stat st;
	char path[128];
	pid_t pid;
	int status;

	ASSERT_EQ(0, open_dev(self, true));
	snprintf(path, sizeof(path), "/sys/class/vhost/%s/owner_pid", self->name);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0400, st.st_mode & 0777);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		struct nlc c;
		struct obj o;
		uint64_t v;

		if (setgid(65534) || setuid(65534) || nlc_open(&c))
			_exit(10);
		if (dev_set(&c, self->name, (struct tun){ 10, -1, -1, -1 }) != -EPERM)
			_exit(11);
		if (dev_get(&c, self->name, &o) ||
		    o.has[VHOST_A_DEV_OWNER_PID] ||
		    o.has[VHOST_A_DEV_BACKEND_IFINDEX] ||
		    o.has[VHOST_A_DEV_BACKEND_IFNAME] ||
		    !o.has[VHOST_A_DEV_STATS])
			_exit(12);
		if (sysfs_u64(self->name, "owner_pid", &v) != -EACCES)
			_exit(13);
		if (sysfs_u64(self->name, "statistics/tx_packets", &v))
			_exit(14);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, refresh(self));
	EXPECT_EQ(0, self->dev.v[VHOST_A_DEV_BUSYPOLL_US]);
}

/* Statistics of the device and of its two queues, from netlink. */
struct counts {
	struct obj dev, rxq, txq;
};

static int get_counts(FIXTURE_DATA(admin) *self, struct counts *c)
{
	uint32_t id;

	if (refresh(self))
		return -1;
	c->dev = self->dev;
	id = c->dev.v[VHOST_A_DEV_ID];
	if (queue_get(&self->nl, id, VNET_RX, &c->rxq) ||
	    queue_get(&self->nl, id, VNET_TX, &c->txq))
		return -1;
	return 0;
}

TEST_F(admin, stats_equal_driver_counts)
{
	static const size_t lens[] = { 60, 64, 128, 600, 1514 };
	struct counts c0, c1;
	char why[VNET_WHY_LEN];
	uint64_t bytes = 0, v;
	int i, n = 500;

	ASSERT_EQ(0, open_dev(self, false));
	ASSERT_EQ(0, get_counts(self, &c0));
	ASSERT_EQ(0, vnet_check_tx(&self->n, lens, 5, n, 16, 1, why)) TH_LOG("%s", why);
	ASSERT_EQ(0, vnet_check_rx(&self->n, lens, 5, n, 16, 1, why)) TH_LOG("%s", why);
	for (i = 0; i < n; i++)
		bytes += lens[i % 5];
	ASSERT_EQ(0, get_counts(self, &c1));

	EXPECT_EQ(n, c1.dev.st[VHOST_A_STATS_TX_PACKETS]);
	EXPECT_EQ(bytes, c1.dev.st[VHOST_A_STATS_TX_BYTES]);
	EXPECT_EQ(n, c1.dev.st[VHOST_A_STATS_RX_PACKETS]);
	EXPECT_EQ(bytes, c1.dev.st[VHOST_A_STATS_RX_BYTES]);
	/* every eventfd write and every signal, exactly */
	EXPECT_EQ(self->n.vq[VNET_TX].kicks, c1.txq.st[VHOST_A_STATS_KICKS]);
	EXPECT_EQ(self->n.vq[VNET_RX].kicks, c1.rxq.st[VHOST_A_STATS_KICKS]);
	EXPECT_EQ(vq_calls_collect(&self->n.vq[VNET_TX]),
		  c1.txq.st[VHOST_A_STATS_CALLS]);
	EXPECT_EQ(vq_calls_collect(&self->n.vq[VNET_RX]),
		  c1.rxq.st[VHOST_A_STATS_CALLS]);
	/* the device is the sum of its queues; each queue its direction */
	EXPECT_EQ(c1.rxq.st[VHOST_A_STATS_KICKS] + c1.txq.st[VHOST_A_STATS_KICKS],
		  c1.dev.st[VHOST_A_STATS_KICKS]);
	EXPECT_FALSE(c1.rxq.has_st[VHOST_A_STATS_TX_PACKETS]);
	EXPECT_FALSE(c1.txq.has_st[VHOST_A_STATS_RX_PACKETS]);
	EXPECT_FALSE(c1.rxq.has_st[VHOST_A_STATS_ZCOPY_SENT]);
	EXPECT_EQ(0, c1.dev.st[VHOST_A_STATS_ZCOPY_SENT]);
	/* sysfs shows the same numbers (nothing moves now) */
	ASSERT_EQ(0, sysfs_u64(self->name, "statistics/tx_packets", &v));
	EXPECT_EQ(n, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "statistics/rx_bytes", &v));
	EXPECT_EQ(bytes, v);
	ASSERT_EQ(0, sysfs_u64(self->name, "queues/vq1/kicks", &v));
	EXPECT_EQ(c1.txq.st[VHOST_A_STATS_KICKS], v);
	ASSERT_EQ(0, sysfs_u64(self->name, "statistics/calls", &v));
	EXPECT_EQ(c1.dev.st[VHOST_A_STATS_CALLS], v);
	/* The direct map served the rings. */
	EXPECT_GT(c1.dev.st[VHOST_A_STATS_METAMAP_FAST], 0);
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
	EXPECT_EQ(0, c1.dev.st[VHOST_A_STATS_BUSYPOLL_LOOPS]);

	/* 2 ms: far longer than a round trip of this driver under TCG */
	ASSERT_EQ(0, dev_set(&self->nl, self->name,
			     (struct tun){ 2000, -1, -1, -1 }));
	ASSERT_EQ(0, ping_pong(&self->n, n));
	ASSERT_EQ(0, get_counts(self, &c2));

	kicks_off = c1.txq.st[VHOST_A_STATS_KICKS] - c0.txq.st[VHOST_A_STATS_KICKS];
	kicks_on = c2.txq.st[VHOST_A_STATS_KICKS] - c1.txq.st[VHOST_A_STATS_KICKS];
	TH_LOG("kicks for %d packets: %llu without busy polling, %llu with",
	       n, (unsigned long long)kicks_off, (unsigned long long)kicks_on);
	TH_LOG("busy polling: %llu loops, %llu found work, %llu us",
	       (unsigned long long)c2.txq.st[VHOST_A_STATS_BUSYPOLL_LOOPS],
	       (unsigned long long)c2.txq.st[VHOST_A_STATS_BUSYPOLL_FOUND],
	       (unsigned long long)c2.txq.st[VHOST_A_STATS_BUSYPOLL_NS] / 1000);
	EXPECT_GT(c2.txq.st[VHOST_A_STATS_BUSYPOLL_LOOPS], 0);
	EXPECT_GT(c2.txq.st[VHOST_A_STATS_BUSYPOLL_FOUND], 0);
	EXPECT_GT(c2.txq.st[VHOST_A_STATS_BUSYPOLL_NS], 0);
	EXPECT_LT(kicks_on * 2, kicks_off);
	EXPECT_EQ(self->n.vq[VNET_TX].kicks, c2.txq.st[VHOST_A_STATS_KICKS]);
	EXPECT_EQ(2 * n, c2.dev.st[VHOST_A_STATS_TX_PACKETS]);
}

/* Send count frames of len bytes and wait until all are used. */
static int tx_burst(struct vnet *n, size_t len, int count)
{
	uint8_t frame[1514];
	int r = 0;

	frame_fill(frame, len, NULL, 7);
	for (int i = 0; i < count && !r; i++)
		r = vnet_tx_one(n, frame, len, NULL, 2000);
	return r ?: vnet_tx_drain(n, 2000);
}

/*
 * A packet delivered to a local socket has its zero-copy pages copied and
 * counts as a zero-copy failure (after which vhost backs off), so this test
 * has no wire socket: the stack drops the frames (unknown ethertype), which
 * completes them as successful zero-copy sends.
 */
TEST_F(admin, zerocopy_large_zero_copied_small_copied)
{
	struct counts c1, c2;
	uint64_t zc, hol;
	int n = 100;

	ASSERT_EQ(0, open_dev(self, true));
	close(self->n.sock_fd);
	self->n.sock_fd = -1;
	/* off: nothing goes zero-copy */
	ASSERT_EQ(0, tx_burst(&self->n, 1514, n));
	ASSERT_EQ(0, get_counts(self, &c1));
	EXPECT_EQ(0, c1.txq.st[VHOST_A_STATS_ZCOPY_SENT]);
	EXPECT_EQ(0, c1.txq.st[VHOST_A_STATS_ZCOPY_COPIED]);

	ASSERT_EQ(0, dev_set(&self->nl, self->name, (struct tun){ -1, 1, -1, -1 }));
	ASSERT_EQ(0, tx_burst(&self->n, 1514, n));
	ASSERT_EQ(0, tx_burst(&self->n, 64, n));
	ASSERT_EQ(0, get_counts(self, &c2));
	zc = c2.txq.st[VHOST_A_STATS_ZCOPY_SENT];
	hol = c2.txq.st[VHOST_A_STATS_ZCOPY_HOL_STALLS];
	TH_LOG("%d large: %llu zero-copy, %llu copied (pending)", n,
	       (unsigned long long)zc, (unsigned long long)hol);
	EXPECT_GT(zc, n / 2);
	EXPECT_EQ(n, zc + hol);
	EXPECT_EQ(n, c2.txq.st[VHOST_A_STATS_ZCOPY_COPIED]);
	EXPECT_EQ(0, c2.txq.st[VHOST_A_STATS_ZCOPY_PENDING]);
	EXPECT_EQ(3 * n, c2.txq.st[VHOST_A_STATS_TX_PACKETS]);
}

struct toggler {
	const char *name;
	volatile bool stop;
	int sets, errors;
};

/* Flip zerocopy and the direct map as fast as netlink goes. */
static void *toggle(void *arg)
{
	struct toggler *t = arg;
	struct nlc c;

	if (nlc_open(&c)) {
		t->errors++;
		return NULL;
	}
	for (int i = 0; !t->stop; i++) {
		if (dev_set(&c, t->name, (struct tun){ -1, i & 1, -1, (i >> 1) & 1 }))
			t->errors++;
		t->sets++;
		usleep(2000);
	}
	nlc_close(&c);
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
	t.name = self->name;
	ASSERT_EQ(0, pthread_create(&th, NULL, toggle, &t));
	r = vnet_check_tx(&self->n, lens, 5, n, 32, 0, why);
	if (!r)
		r = vnet_check_rx(&self->n, lens, 5, n / 3, 32, 0, why);
	t.stop = true;
	pthread_join(th, NULL);
	ASSERT_EQ(0, r) TH_LOG("%s", why);
	TH_LOG("%d switches during the traffic", t.sets);
	EXPECT_EQ(0, t.errors);
	EXPECT_GT(t.sets, 4);
	ASSERT_EQ(0, get_counts(self, &c));
	EXPECT_EQ(n, c.dev.st[VHOST_A_STATS_TX_PACKETS]);
	EXPECT_EQ(n / 3, c.dev.st[VHOST_A_STATS_RX_PACKETS]);
	EXPECT_EQ(0, c.txq.st[VHOST_A_STATS_ZCOPY_PENDING]);
	/* Both paths were taken. */
	EXPECT_GT(c.txq.st[VHOST_A_STATS_ZCOPY_SENT], 0);
	EXPECT_GT(c.dev.st[VHOST_A_STATS_METAMAP_FAST], 0);
	/* The last setting stuck on every queue. */
	ASSERT_EQ(0, sysfs_u64(self->name, "metamap", &v));
	if (!v) {
		ASSERT_EQ(0, sysfs_u64(self->name, "queues/vq1/metamap_valid", &v));
		EXPECT_EQ(0, v);
	}
}

/* The 6.12 tree's generic YNL client, given our spec, does and dumps. */
/*
 * Python under TCG with KASAN is slow: a longer timeout, and no schema
 * validation here (the host-side check of the generated code validates the
 * spec against the schema).
 */
TEST_F_TIMEOUT(admin, ynl_cli_does_and_dumps, 180)
{
	/* The project's build/linux, next to build/selftests/vhost. */
	const char *tree = getenv("VHOST_TREE") ?: "../../linux";
	char cmd[1024], out[65536], sink[4096];
	size_t len = 0, n;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "%s/tools/net/ynl/cli.py", tree);
	if (access(cmd, R_OK))
		SKIP(return, "no kernel tree with tools/net/ynl (set VHOST_TREE)");
	ASSERT_EQ(0, open_dev(self, true));
	snprintf(cmd, sizeof(cmd),
		 "python3 %s/tools/net/ynl/cli.py --no-schema "
		 "--spec %s/Documentation/netlink/specs/vhost.yaml "
		 "--dump dev-get 2>&1 && python3 %s/tools/net/ynl/cli.py --no-schema "
		 "--spec %s/Documentation/netlink/specs/vhost.yaml --do dev-get "
		 "--json '{\"name\": \"%s\"}' 2>&1", tree, tree, tree, tree, self->name);
	p = popen(cmd, "r");
	ASSERT_NE(NULL, p);
	/*
	 * Drain the pipe to EOF: a child blocked on a full pipe would
	 * never exit and pclose() would wait until the harness timeout.
	 */
	while ((n = fread(sink, 1, sizeof(sink), p)) > 0) {
		if (n > sizeof(out) - 1 - len)
			n = sizeof(out) - 1 - len;
		memcpy(out + len, sink, n);
		len += n;
	}
	out[len] = 0;
	EXPECT_EQ(0, pclose(p)) TH_LOG("%s", out);
	/* once from the dump, once from the do */
	snprintf(cmd, sizeof(cmd), "'name': '%s'", self->name);
	EXPECT_NE(NULL, strstr(out, cmd)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(strstr(out, cmd) + 1, cmd)) TH_LOG("%s", out);
	EXPECT_NE(NULL, strstr(out, "'tx-packets'")) TH_LOG("%s", out);
}

TEST_HARNESS_MAIN
