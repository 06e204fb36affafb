// SPDX-License-Identifier: GPL-2.0
/*
 * The vhost admin plane across network and user namespaces: a device
 * belongs to the namespace its owner was in at VHOST_SET_OWNER; the
 * "vhost" family, its notifications and /sys/class/vhost show each
 * namespace its own devices only; changing a device, reading its owner and
 * backend and joining the monitor group need CAP_NET_ADMIN over the user
 * namespace that owns its network namespace.
 *
 * Children in other namespaces are forked processes; they report the first
 * check that failed (CHILD_CHECK) and exit 1.  Parent and child take turns
 * through a pair of pipes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/vhost.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <grp.h>

#include "../kselftest_harness.h"
#include "vhost_admin_lib.h"
#include "vhost_net_lib.h"

#define QUIET_MS 300
#define TURN_MS 20000

/* Parent and child: each writes its end, reads the other's. */
struct turns {
	int to_child[2];
	int to_parent[2];
};

static int turns_init(struct turns *t)
{
	/* A side that died is seen at once: EOF, and EPIPE, not SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);
	return pipe(t->to_child) || pipe(t->to_parent) ? -errno : 0;
}

/* After fork(): each side keeps the ends it uses. */
static void turns_parent(struct turns *t)
{
	close(t->to_child[0]);
	close(t->to_parent[1]);
}

static void turns_child(struct turns *t)
{
	close(t->to_child[1]);
	close(t->to_parent[0]);
}

static int turn_send(int fd, uint32_t v)
{
	return write(fd, &v, sizeof(v)) == sizeof(v) ? 0 : -EIO;
}

/* The other side's next word, or -1 (it died, or took too long). */
static int64_t turn_recv(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint32_t v;

	if (poll(&p, 1, TURN_MS) <= 0 || read(fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	return v;
}

#define TO_PARENT(t, v) turn_send((t)->to_parent[1], (v))
#define TO_CHILD(t, v) turn_send((t)->to_child[1], (v))
#define FROM_PARENT(t) turn_recv((t)->to_child[0])
#define FROM_CHILD(t) turn_recv((t)->to_parent[0])

/* Whether notifications of the next QUIET_MS mention device id. */
static bool ntf_about(struct ynl_sock *mon, uint32_t id, int cmd)
{
	struct adm_ntf ntf[16];
	int n = adm_ntf_drain(mon, QUIET_MS, ntf, 16), i;

	for (i = 0; i < n && i < 16; i++)
		if (ntf[i].dev.id == id && (cmd < 0 || ntf[i].cmd == cmd))
			return true;
	return false;
}

/* Wait up to 2 s for notification cmd about device id. */
static bool ntf_wait(struct ynl_sock *mon, uint32_t id, int cmd)
{
	double end = now_ms() + 2000;
	struct adm_ntf n;

	while (now_ms() < end)
		if (!adm_ntf_next(mon, 500, &n) && n.dev.id == id &&
		    n.cmd == cmd)
			return true;
	return false;
}

/* Every id of a dev-get dump, queue-get dump and stats-get dumps is id. */
static bool dumps_only(struct ynl_sock *ys, uint32_t id)
{
	struct vhost_queue_get_req_dump *qr = vhost_queue_get_req_dump_alloc();
	struct vhost_queue_get_list *ql;
	struct adm_stats st[8];
	uint32_t ids[8];
	int n, i, nq = 0;

	n = adm_dump_ids(ys, ids, 8);
	if (n != 1 || ids[0] != id)
		return false;
	ql = vhost_queue_get_dump(ys, qr);
	vhost_queue_get_req_dump_free(qr);
	if (!ql)
		return false;
	ynl_dump_foreach(ql, q)
		nq += q->dev_id == id ? 1 : 100;
	vhost_queue_get_list_free(ql);
	if (nq != 2)
		return false;
	for (int per_queue = 0; per_queue < 2; per_queue++) {
		n = adm_stats(ys, 0, true, per_queue, st, 8);
		if (n != 1 + per_queue)
			return false;
		for (i = 0; i < n; i++)
			if (st[i].dev_id != id)
				return false;
	}
	return true;
}

/* Every request about device id fails with ENODEV. */
static bool invisible(struct ynl_sock *ys, uint32_t id)
{
	struct vhost_queue_get_req *qr = vhost_queue_get_req_alloc();
	struct vhost_dev_get_rsp *d;
	struct adm_stats st;
	char name[IFNAMSIZ];
	bool ok = true;

	d = adm_get(ys, id);
	ok &= !d && adm_err(ys) == -ENODEV;
	snprintf(name, sizeof(name), "vhost%u", id);
	d = adm_get_name(ys, name);
	ok &= !d && adm_err(ys) == -ENODEV;
	ok &= adm_set(ys, id, ADM_TUN(3, -1, -1, -1)) == -ENODEV;
	vhost_queue_get_req_set_dev_id(qr, id);
	vhost_queue_get_req_set_index(qr, 0);
	ok &= !vhost_queue_get(ys, qr) && adm_err(ys) == -ENODEV;
	vhost_queue_get_req_free(qr);
	ok &= adm_stats(ys, id, false, false, &st, 1) == -ENODEV;
	ok &= !adm_dump_has(ys, id);
	return ok;
}

static int dev_open(struct vnet *n, int *id)
{
	struct vnet_opts o = { .ring_num = 64, .event_idx = true };
	int64_t i;
	int r;

	r = vnet_open(n, &o);
	if (r)
		return r;
	vnet_rx_fill(n);
	i = vhost_fd_id(n->vhost_fd);
	if (i < 0) {
		vnet_close(n);
		return i;
	}
	*id = i;
	return 0;
}

static bool sysfs_has(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/vhost/%s", name);
	return !access(path, F_OK);
}

static bool sysfs_has_id(uint32_t id)
{
	char name[IFNAMSIZ];

	snprintf(name, sizeof(name), "vhost%u", id);
	return sysfs_has(name);
}

FIXTURE(ns) {
	struct ynl_sock *ys;
	struct turns t;
	struct vnet a;		/* the parent's device, in the initial netns */
	int a_id;
};

FIXTURE_SETUP(ns)
{
	self->ys = adm_open();
	/* The family is the feature under test: without it, a failure. */
	ASSERT_NE(NULL, self->ys)
		TH_LOG("no vhost generic netlink family (the vhost_admin module)");
	ASSERT_EQ(0, turns_init(&self->t));
	ASSERT_EQ(0, dev_open(&self->a, &self->a_id));
}

FIXTURE_TEARDOWN(ns)
{
	if (!self->ys)
		return;
	vnet_close(&self->a);
	ynl_sock_destroy(self->ys);
}

static void two_ns_child(FIXTURE_DATA(ns) *self)
{
	struct ynl_sock *ys, *mon;
	struct vnet b;
	int err, id;

	CHILD_CHECK(!unshare(CLONE_NEWNET));
	ys = adm_open();
	CHILD_CHECK(ys);
	mon = adm_monitor(&err);
	CHILD_CHECK(mon);
	CHILD_CHECK(!dev_open(&b, &id));
	/* its add-ntf and changes came here */
	CHILD_CHECK(ntf_about(mon, id, VHOST_CMD_DEV_ADD_NTF));
	CHILD_CHECK(!TO_PARENT(&self->t, id));

	CHILD_CHECK(dumps_only(ys, id));
	CHILD_CHECK(invisible(ys, self->a_id));
	CHILD_CHECK(!adm_set(ys, id, ADM_TUN(5, 1, -1, -1)));
	CHILD_CHECK(ntf_about(mon, id, VHOST_CMD_DEV_CHANGE_NTF));
	/* the parent changes its device: nothing here */
	CHILD_CHECK(!TO_PARENT(&self->t, 0));
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	CHILD_CHECK(!ntf_about(mon, self->a_id, -1));
	/* the backend by name: the TAP of this namespace only */
	{
		struct vhost_dev_get_req *req = vhost_dev_get_req_alloc();
		struct vhost_dev_get_rsp *d;

		vhost_dev_get_req_set_backend_ifname(req, b.ifname);
		d = vhost_dev_get(ys, req);
		CHILD_CHECK(d && d->id == (uint32_t)id);
		vhost_dev_get_rsp_free(d);
		/* the parent's TAP: not here (or one of the same name here) */
		vhost_dev_get_req_set_backend_ifname(req, self->a.ifname);
		d = vhost_dev_get(ys, req);
		CHILD_CHECK(!d || d->id == (uint32_t)id);
		CHILD_CHECK(d || adm_err(ys) == -ENODEV);
		if (d)
			vhost_dev_get_rsp_free(d);
		vhost_dev_get_req_free(req);
	}
	vnet_close(&b);
	CHILD_CHECK(ntf_about(mon, id, VHOST_CMD_DEV_DEL_NTF));
	ynl_sock_destroy(mon);
	ynl_sock_destroy(ys);
}

/*
 * A device in the initial namespace and one in a child's: each side sees,
 * changes and hears about its own only.
 */
TEST_F(ns, two_namespaces_see_only_their_own)
{
	struct ynl_sock *mon;
	int64_t b_id;
	pid_t pid;
	int err;

	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon) TH_LOG("monitor: %s", strerror(-err));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		turns_child(&self->t);
		two_ns_child(self);
		_exit(0);
	}
	turns_parent(&self->t);
	b_id = FROM_CHILD(&self->t);
	ASSERT_LE(0, b_id);
	EXPECT_TRUE(invisible(self->ys, b_id));
	EXPECT_TRUE(adm_dump_has(self->ys, self->a_id));
	/* nothing heard here of its opening, owner, backend, change */
	ASSERT_EQ(0, FROM_CHILD(&self->t));
	EXPECT_FALSE(ntf_about(mon, b_id, -1));
	ASSERT_EQ(0, adm_set(self->ys, self->a_id, ADM_TUN(9, -1, -1, -1)));
	EXPECT_TRUE(ntf_about(mon, self->a_id, VHOST_CMD_DEV_CHANGE_NTF));
	ASSERT_EQ(0, TO_CHILD(&self->t, 0));
	EXPECT_EQ(0, wait_child(pid));
	/* nor of its closing */
	EXPECT_FALSE(ntf_about(mon, b_id, -1));
	ynl_sock_destroy(mon);
}

/*
 * A device opened here and given an owner in another namespace moves
 * there: it leaves this namespace (dev-del-ntf, gone from dumps and from
 * this sysfs) and enters the other (dev-add-ntf there).
 */
TEST_F(ns, set_owner_from_another_netns_moves_the_device)
{
	struct vhost_dev_get_rsp *d;
	struct ynl_sock *mon;
	int fd, err;
	int64_t id;
	pid_t pid;

	fd = open("/dev/vhost-net", O_RDWR);
	ASSERT_LE(0, fd);
	id = vhost_fd_id(fd);
	ASSERT_LE(0, id);
	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon) TH_LOG("monitor: %s", strerror(-err));
	EXPECT_TRUE(adm_dump_has(self->ys, id));
	EXPECT_TRUE(sysfs_has_id(id));
	/* no owner yet: none reported */
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(0, d->owner_pid);
	vhost_dev_get_rsp_free(d);

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct ynl_sock *ys, *cmon;

		turns_child(&self->t);
		CHILD_CHECK(!unshare(CLONE_NEWNET));
		ys = adm_open();
		cmon = adm_monitor(&err);
		CHILD_CHECK(ys && cmon);
		CHILD_CHECK(!adm_dump_has(ys, id));
		CHILD_CHECK(!ioctl(fd, VHOST_SET_OWNER, NULL));
		CHILD_CHECK(ntf_wait(cmon, id, VHOST_CMD_DEV_ADD_NTF));
		d = adm_get(ys, id);
		CHILD_CHECK(d && d->owner_pid == (uint32_t)getpid());
		vhost_dev_get_rsp_free(d);
		CHILD_CHECK(dumps_only(ys, id));
		CHILD_CHECK(!TO_PARENT(&self->t, 0));
		CHILD_CHECK(FROM_PARENT(&self->t) == 0);
		/* the last reference: the device goes here, where it is */
		close(fd);
		CHILD_CHECK(ntf_wait(cmon, id, VHOST_CMD_DEV_DEL_NTF));
		_exit(0);
	}
	turns_parent(&self->t);
	ASSERT_EQ(0, FROM_CHILD(&self->t));
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_DEL_NTF));
	EXPECT_TRUE(invisible(self->ys, id));
	EXPECT_FALSE(sysfs_has_id(id));
	close(fd);
	ASSERT_EQ(0, TO_CHILD(&self->t, 0));
	EXPECT_EQ(0, wait_child(pid));
	EXPECT_FALSE(ntf_about(mon, id, -1));
	ynl_sock_destroy(mon);
}

