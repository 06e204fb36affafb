// SPDX-License-Identifier: GPL-2.0
/*
 * vhostctl: show, tune and watch vhost devices through the "vhost" generic
 * netlink family, with the client library YNL generates from its spec.
 *
 *   vhostctl [-j] [-p] [-s] [-o FORMAT] [-i SECONDS] [-c COUNT] [-t]
 *            [-n NETNS] [-V] { dev | queue | policy | show | set | stats |
 *                              monitor | help } ...
 *   vhostctl [OPTIONS] -b FILE
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
#include <libkmod.h>

#include "vhostctl.h"

/* A command ended by SIGINT or SIGTERM: a batch stops there too. */
static bool interrupted;

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

/*
 * The devices sel selects (every device for VH_SEL_ALL); for a selector
 * that selects none, NULL and "device not found", as for one device.
 */
static struct vhost_dev_get_list *dump_devs(struct ynl_sock *ys,
					    const struct vh_sel *sel)
{
	struct vhost_dev_get_req_dump *req = vh_dev_dump_req(sel);
	struct vhost_dev_get_list *list;

	if (!req) {
		oom();
		return NULL;
	}
	list = vhost_dev_get_dump(ys, req);
	vhost_dev_get_req_dump_free(req);
	if (!list) {
		fail(ys, sel->name);
		return NULL;
	}
	if (sel->kind != VH_SEL_ALL && ynl_dump_empty(list)) {
		fprintf(stderr, "Error: device not found.\n");
		vhost_dev_get_list_free(list);
		return NULL;
	}
	return list;
}

/*
 * The id of the device sel names, for the ops that take only an id.  A
 * backend interface, an owner or a label may name several devices: those
 * take one (show -s shows the counters of each).
 */
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

/*
 * The ids of the devices sel selects (backend, owner, label: a filtered
 * dump), *n of them; NULL, said, on error or when there is none.
 */
static uint32_t *select_ids(struct ynl_sock *ys, const struct vh_sel *sel,
			    unsigned int *n)
{
	struct vhost_dev_get_list *list = dump_devs(ys, sel);
	uint32_t *ids;

	if (!list)
		return NULL;
	*n = 0;
	ynl_dump_foreach(list, d)
		(*n)++;
	ids = calloc(*n, sizeof(*ids));
	if (!ids)
		oom();
	*n = 0;
	ynl_dump_foreach(list, d)
		if (ids && d->_present.id)
			ids[(*n)++] = d->id;
	vhost_dev_get_list_free(list);
	return ids;
}

static bool has_id(const uint32_t *ids, unsigned int n, uint32_t id)
{
	while (n--)
		if (ids[n] == id)
			return true;
	return false;
}

/*
 * Unlink and free the entries of a stats or queue dump (whose entries
 * hold no pointers) that belong to no device of ids[n].
 */
#define keep_devs(list, ids, n)						\
	do {								\
		typeof(list) *pp_ = &(list);				\
									\
		while (!ynl_dump_empty(*pp_)) {				\
			typeof(list) e_ = *pp_;				\
									\
			if (e_->obj._present.dev_id &&			\
			    has_id(ids, n, e_->obj.dev_id)) {		\
				pp_ = &e_->next;			\
				continue;				\
			}						\
			*pp_ = e_->next;				\
			free(e_);					\
		}							\
	} while (0)

/* The devices a stats or queue command covers: one, several or all. */
struct devs_sel {
	const uint32_t *filter;	/* one device: the dump's filter */
	uint32_t id;
	uint32_t *ids;		/* several: kept from a dump of all */
	unsigned int n;
};

static int devs_sel_get(struct ynl_sock *ys, const struct vh_sel *sel,
			struct devs_sel *ds)
{
	memset(ds, 0, sizeof(*ds));
	if (sel->kind == VH_SEL_ALL)
		return 0;
	if (vh_sel_many(sel)) {
		ds->ids = select_ids(ys, sel, &ds->n);
		return ds->ids ? 0 : -1;
	}
	if (resolve_id(ys, sel, &ds->id))
		return -1;
	ds->filter = &ds->id;
	return 0;
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

/*
 * SIGINT and SIGTERM as a file descriptor to poll, for the commands that
 * run until one comes (monitor, stats -i): blocked until signals_end().
 * -1 on error, said.
 */
static int signals_begin(sigset_t *old)
{
	sigset_t mask;
	int sfd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, old);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		fprintf(stderr, "Error: signalfd: %s.\n", strerror(errno));
		sigprocmask(SIG_SETMASK, old, NULL);
	}
	return sfd;
}

