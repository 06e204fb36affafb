// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of vhostctl's parsing and printing, no kernel needed: command
 * lines go through vh_parse_cmdline(), netlink messages are built with libnl
 * in memory and go through the same parsers and printers as the kernel's
 * replies do.  KTAP on stdout; exit 1 if anything failed.
 *
 *   test_vhostctl                 run the tests
 *   test_vhostctl --sample-json [-p] [-s...]
 *                                 print the fixture devices as "show -j"
 *                                 would (for tests/run-tests to check
 *                                 against python3 -m json.tool)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "vhostctl.h"

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
	struct vh_opts o;
	struct vh_req r;

	CHECK(parse("set dev vhost0 busypoll-us 50 zerocopy on", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_SET);
	CHECK_STR(r.dev, "vhost0");
	CHECK(r.set.mask == (VH_BIT(VHOST_A_DEV_BUSYPOLL_US) |
			     VH_BIT(VHOST_A_DEV_ZEROCOPY)));
	CHECK(r.set.busypoll_us == 50);
	CHECK(r.set.zerocopy == 1);
	CHECK(!o.json && !o.pretty && !o.stats);
}

static void test_parse_set_forms(void)
{
	struct vh_opts o;
	struct vh_req r;

	CHECK(parse("dev set vhost12 zcopy-min-len 0x100 metamap off", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_SET);
	CHECK_STR(r.dev, "vhost12");
	CHECK(r.set.mask == (VH_BIT(VHOST_A_DEV_ZCOPY_MIN_LEN) |
			     VH_BIT(VHOST_A_DEV_METAMAP)));
	CHECK(r.set.zcopy_min_len == 256);
	CHECK(r.set.metamap == 0);

	CHECK(parse("dev set dev tap0 metamap on zerocopy off busypoll-us 0 zcopy-min-len 65536",
		    &o, &r) == 0);
	CHECK_STR(r.dev, "tap0");
	CHECK(r.set.mask == (VH_BIT(VHOST_A_DEV_BUSYPOLL_US) |
			     VH_BIT(VHOST_A_DEV_ZEROCOPY) |
			     VH_BIT(VHOST_A_DEV_ZCOPY_MIN_LEN) |
			     VH_BIT(VHOST_A_DEV_METAMAP)));
	CHECK(r.set.metamap == 1 && r.set.zerocopy == 0);
	CHECK(r.set.busypoll_us == 0 && r.set.zcopy_min_len == 65536);

	/* dev may come last; values beyond the kernel's range are its call */
	CHECK(parse("set busypoll-us 4294967295 dev vhost1", &o, &r) == 0);
	CHECK_STR(r.dev, "vhost1");
	CHECK(r.set.busypoll_us == 4294967295u);

	/* a value that looks like an option stays a value ("+" getopt) */
	CHECK(parse("set dev vhost0 busypoll-us -1", &o, &r) == -1);
	CHECK_STR(r.err, "Invalid \"busypoll-us\" value \"-1\"");

	CHECK(parse("set dev vhost0 help", &o, &r) == 0);
	CHECK(r.cmd == VH_CMD_HELP && r.help == VH_HELP_DEV);
}

static void test_parse_show_stats(void)
{
	static const struct {
		const char *line;
		enum vh_cmd cmd;
		const char *dev;
		bool json, pretty;
		int stats;
	} t[] = {
		{ "show", VH_CMD_SHOW, NULL, false, false, 0 },
		{ "dev", VH_CMD_SHOW, NULL, false, false, 0 },
		{ "dev show", VH_CMD_SHOW, NULL, false, false, 0 },
		{ "dev list", VH_CMD_SHOW, NULL, false, false, 0 },
		{ "show dev vhost1", VH_CMD_SHOW, "vhost1", false, false, 0 },
		{ "show vhost1", VH_CMD_SHOW, "vhost1", false, false, 0 },
		{ "dev show tap0", VH_CMD_SHOW, "tap0", false, false, 0 },
		{ "-j show dev vhost0", VH_CMD_SHOW, "vhost0", true, false, 0 },
		{ "-j -p show", VH_CMD_SHOW, NULL, true, true, 0 },
		{ "-jp -s show", VH_CMD_SHOW, NULL, true, true, 1 },
		{ "--json --pretty --stats show", VH_CMD_SHOW, NULL, true, true, 1 },
		{ "stats", VH_CMD_STATS, NULL, false, false, 0 },
		{ "-s -s stats dev vhost0", VH_CMD_STATS, "vhost0", false, false, 2 },
		{ "-ss dev stats tap0", VH_CMD_STATS, "tap0", false, false, 2 },
		{ "monitor", VH_CMD_MONITOR, NULL, false, false, 0 },
		{ "-j monitor", VH_CMD_MONITOR, NULL, true, false, 0 },
		{ "help", VH_CMD_HELP, NULL, false, false, 0 },
		{ "-h", VH_CMD_HELP, NULL, false, false, 0 },
		{ "dev help", VH_CMD_HELP, NULL, false, false, 0 },
		{ "show help", VH_CMD_HELP, NULL, false, false, 0 },
		{ "-V", VH_CMD_VERSION, NULL, false, false, 0 },
		{ "-V show", VH_CMD_VERSION, NULL, false, false, 0 },
	};
	struct vh_opts o;
	struct vh_req r;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		int ret = parse(t[i].line, &o, &r);

		if (ret || r.cmd != t[i].cmd || o.json != t[i].json ||
		    o.pretty != t[i].pretty || o.stats != t[i].stats ||
		    (t[i].dev ? !r.dev || strcmp(r.dev, t[i].dev) : !!r.dev)) {
			printf("# \"%s\": ret %d err \"%s\" cmd %d dev %s json %d pretty %d stats %d\n",
			       t[i].line, ret, r.err, r.cmd, r.dev ? r.dev : "-",
			       o.json, o.pretty, o.stats);
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
		  "Invalid \"metamap\" value \"On\", expected \"on\" or \"off\"" },
		{ "set dev vhost0 busypoll 5",
		  "Unknown keyword \"busypoll\", try \"vhostctl dev help\"" },
		{ "set dev vhost0 busypoll-us", "Missing value for \"busypoll-us\"" },
		{ "set dev vhost0 zerocopy", "Missing value for \"zerocopy\"" },
		{ "set busypoll-us 5", "Device name is missing" },
		{ "set", "Device name is missing" },
		{ "set dev", "Device name is missing" },
		{ "dev set", "Device name is missing" },
		{ "set dev vhost0",
		  "Nothing to set, give busypoll-us, zerocopy, zcopy-min-len or metamap" },
		{ "set vhost0", "Nothing to set, give busypoll-us, zerocopy, zcopy-min-len or metamap" },
		{ "set dev vhost0 dev vhost1 metamap on", "Duplicate argument \"dev\"" },
		{ "set vhost0 vhost1", "Unknown keyword \"vhost1\", try \"vhostctl dev help\"" },
		{ "set dev 0123456789abcdef metamap on",
		  "Invalid device name \"0123456789abcdef\"" },
		{ "show vhost0 vhost1", "Unknown keyword \"vhost1\", try \"vhostctl dev help\"" },
		{ "show dev vhost0 dev vhost1", "Duplicate argument \"dev\"" },
		{ "show dev", "Device name is missing" },
		{ "stats dev", "Device name is missing" },
		{ "show ''", "Invalid device name \"\"" },
		{ "sh", "Object \"sh\" is unknown, try \"vhostctl help\"" },
		{ "devs", "Object \"devs\" is unknown, try \"vhostctl help\"" },
		{ "dev sh", "Command \"sh\" is unknown, try \"vhostctl dev help\"" },
		{ "dev monitor", "Command \"monitor\" is unknown, try \"vhostctl dev help\"" },
		{ "monitor foo", "Unknown keyword \"foo\", try \"vhostctl help\"" },
		{ "-x show", "Unknown option \"-x\", try \"vhostctl help\"" },
		{ "--bogus show", "Unknown option \"--bogus\", try \"vhostctl help\"" },
		{ "-j", "" },	/* no object: usage */
		{ "", "" },
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

/* ---- messages ----------------------------------------------------------- */

#define FAMILY 0x1c

/* uint attributes: the kernel sends 4 bytes when the value fits. */
static void put_uint(struct nl_msg *m, int type, uint64_t v)
{
	if (v <= UINT32_MAX)
		nla_put_u32(m, type, v);
	else
		nla_put_u64(m, type, v);
}

static const uint64_t dev_stats[VHOST_A_STATS_MAX + 1] = {
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
};

static void put_stats(struct nl_msg *m, int type, const uint64_t *v,
		      int from, int to)
{
	struct nlattr *nest = nla_nest_start(m, type);
	int i;

	for (i = from; i <= to; i++)
		put_uint(m, i, v[i]);
	nla_nest_end(m, nest);
}

/*
 * vhost3, as DEV_GET returns it.  priv: with the CAP_NET_ADMIN-only
 * attributes.  stats: with the statistics nest.
 */
static struct nl_msg *dev_msg(int cmd, bool priv, bool stats)
{
	struct nl_msg *m = nlmsg_alloc();

	genlmsg_put(m, 0, 1, FAMILY, 0, 0, cmd, VHOST_FAMILY_VERSION);
	nla_put_u32(m, VHOST_A_DEV_ID, 3);
	nla_put_string(m, VHOST_A_DEV_NAME, "vhost3");
	nla_put_u32(m, VHOST_A_DEV_TYPE, VHOST_DEV_TYPE_NET);
	if (priv) {
		nla_put_u32(m, VHOST_A_DEV_OWNER_PID, 1234);
		nla_put_u32(m, VHOST_A_DEV_BACKEND_IFINDEX, 7);
		nla_put_string(m, VHOST_A_DEV_BACKEND_IFNAME, "tap0");
	}
	nla_put_u32(m, VHOST_A_DEV_PAD, 0);	/* as nla_put_u64_64bit() may */
	nla_put_u64(m, VHOST_A_DEV_FEATURES, 0x130000000ull);
	nla_put_u32(m, VHOST_A_DEV_NUM_QUEUES, 2);
	nla_put_u32(m, VHOST_A_DEV_BUSYPOLL_US, 50);
	nla_put_u8(m, VHOST_A_DEV_ZEROCOPY, 1);
	nla_put_u32(m, VHOST_A_DEV_ZCOPY_MIN_LEN, 256);
	nla_put_u8(m, VHOST_A_DEV_METAMAP, 0);
	if (stats)
		put_stats(m, VHOST_A_DEV_STATS, dev_stats, 1, VHOST_A_STATS_MAX);
	/* from a newer kernel: ignored */
	nla_put_u32(m, VHOST_A_DEV_MAX + 3, 99);
	return m;
}

/* Queue idx of vhost3: RX without zero-copy counters, TX with them. */
static struct nl_msg *queue_msg(int idx)
{
	static const uint64_t rx[VHOST_A_STATS_MAX + 1] = {
		[VHOST_A_STATS_RX_PACKETS] = 10,
		[VHOST_A_STATS_RX_BYTES] = 640,
		[VHOST_A_STATS_KICKS] = 3,
		[VHOST_A_STATS_CALLS] = 4,
		[VHOST_A_STATS_METAMAP_FAST] = 60,
	};
	static const uint64_t tx[VHOST_A_STATS_MAX + 1] = {
		[VHOST_A_STATS_TX_PACKETS] = 5000000000ull,
		[VHOST_A_STATS_KICKS] = 4,
		[VHOST_A_STATS_ZCOPY_SENT] = 4,
		[VHOST_A_STATS_ZCOPY_COPIED] = 5,
		[VHOST_A_STATS_ZCOPY_PENDING] = 0,
		[VHOST_A_STATS_ZCOPY_HOL_STALLS] = 6,
	};
	struct nl_msg *m = nlmsg_alloc();
	struct nlattr *nest;

	genlmsg_put(m, 0, 1, FAMILY, 0, 0, VHOST_CMD_QUEUE_GET, 1);
	nla_put_u32(m, VHOST_A_QUEUE_DEV_ID, 3);
	nla_put_u32(m, VHOST_A_QUEUE_INDEX, idx);
	nla_put_u32(m, VHOST_A_QUEUE_TYPE, idx ? VHOST_QUEUE_TYPE_TX :
						 VHOST_QUEUE_TYPE_RX);
	nla_put_u32(m, VHOST_A_QUEUE_NUM, 256);
	nla_put_u32(m, VHOST_A_QUEUE_BUSYPOLL_US, idx ? 20 : 0);
	nla_put_u8(m, VHOST_A_QUEUE_METAMAP_VALID, !idx);
	nest = nla_nest_start(m, VHOST_A_QUEUE_STATS);
	if (idx) {
		put_uint(m, VHOST_A_STATS_TX_PACKETS, tx[VHOST_A_STATS_TX_PACKETS]);
		put_uint(m, VHOST_A_STATS_KICKS, tx[VHOST_A_STATS_KICKS]);
		put_stats(m, 0, tx, 0, -1);	/* an empty nest inside: ignored */
		put_uint(m, VHOST_A_STATS_ZCOPY_SENT, 4);
		put_uint(m, VHOST_A_STATS_ZCOPY_COPIED, 5);
		put_uint(m, VHOST_A_STATS_ZCOPY_PENDING, 0);
		put_uint(m, VHOST_A_STATS_ZCOPY_HOL_STALLS, 6);
	} else {
		put_uint(m, VHOST_A_STATS_RX_PACKETS, rx[VHOST_A_STATS_RX_PACKETS]);
		put_uint(m, VHOST_A_STATS_RX_BYTES, rx[VHOST_A_STATS_RX_BYTES]);
		put_uint(m, VHOST_A_STATS_KICKS, rx[VHOST_A_STATS_KICKS]);
		put_uint(m, VHOST_A_STATS_CALLS, rx[VHOST_A_STATS_CALLS]);
		put_uint(m, VHOST_A_STATS_METAMAP_FAST, rx[VHOST_A_STATS_METAMAP_FAST]);
	}
	nla_nest_end(m, nest);
	return m;
}

static void fixture_dev(struct vh_dev *d, bool priv, bool stats, bool queues)
{
	struct nl_msg *m = dev_msg(VHOST_CMD_DEV_GET, priv, stats);
	struct vh_queue q;
	int i;

	if (vh_dev_from_msg(nlmsg_hdr(m), d))
		printf("# fixture device did not parse\n");
	nlmsg_free(m);
	if (!queues)
		return;
	for (i = 1; i >= 0; i--) {	/* out of order on purpose */
		m = queue_msg(i);
		if (vh_queue_from_msg(nlmsg_hdr(m), &q) || vh_dev_add_queue(d, &q))
			printf("# fixture queue %d did not parse\n", i);
		nlmsg_free(m);
	}
	d->queues_fetched = true;
}

static void test_dev_attrs(void)
{
	struct vh_dev d;
	int i;

	fixture_dev(&d, true, true, false);
	/* all of id..stats; the pad attribute is not one of ours */
	CHECK(d.have == (VH_BIT(VHOST_A_DEV_STATS + 1) - 2));
	CHECK(d.id == 3);
	CHECK_STR(d.name, "vhost3");
	CHECK(d.type == VHOST_DEV_TYPE_NET);
	CHECK(d.owner_pid == 1234);
	CHECK(d.backend_ifindex == 7);
	CHECK_STR(d.backend_ifname, "tap0");
	CHECK(d.features == 0x130000000ull);
	CHECK(d.num_queues == 2);
	CHECK(d.busypoll_us == 50);
	CHECK(d.zerocopy == 1);
	CHECK(d.zcopy_min_len == 256);
	CHECK(d.metamap == 0);
	CHECK(d.stats.have == (VH_BIT(VHOST_A_STATS_MAX + 1) - 2));
	for (i = 1; i <= VHOST_A_STATS_MAX; i++)
		CHECK(d.stats.val[i] == dev_stats[i]);
	CHECK(!d.queues && !d.nqueues && !d.queues_fetched);
	vh_dev_free(&d);

	/* unprivileged requester: those attributes are simply absent */
	fixture_dev(&d, false, false, false);
	CHECK(!VH_HAS(&d, VHOST_A_DEV_OWNER_PID));
	CHECK(!VH_HAS(&d, VHOST_A_DEV_BACKEND_IFINDEX));
	CHECK(!VH_HAS(&d, VHOST_A_DEV_BACKEND_IFNAME));
	CHECK(!VH_HAS(&d, VHOST_A_DEV_STATS));
	CHECK(VH_HAS(&d, VHOST_A_DEV_BUSYPOLL_US));
	CHECK(d.backend_ifname[0] == '\0');
	vh_dev_free(&d);
}

static void test_queue_attrs(void)
{
	struct vh_dev d;

	fixture_dev(&d, true, true, true);
	CHECK(d.nqueues == 2);
	if (d.nqueues != 2)
		return;
	CHECK(d.queues[0].index == 0 && d.queues[1].index == 1);
	CHECK(d.queues[0].type == VHOST_QUEUE_TYPE_RX);
	CHECK(d.queues[1].type == VHOST_QUEUE_TYPE_TX);
	CHECK(d.queues[0].metamap_valid == 1 && d.queues[1].metamap_valid == 0);
	CHECK(d.queues[1].busypoll_us == 20);
	CHECK(d.queues[1].stats.val[VHOST_A_STATS_TX_PACKETS] == 5000000000ull);
	/* zero-copy counters on the TX queue only */
	CHECK(!(d.queues[0].stats.have & VH_BIT(VHOST_A_STATS_ZCOPY_SENT)));
	CHECK(d.queues[1].stats.have & VH_BIT(VHOST_A_STATS_ZCOPY_PENDING));
	CHECK(d.queues[1].stats.val[VHOST_A_STATS_ZCOPY_PENDING] == 0);
	vh_dev_free(&d);
}

static void test_uint(void)
{
	struct nl_msg *m = nlmsg_alloc();
	struct nlattr *a;
	uint64_t v = 0;
	uint16_t u16 = 1;
	uint8_t b12[12] = { 0 };

	nla_put_u32(m, 1, 0xfffffffful);
	nla_put_u64(m, 2, 0x100000000ull);
	nla_put(m, 3, sizeof(u16), &u16);
	nla_put(m, 4, sizeof(b12), b12);
	a = nlmsg_find_attr(nlmsg_hdr(m), 0, 1);
	CHECK(a && vh_nla_get_uint(a, &v) == 0 && v == 0xfffffffful);
	a = nlmsg_find_attr(nlmsg_hdr(m), 0, 2);
	CHECK(a && vh_nla_get_uint(a, &v) == 0 && v == 0x100000000ull);
	a = nlmsg_find_attr(nlmsg_hdr(m), 0, 3);
	CHECK(a && vh_nla_get_uint(a, &v) == -EINVAL);
	a = nlmsg_find_attr(nlmsg_hdr(m), 0, 4);
	CHECK(a && vh_nla_get_uint(a, &v) == -EINVAL);
	nlmsg_free(m);
}

static void test_malformed(void)
{
	struct nl_msg *m;
	struct vh_dev d;
	struct nlattr *nest;
	uint16_t u16 = 1;
	char noterm[4] = { 'v', 'h', 'o', 's' };

	/* u32 of 2 bytes */
	m = nlmsg_alloc();
	genlmsg_put(m, 0, 1, FAMILY, 0, 0, VHOST_CMD_DEV_GET, 1);
	nla_put(m, VHOST_A_DEV_ID, sizeof(u16), &u16);
	CHECK(vh_dev_from_msg(nlmsg_hdr(m), &d) == -EINVAL);
	nlmsg_free(m);

	/* name without its NUL */
	m = nlmsg_alloc();
	genlmsg_put(m, 0, 1, FAMILY, 0, 0, VHOST_CMD_DEV_GET, 1);
	nla_put(m, VHOST_A_DEV_NAME, sizeof(noterm), noterm);
	CHECK(vh_dev_from_msg(nlmsg_hdr(m), &d) == -EINVAL);
	nlmsg_free(m);

	/* backend name too long for IFNAMSIZ */
	m = nlmsg_alloc();
	genlmsg_put(m, 0, 1, FAMILY, 0, 0, VHOST_CMD_DEV_GET, 1);
	nla_put_string(m, VHOST_A_DEV_BACKEND_IFNAME, "0123456789abcdefg");
	CHECK(vh_dev_from_msg(nlmsg_hdr(m), &d) == -EINVAL);
	nlmsg_free(m);

	/* a stats counter of 2 bytes */
	m = nlmsg_alloc();
	genlmsg_put(m, 0, 1, FAMILY, 0, 0, VHOST_CMD_DEV_GET, 1);
	nest = nla_nest_start(m, VHOST_A_DEV_STATS);
	nla_put(m, VHOST_A_STATS_KICKS, sizeof(u16), &u16);
	nla_nest_end(m, nest);
	CHECK(vh_dev_from_msg(nlmsg_hdr(m), &d) == -EINVAL);
	nlmsg_free(m);

	/* no generic netlink header at all */
	m = nlmsg_alloc_simple(FAMILY, 0);
	CHECK(vh_dev_from_msg(nlmsg_hdr(m), &d) == -EINVAL);
	nlmsg_free(m);
}

/* ---- printing ----------------------------------------------------------- */

static char *render(const struct vh_dev *d, int n, bool json, bool pretty,
		    int stats, bool stats_cmd)
{
	struct vh_opts opts = { .json = json, .pretty = pretty, .stats = stats };
	struct vh_out o;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int i;

	vh_out_open(&o, f, &opts);
	for (i = 0; i < n; i++) {
		if (stats_cmd)
			vh_print_dev_stats(&o, &d[i]);
		else
			vh_print_dev(&o, &d[i]);
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

static char *render_event(const struct vh_dev *d, enum vh_event ev,
			  bool json, int stats)
{
	struct vh_opts opts = { .json = json, .stats = stats };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	vh_print_event(f, &opts, ev, d);
	fclose(f);
	return buf;
}

#define DEV_TEXT							\
	"vhost3: type net owner-pid 1234 backend-ifname tap0 backend-ifindex 7\n" \
	"    features 0x0000000130000000 num-queues 2\n"		\
	"    busypoll-us 50 zerocopy on zcopy-min-len 256 metamap off\n"

#define DEV_STATS_TEXT(ind)						\
	ind "rx-packets 10 rx-bytes 640 tx-packets 5000000000 tx-bytes 320000000000\n" \
	ind "kicks 7 calls 8\n"						\
	ind "busypoll-loops 1 busypoll-ns 2 busypoll-found 3\n"		\
	ind "zcopy-sent 4 zcopy-copied 5 zcopy-pending 0 zcopy-hol-stalls 6\n" \
	ind "metamap-fast 100 metamap-fallback 2 metamap-invalidations 1 metamap-remaps 3 metamap-remap-failures 0\n"

#define QUEUES_TEXT							\
	"    queue 0: type rx num 256 busypoll-us 0 metamap-valid yes\n"	\
	"        rx-packets 10 rx-bytes 640\n"				\
	"        kicks 3 calls 4\n"					\
	"        metamap-fast 60\n"					\
	"    queue 1: type tx num 256 busypoll-us 20 metamap-valid no\n"	\
	"        tx-packets 5000000000\n"				\
	"        kicks 4\n"						\
	"        zcopy-sent 4 zcopy-copied 5 zcopy-pending 0 zcopy-hol-stalls 6\n"

static void test_print_text(void)
{
	struct vh_dev d;
	char *s;

	fixture_dev(&d, true, true, true);
	s = render(&d, 1, false, false, 0, false);
	CHECK_STR(s, DEV_TEXT);
	free(s);
	s = render(&d, 1, false, false, 1, false);
	CHECK_STR(s, DEV_TEXT "    statistics:\n" DEV_STATS_TEXT("        "));
	free(s);
	s = render(&d, 1, false, false, 2, false);
	CHECK_STR(s, DEV_TEXT "    statistics:\n" DEV_STATS_TEXT("        ")
		  QUEUES_TEXT);
	free(s);
	vh_dev_free(&d);

	/* unprivileged, no stats in the reply: nothing made up */
	fixture_dev(&d, false, false, false);
	s = render(&d, 1, false, false, 2, false);
	CHECK_STR(s, "vhost3: type net\n"
		  "    features 0x0000000130000000 num-queues 2\n"
		  "    busypoll-us 50 zerocopy on zcopy-min-len 256 metamap off\n");
	free(s);
	vh_dev_free(&d);

	/* nothing to list: no output */
	s = render(NULL, 0, false, false, 0, false);
	CHECK_STR(s, "");
	free(s);
}

static void test_print_stats_text(void)
{
	struct vh_dev d;
	char *s;

	fixture_dev(&d, true, true, true);
	s = render(&d, 1, false, false, 0, true);
	CHECK_STR(s, "vhost3:\n" DEV_STATS_TEXT("    "));
	free(s);
	s = render(&d, 1, false, false, 2, true);
	CHECK_STR(s, "vhost3:\n" DEV_STATS_TEXT("    ") QUEUES_TEXT);
	free(s);
	vh_dev_free(&d);
}

#define DEV_JSON_ATTRS							\
	"\"id\":3,\"name\":\"vhost3\",\"type\":\"net\",\"owner_pid\":1234," \
	"\"backend_ifindex\":7,\"backend_ifname\":\"tap0\","		\
	"\"features\":5100273664,\"num_queues\":2,\"busypoll_us\":50,"	\
	"\"zerocopy\":true,\"zcopy_min_len\":256,\"metamap\":false"

#define DEV_JSON_STATS							\
	"\"stats\":{\"rx_packets\":10,\"rx_bytes\":640,"		\
	"\"tx_packets\":5000000000,\"tx_bytes\":320000000000,"		\
	"\"kicks\":7,\"calls\":8,\"busypoll_loops\":1,\"busypoll_ns\":2," \
	"\"busypoll_found\":3,\"zcopy_sent\":4,\"zcopy_copied\":5,"	\
	"\"zcopy_pending\":0,\"zcopy_hol_stalls\":6,\"metamap_fast\":100," \
	"\"metamap_fallback\":2,\"metamap_invalidations\":1,"		\
	"\"metamap_remaps\":3,\"metamap_remap_failures\":0}"

#define QUEUES_JSON							\
	"\"queues\":[{\"index\":0,\"type\":\"rx\",\"num\":256,"	\
	"\"busypoll_us\":0,\"metamap_valid\":true,\"stats\":{"		\
	"\"rx_packets\":10,\"rx_bytes\":640,\"kicks\":3,\"calls\":4,"	\
	"\"metamap_fast\":60}},{\"index\":1,\"type\":\"tx\",\"num\":256," \
	"\"busypoll_us\":20,\"metamap_valid\":false,\"stats\":{"	\
	"\"tx_packets\":5000000000,\"kicks\":4,\"zcopy_sent\":4,"	\
	"\"zcopy_copied\":5,\"zcopy_pending\":0,\"zcopy_hol_stalls\":6}}]"

static void test_print_json(void)
{
	struct vh_dev d[2];
	char *s;

	fixture_dev(&d[0], true, true, true);
	fixture_dev(&d[1], false, false, false);
	s = render(d, 1, true, false, 0, false);
	CHECK_STR(s, "[{" DEV_JSON_ATTRS "}]\n");
	free(s);
	s = render(d, 1, true, false, 1, false);
	CHECK_STR(s, "[{" DEV_JSON_ATTRS "," DEV_JSON_STATS "}]\n");
	free(s);
	s = render(d, 1, true, false, 2, false);
	CHECK_STR(s, "[{" DEV_JSON_ATTRS "," DEV_JSON_STATS "," QUEUES_JSON "}]\n");
	free(s);
	/* stats: id, name, counters */
	s = render(d, 1, true, false, 0, true);
	CHECK_STR(s, "[{\"id\":3,\"name\":\"vhost3\"," DEV_JSON_STATS "}]\n");
	free(s);
	s = render(d, 1, true, false, 2, true);
	CHECK_STR(s, "[{\"id\":3,\"name\":\"vhost3\"," DEV_JSON_STATS ","
		  QUEUES_JSON "}]\n");
	free(s);
	/* two devices, the second as an unprivileged user sees it */
	s = render(d, 2, true, false, 0, false);
	CHECK_STR(s, "[{" DEV_JSON_ATTRS "},{\"id\":3,\"name\":\"vhost3\","
		  "\"type\":\"net\",\"features\":5100273664,\"num_queues\":2,"
		  "\"busypoll_us\":50,\"zerocopy\":true,\"zcopy_min_len\":256,"
		  "\"metamap\":false}]\n");
	free(s);
	s = render(NULL, 0, true, false, 0, false);
	CHECK_STR(s, "[]\n");
	free(s);
	s = render(NULL, 0, true, true, 0, false);
	CHECK_STR(s, "[]\n");
	free(s);
	vh_dev_free(&d[0]);
	vh_dev_free(&d[1]);
}

static void test_print_json_pretty(void)
{
	struct vh_dev d;
	char *s;

	fixture_dev(&d, false, false, true);
	d.nqueues = 1;
	d.queues[0].stats.have = 0;	/* an empty object */
	s = render(&d, 1, true, true, 2, false);
	CHECK_STR(s,
		  "[\n"
		  "    {\n"
		  "        \"id\": 3,\n"
		  "        \"name\": \"vhost3\",\n"
		  "        \"type\": \"net\",\n"
		  "        \"features\": 5100273664,\n"
		  "        \"num_queues\": 2,\n"
		  "        \"busypoll_us\": 50,\n"
		  "        \"zerocopy\": true,\n"
		  "        \"zcopy_min_len\": 256,\n"
		  "        \"metamap\": false,\n"
		  "        \"queues\": [\n"
		  "            {\n"
		  "                \"index\": 0,\n"
		  "                \"type\": \"rx\",\n"
		  "                \"num\": 256,\n"
		  "                \"busypoll_us\": 0,\n"
		  "                \"metamap_valid\": true,\n"
		  "                \"stats\": {}\n"
		  "            }\n"
		  "        ]\n"
		  "    }\n"
		  "]\n");
	free(s);
	vh_dev_free(&d);
}

static void test_json_escape(void)
{
	struct vh_dev d;
	char *s;

	memset(&d, 0, sizeof(d));
	d.have = VH_BIT(VHOST_A_DEV_NAME) | VH_BIT(VHOST_A_DEV_BACKEND_IFNAME) |
		 VH_BIT(VHOST_A_DEV_TYPE);
	strcpy(d.name, "vhost9");
	strcpy(d.backend_ifname, "a\"b\\c\x01");
	d.type = 42;
	s = render(&d, 1, true, false, 0, false);
	CHECK_STR(s, "[{\"name\":\"vhost9\",\"type\":\"42\","
		  "\"backend_ifname\":\"a\\\"b\\\\c\\u0001\"}]\n");
	free(s);
}

static void test_print_event(void)
{
	struct nl_msg *m;
	struct vh_dev d;
	char *s;

	m = dev_msg(VHOST_CMD_DEV_CHANGE_NTF, true, true);
	CHECK(vh_dev_from_msg(nlmsg_hdr(m), &d) == 0);
	nlmsg_free(m);
	s = render_event(&d, VH_EV_CHANGE, false, 0);
	CHECK_STR(s, "[change] vhost3: type net owner-pid 1234 backend-ifname tap0 "
		  "backend-ifindex 7 features 0x0000000130000000 num-queues 2 "
		  "busypoll-us 50 zerocopy on zcopy-min-len 256 metamap off\n");
	free(s);
	s = render_event(&d, VH_EV_ADD, true, 0);
	CHECK_STR(s, "{\"event\":\"add\"," DEV_JSON_ATTRS "}\n");
	free(s);
	s = render_event(&d, VH_EV_CHANGE, true, 1);
	CHECK_STR(s, "{\"event\":\"change\"," DEV_JSON_ATTRS "," DEV_JSON_STATS "}\n");
	free(s);
	s = render_event(&d, VH_EV_ADD, false, 1);
	CHECK(s && strstr(s, " metamap off rx-packets 10 rx-bytes 640 "));
	CHECK(s && strstr(s, " metamap-remap-failures 0\n"));
	CHECK(count_lines(s) == 1);
	free(s);

	/* the del notification may carry only id, name and type */
	memset(&d, 0, sizeof(d));
	d.have = VH_BIT(VHOST_A_DEV_ID) | VH_BIT(VHOST_A_DEV_NAME) |
		 VH_BIT(VHOST_A_DEV_TYPE);
	d.id = 3;
	strcpy(d.name, "vhost3");
	d.type = VHOST_DEV_TYPE_NET;
	s = render_event(&d, VH_EV_DEL, false, 1);
	CHECK_STR(s, "[del] vhost3: type net\n");
	free(s);
	s = render_event(&d, VH_EV_DEL, true, 1);
	CHECK_STR(s, "{\"event\":\"del\",\"id\":3,\"name\":\"vhost3\",\"type\":\"net\"}\n");
	free(s);
}

/* ---- extended ACK ------------------------------------------------------- */

/*
 * An NLMSG_ERROR for req: error, the echoed request (unless capped), then
 * the given TLVs (msg may be NULL, offs 0 for none).
 */
static size_t make_err(void *buf, size_t size, const struct nlmsghdr *req,
		       int error, bool capped, const char *msg, uint32_t offs)
{
	struct nlmsghdr *nlh = buf;
	struct nlmsgerr *e = NLMSG_DATA(nlh);
	size_t hlen = sizeof(*e) + (capped ? 0 : req->nlmsg_len - NLMSG_HDRLEN);
	size_t off = NLMSG_HDRLEN + NLMSG_ALIGN(hlen);
	struct nlattr *a;

	memset(buf, 0, size);
	nlh->nlmsg_type = NLMSG_ERROR;
	nlh->nlmsg_flags = capped ? NLM_F_CAPPED : 0;
	e->error = -error;
	memcpy(&e->msg, req, capped ? sizeof(*req) : req->nlmsg_len);
	if (msg) {
		a = (struct nlattr *)((char *)buf + off);
		a->nla_type = NLMSGERR_ATTR_MSG;
		a->nla_len = NLA_HDRLEN + strlen(msg) + 1;
		strcpy((char *)a + NLA_HDRLEN, msg);
		off += NLA_ALIGN(a->nla_len);
		nlh->nlmsg_flags |= NLM_F_ACK_TLVS;
	}
	if (offs) {
		a = (struct nlattr *)((char *)buf + off);
		a->nla_type = NLMSGERR_ATTR_OFFS;
		a->nla_len = NLA_HDRLEN + sizeof(offs);
		memcpy((char *)a + NLA_HDRLEN, &offs, sizeof(offs));
		off += NLA_ALIGN(a->nla_len);
		nlh->nlmsg_flags |= NLM_F_ACK_TLVS;
	}
	nlh->nlmsg_len = off;
	return off;
}

static void test_ext_ack(void)
{
	static char buf[1024];
	struct nl_msg *req = nlmsg_alloc();
	struct nlmsghdr *rh;
	struct vh_ext_ack ea;
	char out[512];
	uint32_t offs;
	size_t len;

	genlmsg_put(req, 0, 1, FAMILY, 0, 0, VHOST_CMD_DEV_SET, 1);
	nla_put_string(req, VHOST_A_DEV_NAME, "vhost0");
	offs = nlmsg_hdr(req)->nlmsg_len;	/* where the next attribute goes */
	nla_put_u32(req, VHOST_A_DEV_BUSYPOLL_US, 2000000);
	rh = nlmsg_hdr(req);

	/* policy error: message and offset of the attribute */
	len = make_err(buf, sizeof(buf), rh, ERANGE, false,
		       "integer out of range", offs);
	CHECK(vh_ext_ack_parse((void *)buf, len, rh, &ea) == 0);
	CHECK(ea.error == ERANGE);
	CHECK_STR(ea.msg, "integer out of range");
	CHECK(ea.bad_attr == VHOST_A_DEV_BUSYPOLL_US);
	vh_ext_ack_format(&ea, "vhost0", vh_dev_attr_names, VHOST_A_DEV_MAX,
			  out, sizeof(out));
	CHECK_STR(out, "Error: integer out of range.");

	/* capped echo: the offset is looked up in the request we sent */
	len = make_err(buf, sizeof(buf), rh, EINVAL, true, NULL, offs);
	CHECK(vh_ext_ack_parse((void *)buf, len, rh, &ea) == 0);
	CHECK(ea.bad_attr == VHOST_A_DEV_BUSYPOLL_US && !ea.msg[0]);
	vh_ext_ack_format(&ea, "vhost0", vh_dev_attr_names, VHOST_A_DEV_MAX,
			  out, sizeof(out));
	CHECK_STR(out, "Error: invalid \"busypoll-us\": Invalid argument.");
	/* ... and not guessed without it */
	CHECK(vh_ext_ack_parse((void *)buf, len, NULL, &ea) == 0);
	CHECK(ea.bad_attr == -1);
	/* an offset outside the request is ignored */
	len = make_err(buf, sizeof(buf), rh, EINVAL, false, NULL, 4000);
	CHECK(vh_ext_ack_parse((void *)buf, len, rh, &ea) == 0);
	CHECK(ea.bad_attr == -1);

	/* a message that already ends with a period gets no second one */
	len = make_err(buf, sizeof(buf), rh, ENODEV, false, "No such vhost device.", 0);
	CHECK(vh_ext_ack_parse((void *)buf, len, rh, &ea) == 0);
	vh_ext_ack_format(&ea, "vhost0", NULL, 0, out, sizeof(out));
	CHECK_STR(out, "Error: No such vhost device.");

	/* plain errors */
	len = make_err(buf, sizeof(buf), rh, ENODEV, false, NULL, 0);
	CHECK(vh_ext_ack_parse((void *)buf, len, rh, &ea) == 0);
	CHECK(ea.error == ENODEV && ea.bad_attr == -1 && !ea.msg[0]);
	vh_ext_ack_format(&ea, "vhost0", NULL, 0, out, sizeof(out));
	CHECK_STR(out, "Cannot find device \"vhost0\"");
	len = make_err(buf, sizeof(buf), rh, EPERM, false, NULL, 0);
	CHECK(vh_ext_ack_parse((void *)buf, len, rh, &ea) == 0);
	vh_ext_ack_format(&ea, "vhost0", vh_dev_attr_names, VHOST_A_DEV_MAX,
			  out, sizeof(out));
	CHECK_STR(out, "Error: Operation not permitted.");

	/* an ACK: silent, or a warning */
	len = make_err(buf, sizeof(buf), rh, 0, true, NULL, 0);
	CHECK(vh_ext_ack_parse((void *)buf, len, rh, &ea) == 0 && ea.error == 0);
	vh_ext_ack_format(&ea, NULL, NULL, 0, out, sizeof(out));
	CHECK_STR(out, "");
	len = make_err(buf, sizeof(buf), rh, 0, true, "busy-poll is off", 0);
	CHECK(vh_ext_ack_parse((void *)buf, len, rh, &ea) == 0);
	vh_ext_ack_format(&ea, NULL, NULL, 0, out, sizeof(out));
	CHECK_STR(out, "Warning: busy-poll is off.");

	/* truncated messages are refused, not read past */
	CHECK(vh_ext_ack_parse((void *)buf, 8, rh, &ea) == -EINVAL);
	len = make_err(buf, sizeof(buf), rh, EINVAL, false, "x", 0);
	CHECK(vh_ext_ack_parse((void *)buf, len - 4, rh, &ea) == -EINVAL);
	nlmsg_free(req);
}

static void test_ext_ack_done(void)
{
	static char buf[256];
	struct nlmsghdr *nlh = (struct nlmsghdr *)buf;
	struct vh_ext_ack ea;
	struct nlattr *a;
	char out[256];
	int err = -ENODEV;

	/* the end of a dump that failed, with a message */
	memset(buf, 0, sizeof(buf));
	nlh->nlmsg_type = NLMSG_DONE;
	nlh->nlmsg_flags = NLM_F_MULTI | NLM_F_ACK_TLVS;
	memcpy(NLMSG_DATA(nlh), &err, sizeof(err));
	a = (struct nlattr *)(buf + NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(err)));
	a->nla_type = NLMSGERR_ATTR_MSG;
	a->nla_len = NLA_HDRLEN + sizeof("device went away");
	strcpy((char *)a + NLA_HDRLEN, "device went away");
	nlh->nlmsg_len = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(err)) +
			 NLA_ALIGN(a->nla_len);
	CHECK(vh_ext_ack_parse(nlh, nlh->nlmsg_len, NULL, &ea) == 0);
	CHECK(ea.error == ENODEV);
	vh_ext_ack_format(&ea, NULL, NULL, 0, out, sizeof(out));
	CHECK_STR(out, "Error: device went away.");

	/* a normal end of dump */
	err = 0;
	memcpy(NLMSG_DATA(nlh), &err, sizeof(err));
	nlh->nlmsg_flags = NLM_F_MULTI;
	nlh->nlmsg_len = NLMSG_HDRLEN + sizeof(err);
	CHECK(vh_ext_ack_parse(nlh, nlh->nlmsg_len, NULL, &ea) == 0);
	CHECK(ea.error == 0 && !ea.msg[0]);
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
	CHECK(strstr(buf, "OBJECT := { dev }"));
	CHECK(strstr(buf, "vhostctl dev set [ dev ] DEV [ busypoll-us USEC ] [ zerocopy { on | off } ]"));
	CHECK(strstr(buf, "[ zcopy-min-len BYTES ] [ metamap { on | off } ]"));
	CHECK(strstr(buf, "vhostctl dev stats [ [ dev ] DEV ]"));
	free(buf);
}

static const struct {
	const char *name;
	void (*fn)(void);
} tests[] = {
	{ "parse_card_command", test_parse_card },
	{ "parse_set_forms", test_parse_set_forms },
	{ "parse_show_stats_monitor", test_parse_show_stats },
	{ "parse_errors", test_parse_errors },
	{ "parse_u32", test_get_u32 },
	{ "vhost_name", test_vhost_name },
	{ "dev_attrs", test_dev_attrs },
	{ "queue_attrs", test_queue_attrs },
	{ "uint_4_or_8_bytes", test_uint },
	{ "malformed_attrs", test_malformed },
	{ "print_show_text", test_print_text },
	{ "print_stats_text", test_print_stats_text },
	{ "print_json", test_print_json },
	{ "print_json_pretty", test_print_json_pretty },
	{ "json_escape", test_json_escape },
	{ "print_monitor_events", test_print_event },
	{ "ext_ack_error", test_ext_ack },
	{ "ext_ack_dump_done", test_ext_ack_done },
	{ "usage", test_usage },
};

/* The fixture as "vhostctl [-p] [-s...] -j show" prints it. */
static int sample_json(int argc, char **argv)
{
	struct vh_opts opts = { .json = true };
	struct vh_dev d[2];
	struct vh_out o;
	int i;

	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-p"))
			opts.pretty = true;
		else if (!strcmp(argv[i], "-s"))
			opts.stats++;
	}
	fixture_dev(&d[0], true, true, true);
	fixture_dev(&d[1], false, false, false);
	vh_out_open(&o, stdout, &opts);
	vh_print_dev(&o, &d[0]);
	vh_print_dev(&o, &d[1]);
	vh_out_close(&o);
	vh_dev_free(&d[0]);
	vh_dev_free(&d[1]);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int i, n = ARRAY_SIZE(tests);
	int failed = 0;

	if (argc > 1 && !strcmp(argv[1], "--sample-json"))
		return sample_json(argc, argv);
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