/*
 * A device owned here whose TAP is in another namespace reports the
 * backend with that namespace's id; it is not selected by a backend
 * interface of this namespace.
 */
TEST_F(ns, backend_in_another_netns_has_its_netnsid)
{
	struct vhost_dev_get_req *req;
	struct vhost_dev_get_rsp *d;
	struct ynl_sock *mon_b, *mon;
	int initns, err, id;
	unsigned int ifindex;
	struct vnet b;

	initns = open("/proc/self/ns/net", O_RDONLY);
	ASSERT_LE(0, initns);
	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon);
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	mon_b = adm_monitor(&err);
	ASSERT_NE(NULL, mon_b);
	ASSERT_EQ(0, dev_open(&b, &id));
	ifindex = if_nametoindex(b.ifname);
	ASSERT_NE(0, ifindex);
	EXPECT_TRUE(ntf_about(mon_b, id, VHOST_CMD_DEV_ADD_NTF));
	EXPECT_FALSE(ntf_about(mon, id, -1));

	/* owner again, from the initial namespace: the device moves */
	ASSERT_EQ(0, setns(initns, CLONE_NEWNET));
	ASSERT_EQ(0, vnet_reset_owner(&b));
	ASSERT_EQ(0, vnet_setup(&b));
	vnet_rx_fill(&b);
	EXPECT_TRUE(ntf_about(mon_b, id, VHOST_CMD_DEV_DEL_NTF));
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_ADD_NTF));

	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d) TH_LOG("%s", self->ys->err.msg);
	EXPECT_EQ(ifindex, d->backend_ifindex);
	ASSERT_NE(0, d->_present.backend_ifname_len);
	EXPECT_STREQ(b.ifname, d->backend_ifname);
	ASSERT_TRUE(!!d->_present.backend_netnsid);
	EXPECT_LE(0, d->backend_netnsid);
	TH_LOG("backend %s (%u) in netns id %d", d->backend_ifname,
	       d->backend_ifindex, d->backend_netnsid);
	vhost_dev_get_rsp_free(d);
	/* this namespace's device has none */
	d = adm_get(self->ys, self->a_id);
	ASSERT_NE(NULL, d);
	EXPECT_FALSE(!!d->_present.backend_netnsid);
	vhost_dev_get_rsp_free(d);

	/* the interface of that name or index here is another one */
	req = vhost_dev_get_req_alloc();
	vhost_dev_get_req_set_backend_ifindex(req, ifindex);
	d = vhost_dev_get(self->ys, req);
	EXPECT_TRUE(!d || d->id != (uint32_t)id);
	if (d)
		vhost_dev_get_rsp_free(d);
	vhost_dev_get_req_free(req);
	req = vhost_dev_get_req_alloc();
	vhost_dev_get_req_set_backend_ifname(req, b.ifname);
	d = vhost_dev_get(self->ys, req);
	EXPECT_TRUE(!d || d->id != (uint32_t)id);
	if (d)
		vhost_dev_get_rsp_free(d);
	vhost_dev_get_req_free(req);

	/* it still moves packets */
	{
		char why[VNET_WHY_LEN];

		EXPECT_EQ(0, vnet_check_mix(&b, 20, true, 1, why))
			TH_LOG("%s", why);
	}
	vnet_close(&b);
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_DEL_NTF));
	ynl_sock_destroy(mon);
	ynl_sock_destroy(mon_b);
	close(initns);
}

