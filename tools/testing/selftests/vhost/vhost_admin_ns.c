// SPDX-License-Identifier: GPL-2.0
/*
 * The vhost admin plane across network and user namespaces: a device
 * belongs for its whole life to the network namespace of the process that
 * opened /dev/vhost-net, whoever its owner is; ids are numbered per
 * namespace; the "vhost" family, its notifications and /sys/class/vhost
 * show each namespace its own devices only.  Changing a device, reading
 * its owner and backend and joining the monitor group need CAP_NET_ADMIN
 * over the user namespace that owns its network namespace; the
 * administrators of a namespace owned by another user namespace than the
 * initial one (tenants) change only what the host's policy for that
 * namespace grants (policy-set, sent by the host from inside it).
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
#include <pthread.h>
#include <unistd.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <linux/userfaultfd.h>
#include <linux/vhost.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* The notifications about device id of the next QUIET_MS: 1 << cmd each. */
static unsigned int ntf_cmds(struct ynl_sock *mon, uint32_t id)
{
	struct adm_ntf ntf[32];
	int n = adm_ntf_drain(mon, QUIET_MS, ntf, 32), i;
	unsigned int cmds = 0;

	for (i = 0; i < n && i < 32; i++)
		if (ntf[i].dev.id == id)
			cmds |= 1u << ntf[i].cmd;
	return cmds;
}

/* How many notifications, about any device, came in the next QUIET_MS. */
static int ntf_count(struct ynl_sock *mon)
{
	return adm_ntf_drain(mon, QUIET_MS, NULL, 0);
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

/*
 * Every request about device id fails with ENODEV; a dev-set with
 * set_err (a tenant's ungranted dev-set is refused before any lookup).
 */
static bool invisible(struct ynl_sock *ys, uint32_t id, int set_err)
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
	ok &= adm_set(ys, id, ADM_TUN(3, -1, -1, -1)) == set_err;
	vhost_queue_get_req_set_dev_id(qr, id);
	vhost_queue_get_req_set_index(qr, 0);
	ok &= !vhost_queue_get(ys, qr) && adm_err(ys) == -ENODEV;
	vhost_queue_get_req_free(qr);
	ok &= adm_stats(ys, id, false, false, &st, 1) == -ENODEV;
	ok &= !adm_dump_has(ys, id);
	return ok;
}

/* The error message of the last request is exactly text. */
static bool msg_is(struct ynl_sock *ys, const char *text)
{
	char quoted[256];

	/* the library prints the kernel's extack between quotes */
	snprintf(quoted, sizeof(quoted), "'%s'", text);
	if (adm_msg_has(ys, quoted))
		return true;
	fprintf(stderr, "# wanted \"%s\", got \"%s\"\n", text, ys->err.msg);
	return false;
}

#define NOT_GRANTED " not granted to this network namespace by the host's vhost policy"
#define ABOVE_BOUND ", the bound of the host's vhost policy here"
#define NO_POLICY "this network namespace is administered from the initial user namespace: no vhost policy applies"

/* policy-get: 0, or -errno. */
static int policy_get(struct ynl_sock *ys, uint64_t *grants, uint32_t *max,
		      uint32_t *tenant)
{
	struct vhost_policy_get_rsp *p = vhost_policy_get(ys);

	if (!p)
		return adm_err(ys) ?: -EIO;
	if (!p->_present.grants || !p->_present.busypoll_us_max ||
	    !p->_present.tenant) {
		vhost_policy_get_rsp_free(p);
		return -EPROTO;
	}
	*grants = p->grants;
	*max = p->busypoll_us_max;
	*tenant = p->tenant;
	vhost_policy_get_rsp_free(p);
	return 0;
}

/* Whether policy-get says grants, max and tenant. */
static bool policy_is(struct ynl_sock *ys, uint64_t grants, uint32_t max,
		      uint32_t tenant)
{
	uint64_t g;
	uint32_t m, t;
	int r = policy_get(ys, &g, &m, &t);

	if (r) {
		fprintf(stderr, "# policy-get: %s\n", strerror(-r));
		return false;
	}
	if (g == grants && m == max && t == tenant)
		return true;
	fprintf(stderr, "# policy: grants %#llx max %u tenant %u, wanted %#llx %u %u\n",
		(unsigned long long)g, m, t, (unsigned long long)grants, max,
		tenant);
	return false;
}

