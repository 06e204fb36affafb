/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vhostctl: administration of vhost devices over the "vhost" generic netlink
 * family, through the C library YNL generates from the family's spec
 * (generated/vhost-user.[ch] over tools/net/ynl/lib/ynl.c): no message is
 * built or parsed by hand.  Everything but the socket is tested without a
 * kernel:
 *
 *   parse.c     argv -> struct vh_opts + struct vh_req (what to do)
 *   req.c       struct vh_req -> the generated request structs
 *   print.c     the generated reply structs -> text, JSON or OpenMetrics
 *   err.c       struct ynl_error -> the message for the user
 *   json.c      a small JSON writer (compact, or indented like json.tool)
 *   vhostctl.c  main(), -n (setns), -b (batch) and the commands: the only
 *               code with a socket, a namespace, a clock or a signal
 */
#ifndef VHOSTCTL_H
#define VHOSTCTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>	/* ynl-priv.h needs it */
#include <time.h>
#include <net/if.h>

#include "ynl.h"
#include "vhost-user.h"

#define VHOSTCTL_VERSION	"2.0"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#endif

/* Exit statuses. */
#define VH_EXIT_OK		0
#define VH_EXIT_FAIL		1	/* the kernel or the system said no */
#define VH_EXIT_USAGE		2	/* bad command line, nothing was sent */

/* ---- command line ---------------------------------------------------- */

struct vh_opts {
	bool json;		/* -j, -o json */
	bool pretty;		/* -p */
	int stats;		/* -s, once per -s */
	bool version;		/* -V */
	const char *netns;	/* -n NETNS: a name under VH_NETNS_RUN_DIR */
	bool openmetrics;	/* -o openmetrics or prometheus: for a scraper */
	bool prometheus;	/* -o prometheus: its text format (textfiles) */
	uint32_t interval;	/* -i SECONDS: stats as rates over it; 0: no */
	uint32_t count;		/* -c COUNT: that many intervals; 0: until a signal */
	bool timestamp;		/* -t: monitor stamps each event */
	const char *batch;	/* -b FILE: commands from FILE, "-": stdin */
	bool force;		/* -f: a batch goes on after a failed command */
};

/* The longest -i: poll() waits in milliseconds, in an int. */
#define VH_INTERVAL_MAX		86400

/* Where "ip netns add" keeps the named network namespaces ("ip -n"). */
#define VH_NETNS_RUN_DIR	"/var/run/netns"

enum vh_cmd {
	VH_CMD_NONE,
	VH_CMD_HELP,		/* help, dev help, queue help, policy help, -h */
	VH_CMD_VERSION,		/* -V */
	VH_CMD_SHOW,		/* dev show [[dev] DEV] */
	VH_CMD_SET,		/* dev set [dev] DEV KEYWORD VALUE ... */
	VH_CMD_STATS,		/* dev stats [[dev] DEV] [scope SCOPE] */
	VH_CMD_QUEUE_SHOW,	/* queue show [[dev] DEV [index N]] */
	VH_CMD_MONITOR,		/* monitor */
	VH_CMD_POLICY_SHOW,	/* policy show, show policy */
	VH_CMD_POLICY_SET,	/* policy set ..., set policy ... */
	VH_CMD_BATCH,		/* -b FILE */
	VH_CMD_DEFAULTS_SHOW,	/* show defaults */
	VH_CMD_DEFAULTS_SET,	/* set defaults ... */
	VH_CMD_STATUS,		/* status */
	VH_CMD_APPLY,		/* apply [ check ] FILE */
};

enum vh_help {
	VH_HELP_MAIN,
	VH_HELP_DEV,
	VH_HELP_QUEUE,
	VH_HELP_POLICY,
};

/* How a device is named on the command line. */
enum vh_sel_kind {
	VH_SEL_ALL,		/* none named: every device */
	VH_SEL_ID,		/* a decimal number: the device id */
	VH_SEL_NAME,		/* vhostN: the device name */
	VH_SEL_IFNAME,		/* anything else: its backend interface */
	VH_SEL_OWNER,		/* owner PID: the devices a process owns */
	VH_SEL_LABEL,		/* label LABEL: the devices with this label */
};

struct vh_sel {
	enum vh_sel_kind kind;
	uint32_t id;		/* VH_SEL_ID, VH_SEL_OWNER: the pid */
	const char *name;	/* the word as given (not for VH_SEL_ALL) */
};

/*
 * Whether sel may name several devices (backend interface, owner, label):
 * then show, stats and queue show dump those the kernel selects.
 */
static inline bool vh_sel_many(const struct vh_sel *sel)
{
	return sel->kind == VH_SEL_IFNAME || sel->kind == VH_SEL_OWNER ||
	       sel->kind == VH_SEL_LABEL;
}

