// SPDX-License-Identifier: GPL-2.0
/*
 * vhostctl: show, tune and watch vhost devices through the "vhost" generic
 * netlink family, with the client library YNL generates from its spec.
 *
 *   vhostctl [-j] [-p] [-s] [-n NETNS] [-V] { dev | queue | policy | show |
 *                                             set | stats | monitor | help } ...
 *
 * See vhostctl(8).
 */
#define _GNU_SOURCE		/* setns() */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>

#include "vhostctl.h"

static int oom(void)
{
	fprintf(stderr, "Error: out of memory.\n");
	return -1;
}

/* Say why the last request on ys failed (dev: the device named, or NULL). */
static int fail(struct ynl_sock *ys, const char *dev)
{
	int saved_errno = errno;
	char buf[600];

	if (!ys->err.code)
		ys->err.code = saved_errno ? saved_errno : EIO;
	vh_err_format(&ys->err, dev, buf, sizeof(buf));
	fprintf(stderr, "%s\n", buf);
	return -1;
}

/* A request succeeded; the kernel may have said something anyway. */
static void warn_ack(struct ynl_sock *ys)
{
	char buf[600];

	if (vh_warn_format(&ys->err, buf, sizeof(buf)))
		fprintf(stderr, "%s\n", buf);
}

/* The device sel names: one dev-get, the kernel resolves the name. */
static struct vhost_dev_get_rsp *get_dev(struct ynl_sock *ys,
					 const struct vh_sel *sel)
{
	struct vhost_dev_get_req *req = vh_dev_get_req(sel);
	struct vhost_dev_get_rsp *rsp;

	if (!req) {
		oom();
		return NULL;
	}
	rsp = vhost_dev_get(ys, req);
	if (!rsp)
		fail(ys, sel->name);
	vhost_dev_get_req_free(req);
	return rsp;
}

/* The id of the device sel names, for the ops that take only an id. */
static int resolve_id(struct ynl_sock *ys, const struct vh_sel *sel,
		      uint32_t *id)
{
	struct vhost_dev_get_rsp *d;
	int r = 0;

	if (sel->kind == VH_SEL_ID) {
		*id = sel->id;
		return 0;
	}
	d = get_dev(ys, sel);
	if (!d)
		return -1;
	if (d->_present.id) {
		*id = d->id;
	} else {
		fprintf(stderr, "Error: the kernel did not report the id of \"%s\".\n",
			sel->name);
		r = -1;
	}
	vhost_dev_get_rsp_free(d);
	return r;
}

static struct vhost_stats_get_rsp_list *
dump_stats(struct ynl_sock *ys, const uint32_t *dev_id, bool per_queue,
	   const char *dev)
{
	struct vhost_stats_get_req_dump *req = vh_stats_dump_req(dev_id, per_queue);
	struct vhost_stats_get_rsp_list *list;

	if (!req) {
		oom();
		return NULL;
	}
	list = vhost_stats_get_dump(ys, req);
	if (!list)
		fail(ys, dev);
	vhost_stats_get_req_dump_free(req);
	return list;
}

static struct vhost_queue_get_list *
dump_queues(struct ynl_sock *ys, const uint32_t *dev_id, const char *dev)
{
	struct vhost_queue_get_req_dump *req = vh_queue_dump_req(dev_id);
	struct vhost_queue_get_list *list;

	if (!req) {
		oom();
		return NULL;
	}
	list = vhost_queue_get_dump(ys, req);
	if (!list)
		fail(ys, dev);
	vhost_queue_get_req_dump_free(req);
	return list;
}

/* ---- dev show ------------------------------------------------------------ */

/* What -s adds to "show": statistics (-s), queues and theirs (-s -s). */
struct show_extra {
	struct vhost_stats_get_rsp_list *stats;
	struct vhost_queue_get_list *queues;
	struct vhost_stats_get_rsp_list *queue_stats;
};

static void show_extra_free(struct show_extra *x)
{
	if (x->stats)
		vhost_stats_get_rsp_list_free(x->stats);
	if (x->queues)
		vhost_queue_get_list_free(x->queues);
	if (x->queue_stats)
		vhost_stats_get_rsp_list_free(x->queue_stats);
}

