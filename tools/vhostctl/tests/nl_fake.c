// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in for nl.c, linked into tests/vhostctl-fake: the "vhost" family
 * served from a directory laid out like /sys/class/vhost (one vhostN/
 * directory per device, the kernel's sysfs files, queues/vqN/), so that the
 * whole command layer of vhostctl runs on a host without the kernel side.
 *
 *   VHOSTCTL_FAKE_SYSFS=DIR   the devices; unset: "no vhost family"
 *
 * Replies are real generic netlink messages built with libnl and handed to
 * the same callbacks; errors are real NLMSG_ERROR messages with extack TLVs
 * and go through vh_ext_ack_parse/format like the kernel's.  As the kernel
 * does, it hides owner-pid and the backend from callers without
 * CAP_NET_ADMIN and refuses dev-set to them (EPERM), checks the policy's
 * ranges (ERANGE, "integer out of range", offset of the attribute) and
 * applies a dev-set all or nothing.  dev-set bumps DIR/vhostN/.generation;
 * monitor polls DIR and reports devices appearing, going and changing.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <linux/capability.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "nl.h"

static const char *fake_dir;

static bool net_admin(void)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3,
	};
	struct __user_cap_data_struct d[2] = { 0 };

	if (syscall(SYS_capget, &h, d))
		return false;
	return d[CAP_NET_ADMIN / 32].effective & (1u << (CAP_NET_ADMIN % 32));
}

int vh_nl_open(struct vh_nl *nl)
{
	fake_dir = getenv("VHOSTCTL_FAKE_SYSFS");
	if (!fake_dir || access(fake_dir, R_OK | X_OK)) {
		fprintf(stderr,
			"Error: the kernel has no \"%s\" generic netlink family (no vhost admin plane in this kernel, or the vhost_admin module is not loaded).\n",
			VHOST_FAMILY_NAME);
		return -ENOENT;
	}
	nl->sk = NULL;
	nl->family = 0x42;
	return 0;
}

void vh_nl_close(struct vh_nl *nl)
{
	(void)nl;
}

struct nl_msg *vh_nl_msg(struct vh_nl *nl, uint8_t cmd, bool dump)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (msg && !genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0,
				dump ? NLM_F_DUMP : 0, cmd, VHOST_FAMILY_VERSION)) {
		nlmsg_free(msg);
		msg = NULL;
	}
	return msg;
}

/* ---- the fake sysfs ------------------------------------------------------ */

static int read_str(const char *dev, const char *file, char *buf, size_t len)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", fake_dir, dev, file);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int read_u64(const char *dev, const char *file, uint64_t *v)
{
	char buf[64];
	int r = read_str(dev, file, buf, sizeof(buf));

	if (!r)
		*v = strtoull(buf, NULL, 0);
	return r;
}

static int write_u64(const char *dev, const char *file, uint64_t v)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", fake_dir, dev, file);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%llu\n", (unsigned long long)v);
	return fclose(f) ? -errno : 0;
}

/* Device names in id order; returns how many (at most max). */
static int list_devs(char names[][VH_NAME_LEN], int max)
{
	struct dirent *e;
	int n = 0, i, j;
	DIR *d;

	d = opendir(fake_dir);
	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		if (vh_is_vhost_name(e->d_name))
			memcpy(names[n++], e->d_name, strlen(e->d_name) + 1);
	}
	closedir(d);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && atol(names[j] + 5) < atol(names[j - 1] + 5); j--) {
			char t[VH_NAME_LEN];

			memcpy(t, names[j], VH_NAME_LEN);
			memcpy(names[j], names[j - 1], VH_NAME_LEN);
			memcpy(names[j - 1], t, VH_NAME_LEN);
		}
	return n;
}

static bool dev_exists(const char *name)
{
	char buf[16];

	return vh_is_vhost_name(name) && !read_str(name, "type", buf, sizeof(buf));
}

/* Every counter file in dev/dir (as uint: 4 bytes when it fits). */
static void put_stats(struct nl_msg *m, int type, const char *dev,
		      const char *dir)
{
	struct nlattr *nest = nla_nest_start(m, type);
	char file[128];
	uint64_t v;
	int i;

	for (i = 1; i <= VHOST_A_STATS_MAX; i++) {
		snprintf(file, sizeof(file), "%s/%s", dir, vh_stat_key(i));
		if (read_u64(dev, file, &v))
			continue;
		if (v > UINT32_MAX)
			nla_put_u64(m, i, v);
		else
			nla_put_u32(m, i, v);
	}
	nla_nest_end(m, nest);
}

static struct nl_msg *dev_msg(const char *name, uint8_t cmd, bool priv)
{
	struct nl_msg *m = nlmsg_alloc();
	char buf[64];
	uint64_t v;