/*
 * Take the signals that came (so that unblocking them does not kill us:
 * the command ended cleanly, a batch stops after it) and unblock them.
 */
static void signals_end(int sfd, const sigset_t *old)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == sizeof(si))
		interrupted = true;
	close(sfd);
	sigprocmask(SIG_SETMASK, old, NULL);
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
	m.stats = vh_find_stats(x->stats, d->id, NULL);
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
				vh_find_stats(x->queue_stats, d->id, &q->index) :
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

	if (req->sel.kind == VH_SEL_ALL || vh_sel_many(&req->sel)) {
		list = dump_devs(ys, &req->sel);
		if (!list)
			return -1;
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

/* "stats -o openmetrics|prometheus": the devices give the samples their labels. */
static int stats_openmetrics(struct ynl_sock *ys, const struct vh_opts *opts,
			     struct vhost_stats_get_rsp_list *list)
{
	struct vh_sel all = { .kind = VH_SEL_ALL };
	struct vhost_dev_get_list *devs = dump_devs(ys, &all);

	if (!devs)
		return -1;
	vh_print_metrics(stdout, list, devs, opts->prometheus);
	vhost_dev_get_list_free(devs);
	return 0;
}

static double seconds_between(const struct timespec *a,
			      const struct timespec *b)
{
	return (b->tv_sec - a->tv_sec) + (b->tv_nsec - a->tv_nsec) / 1e9;
}

/*
 * Wait until seconds after t0 (CLOCK_MONOTONIC): 0, or 1 when a signal
 * came on pfd first, -1 on error.
 */
static int wait_until(struct pollfd *pfd, const struct timespec *t0,
		      uint32_t seconds)
{
	struct timespec now;
	double left;

	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		left = seconds - seconds_between(t0, &now);
		if (left <= 0)
			return 0;
		/* rounded up: never back before the interval is over */
		if (poll(pfd, 1, (int)(left * 1000) + 1) < 0 && errno != EINTR) {
			fprintf(stderr, "Error: poll: %s.\n", strerror(errno));
			return -1;
		}
		if (pfd->revents)
			return 1;
	}
}

/*
 * "stats -i": a dump at the start and one after each interval, the rates
 * between the last two printed, opts->count times or until a signal.
 */
/* A stats dump of the devices ds covers. */
static struct vhost_stats_get_rsp_list *
dump_stats_of(struct ynl_sock *ys, const struct devs_sel *ds, bool per_queue,
	      const char *dev)
{
	struct vhost_stats_get_rsp_list *list;

	list = dump_stats(ys, ds->filter, per_queue, dev);
	if (list && ds->ids)
		keep_devs(list, ds->ids, ds->n);
	return list;
}