/* policy-set; -1 leaves an attribute out.  0 or -errno. */
static int policy_set(struct ynl_sock *ys, int64_t grants, int64_t max)
{
	struct vhost_policy_set_req *req = vhost_policy_set_req_alloc();
	int r;

	if (grants >= 0)
		vhost_policy_set_req_set_grants(req, grants);
	if (max >= 0)
		vhost_policy_set_req_set_busypoll_us_max(req, max);
	r = vhost_policy_set(ys, req) ? adm_err(ys) ?: -EIO : 0;
	vhost_policy_set_req_free(req);
	return r;
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

/* A tunable or owner_pid of device id, from this mount's sysfs; -1 if none. */
static int64_t sysfs_of(uint32_t id, const char *file)
{
	char name[IFNAMSIZ];
	uint64_t v;

	snprintf(name, sizeof(name), "vhost%u", id);
	return sysfs_u64(name, file, &v) ? -1 : (int64_t)v;
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

/* A sysfs of this process's network namespace at /sys (its own mounts). */
static void sysfs_mount_own(void)
{
	CHILD_CHECK(!mount("sysfs", "/sys", "sysfs", 0, NULL));
}

FIXTURE(ns) {
	struct ynl_sock *ys;
	struct turns t;
	struct vnet a;		/* the parent's device, in the initial netns */
	int a_id;
};

FIXTURE_SETUP(ns)
{
	int fd;

	self->ys = adm_open();
	/* The family is the feature under test: without it, a failure. */
	ASSERT_NE(NULL, self->ys)
		TH_LOG("no vhost generic netlink family (the vhost_admin module)");
	ASSERT_EQ(0, turns_init(&self->t));
	/*
	 * Ids are cyclic: after this one, a's is not 0, the first id of
	 * every new namespace, which the children's devices have.
	 */
	fd = open("/dev/vhost-net", O_RDWR);
	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, dev_open(&self->a, &self->a_id));
	ASSERT_NE(0, self->a_id);
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
	/* a new namespace numbers its devices from 0 */
	CHILD_CHECK(id == 0);
	/* its add-ntf and changes came here */
	CHILD_CHECK(ntf_about(mon, id, VHOST_CMD_DEV_ADD_NTF));
	CHILD_CHECK(!TO_PARENT(&self->t, id));

	CHILD_CHECK(dumps_only(ys, id));
	CHILD_CHECK(invisible(ys, self->a_id, -ENODEV));
	/* the host's administrators: no policy binds them here */
	CHILD_CHECK(policy_is(ys, 0, 0, 0));
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
	EXPECT_TRUE(invisible(self->ys, b_id, -ENODEV));
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
 * /dev/net/tun and /dev/vhost-net are 0600 without udev: give this process
 * a private mount namespace where they are nodes anyone may open.
 */
static void nodes_for_everyone(void)
{
	static const struct {
		const char *path, *sysfs;
		unsigned int major, minor;	/* if sysfs cannot say */
	} nodes[] = {
		{ "/dev/net/tun", "/sys/class/misc/tun/dev", 10, 200 },
		{ "/dev/vhost-net", "/sys/class/misc/vhost-net/dev", 10, 238 },
	};
	char node[64];

	CHILD_CHECK(!unshare(CLONE_NEWNS));
	CHILD_CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	for (unsigned int i = 0; i < ARRAY_SIZE(nodes); i++) {
		unsigned int major = nodes[i].major, minor = nodes[i].minor;
		FILE *f = fopen(nodes[i].sysfs, "r");

		if (f) {
			CHILD_CHECK(fscanf(f, "%u:%u", &major, &minor) == 2);
			fclose(f);
		}
		snprintf(node, sizeof(node), "/tmp/vhost-admin-node%u.%d", i,
			 getpid());
		CHILD_CHECK(!mknod(node, S_IFCHR | 0600, makedev(major, minor)));
		CHILD_CHECK(!chmod(node, 0666));
		CHILD_CHECK(!mount(node, nodes[i].path, NULL, MS_BIND, NULL));
		unlink(node);
	}
}

/*
 * Become uid 0 of a new user namespace (and of the namespaces of flags,
 * which it then owns), mapped to the unprivileged uid 65534.  With a
 * network namespace of its own, /dev/net/tun and /dev/vhost-net are nodes
 * it may open.
 */
static void enter_userns(int flags)
{
	char map[32];
	int fd;

	if (flags & CLONE_NEWNET)
		nodes_for_everyone();
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

/*
 * The child of set_owner_from_another_netns: in a new network namespace
 * (as a tenant: in a new user namespace too, with no capability over the
 * device's), it makes itself the owner of the parent's device fd.  Its
 * namespace neither lists the device nor hears of it.
 */
static void set_owner_child(FIXTURE_DATA(ns) *self, int fd, bool tenant)
{
	struct ynl_sock *ys, *mon;
	char list[256];
	uint32_t ids[4];
	int err;

	if (tenant) {
		enter_userns(CLONE_NEWNET | CLONE_NEWNS);
	} else {
		CHILD_CHECK(!unshare(CLONE_NEWNET | CLONE_NEWNS));
		CHILD_CHECK(!mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL));
	}
	sysfs_mount_own();
	ys = adm_open();
	mon = adm_monitor(&err);
	if (!mon)
		fprintf(stderr, "# monitor: %s\n", strerror(-err));
	CHILD_CHECK(ys && mon);
	CHILD_CHECK(adm_dump_ids(ys, ids, 4) == 0);
	CHILD_CHECK(!ioctl(fd, VHOST_SET_OWNER, NULL));
	CHILD_CHECK(adm_dump_ids(ys, ids, 4) == 0);
	CHILD_CHECK(ntf_count(mon) == 0);
	sysfs_list(list, sizeof(list));
	if (list[0])
		fprintf(stderr, "# child's /sys/class/vhost: %s\n", list);
	CHILD_CHECK(!list[0]);
	CHILD_CHECK(!TO_PARENT(&self->t, 0));
	/* the parent changed the device meanwhile: nothing here either */
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	CHILD_CHECK(ntf_count(mon) == 0);
	CHILD_CHECK(adm_dump_ids(ys, ids, 4) == 0);
	ynl_sock_destroy(mon);
	ynl_sock_destroy(ys);
}

/*
 * A device opened here and given an owner in another namespace stays
 * here: still listed, in this sysfs, its monitor hears of the new owner
 * (a dev-change-ntf) and of no removal; the other namespace never sees it.
 * Once the owner exited, its pid is no longer reported.
 */
static void set_owner_from_another_netns(struct __test_metadata *_metadata,
					 FIXTURE_DATA(ns) *self, bool tenant)
{
	struct vhost_dev_get_rsp *d;
	struct ynl_sock *mon;
	unsigned int cmds;
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
		turns_child(&self->t);
		set_owner_child(self, fd, tenant);
		_exit(0);
	}
	turns_parent(&self->t);
	ASSERT_EQ(0, FROM_CHILD(&self->t));
	cmds = ntf_cmds(mon, id);
	EXPECT_EQ(1u << VHOST_CMD_DEV_CHANGE_NTF, cmds)
		TH_LOG("notifications 0x%x", cmds);
	EXPECT_TRUE(adm_dump_has(self->ys, id));
	EXPECT_TRUE(sysfs_has_id(id));
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d) TH_LOG("%s", self->ys->err.msg);
	EXPECT_EQ((uint32_t)pid, d->owner_pid);
	vhost_dev_get_rsp_free(d);
	EXPECT_EQ(pid, sysfs_of(id, "owner_pid"));
	/* still this namespace's to change */
	EXPECT_EQ(0, adm_set(self->ys, id, ADM_TUN(7, -1, -1, -1)));
	EXPECT_TRUE(ntf_about(mon, id, VHOST_CMD_DEV_CHANGE_NTF));
	ASSERT_EQ(0, TO_CHILD(&self->t, 0));
	EXPECT_EQ(0, wait_child(pid));

	/* the owner is gone (reaped), the device is not */
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(0, d->owner_pid);
	EXPECT_EQ(7, d->admin_busypoll_us);
	vhost_dev_get_rsp_free(d);
	EXPECT_EQ(0, sysfs_of(id, "owner_pid"));
	close(fd);
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_DEL_NTF));
	EXPECT_TRUE(invisible(self->ys, id, -ENODEV));
	EXPECT_FALSE(sysfs_has_id(id));
	ynl_sock_destroy(mon);
}

TEST_F(ns, set_owner_from_another_netns_keeps_the_device)
{
	set_owner_from_another_netns(_metadata, self, false);
}

TEST_F(ns, set_owner_from_a_tenant_netns_keeps_the_device)
{
	set_owner_from_another_netns(_metadata, self, true);
}

/*
 * A device of this namespace whose TAP is in another namespace (its owner
 * set it up there) reports the backend with that namespace's id; it is not
 * selected by a backend interface of this namespace, and the other
 * namespace hears nothing of it.
 */
TEST_F(ns, backend_in_another_netns_has_its_netnsid)
{
	struct vnet_opts o = { .ring_num = 64, .event_idx = true };
	struct ynl_sock *mon_b, *ys_b, *mon;
	struct vhost_dev_get_req *req;
	struct vhost_dev_get_rsp *d;
	char why[VNET_WHY_LEN];
	int initns, err, fd;
	unsigned int ifindex;
	uint32_t ids[4];
	struct vnet b;
	int64_t id;

	initns = open("/proc/self/ns/net", O_RDONLY);
	ASSERT_LE(0, initns);
	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon);
	fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	id = vhost_fd_id(fd);
	ASSERT_LE(0, id);
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_ADD_NTF));

	/* TAP, wire and owner in another namespace */
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ys_b = adm_open();
	mon_b = adm_monitor(&err);
	ASSERT_NE(NULL, ys_b);
	ASSERT_NE(NULL, mon_b);
	ASSERT_EQ(0, vnet_open_fd(&b, &o, fd));
	vnet_rx_fill(&b);
	ifindex = if_nametoindex(b.ifname);
	ASSERT_NE(0, ifindex);
	EXPECT_EQ(0, adm_dump_ids(ys_b, ids, 4));
	EXPECT_EQ(0, ntf_count(mon_b));
	ASSERT_EQ(0, setns(initns, CLONE_NEWNET));
	EXPECT_EQ(1u << VHOST_CMD_DEV_CHANGE_NTF, ntf_cmds(mon, id));

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

	/* it moves packets */
	EXPECT_EQ(0, vnet_check_mix(&b, 20, true, 1, why)) TH_LOG("%s", why);
	vnet_close(&b);
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_DEL_NTF));
	EXPECT_EQ(0, ntf_count(mon_b));
	ynl_sock_destroy(mon);
	ynl_sock_destroy(mon_b);
	ynl_sock_destroy(ys_b);
	close(initns);
}