	genlmsg_put(m, 0, 0, 0x42, 0, 0, cmd, VHOST_FAMILY_VERSION);
	nla_put_u32(m, VHOST_A_DEV_ID, atol(name + 5));
	nla_put_string(m, VHOST_A_DEV_NAME, name);
	if (!read_str(name, "type", buf, sizeof(buf)))
		nla_put_u32(m, VHOST_A_DEV_TYPE, !strcmp(buf, "net") ?
			    VHOST_DEV_TYPE_NET : 99);
	if (priv) {
		if (!read_u64(name, "owner_pid", &v))
			nla_put_u32(m, VHOST_A_DEV_OWNER_PID, v);
		if (!read_u64(name, "backend_ifindex", &v) && v &&
		    !read_str(name, "backend_ifname", buf, sizeof(buf)) && buf[0]) {
			nla_put_u32(m, VHOST_A_DEV_BACKEND_IFINDEX, v);
			nla_put_string(m, VHOST_A_DEV_BACKEND_IFNAME, buf);
		}
	}
	if (!read_u64(name, "features", &v))
		nla_put_u64(m, VHOST_A_DEV_FEATURES, v);
	if (!read_u64(name, "num_queues", &v))
		nla_put_u32(m, VHOST_A_DEV_NUM_QUEUES, v);
	if (!read_u64(name, "busypoll_us", &v))
		nla_put_u32(m, VHOST_A_DEV_BUSYPOLL_US, v);
	if (!read_u64(name, "zerocopy", &v))
		nla_put_u8(m, VHOST_A_DEV_ZEROCOPY, v);
	if (!read_u64(name, "zcopy_min_len", &v))
		nla_put_u32(m, VHOST_A_DEV_ZCOPY_MIN_LEN, v);
	if (!read_u64(name, "metamap", &v))
		nla_put_u8(m, VHOST_A_DEV_METAMAP, v);
	put_stats(m, VHOST_A_DEV_STATS, name, "statistics");
	return m;
}

static struct nl_msg *queue_msg(const char *name, unsigned int q)
{
	struct nl_msg *m = nlmsg_alloc();
	char dir[32], file[64], buf[16];
	uint64_t v;

	snprintf(dir, sizeof(dir), "queues/vq%u", q);
	genlmsg_put(m, 0, 0, 0x42, 0, 0, VHOST_CMD_QUEUE_GET, 1);
	nla_put_u32(m, VHOST_A_QUEUE_DEV_ID, atol(name + 5));
	nla_put_u32(m, VHOST_A_QUEUE_INDEX, q);
	snprintf(file, sizeof(file), "%s/type", dir);
	if (!read_str(name, file, buf, sizeof(buf)))
		nla_put_u32(m, VHOST_A_QUEUE_TYPE, strcmp(buf, "tx") ?
			    VHOST_QUEUE_TYPE_RX : VHOST_QUEUE_TYPE_TX);
	snprintf(file, sizeof(file), "%s/num", dir);
	if (!read_u64(name, file, &v))
		nla_put_u32(m, VHOST_A_QUEUE_NUM, v);
	snprintf(file, sizeof(file), "%s/busypoll_us", dir);
	if (!read_u64(name, file, &v))
		nla_put_u32(m, VHOST_A_QUEUE_BUSYPOLL_US, v);
	snprintf(file, sizeof(file), "%s/metamap_valid", dir);
	if (!read_u64(name, file, &v))
		nla_put_u8(m, VHOST_A_QUEUE_METAMAP_VALID, v);
	put_stats(m, VHOST_A_QUEUE_STATS, name, dir);
	return m;
}

/* ---- errors, as the kernel sends them ------------------------------------ */