enum vh_scope {
	VH_SCOPE_DEFAULT,	/* not given: device, or queue with -s -s */
	VH_SCOPE_DEVICE,
	VH_SCOPE_QUEUE,
};

/* What "set" asks for: bit VHOST_A_DEV_x of mask for each given value. */
struct vh_set {
	uint32_t mask;
	uint32_t busypoll_us;	/* VHOST_A_DEV_ADMIN_BUSYPOLL_US */
	uint32_t zcopy_min_len;
	uint32_t zerocopy;
	uint32_t metamap;
	const char *label;	/* VHOST_A_DEV_LABEL: "" removes it */
	uint64_t unset;		/* set defaults unset: enum vhost_tunable */
};

#define VH_BIT(a)		(1u << (a))

/*
 * What "policy set" asks for: bit VHOST_A_POLICY_x of mask for each given
 * value; grants is a mask of enum vhost_tunable.
 */
struct vh_policy {
	uint32_t mask;
	uint64_t grants;
	uint32_t busypoll_us_max;
};

/* A command line, parsed: everything needed to build the requests. */
struct vh_req {
	enum vh_cmd cmd;
	enum vh_help help;
	struct vh_sel sel;
	bool has_index;		/* queue show ... index N */
	uint32_t index;
	enum vh_scope scope;	/* stats; never DEFAULT after parsing */
	struct vh_set set;
	struct vh_policy policy;	/* policy set */
	bool watch;		/* monitor watch: the read-only group */
	const char *file;	/* apply: the file */
	bool check;		/* apply check: validate only */
	char err[256];		/* parse error message, when parsing failed */
};

/*
 * Parse a whole command line (argv[0] is the program).  Returns 0, or -1 with
 * req->err set (empty: print the usage); nothing is printed or sent.
 */
int vh_parse_cmdline(int argc, char **argv, struct vh_opts *opts,
		     struct vh_req *req);
/*
 * Parse one command, OBJECT and what follows (a line of a batch), into req;
 * opts holds the options before it and takes those among its words
 * ("stats -i 1").  Returns 0, or -1 with req->err set.
 */
int vh_parse_command(int argc, char **argv, struct vh_opts *opts,
		     struct vh_req *req);
/*
 * Split a line of a batch into words, in place, as a shell would for the
 * simple cases: blanks separate, '...' and "..." quote (a backslash escapes
 * the next character but in '...'), a word starting with # comments out
 * the rest of the line.  Returns the number of words (0: nothing to run),
 * at most max - 1 with argv[n] = NULL, or -1 with req->err set.
 */
int vh_split_line(char *line, char **argv, int max, struct vh_req *req);
/* Words of a line of a batch or of an apply file, at most. */
#define VH_LINE_MAX_WORDS	64
/*
 * A line of an apply file, in place: [ -n NETNS ] followed by "set
 * defaults ..." or "set policy ..." ("policy set ..."), as on the command
 * line.  Returns 0 for a line with nothing to do, 1 for a command in req
 * (*netns: the -n namespace, or NULL), or -1 with req->err set.
 */
int vh_parse_apply_line(char *line, const char **netns, struct vh_req *req);
/* The enum vhost_tunable bits of the tunables set->mask gives. */
uint64_t vh_set_tunables(const struct vh_set *set);
/* Strict unsigned 32-bit number: decimal or 0x hex, nothing else. */
int vh_get_u32(const char *s, uint32_t *val);
/* "vhost" followed by decimal digits, as the kernel names devices. */
bool vh_is_vhost_name(const char *s);
/* Usage text of one object. */
void vh_usage(FILE *f, enum vh_help which);
/*
 * The keyword of "dev set" (and of "policy set grant") for one tunable bit
 * of a policy's grants, NULL for a bit this tool does not know; the mask
 * of the tunables it knows, what "grant all" sends.
 */
const char *vh_tunable_keyword(uint64_t bit);
uint64_t vh_tunables_all(void);

/* ---- requests (req.c) -------------------------------------------------- */

/*
 * The generated requests for a parsed command line; NULL when out of
 * memory.  dev_id: the device to filter on, NULL for all.
 */
struct vhost_dev_get_req *vh_dev_get_req(const struct vh_sel *sel);
/* A dev-get dump of the devices sel selects (all for VH_SEL_ALL). */
struct vhost_dev_get_req_dump *vh_dev_dump_req(const struct vh_sel *sel);
struct vhost_dev_set_req *vh_dev_set_req(const struct vh_sel *sel,
					 const struct vh_set *set);