/*
 * An rtnetlink request on interface ifindex of this namespace, with a
 * u32 attribute (type 0: none): 0 or -errno from the kernel's answer.
 */
static int rtnl_link(int cmd, int ifindex, int attr, uint32_t val)
{
	struct {
		struct nlmsghdr nh;
		struct ifinfomsg ifi;
		struct rtattr rta;
		uint32_t val;
	} req = {
		.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct ifinfomsg)),
		.nh.nlmsg_type = cmd,
		.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK,
		.ifi.ifi_family = AF_UNSPEC,
		.ifi.ifi_index = ifindex,
	};
	char buf[1024];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	int fd, n, err = -EPROTO;

	if (attr) {
		req.rta.rta_type = attr;
		req.rta.rta_len = RTA_LENGTH(sizeof(uint32_t));
		req.val = val;
		req.nh.nlmsg_len += RTA_SPACE(sizeof(uint32_t));
	}
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
		err = -errno;
	} else {
		n = recv(fd, buf, sizeof(buf), 0);
		if (n >= (int)NLMSG_LENGTH(sizeof(struct nlmsgerr)) &&
		    nh->nlmsg_type == NLMSG_ERROR)
			err = ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
	}
	close(fd);
	return err;
}

/* A new TAP named name, not persistent: its fd, or -errno. */
static int tap_named(const char *name)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI };
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr)) {
		close(fd);
		return -errno;
	}
	return fd;
}

/* The device's uevent file (this mount's sysfs) has the line want. */
static bool uevent_has(uint32_t id, const char *want)
{
	char path[64], line[256];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/vhost/vhost%u/uevent", id);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = !strncmp(line, want, strlen(want)) &&
			line[strlen(want)] == '\n';
	fclose(f);
	return found;
}

/* Device id is selected by the backend interface named ifname here. */
static bool selected_by_ifname(struct ynl_sock *ys, uint32_t id,
			       const char *ifname)
{
	struct vhost_dev_get_req *req = vhost_dev_get_req_alloc();
	struct vhost_dev_get_rsp *d;
	bool ret;

	vhost_dev_get_req_set_backend_ifname(req, ifname);
	d = vhost_dev_get(ys, req);
	ret = d && d->id == id;
	if (d)
		vhost_dev_get_rsp_free(d);
	vhost_dev_get_req_free(req);
	return ret;
}

/*
 * The backend is the interface, not the numbers it had when it was
 * attached: moved to another namespace, the device names it there (that
 * namespace's id, its name, its index there) and no interface of its
 * index here selects it; moved back, it is local again; deleted, the
 * device feeds none, a new TAP of the same name does not select it, and
 * the deletion does not wait for the device (it holds the interface until
 * then).  Each change is told: a CHANGE notification and the uevent
 * file's VHOST_BACKEND_NETNS.
 */
TEST_F(ns, backend_followed_when_moved_or_deleted)
{
	unsigned int ifindex, there, back;
	int initns, otherns, err, fd;
	char line[32];
	struct vhost_dev_get_rsp *d;
	struct ynl_sock *mon;
	struct vnet b;
	int id;

	initns = open("/proc/self/ns/net", O_RDONLY);
	ASSERT_LE(0, initns);
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	otherns = open("/proc/self/ns/net", O_RDONLY);
	ASSERT_LE(0, otherns);
	ASSERT_EQ(0, setns(initns, CLONE_NEWNET));
	mon = adm_monitor(&err);
	ASSERT_NE(NULL, mon);
	ASSERT_EQ(0, dev_open(&b, &id));
	ifindex = if_nametoindex(b.ifname);
	ASSERT_NE(0, ifindex);
	EXPECT_TRUE(uevent_has(id, "VHOST_BACKEND_NETNS=own"));
	EXPECT_TRUE(selected_by_ifname(self->ys, id, b.ifname));
	adm_ntf_drain(mon, 100, NULL, 0);

	/* moved: followed there */
	ASSERT_EQ(0, rtnl_link(RTM_NEWLINK, ifindex, IFLA_NET_NS_FD, otherns));
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_CHANGE_NTF));
	ASSERT_EQ(0, setns(otherns, CLONE_NEWNET));
	there = if_nametoindex(b.ifname);
	ASSERT_EQ(0, setns(initns, CLONE_NEWNET));
	ASSERT_NE(0, there);
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(there, d->backend_ifindex);
	EXPECT_TRUE(d->_present.backend_netnsid && d->backend_netnsid >= 0)
		TH_LOG("no backend-netnsid after the move");
	EXPECT_TRUE(d->_present.backend_ifname_len &&
		    !strcmp(d->backend_ifname, b.ifname))
		TH_LOG("backend-ifname '%s', not %s",
		       d->_present.backend_ifname_len ? d->backend_ifname : "",
		       b.ifname);
	vhost_dev_get_rsp_free(d);
	EXPECT_TRUE(uevent_has(id, "VHOST_BACKEND_NETNS=other"));
	EXPECT_FALSE(selected_by_ifname(self->ys, id, b.ifname));

	/* moved back: local again */
	ASSERT_EQ(0, setns(otherns, CLONE_NEWNET));
	err = rtnl_link(RTM_NEWLINK, there, IFLA_NET_NS_FD, initns);
	ASSERT_EQ(0, setns(initns, CLONE_NEWNET));
	ASSERT_EQ(0, err);
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_CHANGE_NTF));
	back = if_nametoindex(b.ifname);
	ASSERT_NE(0, back);
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(back, d->backend_ifindex);
	EXPECT_FALSE(!!d->_present.backend_netnsid);
	vhost_dev_get_rsp_free(d);
	EXPECT_TRUE(uevent_has(id, "VHOST_BACKEND_NETNS=own"));
	EXPECT_TRUE(selected_by_ifname(self->ys, id, b.ifname));

	/* deleted: none, and a TAP of its name is another interface */
	ASSERT_EQ(0, rtnl_link(RTM_DELLINK, back, 0, 0));
	EXPECT_TRUE(ntf_wait(mon, id, VHOST_CMD_DEV_CHANGE_NTF));
	EXPECT_EQ(0, if_nametoindex(b.ifname));
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_FALSE(!!d->_present.backend_ifindex)
		TH_LOG("backend-ifindex %u after the TAP was deleted",
		       d->backend_ifindex);
	vhost_dev_get_rsp_free(d);
	/* the uevent file is there, without a backend */
	snprintf(line, sizeof(line), "VHOST_ID=%d", id);
	EXPECT_TRUE(uevent_has(id, line));
	EXPECT_FALSE(uevent_has(id, "VHOST_BACKEND_NETNS=own"));
	EXPECT_FALSE(uevent_has(id, "VHOST_BACKEND_NETNS=other"));
	fd = tap_named(b.ifname);
	ASSERT_LE(0, fd);
	EXPECT_FALSE(selected_by_ifname(self->ys, id, b.ifname));
	close(fd);
	vnet_close(&b);
	ynl_sock_destroy(mon);
	close(otherns);
	close(initns);
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
		CHILD_CHECK(id == 0);
		/* the initial namespace's sysfs, still mounted here */
		CHILD_CHECK(sysfs_has_id(self->a_id));
		CHILD_CHECK(!sysfs_has_id(id));
		sysfs_mount_own();
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
 * Devices opened in two namespaces, alternately: each namespace numbers
 * its own, consecutively (a new one from 0), whatever the other does, and
 * cyclically (a closed device's id is not given again at once).  Both
 * namespaces have a vhost0 or vhost1 of their own, each seeing its own.
 */
TEST_F(ns, ids_are_numbered_per_namespace)
{
	int initns, otherns, fa[2], fb[3], i;
	int64_t a[2], b[3];
	struct ynl_sock *ys_b;
	uint32_t ids[8];

	initns = open("/proc/self/ns/net", O_RDONLY);
	ASSERT_LE(0, initns);
	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	otherns = open("/proc/self/ns/net", O_RDONLY);
	ASSERT_LE(0, otherns);
	ys_b = adm_open();
	ASSERT_NE(NULL, ys_b);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, setns(otherns, CLONE_NEWNET));
		fb[i] = open("/dev/vhost-net", O_RDWR);
		ASSERT_LE(0, fb[i]);
		b[i] = vhost_fd_id(fb[i]);
		ASSERT_EQ(0, setns(initns, CLONE_NEWNET));
		fa[i] = open("/dev/vhost-net", O_RDWR);
		ASSERT_LE(0, fa[i]);
		a[i] = vhost_fd_id(fa[i]);
	}
	TH_LOG("ids: initial namespace %lld %lld (its fixture's %d), other %lld %lld",
	       (long long)a[0], (long long)a[1], self->a_id,
	       (long long)b[0], (long long)b[1]);
	EXPECT_EQ(0, b[0]);
	EXPECT_EQ(1, b[1]);
	EXPECT_EQ(self->a_id + 1, a[0]);
	EXPECT_EQ(a[0] + 1, a[1]);
	/* cyclic: not the closed device's id again */
	close(fb[1]);
	ASSERT_EQ(0, setns(otherns, CLONE_NEWNET));
	fb[2] = open("/dev/vhost-net", O_RDWR);
	ASSERT_LE(0, fb[2]);
	b[2] = vhost_fd_id(fb[2]);
	EXPECT_EQ(2, b[2]);
	ASSERT_EQ(0, setns(initns, CLONE_NEWNET));

	/* each namespace lists its own */
	ASSERT_EQ(2, adm_dump_ids(ys_b, ids, 8));
	EXPECT_EQ(0, ids[0]);
	EXPECT_EQ(2, ids[1]);
	ASSERT_EQ(3, adm_dump_ids(self->ys, ids, 8));
	EXPECT_EQ(self->a_id, ids[0]);
	EXPECT_EQ(a[0], ids[1]);
	EXPECT_EQ(a[1], ids[2]);
	close(fb[0]);
	close(fb[2]);
	close(fa[0]);
	close(fa[1]);
	ynl_sock_destroy(ys_b);
	close(otherns);
	close(initns);
}

