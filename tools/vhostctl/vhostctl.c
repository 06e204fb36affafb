// SPDX-License-Identifier: GPL-2.0
/*
 * vhostctl: show, tune and watch vhost devices through the "vhost" generic
 * netlink family.
 *
 *   vhostctl [-j] [-p] [-s] [-V] { dev | show | set | stats | monitor | help }
 *
 * See vhostctl(8).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>

#include "vhostctl.h"
#include "nl.h"

struct devlist {
	struct vh_dev *v;
	unsigned int n;
};

static void devlist_free(struct devlist *l)
{
	unsigned int i;

	for (i = 0; i < l->n; i++)
		vh_dev_free(&l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int collect_dev(const struct nlmsghdr *nlh, void *arg)
{
	struct devlist *l = arg;
	struct vh_dev d, *v;

	if (vh_dev_from_msg(nlh, &d)) {
		fprintf(stderr, "Error: malformed device attributes from the kernel.\n");
		return -EINVAL;
	}
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v) {
		fprintf(stderr, "Error: out of memory.\n");
		return -ENOMEM;
	}
	l->v = v;
	l->v[l->n++] = d;
	return 0;
}

static int collect_queue(const struct nlmsghdr *nlh, void *arg)
{
	struct devlist *l = arg;
	struct vh_queue q;
	unsigned int i;

	if (vh_queue_from_msg(nlh, &q)) {
		fprintf(stderr, "Error: malformed queue attributes from the kernel.\n");
		return -EINVAL;
	}
	if (!VH_HAS(&q, VHOST_A_QUEUE_DEV_ID))
		return 0;
	for (i = 0; i < l->n; i++) {
		struct vh_dev *d = &l->v[i];

		if (!VH_HAS(d, VHOST_A_DEV_ID) || d->id != q.dev_id)
			continue;
		if (vh_dev_add_queue(d, &q)) {
			fprintf(stderr, "Error: out of memory.\n");
			return -ENOMEM;
		}
	}
	return 0;
}

/* A device by its kernel name: DEV_GET do. */
static int get_dev_by_name(struct vh_nl *nl, const char *name,
			   struct devlist *l)
{
	struct nl_msg *msg = vh_nl_msg(nl, VHOST_CMD_DEV_GET, false);