struct vhost_queue_get_req *vh_queue_get_req(uint32_t dev_id, uint32_t index);
struct vhost_queue_get_req_dump *vh_queue_dump_req(const uint32_t *dev_id);
struct vhost_stats_get_req_dump *vh_stats_dump_req(const uint32_t *dev_id,
						   bool per_queue);
struct vhost_policy_set_req *vh_policy_set_req(const struct vh_policy *policy);
struct vhost_defaults_set_req *vh_defaults_set_req(const struct vh_set *set);
/*
 * What puts back the defaults d (read before an apply) for the tunables
 * the apply touched (enum vhost_tunable): their values in d, and unset
 * for those d has none of.
 */
void vh_defaults_restore(const struct vhost_defaults_get_rsp *d,
			 uint64_t touched, struct vh_set *set);

/* ---- errors (err.c) ---------------------------------------------------- */

/*
 * The message for a request that failed with e, as iproute2 prints it:
 * "Error: <kernel message>." when the kernel gave one, else from the errno
 * ("Cannot find device "DEV"" for ENODEV when dev is given).
 */
void vh_err_format(const struct ynl_error *e, const char *dev, char *buf,
		   size_t len);
/* "Warning: <kernel message>." for a request that succeeded; false if none. */
bool vh_warn_format(const struct ynl_error *e, char *buf, size_t len);
/* The message for a failed ynl_sock_create(). */
void vh_sock_err_format(const struct ynl_error *e, char *buf, size_t len);

/* ---- output (print.c) -------------------------------------------------- */

/*
 * The generated attribute tables (vhost-user.c): the attribute names of the
 * spec, which are the JSON keys.  Not in the generated header.
 */
extern const struct ynl_policy_attr vhost_dev_policy[VHOST_A_DEV_MAX + 1];
extern const struct ynl_policy_attr vhost_queue_policy[VHOST_A_QUEUE_MAX + 1];
extern const struct ynl_policy_attr vhost_stats_policy[VHOST_A_STATS_MAX + 1];
extern const struct ynl_policy_attr vhost_policy_policy[VHOST_A_POLICY_MAX + 1];

/* The first counter attribute: the ones before identify the object. */
#define VH_STATS_FIRST		VHOST_A_STATS_RX_PACKETS

/* Counter attr of s: true and *val when the kernel reported it. */
bool vh_stat_get(const struct vhost_stats_get_rsp_dump *s, int attr,
		 uint64_t *val);
/* A counter that goes down as well as up (zcopy-pending): shown as is. */
bool vh_stat_is_gauge(int attr);
/*
 * Per-second rate of a counter that went from prev to cur in seconds; a
 * counter below its previous value was reset (the id went to a new device),
 * and counts from 0.
 */
double vh_rate(uint64_t prev, uint64_t cur, double seconds);
/* The reply of list for a device (queue NULL) or one of its queues. */
const struct vhost_stats_get_rsp_dump *
vh_find_stats(struct vhost_stats_get_rsp_list *list, uint32_t dev_id,
	      const uint32_t *queue);

struct jw;

struct vh_out {
	FILE *f;
	bool json;
	struct jw *jw;		/* when json */
	bool have_dev;		/* text of stats: the device header printed */
	uint32_t dev_id;	/* ... for this device */
};

/* What "show -s" adds to a device. */
struct vh_dev_more {
	const struct vhost_stats_get_rsp_dump *stats;	/* NULL: none */
	bool queues;					/* -s -s */
	unsigned int nqueues;
	const struct vhost_queue_get_rsp **queue;
	const struct vhost_stats_get_rsp_dump **queue_stats; /* entries may be NULL */
};

enum vh_event {
	VH_EV_ADD,
	VH_EV_DEL,
	VH_EV_CHANGE,
};

/* Start and end a listing: "[" ... "]" in JSON, nothing in text. */
void vh_out_open(struct vh_out *o, FILE *f, const struct vh_opts *opts);
void vh_out_close(struct vh_out *o);

/* One device of "dev show"; more: NULL, or what -s asked for. */
void vh_print_dev(struct vh_out *o, const struct vhost_dev_get_rsp *d,
		  const struct vh_dev_more *more);
/* One queue of "queue show". */
void vh_print_queue(struct vh_out *o, const struct vhost_queue_get_rsp *q);
/* One reply of "dev stats": a device's counters or a queue's. */
void vh_print_stats(struct vh_out *o, const struct vhost_stats_get_rsp_dump *s);
/*
 * The replies of "stats -i" over an interval: of each object of cur also in
 * prev, seconds before, each counter's rate per second over the interval,
 * and gauges as they are now.
 */
void vh_print_rates(struct vh_out *o, struct vhost_stats_get_rsp_list *cur,
		    struct vhost_stats_get_rsp_list *prev, double seconds);
