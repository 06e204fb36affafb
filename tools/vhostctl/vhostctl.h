/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vhostctl: administration of vhost devices over the "vhost" generic netlink
 * family.  The tool is split so that everything but the socket can be tested
 * without a kernel:
 *
 *   parse.c  argv -> struct vh_opts + struct vh_req (no side effects)
 *   msg.c    netlink messages -> struct vh_dev / struct vh_queue, extack
 *   print.c  struct vh_dev / struct vh_queue -> text or JSON
 *   json.c   a small JSON writer (compact, or indented like json.tool)
 *   nl.c     the libnl-genl-3 socket: requests, replies, errors
 *   vhostctl.c  main() and the commands
 */
#ifndef VHOSTCTL_H
#define VHOSTCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <net/if.h>
#include <linux/netlink.h>
#include <linux/vhost_netlink.h>

#define VHOSTCTL_VERSION	"1.0"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#endif
#define VH_NAME_LEN		16	/* device names, NUL included */

/* Exit statuses. */
#define VH_EXIT_OK		0
#define VH_EXIT_FAIL		1	/* the kernel or the system said no */
#define VH_EXIT_USAGE		2	/* bad command line, nothing was sent */

/* ---- command line ---------------------------------------------------- */

struct vh_opts {
	bool json;		/* -j */
	bool pretty;		/* -p */
	int stats;		/* -s, once per -s */
	bool version;		/* -V */
};

enum vh_cmd {
	VH_CMD_NONE,
	VH_CMD_HELP,		/* help, dev help, -h */
	VH_CMD_VERSION,		/* -V */
	VH_CMD_SHOW,		/* [dev] show [[dev] DEV] */
	VH_CMD_SET,		/* [dev] set [dev] DEV KEYWORD VALUE ... */
	VH_CMD_STATS,		/* [dev] stats [[dev] DEV] */
	VH_CMD_MONITOR,		/* monitor */
};

enum vh_help {
	VH_HELP_MAIN,
	VH_HELP_DEV,
};

/* What "set" asks for: bit VHOST_A_DEV_x of set_mask for each given value. */
struct vh_set {
	uint32_t mask;
	uint32_t busypoll_us;
	uint32_t zcopy_min_len;
	uint8_t zerocopy;
	uint8_t metamap;
};

struct vh_req {
	enum vh_cmd cmd;
	enum vh_help help;
	const char *dev;	/* NULL: every device */
	struct vh_set set;
	char err[256];		/* parse error message, when parsing failed */
};

/*
 * Parse a whole command line (argv[0] is the program).  Returns 0, or -1 with
 * req->err set; nothing else is touched, nothing is printed.
 */
int vh_parse_cmdline(int argc, char **argv, struct vh_opts *opts,
		     struct vh_req *req);
/* Strict unsigned 32-bit number: decimal or 0x hex, nothing else. */
int vh_get_u32(const char *s, uint32_t *val);
/* "vhost" followed by decimal digits, as the kernel names devices. */
bool vh_is_vhost_name(const char *s);
/* Usage text of one object. */
void vh_usage(FILE *f, enum vh_help which);

/* ---- objects, from netlink ------------------------------------------- */

#define VH_BIT(a)		(1u << (a))
#define VH_HAS(obj, a)		(!!((obj)->have & VH_BIT(a)))

struct vh_stats {
	uint32_t have;			/* VH_BIT(VHOST_A_STATS_x) */
	uint64_t val[VHOST_A_STATS_MAX + 1];
};

struct vh_queue {
	uint32_t have;			/* VH_BIT(VHOST_A_QUEUE_x) */
	uint32_t dev_id;
	uint32_t index;
	uint32_t type;
	uint32_t num;
	uint32_t busypoll_us;
	uint8_t metamap_valid;
	struct vh_stats stats;
};