/*
 * The owner's pid is reported while the owner lives, 0 once it has exited
 * (the number may belong to another process by then), while the device
 * lives on in another process's hands.
 */
TEST_F(ns, owner_pid_is_0_once_the_owner_exited)
{
	struct vhost_dev_get_rsp *d;
	int64_t id;
	pid_t pid;
	int fd;

	fd = open("/dev/vhost-net", O_RDWR);
	ASSERT_LE(0, fd);
	id = vhost_fd_id(fd);
	ASSERT_LE(0, id);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		turns_child(&self->t);
		CHILD_CHECK(!ioctl(fd, VHOST_SET_OWNER, NULL));
		CHILD_CHECK(!TO_PARENT(&self->t, 0));
		CHILD_CHECK(FROM_PARENT(&self->t) == 0);
		_exit(0);
	}
	turns_parent(&self->t);
	ASSERT_EQ(0, FROM_CHILD(&self->t));
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_TRUE(!!d->_present.owner_pid);
	EXPECT_EQ((uint32_t)pid, d->owner_pid);
	vhost_dev_get_rsp_free(d);
	EXPECT_EQ(pid, sysfs_of(id, "owner_pid"));
	ASSERT_EQ(0, TO_CHILD(&self->t, 0));
	ASSERT_EQ(0, wait_child(pid));

	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_TRUE(!!d->_present.owner_pid);
	EXPECT_EQ(0, d->owner_pid);
	vhost_dev_get_rsp_free(d);
	EXPECT_EQ(0, sysfs_of(id, "owner_pid"));
	/* an owner is still set: nobody else becomes one */
	EXPECT_EQ(-1, ioctl(fd, VHOST_SET_OWNER, NULL));
	EXPECT_EQ(EBUSY, errno);
	close(fd);
}

/* Tunables of a device, as dev-get and this mount's sysfs report them. */
struct tunables {
	int64_t busypoll_us, zerocopy, zcopy_min_len, metamap;
};

static bool tunables_read(struct ynl_sock *ys, uint32_t id, struct tunables *t)
{
	struct vhost_dev_get_rsp *d = adm_get(ys, id);
	bool ok;

	if (!d)
		return false;
	t->busypoll_us = d->admin_busypoll_us;
	t->zerocopy = d->zerocopy;
	t->zcopy_min_len = d->zcopy_min_len;
	t->metamap = d->metamap;
	ok = d->_present.admin_busypoll_us && d->_present.zerocopy &&
	     d->_present.zcopy_min_len && d->_present.metamap;
	vhost_dev_get_rsp_free(d);
	/* sysfs says the same */
	ok &= sysfs_of(id, "admin_busypoll_us") == t->busypoll_us;
	ok &= sysfs_of(id, "zerocopy") == t->zerocopy;
	ok &= sysfs_of(id, "zcopy_min_len") == t->zcopy_min_len;
	ok &= sysfs_of(id, "metamap") == t->metamap;
	return ok;
}

static bool tunables_are(struct ynl_sock *ys, uint32_t id,
			 const struct tunables *want)
{
	struct tunables t;

	if (!tunables_read(ys, id, &t)) {
		fprintf(stderr, "# device %u: tunables unreadable, or dev-get and sysfs differ\n",
			id);
		return false;
	}
	if (!memcmp(&t, want, sizeof(t)))
		return true;
	fprintf(stderr,
		"# device %u: busypoll %lld zerocopy %lld zcopy-min-len %lld metamap %lld, wanted %lld %lld %lld %lld\n",
		id, (long long)t.busypoll_us, (long long)t.zerocopy,
		(long long)t.zcopy_min_len, (long long)t.metamap,
		(long long)want->busypoll_us, (long long)want->zerocopy,
		(long long)want->zcopy_min_len, (long long)want->metamap);
	return false;
}

/* A dev-set refused with EPERM and exactly message text. */
static bool refused(struct ynl_sock *ys, uint32_t id, struct adm_tun t,
		    const char *text)
{
	int r = adm_set(ys, id, t);

	if (r != -EPERM) {
		fprintf(stderr, "# dev-set: %s, wanted EPERM\n", strerror(-r));
		return false;
	}
	return msg_is(ys, text);
}

/* The zero-copy outcomes of a device's TX queue, once none is pending. */
static bool zcopy_outcomes(struct ynl_sock *ys, uint32_t id, uint64_t *sum)
{
	struct adm_stats dev, rxq, txq;

	for (int i = 0; i < 100; i++) {
		if (adm_stats_dev(ys, id, &dev, &rxq, &txq))
			return false;
		if (!txq.v[VHOST_A_STATS_ZCOPY_PENDING]) {
			*sum = adm_zcopy_outcomes(&txq);
			return true;
		}
		usleep(20000);
	}
	return false;
}

/* 20 frames of each direction, byte-exact. */
static bool traffic_ok(struct vnet *n, uint32_t seq)
{
	char why[VNET_WHY_LEN];

	if (!vnet_check_mix(n, 20, true, seq, why))
		return true;
	fprintf(stderr, "# traffic: %s\n", why);
	return false;
}