/* The names in /sys/class/vhost, as one string "vhost1 vhost7 ". */
static void sysfs_list(char *out, size_t len)
{
	DIR *d = opendir("/sys/class/vhost");
	struct dirent *e;
	size_t n = 0;

	out[0] = 0;
	while (d && (e = readdir(d)))
		if (e->d_name[0] != '.' && n < len)
			n += snprintf(out + n, len - n, "%s ", e->d_name);
	if (d)
		closedir(d);
}

/* A sysfs mounted in a namespace shows the devices of that namespace. */
TEST_F(ns, sysfs_shows_the_devices_of_its_namespace)
{
	char list[256], want[64];
	int64_t b_id;
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct vnet b;
		uint64_t v;
		char name[IFNAMSIZ];
		int id;

		turns_child(&self->t);
		CHILD_CHECK(!unshare(CLONE_NEWNET | CLONE_NEWNS));
		CHILD_CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
		CHILD_CHECK(!dev_open(&b, &id));
		/* the initial namespace's sysfs, still mounted here */
		CHILD_CHECK(sysfs_has_id(self->a_id));
		CHILD_CHECK(!sysfs_has_id(id));
		CHILD_CHECK(!mount("sysfs", "/sys", "sysfs", 0, NULL));
		sysfs_list(list, sizeof(list));
		snprintf(want, sizeof(want), "vhost%d ", id);
		if (strcmp(list, want))
			fprintf(stderr, "# child's /sys/class/vhost: %s\n", list);
		CHILD_CHECK(!strcmp(list, want));
		snprintf(name, sizeof(name), "vhost%d", id);
		CHILD_CHECK(!sysfs_u64(name, "owner_pid", &v) &&
			    v == (uint64_t)getpid());
		CHILD_CHECK(!sysfs_u64(name, "statistics/tx_packets", &v));
		CHILD_CHECK(!sysfs_u64(name, "queues/vq1/num", &v) && v == 64);
		CHILD_CHECK(!TO_PARENT(&self->t, id));
		CHILD_CHECK(FROM_PARENT(&self->t) == 0);
		vnet_close(&b);
		_exit(0);
	}
	turns_parent(&self->t);
	b_id = FROM_CHILD(&self->t);
	ASSERT_LE(0, b_id);
	EXPECT_TRUE(sysfs_has_id(self->a_id));
	EXPECT_FALSE(sysfs_has_id(b_id));
	sysfs_list(list, sizeof(list));
	snprintf(want, sizeof(want), "vhost%d ", self->a_id);
	EXPECT_STREQ(want, list);
	ASSERT_EQ(0, TO_CHILD(&self->t, 0));
	EXPECT_EQ(0, wait_child(pid));
}