struct vh_dev {
	uint32_t have;			/* VH_BIT(VHOST_A_DEV_x) */
	uint32_t id;
	char name[VH_NAME_LEN];
	uint32_t type;
	uint32_t owner_pid;
	uint32_t backend_ifindex;
	char backend_ifname[IFNAMSIZ];
	uint64_t features;
	uint32_t num_queues;
	uint32_t busypoll_us;
	uint8_t zerocopy;
	uint32_t zcopy_min_len;
	uint8_t metamap;
	struct vh_stats stats;
	/* Filled by QUEUE_GET when asked for (-s -s); not from DEV_GET. */
	struct vh_queue *queues;
	unsigned int nqueues;
	bool queues_fetched;
};

struct nlattr;
struct nlmsghdr;

/* A "uint" attribute: 4 or 8 bytes.  0, or -EINVAL for any other length. */
int vh_nla_get_uint(const struct nlattr *nla, uint64_t *val);

/*
 * Fill d or q from a generic netlink message (DEV_GET reply or notification,
 * QUEUE_GET reply).  Absent attributes stay absent (bit clear in have).
 * Returns 0, or -EINVAL for a malformed attribute.
 */
int vh_dev_from_msg(const struct nlmsghdr *nlh, struct vh_dev *d);
int vh_queue_from_msg(const struct nlmsghdr *nlh, struct vh_queue *q);
int vh_dev_from_attrs(struct nlattr **tb, struct vh_dev *d);
int vh_queue_from_attrs(struct nlattr **tb, struct vh_queue *q);
void vh_dev_free(struct vh_dev *d);
/* Add q to d's queues, in index order. 0 or -ENOMEM. */
int vh_dev_add_queue(struct vh_dev *d, const struct vh_queue *q);

/* The interesting parts of an NLMSG_ERROR (error or ACK with extack). */
struct vh_ext_ack {
	int error;			/* positive errno, 0 for an ACK */
	char msg[256];			/* NLMSGERR_ATTR_MSG, "" if none */
	int bad_attr;			/* type at NLMSGERR_ATTR_OFFS, or -1 */
};

/*
 * Parse an NLMSG_ERROR message of len bytes.  sent is the request it answers
 * (used to find the bad attribute when the kernel capped the echo), or NULL.
 */
int vh_ext_ack_parse(const struct nlmsghdr *nlh, size_t len,
		     const struct nlmsghdr *sent, struct vh_ext_ack *ea);
/*
 * The message iproute2 would print: "Error: <extack>." when the kernel gave
 * one, else a message from the errno (naming the attribute or the device
 * when known).  attr_names maps the request's attribute types to keywords.
 */
void vh_ext_ack_format(const struct vh_ext_ack *ea, const char *dev,
		       const char *const *attr_names, int max_attr,
		       char *buf, size_t len);

/* Keyword (CLI / text output) of a DEV attribute, NULL if none. */
extern const char *const vh_dev_attr_names[VHOST_A_DEV_MAX + 1];

/* ---- output ------------------------------------------------------------ */

struct jw;

struct vh_out {
	FILE *f;
	bool json;
	struct jw *jw;		/* when json */
	int stats;		/* -s level */
};

enum vh_event {
	VH_EV_ADD,
	VH_EV_DEL,
	VH_EV_CHANGE,
};

/* Start and end a listing: "[" ... "]" in JSON, nothing in text. */
int vh_out_open(struct vh_out *o, FILE *f, const struct vh_opts *opts);
void vh_out_close(struct vh_out *o);

/* One device of "show" (with statistics and queues when o->stats asks). */
void vh_print_dev(struct vh_out *o, const struct vh_dev *d);
/* One device of "stats": counters only, and per queue with -s -s. */
void vh_print_dev_stats(struct vh_out *o, const struct vh_dev *d);
/* One monitor event: a line of text, or a JSON object followed by "\n". */
void vh_print_event(FILE *f, const struct vh_opts *opts, enum vh_event ev,
		    const struct vh_dev *d);

/* Names of values. */
const char *vh_dev_type_str(uint32_t type, char *buf, size_t len);
const char *vh_queue_type_str(uint32_t type, char *buf, size_t len);
/* JSON key of a statistics attribute ("rx_packets"), NULL if unknown. */
const char *vh_stat_key(int attr);

#endif /* VHOSTCTL_H */