/* NLMSG_ERROR for req with an extack message and bad attribute. */
static int report(const struct nlmsghdr *req, int error, const char *msg,
		  const struct nlattr *bad, const char *dev)
{
	static char buf[8192];
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct nlmsgerr *e = NLMSG_DATA(nlh);
	size_t hlen = sizeof(*e) + req->nlmsg_len - NLMSG_HDRLEN;
	size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(hlen);
	struct vh_ext_ack ea;
	struct nlattr *a;
	char out[512];

	memset(buf, 0, sizeof(buf));
	nlh->nlmsg_type = NLMSG_ERROR;
	e->error = -error;
	memcpy(&e->msg, req, req->nlmsg_len);
	if (msg) {
		a = (struct nlattr *)(buf + off);
		a->nla_type = NLMSGERR_ATTR_MSG;
		a->nla_len = NLA_HDRLEN + strlen(msg) + 1;
		strcpy((char *)a + NLA_HDRLEN, msg);
		off += NLA_ALIGN(a->nla_len);
		nlh->nlmsg_flags |= NLM_F_ACK_TLVS;
	}
	if (bad) {
		uint32_t offs = (const char *)bad - (const char *)req;

		a = (struct nlattr *)(buf + off);
		a->nla_type = NLMSGERR_ATTR_OFFS;
		a->nla_len = NLA_HDRLEN + sizeof(offs);
		memcpy((char *)a + NLA_HDRLEN, &offs, sizeof(offs));
		off += NLA_ALIGN(a->nla_len);
		nlh->nlmsg_flags |= NLM_F_ACK_TLVS;
	}
	nlh->nlmsg_len = off;
	if (vh_ext_ack_parse(nlh, off, req, &ea))
		return -EIO;
	vh_ext_ack_format(&ea, dev, vh_dev_attr_names, VHOST_A_DEV_MAX,
			  out, sizeof(out));
	if (out[0])
		fprintf(stderr, "%s\n", out);
	return -ea.error;
}

/* The device a request names: by id, by name, or an error reported. */
static int lookup(const struct nlmsghdr *req, struct nlattr *id,
		  struct nlattr *name, char *dev, const char *hint)
{
	if (!id && !name)
		return report(req, EINVAL, "device id or name required", NULL, hint);
	if (id)
		snprintf(dev, VH_NAME_LEN, "vhost%u", nla_get_u32(id));
	else
		snprintf(dev, VH_NAME_LEN, "%s", (char *)nla_data(name));
	if (!dev_exists(dev))
		return report(req, ENODEV, "device not found", id ?: name, hint);
	return 0;
}

static int deliver(struct nl_msg *m, vh_msg_fn fn, void *arg)
{
	int r = fn ? fn(nlmsg_hdr(m), arg) : 0;

	nlmsg_free(m);
	return r < 0 ? r : 0;
}

static int dev_set(const struct nlmsghdr *req, struct nlattr **tb,
		   const char *hint)
{
	static const struct {
		int attr;
		const char *file;
		uint32_t min, max;
	} t[] = {
		{ VHOST_A_DEV_BUSYPOLL_US, "busypoll_us", 0, VHOST_BUSYPOLL_US_MAX },
		{ VHOST_A_DEV_ZEROCOPY, "zerocopy", 0, 1 },
		{ VHOST_A_DEV_ZCOPY_MIN_LEN, "zcopy_min_len", 1, VHOST_ZCOPY_MIN_LEN_MAX },
		{ VHOST_A_DEV_METAMAP, "metamap", 0, 1 },
	};
	char dev[VH_NAME_LEN];
	unsigned int i;
	uint64_t gen = 0;
	bool any = false;
	int r;

	if (!net_admin())
		return report(req, EPERM, NULL, NULL, hint);
	/* the policy first: nothing is applied unless everything is valid */
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct nlattr *a = tb[t[i].attr];
		uint32_t v;

		if (!a)
			continue;
		any = true;
		v = t[i].attr == VHOST_A_DEV_ZEROCOPY ||
		    t[i].attr == VHOST_A_DEV_METAMAP ? nla_get_u8(a) : nla_get_u32(a);
		if (v < t[i].min || v > t[i].max)
			return report(req, ERANGE, "integer out of range", a, hint);
	}
	r = lookup(req, tb[VHOST_A_DEV_ID], tb[VHOST_A_DEV_NAME], dev, hint);
	if (r)
		return r;
	if (!any)
		return report(req, EINVAL, "no tunable to set", NULL, hint);
	for (i = 0; i < ARRAY_SIZE(t); i++) {
		struct nlattr *a = tb[t[i].attr];

		if (a)
			write_u64(dev, t[i].file,
				  t[i].attr == VHOST_A_DEV_ZEROCOPY ||
				  t[i].attr == VHOST_A_DEV_METAMAP ?
				  nla_get_u8(a) : nla_get_u32(a));
	}
	read_u64(dev, ".generation", &gen);
	write_u64(dev, ".generation", gen + 1);
	return 0;
}