	if (!msg || nla_put_string(msg, VHOST_A_DEV_NAME, name) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	return vh_nl_request(nl, msg, collect_dev, l, name);
}

static int dump_devs(struct vh_nl *nl, struct devlist *l)
{
	struct nl_msg *msg = vh_nl_msg(nl, VHOST_CMD_DEV_GET, true);

	if (!msg)
		return -ENOMEM;
	return vh_nl_request(nl, msg, collect_dev, l, NULL);
}

/*
 * The devices DEV names: NULL for all, a vhostN name, or the name of the
 * backend interface (every device whose backend it is).
 */
static int get_devs(struct vh_nl *nl, const char *dev, struct devlist *l)
{
	bool privileged = false;
	unsigned int i, n = 0;
	int r;

	if (!dev)
		return dump_devs(nl, l);
	if (vh_is_vhost_name(dev))
		return get_dev_by_name(nl, dev, l);
	r = dump_devs(nl, l);
	if (r)
		return r;
	for (i = 0; i < l->n; i++) {
		struct vh_dev *d = &l->v[i];

		/* Only CAP_NET_ADMIN requesters see owner-pid and backends. */
		if (VH_HAS(d, VHOST_A_DEV_OWNER_PID))
			privileged = true;
		if (VH_HAS(d, VHOST_A_DEV_BACKEND_IFNAME) &&
		    !strcmp(d->backend_ifname, dev))
			l->v[n++] = *d;
		else
			vh_dev_free(d);
	}
	l->n = n;
	if (!n) {
		if (i && !privileged)
			fprintf(stderr, "Cannot find device \"%s\" (backend interfaces are only shown to CAP_NET_ADMIN)\n",
				dev);
		else
			fprintf(stderr, "Cannot find device \"%s\"\n", dev);
		return -ENODEV;
	}
	return 0;
}

static int get_queues(struct vh_nl *nl, struct devlist *l)
{
	struct nl_msg *msg;
	unsigned int i;
	int r;

	if (!l->n)
		return 0;
	msg = vh_nl_msg(nl, VHOST_CMD_QUEUE_GET, true);
	if (!msg)
		return -ENOMEM;
	/* One device: let the kernel filter.  Otherwise one dump for all. */
	if (l->n == 1 && VH_HAS(&l->v[0], VHOST_A_DEV_ID) &&
	    nla_put_u32(msg, VHOST_A_QUEUE_DEV_ID, l->v[0].id) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	r = vh_nl_request(nl, msg, collect_queue, l,
			  l->n == 1 ? l->v[0].name : NULL);
	if (r)
		return r;
	for (i = 0; i < l->n; i++)
		l->v[i].queues_fetched = true;
	return 0;
}

static int cmd_show(struct vh_nl *nl, const struct vh_opts *opts,
		    const struct vh_req *req)
{
	struct devlist l = { .n = 0 };
	struct vh_out o;
	unsigned int i;
	int r;

	r = get_devs(nl, req->dev, &l);
	if (!r && opts->stats >= 2)
		r = get_queues(nl, &l);
	if (!r) {
		vh_out_open(&o, stdout, opts);
		for (i = 0; i < l.n; i++) {
			if (req->cmd == VH_CMD_STATS)
				vh_print_dev_stats(&o, &l.v[i]);
			else
				vh_print_dev(&o, &l.v[i]);
		}
		vh_out_close(&o);
	}
	devlist_free(&l);
	return r;
}

static int put_set_attrs(struct nl_msg *msg, const struct vh_set *s)
{
	int r = 0;

	if (s->mask & VH_BIT(VHOST_A_DEV_BUSYPOLL_US))
		r |= nla_put_u32(msg, VHOST_A_DEV_BUSYPOLL_US, s->busypoll_us);
	if (s->mask & VH_BIT(VHOST_A_DEV_ZEROCOPY))
		r |= nla_put_u8(msg, VHOST_A_DEV_ZEROCOPY, s->zerocopy);
	if (s->mask & VH_BIT(VHOST_A_DEV_ZCOPY_MIN_LEN))
		r |= nla_put_u32(msg, VHOST_A_DEV_ZCOPY_MIN_LEN, s->zcopy_min_len);
	if (s->mask & VH_BIT(VHOST_A_DEV_METAMAP))
		r |= nla_put_u8(msg, VHOST_A_DEV_METAMAP, s->metamap);
	return r ? -ENOMEM : 0;
}

static int cmd_set(struct vh_nl *nl, const struct vh_req *req)
{
	struct devlist l = { .n = 0 };
	struct nl_msg *msg;
	unsigned int i;
	int r;

	msg = vh_nl_msg(nl, VHOST_CMD_DEV_SET, false);
	if (!msg)
		return -ENOMEM;
	if (vh_is_vhost_name(req->dev)) {
		/* One request by name: the kernel resolves it, all or none. */
		r = nla_put_string(msg, VHOST_A_DEV_NAME, req->dev) < 0 ? -ENOMEM : 0;
	} else {
		r = get_devs(nl, req->dev, &l);
		if (!r && l.n > 1) {
			fprintf(stderr, "Error: \"%s\" is the backend of %u devices:",
				req->dev, l.n);
			for (i = 0; i < l.n; i++)
				fprintf(stderr, " %s", l.v[i].name);
			fprintf(stderr, "; name one of them.\n");
			r = -EINVAL;
		}
		if (!r && !VH_HAS(&l.v[0], VHOST_A_DEV_ID)) {
			fprintf(stderr, "Error: the kernel did not report the id of \"%s\".\n",
				req->dev);
			r = -EINVAL;
		}
		if (!r)
			r = nla_put_u32(msg, VHOST_A_DEV_ID, l.v[0].id) < 0 ? -ENOMEM : 0;
	}
	if (!r)
		r = put_set_attrs(msg, &req->set);
	if (r) {
		if (r == -ENOMEM)
			fprintf(stderr, "Error: out of memory.\n");
		nlmsg_free(msg);
	} else {
		r = vh_nl_request(nl, msg, NULL, NULL, req->dev);
	}
	devlist_free(&l);
	return r;
}

struct monitor_ctx {
	const struct vh_opts *opts;
};

static int monitor_event(const struct nlmsghdr *nlh, void *arg)
{
	struct monitor_ctx *m = arg;
	const struct genlmsghdr *g;
	enum vh_event ev;
	struct vh_dev d;

	if (nlh->nlmsg_len < NLMSG_HDRLEN + GENL_HDRLEN)
		return 0;
	g = nlmsg_data(nlh);
	switch (g->cmd) {
	case VHOST_CMD_DEV_ADD_NTF:
		ev = VH_EV_ADD;
		break;
	case VHOST_CMD_DEV_DEL_NTF:
		ev = VH_EV_DEL;
		break;
	case VHOST_CMD_DEV_CHANGE_NTF:
		ev = VH_EV_CHANGE;
		break;
	default:
		return 0;
	}
	if (vh_dev_from_msg(nlh, &d)) {
		fprintf(stderr, "Warning: malformed notification ignored.\n");
		return 0;
	}
	vh_print_event(stdout, m->opts, ev, &d);
	vh_dev_free(&d);
	return 0;
}

int main(int argc, char **argv)
{
	struct vh_opts opts;
	struct vh_req req;
	struct vh_nl nl;
	int r;

	if (vh_parse_cmdline(argc, argv, &opts, &req)) {
		if (req.err[0])
			fprintf(stderr, "%s\n", req.err);
		else
			vh_usage(stderr, req.help);
		return VH_EXIT_USAGE;
	}
	switch (req.cmd) {
	case VH_CMD_HELP:
		vh_usage(stdout, req.help);
		return VH_EXIT_OK;
	case VH_CMD_VERSION:
		printf("vhostctl %s (vhost generic netlink family version %d)\n",
		       VHOSTCTL_VERSION, VHOST_FAMILY_VERSION);
		return VH_EXIT_OK;
	default:
		break;
	}

	if (vh_nl_open(&nl))
		return VH_EXIT_FAIL;
	switch (req.cmd) {
	case VH_CMD_SHOW:
	case VH_CMD_STATS:
		r = cmd_show(&nl, &opts, &req);
		break;
	case VH_CMD_SET:
		r = cmd_set(&nl, &req);
		break;
	case VH_CMD_MONITOR: {
		struct monitor_ctx m = { .opts = &opts };

		r = vh_nl_monitor(&nl, monitor_event, &m);
		break;
	}
	default:
		r = -EINVAL;
		break;
	}
	vh_nl_close(&nl);
	return r ? VH_EXIT_FAIL : VH_EXIT_OK;
}
