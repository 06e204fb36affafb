// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of vhostctl, no kernel needed: command lines go through
 * vh_parse_cmdline() and the request builders, and the generated library's
 * reply structs, filled here as the kernel's replies would fill them, go
 * through the printers.  Error messages are checked against what the
 * generated library itself makes of an NLMSG_ERROR: a socket pair stands in
 * for the kernel.  KTAP on stdout; exit 1 if anything failed.
 *
 *   test_vhostctl                 run the tests
 *   test_vhostctl --sample-json [-p] [-s...]
 *                                 print the fixture devices as "show -j"
 *                                 would (for tests/run-tests.sh to check
 *                                 against python3 -m json.tool)
 *   test_vhostctl --sample-stats { -j | -o openmetrics | -o prometheus } [-s -s]
 *                                 print the fixture statistics as "stats"
 *                                 would (for tests/openmetrics-check.py, a
 *                                 real OpenMetrics parser)
 *   test_vhostctl --sample-stats --devices
 *                                 their devices, as "show -j" would
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>

#include "vhostctl.h"

/* What parse.c says a bad "grant" value should have been. */
#define GRANT_EXPECTED	"expected \"none\", \"all\" or a comma-separated list of busypoll-us, zerocopy, zcopy-min-len, metamap, label"

static int failures;