#define GRANTED (VHOST_TUNABLE_ZEROCOPY | VHOST_TUNABLE_ADMIN_BUSYPOLL_US)
#define BOUND 50

/*
 * The tenant of tenant_is_bound_by_the_host_policy: an unprivileged user,
 * root of its own user namespace, with network and mount namespaces of its
 * own (and its own sysfs there).
 */
static void tenant_child(FIXTURE_DATA(ns) *self)
{
	struct ynl_sock *ys, *mon;
	struct tunables was, now;
	char msg[160];
	uint64_t zc0, zc1;
	struct vnet b;
	int other, id;

	enter_userns(CLONE_NEWNET | CLONE_NEWNS);
	sysfs_mount_own();
	ys = adm_open();
	CHILD_CHECK(ys);
	/* it has CAP_NET_ADMIN over its own network namespace */
	mon = adm_monitor(&other);
	if (!mon)
		fprintf(stderr, "# monitor: %s\n", strerror(-other));
	CHILD_CHECK(mon);
	/* until the host says otherwise, nothing */
	CHILD_CHECK(policy_is(ys, 0, 0, 1));

	/* its own device, opened, owned and run by itself */
	CHILD_CHECK(!dev_open(&b, &id));
	CHILD_CHECK(id == 0);
	CHILD_CHECK(ntf_about(mon, id, VHOST_CMD_DEV_ADD_NTF));
	CHILD_CHECK(dumps_only(ys, id));
	CHILD_CHECK(sysfs_of(id, "owner_pid") == getpid());
	CHILD_CHECK(traffic_ok(&b, 1));
	/* nothing of the initial namespace (dev-set: refused first) */
	CHILD_CHECK(invisible(ys, self->a_id, -EPERM));

	/* every tunable refused, changing nothing */
	CHILD_CHECK(tunables_read(ys, id, &was));
	other = was.metamap == METAMAP_OFF ? METAMAP_MAP : METAMAP_OFF;
	CHILD_CHECK(refused(ys, id, ADM_TUN(-1, 1, -1, -1),
			    "zerocopy" NOT_GRANTED));
	CHILD_CHECK(refused(ys, id, ADM_TUN(-1, -1, -1, other),
			    "metamap" NOT_GRANTED));
	CHILD_CHECK(refused(ys, id, ADM_TUN(-1, -1, 1000, -1),
			    "zcopy-min-len" NOT_GRANTED));
	CHILD_CHECK(refused(ys, id, ADM_TUN(10, -1, -1, -1),
			    "admin-busypoll-us" NOT_GRANTED));
	/* even to the value it has */
	CHILD_CHECK(refused(ys, id, ADM_TUN(-1, was.zerocopy, -1, -1),
			    "zerocopy" NOT_GRANTED));
	CHILD_CHECK(adm_set(ys, id, ADM_TUN(0, 1, 512, other)) == -EPERM);
	CHILD_CHECK(tunables_are(ys, id, &was));
	CHILD_CHECK(!ntf_about(mon, id, VHOST_CMD_DEV_CHANGE_NTF));

	/* the host grants zero-copy and busy polling up to BOUND us */
	CHILD_CHECK(!TO_PARENT(&self->t, id));
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	CHILD_CHECK(policy_is(ys, GRANTED, BOUND, 1));
	/* and set a tunable it did not grant, as it may */
	was.zcopy_min_len = 512;
	CHILD_CHECK(tunables_are(ys, id, &was));

	CHILD_CHECK(!adm_set(ys, id, ADM_TUN(-1, 1, -1, -1)));
	CHILD_CHECK(ntf_about(mon, id, VHOST_CMD_DEV_CHANGE_NTF));
	CHILD_CHECK(!adm_set(ys, id, ADM_TUN(BOUND, -1, -1, -1)));
	CHILD_CHECK(!adm_set(ys, id, ADM_TUN(40, -1, -1, -1)));
	now = was;
	now.zerocopy = 1;
	now.busypoll_us = 40;
	CHILD_CHECK(tunables_are(ys, id, &now));
	snprintf(msg, sizeof(msg), "admin-busypoll-us above %d" ABOVE_BOUND,
		 BOUND);
	CHILD_CHECK(refused(ys, id, ADM_TUN(100, -1, -1, -1), msg));
	CHILD_CHECK(refused(ys, id, ADM_TUN(BOUND + 1, -1, -1, -1), msg));
	CHILD_CHECK(refused(ys, id, ADM_TUN(-1, -1, -1, other),
			    "metamap" NOT_GRANTED));
	CHILD_CHECK(refused(ys, id, ADM_TUN(-1, -1, 1000, -1),
			    "zcopy-min-len" NOT_GRANTED));
	/* one ungranted attribute refuses the whole request */
	CHILD_CHECK(refused(ys, id, ADM_TUN(30, 0, -1, other),
			    "metamap" NOT_GRANTED));
	CHILD_CHECK(adm_set(ys, id, ADM_TUN(30, 0, 1000, -1)) == -EPERM);
	CHILD_CHECK(tunables_are(ys, id, &now));

	/* traffic, with zero-copy on */
	CHILD_CHECK(zcopy_outcomes(ys, id, &zc0));
	CHILD_CHECK(traffic_ok(&b, 21));
	CHILD_CHECK(zcopy_outcomes(ys, id, &zc1));
	CHILD_CHECK(zc1 > zc0);
	/* a granted busy-poll time passes the policy: no such device here */
	CHILD_CHECK(invisible(ys, self->a_id, -ENODEV));
	vnet_close(&b);
	CHILD_CHECK(ntf_wait(mon, id, VHOST_CMD_DEV_DEL_NTF));
	ynl_sock_destroy(mon);
	ynl_sock_destroy(ys);
}

/*
 * The host's administrator (real root, in the initial user namespace)
 * enters the network namespace of process pid, as ip -n does: a socket of
 * the family there.
 */
static struct ynl_sock *host_enter(pid_t pid)
{
	struct ynl_sock *ys;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", pid);
	fd = open(path, O_RDONLY);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(!setns(fd, CLONE_NEWNET));
	close(fd);
	ys = adm_open();
	CHILD_CHECK(ys);
	return ys;
}

/*
 * The host's administrator in the network namespace of process pid: sets
 * its policy, and may set any tunable of its device id.
 */
static void host_in(pid_t pid, uint32_t id)
{
	struct ynl_sock *ys = host_enter(pid);

	CHILD_CHECK(policy_is(ys, 0, 0, 1));
	CHILD_CHECK(policy_set(ys, -1, -1) == -EINVAL);
	CHILD_CHECK(msg_is(ys, "no policy attribute to set"));
	CHILD_CHECK(!policy_set(ys, GRANTED, BOUND));
	CHILD_CHECK(policy_is(ys, GRANTED, BOUND, 1));
	CHILD_CHECK(dumps_only(ys, id));
	CHILD_CHECK(!adm_set(ys, id, ADM_TUN(-1, -1, 512, -1)));
	ynl_sock_destroy(ys);
}

/*
 * An unprivileged user in a user namespace of its own, with a network
 * namespace of its own, opens, owns and runs a device; it may change none
 * of its tunables (EPERM, the policy's message; nothing changes) until the
 * host, entering that namespace, grants it zero-copy and busy polling up
 * to a bound; then those, within the bound, and only those.  The policy
 * is that namespace's: the initial one's has none.
 */
