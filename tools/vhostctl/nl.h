/* SPDX-License-Identifier: GPL-2.0 */
#ifndef VHOSTCTL_NL_H
#define VHOSTCTL_NL_H

#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "vhostctl.h"

struct vh_nl {
	struct nl_sock *sk;
	int family;
};

/* Open a generic netlink socket and resolve "vhost"; prints why not. */
int vh_nl_open(struct vh_nl *nl);
void vh_nl_close(struct vh_nl *nl);

/* A request of the vhost family: cmd with NLM_F_DUMP or not. */
struct nl_msg *vh_nl_msg(struct vh_nl *nl, uint8_t cmd, bool dump);

typedef int (*vh_msg_fn)(const struct nlmsghdr *nlh, void *arg);

/*
 * Send msg (consumed) and hand every reply to fn until the kernel's ACK or
 * the end of the dump.  Errors are printed (extack as "Error: <msg>."); dev
 * names the device in messages.  Returns 0 or -errno.
 */
int vh_nl_request(struct vh_nl *nl, struct nl_msg *msg, vh_msg_fn fn,
		  void *arg, const char *dev);

/* Listen to the "monitor" group until SIGINT or SIGTERM. */
int vh_nl_monitor(struct vh_nl *nl, vh_msg_fn fn, void *arg);

#endif
