// SPDX-License-Identifier: GPL-2.0
/*
 * The libnl-genl-3 side: socket, request/reply loop with extended ACK
 * messages, and the monitor loop.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/socket.h>

#include "nl.h"

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

int vh_nl_open(struct vh_nl *nl)
{
	int one = 1, r;

	nl->sk = nl_socket_alloc();
	if (!nl->sk) {
		fprintf(stderr, "Error: out of memory.\n");
		return -ENOMEM;
	}
	r = genl_connect(nl->sk);
	if (r < 0) {
		fprintf(stderr, "Error: cannot open a generic netlink socket: %s.\n",
			nl_geterror(r));
		goto err;
	}
	/* Kernel error messages (extack); old kernels just ignore this. */
	setsockopt(nl_socket_get_fd(nl->sk), SOL_NETLINK, NETLINK_EXT_ACK,
		   &one, sizeof(one));
	nl_socket_enable_msg_peek(nl->sk);
	nl->family = genl_ctrl_resolve(nl->sk, VHOST_FAMILY_NAME);
	if (nl->family < 0) {
		r = nl->family;
		if (r == -NLE_OBJ_NOTFOUND)
			fprintf(stderr,
				"Error: the kernel has no \"%s\" generic netlink family (no vhost admin plane in this kernel, or the vhost_admin module is not loaded).\n",
				VHOST_FAMILY_NAME);
		else
			fprintf(stderr,
				"Error: cannot resolve the \"%s\" generic netlink family: %s.\n",
				VHOST_FAMILY_NAME, nl_geterror(r));
		goto err;
	}
	return 0;
err:
	nl_socket_free(nl->sk);
	nl->sk = NULL;
	return -ENOENT;
}

void vh_nl_close(struct vh_nl *nl)
{
	if (nl->sk)
		nl_socket_free(nl->sk);
	nl->sk = NULL;
}

struct nl_msg *vh_nl_msg(struct vh_nl *nl, uint8_t cmd, bool dump)
{
	struct nl_msg *msg = nlmsg_alloc();

	if (!msg)
		return NULL;
	if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, nl->family, 0,
			 dump ? NLM_F_DUMP : 0, cmd, VHOST_FAMILY_VERSION)) {
		nlmsg_free(msg);
		return NULL;
	}
	return msg;
}

struct xfer {
	int status;		/* 1 waiting, 0 done, -errno failed */
	vh_msg_fn fn;
	void *arg;
	struct nl_msg *sent;
	const char *dev;
};

static void report(struct xfer *x, const struct nlmsghdr *nlh)
{
	struct vh_ext_ack ea;
	char buf[512];

	if (vh_ext_ack_parse(nlh, nlh->nlmsg_len, nlmsg_hdr(x->sent), &ea)) {
		fprintf(stderr, "Error: malformed error message from the kernel.\n");
		x->status = -EIO;
		return;
	}
	vh_ext_ack_format(&ea, x->dev, vh_dev_attr_names, VHOST_A_DEV_MAX,
			  buf, sizeof(buf));
	if (buf[0])
		fprintf(stderr, "%s\n", buf);
	x->status = -ea.error;
}

static int valid_cb(struct nl_msg *msg, void *arg)
{
	struct xfer *x = arg;
	int r;

	if (!x->fn)
		return NL_OK;
	r = x->fn(nlmsg_hdr(msg), x->arg);
	if (r < 0) {
		x->status = r;
		return NL_STOP;
	}
	return NL_OK;
}

static int err_cb(struct sockaddr_nl *nla, struct nlmsgerr *e, void *arg)
{
	struct nlmsghdr *nlh = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);

	(void)nla;
	report(arg, nlh);
	return NL_STOP;
}

/* ACK (possibly with a warning) or end of dump (possibly with an error). */
static int done_cb(struct nl_msg *msg, void *arg)
{
	report(arg, nlmsg_hdr(msg));
	return NL_STOP;
}