TEST_F(ns, tenant_is_bound_by_the_host_policy)
{
	pid_t pid, host;
	int64_t id;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		turns_child(&self->t);
		tenant_child(self);
		_exit(0);
	}
	turns_parent(&self->t);
	id = FROM_CHILD(&self->t);
	ASSERT_LE(0, id);
	host = fork();
	ASSERT_GE(host, 0);
	if (!host) {
		host_in(pid, id);
		_exit(0);
	}
	EXPECT_EQ(0, wait_child(host));
	EXPECT_TRUE(policy_is(self->ys, 0, 0, 0));
	ASSERT_EQ(0, TO_CHILD(&self->t, 0));
	EXPECT_EQ(0, wait_child(pid));
}

/*
 * Whether queue q of device id busy-polls for us microseconds, decided by
 * src (VHOST_BUSYPOLL_SOURCE_*), its owner having asked for owner_us.
 */
static bool queue_busypoll_is(struct ynl_sock *ys, uint32_t id, uint32_t q,
			      uint32_t owner_us, uint32_t us, uint32_t src)
{
	struct vhost_queue_get_req *req = vhost_queue_get_req_alloc();
	struct vhost_queue_get_rsp *r;
	bool ok;

	vhost_queue_get_req_set_dev_id(req, id);
	vhost_queue_get_req_set_index(req, q);
	r = vhost_queue_get(ys, req);
	vhost_queue_get_req_free(req);
	if (!r)
		return false;
	ok = r->owner_busypoll_us == owner_us && r->busypoll_us == us &&
	     r->_present.busypoll_source && r->busypoll_source == src;
	if (!ok)
		fprintf(stderr,
			"# queue %u: owner %u busypoll-us %u source %d%s, wanted %u %u %u\n",
			q, r->owner_busypoll_us, r->busypoll_us,
			r->_present.busypoll_source ? (int)r->busypoll_source : -1,
			r->_present.busypoll_source ? "" : " (absent)",
			owner_us, us, src);
	vhost_queue_get_rsp_free(r);
	return ok;
}

#define OWNER_US 1000000

/*
 * The tenant of owner_busypoll_bounded: its own device, whose queues it
 * asks, through the owner's ioctl the policy does not see, to busy-poll
 * for a second per kick.
 */
static void busypoll_tenant(FIXTURE_DATA(ns) *self)
{
	struct vhost_vring_state s = { .num = OWNER_US };
	struct adm_stats st[2];
	struct ynl_sock *ys;
	struct vnet b;
	int id;

	enter_userns(CLONE_NEWNET | CLONE_NEWNS);
	sysfs_mount_own();
	ys = adm_open();
	CHILD_CHECK(ys);
	CHILD_CHECK(!dev_open(&b, &id));
	for (s.index = 0; s.index < 2; s.index++)
		CHILD_CHECK(!ioctl(b.vhost_fd, VHOST_SET_VRING_BUSYLOOP_TIMEOUT,
				   &s));
	/* nothing granted: no busy polling at all */
	CHILD_CHECK(queue_busypoll_is(ys, id, 0, OWNER_US, 0,
				      VHOST_BUSYPOLL_SOURCE_POLICY));
	CHILD_CHECK(queue_busypoll_is(ys, id, 1, OWNER_US, 0,
				      VHOST_BUSYPOLL_SOURCE_POLICY));
	/* and traffic polls nothing */
	CHILD_CHECK(traffic_ok(&b, 1));
	CHILD_CHECK(adm_stats(ys, id, false, true, st, 2) == 2);
	CHILD_CHECK(!st[0].v[VHOST_A_STATS_BUSYPOLL_LOOPS] &&
		    !st[1].v[VHOST_A_STATS_BUSYPOLL_LOOPS]);
	CHILD_CHECK(!TO_PARENT(&self->t, id));
	/* the host bounds it to BOUND */
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	CHILD_CHECK(queue_busypoll_is(ys, id, 1, OWNER_US, BOUND,
				      VHOST_BUSYPOLL_SOURCE_POLICY));
	CHILD_CHECK(traffic_ok(&b, 2));
	CHILD_CHECK(!TO_PARENT(&self->t, 0));
	/* the host lets it poll as long as it likes */
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	CHILD_CHECK(queue_busypoll_is(ys, id, 1, OWNER_US, OWNER_US,
				      VHOST_BUSYPOLL_SOURCE_OWNER));
	s.num = 0;
	for (s.index = 0; s.index < 2; s.index++)
		CHILD_CHECK(!ioctl(b.vhost_fd, VHOST_SET_VRING_BUSYLOOP_TIMEOUT,
				   &s));
	vnet_close(&b);
	ynl_sock_destroy(ys);
}

/*
 * The host's side of a tenant's test: the tenant (tenant(self) in a child)
 * sends its device's id; then, for each of the n policies (grants, bound;
 * -1: unchanged), the host sets it in the tenant's namespace and lets the
 * tenant go on, waiting for its word before the next one.  The tenant's
 * exit status, through _metadata.
 */
static void host_policies(struct __test_metadata *_metadata,
			  FIXTURE_DATA(ns) *self,
			  void (*tenant)(FIXTURE_DATA(ns) *self),
			  const int64_t (*pol)[2], int n)
{
	struct ynl_sock *ys;
	pid_t pid, host;
	int64_t id;
	int i;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		turns_child(&self->t);
		tenant(self);
		_exit(0);
	}
	turns_parent(&self->t);
	id = FROM_CHILD(&self->t);
	ASSERT_LE(0, id);
	for (i = 0; i < n; i++) {
		host = fork();
		ASSERT_GE(host, 0);
		if (!host) {
			ys = host_enter(pid);
			CHILD_CHECK(!policy_set(ys, pol[i][0], pol[i][1]));
			ynl_sock_destroy(ys);
			_exit(0);
		}
		EXPECT_EQ(0, wait_child(host));
		ASSERT_EQ(0, TO_CHILD(&self->t, 0));
		if (i < n - 1)
			ASSERT_EQ(0, FROM_CHILD(&self->t));
	}
	EXPECT_EQ(0, wait_child(pid));
}

/*
 * A tenant granted nothing (busypoll-us-max 0, a new namespace's) busy-
 * polls not at all, whatever its owner's VHOST_SET_VRING_BUSYLOOP_TIMEOUT
 * says; the host's bound bounds it as it changes; queue-get says which
 * value decided and who limited it.  The host's own devices have no bound.
 */
TEST_F(ns, owner_busypoll_bounded_by_the_host_policy)
{
	static const int64_t pol[][2] = { { -1, BOUND }, { -1, OWNER_US } };
	struct vhost_vring_state s = { .index = 1, .num = OWNER_US };

	host_policies(_metadata, self, busypoll_tenant, pol, 2);
	/* the initial namespace's devices: the owner's, unbounded */
	ASSERT_EQ(0, ioctl(self->a.vhost_fd, VHOST_SET_VRING_BUSYLOOP_TIMEOUT,
			   &s));
	EXPECT_TRUE(queue_busypoll_is(self->ys, self->a_id, 1, OWNER_US,
				      OWNER_US, VHOST_BUSYPOLL_SOURCE_OWNER));
	s.num = 0;
	ASSERT_EQ(0, ioctl(self->a.vhost_fd, VHOST_SET_VRING_BUSYLOOP_TIMEOUT,
			   &s));
}

/* A dev-set of the map's mode in a thread of its own: it waits. */
struct waiting_set {
	uint32_t id;
	int64_t metamap;
	int err;
	bool done;		/* __atomic */
};