static int show_extra_fetch(struct ynl_sock *ys, int level,
			    const uint32_t *dev_id, const char *dev,
			    struct show_extra *x)
{
	x->stats = dump_stats(ys, dev_id, false, dev);
	if (!x->stats)
		return -1;
	if (level < 2)
		return 0;
	x->queues = dump_queues(ys, dev_id, dev);
	if (!x->queues)
		return -1;
	x->queue_stats = dump_stats(ys, dev_id, true, dev);
	return x->queue_stats ? 0 : -1;
}

static const struct vhost_stats_get_rsp_dump *
find_stats(struct vhost_stats_get_rsp_list *list, uint32_t dev_id,
	   const uint32_t *queue)
{
	if (!list)
		return NULL;
	ynl_dump_foreach(list, s) {
		if (!s->_present.dev_id || s->dev_id != dev_id)
			continue;
		if (queue ? s->_present.queue_index && s->queue_index == *queue :
			    !s->_present.queue_index)
			return s;
	}
	return NULL;
}

/* One device of "show", with what -s asked for. */
static int show_one(struct vh_out *o, const struct vhost_dev_get_rsp *d,
		    int level, struct show_extra *x)
{
	struct vh_dev_more m = { .queues = level >= 2 };
	unsigned int n = 0;

	if (!level || !d->_present.id) {
		vh_print_dev(o, d, NULL);
		return 0;
	}
	m.stats = find_stats(x->stats, d->id, NULL);
	if (m.queues) {
		ynl_dump_foreach(x->queues, q)
			n += q->_present.dev_id && q->dev_id == d->id;
		m.queue = calloc(n + 1, sizeof(*m.queue));
		m.queue_stats = calloc(n + 1, sizeof(*m.queue_stats));
		if (!m.queue || !m.queue_stats) {
			free(m.queue);
			free(m.queue_stats);
			return oom();
		}
		ynl_dump_foreach(x->queues, q) {
			if (!q->_present.dev_id || q->dev_id != d->id)
				continue;
			m.queue[m.nqueues] = q;
			m.queue_stats[m.nqueues++] =
				q->_present.index ?
				find_stats(x->queue_stats, d->id, &q->index) :
				NULL;
		}
	}
	vh_print_dev(o, d, &m);
	free(m.queue);
	free(m.queue_stats);
	return 0;
}

static int cmd_show(struct ynl_sock *ys, const struct vh_opts *opts,
		    const struct vh_req *req)
{
	struct vhost_dev_get_list *list = NULL;
	struct vhost_dev_get_rsp *one = NULL;
	struct show_extra x = {};
	const char *dev = req->sel.name;
	struct vh_out o;
	int r = -1;

	if (req->sel.kind == VH_SEL_ALL) {
		list = vhost_dev_get_dump(ys);
		if (!list)
			return fail(ys, NULL);
	} else {
		one = get_dev(ys, &req->sel);
		if (!one)
			return -1;
	}
	if (opts->stats &&
	    show_extra_fetch(ys, opts->stats,
			     one && one->_present.id ? &one->id : NULL, dev, &x))
		goto out;
	vh_out_open(&o, stdout, opts);
	r = 0;
	if (one) {
		r = show_one(&o, one, opts->stats, &x);
	} else {
		ynl_dump_foreach(list, d)
			if (show_one(&o, d, opts->stats, &x))
				r = -1;
	}
	vh_out_close(&o);
out:
	show_extra_free(&x);
	if (one)
		vhost_dev_get_rsp_free(one);
	if (list)
		vhost_dev_get_list_free(list);
	return r;
}

/* ---- dev set, dev stats, queue show --------------------------------------- */

static int cmd_set(struct ynl_sock *ys, const struct vh_req *req)
{
	struct vhost_dev_set_req *r = vh_dev_set_req(&req->sel, &req->set);
	int err;

	if (!r)
		return oom();
	err = vhost_dev_set(ys, r);
	if (err)
		fail(ys, req->sel.name);
	else
		warn_ack(ys);
	vhost_dev_set_req_free(r);
	return err ? -1 : 0;
}