/*
 * "stats -o openmetrics": the replies of stats as OpenMetrics text, one
 * metric family per counter, ends with "# EOF"; with prometheus, the same
 * in Prometheus's text format (what
 * node_exporter's textfile collector reads: TYPE names the samples, no
 * UNIT, no "# EOF").  Samples are labelled by what names a VM's device
 * across its restarts: label, backend_ifname and queue_pair (see
 * vh_queue_pair()); name only where those do not tell it apart.
 */
void vh_print_metrics(FILE *f, struct vhost_stats_get_rsp_list *stats,
		      struct vhost_dev_get_list *devs, bool prometheus);
/*
 * The queue pair d serves on its backend: its rank by id among the devices
 * of devs feeding the same interface; -1 without a backend.
 */
int vh_queue_pair(struct vhost_dev_get_list *devs,
		  const struct vhost_dev_get_rsp *d);
/*
 * The policy of the network namespace ("policy show"): one line of text, or
 * one JSON object (not a list: there is one policy, as cli.py prints it).
 */
void vh_print_policy(FILE *f, const struct vh_opts *opts,
		     const struct vhost_policy_get_rsp *p);
/*
 * The defaults of the network namespace ("show defaults"): one line of the
 * keywords of "set defaults" (text), or one JSON object.
 */
void vh_print_defaults(FILE *f, const struct vh_opts *opts,
		       const struct vhost_defaults_get_rsp *d);
/*
 * One monitor event: a line of text, or a JSON object, then "\n"; with ts
 * (-t), stamped with that time.
 */
void vh_print_event(FILE *f, const struct vh_opts *opts, enum vh_event ev,
		    const struct vhost_dev_get_rsp *d,
		    const struct timespec *ts);
/* ts as RFC 3339 local time with microseconds: 2024-11-26T10:00:00.123456+01:00 */
void vh_timestamp_format(const struct timespec *ts, char *buf, size_t len);
struct jw;
/* The policy and the defaults as one JSON object each, under key. */
void vh_json_policy(struct jw *jw, const char *key,
		    const struct vhost_policy_get_rsp *p);
void vh_json_defaults(struct jw *jw, const char *key,
		      const struct vhost_defaults_get_rsp *d);

/* ---- status (status.c) ------------------------------------------------- */

#define VH_STATUS_NMODULES	9
/* The package's modules, in the order status lists them. */
extern const char *const vh_status_modules[VH_STATUS_NMODULES];

/* One module: loaded (sysfs), and the file modprobe loads for this kernel. */
struct vh_module_status {
	const char *name;
	bool present;		/* /sys/module/NAME: loaded or built in */
	bool builtin;		/* ... built in (no initstate) */
	char srcversion[64];	/* the loaded module's, from sysfs */
	char file[512];		/* what modprobe loads, "" if none */
	char file_srcversion[64];
	bool file_ours;		/* file is under updates/dkms: the package's */
};

enum vh_module_from {
	VH_FROM_NONE,		/* not loaded */
	VH_FROM_BUILTIN,
	VH_FROM_PACKAGE,	/* the file modprobe loads, the package's */
	VH_FROM_KERNEL,		/* the file modprobe loads, the kernel's */
	VH_FROM_OTHER,		/* neither: replaced since it was loaded */
};

enum vh_state {
	VH_STATE_ACTIVE,
	VH_STATE_READY,
	VH_STATE_INACTIVE,
};

struct vh_status {
	char kernel[65];
	struct vh_module_status mods[VH_STATUS_NMODULES];
	char metamap_default[16];
	enum vh_state state;
	char reason[320];
};

/* What the family says, when it is there (the package's vhost_admin). */
struct vh_status_devs {
	bool known;
	unsigned int total;
	unsigned int by_mode[3];	/* enum vhost_metamap_mode */
	const struct vhost_defaults_get_rsp *defaults;
	const struct vhost_policy_get_rsp *policy;
};

/* A module's file for this kernel and its srcversion, as modprobe finds it. */
typedef void (*vh_module_lookup_fn)(void *arg, const char *name, char *file,
				    size_t file_len, char *srcversion,
				    size_t srcversion_len);
/* Fill st from SYSFS/module and lookup, and decide its state. */
void vh_status_collect(struct vh_status *st, const char *sysfs,
		       vh_module_lookup_fn lookup, void *arg);
void vh_status_decide(struct vh_status *st);
void vh_status_kernel(struct vh_status *st);
enum vh_module_from vh_module_from(const struct vh_module_status *m);
/* text, JSON (-j) or OpenMetrics (-o openmetrics, an info metric) */
void vh_print_status(FILE *f, const struct vh_opts *opts,
		     const struct vh_status *st, const struct vh_status_devs *devs);

#endif /* VHOSTCTL_H */