/*
 * /dev/net/tun is 0600 without udev: give this process a private mount
 * namespace where it is a node anyone may open.
 */
static void tun_for_everyone(void)
{
	char node[64];

	snprintf(node, sizeof(node), "/tmp/vhost-admin-tun.%d", getpid());
	CHILD_CHECK(!unshare(CLONE_NEWNS));
	CHILD_CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	CHILD_CHECK(!mknod(node, S_IFCHR | 0600, makedev(10, 200)));
	CHILD_CHECK(!chmod(node, 0666));
	CHILD_CHECK(!mount(node, "/dev/net/tun", NULL, MS_BIND, NULL));
	unlink(node);
}

/*
 * Become uid 0 of a new user namespace (and of the namespaces of flags,
 * which it then owns), mapped to the unprivileged uid 65534.
 */
static void enter_userns(int flags)
{
	char map[32];
	int fd;

	if (flags & CLONE_NEWNET)
		tun_for_everyone();
	CHILD_CHECK(!setgroups(0, NULL));
	CHILD_CHECK(!setgid(65534) && !setuid(65534));
	/* its /proc/self files are its own again (setuid() made them root's) */
	CHILD_CHECK(!prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
	CHILD_CHECK(!unshare(CLONE_NEWUSER | flags));
	fd = open("/proc/self/setgroups", O_WRONLY);
	CHILD_CHECK(fd >= 0 && write(fd, "deny", 4) == 4);
	close(fd);
	snprintf(map, sizeof(map), "0 65534 1");
	fd = open("/proc/self/uid_map", O_WRONLY);
	CHILD_CHECK(fd >= 0 && write(fd, map, strlen(map)) == (ssize_t)strlen(map));
	close(fd);
	fd = open("/proc/self/gid_map", O_WRONLY);
	CHILD_CHECK(fd >= 0 && write(fd, map, strlen(map)) == (ssize_t)strlen(map));
	close(fd);
}

static void userns_child(FIXTURE_DATA(ns) *self, int fd, int64_t id)
{
	struct vnet_opts o = { .ring_num = 64, .event_idx = true };
	struct adm_stats dev, rxq, txq;
	struct vhost_dev_get_rsp *d;
	struct ynl_sock *ys, *mon;
	char why[VNET_WHY_LEN];
	struct vnet b;
	int err;

	enter_userns(CLONE_NEWNET);
	ys = adm_open();
	CHILD_CHECK(ys);
	/* it has CAP_NET_ADMIN over its own network namespace */
	mon = adm_monitor(&err);
	if (!mon)
		fprintf(stderr, "# monitor: %s\n", strerror(-err));
	CHILD_CHECK(mon);
	/* the fd it was given, owned here: the device moves here */
	err = vnet_open_fd(&b, &o, fd);
	if (err)
		fprintf(stderr, "# vnet_open_fd: %s\n", strerror(-err));
	CHILD_CHECK(!err);
	CHILD_CHECK(ntf_wait(mon, id, VHOST_CMD_DEV_ADD_NTF));
	vnet_rx_fill(&b);
	CHILD_CHECK(dumps_only(ys, id));
	d = adm_get(ys, id);
	CHILD_CHECK(d);
	CHILD_CHECK(d->_present.owner_pid && d->owner_pid == (uint32_t)getpid());
	CHILD_CHECK(d->_present.backend_ifname_len &&
		    !strcmp(d->backend_ifname, b.ifname));
	CHILD_CHECK(!d->_present.backend_netnsid);
	vhost_dev_get_rsp_free(d);
	CHILD_CHECK(!adm_set(ys, id, ADM_TUN(-1, 1, 1000, -1)));
	CHILD_CHECK(ntf_about(mon, id, VHOST_CMD_DEV_CHANGE_NTF));
	d = adm_get(ys, id);
	CHILD_CHECK(d && d->zerocopy == 1 && d->zcopy_min_len == 1000);
	vhost_dev_get_rsp_free(d);
	/* its traffic, in its statistics */
	err = vnet_check_mix(&b, 20, true, 1, why);
	if (err)
		fprintf(stderr, "# traffic: %s\n", why);
	CHILD_CHECK(!err);
	CHILD_CHECK(!adm_stats_dev(ys, id, &dev, &rxq, &txq));
	CHILD_CHECK(dev.v[VHOST_A_STATS_TX_PACKETS] == 20);
	CHILD_CHECK(dev.v[VHOST_A_STATS_RX_PACKETS] == 20);
	/* nothing of the initial namespace */
	CHILD_CHECK(invisible(ys, self->a_id));
	CHILD_CHECK(!TO_PARENT(&self->t, 0));
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	vnet_close(&b);
	CHILD_CHECK(ntf_wait(mon, id, VHOST_CMD_DEV_DEL_NTF));
}

/*
 * An unprivileged user in a user namespace of its own, with a network
 * namespace of its own, owns a device (its fd handed over, as a VM
 * manager does): it sees, changes and monitors that device, and only it.
 */
TEST_F(ns, userns_tenant_manages_its_own_devices)
{
	struct ynl_sock *mon;
	int fd, err;
	int64_t id;
	pid_t pid;

	fd = open("/dev/vhost-net", O_RDWR);
	ASSERT_LE(0, fd);
	id = vhost_fd_id(fd);
	ASSERT_LE(0, id);
	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		turns_child(&self->t);
		userns_child(self, fd, id);
		_exit(0);
	}
	turns_parent(&self->t);
	close(fd);
	EXPECT_EQ(0, FROM_CHILD(&self->t));
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_DEL_NTF));
	EXPECT_TRUE(invisible(self->ys, id));
	EXPECT_FALSE(sysfs_has_id(id));
	ASSERT_EQ(0, TO_CHILD(&self->t, 0));
	EXPECT_EQ(0, wait_child(pid));
	ynl_sock_destroy(mon);
}

/*
 * Root of a user namespace that stays in the initial network namespace
 * has no capability over that namespace: no change, no owner or backend
 * in replies, no monitor.
 */
TEST_F(ns, userns_root_has_no_power_over_the_initial_netns)
{
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct vhost_dev_get_rsp *d;
		struct ynl_sock *ys;
		int err;

		enter_userns(0);
		ys = adm_open();
		CHILD_CHECK(ys);
		CHILD_CHECK(adm_set(ys, self->a_id, ADM_TUN(10, -1, -1, -1)) ==
			    -EPERM);
		CHILD_CHECK(adm_msg_has(ys, "CAP_NET_ADMIN"));
		d = adm_get(ys, self->a_id);
		CHILD_CHECK(d && d->_present.zerocopy);
		CHILD_CHECK(!d->_present.owner_pid);
		CHILD_CHECK(!d->_present.backend_ifindex);
		CHILD_CHECK(!d->_present.backend_ifname_len);
		vhost_dev_get_rsp_free(d);
		CHILD_CHECK(!adm_monitor(&err) && err == -EPERM);
		_exit(0);
	}
	EXPECT_EQ(0, wait_child(pid));
}

TEST_HARNESS_MAIN