#define CHECK(cond)							\
	do {								\
		if (!(cond)) {						\
			printf("# %s:%d: failed: %s\n", __FILE__,	\
			       __LINE__, #cond);			\
			failures++;					\
		}							\
	} while (0)

/* Print a multi-line string as KTAP diagnostics. */
static void diag_block(const char *label, const char *s)
{
	const char *p = s, *nl;

	printf("# %s:\n", label);
	while (*p) {
		nl = strchr(p, '\n');
		if (!nl)
			nl = p + strlen(p);
		printf("#   |%.*s|\n", (int)(nl - p), p);
		p = *nl ? nl + 1 : nl;
	}
}

static void check_str(const char *got, const char *want, const char *what,
		      int line)
{
	if (got && want && !strcmp(got, want))
		return;
	printf("# %s:%d: %s differs\n", __FILE__, line, what);
	diag_block("want", want ? want : "(null)");
	diag_block("got", got ? got : "(null)");
	failures++;
}

#define CHECK_STR(got, want) check_str(got, want, #got, __LINE__)

/* ---- command line ------------------------------------------------------ */

#define MAX_ARGS 16

/* Split a command line at spaces; "''" stands for an empty argument. */
static int split(const char *line, char *buf, size_t len, char **argv)
{
	int argc = 0;
	char *p;

	snprintf(buf, len, "vhostctl %s", line);
	for (p = strtok(buf, " "); p && argc < MAX_ARGS - 1; p = strtok(NULL, " "))
		argv[argc++] = strcmp(p, "''") ? p : p + 2;
	argv[argc] = NULL;
	return argc;
}

static int parse(const char *line, struct vh_opts *opts, struct vh_req *req)
{
	static char buf[512];
	static char *argv[MAX_ARGS];
	int argc = split(line, buf, sizeof(buf), argv);

	return vh_parse_cmdline(argc, argv, opts, req);
}

static void test_parse_card(void)
{
	struct vhost_dev_set_req *s;
	struct vh_opts o;
	struct vh_req r;

	CHECK(parse("set dev vhost0 busypoll-us 50 zerocopy on", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_SET);
	CHECK(r.sel.kind == VH_SEL_NAME);
	CHECK_STR(r.sel.name, "vhost0");
	CHECK(r.set.mask == (VH_BIT(VHOST_A_DEV_ADMIN_BUSYPOLL_US) |
			     VH_BIT(VHOST_A_DEV_ZEROCOPY)));
	CHECK(r.set.busypoll_us == 50);
	CHECK(r.set.zerocopy == 1);
	CHECK(!o.json && !o.pretty && !o.stats);

	/* one dev-set: the name, busypoll-us as admin-busypoll-us, zerocopy */
	s = vh_dev_set_req(&r.sel, &r.set);
	CHECK(s);
	if (!s)
		return;
	CHECK(s->_present.name_len == 6);
	CHECK_STR(s->name, "vhost0");
	CHECK(s->_present.admin_busypoll_us && s->admin_busypoll_us == 50);
	CHECK(s->_present.zerocopy && s->zerocopy == 1);
	CHECK(!s->_present.id && !s->_present.backend_ifindex &&
	      !s->_present.backend_ifname_len);
	CHECK(!s->_present.zcopy_min_len && !s->_present.metamap);
	vhost_dev_set_req_free(s);
}

static void test_parse_set_forms(void)
{
	struct vhost_dev_set_req *s;
	struct vh_opts o;
	struct vh_req r;

	CHECK(parse("dev set vhost12 zcopy-min-len 0x100 metamap off", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_SET);
	CHECK(r.sel.kind == VH_SEL_NAME);
	CHECK_STR(r.sel.name, "vhost12");
	CHECK(r.set.mask == (VH_BIT(VHOST_A_DEV_ZCOPY_MIN_LEN) |
			     VH_BIT(VHOST_A_DEV_METAMAP)));
	CHECK(r.set.zcopy_min_len == 256);
	CHECK(r.set.metamap == 0);

	/* by backend: the kernel resolves tap0 in the same request */
	CHECK(parse("dev set dev tap0 metamap on zerocopy off busypoll-us 0 zcopy-min-len 65536",
		    &o, &r) == 0);
	CHECK(r.sel.kind == VH_SEL_IFNAME);
	CHECK_STR(r.sel.name, "tap0");
	s = vh_dev_set_req(&r.sel, &r.set);
	CHECK(s && s->_present.backend_ifname_len == 4 && !s->_present.name_len &&
	      !s->_present.id);
	CHECK(s && !strcmp(s->backend_ifname, "tap0"));
	CHECK(s && s->_present.metamap && s->metamap == 1);
	CHECK(s && s->_present.zerocopy && s->zerocopy == 0);
	CHECK(s && s->_present.admin_busypoll_us && s->admin_busypoll_us == 0);
	CHECK(s && s->_present.zcopy_min_len && s->zcopy_min_len == 65536);
	if (s)
		vhost_dev_set_req_free(s);

	/* the metadata modes by name; "on" is map */
	CHECK(parse("set 7 metamap batch", &o, &r) == 0);
	CHECK(r.set.metamap == VHOST_METAMAP_MODE_BATCH);
	CHECK(parse("set 7 metamap map", &o, &r) == 0);
	CHECK(r.set.metamap == VHOST_METAMAP_MODE_MAP);

	/* by id */
	CHECK(parse("set 7 metamap on", &o, &r) == 0);
	CHECK(r.set.metamap == VHOST_METAMAP_MODE_MAP);
	CHECK(r.sel.kind == VH_SEL_ID && r.sel.id == 7);
	s = vh_dev_set_req(&r.sel, &r.set);
	CHECK(s && s->_present.id && s->id == 7 && !s->_present.name_len &&
	      !s->_present.backend_ifname_len);
	if (s)
		vhost_dev_set_req_free(s);

	/* dev may come last; values beyond the kernel's range are its call */
	CHECK(parse("set busypoll-us 4294967295 dev vhost1", &o, &r) == 0);
	CHECK_STR(r.sel.name, "vhost1");
	CHECK(r.set.busypoll_us == 4294967295u);

	/* a value that looks like an option stays a value ("+" getopt) */
	CHECK(parse("set dev vhost0 busypoll-us -1", &o, &r) == -1);
	CHECK_STR(r.err, "Invalid \"busypoll-us\" value \"-1\"");

	CHECK(parse("set dev vhost0 help", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_HELP && r.help == VH_HELP_DEV);
}

/* owner PID and label LABEL select; "label" after the selector sets. */
static void test_parse_owner_label(void)
{
	struct vhost_dev_set_req *s;
	struct vhost_dev_get_req_dump *d;
	struct vh_opts o;
	struct vh_req r;

	CHECK(parse("set label web01 busypoll-us 50", &o, &r) == 0);
	CHECK(r.sel.kind == VH_SEL_LABEL);
	CHECK_STR(r.sel.name, "web01");
	CHECK(r.set.mask == VH_BIT(VHOST_A_DEV_ADMIN_BUSYPOLL_US));
	s = vh_dev_set_req(&r.sel, &r.set);
	CHECK(s && s->_present.match_label_len && !s->_present.label_len);
	CHECK(s && !strcmp(s->match_label, "web01"));
	if (s)
		vhost_dev_set_req_free(s);

	CHECK(parse("set dev vnet3 label web:01 zerocopy on", &o, &r) == 0);
	CHECK(r.sel.kind == VH_SEL_IFNAME);
	CHECK(r.set.mask == (VH_BIT(VHOST_A_DEV_LABEL) |
			     VH_BIT(VHOST_A_DEV_ZEROCOPY)));
	s = vh_dev_set_req(&r.sel, &r.set);
	CHECK(s && s->_present.label_len && !s->_present.match_label_len);
	CHECK(s && !strcmp(s->label, "web:01"));
	CHECK(s && s->_present.backend_ifname_len);
	if (s)
		vhost_dev_set_req_free(s);

	/* a label selects, another label is set; "" removes it */
	CHECK(parse("set label a label ''", &o, &r) == 0);
	CHECK(r.sel.kind == VH_SEL_LABEL && r.set.label && !*r.set.label);
	s = vh_dev_set_req(&r.sel, &r.set);
	CHECK(s && s->_present.label_len && s->label && !*s->label);
	if (s)
		vhost_dev_set_req_free(s);

	CHECK(parse("set owner 1234 metamap batch", &o, &r) == 0);
	CHECK(r.sel.kind == VH_SEL_OWNER && r.sel.id == 1234);
	s = vh_dev_set_req(&r.sel, &r.set);
	CHECK(s && s->_present.owner_pid && s->owner_pid == 1234);
	if (s)
		vhost_dev_set_req_free(s);

	/* show: a dump filtered by the selector */
	CHECK(parse("show owner 77", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_SHOW && vh_sel_many(&r.sel));
	d = vh_dev_dump_req(&r.sel);
	CHECK(d && d->_present.owner_pid && d->owner_pid == 77 &&
	      !d->_present.backend_ifname_len && !d->_present.match_label_len);
	if (d)
		vhost_dev_get_req_dump_free(d);
	CHECK(parse("show tap0", &o, &r) == 0);
	d = vh_dev_dump_req(&r.sel);
	CHECK(d && d->_present.backend_ifname_len && !d->_present.owner_pid);
	if (d)
		vhost_dev_get_req_dump_free(d);
	CHECK(parse("show", &o, &r) == 0);
	d = vh_dev_dump_req(&r.sel);
	CHECK(d && !d->_present.backend_ifname_len && !d->_present.owner_pid &&
	      !d->_present.match_label_len);
	if (d)
		vhost_dev_get_req_dump_free(d);
	CHECK(parse("show vhost3", &o, &r) == 0);
	CHECK(!vh_sel_many(&r.sel));

	CHECK(parse("set owner 0 zerocopy on", &o, &r) == -1);
	CHECK_STR(r.err, "Invalid \"owner\" value \"0\", expected a process id");
	CHECK(parse("set owner 12 label a label b", &o, &r) == -1);
	CHECK_STR(r.err, "Duplicate argument \"label\"");
	CHECK(parse("show label a dev vhost0", &o, &r) == -1);
	CHECK_STR(r.err, "Duplicate argument \"dev\"");
	CHECK(parse("show dev vhost0 owner 3", &o, &r) == -1);
	CHECK_STR(r.err, "Duplicate device selector \"owner\"");
	CHECK(parse("show label ''", &o, &r) == -1);
	CHECK_STR(r.err, "Invalid \"label\" value \"\", expected 1 to 255 bytes");
	CHECK(parse("set label", &o, &r) == -1);
	CHECK_STR(r.err, "Missing value for \"label\"");
}

/* show defaults, set defaults VALUES: the keywords of set, no device. */
static void test_parse_defaults(void)
{
	struct vhost_defaults_set_req *d;
	struct vh_opts o;
	struct vh_req r;

	CHECK(parse("show defaults", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_DEFAULTS_SHOW);
	CHECK(parse("set defaults busypoll-us 50 metamap batch", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_DEFAULTS_SET);
	CHECK(r.set.mask == (VH_BIT(VHOST_A_DEV_ADMIN_BUSYPOLL_US) |
			     VH_BIT(VHOST_A_DEV_METAMAP)));
	d = vh_defaults_set_req(&r.set);
	CHECK(d && d->_present.admin_busypoll_us && d->admin_busypoll_us == 50);
	CHECK(d && d->_present.metamap && d->metamap == VHOST_METAMAP_MODE_BATCH);
	CHECK(d && !d->_present.zerocopy && !d->_present.zcopy_min_len);
	if (d)
		vhost_defaults_set_req_free(d);
	CHECK(parse("set defaults", &o, &r) == -1);
	CHECK_STR(r.err,
		  "Nothing to set, give busypoll-us, zerocopy, zcopy-min-len, metamap or unset");
	/* unset: the defaults removed, in the same request */
	CHECK(parse("set defaults zerocopy on unset busypoll-us,metamap", &o, &r) == 0);
	CHECK(r.set.unset == (VHOST_TUNABLE_ADMIN_BUSYPOLL_US |
			      VHOST_TUNABLE_METAMAP));
	d = vh_defaults_set_req(&r.set);
	CHECK(d && d->_present.defaults_unset &&
	      d->defaults_unset == (VHOST_TUNABLE_ADMIN_BUSYPOLL_US |
				    VHOST_TUNABLE_METAMAP));
	CHECK(d && d->_present.zerocopy && !d->_present.metamap);
	if (d)
		vhost_defaults_set_req_free(d);
	CHECK(parse("set defaults unset all", &o, &r) == 0);
	CHECK(r.set.unset == (VHOST_TUNABLE_ADMIN_BUSYPOLL_US |
			      VHOST_TUNABLE_ZEROCOPY |
			      VHOST_TUNABLE_ZCOPY_MIN_LEN |
			      VHOST_TUNABLE_METAMAP) && !r.set.mask);
	CHECK(parse("set defaults unset label", &o, &r) == -1);
	CHECK_STR(r.err, "Invalid \"unset\" value \"label\": a label has no default");
	CHECK(parse("set defaults unset none", &o, &r) == -1);
	CHECK(parse("set defaults unset zerocopy,bogus", &o, &r) == -1);
	CHECK_STR(r.err,
		  "Invalid \"unset\" value \"zerocopy,bogus\", expected \"all\" or a comma-separated list of busypoll-us, zerocopy, zcopy-min-len, metamap");
	CHECK(parse("set defaults zerocopy on unset zerocopy", &o, &r) == -1);
	CHECK_STR(r.err, "Argument \"unset\" names a default that is also given");
	CHECK(parse("set defaults unset zerocopy unset metamap", &o, &r) == -1);
	CHECK_STR(r.err, "Duplicate argument \"unset\"");
	CHECK(parse("set defaults label x", &o, &r) == -1);
	CHECK_STR(r.err, "Unknown keyword \"label\", try \"vhostctl dev help\"");
	CHECK(parse("show defaults vhost0", &o, &r) == -1);
	CHECK(parse("set defaults zerocopy on zerocopy off", &o, &r) == -1);
	CHECK_STR(r.err, "Duplicate argument \"zerocopy\"");
	/* monitor watch: the read-only group */
	CHECK(parse("monitor watch -t", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_MONITOR && r.watch && o.timestamp);
	CHECK(parse("monitor", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_MONITOR && !r.watch);
	/* "show dev defaults": a TAP named defaults */
	CHECK(parse("show dev defaults", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_SHOW && r.sel.kind == VH_SEL_IFNAME);
}

/* vh_defaults_restore(): what an apply puts back, for what it touched. */
static void test_defaults_restore(void)
{
	struct vhost_defaults_get_rsp d0 = {};
	struct vh_set set;

	/* before: busypoll-us 10 and metamap batch */
	d0._present.admin_busypoll_us = 1;
	d0.admin_busypoll_us = 10;
	d0._present.metamap = 1;
	d0.metamap = VHOST_METAMAP_MODE_BATCH;
	/* the apply touched busypoll-us and zerocopy */
	vh_defaults_restore(&d0, VHOST_TUNABLE_ADMIN_BUSYPOLL_US |
			    VHOST_TUNABLE_ZEROCOPY, &set);
	CHECK(set.mask == VH_BIT(VHOST_A_DEV_ADMIN_BUSYPOLL_US));
	CHECK(set.busypoll_us == 10);
	CHECK(set.unset == VHOST_TUNABLE_ZEROCOPY);
	/* metamap untouched: not sent (a tenant may not be granted it) */
	vh_defaults_restore(&d0, VHOST_TUNABLE_ZCOPY_MIN_LEN, &set);
	CHECK(!set.mask && set.unset == VHOST_TUNABLE_ZCOPY_MIN_LEN);
	vh_defaults_restore(&d0, 0, &set);
	CHECK(!set.mask && !set.unset);
}

/* A line of an apply file: [ -n NETNS ] set defaults|policy ... */
static void test_parse_apply_line(void)
{
	const char *ns;
	struct vh_req r;
	char line[256];

#define APPLY(s) (snprintf(line, sizeof(line), "%s", s), \
		  vh_parse_apply_line(line, &ns, &r))
	CHECK(APPLY("  # a comment\n") == 0);
	CHECK(APPLY("\n") == 0);
	CHECK(APPLY("set defaults busypoll-us 50 # tuned\n") == 1);
	CHECK(r.cmd == VH_CMD_DEFAULTS_SET && !ns && r.set.busypoll_us == 50);
	CHECK(APPLY("-n tenant1 set policy grant zerocopy busypoll-us-max 20") == 1);
	CHECK(r.cmd == VH_CMD_POLICY_SET && ns && !strcmp(ns, "tenant1"));
	CHECK(r.policy.grants == VHOST_TUNABLE_ZEROCOPY &&
	      r.policy.busypoll_us_max == 20);
	CHECK(APPLY("--netns t2 policy set grant none") == 1);
	CHECK(ns && !strcmp(ns, "t2"));
	CHECK(APPLY("-n t2 defaults set unset all") == -1);
	CHECK(APPLY("set dev vhost0 zerocopy on") == -1);
	CHECK_STR(r.err,
		  "Not a line of an apply file, which holds \"set defaults\" and \"set policy\" commands only");
	CHECK(APPLY("show defaults") == -1);
	CHECK(APPLY("-n") == -1);
	CHECK_STR(r.err, "Missing value for \"-n\"");
	CHECK(APPLY("-n t3") == -1);
	CHECK_STR(r.err, "Command is missing after \"-n t3\"");
	CHECK(APPLY("set defaults busypoll-us 2000000 'x") == -1);
	CHECK_STR(r.err, "Missing closing quote '");
	CHECK(APPLY("set defaults zerocopy maybe") == -1);
	CHECK_STR(r.err, "Invalid \"zerocopy\" value \"maybe\", expected \"on\" or \"off\"");
#undef APPLY
}

static void test_parse_selectors(void)
{
	static const struct {
		const char *line;
		enum vh_sel_kind kind;
		uint32_t id;
	} t[] = {
		{ "show", VH_SEL_ALL, 0 },
		{ "show 0", VH_SEL_ID, 0 },
		{ "show dev 4294967295", VH_SEL_ID, 4294967295u },
		{ "show 007", VH_SEL_ID, 7 },
		{ "show vhost0", VH_SEL_NAME, 0 },
		{ "show dev vhost4294967295", VH_SEL_NAME, 0 },
		{ "show vhost", VH_SEL_IFNAME, 0 },
		{ "show vhost1a", VH_SEL_IFNAME, 0 },
		{ "show tap0", VH_SEL_IFNAME, 0 },
		{ "show 0x10", VH_SEL_IFNAME, 0 },
		{ "show eth-0.1", VH_SEL_IFNAME, 0 },
	};
	struct vhost_dev_get_req *g;
	struct vh_opts o;
	struct vh_req r;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		int ret = parse(t[i].line, &o, &r);

		if (ret || r.sel.kind != t[i].kind ||
		    (t[i].kind == VH_SEL_ID && r.sel.id != t[i].id)) {
			printf("# \"%s\": ret %d err \"%s\" kind %d id %u\n",
			       t[i].line, ret, r.err, r.sel.kind, r.sel.id);
			failures++;
			continue;
		}
		/* dev-get carries exactly the one selector */
		g = vh_dev_get_req(&r.sel);
		if (!g) {
			failures++;
			continue;
		}
		CHECK(!!g->_present.id == (t[i].kind == VH_SEL_ID));
		CHECK(!!g->_present.name_len == (t[i].kind == VH_SEL_NAME));
		CHECK(!!g->_present.backend_ifname_len == (t[i].kind == VH_SEL_IFNAME));
		CHECK(!g->_present.backend_ifindex);
		if (g->_present.id)
			CHECK(g->id == t[i].id);
		if (g->_present.name_len)
			CHECK(!strcmp(g->name, r.sel.name));
		if (g->_present.backend_ifname_len)
			CHECK(!strcmp(g->backend_ifname, r.sel.name));
		vhost_dev_get_req_free(g);
	}
}

static void test_parse_commands(void)
{
	static const struct {
		const char *line;
		enum vh_cmd cmd;
		const char *dev;
		bool json, pretty;
		int stats;
		enum vh_scope scope;
		int index;		/* -1: none */
		enum vh_help help;
	} t[] = {
		{ "show", VH_CMD_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_DEV },
		{ "dev", VH_CMD_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_DEV },
		{ "dev show", VH_CMD_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_DEV },
		{ "dev list", VH_CMD_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_DEV },
		{ "show dev vhost1", VH_CMD_SHOW, "vhost1", false, false, 0, 0, -1, VH_HELP_DEV },
		{ "show vhost1", VH_CMD_SHOW, "vhost1", false, false, 0, 0, -1, VH_HELP_DEV },
		{ "dev show tap0", VH_CMD_SHOW, "tap0", false, false, 0, 0, -1, VH_HELP_DEV },
		{ "-j show dev vhost0", VH_CMD_SHOW, "vhost0", true, false, 0, 0, -1, VH_HELP_DEV },
		{ "-j -p show", VH_CMD_SHOW, NULL, true, true, 0, 0, -1, VH_HELP_DEV },
		{ "-jp -s show", VH_CMD_SHOW, NULL, true, true, 1, 0, -1, VH_HELP_DEV },
		{ "--json --pretty --stats show",
		  VH_CMD_SHOW, NULL, true, true, 1, 0, -1, VH_HELP_DEV },
		{ "stats", VH_CMD_STATS, NULL, false, false, 0, VH_SCOPE_DEVICE, -1, VH_HELP_DEV },
		{ "dev stats scope queue",
		  VH_CMD_STATS, NULL, false, false, 0, VH_SCOPE_QUEUE, -1, VH_HELP_DEV },
		{ "stats dev vhost0 scope device",
		  VH_CMD_STATS, "vhost0", false, false, 0, VH_SCOPE_DEVICE, -1, VH_HELP_DEV },
		{ "stats scope queue tap0",
		  VH_CMD_STATS, "tap0", false, false, 0, VH_SCOPE_QUEUE, -1, VH_HELP_DEV },
		{ "-s -s stats dev vhost0",
		  VH_CMD_STATS, "vhost0", false, false, 2, VH_SCOPE_QUEUE, -1, VH_HELP_DEV },
		{ "-ss dev stats tap0 scope device",
		  VH_CMD_STATS, "tap0", false, false, 2, VH_SCOPE_DEVICE, -1, VH_HELP_DEV },
		{ "queue", VH_CMD_QUEUE_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_QUEUE },
		{ "queue show", VH_CMD_QUEUE_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_QUEUE },
		{ "-j queue list dev vhost0",
		  VH_CMD_QUEUE_SHOW, "vhost0", true, false, 0, 0, -1, VH_HELP_QUEUE },
		{ "queue show vhost0 index 1",
		  VH_CMD_QUEUE_SHOW, "vhost0", false, false, 0, 0, 1, VH_HELP_QUEUE },
		{ "queue show index 0x1 dev tap0",
		  VH_CMD_QUEUE_SHOW, "tap0", false, false, 0, 0, 1, VH_HELP_QUEUE },
		{ "monitor", VH_CMD_MONITOR, NULL, false, false, 0, 0, -1, VH_HELP_MAIN },
		{ "-j monitor", VH_CMD_MONITOR, NULL, true, false, 0, 0, -1, VH_HELP_MAIN },
		{ "help", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_MAIN },
		{ "-h", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_MAIN },
		{ "-h queue", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_MAIN },
		{ "dev help", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_DEV },
		{ "show help", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_DEV },
		{ "queue help", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_QUEUE },
		{ "queue show dev vhost0 help",
		  VH_CMD_HELP, "vhost0", false, false, 0, 0, -1, VH_HELP_QUEUE },
		{ "monitor help", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_MAIN },
		{ "-V", VH_CMD_VERSION, NULL, false, false, 0, 0, -1, VH_HELP_MAIN },
		{ "-V show", VH_CMD_VERSION, NULL, false, false, 0, 0, -1, VH_HELP_MAIN },
		{ "policy", VH_CMD_POLICY_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		{ "policy show", VH_CMD_POLICY_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		{ "policy list", VH_CMD_POLICY_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		{ "show policy", VH_CMD_POLICY_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		{ "-j -p show policy",
		  VH_CMD_POLICY_SHOW, NULL, true, true, 0, 0, -1, VH_HELP_POLICY },
		{ "set policy grant none",
		  VH_CMD_POLICY_SET, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		{ "policy set busypoll-us-max 5",
		  VH_CMD_POLICY_SET, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		{ "policy help", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		{ "show policy help", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		{ "set policy grant all help",
		  VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		/* a TAP named policy is a device, given with "dev" */
		{ "show dev policy", VH_CMD_SHOW, "policy", false, false, 0, 0, -1, VH_HELP_DEV },
		{ "dev show policy", VH_CMD_SHOW, "policy", false, false, 0, 0, -1, VH_HELP_DEV },
		{ "-n ns1 show", VH_CMD_SHOW, NULL, false, false, 0, 0, -1, VH_HELP_DEV },
		{ "-j -n ns1 -s show", VH_CMD_SHOW, NULL, true, false, 1, 0, -1, VH_HELP_DEV },
		{ "--netns ns1 set policy grant zerocopy",
		  VH_CMD_POLICY_SET, NULL, false, false, 0, 0, -1, VH_HELP_POLICY },
		{ "-n ns1 help", VH_CMD_HELP, NULL, false, false, 0, 0, -1, VH_HELP_MAIN },
	};
	struct vh_opts o;
	struct vh_req r;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		int ret = parse(t[i].line, &o, &r);
		const char *dev = r.sel.kind == VH_SEL_ALL ? NULL : r.sel.name;

		if (ret || r.cmd != t[i].cmd || o.json != t[i].json ||
		    o.pretty != t[i].pretty || o.stats != t[i].stats ||
		    r.scope != t[i].scope || r.help != t[i].help ||
		    (t[i].index < 0 ? r.has_index :
		     !r.has_index || r.index != (uint32_t)t[i].index) ||
		    (t[i].dev ? !dev || strcmp(dev, t[i].dev) : !!dev)) {
			printf("# \"%s\": ret %d err \"%s\" cmd %d dev %s json %d pretty %d stats %d scope %d index %d/%u help %d\n",
			       t[i].line, ret, r.err, r.cmd, dev ? dev : "-",
			       o.json, o.pretty, o.stats, r.scope, r.has_index,
			       r.index, r.help);
			failures++;
		}
	}
}

static void test_parse_errors(void)
{
	static const struct {
		const char *line, *err;
	} t[] = {
		{ "set dev vhost0 busypoll-us x", "Invalid \"busypoll-us\" value \"x\"" },
		{ "set dev vhost0 busypoll-us 4294967296",
		  "Invalid \"busypoll-us\" value \"4294967296\"" },
		{ "set dev vhost0 busypoll-us 12abc", "Invalid \"busypoll-us\" value \"12abc\"" },
		{ "set dev vhost0 busypoll-us ''", "Invalid \"busypoll-us\" value \"\"" },
		{ "set dev vhost0 zcopy-min-len 0x", "Invalid \"zcopy-min-len\" value \"0x\"" },
		{ "set dev vhost0 zcopy-min-len +5", "Invalid \"zcopy-min-len\" value \"+5\"" },
		{ "set dev vhost0 zerocopy on zerocopy off", "Duplicate argument \"zerocopy\"" },
		{ "set dev vhost0 busypoll-us 1 metamap on busypoll-us 1",
		  "Duplicate argument \"busypoll-us\"" },
		{ "set dev vhost0 zerocopy yes",
		  "Invalid \"zerocopy\" value \"yes\", expected \"on\" or \"off\"" },
		{ "set dev vhost0 metamap On",
		  "Invalid \"metamap\" value \"On\", expected \"off\", \"batch\" or \"map\"" },
		{ "set dev vhost0 busypoll 5",
		  "Unknown keyword \"busypoll\", try \"vhostctl dev help\"" },
		{ "set dev vhost0 admin-busypoll-us 5",
		  "Unknown keyword \"admin-busypoll-us\", try \"vhostctl dev help\"" },
		{ "set dev vhost0 busypoll-us", "Missing value for \"busypoll-us\"" },
		{ "set dev vhost0 zerocopy", "Missing value for \"zerocopy\"" },
		{ "set busypoll-us 5", "Device name is missing" },
		{ "set", "Device name is missing" },
		{ "set dev", "Device name is missing" },
		{ "dev set", "Device name is missing" },
		{ "set dev vhost0",
		  "Nothing to set, give busypoll-us, zerocopy, zcopy-min-len, metamap or label" },
		{ "set vhost0",
		  "Nothing to set, give busypoll-us, zerocopy, zcopy-min-len, metamap or label" },
		{ "set dev vhost0 dev vhost1 metamap on", "Duplicate argument \"dev\"" },
		{ "set vhost0 vhost1", "Unknown keyword \"vhost1\", try \"vhostctl dev help\"" },
		{ "set dev 0123456789abcdef metamap on",
		  "Invalid device name \"0123456789abcdef\"" },
		{ "set dev 4294967296 metamap on", "Invalid device id \"4294967296\"" },
		{ "show vhost0 vhost1", "Unknown keyword \"vhost1\", try \"vhostctl dev help\"" },
		{ "show dev vhost0 dev vhost1", "Duplicate argument \"dev\"" },
		{ "show dev", "Device name is missing" },
		{ "stats dev", "Device name is missing" },
		{ "show ''", "Invalid device name \"\"" },
		{ "stats scope", "Missing value for \"scope\"" },
		{ "stats scope queues",
		  "Invalid \"scope\" value \"queues\", expected \"device\" or \"queue\"" },
		{ "stats scope queue scope device", "Duplicate argument \"scope\"" },
		{ "stats vhost0 vhost1", "Unknown keyword \"vhost1\", try \"vhostctl dev help\"" },
		{ "stats vhost0 index 1", "Unknown keyword \"index\", try \"vhostctl dev help\"" },
		{ "queue show index 1", "Argument \"index\" needs a device, give \"dev DEV\"" },
		{ "queue show dev vhost0 index", "Missing value for \"index\"" },
		{ "queue show dev vhost0 index x", "Invalid \"index\" value \"x\"" },
		{ "queue show dev vhost0 index 1 index 2", "Duplicate argument \"index\"" },
		{ "queue show vhost0 vhost1",
		  "Unknown keyword \"vhost1\", try \"vhostctl queue help\"" },
		{ "queue show dev vhost0 scope queue",
		  "Unknown keyword \"scope\", try \"vhostctl queue help\"" },
		{ "queue set vhost0", "Command \"set\" is unknown, try \"vhostctl queue help\"" },
		{ "sh", "Object \"sh\" is unknown, try \"vhostctl help\"" },
		{ "devs", "Object \"devs\" is unknown, try \"vhostctl help\"" },
		{ "dev sh", "Command \"sh\" is unknown, try \"vhostctl dev help\"" },
		{ "dev monitor", "Command \"monitor\" is unknown, try \"vhostctl dev help\"" },
		{ "monitor foo", "Unknown keyword \"foo\", try \"vhostctl help\"" },
		{ "-x show", "Unknown option \"-x\", try \"vhostctl help\"" },
		{ "--bogus show", "Unknown option \"--bogus\", try \"vhostctl help\"" },
		{ "policy sh", "Command \"sh\" is unknown, try \"vhostctl policy help\"" },
		{ "policy show now", "Unknown keyword \"now\", try \"vhostctl policy help\"" },
		{ "show policy dev vhost0",
		  "Unknown keyword \"dev\", try \"vhostctl policy help\"" },
		{ "set policy", "Nothing to set, give grant or busypoll-us-max" },
		{ "policy set", "Nothing to set, give grant or busypoll-us-max" },
		{ "set policy grant", "Missing value for \"grant\"" },
		{ "set policy busypoll-us-max", "Missing value for \"busypoll-us-max\"" },
		{ "set policy grant zerocopy grant metamap", "Duplicate argument \"grant\"" },
		{ "set policy busypoll-us-max 1 grant all busypoll-us-max 2",
		  "Duplicate argument \"busypoll-us-max\"" },
		{ "set policy busypoll-us-max x", "Invalid \"busypoll-us-max\" value \"x\"" },
		{ "set policy busypoll-us-max -1", "Invalid \"busypoll-us-max\" value \"-1\"" },
		{ "set policy grant admin-busypoll-us",
		  "Invalid \"grant\" value \"admin-busypoll-us\", " GRANT_EXPECTED },
		{ "set policy grant zerocopy,",
		  "Invalid \"grant\" value \"zerocopy,\", " GRANT_EXPECTED },
		{ "set policy grant ,zerocopy",
		  "Invalid \"grant\" value \",zerocopy\", " GRANT_EXPECTED },
		{ "set policy grant zerocopy,,metamap",
		  "Invalid \"grant\" value \"zerocopy,,metamap\", " GRANT_EXPECTED },
		{ "set policy grant none,zerocopy",
		  "Invalid \"grant\" value \"none,zerocopy\", " GRANT_EXPECTED },
		{ "set policy grant All", "Invalid \"grant\" value \"All\", " GRANT_EXPECTED },
		{ "set policy grant ''", "Invalid \"grant\" value \"\", " GRANT_EXPECTED },
		{ "set policy zerocopy on",
		  "Unknown keyword \"zerocopy\", try \"vhostctl policy help\"" },
		{ "set policy grant zerocopy vhost0",
		  "Unknown keyword \"vhost0\", try \"vhostctl policy help\"" },
		{ "dev set policy grant zerocopy",
		  "Unknown keyword \"grant\", try \"vhostctl dev help\"" },
		{ "-n", "Missing value for \"-n\"" },
		{ "--netns", "Missing value for \"--netns\"" },
		{ "-j -n", "Missing value for \"-n\"" },
		{ "-n '' show", "Invalid network namespace name \"\"" },
		{ "-n a/b show", "Invalid network namespace name \"a/b\"" },
		{ "-n .. show", "Invalid network namespace name \"..\"" },
		{ "-n . show", "Invalid network namespace name \".\"" },
		{ "--netns=../../proc/1/ns/net show",
		  "Invalid network namespace name \"../../proc/1/ns/net\"" },
		{ "-n a -n b show", "Duplicate argument \"-n\"" },
		{ "-n ns1", "" },	/* no object: usage */
		{ "-j", "" },	/* no object: usage */
		{ "", "" },
		/* stats -i, -c, -o; monitor -t; -b */
		{ "stats -c 2", "Option \"-c\" needs \"-i\"" },
		{ "-c 2 stats", "Option \"-c\" needs \"-i\"" },
		{ "stats -i 0", "Invalid \"-i\" value \"0\", expected 1 to 86400" },
		{ "stats -i 86401", "Invalid \"-i\" value \"86401\", expected 1 to 86400" },
		{ "stats -i 1.5", "Invalid \"-i\" value \"1.5\", expected 1 to 86400" },
		{ "stats -i 1 -c -1",
		  "Invalid \"-c\" value \"-1\", expected 1 to 4294967295" },
		{ "stats dev vhost0 -i", "Missing value for \"-i\"" },
		{ "-i", "Missing value for \"-i\"" },
		{ "stats -i 1 -o openmetrics",
		  "\"-o openmetrics\" prints counters, not rates: it does not take \"-i\"" },
		{ "-o yaml stats",
		  "Invalid \"-o\" value \"yaml\", expected \"text\", \"json\", \"openmetrics\" or \"prometheus\"" },
		{ "monitor -i 1", "Unknown keyword \"-i\", try \"vhostctl help\"" },
		{ "monitor now -t", "Unknown keyword \"now\", try \"vhostctl help\"" },
		{ "stats -t", "Unknown keyword \"-t\", try \"vhostctl dev help\"" },
		{ "stats --intervals 1",
		  "Unknown keyword \"--intervals\", try \"vhostctl dev help\"" },
		{ "-j stats -i 1 -s", "Unknown keyword \"-s\", try \"vhostctl dev help\"" },
		{ "-b cmds show", "Option \"-b\" takes no command, \"show\" belongs in the file" },
		{ "-b a -b b", "Duplicate argument \"-b\"" },
		{ "-b", "Missing value for \"-b\"" },
	};
	struct vh_opts o;
	struct vh_req r;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		int ret = parse(t[i].line, &o, &r);

		if (ret != -1 || strcmp(r.err, t[i].err)) {
			printf("# \"%s\": ret %d, err \"%s\", want \"%s\"\n",
			       t[i].line, ret, r.err, t[i].err);
			failures++;
		}
	}
	CHECK(parse("", &o, &r) == -1 && r.help == VH_HELP_MAIN);
}

static void test_parse_policy(void)
{
	static const struct {
		const char *line;
		uint32_t mask;		/* VH_BIT(VHOST_A_POLICY_x) */
		uint64_t grants;
		uint32_t max;
	} t[] = {
		{ "set policy grant none", VH_BIT(VHOST_A_POLICY_GRANTS), 0, 0 },
		{ "set policy grant all", VH_BIT(VHOST_A_POLICY_GRANTS),
		  VHOST_TUNABLE_ADMIN_BUSYPOLL_US | VHOST_TUNABLE_ZEROCOPY |
		  VHOST_TUNABLE_ZCOPY_MIN_LEN | VHOST_TUNABLE_METAMAP |
		  VHOST_TUNABLE_LABEL, 0 },
		{ "set policy grant busypoll-us busypoll-us-max 50",
		  VH_BIT(VHOST_A_POLICY_GRANTS) | VH_BIT(VHOST_A_POLICY_BUSYPOLL_US_MAX),
		  VHOST_TUNABLE_ADMIN_BUSYPOLL_US, 50 },
		{ "policy set busypoll-us-max 0x10 grant zerocopy,metamap",
		  VH_BIT(VHOST_A_POLICY_GRANTS) | VH_BIT(VHOST_A_POLICY_BUSYPOLL_US_MAX),
		  VHOST_TUNABLE_ZEROCOPY | VHOST_TUNABLE_METAMAP, 16 },
		{ "set policy grant zcopy-min-len,zerocopy,zcopy-min-len",
		  VH_BIT(VHOST_A_POLICY_GRANTS),
		  VHOST_TUNABLE_ZCOPY_MIN_LEN | VHOST_TUNABLE_ZEROCOPY, 0 },
		{ "set policy busypoll-us-max 0", VH_BIT(VHOST_A_POLICY_BUSYPOLL_US_MAX), 0, 0 },
		/* the kernel checks the range */
		{ "set policy busypoll-us-max 4294967295",
		  VH_BIT(VHOST_A_POLICY_BUSYPOLL_US_MAX), 0, 4294967295u },
	};
	struct vhost_policy_set_req *ps;
	struct vh_opts o;
	struct vh_req r;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		int ret = parse(t[i].line, &o, &r);

		if (ret || r.cmd != VH_CMD_POLICY_SET || r.policy.mask != t[i].mask ||
		    r.policy.grants != t[i].grants ||
		    r.policy.busypoll_us_max != t[i].max) {
			printf("# \"%s\": ret %d err \"%s\" cmd %d mask %#x grants %#llx max %u\n",
			       t[i].line, ret, r.err, r.cmd, r.policy.mask,
			       (unsigned long long)r.policy.grants,
			       r.policy.busypoll_us_max);
			failures++;
			continue;
		}
		/* one policy-set, with exactly the attributes given */
		ps = vh_policy_set_req(&r.policy);
		CHECK(ps);
		if (!ps)
			continue;
		CHECK(!!ps->_present.grants == !!(t[i].mask & VH_BIT(VHOST_A_POLICY_GRANTS)));
		CHECK(!!ps->_present.busypoll_us_max ==
		      !!(t[i].mask & VH_BIT(VHOST_A_POLICY_BUSYPOLL_US_MAX)));
		if (ps->_present.grants)
			CHECK(ps->grants == t[i].grants);
		if (ps->_present.busypoll_us_max)
			CHECK(ps->busypoll_us_max == t[i].max);
		vhost_policy_set_req_free(ps);
	}
	/* "all" is every tunable of the spec, by the keywords of "dev set" */
	CHECK(vh_tunables_all() == 0x1f);
	CHECK_STR(vh_tunable_keyword(VHOST_TUNABLE_ADMIN_BUSYPOLL_US), "busypoll-us");
	CHECK_STR(vh_tunable_keyword(VHOST_TUNABLE_ZEROCOPY), "zerocopy");
	CHECK_STR(vh_tunable_keyword(VHOST_TUNABLE_ZCOPY_MIN_LEN), "zcopy-min-len");
	CHECK_STR(vh_tunable_keyword(VHOST_TUNABLE_METAMAP), "metamap");
	CHECK_STR(vh_tunable_keyword(VHOST_TUNABLE_LABEL), "label");
	CHECK(!vh_tunable_keyword(32));
	CHECK(!vh_tunable_keyword(0));
}

static void test_parse_netns(void)
{
	struct vh_opts o;
	struct vh_req r;

	CHECK(parse("show", &o, &r) == 0 && !o.netns);
	CHECK(parse("-n tenant1 show", &o, &r) == 0 && o.netns &&
	      !strcmp(o.netns, "tenant1"));
	CHECK(parse("--netns tenant1 -j show policy", &o, &r) == 0 && o.netns &&
	      !strcmp(o.netns, "tenant1") && o.json && r.cmd == VH_CMD_POLICY_SHOW);
	CHECK(parse("--netns=t.2 set dev vhost0 zerocopy on", &o, &r) == 0 &&
	      o.netns && !strcmp(o.netns, "t.2") && r.cmd == VH_CMD_SET);
	CHECK(parse("-jn t3 show", &o, &r) == 0 && o.json && o.netns &&
	      !strcmp(o.netns, "t3"));
	/* after the object it is a word of the command, not the option */
	CHECK(parse("show -n t3", &o, &r) == -1 && !o.netns);
	CHECK_STR(r.err, "Unknown keyword \"t3\", try \"vhostctl dev help\"");
}

/* -o, -i, -c and -t: before the object, or among the words of stats, monitor */
static void test_parse_watch(void)
{
	struct vh_opts o;
	struct vh_req r;

	CHECK(parse("stats", &o, &r) == 0 && !o.interval && !o.count &&
	      !o.openmetrics && !o.timestamp);
	CHECK(parse("stats -i 2 -c 3", &o, &r) == 0 && r.cmd == VH_CMD_STATS &&
	      o.interval == 2 && o.count == 3 && r.sel.kind == VH_SEL_ALL);
	CHECK(parse("-i 5 stats dev tap0 scope queue", &o, &r) == 0 &&
	      o.interval == 5 && !o.count && r.scope == VH_SCOPE_QUEUE &&
	      r.sel.kind == VH_SEL_IFNAME);
	CHECK(parse("dev stats vhost1 --count 2 --interval 1", &o, &r) == 0 &&
	      o.interval == 1 && o.count == 2 && r.sel.kind == VH_SEL_NAME);

	/* -o: the last of -j and -o wins */
	CHECK(parse("stats -o openmetrics", &o, &r) == 0 && o.openmetrics &&
	      !o.json);
	CHECK(parse("-j stats dev vhost0 -o openmetrics", &o, &r) == 0 &&
	      o.openmetrics && !o.json);
	CHECK(parse("--output json stats", &o, &r) == 0 && o.json &&
	      !o.openmetrics);
	CHECK(parse("-o openmetrics -j stats", &o, &r) == 0 && o.json &&
	      !o.openmetrics);
	CHECK(parse("-j stats -o text", &o, &r) == 0 && !o.json &&
	      !o.openmetrics);

	/* -t: "ip -t monitor" and "monitor -t" */
	CHECK(parse("monitor -t", &o, &r) == 0 && r.cmd == VH_CMD_MONITOR &&
	      o.timestamp);
	CHECK(parse("-t -j monitor", &o, &r) == 0 && o.timestamp && o.json);
	CHECK(parse("monitor --timestamp", &o, &r) == 0 && o.timestamp);
	CHECK(parse("monitor -t help", &o, &r) == 0 && r.cmd == VH_CMD_HELP);

	CHECK(parse("stats -i 86400", &o, &r) == 0 && o.interval == 86400);
	/* options before the object are for any command, as ip's are */
	CHECK(parse("-t -i 1 show", &o, &r) == 0 && r.cmd == VH_CMD_SHOW);
}

/* -b FILE and the lines of a batch */
static void test_parse_batch(void)
{
	struct vh_opts o, lo;
	struct vh_req r;
	char line[128];
	char *w[8];

	CHECK(parse("-b cmds", &o, &r) == 0 && r.cmd == VH_CMD_BATCH &&
	      o.batch && !strcmp(o.batch, "cmds") && !o.force);
	CHECK(parse("-j -f --batch - ", &o, &r) == 0 && r.cmd == VH_CMD_BATCH &&
	      !strcmp(o.batch, "-") && o.force && o.json);

	/* words: blanks, quotes, backslashes, comments */
	snprintf(line, sizeof(line), "  set dev\ttap0  busypoll-us 50\n");
	CHECK(vh_split_line(line, w, 8, &r) == 5);
	CHECK_STR(w[0], "set");
	CHECK_STR(w[2], "tap0");
	CHECK_STR(w[4], "50");
	CHECK(!w[5]);
	snprintf(line, sizeof(line), "show 'a b' \"c\\\"d\" e\\ f g'h'i # x y");
	CHECK(vh_split_line(line, w, 8, &r) == 5);
	CHECK_STR(w[1], "a b");
	CHECK_STR(w[2], "c\"d");
	CHECK_STR(w[3], "e f");
	CHECK_STR(w[4], "ghi");
	snprintf(line, sizeof(line), "show a#b ''");
	CHECK(vh_split_line(line, w, 8, &r) == 3);
	CHECK_STR(w[1], "a#b");
	CHECK_STR(w[2], "");
	snprintf(line, sizeof(line), "   # a comment\n");
	CHECK(vh_split_line(line, w, 8, &r) == 0 && !w[0]);
	snprintf(line, sizeof(line), "\n");
	CHECK(vh_split_line(line, w, 8, &r) == 0);
	snprintf(line, sizeof(line), "show 'tap0");
	CHECK(vh_split_line(line, w, 8, &r) == -1);
	CHECK_STR(r.err, "Missing closing quote '");
	snprintf(line, sizeof(line), "a b c d e f g h");
	CHECK(vh_split_line(line, w, 8, &r) == -1);
	CHECK_STR(r.err, "Too many words, more than 7");

	/* a line: the command line's options, and its own for stats */
	CHECK(parse("-j -n ns1 -b -", &o, &r) == 0);
	lo = o;
	snprintf(line, sizeof(line), "stats dev tap0 -i 2 -c 1");
	CHECK(vh_split_line(line, w, 8, &r) == 7 &&
	      vh_parse_command(7, w, &lo, &r) == 0);
	CHECK(r.cmd == VH_CMD_STATS && r.sel.kind == VH_SEL_IFNAME &&
	      lo.interval == 2 && lo.count == 1 && lo.json &&
	      !strcmp(lo.netns, "ns1"));
	CHECK(!o.interval);
	lo = o;
	snprintf(line, sizeof(line), "set vhost0 zerocopy on");
	CHECK(vh_split_line(line, w, 8, &r) == 4 &&
	      vh_parse_command(4, w, &lo, &r) == 0 && r.cmd == VH_CMD_SET &&
	      r.set.zerocopy == 1);
	/* the options of the command line are not taken in a line */
	lo = o;
	snprintf(line, sizeof(line), "-j show");
	CHECK(vh_split_line(line, w, 8, &r) == 2 &&
	      vh_parse_command(2, w, &lo, &r) == -1);
	CHECK_STR(r.err, "Object \"-j\" is unknown, try \"vhostctl help\"");
	lo = o;
	snprintf(line, sizeof(line), "set vhost0 zerocopy maybe");
	CHECK(vh_split_line(line, w, 8, &r) == 4 &&
	      vh_parse_command(4, w, &lo, &r) == -1);
	CHECK_STR(r.err, "Invalid \"zerocopy\" value \"maybe\", expected \"on\" or \"off\"");
	snprintf(line, sizeof(line), "dev help");
	CHECK(vh_split_line(line, w, 8, &r) == 2 &&
	      vh_parse_command(2, w, &lo, &r) == 0 && r.cmd == VH_CMD_HELP &&
	      r.help == VH_HELP_DEV);
}

static void test_get_u32(void)
{
	uint32_t v = 7;

	CHECK(vh_get_u32("0", &v) == 0 && v == 0);
	CHECK(vh_get_u32("50", &v) == 0 && v == 50);
	CHECK(vh_get_u32("4294967295", &v) == 0 && v == 4294967295u);
	CHECK(vh_get_u32("0x10", &v) == 0 && v == 16);
	CHECK(vh_get_u32("0XfF", &v) == 0 && v == 255);
	CHECK(vh_get_u32("010", &v) == 0 && v == 10);	/* not octal */
	v = 7;
	CHECK(vh_get_u32("4294967296", &v) == -ERANGE && v == 7);
	CHECK(vh_get_u32("99999999999999999999999", &v) == -ERANGE);
	CHECK(vh_get_u32("", &v) == -EINVAL);
	CHECK(vh_get_u32(" 1", &v) == -EINVAL);
	CHECK(vh_get_u32("1 ", &v) == -EINVAL);
	CHECK(vh_get_u32("-1", &v) == -EINVAL);
	CHECK(vh_get_u32("+1", &v) == -EINVAL);
	CHECK(vh_get_u32("0x", &v) == -EINVAL);
	CHECK(vh_get_u32("0x-1", &v) == -EINVAL);
	CHECK(vh_get_u32("1e3", &v) == -EINVAL);
	CHECK(v == 7);
}

static void test_vhost_name(void)
{
	CHECK(vh_is_vhost_name("vhost0"));
	CHECK(vh_is_vhost_name("vhost4294967295"));
	CHECK(!vh_is_vhost_name("vhost"));
	CHECK(!vh_is_vhost_name("vhostx"));
	CHECK(!vh_is_vhost_name("vhost1a"));
	CHECK(!vh_is_vhost_name("vhost-1"));
	CHECK(!vh_is_vhost_name("tap0"));
	CHECK(!vh_is_vhost_name("Vhost0"));
	CHECK(!vh_is_vhost_name("vhost12345678901"));	/* 16 chars */
}

static void test_requests(void)
{
	struct vhost_stats_get_req_dump *s;
	struct vhost_queue_get_req_dump *qd;
	struct vhost_queue_get_req *q;
	uint32_t id = 5;

	q = vh_queue_get_req(5, 1);
	CHECK(q && q->_present.dev_id && q->dev_id == 5 &&
	      q->_present.index && q->index == 1);
	if (q)
		vhost_queue_get_req_free(q);

	qd = vh_queue_dump_req(NULL);
	CHECK(qd && !qd->_present.dev_id);
	if (qd)
		vhost_queue_get_req_dump_free(qd);
	qd = vh_queue_dump_req(&id);
	CHECK(qd && qd->_present.dev_id && qd->dev_id == 5);
	if (qd)
		vhost_queue_get_req_dump_free(qd);

	/* device scope is the kernel's default: no scope attribute */
	s = vh_stats_dump_req(NULL, false);
	CHECK(s && !s->_present.dev_id && !s->_present.scope);
	if (s)
		vhost_stats_get_req_dump_free(s);
	s = vh_stats_dump_req(&id, true);
	CHECK(s && s->_present.dev_id && s->dev_id == 5 && s->_present.scope &&
	      s->scope == VHOST_STATS_SCOPE_QUEUE);
	if (s)
		vhost_stats_get_req_dump_free(s);
}

/* ---- fixtures: replies as the generated library fills them --------------- */

static void fixture_dev(struct vhost_dev_get_rsp *d, bool priv)
{
	memset(d, 0, sizeof(*d));
	d->_present.id = 1;
	d->id = 3;
	d->_present.name_len = strlen("vhost3");
	d->name = (char *)"vhost3";
	d->_present.type = 1;
	d->type = VHOST_DEV_TYPE_NET;
	if (priv) {
		d->_present.owner_pid = 1;
		d->owner_pid = 1234;
		d->_present.backend_ifindex = 1;
		d->backend_ifindex = 7;
		d->_present.backend_ifname_len = strlen("tap0");
		d->backend_ifname = (char *)"tap0";
	}
	d->_present.features = 1;
	d->features = 0x130000000ull;
	d->_present.num_queues = 1;
	d->num_queues = 2;
	d->_present.admin_busypoll_us = 1;
	d->admin_busypoll_us = 50;
	d->_present.zerocopy = 1;
	d->zerocopy = 1;
	d->_present.zcopy_min_len = 1;
	d->zcopy_min_len = 256;
	d->_present.metamap = 1;
	d->metamap = 0;
}

/*
 * Counter attr of s = v, as the generated parser sets it; written out on its
 * own, so that a field vh_stat_get() reads for the wrong attribute shows.
 */
static void stat_set(struct vhost_stats_get_rsp_dump *s, int attr, uint64_t v)
{
	switch (attr) {
	case VHOST_A_STATS_RX_PACKETS:
		s->_present.rx_packets = 1;
		s->rx_packets = v;
		break;
	case VHOST_A_STATS_RX_BYTES:
		s->_present.rx_bytes = 1;
		s->rx_bytes = v;
		break;
	case VHOST_A_STATS_TX_PACKETS:
		s->_present.tx_packets = 1;
		s->tx_packets = v;
		break;
	case VHOST_A_STATS_TX_BYTES:
		s->_present.tx_bytes = 1;
		s->tx_bytes = v;
		break;
	case VHOST_A_STATS_KICKS:
		s->_present.kicks = 1;
		s->kicks = v;
		break;
	case VHOST_A_STATS_CALLS:
		s->_present.calls = 1;
		s->calls = v;
		break;
	case VHOST_A_STATS_BUSYPOLL_LOOPS:
		s->_present.busypoll_loops = 1;
		s->busypoll_loops = v;
		break;
	case VHOST_A_STATS_BUSYPOLL_NS:
		s->_present.busypoll_ns = 1;
		s->busypoll_ns = v;
		break;
	case VHOST_A_STATS_BUSYPOLL_FOUND:
		s->_present.busypoll_found = 1;
		s->busypoll_found = v;
		break;
	case VHOST_A_STATS_ZCOPY_SENT:
		s->_present.zcopy_sent = 1;
		s->zcopy_sent = v;
		break;
	case VHOST_A_STATS_ZCOPY_COPIED:
		s->_present.zcopy_copied = 1;
		s->zcopy_copied = v;
		break;
	case VHOST_A_STATS_ZCOPY_PENDING:
		s->_present.zcopy_pending = 1;
		s->zcopy_pending = v;
		break;
	case VHOST_A_STATS_ZCOPY_HOL_STALLS:
		s->_present.zcopy_hol_stalls = 1;
		s->zcopy_hol_stalls = v;
		break;
	case VHOST_A_STATS_METAMAP_FAST:
		s->_present.metamap_fast = 1;
		s->metamap_fast = v;
		break;
	case VHOST_A_STATS_METAMAP_FALLBACK:
		s->_present.metamap_fallback = 1;
		s->metamap_fallback = v;
		break;
	case VHOST_A_STATS_METAMAP_INVALIDATIONS:
		s->_present.metamap_invalidations = 1;
		s->metamap_invalidations = v;
		break;
	case VHOST_A_STATS_METAMAP_REMAPS:
		s->_present.metamap_remaps = 1;
		s->metamap_remaps = v;
		break;
	case VHOST_A_STATS_METAMAP_REMAP_FAILURES:
		s->_present.metamap_remap_failures = 1;
		s->metamap_remap_failures = v;
		break;
	case VHOST_A_STATS_METAMAP_REFUSED:
		s->_present.metamap_refused = 1;
		s->metamap_refused = v;
		break;
	case VHOST_A_STATS_METAMAP_UACCESS_FILLS:
		s->_present.metamap_uaccess_fills = 1;
		s->metamap_uaccess_fills = v;
		break;
	case VHOST_A_STATS_USED_ENTRIES:
		s->_present.used_entries = 1;
		s->used_entries = v;
		break;
	case VHOST_A_STATS_TX_ERRORS:
		s->_present.tx_errors = 1;
		s->tx_errors = v;
		break;
	case VHOST_A_STATS_ZCOPY_FALLBACK:
		s->_present.zcopy_fallback = 1;
		s->zcopy_fallback = v;
		break;
	case VHOST_A_STATS_ZCOPY_BACKOFF:
		s->_present.zcopy_backoff = 1;
		s->zcopy_backoff = v;
		break;
	case VHOST_A_STATS_ZCOPY_IN_ORDER:
		s->_present.zcopy_in_order = 1;
		s->zcopy_in_order = v;
		break;
	case VHOST_A_STATS_METAMAP_POISONED:
		s->_present.metamap_poisoned = 1;
		s->metamap_poisoned = v;
		break;
	default:
		printf("# %s: no counter %d\n", __func__, attr);
		failures++;
	}
}

static const uint64_t dev_counters[VHOST_A_STATS_MAX + 1] = {
	[VHOST_A_STATS_RX_PACKETS] = 10,
	[VHOST_A_STATS_RX_BYTES] = 640,
	[VHOST_A_STATS_TX_PACKETS] = 5000000000ull,
	[VHOST_A_STATS_TX_BYTES] = 320000000000ull,
	[VHOST_A_STATS_KICKS] = 7,
	[VHOST_A_STATS_CALLS] = 8,
	[VHOST_A_STATS_BUSYPOLL_LOOPS] = 1,
	[VHOST_A_STATS_BUSYPOLL_NS] = 2,
	[VHOST_A_STATS_BUSYPOLL_FOUND] = 3,
	[VHOST_A_STATS_ZCOPY_SENT] = 4,
	[VHOST_A_STATS_ZCOPY_COPIED] = 5,
	[VHOST_A_STATS_ZCOPY_PENDING] = 0,
	[VHOST_A_STATS_ZCOPY_HOL_STALLS] = 6,
	[VHOST_A_STATS_METAMAP_FAST] = 100,
	[VHOST_A_STATS_METAMAP_FALLBACK] = 2,
	[VHOST_A_STATS_METAMAP_INVALIDATIONS] = 1,
	[VHOST_A_STATS_METAMAP_REMAPS] = 3,
	[VHOST_A_STATS_METAMAP_REMAP_FAILURES] = 0,
	[VHOST_A_STATS_METAMAP_REFUSED] = 9,
	[VHOST_A_STATS_TX_ERRORS] = 11,
	[VHOST_A_STATS_ZCOPY_FALLBACK] = 12,
	[VHOST_A_STATS_ZCOPY_BACKOFF] = 13,
	[VHOST_A_STATS_METAMAP_UACCESS_FILLS] = 14,
	[VHOST_A_STATS_USED_ENTRIES] = 15,
	[VHOST_A_STATS_ZCOPY_IN_ORDER] = 16,
	[VHOST_A_STATS_METAMAP_POISONED] = 17,
};

/* vhost3's device counters (queue < 0) or those of queue 0 (RX) or 1 (TX). */
static void fixture_stats(struct vhost_stats_get_rsp_dump *s, int queue)
{
	int i;

	memset(s, 0, sizeof(*s));
	s->_present.dev_id = 1;
	s->dev_id = 3;
	if (queue < 0) {
		for (i = VH_STATS_FIRST; i <= VHOST_A_STATS_MAX; i++)
			stat_set(s, i, dev_counters[i]);
		return;
	}
	s->_present.queue_index = 1;
	s->queue_index = queue;
	s->_present.queue_type = 1;
	s->queue_type = queue ? VHOST_QUEUE_TYPE_TX : VHOST_QUEUE_TYPE_RX;
	if (queue) {
		stat_set(s, VHOST_A_STATS_TX_PACKETS, 5000000000ull);
		stat_set(s, VHOST_A_STATS_TX_ERRORS, 0);
		stat_set(s, VHOST_A_STATS_KICKS, 4);
		stat_set(s, VHOST_A_STATS_ZCOPY_SENT, 4);
		stat_set(s, VHOST_A_STATS_ZCOPY_COPIED, 5);
		stat_set(s, VHOST_A_STATS_ZCOPY_PENDING, 0);
		stat_set(s, VHOST_A_STATS_ZCOPY_HOL_STALLS, 6);
	} else {
		stat_set(s, VHOST_A_STATS_RX_PACKETS, 10);
		stat_set(s, VHOST_A_STATS_RX_BYTES, 640);
		stat_set(s, VHOST_A_STATS_KICKS, 3);
		stat_set(s, VHOST_A_STATS_CALLS, 4);
		stat_set(s, VHOST_A_STATS_METAMAP_FAST, 60);
	}
}

static void fixture_queue(struct vhost_queue_get_rsp *q, int index)
{
	memset(q, 0, sizeof(*q));
	q->_present.dev_id = 1;
	q->dev_id = 3;
	q->_present.index = 1;
	q->index = index;
	q->_present.type = 1;
	q->type = index ? VHOST_QUEUE_TYPE_TX : VHOST_QUEUE_TYPE_RX;
	q->_present.num = 1;
	q->num = 256;
	q->_present.owner_busypoll_us = 1;
	q->owner_busypoll_us = index ? 20 : 0;
	q->_present.busypoll_us = 1;
	q->busypoll_us = 50;
	q->_present.metamap_valid = 1;
	q->metamap_valid = !index;
}

/* Everything "show -s -s" has for vhost3. */
struct fixture {
	struct vhost_dev_get_rsp dev;
	struct vhost_stats_get_rsp_dump stats, qstats[2];
	struct vhost_queue_get_rsp q[2];
	const struct vhost_queue_get_rsp *qp[2];
	const struct vhost_stats_get_rsp_dump *qsp[2];
	struct vh_dev_more more;
};

static void fixture_init(struct fixture *f, bool priv, int level)
{
	int i;

	memset(f, 0, sizeof(*f));
	fixture_dev(&f->dev, priv);
	fixture_stats(&f->stats, -1);
	for (i = 0; i < 2; i++) {
		fixture_queue(&f->q[i], i);
		fixture_stats(&f->qstats[i], i);
		f->qp[i] = &f->q[i];
		f->qsp[i] = &f->qstats[i];
	}
	f->more.stats = level >= 1 ? &f->stats : NULL;
	f->more.queues = level >= 2;
	f->more.nqueues = 2;
	f->more.queue = f->qp;
	f->more.queue_stats = f->qsp;
}

static void test_stat_fields(void)
{
	struct vhost_stats_get_rsp_dump s;
	unsigned int n = 0;
	uint64_t v;
	int i;

	/* every counter of the spec reaches its field and back */
	memset(&s, 0, sizeof(s));
	for (i = VH_STATS_FIRST; i <= VHOST_A_STATS_MAX; i++) {
		CHECK(!vh_stat_get(&s, i, &v));
		stat_set(&s, i, 1000 + i);
		CHECK(vh_stat_get(&s, i, &v) && v == 1000u + i);
		CHECK(vhost_stats_policy[i].name &&
		      vhost_stats_policy[i].type == YNL_PT_UINT);
		n++;
	}
	CHECK(n == 26);
	/* the identifying attributes are not counters */
	CHECK(!vh_stat_get(&s, VHOST_A_STATS_DEV_ID, &v));
	CHECK(!vh_stat_get(&s, VHOST_A_STATS_SCOPE, &v));
	CHECK(!vh_stat_get(&s, VHOST_A_STATS_MAX + 1, &v));
}

/* The JSON keys are the spec's attribute names, from the generated tables. */
static void test_spec_names(void)
{
	CHECK_STR(vhost_dev_policy[VHOST_A_DEV_ADMIN_BUSYPOLL_US].name,
		  "admin-busypoll-us");
	CHECK_STR(vhost_dev_policy[VHOST_A_DEV_OWNER_PID].name, "owner-pid");
	CHECK_STR(vhost_dev_policy[VHOST_A_DEV_BACKEND_NETNSID].name,
		  "backend-netnsid");
	CHECK_STR(vhost_queue_policy[VHOST_A_QUEUE_OWNER_BUSYPOLL_US].name,
		  "owner-busypoll-us");
	CHECK_STR(vhost_queue_policy[VHOST_A_QUEUE_METAMAP_VALID].name,
		  "metamap-valid");
	CHECK_STR(vhost_stats_policy[VHOST_A_STATS_QUEUE_INDEX].name,
		  "queue-index");
	CHECK_STR(vhost_stats_policy[VHOST_A_STATS_ZCOPY_HOL_STALLS].name,
		  "zcopy-hol-stalls");
	CHECK_STR(vhost_dev_type_str(VHOST_DEV_TYPE_NET), "net");
	CHECK_STR(vhost_queue_type_str(VHOST_QUEUE_TYPE_TX), "tx");
}

/* ---- printing ----------------------------------------------------------- */

enum what { SHOW, QUEUES, STATS };

/* One listing of n objects of a kind, as text or JSON. */
static char *render(enum what what, const void *objs, int n,
		    const struct vh_dev_more *more, bool json, bool pretty)
{
	struct vh_opts opts = { .json = json, .pretty = pretty };
	struct vh_out o;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;

	vh_out_open(&o, f, &opts);
	for (i = 0; i < n; i++) {
		if (what == SHOW)
			vh_print_dev(&o, (const struct vhost_dev_get_rsp *)objs + i,
				     more);
		else if (what == QUEUES)
			vh_print_queue(&o, (const struct vhost_queue_get_rsp *)objs + i);
		else
			vh_print_stats(&o, (const struct vhost_stats_get_rsp_dump *)objs + i);
	}
	vh_out_close(&o);
	fclose(f);
	return buf;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; s && *s; s++)
		n += *s == '\n';
	return n;
}

/* A monitor event, stamped with ts unless NULL. */
static char *render_event_at(const struct vhost_dev_get_rsp *d,
			     enum vh_event ev, bool json,
			     const struct timespec *ts)
{
	struct vh_opts opts = { .json = json, .timestamp = !!ts };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	vh_print_event(f, &opts, ev, d, ts);
	fclose(f);
	return buf;
}

static char *render_event(const struct vhost_dev_get_rsp *d,
			  enum vh_event ev, bool json)
{
	return render_event_at(d, ev, json, NULL);
}

#define DEV_TEXT							\
	"vhost3: type net owner-pid 1234 backend-ifname tap0 backend-ifindex 7\n" \
	"    features 0x0000000130000000 num-queues 2\n"		\
	"    busypoll-us 50 zerocopy on zcopy-min-len 256 metamap off\n"

#define DEV_STATS_TEXT(ind)						\
	ind "rx-packets 10 rx-bytes 640 tx-packets 5000000000 tx-bytes 320000000000 tx-errors 11\n" \
	ind "kicks 7 calls 8 used-entries 15\n"				\
	ind "busypoll-loops 1 busypoll-ns 2 busypoll-found 3\n"		\
	ind "zcopy-sent 4 zcopy-fallback 12 zcopy-copied 5 zcopy-hol-stalls 6 zcopy-backoff 13 zcopy-in-order 16 zcopy-pending 0\n" \
	ind "metamap-fast 100 metamap-fallback 2 metamap-invalidations 1 metamap-remaps 3 metamap-remap-failures 0 metamap-refused 9 metamap-uaccess-fills 14 metamap-poisoned 17\n"

#define RXQ_STATS_TEXT(ind)						\
	ind "rx-packets 10 rx-bytes 640\n"				\
	ind "kicks 3 calls 4\n"						\
	ind "metamap-fast 60\n"

#define TXQ_STATS_TEXT(ind)						\
	ind "tx-packets 5000000000 tx-errors 0\n"			\
	ind "kicks 4\n"							\
	ind "zcopy-sent 4 zcopy-copied 5 zcopy-hol-stalls 6 zcopy-pending 0\n"

#define QUEUE0_TEXT "queue 0: type rx num 256 owner-busypoll-us 0 busypoll-us 50 metamap-valid yes"
#define QUEUE1_TEXT "queue 1: type tx num 256 owner-busypoll-us 20 busypoll-us 50 metamap-valid no"

static void test_print_show_text(void)
{
	struct fixture f;
	char *s;

	fixture_init(&f, true, 0);
	s = render(SHOW, &f.dev, 1, NULL, false, false);
	CHECK_STR(s, DEV_TEXT);
	free(s);

	fixture_init(&f, true, 1);
	s = render(SHOW, &f.dev, 1, &f.more, false, false);
	CHECK_STR(s, DEV_TEXT "    statistics:\n" DEV_STATS_TEXT("        "));
	free(s);

	fixture_init(&f, true, 2);
	s = render(SHOW, &f.dev, 1, &f.more, false, false);
	CHECK_STR(s, DEV_TEXT "    statistics:\n" DEV_STATS_TEXT("        ")
		  "    " QUEUE0_TEXT "\n" RXQ_STATS_TEXT("        ")
		  "    " QUEUE1_TEXT "\n" TXQ_STATS_TEXT("        "));
	free(s);

	/* unprivileged: no owner, no backend; nothing made up */
	fixture_init(&f, false, 0);
	s = render(SHOW, &f.dev, 1, NULL, false, false);
	CHECK_STR(s, "vhost3: type net\n"
		  "    features 0x0000000130000000 num-queues 2\n"
		  "    busypoll-us 50 zerocopy on zcopy-min-len 256 metamap off\n");
	free(s);

	/* a backend in another namespace; one whose interface is gone */
	fixture_init(&f, true, 0);
	f.dev._present.backend_netnsid = 1;
	f.dev.backend_netnsid = 2;
	f.dev._present.backend_ifname_len = 0;
	s = render(SHOW, &f.dev, 1, NULL, false, false);
	CHECK(s && !strncmp(s, "vhost3: type net owner-pid 1234 backend-ifindex 7 backend-netnsid 2\n",
			    strlen("vhost3: type net owner-pid 1234 backend-ifindex 7 backend-netnsid 2\n")));
	free(s);

	/* a type this tool does not know: its number */
	f.dev.type = 9;
	s = render(SHOW, &f.dev, 1, NULL, false, false);
	CHECK(s && !strncmp(s, "vhost3: type 9 ", 15));
	free(s);

	/* nothing to list: no output */
	s = render(SHOW, NULL, 0, NULL, false, false);
	CHECK_STR(s, "");
	free(s);
}

#define DEV_JSON_ATTRS							\
	"\"id\":3,\"name\":\"vhost3\",\"type\":\"net\",\"owner-pid\":1234," \
	"\"backend-ifindex\":7,\"backend-ifname\":\"tap0\","		\
	"\"features\":5100273664,\"num-queues\":2,\"admin-busypoll-us\":50," \
	"\"zerocopy\":1,\"zcopy-min-len\":256,\"metamap\":\"off\""

#define DEV_JSON_COUNTERS						\
	"\"rx-packets\":10,\"rx-bytes\":640,"				\
	"\"tx-packets\":5000000000,\"tx-bytes\":320000000000,"		\
	"\"kicks\":7,\"calls\":8,\"busypoll-loops\":1,\"busypoll-ns\":2," \
	"\"busypoll-found\":3,\"zcopy-sent\":4,\"zcopy-copied\":5,"	\
	"\"zcopy-pending\":0,\"zcopy-hol-stalls\":6,\"metamap-fast\":100," \
	"\"metamap-fallback\":2,\"metamap-invalidations\":1,"		\
	"\"metamap-remaps\":3,\"metamap-remap-failures\":0,"		\
	"\"metamap-refused\":9,\"tx-errors\":11,\"zcopy-fallback\":12,"	\
	"\"zcopy-backoff\":13,\"metamap-uaccess-fills\":14,"		\
	"\"used-entries\":15,\"zcopy-in-order\":16,\"metamap-poisoned\":17"

#define QUEUE0_JSON							\
	"\"dev-id\":3,\"index\":0,\"type\":\"rx\",\"num\":256,"		\
	"\"owner-busypoll-us\":0,\"busypoll-us\":50,\"metamap-valid\":1"
#define QUEUE1_JSON							\
	"\"dev-id\":3,\"index\":1,\"type\":\"tx\",\"num\":256,"		\
	"\"owner-busypoll-us\":20,\"busypoll-us\":50,\"metamap-valid\":0"
#define RXQ_JSON_COUNTERS						\
	"\"rx-packets\":10,\"rx-bytes\":640,\"kicks\":3,\"calls\":4,"	\
	"\"metamap-fast\":60"
#define TXQ_JSON_COUNTERS						\
	"\"tx-packets\":5000000000,\"kicks\":4,\"zcopy-sent\":4,"	\
	"\"zcopy-copied\":5,\"zcopy-pending\":0,\"zcopy-hol-stalls\":6," \
	"\"tx-errors\":0"

static void test_print_show_json(void)
{
	struct vhost_dev_get_rsp d[2];
	struct fixture f;
	char *s;

	fixture_init(&f, true, 0);
	s = render(SHOW, &f.dev, 1, NULL, true, false);
	CHECK_STR(s, "[{" DEV_JSON_ATTRS "}]\n");
	free(s);

	fixture_init(&f, true, 1);
	s = render(SHOW, &f.dev, 1, &f.more, true, false);
	CHECK_STR(s, "[{" DEV_JSON_ATTRS ",\"stats\":{" DEV_JSON_COUNTERS "}}]\n");
	free(s);

	fixture_init(&f, true, 2);
	s = render(SHOW, &f.dev, 1, &f.more, true, false);
	CHECK_STR(s, "[{" DEV_JSON_ATTRS ",\"stats\":{" DEV_JSON_COUNTERS
		  "},\"queues\":[{" QUEUE0_JSON ",\"stats\":{" RXQ_JSON_COUNTERS
		  "}},{" QUEUE1_JSON ",\"stats\":{" TXQ_JSON_COUNTERS "}}]}]\n");
	free(s);

	/* -s -s of a device with no queue statistics and no queues */
	f.more.queue_stats[1] = NULL;
	s = render(SHOW, &f.dev, 1, &f.more, true, false);
	CHECK(s && strstr(s, "{" QUEUE1_JSON "}]}]\n"));
	free(s);
	f.more.nqueues = 0;
	f.more.stats = NULL;
	s = render(SHOW, &f.dev, 1, &f.more, true, false);
	CHECK_STR(s, "[{" DEV_JSON_ATTRS ",\"queues\":[]}]\n");
	free(s);

	/* two devices, the second as an unprivileged user sees it */
	fixture_dev(&d[0], true);
	fixture_dev(&d[1], false);
	d[1].backend_netnsid = -1;	/* absent: not printed */
	s = render(SHOW, d, 2, NULL, true, false);
	CHECK_STR(s, "[{" DEV_JSON_ATTRS
		  "},{\"id\":3,\"name\":\"vhost3\",\"type\":\"net\",\"features\":5100273664,\"num-queues\":2,\"admin-busypoll-us\":50,\"zerocopy\":1,\"zcopy-min-len\":256,\"metamap\":\"off\"}]\n");
	free(s);
	d[0]._present.backend_netnsid = 1;
	d[0].backend_netnsid = -2;
	s = render(SHOW, d, 1, NULL, true, false);
	CHECK(s && strstr(s, "\"backend-ifname\":\"tap0\",\"backend-netnsid\":-2,\"features\""));
	free(s);

	s = render(SHOW, NULL, 0, NULL, true, false);
	CHECK_STR(s, "[]\n");
	free(s);
	s = render(SHOW, NULL, 0, NULL, true, true);
	CHECK_STR(s, "[]\n");
	free(s);
}

static void test_print_json_pretty(void)
{
	struct fixture f;
	char *s;

	fixture_init(&f, false, 2);
	f.more.stats = NULL;
	f.more.nqueues = 1;
	f.qstats[0] = (struct vhost_stats_get_rsp_dump){};	/* an empty object */
	s = render(SHOW, &f.dev, 1, &f.more, true, true);
	CHECK_STR(s,
		  "[\n"
		  "    {\n"
		  "        \"id\": 3,\n"
		  "        \"name\": \"vhost3\",\n"
		  "        \"type\": \"net\",\n"
		  "        \"features\": 5100273664,\n"
		  "        \"num-queues\": 2,\n"
		  "        \"admin-busypoll-us\": 50,\n"
		  "        \"zerocopy\": 1,\n"
		  "        \"zcopy-min-len\": 256,\n"
		  "        \"metamap\": \"off\",\n"
		  "        \"queues\": [\n"
		  "            {\n"
		  "                \"dev-id\": 3,\n"
		  "                \"index\": 0,\n"
		  "                \"type\": \"rx\",\n"
		  "                \"num\": 256,\n"
		  "                \"owner-busypoll-us\": 0,\n"
		  "                \"busypoll-us\": 50,\n"
		  "                \"metamap-valid\": 1,\n"
		  "                \"stats\": {}\n"
		  "            }\n"
		  "        ]\n"
		  "    }\n"
		  "]\n");
	free(s);
}

static void test_print_queues(void)
{
	struct vhost_queue_get_rsp q[2];
	char *s;

	fixture_queue(&q[0], 0);
	fixture_queue(&q[1], 1);
	s = render(QUEUES, q, 2, NULL, false, false);
	CHECK_STR(s, "vhost3 " QUEUE0_TEXT "\nvhost3 " QUEUE1_TEXT "\n");
	free(s);
	s = render(QUEUES, q, 2, NULL, true, false);
	CHECK_STR(s, "[{" QUEUE0_JSON "},{" QUEUE1_JSON "}]\n");
	free(s);
	/* a queue type from a newer kernel */
	q[0].type = 7;
	s = render(QUEUES, q, 1, NULL, true, false);
	CHECK(s && strstr(s, "\"type\":\"7\""));
	free(s);
}

/* Whitespace-separated words of s equal to w. */
static int count_word(const char *s, const char *w)
{
	size_t n = strlen(w);
	const char *p;
	int count = 0;

	for (p = s ? strstr(s, w) : NULL; p; p = strstr(p + 1, w))
		count += (p == s || p[-1] == ' ' || p[-1] == '\n') &&
			 (p[n] == ' ' || p[n] == '\n' || !p[n]);
	return count;
}

/* The word after the first word w of s ("" if none), in a static buffer. */
static const char *word_after(const char *s, const char *w)
{
	static char buf[64];
	size_t n = strlen(w);
	const char *p;

	buf[0] = '\0';
	for (p = s ? strstr(s, w) : NULL; p; p = strstr(p + 1, w)) {
		if ((p == s || p[-1] == ' ' || p[-1] == '\n') && p[n] == ' ') {
			if (sscanf(p + n + 1, "%63s", buf) != 1)
				buf[0] = '\0';
			break;
		}
	}
	return buf;
}

static void test_print_stats(void)
{
	struct vhost_stats_get_rsp_dump st[4];
	char *s;
	int i;

	/* device scope: a header and the counters of each device */
	fixture_stats(&st[0], -1);
	fixture_stats(&st[1], -1);
	st[1].dev_id = 4;
	s = render(STATS, st, 2, NULL, false, false);
	CHECK_STR(s, "vhost3:\n" DEV_STATS_TEXT("    ")
		  "vhost4:\n" DEV_STATS_TEXT("    "));
	free(s);
	s = render(STATS, st, 1, NULL, true, false);
	CHECK_STR(s, "[{\"dev-id\":3," DEV_JSON_COUNTERS "}]\n");
	free(s);

	/* queue scope: the queues under their device's header */
	fixture_stats(&st[0], 0);
	fixture_stats(&st[1], 1);
	fixture_stats(&st[2], 0);
	st[2].dev_id = 4;
	s = render(STATS, st, 3, NULL, false, false);
	CHECK_STR(s, "vhost3:\n"
		  "    queue 0: type rx\n" RXQ_STATS_TEXT("        ")
		  "    queue 1: type tx\n" TXQ_STATS_TEXT("        ")
		  "vhost4:\n"
		  "    queue 0: type rx\n" RXQ_STATS_TEXT("        "));
	free(s);
	s = render(STATS, st, 2, NULL, true, false);
	CHECK_STR(s, "[{\"dev-id\":3,\"queue-index\":0,\"queue-type\":\"rx\"," RXQ_JSON_COUNTERS
		  "},{\"dev-id\":3,\"queue-index\":1,\"queue-type\":\"tx\"," TXQ_JSON_COUNTERS
		  "}]\n");
	free(s);

	/* the text has each counter exactly once, followed by its value */
	memset(&st[3], 0, sizeof(st[3]));
	st[3]._present.dev_id = 1;
	for (i = VH_STATS_FIRST; i <= VHOST_A_STATS_MAX; i++)
		stat_set(&st[3], i, 900 + i);
	s = render(STATS, &st[3], 1, NULL, false, false);
	for (i = VH_STATS_FIRST; i <= VHOST_A_STATS_MAX; i++) {
		char value[16];

		snprintf(value, sizeof(value), "%d", 900 + i);
		if (count_word(s, vhost_stats_policy[i].name) != 1 ||
		    strcmp(word_after(s, vhost_stats_policy[i].name), value)) {
			printf("# counter %s: %d times, value \"%s\"\n",
			       vhost_stats_policy[i].name,
			       count_word(s, vhost_stats_policy[i].name),
			       word_after(s, vhost_stats_policy[i].name));
			failures++;
		}
	}
	CHECK(count_lines(s) == 6);
	free(s);
}

/* n replies chained as a dump returns them. */
static struct vhost_stats_get_rsp_list *
stats_list(struct vhost_stats_get_rsp_list *node, int n)
{
	int i;

	for (i = 0; i < n; i++)
		node[i].next = i + 1 < n ? &node[i + 1] : (void *)YNL_LIST_END;
	return n ? node : (void *)YNL_LIST_END;
}

static struct vhost_dev_get_list *dev_list(struct vhost_dev_get_list *node,
					   int n)
{
	int i;

	for (i = 0; i < n; i++)
		node[i].next = i + 1 < n ? &node[i + 1] : (void *)YNL_LIST_END;
	return n ? node : (void *)YNL_LIST_END;
}

static char *render_rates(struct vhost_stats_get_rsp_list *cur,
			  struct vhost_stats_get_rsp_list *prev,
			  double seconds, bool json, bool pretty)
{
	struct vh_opts opts = { .json = json, .pretty = pretty };
	struct vh_out o;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	vh_out_open(&o, f, &opts);
	vh_print_rates(&o, cur, prev, seconds);
	vh_out_close(&o);
	fclose(f);
	return buf;
}

static void test_rate(void)
{
	CHECK(vh_rate(10, 30, 2) == 10);
	CHECK(vh_rate(5, 5, 1) == 0);
	CHECK(vh_rate(0, 5000000000ull, 0.5) == 1e10);
	/* below the last value: reset, counted from 0 */
	CHECK(vh_rate(100, 6, 2) == 3);
	CHECK(vh_rate(1, 2, 0) == 0);
	CHECK(vh_stat_is_gauge(VHOST_A_STATS_ZCOPY_PENDING));
	CHECK(!vh_stat_is_gauge(VHOST_A_STATS_TX_PACKETS));
	CHECK(!vh_stat_is_gauge(VHOST_A_STATS_ZCOPY_IN_ORDER));
}

/* "stats -i": two dumps of vhost3's queues 2 s apart */
static void test_print_rates(void)
{
	struct vhost_stats_get_rsp_list p[2], c[4];
	struct vhost_stats_get_rsp_list *prev, *cur;
	char *s;

	fixture_stats(&p[0].obj, 0);
	fixture_stats(&p[1].obj, 1);
	prev = stats_list(p, 2);
	fixture_stats(&c[0].obj, 0);
	fixture_stats(&c[1].obj, 1);
	/* a queue and a device that were not there 2 s ago: no rate */
	fixture_stats(&c[2].obj, 0);
	c[2].obj.queue_index = 2;
	fixture_stats(&c[3].obj, 0);
	c[3].obj.dev_id = 4;
	cur = stats_list(c, 4);
	stat_set(&c[0].obj, VHOST_A_STATS_RX_PACKETS, 30);
	stat_set(&c[0].obj, VHOST_A_STATS_RX_BYTES, 1920);
	stat_set(&c[0].obj, VHOST_A_STATS_KICKS, 4);
	stat_set(&c[0].obj, VHOST_A_STATS_METAMAP_FAST, 61);
	stat_set(&c[1].obj, VHOST_A_STATS_TX_PACKETS, 5000000003ull);
	stat_set(&c[1].obj, VHOST_A_STATS_KICKS, 5);
	stat_set(&c[1].obj, VHOST_A_STATS_ZCOPY_SENT, 5);
	stat_set(&c[1].obj, VHOST_A_STATS_ZCOPY_PENDING, 7);	/* a gauge */
	s = render_rates(cur, prev, 2, false, false);
	CHECK_STR(s, "vhost3:\n"
		  "    queue 0: type rx\n"
		  "        rx-packets 10 rx-bytes 640\n"
		  "        kicks 0.5 calls 0\n"
		  "        metamap-fast 0.5\n"
		  "    queue 1: type tx\n"
		  "        tx-packets 1.5 tx-errors 0\n"
		  "        kicks 0.5\n"
		  "        zcopy-sent 0.5 zcopy-copied 0 zcopy-hol-stalls 0 zcopy-pending 7\n");
	free(s);
	s = render_rates(cur, prev, 2, true, false);
	CHECK_STR(s,
		  "[{\"dev-id\":3,\"queue-index\":0,\"queue-type\":\"rx\",\"rx-packets\":10,\"rx-bytes\":640,\"kicks\":0.5,\"calls\":0,\"metamap-fast\":0.5},{\"dev-id\":3,\"queue-index\":1,\"queue-type\":\"tx\",\"tx-packets\":1.5,\"kicks\":0.5,\"zcopy-sent\":0.5,\"zcopy-copied\":0,\"zcopy-pending\":7,\"zcopy-hol-stalls\":0,\"tx-errors\":0}]\n");
	free(s);

	/* two decimals at most, as Python prints them; a counter reset */
	stat_set(&c[0].obj, VHOST_A_STATS_RX_PACKETS, 11);	/* 1 in 3 s */
	stat_set(&c[0].obj, VHOST_A_STATS_RX_BYTES, 642);	/* 2 in 3 s */
	stat_set(&c[0].obj, VHOST_A_STATS_KICKS, 3 + 3000000);
	stat_set(&c[0].obj, VHOST_A_STATS_CALLS, 2);		/* was 4 */
	s = render_rates(cur, prev, 3, false, false);
	CHECK(s && !strncmp(s, "vhost3:\n    queue 0: type rx\n"
			    "        rx-packets 0.33 rx-bytes 0.67\n"
			    "        kicks 1000000 calls 0.67\n", 86));
	free(s);

	/* a counter the first dump did not have: no rate for it */
	p[0].obj._present.calls = 0;
	s = render_rates(cur, prev, 3, false, false);
	CHECK(s && strstr(s, "        kicks 1000000\n        metamap-fast"));
	free(s);

	/* nothing in common: an empty listing */
	s = render_rates(stats_list(c + 3, 1), prev, 1, true, false);
	CHECK_STR(s, "[]\n");
	free(s);
	s = render_rates(stats_list(c + 3, 1), prev, 1, false, false);
	CHECK_STR(s, "");
	free(s);
}

/* The HELP lines: the first sentence of each counter's doc in the spec. */
#define OM_FAMILY(name, type, help)					\
	"# HELP vhost_" name " " help "\n# TYPE vhost_" name " " type "\n"
#define HELP_RX_PACKETS	"Packets written into guest RX buffers."
#define HELP_ZCOPY_PENDING "TX packets sent zero-copy and not completed yet (a gauge)."
#define OM_Q0	"{backend_ifname=\"tap0\",queue_pair=\"0\",queue_index=\"0\",queue_type=\"rx\"}"
#define OM_Q1	"{backend_ifname=\"tap0\",queue_pair=\"0\",queue_index=\"1\",queue_type=\"tx\"}"

static __attribute__((noinline)) char *
render_metrics(struct vhost_stats_get_rsp_list *stats,
	       struct vhost_dev_get_list *devs, bool prometheus)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	vh_print_metrics(f, stats, devs, prometheus);
	fclose(f);
	return buf;
}

static char *render_openmetrics(struct vhost_stats_get_rsp_list *stats,
				struct vhost_dev_get_list *devs)
{
	return render_metrics(stats, devs, false);
}

/* The OpenMetrics of vhost3's device counters: every one, once, with help. */
static void check_families(const char *s)
{
	int i;

	/* three lines a family, one more for busy polling's unit, # EOF */
	CHECK(count_lines(s) == 3 * (VHOST_A_STATS_MAX - VH_STATS_FIRST + 1) + 2);
	CHECK(strstr(s, "# TYPE vhost_busypoll_seconds counter\n"
		     "# UNIT vhost_busypoll_seconds seconds\n"));
	for (i = VH_STATS_FIRST; i <= VHOST_A_STATS_MAX; i++) {
		const char *sample, *help;
		char want[160], name[64], val[32];
		int j;

		snprintf(name, sizeof(name), "%s", vhost_stats_policy[i].name);
		for (j = 0; name[j]; j++)
			name[j] = name[j] == '-' ? '_' : name[j];
		snprintf(val, sizeof(val), "%llu",
			 (unsigned long long)dev_counters[i]);
		/* in seconds: the nanoseconds with nine decimals */
		if (i == VHOST_A_STATS_BUSYPOLL_NS) {
			snprintf(name, sizeof(name), "busypoll_seconds");
			snprintf(val, sizeof(val), "%llu.%09llu",
				 (unsigned long long)dev_counters[i] / 1000000000,
				 (unsigned long long)dev_counters[i] % 1000000000);
		}
		snprintf(want, sizeof(want), "\nvhost_%s%s{name=\"vhost3\"} %s\n",
			 name, vh_stat_is_gauge(i) ? "" : "_total", val);
		sample = s ? strstr(s, want) : NULL;
		snprintf(want, sizeof(want), "# HELP vhost_%s ", name);
		help = s ? strstr(s, want) : NULL;
		/* the sample, after a HELP line with a text */
		if (!sample || !help || help > sample ||
		    help[strlen(want)] == '\n') {
			printf("# no family for %s\n", name);
			failures++;
		}
	}
}

static void test_print_openmetrics(void)
{
	struct vhost_stats_get_rsp_list st[3];
	struct vhost_dev_get_list d[3];
	char *s;
	int i;

	/* queue scope: a family per counter, samples labelled by queue */
	fixture_dev(&d[0].obj, true);
	fixture_stats(&st[0].obj, 0);
	fixture_stats(&st[1].obj, 1);
	s = render_openmetrics(stats_list(st, 2), dev_list(d, 1));
	CHECK_STR(s,
		  OM_FAMILY("rx_packets", "counter", HELP_RX_PACKETS)
		  "vhost_rx_packets_total" OM_Q0 " 10\n"
		  OM_FAMILY("rx_bytes", "counter",
			    "Bytes of those packets, virtio-net header excluded.")
		  "vhost_rx_bytes_total" OM_Q0 " 640\n"
		  OM_FAMILY("tx_packets", "counter",
			    "Packets taken from guest TX buffers and accepted by the backend (sent zero-copy or copied).")
		  "vhost_tx_packets_total" OM_Q1 " 5000000000\n"
		  OM_FAMILY("kicks", "counter",
			    "Guest kicks: writes to the queue's kick eventfd while vhost polls it, each counted as it arrives (also when the queue's work is already pending).")
		  "vhost_kicks_total" OM_Q0 " 3\n"
		  "vhost_kicks_total" OM_Q1 " 4\n"
		  OM_FAMILY("calls", "counter",
			    "Guest notifications (signals of the queue's call eventfd).")
		  "vhost_calls_total" OM_Q0 " 4\n"
		  OM_FAMILY("zcopy_sent", "counter",
			    "TX packets sent zero-copy whose transmission completed without their pages being copied; counted at completion.")
		  "vhost_zcopy_sent_total" OM_Q1 " 4\n"
		  OM_FAMILY("zcopy_copied", "counter",
			    "TX packets copied while zero-copy was on, being shorter than zcopy-min-len.")
		  "vhost_zcopy_copied_total" OM_Q1 " 5\n"
		  OM_FAMILY("zcopy_pending", "gauge", HELP_ZCOPY_PENDING)
		  "vhost_zcopy_pending" OM_Q1 " 0\n"
		  OM_FAMILY("zcopy_hol_stalls", "counter",
			    "TX packets copied while zero-copy was on because too many zero-copy buffers were pending (head-of-line blocking: buffers complete in order).")
		  "vhost_zcopy_hol_stalls_total" OM_Q1 " 6\n"
		  OM_FAMILY("metamap_fast", "counter",
			    "Ring accesses through the metadata direct map.")
		  "vhost_metamap_fast_total" OM_Q0 " 60\n"
		  OM_FAMILY("tx_errors", "counter",
			    "TX packets the backend refused, or that vhost-net dropped for a virtio-net header the backend would refuse (a checksum offset beyond the frame): returned to the guest unsent, not in tx-packets.")
		  "vhost_tx_errors_total" OM_Q1 " 0\n"
		  "# EOF\n");
	free(s);

	/*
	 * Device scope: label values escaped; a device without a backend
	 * (or an unprivileged view of it); one gone since the dump, by the
	 * name its id gives.
	 */
	d[0].obj.backend_ifname = (char *)"t\"a\\p\n";
	fixture_dev(&d[1].obj, false);
	d[1].obj.id = 5;
	d[1].obj.name = (char *)"vhost5";
	for (i = 0; i < 3; i++) {
		memset(&st[i].obj, 0, sizeof(st[i].obj));
		st[i].obj._present.dev_id = 1;
		st[i].obj.dev_id = 3 + i;
		stat_set(&st[i].obj, VHOST_A_STATS_RX_PACKETS, i);
	}
	stat_set(&st[0].obj, VHOST_A_STATS_ZCOPY_PENDING, 2);
	s = render_openmetrics(stats_list(st, 3), dev_list(d, 2));
	CHECK_STR(s,
		  OM_FAMILY("rx_packets", "counter", HELP_RX_PACKETS)
		  "vhost_rx_packets_total{backend_ifname=\"t\\\"a\\\\p\\n\",queue_pair=\"0\"} 0\n"
		  "vhost_rx_packets_total{name=\"vhost4\"} 1\n"
		  "vhost_rx_packets_total{name=\"vhost5\"} 2\n"
		  OM_FAMILY("zcopy_pending", "gauge", HELP_ZCOPY_PENDING)
		  "vhost_zcopy_pending{backend_ifname=\"t\\\"a\\\\p\\n\",queue_pair=\"0\"} 2\n"
		  "# EOF\n");
	free(s);

	/*
	 * What names a VM's device across its restarts: two devices of one
	 * multiqueue TAP, the queue pair each serves by id order, the label;
	 * a third with the same label on the same TAP and pair (only a
	 * made-up kernel has one) needs its name, as does its twin.
	 */
	for (i = 0; i < 3; i++) {
		fixture_dev(&d[i].obj, true);
		d[i].obj.id = 9 - i;
		d[i].obj._present.label_len = 5;
		d[i].obj.label = (char *)"web01";
		memset(&st[i].obj, 0, sizeof(st[i].obj));
		st[i].obj._present.dev_id = 1;
		st[i].obj.dev_id = 9 - i;
		stat_set(&st[i].obj, VHOST_A_STATS_RX_PACKETS, i);
	}
	d[0].obj.name = (char *)"vhost9";
	d[1].obj.name = (char *)"vhost8";
	s = render_openmetrics(stats_list(st, 2), dev_list(d, 2));
	CHECK_STR(s,
		  OM_FAMILY("rx_packets", "counter", HELP_RX_PACKETS)
		  "vhost_rx_packets_total{label=\"web01\",backend_ifname=\"tap0\",queue_pair=\"1\"} 0\n"
		  "vhost_rx_packets_total{label=\"web01\",backend_ifname=\"tap0\",queue_pair=\"0\"} 1\n"
		  "# EOF\n");
	free(s);
	d[2].obj.id = 8;
	d[2].obj.name = (char *)"vhost8b";
	s = render_openmetrics(stats_list(st, 2), dev_list(d, 3));
	CHECK(s && strstr(s, "vhost_rx_packets_total{label=\"web01\",backend_ifname=\"tap0\",queue_pair=\"2\"} 0\n"));
	CHECK(s && strstr(s, "vhost_rx_packets_total{name=\"vhost8\",label=\"web01\",backend_ifname=\"tap0\",queue_pair=\"0\"} 1\n"));
	free(s);

	/*
	 * Prometheus's text format, for node_exporter's textfile collector:
	 * TYPE and HELP name the samples, no UNIT, no # EOF; busy polling in
	 * seconds.
	 */
	memset(&st[0].obj, 0, sizeof(st[0].obj));
	st[0].obj._present.dev_id = 1;
	st[0].obj.dev_id = 3;
	stat_set(&st[0].obj, VHOST_A_STATS_RX_PACKETS, 7);
	stat_set(&st[0].obj, VHOST_A_STATS_BUSYPOLL_NS, 1500000000);
	stat_set(&st[0].obj, VHOST_A_STATS_ZCOPY_PENDING, 2);
	s = render_metrics(stats_list(st, 1), dev_list(d, 0), true);
	CHECK_STR(s,
		  "# HELP vhost_rx_packets_total " HELP_RX_PACKETS "\n"
		  "# TYPE vhost_rx_packets_total counter\n"
		  "vhost_rx_packets_total{name=\"vhost3\"} 7\n"
		  "# HELP vhost_busypoll_seconds_total Seconds spent in busy-poll loops.\n"
		  "# TYPE vhost_busypoll_seconds_total counter\n"
		  "vhost_busypoll_seconds_total{name=\"vhost3\"} 1.500000000\n"
		  "# HELP vhost_zcopy_pending " HELP_ZCOPY_PENDING "\n"
		  "# TYPE vhost_zcopy_pending gauge\n"
		  "vhost_zcopy_pending{name=\"vhost3\"} 2\n");
	free(s);

	/* every counter of the spec: a family each, with its help */
	fixture_stats(&st[0].obj, -1);
	s = render_openmetrics(stats_list(st, 1), dev_list(d, 0));
	check_families(s);
	free(s);

	/* nothing: the end alone */
	s = render_openmetrics(stats_list(st, 0), dev_list(d, 0));
	CHECK_STR(s, "# EOF\n");
	free(s);
}

static void test_json_escape(void)
{
	struct vhost_dev_get_rsp d;
	char *s;

	memset(&d, 0, sizeof(d));
	d._present.name_len = 6;
	d.name = (char *)"vhost9";
	d._present.backend_ifname_len = 7;
	d.backend_ifname = (char *)"a\"b\\c\x01";
	s = render(SHOW, &d, 1, NULL, true, false);
	CHECK_STR(s, "[{\"name\":\"vhost9\",\"backend-ifname\":\"a\\\"b\\\\c\\u0001\"}]\n");
	free(s);
}

static void test_print_event(void)
{
	struct vhost_dev_get_rsp d;
	char *s;

	/* notifications carry the backend, never the owner */
	fixture_dev(&d, true);
	d._present.owner_pid = 0;
	s = render_event(&d, VH_EV_CHANGE, false);
	CHECK_STR(s,
		  "[change] vhost3: type net backend-ifname tap0 backend-ifindex 7 features 0x0000000130000000 num-queues 2 busypoll-us 50 zerocopy on zcopy-min-len 256 metamap off\n");
	free(s);
	s = render_event(&d, VH_EV_ADD, true);
	CHECK_STR(s,
		  "{\"event\":\"add\",\"id\":3,\"name\":\"vhost3\",\"type\":\"net\",\"backend-ifindex\":7,\"backend-ifname\":\"tap0\",\"features\":5100273664,\"num-queues\":2,\"admin-busypoll-us\":50,\"zerocopy\":1,\"zcopy-min-len\":256,\"metamap\":\"off\"}\n");
	CHECK(count_lines(s) == 1);
	free(s);

	memset(&d, 0, sizeof(d));
	d._present.id = 1;
	d.id = 3;
	d._present.name_len = 6;
	d.name = (char *)"vhost3";
	d._present.type = 1;
	d.type = VHOST_DEV_TYPE_NET;
	s = render_event(&d, VH_EV_DEL, false);
	CHECK_STR(s, "[del] vhost3: type net\n");
	free(s);
	s = render_event(&d, VH_EV_DEL, true);
	CHECK_STR(s, "{\"event\":\"del\",\"id\":3,\"name\":\"vhost3\",\"type\":\"net\"}\n");
	free(s);
}

/* monitor -t: RFC 3339, local time with its offset, microseconds */
static void test_timestamps(void)
{
	struct timespec ts = { .tv_sec = 1732615200, .tv_nsec = 123456789 };
	struct vhost_dev_get_rsp d;
	char buf[64], *s;

	setenv("TZ", "UTC", 1);
	tzset();
	vh_timestamp_format(&ts, buf, sizeof(buf));
	CHECK_STR(buf, "2024-11-26T10:00:00.123456+00:00");
	ts.tv_nsec = 999;
	vh_timestamp_format(&ts, buf, sizeof(buf));
	CHECK_STR(buf, "2024-11-26T10:00:00.000000+00:00");
	setenv("TZ", "<-0330>3:30", 1);
	tzset();
	vh_timestamp_format(&ts, buf, sizeof(buf));
	CHECK_STR(buf, "2024-11-26T06:30:00.000000-03:30");
	setenv("TZ", "UTC", 1);
	tzset();

	memset(&d, 0, sizeof(d));
	d._present.name_len = 6;
	d.name = (char *)"vhost3";
	d._present.type = 1;
	d.type = VHOST_DEV_TYPE_NET;
	ts.tv_nsec = 5000;
	s = render_event_at(&d, VH_EV_DEL, false, &ts);
	CHECK_STR(s, "[2024-11-26T10:00:00.000005+00:00] [del] vhost3: type net\n");
	free(s);
	s = render_event_at(&d, VH_EV_ADD, true, &ts);
	CHECK_STR(s,
		  "{\"timestamp\":\"2024-11-26T10:00:00.000005+00:00\",\"event\":\"add\",\"name\":\"vhost3\",\"type\":\"net\"}\n");
	free(s);
	unsetenv("TZ");
	tzset();
}

static char *render_policy(const struct vhost_policy_get_rsp *p, bool json,
			   bool pretty)
{
	struct vh_opts opts = { .json = json, .pretty = pretty };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	vh_print_policy(f, &opts, p);
	fclose(f);
	return buf;
}

static void test_print_policy(void)
{
	struct vhost_policy_get_rsp p;
	char *s;

	memset(&p, 0, sizeof(p));
	p._present.grants = 1;
	p.grants = VHOST_TUNABLE_ADMIN_BUSYPOLL_US | VHOST_TUNABLE_ZEROCOPY;
	p._present.busypoll_us_max = 1;
	p.busypoll_us_max = 50;
	p._present.tenant = 1;
	p.tenant = 1;
	/* text: the words of "policy set"; JSON: the spec's names */
	s = render_policy(&p, false, false);
	CHECK_STR(s, "grant busypoll-us,zerocopy busypoll-us-max 50 tenant yes\n");
	free(s);
	s = render_policy(&p, true, false);
	CHECK_STR(s,
		  "{\"grants\":[\"admin-busypoll-us\",\"zerocopy\"],\"busypoll-us-max\":50,\"tenant\":1}\n");
	free(s);
	s = render_policy(&p, true, true);
	CHECK_STR(s, "{\n    \"grants\": [\n        \"admin-busypoll-us\",\n"
		  "        \"zerocopy\"\n    ],\n    \"busypoll-us-max\": 50,\n"
		  "    \"tenant\": 1\n}\n");
	free(s);

	/* the default, in a namespace of the host's: nothing granted */
	p.grants = 0;
	p.busypoll_us_max = 0;
	p.tenant = 0;
	s = render_policy(&p, false, false);
	CHECK_STR(s, "grant none busypoll-us-max 0 tenant no\n");
	free(s);
	s = render_policy(&p, true, false);
	CHECK_STR(s, "{\"grants\":[],\"busypoll-us-max\":0,\"tenant\":0}\n");
	free(s);
	s = render_policy(&p, true, true);
	CHECK_STR(s, "{\n    \"grants\": [],\n    \"busypoll-us-max\": 0,\n"
		  "    \"tenant\": 0\n}\n");
	free(s);

	/* everything, and a tunable of a newer kernel by its bit */
	p.grants = 0xf | 0x40;
	s = render_policy(&p, false, false);
	CHECK_STR(s,
		  "grant busypoll-us,zerocopy,zcopy-min-len,metamap,64 busypoll-us-max 0 tenant no\n");
	free(s);
	s = render_policy(&p, true, false);
	CHECK_STR(s,
		  "{\"grants\":[\"admin-busypoll-us\",\"zerocopy\",\"zcopy-min-len\",\"metamap\",\"64\"],\"busypoll-us-max\":0,\"tenant\":0}\n");
	free(s);

	/* what the kernel did not send is not printed */
	memset(&p, 0, sizeof(p));
	p._present.tenant = 1;
	p.tenant = 1;
	s = render_policy(&p, false, false);
	CHECK_STR(s, "tenant yes\n");
	free(s);
	s = render_policy(&p, true, false);
	CHECK_STR(s, "{\"tenant\":1}\n");
	free(s);

	CHECK_STR(vhost_policy_policy[VHOST_A_POLICY_GRANTS].name, "grants");
	CHECK_STR(vhost_policy_policy[VHOST_A_POLICY_BUSYPOLL_US_MAX].name,
		  "busypoll-us-max");
	CHECK_STR(vhost_policy_policy[VHOST_A_POLICY_TENANT].name, "tenant");
	CHECK_STR(vhost_tunable_str(VHOST_TUNABLE_ADMIN_BUSYPOLL_US),
		  "admin-busypoll-us");
	CHECK_STR(vhost_tunable_str(VHOST_TUNABLE_METAMAP), "metamap");
}

/* ---- errors: what the generated library makes of the kernel's answer ---- */

/*
 * A ynl socket whose "kernel" is the other end of a socket pair: the
 * replies are queued there before the request is made.  Built like
 * ynl_sock_create() builds one, minus the family lookup.
 */
struct fake {
	struct ynl_sock *ys;
	int peer;
};

static int fake_open(struct fake *f)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, sv))
		return -1;
	f->ys = calloc(1, sizeof(*f->ys) + 2 * YNL_SOCKET_BUFFER_SIZE);
	if (!f->ys)
		return -1;
	f->ys->family = &ynl_vhost_family;
	f->ys->socket = sv[0];
	f->ys->family_id = 0x20;
	f->ys->tx_buf = &f->ys->raw_buf[0];
	f->ys->rx_buf = &f->ys->raw_buf[YNL_SOCKET_BUFFER_SIZE];
	f->ys->ntf_last_next = &f->ys->ntf_first;
	f->peer = sv[1];
	return 0;
}

static void fake_close(struct fake *f)
{
	close(f->peer);
	ynl_sock_destroy(f->ys);
}

static void put_attr(char *buf, size_t *off, int type, const void *data,
		     size_t len)
{
	struct nlattr *a = (struct nlattr *)(buf + *off);

	a->nla_type = type;
	a->nla_len = NLA_HDRLEN + len;
	memcpy(buf + *off + NLA_HDRLEN, data, len);
	*off += NLA_ALIGN(a->nla_len);
}

/*
 * Queue an NLMSG_ERROR (capped, as NETLINK_CAP_ACK asks) with the given
 * message (or NULL) and the offset of the bad attribute in the request (0:
 * none); type NLMSG_DONE instead for the end of a failed dump.
 */
static void fake_error(struct fake *f, int type, int error, const char *msg,
		       uint32_t offs)
{
	static char buf[512];
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	size_t off;

	memset(buf, 0, sizeof(buf));
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_CAPPED;
	if (type == NLMSG_ERROR) {
		struct nlmsgerr *e = NLMSG_DATA(nlh);

		e->error = -error;
		off = NLMSG_HDRLEN + sizeof(*e);
	} else {
		int err = -error;

		nlh->nlmsg_flags = NLM_F_MULTI;
		memcpy(NLMSG_DATA(nlh), &err, sizeof(err));
		off = NLMSG_HDRLEN + sizeof(err);
	}
	if (msg)
		put_attr(buf, &off, NLMSGERR_ATTR_MSG, msg, strlen(msg) + 1);
	if (offs)
		put_attr(buf, &off, NLMSGERR_ATTR_OFFS, &offs, sizeof(offs));
	if (msg || offs)
		nlh->nlmsg_flags |= NLM_F_ACK_TLVS;
	nlh->nlmsg_len = off;
	if (send(f->peer, buf, off, 0) < 0)
		printf("# fake send: %s\n", strerror(errno));
}

/* vhostctl set ARGS against the fake: the message vhostctl would print. */
static void fake_set(struct fake *f, const char *line, char *out, size_t len)
{
	struct vhost_dev_set_req *s;
	struct vh_opts o;
	struct vh_req r;
	int ret;

	out[0] = '\0';
	s = parse(line, &o, &r) ? NULL : vh_dev_set_req(&r.sel, &r.set);
	if (!s) {
		snprintf(out, len, "(parse failed: %s)", r.err);
		return;
	}
	ret = vhost_dev_set(f->ys, s);
	if (ret)
		vh_err_format(&f->ys->err, r.sel.name, out, len);
	else if (!vh_warn_format(&f->ys->err, out, len))
		snprintf(out, len, "(ok)");
	vhost_dev_set_req_free(s);
}

/* vhostctl set policy ARGS against the fake, as fake_set(). */
static void fake_policy_set(struct fake *f, const char *line, char *out,
			    size_t len)
{
	struct vhost_policy_set_req *ps;
	struct vh_opts o;
	struct vh_req r;

	out[0] = '\0';
	ps = parse(line, &o, &r) ? NULL : vh_policy_set_req(&r.policy);
	if (!ps) {
		snprintf(out, len, "(parse failed: %s)", r.err);
		return;
	}
	if (vhost_policy_set(f->ys, ps))
		vh_err_format(&f->ys->err, NULL, out, len);
	else if (!vh_warn_format(&f->ys->err, out, len))
		snprintf(out, len, "(ok)");
	vhost_policy_set_req_free(ps);
}

/* nlmsghdr + genlmsghdr, then the name "vhost0" (12 bytes with its header) */
#define OFFS_AFTER_NAME	(NLMSG_HDRLEN + GENL_HDRLEN + NLA_ALIGN(NLA_HDRLEN + 7))

static void test_errors(void)
{
	char out[600];
	struct fake f;

	if (fake_open(&f)) {
		printf("# no socket pair: %s\n", strerror(errno));
		failures++;
		return;
	}
	/* a policy error: message and bad attribute, iproute2 prints the message */
	fake_error(&f, NLMSG_ERROR, ERANGE, "integer out of range",
		   OFFS_AFTER_NAME);
	fake_set(&f, "set dev vhost0 busypoll-us 2000000", out, sizeof(out));
	CHECK_STR(f.ys->err.msg,
		  "Kernel error: 'integer out of range' (bad attribute: .admin-busypoll-us)");
	CHECK(f.ys->err.code == ERANGE);
	/* named by vhostctl's keyword, with the spec's bounds */
	CHECK_STR(out, "Error: integer out of range (busypoll-us: 0 to 1000000).");
	fake_error(&f, NLMSG_ERROR, ERANGE, "integer out of range",
		   OFFS_AFTER_NAME);
	fake_set(&f, "set dev vhost0 zcopy-min-len 70000", out, sizeof(out));
	CHECK_STR(out, "Error: integer out of range (zcopy-min-len: 256 to 65536).");

	/* the device is not there: the kernel's words */
	fake_error(&f, NLMSG_ERROR, ENODEV, "device not found", NLMSG_HDRLEN + GENL_HDRLEN);
	fake_set(&f, "set dev tap9 metamap on", out, sizeof(out));
	CHECK_STR(out, "Error: device not found.");

	/* no CAP_NET_ADMIN */
	fake_error(&f, NLMSG_ERROR, EPERM,
		   "CAP_NET_ADMIN over the network namespace required", 0);
	fake_set(&f, "set dev vhost0 busypoll-us 5", out, sizeof(out));
	CHECK_STR(out, "Error: CAP_NET_ADMIN over the network namespace required.");

	/* a message with a quote and its own final period */
	fake_error(&f, NLMSG_ERROR, EINVAL, "can't do 'that'.", 0);
	fake_set(&f, "set dev vhost0 busypoll-us 5", out, sizeof(out));
	CHECK_STR(out, "Error: can't do 'that'.");

	/* a bad attribute without a message */
	fake_error(&f, NLMSG_ERROR, EINVAL, NULL, OFFS_AFTER_NAME);
	fake_set(&f, "set dev vhost0 zcopy-min-len 0", out, sizeof(out));
	CHECK_STR(out, "Error: Invalid argument (bad attribute: zcopy-min-len).");

	/* no extended ACK at all: from the errno */
	fake_error(&f, NLMSG_ERROR, EPERM, NULL, 0);
	fake_set(&f, "set dev vhost0 busypoll-us 5", out, sizeof(out));
	CHECK_STR(out, "Error: Operation not permitted.");
	fake_error(&f, NLMSG_ERROR, ENODEV, NULL, 0);
	fake_set(&f, "set dev vhost9 busypoll-us 5", out, sizeof(out));
	CHECK_STR(out, "Cannot find device \"vhost9\"");

	/* an ACK: silent, or the kernel's warning */
	fake_error(&f, NLMSG_ERROR, 0, NULL, 0);
	fake_set(&f, "set dev vhost0 busypoll-us 5", out, sizeof(out));
	CHECK_STR(out, "(ok)");
	fake_error(&f, NLMSG_ERROR, 0, "busy polling is off", 0);
	fake_set(&f, "set dev vhost0 busypoll-us 5", out, sizeof(out));
	CHECK_STR(out, "Warning: busy polling is off.");

	/* a tenant's refusals by the host's policy, quotes and all */
	fake_error(&f, NLMSG_ERROR, EPERM,
		   "zerocopy not granted to this network namespace by the host's vhost policy",
		   OFFS_AFTER_NAME);
	fake_set(&f, "set dev vhost0 zerocopy on", out, sizeof(out));
	CHECK_STR(out,
		  "Error: zerocopy not granted to this network namespace by the host's vhost policy.");
	fake_error(&f, NLMSG_ERROR, EPERM,
		   "admin-busypoll-us above 50, the bound of the host's vhost policy here",
		   OFFS_AFTER_NAME);
	fake_set(&f, "set dev vhost0 busypoll-us 100", out, sizeof(out));
	CHECK_STR(out,
		  "Error: admin-busypoll-us above 50, the bound of the host's vhost policy here.");
	/* uns-admin-perm: the genetlink core refuses, without a message */
	fake_error(&f, NLMSG_ERROR, EPERM, NULL, 0);
	fake_set(&f, "set dev vhost0 zerocopy on", out, sizeof(out));
	CHECK_STR(out, "Error: Operation not permitted.");

	/* policy-set where no policy applies, and without anything to set */
	fake_error(&f, NLMSG_ERROR, EINVAL,
		   "this network namespace is administered from the initial user namespace: no vhost policy applies",
		   0);
	fake_policy_set(&f, "set policy grant zerocopy", out, sizeof(out));
	CHECK_STR(out,
		  "Error: this network namespace is administered from the initial user namespace: no vhost policy applies.");
	fake_error(&f, NLMSG_ERROR, ERANGE, "integer out of range",
		   NLMSG_HDRLEN + GENL_HDRLEN);
	fake_policy_set(&f, "set policy busypoll-us-max 1000001", out, sizeof(out));
	CHECK_STR(f.ys->err.msg,
		  "Kernel error: 'integer out of range' (bad attribute: .busypoll-us-max)");
	CHECK_STR(out, "Error: integer out of range (busypoll-us-max: 0 to 1000000).");
	fake_error(&f, NLMSG_ERROR, 0, NULL, 0);
	fake_policy_set(&f, "set policy grant none", out, sizeof(out));
	CHECK_STR(out, "(ok)");

	/* a dump that ends in an error */
	{
		struct vhost_stats_get_req_dump *req;
		struct vhost_stats_get_rsp_list *l;
		uint32_t id = 9;

		fake_error(&f, NLMSG_DONE, ENODEV, "device not found",
			   NLMSG_HDRLEN + GENL_HDRLEN);
		req = vh_stats_dump_req(&id, true);
		l = req ? vhost_stats_get_dump(f.ys, req) : NULL;
		CHECK(!l);
		vh_err_format(&f.ys->err, "vhost9", out, sizeof(out));
		CHECK_STR(out, "Error: device not found.");
		if (req)
			vhost_stats_get_req_dump_free(req);
	}
	fake_close(&f);
}

static void test_error_strings(void)
{
	struct ynl_error e = { .code = EINVAL };
	char out[600];

	/* the library's own errors */
	e.code = YNL_ERROR_DUMP_INTER;
	snprintf(e.msg, sizeof(e.msg), "%s", "Dump interrupted / inconsistent, please retry.");
	vh_err_format(&e, NULL, out, sizeof(out));
	CHECK_STR(out, "Error: Dump interrupted / inconsistent, please retry.");
	e.code = YNL_ERROR_ATTR_INVALID;
	snprintf(e.msg, sizeof(e.msg), "%s", "Invalid attribute (u32 zerocopy)");
	vh_err_format(&e, NULL, out, sizeof(out));
	CHECK_STR(out, "Error: Invalid attribute (u32 zerocopy).");

	/* both a bad and a missing attribute */
	e.code = EINVAL;
	snprintf(e.msg, sizeof(e.msg), "%s",
		 "Kernel error: 'no (good)' (bad attribute: .id, missing attribute: .name)");
	vh_err_format(&e, NULL, out, sizeof(out));
	CHECK_STR(out, "Error: no (good).");
	snprintf(e.msg, sizeof(e.msg), "%s", "Kernel error: missing attribute: .index");
	vh_err_format(&e, NULL, out, sizeof(out));
	CHECK_STR(out, "Error: Invalid argument (missing attribute: index).");
	CHECK(!vh_warn_format(&e, out, sizeof(out)));

	/* the socket */
	e.code = ENOENT;
	snprintf(e.msg, sizeof(e.msg), "%s",
		 "failed to receive the socket family info - no such family?");
	vh_sock_err_format(&e, out, sizeof(out));
	CHECK_STR(out,
		  "Error: the kernel has no \"vhost\" generic netlink family (no vhost admin plane in this kernel, or the vhost_admin module is not loaded).");
	e.code = EPROTONOSUPPORT;
	snprintf(e.msg, sizeof(e.msg), "%s", "failed to create a netlink socket");
	vh_sock_err_format(&e, out, sizeof(out));
	CHECK_STR(out,
		  "Error: cannot open the \"vhost\" generic netlink family: failed to create a netlink socket (Protocol not supported).");
}

static void test_usage(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	vh_usage(f, VH_HELP_MAIN);
	fclose(f);
	/* the grammar the man page and the completion rely on */
	CHECK(strstr(buf, "vhostctl [ OPTIONS ] OBJECT { COMMAND | help }"));
	CHECK(strstr(buf, "vhostctl dev set [ dev ] DEV [ busypoll-us USEC ] [ zerocopy { on | off } ]"));
	CHECK(strstr(buf, "[ zcopy-min-len BYTES ] [ metamap { off | batch | map } ]"));
	CHECK(strstr(buf, "vhostctl dev stats [ [ dev ] DEV ] [ scope { device | queue } ]"));
	CHECK(strstr(buf, "vhostctl queue show [ [ dev ] DEV [ index N ] ]"));
	CHECK(strstr(buf, "DEV := { ID | vhostN | IFNAME"));
	CHECK(strstr(buf, "OBJECT := { dev | queue | policy }"));
	CHECK(strstr(buf, "-n NETNS | --netns NETNS"));
	CHECK(strstr(buf, "vhostctl policy show\n"));
	CHECK(strstr(buf, "vhostctl policy set [ grant GRANTS ] [ busypoll-us-max USEC ]"));
	CHECK(strstr(buf, "GRANTS := { none | all | TUNABLE[,TUNABLE...] }"));
	CHECK(strstr(buf, "TUNABLE := { busypoll-us | zerocopy | zcopy-min-len | metamap | label }"));
	free(buf);

	/* each object's help: its own usage only */
	buf = NULL;
	f = open_memstream(&buf, &len);
	vh_usage(f, VH_HELP_POLICY);
	fclose(f);
	CHECK(!strncmp(buf, "Usage: vhostctl policy show\n", 28));
	CHECK(!strstr(buf, "dev show") && !strstr(buf, "queue show") &&
	      !strstr(buf, "DEV :="));
	free(buf);
	buf = NULL;
	f = open_memstream(&buf, &len);
	vh_usage(f, VH_HELP_DEV);
	fclose(f);
	CHECK(!strstr(buf, "policy") && !strstr(buf, "queue show"));
	free(buf);
}

/* ---- status ------------------------------------------------------------ */

/*
 * A made-up host for status: a sysfs tree under a temporary directory and
 * the files modprobe would load.  pkg: the package is built for this
 * kernel (its files under updates/dkms, srcversion P-name); otherwise the
 * kernel's own (K-name).
 */
struct fake_host {
	char dir[64];
	bool pkg;
	bool builtin;		/* no module files: all built in */
};

static void fake_lookup(void *arg, const char *name, char *file,
			size_t file_len, char *srcversion, size_t srcversion_len)
{
	struct fake_host *h = arg;
	bool ours = !strncmp(name, "vhost_metamap", 13) ||
		    !strncmp(name, "vhost_admin", 11);

	if ((!h->pkg && ours) || h->builtin)
		return;
	snprintf(file, file_len, "/lib/modules/6.12.57+deb13-amd64/%s/%s.ko.xz",
		 h->pkg ? "updates/dkms" : "kernel/drivers/vhost", name);
	snprintf(srcversion, srcversion_len, "%c-%s", h->pkg ? 'P' : 'K', name);
}

/* name loaded as a module of srcversion src, or built in (src NULL). */
static void fake_module(struct fake_host *h, const char *name, const char *src)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "mkdir -p %s/module/%s/parameters", h->dir,
		 name);
	CHECK(!system(path));
	if (!src)
		return;
	snprintf(path, sizeof(path), "%s/module/%s/initstate", h->dir, name);
	f = fopen(path, "w");
	CHECK(f && fputs("live\n", f) >= 0);
	if (f)
		fclose(f);
	snprintf(path, sizeof(path), "%s/module/%s/srcversion", h->dir, name);
	f = fopen(path, "w");
	CHECK(f && fprintf(f, "%s\n", src) > 0);
	if (f)
		fclose(f);
}

static void fake_reset(struct fake_host *h, bool pkg)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf %s/module", h->dir);
	CHECK(!system(cmd));
	h->pkg = pkg;
}

static char *status_text(struct fake_host *h, struct vh_status *st,
			 const struct vh_opts *opts)
{
	struct vh_status_devs devs = { .known = true, .total = 3,
				       .by_mode = { 1, 0, 2 } };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	memset(st, 0, sizeof(*st));
	snprintf(st->kernel, sizeof(st->kernel), "6.12.57+deb13-amd64");
	vh_status_collect(st, h->dir, fake_lookup, h);
	vh_print_status(f, opts, st, &devs);
	fclose(f);
	return buf;
}

static void test_status(void)
{
	struct fake_host h = { .dir = "/tmp/vhostctl-status-XXXXXX" };
	struct vh_opts text = {}, json = { .json = true },
		       om = { .openmetrics = true };
	static const char *const pkg_mods[] = {
		"vhost", "vhost_iotlb", "vhost_net", "tun", "vhost_metamap",
		"vhost_admin",
	};
	struct vh_status st;
	char src[64], cmd[96], *out;
	unsigned int i;

	CHECK(mkdtemp(h.dir));

	/* the package's modules loaded: active */
	fake_reset(&h, true);
	for (i = 0; i < ARRAY_SIZE(pkg_mods); i++) {
		snprintf(src, sizeof(src), "P-%s", pkg_mods[i]);
		fake_module(&h, pkg_mods[i], src);
	}
	out = status_text(&h, &st, &text);
	CHECK(st.state == VH_STATE_ACTIVE);
	CHECK(strstr(out, "state active: the package's modules are loaded\n"));
	CHECK(strstr(out, "module vhost_net loaded from package srcversion P-vhost_net file /lib/modules/6.12.57+deb13-amd64/updates/dkms/vhost_net.ko.xz\n"));
	CHECK(strstr(out, "module vhost_vsock not loaded file "));
	CHECK(strstr(out, "devices 3 metamap off 1 map 0 batch 2\n"));
	free(out);
	out = status_text(&h, &st, &json);
	CHECK(strstr(out, "{\"state\":\"active\","));
	CHECK(strstr(out, "{\"name\":\"vhost_net\",\"loaded\":\"yes\",\"from\":\"package\",\"srcversion\":\"P-vhost_net\",\"file\":\"/lib/modules/6.12.57+deb13-amd64/updates/dkms/vhost_net.ko.xz\",\"file-srcversion\":\"P-vhost_net\"}"));
	CHECK(strstr(out, "\"devices\":3,\"devices-by-metamap\":{\"off\":1,\"map\":0,\"batch\":2}"));
	free(out);
	out = status_text(&h, &st, &om);
	CHECK(strstr(out, "# TYPE vhost_status info\nvhost_status_info{state=\"active\",kernel=\"6.12.57+deb13-amd64\",metamap_default=\"\"} 1\n"));
	CHECK(strstr(out, "vhost_devices{metamap=\"batch\"} 2\n# EOF\n"));
	free(out);

	/* the kernel's own vhost_net, loaded before the package: inactive */
	fake_reset(&h, true);
	fake_module(&h, "vhost", "K-vhost");
	fake_module(&h, "vhost_net", "K-vhost_net");
	out = status_text(&h, &st, &text);
	CHECK(st.state == VH_STATE_INACTIVE);
	CHECK(strstr(out, "state inactive: vhost is loaded but is not the package's (srcversion K-vhost, /lib/modules/6.12.57+deb13-amd64/updates/dkms/vhost.ko.xz has P-vhost): stop the guests and reload the modules\n"));
	CHECK(strstr(out, "module vhost_net loaded from other srcversion K-vhost_net"));
	free(out);

	/* nothing loaded, the package built for this kernel: ready */
	fake_reset(&h, true);
	out = status_text(&h, &st, &text);
	CHECK(st.state == VH_STATE_READY);
	free(out);

	/* a kernel the package was not built for, its vhost_net loaded */
	fake_reset(&h, false);
	fake_module(&h, "vhost", "K-vhost");
	fake_module(&h, "vhost_net", "K-vhost_net");
	fake_module(&h, "tun", "K-tun");
	out = status_text(&h, &st, &text);
	CHECK(st.state == VH_STATE_INACTIVE);
	CHECK(strstr(out, "state inactive: vhost is the kernel's own: the package is not built for this kernel"));
	CHECK(strstr(out, "module tun loaded from kernel srcversion K-tun"));
	free(out);
	/* ... and nothing loaded yet */
	fake_reset(&h, false);
	out = status_text(&h, &st, &text);
	CHECK(st.state == VH_STATE_INACTIVE);
	CHECK(strstr(out, "state inactive: the package is not built for this kernel"));
	free(out);

	/* built into the kernel (the test kernels): active */
	fake_reset(&h, false);
	h.builtin = true;
	for (i = 0; i < ARRAY_SIZE(pkg_mods); i++)
		fake_module(&h, pkg_mods[i], NULL);
	out = status_text(&h, &st, &text);
	CHECK(st.state == VH_STATE_ACTIVE);
	CHECK(strstr(out, "state active: built into the kernel\n"));
	CHECK(strstr(out, "module vhost_net built-in\n"));
	free(out);

	snprintf(cmd, sizeof(cmd), "rm -rf %s", h.dir);
	CHECK(!system(cmd));
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "parse_card_command", test_parse_card },
	{ "parse_set_forms", test_parse_set_forms },
	{ "parse_device_selectors", test_parse_selectors },
	{ "parse_owner_label", test_parse_owner_label },
	{ "parse_defaults", test_parse_defaults },
	{ "defaults_restore", test_defaults_restore },
	{ "parse_apply_line", test_parse_apply_line },
	{ "parse_commands", test_parse_commands },
	{ "parse_errors", test_parse_errors },
	{ "parse_policy", test_parse_policy },
	{ "parse_netns", test_parse_netns },
	{ "parse_watch_options", test_parse_watch },
	{ "parse_batch", test_parse_batch },
	{ "parse_u32", test_get_u32 },
	{ "vhost_name", test_vhost_name },
	{ "requests", test_requests },
	{ "stat_fields", test_stat_fields },
	{ "spec_names", test_spec_names },
	{ "print_show_text", test_print_show_text },
	{ "print_show_json", test_print_show_json },
	{ "print_json_pretty", test_print_json_pretty },
	{ "print_queues", test_print_queues },
	{ "print_stats", test_print_stats },
	{ "rate", test_rate },
	{ "print_rates", test_print_rates },
	{ "print_openmetrics", test_print_openmetrics },
	{ "json_escape", test_json_escape },
	{ "print_monitor_events", test_print_event },
	{ "monitor_timestamps", test_timestamps },
	{ "print_policy", test_print_policy },
	{ "errors_from_ynl", test_errors },
	{ "error_strings", test_error_strings },
	{ "usage", test_usage },
	{ "status", test_status },
};

/* The fixture as "vhostctl [-p] [-s...] -j show" prints it, two devices. */
static int sample_json(int argc, char **argv)
{
	struct vh_opts opts = { .json = true };
	struct fixture f, g;
	struct vh_out o;
	int i;

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-p"))
			opts.pretty = true;
		else if (!strcmp(argv[i], "-s"))
			opts.stats++;
	}
	fixture_init(&f, true, opts.stats);
	fixture_init(&g, false, opts.stats);
	vh_out_open(&o, stdout, &opts);
	vh_print_dev(&o, &f.dev, opts.stats ? &f.more : NULL);
	vh_print_dev(&o, &g.dev, NULL);
	vh_out_close(&o);
	return 0;
}

/*
 * The statistics of two devices, vhost3 with a backend whose name needs
 * escaping, vhost4 without one, as "vhostctl [-s -s] stats" prints them
 * with -j or -o openmetrics: device scope, or with -s -s queue scope.
 */
static int sample_stats(int argc, char **argv)
{
	struct vhost_stats_get_rsp_list st[3];
	struct vhost_dev_get_list d[2];
	struct vh_opts opts = {};
	bool devices = false;
	struct vh_out o;
	int i, n = 2;

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-j")) {
			opts.json = true;
		} else if (!strcmp(argv[i], "--devices")) {
			devices = true;
		} else if (!strcmp(argv[i], "-s")) {
			opts.stats++;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc &&
			   !strcmp(argv[i + 1], "openmetrics") && ++i) {
			opts.openmetrics = true;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc &&
			   !strcmp(argv[i + 1], "prometheus") && ++i) {
			opts.openmetrics = true;
			opts.prometheus = true;
		} else {
			return 2;
		}
	}
	fixture_dev(&d[0].obj, true);
	d[0].obj.backend_ifname = (char *)"tap\"0\\";
	fixture_dev(&d[1].obj, false);
	d[1].obj.id = 4;
	d[1].obj.name = (char *)"vhost4";
	if (devices) {
		/* the two devices, as "vhostctl -j show" prints them */
		opts.json = true;
		vh_out_open(&o, stdout, &opts);
		vh_print_dev(&o, &d[0].obj, NULL);
		vh_print_dev(&o, &d[1].obj, NULL);
		vh_out_close(&o);
		return 0;
	}
	if (opts.stats >= 2) {
		fixture_stats(&st[0].obj, 0);
		fixture_stats(&st[1].obj, 1);
		fixture_stats(&st[2].obj, 1);
		st[2].obj.dev_id = 4;
		n = 3;
	} else {
		fixture_stats(&st[0].obj, -1);
		fixture_stats(&st[1].obj, -1);
		st[1].obj.dev_id = 4;
	}
	if (opts.openmetrics) {
		vh_print_metrics(stdout, stats_list(st, n), dev_list(d, 2),
				 opts.prometheus);
		return 0;
	}
	vh_out_open(&o, stdout, &opts);
	for (i = 0; i < n; i++)
		vh_print_stats(&o, &st[i].obj);
	vh_out_close(&o);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int i, n = ARRAY_SIZE(tests);
	int failed = 0;

	if (argc > 1 && !strcmp(argv[1], "--sample-json"))
		return sample_json(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "--sample-stats"))
		return sample_stats(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n1..%u\n", n);
	for (i = 0; i < n; i++) {
		failures = 0;
		tests[i].fn();
		printf("%sok %u %s\n", failures ? "not " : "", i + 1, tests[i].name);
		failed += !!failures;
	}
	printf("# %u passed, %d failed\n", n - failed, failed);
	return failed ? 1 : 0;
}