static void *waiting_set(void *arg)
{
	struct waiting_set *w = arg;
	struct ynl_sock *ys = adm_open();

	w->err = ys ? adm_set(ys, w->id, ADM_TUN(-1, -1, -1, w->metamap)) :
		      -ENOTCONN;
	if (ys)
		ynl_sock_destroy(ys);
	__atomic_store_n(&w->done, true, __ATOMIC_RELEASE);
	return NULL;
}

#define PAGE 4096UL

/*
 * The tenant of revoked_grant_stays_revoked: its device's TX worker
 * stalls on a userfaultfd page (made before it left the initial user
 * namespace: an unprivileged user's catches no kernel fault), holding the
 * queue's mutex; a granted switch of the map waits for it; the host
 * revokes the grant; the page comes; the switch is refused and changed
 * nothing.
 */
static void revoked_tenant(FIXTURE_DATA(ns) *self)
{
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_copy copy = { .len = PAGE };
	struct pollfd pfd = { .events = POLLIN };
	struct waiting_set w = {};
	struct vhost_dev_get_rsp *d;
	uint8_t *page, *staged;
	struct uffd_msg msg;
	struct ynl_sock *ys;
	int uffd, id, map0;
	struct vnet b;
	pthread_t th;

	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	CHILD_CHECK(uffd >= 0 && !ioctl(uffd, UFFDIO_API, &api));
	page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	staged = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHILD_CHECK(page != MAP_FAILED && staged != MAP_FAILED);
	reg.range.start = (uintptr_t)page;
	reg.range.len = PAGE;
	CHILD_CHECK(!ioctl(uffd, UFFDIO_REGISTER, &reg));
	enter_userns(CLONE_NEWNET | CLONE_NEWNS);
	ys = adm_open();
	CHILD_CHECK(ys);
	CHILD_CHECK(!dev_open(&b, &id));
	d = adm_get(ys, id);
	CHILD_CHECK(d);
	map0 = d->metamap;
	vhost_dev_get_rsp_free(d);
	CHILD_CHECK(!TO_PARENT(&self->t, id));
	/* granted the map's mode */
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	memset(staged, 0, b.hdr_len);
	frame_fill(staged + b.hdr_len, 60, NULL, 1);
	CHILD_CHECK(!vnet_tx_add_buf(&b, page, b.hdr_len + 60));
	vnet_kick(&b, VNET_TX);
	pfd.fd = uffd;
	CHILD_CHECK(poll(&pfd, 1, 10000) == 1);
	CHILD_CHECK(read(uffd, &msg, sizeof(msg)) == sizeof(msg) &&
		    msg.event == UFFD_EVENT_PAGEFAULT);
	/* granted, so checked and let through: it waits for the queue */
	w.id = id;
	w.metamap = map0 == METAMAP_OFF ? METAMAP_MAP : METAMAP_OFF;
	CHILD_CHECK(!pthread_create(&th, NULL, waiting_set, &w));
	usleep(QUIET_MS * 1000);
	CHILD_CHECK(!__atomic_load_n(&w.done, __ATOMIC_ACQUIRE));
	CHILD_CHECK(!TO_PARENT(&self->t, 0));
	/* revoked */
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	copy.dst = (uintptr_t)page;
	copy.src = (uintptr_t)staged;
	CHILD_CHECK(!ioctl(uffd, UFFDIO_COPY, &copy));
	CHILD_CHECK(!pthread_join(th, NULL));
	if (w.err != -EPERM)
		fprintf(stderr, "# the waiting dev-set returned %d\n", w.err);
	CHILD_CHECK(w.err == -EPERM);
	d = adm_get(ys, id);
	CHILD_CHECK(d);
	if (d->metamap != map0)
		fprintf(stderr, "# metamap %u after the revocation, was %d\n",
			d->metamap, map0);
	CHILD_CHECK(d->metamap == map0);
	vhost_dev_get_rsp_free(d);
	/* the frame the worker waited for went */
	CHILD_CHECK(!vnet_tx_drain(&b, 5000));
	vnet_close(&b);
	ynl_sock_destroy(ys);
	close(uffd);
}

/*
 * A grant revoked while a tenant's request waits (killably, for a queue
 * its stalled worker holds) is not applied after the revocation: the
 * request, checked and let through before, is checked again where the
 * value is stored, and refused (EPERM), changing nothing.
 */
TEST_F(ns, revoked_grant_stays_revoked)
{
	static const int64_t pol[][2] = {
		{ VHOST_TUNABLE_METAMAP, -1 }, { 0, -1 },
	};

	host_policies(_metadata, self, revoked_tenant, pol, 2);
}

/* defaults-set of busy-poll time and zcopy-min-len (-1: not): 0 or -errno. */
static int defaults_set(struct ynl_sock *ys, int64_t busypoll, int64_t zmin)
{
	struct vhost_defaults_set_req *req = vhost_defaults_set_req_alloc();
	int r;

	if (busypoll >= 0)
		vhost_defaults_set_req_set_admin_busypoll_us(req, busypoll);
	if (zmin >= 0)
		vhost_defaults_set_req_set_zcopy_min_len(req, zmin);
	r = vhost_defaults_set(ys, req) ? adm_err(ys) ?: -EIO : 0;
	vhost_defaults_set_req_free(req);
	return r;
}

/* Whether the namespace of ys has a busy-poll default, of that value. */
static bool defaults_busypoll_is(struct ynl_sock *ys, int64_t busypoll)
{
	struct vhost_defaults_get_rsp *d = vhost_defaults_get(ys);
	bool ok;

	if (!d)
		return false;
	ok = busypoll < 0 ? !d->_present.admin_busypoll_us :
	     d->_present.admin_busypoll_us && d->admin_busypoll_us == busypoll;
	vhost_defaults_get_rsp_free(d);
	return ok;
}

static void defaults_child(FIXTURE_DATA(ns) *self)
{
	struct vnet_opts o = { .ring_num = 64, .event_idx = true };
	struct vhost_dev_get_rsp *d;
	struct ynl_sock *ys;
	struct vnet b, c;
	int64_t id;
	int fd;

	CHILD_CHECK(!unshare(CLONE_NEWNET));
	ys = adm_open();
	CHILD_CHECK(ys);
	CHILD_CHECK(defaults_busypoll_is(ys, -1));
	/* opened before the defaults are set, owned after: it gets them */
	fd = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
	CHILD_CHECK(fd >= 0);
	CHILD_CHECK(!defaults_set(ys, 50, 1024));
	CHILD_CHECK(defaults_busypoll_is(ys, 50));
	CHILD_CHECK(!vnet_open_fd(&b, &o, fd));
	id = vhost_fd_id(b.vhost_fd);
	CHILD_CHECK(id >= 0);
	d = adm_get(ys, id);
	CHILD_CHECK(d && d->admin_busypoll_us == 50 && d->zcopy_min_len == 1024);
	vhost_dev_get_rsp_free(d);
	/* a refused default changes none */
	CHILD_CHECK(defaults_set(ys, 50, 100) == -ERANGE);
	CHILD_CHECK(defaults_set(ys, 2000000, 512) == -ERANGE);
	CHILD_CHECK(defaults_busypoll_is(ys, 50));
	/* what a device was given stays when the defaults change */
	CHILD_CHECK(!defaults_set(ys, 60, 2048));
	d = adm_get(ys, id);
	CHILD_CHECK(d && d->admin_busypoll_us == 50 && d->zcopy_min_len == 1024);
	vhost_dev_get_rsp_free(d);
	CHILD_CHECK(!dev_open(&c, (int *)&fd));
	d = adm_get(ys, fd);
	CHILD_CHECK(d && d->admin_busypoll_us == 60 && d->zcopy_min_len == 2048);
	vhost_dev_get_rsp_free(d);
	CHILD_CHECK(!TO_PARENT(&self->t, 0));
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	vnet_close(&c);
	vnet_close(&b);
	ynl_sock_destroy(ys);
}