static int cmd_stats(struct ynl_sock *ys, const struct vh_opts *opts,
		     const struct vh_req *req)
{
	struct vhost_stats_get_rsp_list *list;
	const uint32_t *filter = NULL;
	struct vh_out o;
	uint32_t id = 0;

	if (req->sel.kind != VH_SEL_ALL) {
		if (resolve_id(ys, &req->sel, &id))
			return -1;
		filter = &id;
	}
	list = dump_stats(ys, filter, req->scope == VH_SCOPE_QUEUE,
			  req->sel.name);
	if (!list)
		return -1;
	vh_out_open(&o, stdout, opts);
	ynl_dump_foreach(list, s)
		vh_print_stats(&o, s);
	vh_out_close(&o);
	vhost_stats_get_rsp_list_free(list);
	return 0;
}

static int queue_show_one(struct ynl_sock *ys, const struct vh_opts *opts,
			  uint32_t id, uint32_t index, const char *dev)
{
	struct vhost_queue_get_req *req = vh_queue_get_req(id, index);
	struct vhost_queue_get_rsp *q;
	struct vh_out o;

	if (!req)
		return oom();
	q = vhost_queue_get(ys, req);
	if (!q)
		fail(ys, dev);
	vhost_queue_get_req_free(req);
	if (!q)
		return -1;
	vh_out_open(&o, stdout, opts);
	vh_print_queue(&o, q);
	vh_out_close(&o);
	vhost_queue_get_rsp_free(q);
	return 0;
}

static int cmd_queue_show(struct ynl_sock *ys, const struct vh_opts *opts,
			  const struct vh_req *req)
{
	struct vhost_queue_get_list *list;
	const uint32_t *filter = NULL;
	struct vh_out o;
	uint32_t id = 0;

	if (req->sel.kind != VH_SEL_ALL) {
		if (resolve_id(ys, &req->sel, &id))
			return -1;
		filter = &id;
	}
	if (req->has_index)
		return queue_show_one(ys, opts, id, req->index, req->sel.name);
	list = dump_queues(ys, filter, req->sel.name);
	if (!list)
		return -1;
	vh_out_open(&o, stdout, opts);
	ynl_dump_foreach(list, q)
		vh_print_queue(&o, q);
	vh_out_close(&o);
	vhost_queue_get_list_free(list);
	return 0;
}

/* ---- policy ---------------------------------------------------------------- */

static int cmd_policy_show(struct ynl_sock *ys, const struct vh_opts *opts)
{
	struct vhost_policy_get_rsp *p = vhost_policy_get(ys);

	if (!p)
		return fail(ys, NULL);
	vh_print_policy(stdout, opts, p);
	vhost_policy_get_rsp_free(p);
	return 0;
}

/* One policy-set: grants and bound together, or neither. */
static int cmd_policy_set(struct ynl_sock *ys, const struct vh_req *req)
{
	struct vhost_policy_set_req *r = vh_policy_set_req(&req->policy);
	int err;

	if (!r)
		return oom();
	err = vhost_policy_set(ys, r);
	if (err)
		fail(ys, NULL);
	else
		warn_ack(ys);
	vhost_policy_set_req_free(r);
	return err ? -1 : 0;
}

/* ---- monitor -------------------------------------------------------------- */

static void print_ntfs(struct ynl_sock *ys, const struct vh_opts *opts)
{
	struct ynl_ntf_base_type *ntf;

	while ((ntf = ynl_ntf_dequeue(ys))) {
		struct vhost_dev_get_ntf *n = (struct vhost_dev_get_ntf *)ntf;

		switch (n->cmd) {
		case VHOST_CMD_DEV_ADD_NTF:
			vh_print_event(stdout, opts, VH_EV_ADD, &n->obj);
			break;
		case VHOST_CMD_DEV_DEL_NTF:
			vh_print_event(stdout, opts, VH_EV_DEL, &n->obj);
			break;
		case VHOST_CMD_DEV_CHANGE_NTF:
			vh_print_event(stdout, opts, VH_EV_CHANGE, &n->obj);
			break;
		default:
			break;
		}
		ynl_ntf_free(ntf);
	}
}