int vh_nl_request(struct vh_nl *nl, struct nl_msg *msg, vh_msg_fn fn,
		  void *arg, const char *dev)
{
	struct xfer x = { .status = 1, .fn = fn, .arg = arg, .sent = msg,
			  .dev = dev };
	struct nl_cb *cb;
	int r;

	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		nlmsg_free(msg);
		fprintf(stderr, "Error: out of memory.\n");
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, valid_cb, &x);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, done_cb, &x);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, done_cb, &x);
	nl_cb_err(cb, NL_CB_CUSTOM, err_cb, &x);

	r = nl_send_auto(nl->sk, msg);
	if (r < 0) {
		fprintf(stderr, "Error: cannot send to the kernel: %s.\n",
			nl_geterror(r));
		x.status = -EIO;
	}
	while (x.status > 0) {
		r = nl_recvmsgs(nl->sk, cb);
		if (r < 0 && x.status > 0) {
			fprintf(stderr, "Error: receiving from the kernel: %s.\n",
				nl_geterror(r));
			x.status = -EIO;
		}
	}
	nl_cb_put(cb);
	nlmsg_free(msg);
	return x.status;
}

static int noop_seq_check(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return NL_OK;
}

static int monitor_cb(struct nl_msg *msg, void *arg)
{
	struct xfer *x = arg;

	x->fn(nlmsg_hdr(msg), x->arg);	/* a bad event is reported, not fatal */
	return NL_OK;
}

int vh_nl_monitor(struct vh_nl *nl, vh_msg_fn fn, void *arg)
{
	struct xfer x = { .status = 1, .fn = fn, .arg = arg };
	struct pollfd pfd[2];
	struct nl_cb *cb;
	sigset_t mask;
	int grp, r, sfd;

	grp = genl_ctrl_resolve_grp(nl->sk, VHOST_FAMILY_NAME, VHOST_MCGRP_MONITOR);
	if (grp < 0) {
		fprintf(stderr, "Error: the \"%s\" family has no \"%s\" multicast group: %s.\n",
			VHOST_FAMILY_NAME, VHOST_MCGRP_MONITOR, nl_geterror(grp));
		return -ENOENT;
	}
	r = nl_socket_add_membership(nl->sk, grp);
	if (r < 0) {
		fprintf(stderr, "Error: cannot join the \"%s\" group: %s.\n",
			VHOST_MCGRP_MONITOR, nl_geterror(r));
		return -EIO;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (sfd < 0) {
		fprintf(stderr, "Error: signalfd: %s.\n", strerror(errno));
		return -errno;
	}
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb) {
		close(sfd);
		return -ENOMEM;
	}
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, monitor_cb, &x);
	/* Notifications carry no sequence number of ours. */
	nl_cb_set(cb, NL_CB_SEQ_CHECK, NL_CB_CUSTOM, noop_seq_check, NULL);
	nl_socket_set_nonblocking(nl->sk);

	pfd[0].fd = nl_socket_get_fd(nl->sk);
	pfd[0].events = POLLIN;
	pfd[1].fd = sfd;
	pfd[1].events = POLLIN;
	r = 0;
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			fprintf(stderr, "Error: poll: %s.\n", strerror(errno));
			break;
		}
		if (pfd[1].revents)
			break;		/* SIGINT or SIGTERM: done */
		if (!pfd[0].revents)
			continue;
		r = nl_recvmsgs(nl->sk, cb);
		if (r == -NLE_AGAIN || r >= 0) {
			r = 0;
			continue;
		}
		if (r == -NLE_NOMEM) {
			/* ENOBUFS: the socket overran, events were lost. */
			fprintf(stderr, "Warning: events lost (receive buffer overrun).\n");
			r = 0;
			continue;
		}
		fprintf(stderr, "Error: receiving from the kernel: %s.\n",
			nl_geterror(r));
		r = -EIO;
		break;
	}
	nl_cb_put(cb);
	close(sfd);
	return r;
}