int vh_nl_request(struct vh_nl *nl, struct nl_msg *msg, vh_msg_fn fn,
		  void *arg, const char *dev)
{
	struct nlmsghdr *req = nlmsg_hdr(msg);
	struct genlmsghdr *g = nlmsg_data(req);
	bool dump = req->nlmsg_flags & NLM_F_DUMP;
	char names[64][VH_NAME_LEN], name[VH_NAME_LEN];
	struct nlattr *tb[VHOST_A_DEV_MAX + 1];
	bool priv = net_admin();
	int i, n, r = 0;
	uint64_t nq;

	(void)nl;
	if (genlmsg_parse(req, 0, tb, VHOST_A_DEV_MAX, NULL)) {
		nlmsg_free(msg);
		return -EINVAL;
	}
	switch (g->cmd) {
	case VHOST_CMD_DEV_GET:
		if (dump) {
			n = list_devs(names, 64);
			for (i = 0; i < n && !r; i++)
				r = deliver(dev_msg(names[i], g->cmd, priv), fn, arg);
			break;
		}
		r = lookup(req, tb[VHOST_A_DEV_ID], tb[VHOST_A_DEV_NAME], name, dev);
		if (!r)
			r = deliver(dev_msg(name, g->cmd, priv), fn, arg);
		break;
	case VHOST_CMD_DEV_SET:
		r = dev_set(req, tb, dev);
		break;
	case VHOST_CMD_QUEUE_GET:
		if (!dump) {
			r = report(req, EOPNOTSUPP, "queue-get do not faked", NULL, dev);
			break;
		}
		/* VHOST_A_QUEUE_DEV_ID has the number of VHOST_A_DEV_ID */
		if (tb[VHOST_A_QUEUE_DEV_ID]) {
			r = lookup(req, tb[VHOST_A_QUEUE_DEV_ID], NULL, name, dev);
			if (r)
				break;
			memcpy(names[0], name, VH_NAME_LEN);
			n = 1;
		} else {
			n = list_devs(names, 64);
		}
		for (i = 0; i < n && !r; i++) {
			unsigned int q;

			if (read_u64(names[i], "num_queues", &nq))
				continue;
			for (q = 0; q < nq && !r; q++)
				r = deliver(queue_msg(names[i], q), fn, arg);
		}
		break;
	default:
		r = report(req, EOPNOTSUPP, NULL, NULL, dev);
	}
	nlmsg_free(msg);
	return r;
}

/* ---- monitor: poll the directory ---------------------------------------- */

struct seen {
	char name[VH_NAME_LEN];
	uint64_t gen;
	struct nl_msg *last;	/* its last state, for the del event */
};

int vh_nl_monitor(struct vh_nl *nl, vh_msg_fn fn, void *arg)
{
	static struct seen seen[64];
	char names[64][VH_NAME_LEN];
	struct pollfd pfd;
	int nseen = 0, n, i, j, sfd;
	sigset_t mask;

	(void)nl;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0)
		return -errno;
	pfd.fd = sfd;
	pfd.events = POLLIN;
	/* devices present at the start are not events */
	n = list_devs(names, 64);
	for (i = 0; i < n; i++) {
		memcpy(seen[nseen].name, names[i], VH_NAME_LEN);
		read_u64(names[i], ".generation", &seen[nseen].gen);
		seen[nseen++].last = dev_msg(names[i], VHOST_CMD_DEV_DEL_NTF, false);
	}
	while (poll(&pfd, 1, 50) == 0) {
		n = list_devs(names, 64);
		for (i = 0; i < nseen; i++) {	/* gone */
			for (j = 0; j < n && strcmp(names[j], seen[i].name); j++)
				;
			if (j < n)
				continue;
			fn(nlmsg_hdr(seen[i].last), arg);
			nlmsg_free(seen[i].last);
			seen[i--] = seen[--nseen];
		}
		for (j = 0; j < n; j++) {	/* new or changed */
			uint64_t gen = 0;

			for (i = 0; i < nseen && strcmp(names[j], seen[i].name); i++)
				;
			read_u64(names[j], ".generation", &gen);
			if (i == nseen) {
				struct nl_msg *m;

				if (nseen == 64 || read_u64(names[j], "num_queues", &gen))
					continue;	/* not complete yet */
				gen = 0;
				read_u64(names[j], ".generation", &gen);
				m = dev_msg(names[j], VHOST_CMD_DEV_ADD_NTF, false);
				fn(nlmsg_hdr(m), arg);
				nlmsg_free(m);
				memcpy(seen[nseen].name, names[j], VH_NAME_LEN);
				seen[nseen].gen = gen;
				seen[nseen++].last = dev_msg(names[j], VHOST_CMD_DEV_DEL_NTF, false);
			} else if (gen != seen[i].gen) {
				struct nl_msg *m = dev_msg(names[j], VHOST_CMD_DEV_CHANGE_NTF, false);

				fn(nlmsg_hdr(m), arg);
				nlmsg_free(m);
				seen[i].gen = gen;
				nlmsg_free(seen[i].last);
				seen[i].last = dev_msg(names[j], VHOST_CMD_DEV_DEL_NTF, false);
			}
		}
	}
	close(sfd);
	return 0;
}