/* Read what arrived: 0, or -1 when listening cannot go on. */
static int read_ntfs(struct ynl_sock *ys, const struct vh_opts *opts)
{
	int r;

	errno = 0;
	ys->err.code = 0;
	r = ynl_ntf_check(ys);
	print_ntfs(ys, opts);
	if (r >= 0)
		return 0;
	if (errno == ENOBUFS) {
		fprintf(stderr, "Warning: events lost (receive buffer overrun).\n");
		return 0;
	}
	if (ys->err.code) {
		/* A notification the library could not parse: skipped. */
		fprintf(stderr, "Warning: notification ignored: %s.\n",
			ys->err.msg);
		return 0;
	}
	if (!errno)
		return 0;	/* a notification of a newer kernel */
	fprintf(stderr, "Error: receiving from the kernel: %s.\n",
		strerror(errno));
	return -1;
}

/* Listen to the "monitor" group until SIGINT or SIGTERM. */
static int cmd_monitor(struct ynl_sock *ys, const struct vh_opts *opts)
{
	struct pollfd pfd[2];
	sigset_t mask;
	int r = 0, sfd;

	if (ynl_subscribe(ys, VHOST_MCGRP_MONITOR)) {
		fprintf(stderr, "Error: cannot join the \"%s\" multicast group: %s.\n",
			VHOST_MCGRP_MONITOR, strerror(ys->err.code));
		return -1;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "Error: signalfd: %s.\n", strerror(errno));
		return -1;
	}
	pfd[0].fd = ynl_socket_get_fd(ys);
	pfd[0].events = POLLIN;
	pfd[1].fd = sfd;
	pfd[1].events = POLLIN;
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "Error: poll: %s.\n", strerror(errno));
			r = -1;
			break;
		}
		if (pfd[1].revents)
			break;		/* SIGINT or SIGTERM: done */
		if (pfd[0].revents && read_ntfs(ys, opts)) {
			r = -1;
			break;
		}
	}
	close(sfd);
	return r;
}

/* ---- main ----------------------------------------------------------------- */

/*
 * -n NETNS: enter the network namespace "ip netns add NETNS" made, as
 * "ip -n NETNS" does (iproute2's netns_switch()), before the socket is
 * opened: generic netlink answers about the socket's namespace, so every
 * request, dump and notification is then that namespace's.  ip also
 * unshares a mount namespace and mounts a sysfs of the new namespace on
 * /sys (and bind-mounts /etc/netns/NETNS), for commands that read sysfs or
 * /etc; vhostctl reads neither (everything comes over netlink), so the
 * setns() is all it needs.
 */
static int netns_switch(const char *name)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", VH_NETNS_RUN_DIR, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "Error: cannot open network namespace \"%s\": %s.\n",
			name, strerror(errno));
		return -1;
	}
	if (setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "Error: setting the network namespace \"%s\" failed: %s.\n",
			name, strerror(errno));
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int run(struct ynl_sock *ys, const struct vh_opts *opts,
	       const struct vh_req *req)
{
	switch (req->cmd) {
	case VH_CMD_SHOW:
		return cmd_show(ys, opts, req);
	case VH_CMD_SET:
		return cmd_set(ys, req);
	case VH_CMD_STATS:
		return cmd_stats(ys, opts, req);
	case VH_CMD_QUEUE_SHOW:
		return cmd_queue_show(ys, opts, req);
	case VH_CMD_MONITOR:
		return cmd_monitor(ys, opts);
	case VH_CMD_POLICY_SHOW:
		return cmd_policy_show(ys, opts);
	case VH_CMD_POLICY_SET:
		return cmd_policy_set(ys, req);
	default:
		return -1;
	}
}

int main(int argc, char **argv)
{
	struct ynl_error yerr = {};
	struct ynl_sock *ys;
	struct vh_opts opts;
	struct vh_req req;
	char buf[600];
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

	if (opts.netns && netns_switch(opts.netns))
		return VH_EXIT_FAIL;
	ys = ynl_sock_create(&ynl_vhost_family, &yerr);
	if (!ys) {
		if (!yerr.code)
			yerr.code = errno ? errno : ENOMEM;
		vh_sock_err_format(&yerr, buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
		return VH_EXIT_FAIL;
	}
	r = run(ys, &opts, &req);
	ynl_sock_destroy(ys);
	return r ? VH_EXIT_FAIL : VH_EXIT_OK;
}