/*
 * Defaults set in a namespace are given to a device of that namespace
 * when it gets its owner, not to a device of another namespace; a device
 * keeps them when they change.
 */
TEST_F(ns, defaults_apply_at_set_owner_in_their_namespace)
{
	struct vhost_dev_get_rsp *d;
	uint64_t busy, minlen;
	struct vnet c;
	pid_t pid;
	int id;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		turns_child(&self->t);
		defaults_child(self);
		_exit(0);
	}
	turns_parent(&self->t);
	ASSERT_EQ(0, FROM_CHILD(&self->t));
	/* here: no defaults; a new device has the module parameters' */
	EXPECT_TRUE(defaults_busypoll_is(self->ys, -1));
	ASSERT_EQ(0, module_param_u64("vhost_admin", "busypoll_us", &busy));
	ASSERT_EQ(0, module_param_u64("vhost_admin", "zcopy_min_len", &minlen));
	ASSERT_EQ(0, dev_open(&c, &id));
	d = adm_get(self->ys, id);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(busy, d->admin_busypoll_us);
	EXPECT_EQ(minlen, d->zcopy_min_len);
	vhost_dev_get_rsp_free(d);
	vnet_close(&c);
	ASSERT_EQ(0, TO_CHILD(&self->t, 0));
	EXPECT_EQ(0, wait_child(pid));
}

static void tenant_defaults_child(FIXTURE_DATA(ns) *self)
{
	struct vhost_dev_get_rsp *d;
	struct ynl_sock *ys;
	uint64_t minlen;
	struct vnet b;
	int id;

	CHILD_CHECK(!module_param_u64("vhost_admin", "zcopy_min_len", &minlen));
	enter_userns(CLONE_NEWNET | CLONE_NEWNS);
	ys = adm_open();
	CHILD_CHECK(ys);
	/* nothing granted: no default either */
	CHILD_CHECK(defaults_set(ys, 10, -1) == -EPERM);
	CHILD_CHECK(defaults_busypoll_is(ys, -1));
	CHILD_CHECK(!TO_PARENT(&self->t, 0));
	/* the host granted busy polling up to BOUND, and set defaults */
	CHILD_CHECK(FROM_PARENT(&self->t) == 0);
	CHILD_CHECK(defaults_set(ys, BOUND + 1, -1) == -EPERM);
	CHILD_CHECK(defaults_set(ys, -1, 1024) == -EPERM);
	CHILD_CHECK(defaults_busypoll_is(ys, 200));
	/* applied within the policy: busy polling to its bound only */
	CHILD_CHECK(!dev_open(&b, &id));
	d = adm_get(ys, id);
	CHILD_CHECK(d && d->admin_busypoll_us == BOUND &&
		    d->zcopy_min_len == minlen);
	vhost_dev_get_rsp_free(d);
	vnet_close(&b);
	/* what it may set, it may set as a default */
	CHILD_CHECK(!defaults_set(ys, 20, -1));
	CHILD_CHECK(!dev_open(&b, &id));
	d = adm_get(ys, id);
	CHILD_CHECK(d && d->admin_busypoll_us == 20);
	vhost_dev_get_rsp_free(d);
	vnet_close(&b);
	ynl_sock_destroy(ys);
}

/* The host in the network namespace of pid: a policy and defaults. */
static void host_defaults_in(pid_t pid)
{
	struct ynl_sock *ys = host_enter(pid);

	CHILD_CHECK(!policy_set(ys, VHOST_TUNABLE_ADMIN_BUSYPOLL_US, BOUND));
	/* the host is bound by no policy */
	CHILD_CHECK(!defaults_set(ys, 200, 2048));
	ynl_sock_destroy(ys);
}

/*
 * A tenant sets defaults only of what the host's policy grants it, within
 * the bound; defaults the host set in its namespace are applied to its
 * devices within the policy too.
 */
TEST_F(ns, tenant_defaults_are_bound_by_the_host_policy)
{
	pid_t pid, host;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		turns_child(&self->t);
		tenant_defaults_child(self);
		_exit(0);
	}
	turns_parent(&self->t);
	ASSERT_EQ(0, FROM_CHILD(&self->t));
	host = fork();
	ASSERT_GE(host, 0);
	if (!host) {
		host_defaults_in(pid);
		_exit(0);
	}
	EXPECT_EQ(0, wait_child(host));
	ASSERT_EQ(0, TO_CHILD(&self->t, 0));
	EXPECT_EQ(0, wait_child(pid));
}

/* A tenant cannot set its namespace's policy: that is the host's. */
TEST_F(ns, tenant_cannot_set_its_policy)
{
	pid_t pid;

	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		struct ynl_sock *ys;

		enter_userns(CLONE_NEWNET);
		ys = adm_open();
		CHILD_CHECK(ys);
		CHILD_CHECK(policy_set(ys, GRANTED, BOUND) == -EPERM);
		CHILD_CHECK(policy_set(ys, -1, 1000) == -EPERM);
		CHILD_CHECK(policy_is(ys, 0, 0, 1));
		ynl_sock_destroy(ys);
		_exit(0);
	}
	EXPECT_EQ(0, wait_child(pid));
}

/*
 * No policy applies to a namespace the host made for itself (owned by the
 * initial user namespace), nor to the initial one: policy-set is refused.
 */
TEST_F(ns, no_policy_in_a_namespace_of_the_host)
{
	struct ynl_sock *ys;

	EXPECT_EQ(-EINVAL, policy_set(self->ys, GRANTED, BOUND));
	EXPECT_TRUE(msg_is(self->ys, NO_POLICY));
	EXPECT_TRUE(policy_is(self->ys, 0, 0, 0));

	ASSERT_EQ(0, unshare(CLONE_NEWNET));
	ys = adm_open();
	ASSERT_NE(NULL, ys);
	EXPECT_TRUE(policy_is(ys, 0, 0, 0));
	EXPECT_EQ(-EINVAL, policy_set(ys, GRANTED, BOUND));
	EXPECT_TRUE(msg_is(ys, NO_POLICY));
	EXPECT_EQ(-EINVAL, policy_set(ys, -1, 10));
	EXPECT_TRUE(msg_is(ys, NO_POLICY));
	EXPECT_TRUE(policy_is(ys, 0, 0, 0));
	ynl_sock_destroy(ys);
}

/*
 * Root of a user namespace that stays in the initial network namespace
 * has no capability over that namespace: no change, no owner or backend
 * in replies, no monitor, no policy; it may read the policy.
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
		d = adm_get(ys, self->a_id);
		CHILD_CHECK(d && d->_present.zerocopy);
		CHILD_CHECK(!d->_present.owner_pid);
		CHILD_CHECK(!d->_present.backend_ifindex);
		CHILD_CHECK(!d->_present.backend_ifname_len);
		vhost_dev_get_rsp_free(d);
		CHILD_CHECK(!adm_monitor(&err) && err == -EPERM);
		CHILD_CHECK(policy_is(ys, 0, 0, 0));
		CHILD_CHECK(policy_set(ys, GRANTED, BOUND) == -EPERM);
		_exit(0);
	}
	EXPECT_EQ(0, wait_child(pid));
}

TEST_HARNESS_MAIN