static int stats_rates(struct ynl_sock *ys, const struct vh_opts *opts,
		       const struct vh_req *req, const struct devs_sel *ds)
{
	bool per_queue = req->scope == VH_SCOPE_QUEUE;
	struct vhost_stats_get_rsp_list *prev, *cur;
	struct pollfd pfd = { .events = POLLIN };
	struct timespec t0, t1;
	struct vh_out o;
	sigset_t old;
	uint32_t n;
	int r = -1;

	pfd.fd = signals_begin(&old);
	if (pfd.fd < 0)
		return -1;
	prev = dump_stats_of(ys, ds, per_queue, req->sel.name);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (n = 0; prev && (!opts->count || n < opts->count); n++) {
		r = wait_until(&pfd, &t0, opts->interval);
		if (r)
			break;
		cur = dump_stats_of(ys, ds, per_queue, req->sel.name);
		if (!cur) {
			r = -1;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		vh_out_open(&o, stdout, opts);
		vh_print_rates(&o, cur, prev, seconds_between(&t0, &t1));
		vh_out_close(&o);
		vhost_stats_get_rsp_list_free(prev);
		prev = cur;
		t0 = t1;
	}
	if (prev)
		vhost_stats_get_rsp_list_free(prev);
	signals_end(pfd.fd, &old);
	return r < 0 ? -1 : 0;
}

static int cmd_stats(struct ynl_sock *ys, const struct vh_opts *opts,
		     const struct vh_req *req)
{
	struct vhost_stats_get_rsp_list *list;
	struct devs_sel ds;
	struct vh_out o;
	int r = 0;

	if (devs_sel_get(ys, &req->sel, &ds))
		return -1;
	if (opts->interval) {
		r = stats_rates(ys, opts, req, &ds);
		free(ds.ids);
		return r;
	}
	list = dump_stats_of(ys, &ds, req->scope == VH_SCOPE_QUEUE,
			     req->sel.name);
	free(ds.ids);
	if (!list)
		return -1;
	if (opts->openmetrics) {
		r = stats_openmetrics(ys, opts, list);
	} else {
		vh_out_open(&o, stdout, opts);
		ynl_dump_foreach(list, s)
			vh_print_stats(&o, s);
		vh_out_close(&o);
	}
	vhost_stats_get_rsp_list_free(list);
	return r;
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
	struct devs_sel ds;
	struct vh_out o;

	if (req->has_index && vh_sel_many(&req->sel)) {
		fprintf(stderr, "Error: \"index\" needs one device, give its id or name.\n");
		return -1;
	}
	if (devs_sel_get(ys, &req->sel, &ds))
		return -1;
	if (req->has_index)
		return queue_show_one(ys, opts, ds.id, req->index, req->sel.name);
	list = dump_queues(ys, ds.filter, req->sel.name);
	if (list && ds.ids)
		keep_devs(list, ds.ids, ds.n);
	free(ds.ids);
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

/* ---- defaults ------------------------------------------------------------- */

static int cmd_defaults_show(struct ynl_sock *ys, const struct vh_opts *opts)
{
	struct vhost_defaults_get_rsp *d = vhost_defaults_get(ys);

	if (!d)
		return fail(ys, NULL);
	vh_print_defaults(stdout, opts, d);
	vhost_defaults_get_rsp_free(d);
	return 0;
}

/* One defaults-set: every value given, or none. */
static int cmd_defaults_set(struct ynl_sock *ys, const struct vh_req *req)
{
	struct vhost_defaults_set_req *r = vh_defaults_set_req(&req->set);
	int err;

	if (!r)
		return oom();
	err = vhost_defaults_set(ys, r);
	if (err)
		fail(ys, NULL);
	else
		warn_ack(ys);
	vhost_defaults_set_req_free(r);
	return err ? -1 : 0;
}

/* ---- monitor -------------------------------------------------------------- */

/* What arrived, stamped (-t) with the time it was read. */
static void print_ntfs(struct ynl_sock *ys, const struct vh_opts *opts)
{
	const struct timespec *stamp = NULL;
	struct ynl_ntf_base_type *ntf;
	struct timespec ts;

	if (opts->timestamp) {
		clock_gettime(CLOCK_REALTIME, &ts);
		stamp = &ts;
	}
	while ((ntf = ynl_ntf_dequeue(ys))) {
		struct vhost_dev_get_ntf *n = (struct vhost_dev_get_ntf *)ntf;

		switch (n->cmd) {
		case VHOST_CMD_DEV_ADD_NTF:
			vh_print_event(stdout, opts, VH_EV_ADD, &n->obj, stamp);
			break;
		case VHOST_CMD_DEV_DEL_NTF:
			vh_print_event(stdout, opts, VH_EV_DEL, &n->obj, stamp);
			break;
		case VHOST_CMD_DEV_CHANGE_NTF:
			vh_print_event(stdout, opts, VH_EV_CHANGE, &n->obj,
				       stamp);
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

/*
 * Listen to the "monitor" group (or "watch", the read-only one, which
 * needs no capability and carries no backend) until SIGINT or SIGTERM.
 */
static int cmd_monitor(struct ynl_sock *ys, const struct vh_opts *opts,
		       bool watch)
{
	const char *grp = watch ? VHOST_MCGRP_WATCH : VHOST_MCGRP_MONITOR;
	struct pollfd pfd[2];
	sigset_t old;
	int r = 0, sfd;

	if (ynl_subscribe(ys, grp)) {
		fprintf(stderr, "Error: cannot join the \"%s\" multicast group: %s.\n",
			grp, strerror(ys->err.code));
		return -1;
	}
	sfd = signals_begin(&old);
	if (sfd < 0)
		return -1;
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
	signals_end(sfd, &old);
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

/* ---- status --------------------------------------------------------------- */

/* libkmod: the file modprobe loads for name on this kernel, its srcversion. */
static void kmod_lookup(void *arg, const char *name, char *file,
			size_t file_len, char *srcversion, size_t srcversion_len)
{
	struct kmod_list *list = NULL, *info = NULL, *i;
	struct kmod_ctx *ctx = arg;
	struct kmod_module *m;
	const char *path;

	if (!ctx || kmod_module_new_from_lookup(ctx, name, &list) < 0 || !list)
		return;
	m = kmod_module_get_module(list);
	path = kmod_module_get_path(m);
	if (path) {
		snprintf(file, file_len, "%s", path);
		if (kmod_module_get_info(m, &info) >= 0) {
			kmod_list_foreach(i, info)
				if (!strcmp(kmod_module_info_get_key(i), "srcversion"))
					snprintf(srcversion, srcversion_len, "%s",
						 kmod_module_info_get_value(i));
			kmod_module_info_free_list(info);
		}
	}
	kmod_module_unref(m);
	kmod_module_unref_list(list);
}

/*
 * What the family says, if the package's vhost_admin is there: the
 * devices of this namespace by mode, the defaults, the policy.  Quietly
 * nothing when the family is not (the kernel's own vhost).
 */
static void status_family(struct vh_status_devs *devs,
			  struct vhost_dev_get_list **list,
			  struct vhost_defaults_get_rsp **d,
			  struct vhost_policy_get_rsp **p, struct ynl_sock **ysp)
{
	struct vhost_dev_get_req_dump *req;
	struct ynl_error yerr = {};
	struct ynl_sock *ys;

	ys = ynl_sock_create(&ynl_vhost_family, &yerr);
	if (!ys)
		return;
	*ysp = ys;
	req = vhost_dev_get_req_dump_alloc();
	if (req) {
		*list = vhost_dev_get_dump(ys, req);
		vhost_dev_get_req_dump_free(req);
	}
	if (*list) {
		struct vhost_dev_get_list *all = *list;

		devs->known = true;
		ynl_dump_foreach(all, dev) {
			devs->total++;
			if (dev->_present.metamap &&
			    dev->metamap < ARRAY_SIZE(devs->by_mode))
				devs->by_mode[dev->metamap]++;
		}
	}
	*d = vhost_defaults_get(ys);
	*p = vhost_policy_get(ys);
	devs->defaults = *d;
	devs->policy = *p;
}

/* status: 0 when the feature is active or ready, -1 when inactive. */
static int cmd_status(const struct vh_opts *opts)
{
	struct vhost_defaults_get_rsp *d = NULL;
	struct vhost_policy_get_rsp *p = NULL;
	struct vhost_dev_get_list *list = NULL;
	struct vh_status_devs devs = {};
	struct ynl_sock *ys = NULL;
	struct kmod_ctx *ctx;
	struct vh_status st;

	memset(&st, 0, sizeof(st));
	vh_status_kernel(&st);
	ctx = kmod_new(NULL, NULL);
	vh_status_collect(&st, "/sys", kmod_lookup, ctx);
	if (ctx)
		kmod_unref(ctx);
	if (st.state != VH_STATE_INACTIVE)
		status_family(&devs, &list, &d, &p, &ys);
	vh_print_status(stdout, opts, &st, &devs);
	if (list)
		vhost_dev_get_list_free(list);
	if (d)
		vhost_defaults_get_rsp_free(d);
	if (p)
		vhost_policy_get_rsp_free(p);
	if (ys)
		ynl_sock_destroy(ys);
	return st.state == VH_STATE_INACTIVE ? -1 : 0;
}

static int cmd_apply(const struct vh_req *req);

static int run(struct ynl_sock *ys, const struct vh_opts *opts,
	       const struct vh_req *req)
{
	switch (req->cmd) {
	case VH_CMD_HELP:	/* a line of a batch */
		vh_usage(stdout, req->help);
		return 0;
	case VH_CMD_SHOW:
		return cmd_show(ys, opts, req);
	case VH_CMD_SET:
		return cmd_set(ys, req);
	case VH_CMD_STATS:
		return cmd_stats(ys, opts, req);
	case VH_CMD_QUEUE_SHOW:
		return cmd_queue_show(ys, opts, req);
	case VH_CMD_MONITOR:
		return cmd_monitor(ys, opts, req->watch);
	case VH_CMD_POLICY_SHOW:
		return cmd_policy_show(ys, opts);
	case VH_CMD_POLICY_SET:
		return cmd_policy_set(ys, req);
	case VH_CMD_DEFAULTS_SHOW:
		return cmd_defaults_show(ys, opts);
	case VH_CMD_DEFAULTS_SET:
		return cmd_defaults_set(ys, req);
	case VH_CMD_STATUS:
		return cmd_status(opts);
	case VH_CMD_APPLY:	/* a line of a batch */
		return cmd_apply(req) ? -1 : 0;
	default:
		return -1;
	}
}

/* The family's socket, or NULL when it cannot be opened, said. */
static struct ynl_sock *sock_open(void)
{
	struct ynl_error yerr = {};
	struct ynl_sock *ys;
	char buf[600];

	ys = ynl_sock_create(&ynl_vhost_family, &yerr);
	if (!ys) {
		if (!yerr.code)
			yerr.code = errno ? errno : ENOMEM;
		vh_sock_err_format(&yerr, buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
	}
	return ys;
}

/* A command of a batch; the socket is opened for the first that needs it. */
static int run_line(struct ynl_sock **ys, const struct vh_opts *opts,
		    const struct vh_req *req)
{
	if (req->cmd != VH_CMD_HELP && req->cmd != VH_CMD_STATUS &&
	    req->cmd != VH_CMD_APPLY && !*ys) {
		*ys = sock_open();
		if (!*ys)
			return VH_EXIT_FAIL;
	}
	return run(*ys, opts, req) ? VH_EXIT_FAIL : VH_EXIT_OK;
}

/*
 * -b FILE: each line a command, as on the command line after the options,
 * which apply to every line (a line's own -i, -c, -o, -t win).  A failed
 * command says why, then "Command failed FILE:LINE", and ends the batch
 * (with -f the batch goes on); the status is the first failure's.
 */
static int run_batch(const struct vh_opts *opts, FILE *f)
{
	char *line = NULL, *words[VH_LINE_MAX_WORDS];
	int lineno = 0, status = VH_EXIT_OK;
	struct ynl_sock *ys = NULL;
	size_t cap = 0;

	while (!interrupted && getline(&line, &cap, f) >= 0) {
		struct vh_opts lopts = *opts;
		struct vh_req req;
		int n, r;

		lineno++;
		n = vh_split_line(line, words, ARRAY_SIZE(words), &req);
		if (!n)
			continue;
		if (n < 0 || vh_parse_command(n, words, &lopts, &req)) {
			fprintf(stderr, "%s\n", req.err);
			r = VH_EXIT_USAGE;
		} else {
			r = run_line(&ys, &lopts, &req);
		}
		if (r == VH_EXIT_OK)
			continue;
		fprintf(stderr, "Command failed %s:%d\n", opts->batch, lineno);
		if (status == VH_EXIT_OK)
			status = r;
		if (!opts->force)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "Error: reading \"%s\": %s.\n", opts->batch,
			strerror(errno));
		status = VH_EXIT_FAIL;
	}
	free(line);
	if (ys)
		ynl_sock_destroy(ys);
	return status;
}

/* ---- apply ---------------------------------------------------------------- */

/* A namespace an apply file acts in: its socket and what it held before. */
struct apply_ns {
	char *name;		/* -n NAME of its lines; NULL: vhostctl's own */
	struct ynl_sock *ys;
	struct vhost_defaults_get_rsp *d0;
	struct vhost_policy_get_rsp *p0;
	uint64_t touched;	/* the defaults its lines set or unset */
	bool defaults_sent, policy_sent;
};

struct apply_line {
	int lineno;
	int ns;			/* index into the namespaces */
	char *buf;		/* the line, which req points into */
	struct vh_req req;
};

struct apply {
	const char *file;
	struct apply_line *lines;
	int nlines;
	struct apply_ns *ns;
	int nns;
	int home;		/* vhostctl's own network namespace */
};

static int apply_ns_index(struct apply *a, const char *name)
{
	struct apply_ns *ns;
	int i;

	for (i = 0; i < a->nns; i++)
		if ((!name && !a->ns[i].name) ||
		    (name && a->ns[i].name && !strcmp(name, a->ns[i].name)))
			return i;
	ns = realloc(a->ns, (a->nns + 1) * sizeof(*ns));
	if (!ns)
		return oom();
	a->ns = ns;
	memset(&ns[a->nns], 0, sizeof(*ns));
	if (name) {
		ns[a->nns].name = strdup(name);
		if (!ns[a->nns].name)
			return oom();
	}
	return a->nns++;
}

/* Read and parse every line: 0, or VH_EXIT_USAGE (said) or -1 (said). */
static int apply_read(struct apply *a, FILE *f)
{
	char *line = NULL;
	int lineno = 0, r = 0;
	size_t cap = 0;

	while (getline(&line, &cap, f) >= 0) {
		struct apply_line *l;
		const char *netns;
		char *buf;

		lineno++;
		buf = strdup(line);
		if (!buf) {
			r = oom();
			break;
		}
		l = realloc(a->lines, (a->nlines + 1) * sizeof(*l));
		if (!l) {
			free(buf);
			r = oom();
			break;
		}
		a->lines = l;
		l = &l[a->nlines];
		l->lineno = lineno;
		l->buf = buf;
		r = vh_parse_apply_line(buf, &netns, &l->req);
		if (r < 0) {
			fprintf(stderr, "%s:%d: %s; nothing applied.\n",
				a->file, lineno, l->req.err);
			free(buf);
			r = VH_EXIT_USAGE;
			break;
		}
		if (!r) {
			free(buf);
			continue;
		}
		l->ns = apply_ns_index(a, netns);
		a->nlines++;
		if (l->ns < 0) {
			r = -1;
			break;
		}
		r = 0;
	}
	if (!r && ferror(f)) {
		fprintf(stderr, "Error: reading \"%s\": %s.\n", a->file,
			strerror(errno));
		r = -1;
	}
	free(line);
	return r;
}

/*
 * Each namespace's socket (opened in it: generic netlink answers about
 * the socket's namespace) and what it holds now; a "set policy" line
 * where no policy applies is refused here, before anything is sent.
 */
static int apply_prepare(struct apply *a)
{
	int i;

	for (i = 0; i < a->nns; i++) {
		struct apply_ns *ns = &a->ns[i];

		if (ns->name && netns_switch(ns->name))
			return -1;
		ns->ys = sock_open();
		if (ns->name && setns(a->home, CLONE_NEWNET)) {
			fprintf(stderr, "Error: returning to vhostctl's network namespace: %s.\n",
				strerror(errno));
			return -1;
		}
		if (!ns->ys)
			return -1;
		ns->d0 = vhost_defaults_get(ns->ys);
		if (!ns->d0)
			return fail(ns->ys, NULL);
		ns->p0 = vhost_policy_get(ns->ys);
		if (!ns->p0)
			return fail(ns->ys, NULL);
	}
	for (i = 0; i < a->nlines; i++) {
		struct apply_line *l = &a->lines[i];
		struct apply_ns *ns = &a->ns[l->ns];

		if (l->req.cmd == VH_CMD_POLICY_SET && !ns->p0->tenant) {
			fprintf(stderr,
				"%s:%d: no vhost policy applies in %s%s%s, its administrators are the host's; nothing applied.\n",
				a->file, l->lineno,
				ns->name ? "network namespace \"" : "this network namespace",
				ns->name ? ns->name : "", ns->name ? "\"" : "");
			return -1;
		}
	}
	return 0;
}

/* Put back what the namespaces held before: 0, or -1 when it failed. */
static int apply_undo(struct apply *a)
{
	int i, r = 0;

	for (i = 0; i < a->nns; i++) {
		struct apply_ns *ns = &a->ns[i];
		struct vh_req req = {};
		bool failed = false;

		if (ns->defaults_sent) {
			vh_defaults_restore(ns->d0, ns->touched, &req.set);
			if ((req.set.mask || req.set.unset) &&
			    cmd_defaults_set(ns->ys, &req))
				failed = true;
		}
		if (ns->policy_sent) {
			req.policy.mask = VH_BIT(VHOST_A_POLICY_GRANTS) |
					  VH_BIT(VHOST_A_POLICY_BUSYPOLL_US_MAX);
			req.policy.grants = ns->p0->grants;
			req.policy.busypoll_us_max = ns->p0->busypoll_us_max;
			if (cmd_policy_set(ns->ys, &req))
				failed = true;
		}
		if (!failed)
			continue;
		r = -1;
		fprintf(stderr,
			"Error: %s%s%s keeps part of \"%s\": putting back what it held failed.\n",
			ns->name ? "network namespace \"" : "this network namespace",
			ns->name ? ns->name : "", ns->name ? "\"" : "",
			a->file);
	}
	return r;
}

/* Every line, in order; the first the kernel refuses undoes the others. */
static int apply_send(struct apply *a)
{
	int i;

	for (i = 0; i < a->nlines; i++) {
		struct apply_line *l = &a->lines[i];
		struct apply_ns *ns = &a->ns[l->ns];
		int r;

		if (l->req.cmd == VH_CMD_DEFAULTS_SET) {
			ns->defaults_sent = true;
			ns->touched |= vh_set_tunables(&l->req.set) |
				       l->req.set.unset;
			r = cmd_defaults_set(ns->ys, &l->req);
		} else {
			ns->policy_sent = true;
			r = cmd_policy_set(ns->ys, &l->req);
		}
		if (!r)
			continue;
		if (apply_undo(a))
			fprintf(stderr, "Command failed %s:%d\n", a->file,
				l->lineno);
		else
			fprintf(stderr,
				"Command failed %s:%d: the lines before it undone, nothing applied.\n",
				a->file, l->lineno);
		return -1;
	}
	return 0;
}

/*
 * apply [ check ] FILE: every line is read and checked, each namespace
 * read, before anything is sent; then the lines are sent in order, and
 * the first the kernel refuses puts back what the namespaces held.
 * check stops before sending.
 */
static int cmd_apply(const struct vh_req *req)
{
	struct apply a = { .file = req->file, .home = -1 };
	FILE *f;
	int i, r;

	f = strcmp(a.file, "-") ? fopen(a.file, "r") : stdin;
	if (!f) {
		fprintf(stderr, "Error: cannot open \"%s\": %s.\n", a.file,
			strerror(errno));
		return VH_EXIT_FAIL;
	}
	r = apply_read(&a, f);
	if (f != stdin)
		fclose(f);
	if (!r) {
		a.home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
		if (a.home < 0) {
			fprintf(stderr, "Error: cannot open vhostctl's network namespace: %s.\n",
				strerror(errno));
			r = -1;
		}
	}
	if (!r)
		r = apply_prepare(&a);
	if (!r && !req->check)
		r = apply_send(&a);
	for (i = 0; i < a.nlines; i++)
		free(a.lines[i].buf);
	free(a.lines);
	for (i = 0; i < a.nns; i++) {
		if (a.ns[i].d0)
			vhost_defaults_get_rsp_free(a.ns[i].d0);
		if (a.ns[i].p0)
			vhost_policy_get_rsp_free(a.ns[i].p0);
		if (a.ns[i].ys)
			ynl_sock_destroy(a.ns[i].ys);
		free(a.ns[i].name);
	}
	free(a.ns);
	if (a.home >= 0)
		close(a.home);
	if (r == VH_EXIT_USAGE)
		return r;
	return r ? VH_EXIT_FAIL : VH_EXIT_OK;
}

int main(int argc, char **argv)
{
	struct ynl_sock *ys;
	FILE *batch = NULL;
	struct vh_opts opts;
	struct vh_req req;
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

	/* a file that cannot be read fails before anything is sent */
	if (req.cmd == VH_CMD_BATCH) {
		batch = strcmp(opts.batch, "-") ? fopen(opts.batch, "r") : stdin;
		if (!batch) {
			fprintf(stderr, "Error: cannot open \"%s\": %s.\n",
				opts.batch, strerror(errno));
			return VH_EXIT_FAIL;
		}
	}
	if (opts.netns && netns_switch(opts.netns))
		return VH_EXIT_FAIL;
	if (batch) {
		r = run_batch(&opts, batch);
		if (batch != stdin)
			fclose(batch);
		return r;
	}
	if (req.cmd == VH_CMD_APPLY)
		return cmd_apply(&req);
	/* status says whether the family is there: it needs none */
	if (req.cmd == VH_CMD_STATUS)
		return cmd_status(&opts) ? VH_EXIT_FAIL : VH_EXIT_OK;
	ys = sock_open();
	if (!ys)
		return VH_EXIT_FAIL;
	r = run(ys, &opts, &req);
	ynl_sock_destroy(ys);
	return r ? VH_EXIT_FAIL : VH_EXIT_OK;
}
