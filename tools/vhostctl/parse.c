// SPDX-License-Identifier: GPL-2.0
/*
 * Command line parsing: argv -> struct vh_opts + struct vh_req.  No I/O: a
 * parse error leaves a message in req->err and nothing is sent anywhere.
 * Keywords match exactly (strcmp), as iproute2's newer keywords do.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "vhostctl.h"

static int perr(struct vh_req *req, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int perr(struct vh_req *req, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(req->err, sizeof(req->err), fmt, ap);
	va_end(ap);
	return -1;
}

int vh_get_u32(const char *s, uint32_t *val)
{
	unsigned long long v;
	int base = 10;
	char *end;

	if (!s || !isdigit((unsigned char)s[0]))
		return -EINVAL;
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		if (!isxdigit((unsigned char)s[0]))
			return -EINVAL;
	}
	errno = 0;
	v = strtoull(s, &end, base);
	if (*end)
		return -EINVAL;
	if (errno == ERANGE || v > UINT32_MAX)
		return -ERANGE;
	*val = v;
	return 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

bool vh_is_vhost_name(const char *s)
{
	size_t n = strlen("vhost");

	return !strncmp(s, "vhost", n) && all_digits(s + n) &&
	       strlen(s) < IFNAMSIZ;
}

static const char *const obj_names[] = {
	[VH_HELP_MAIN]	= "",
	[VH_HELP_DEV]	= "dev ",
	[VH_HELP_QUEUE]	= "queue ",
	[VH_HELP_POLICY] = "policy ",
};

/* The value after a keyword: moves argv on it, or fails. */
static int next_value(struct vh_req *req, int *argc, char ***argv)
{
	if (*argc < 2)
		return perr(req, "Missing value for \"%s\"", **argv);
	(*argc)--, (*argv)++;
	return 0;
}

static int unknown_word(struct vh_req *req, const char *word)
{
	return perr(req, "Unknown keyword \"%s\", try \"vhostctl %shelp\"",
		    word, obj_names[req->help]);
}

/* DEV: a decimal id, a vhostN name, or the name of a backend interface. */
static int parse_dev_name(struct vh_req *req, const char *name)
{
	struct vh_sel *sel = &req->sel;

	if (sel->kind != VH_SEL_ALL)
		return perr(req, "Duplicate argument \"dev\"");
	if (!*name || strlen(name) >= IFNAMSIZ)
		return perr(req, "Invalid device name \"%s\"", name);
	if (all_digits(name)) {
		if (vh_get_u32(name, &sel->id))
			return perr(req, "Invalid device id \"%s\"", name);
		sel->kind = VH_SEL_ID;
	} else if (vh_is_vhost_name(name)) {
		sel->kind = VH_SEL_NAME;
	} else {
		sel->kind = VH_SEL_IFNAME;
	}
	sel->name = name;
	return 0;
}

/* owner PID, label LABEL: the selectors that name no device by itself. */
static int parse_sel_word(struct vh_req *req, const char *key, const char *v)
{
	struct vh_sel *sel = &req->sel;

	if (sel->kind != VH_SEL_ALL)
		return perr(req, "Duplicate device selector \"%s\"", key);
	if (!strcmp(key, "owner")) {
		if (vh_get_u32(v, &sel->id) || !sel->id)
			return perr(req, "Invalid \"owner\" value \"%s\", expected a process id",
				    v);
		sel->kind = VH_SEL_OWNER;
	} else {
		if (!*v || strlen(v) > VHOST_LABEL_LEN_MAX)
			return perr(req, "Invalid \"label\" value \"%s\", expected 1 to %d bytes",
				    v, VHOST_LABEL_LEN_MAX);
		sel->kind = VH_SEL_LABEL;
	}
	sel->name = v;
	return 0;
}

/*
 * The words every command takes: "dev DEV", "owner PID", "label LABEL",
 * "help", and a bare DEV where bare allows one.  Returns 1 when *argv was
 * one of them (argv then on its last word), 0 when it was not, -1 on error.
 */
static int parse_dev_word(struct vh_req *req, int *argc, char ***argv,
			  bool bare)
{
	if (!strcmp(**argv, "owner") || !strcmp(**argv, "label")) {
		const char *key = **argv;

		if (next_value(req, argc, argv))
			return -1;
		return parse_sel_word(req, key, **argv) ? -1 : 1;
	}
	if (!strcmp(**argv, "dev")) {
		if (*argc < 2)
			return perr(req, "Device name is missing");
		(*argc)--, (*argv)++;
		return parse_dev_name(req, **argv) ? -1 : 1;
	}
	if (!strcmp(**argv, "help")) {
		req->cmd = VH_CMD_HELP;
		return 1;
	}
	if (bare)
		return parse_dev_name(req, **argv) ? -1 : 1;
	return 0;
}

/* ---- options ------------------------------------------------------------- */

static const struct option long_opts[] = {
	{ "json",	no_argument,	   NULL, 'j' },
	{ "pretty",	no_argument,	   NULL, 'p' },
	{ "stats",	no_argument,	   NULL, 's' },
	{ "statistics",	no_argument,	   NULL, 's' },
	{ "netns",	required_argument, NULL, 'n' },
	{ "output",	required_argument, NULL, 'o' },
	{ "interval",	required_argument, NULL, 'i' },
	{ "count",	required_argument, NULL, 'c' },
	{ "timestamp",	no_argument,	   NULL, 't' },
	{ "batch",	required_argument, NULL, 'b' },
	{ "force",	no_argument,	   NULL, 'f' },
	{ "Version",	no_argument,	   NULL, 'V' },
	{ "version",	no_argument,	   NULL, 'V' },
	{ "help",	no_argument,	   NULL, 'h' },
	{ NULL,		0,		   NULL, 0 },
};

/*
 * "+": stop at the first non-option, so values like -1 stay values;
 * ":": a missing argument is ':', not '?'.
 */
#define SHORT_OPTS	"+:jpsn:o:i:c:tb:fVh"

/*
 * The name of a namespace of "ip netns add": a file in VH_NETNS_RUN_DIR,
 * nothing that leads out of it (as ip netns's invalid_name()).
 */
static bool netns_name_ok(const char *name)
{
	return *name && strlen(name) <= NAME_MAX && !strchr(name, '/') &&
	       strcmp(name, ".") && strcmp(name, "..");
}

static int parse_output(struct vh_opts *opts, struct vh_req *req,
			const char *arg)
{
	opts->json = false;
	opts->openmetrics = false;
	opts->prometheus = false;
	if (!strcmp(arg, "json")) {
		opts->json = true;
	} else if (!strcmp(arg, "openmetrics")) {
		opts->openmetrics = true;
	} else if (!strcmp(arg, "prometheus")) {
		opts->openmetrics = true;
		opts->prometheus = true;
	} else if (strcmp(arg, "text")) {
		return perr(req,
			    "Invalid \"-o\" value \"%s\", expected \"text\", \"json\", \"openmetrics\" or \"prometheus\"",
			    arg);
	}
	return 0;
}

static int parse_number(struct vh_req *req, const char *opt, const char *arg,
			uint32_t max, uint32_t *val)
{
	if (vh_get_u32(arg, val) || !*val || *val > max)
		return perr(req, "Invalid \"%s\" value \"%s\", expected 1 to %u",
			    opt, arg, max);
	return 0;
}

/*
 * One option, given before the object or among the words of a command
 * ("stats -i 1"): opt is its letter, arg its value.  What is given later
 * wins (a line of a batch over the command line), but -n and -b, which
 * are only for the command line.
 */
static int parse_opt(struct vh_opts *opts, struct vh_req *req, int opt,
		     const char *arg)
{
	switch (opt) {
	case 'j':
		return parse_output(opts, req, "json");
	case 'p':
		opts->pretty = true;
		return 0;
	case 's':
		opts->stats++;
		return 0;
	case 'n':
		if (opts->netns)
			return perr(req, "Duplicate argument \"-n\"");
		if (!netns_name_ok(arg))
			return perr(req, "Invalid network namespace name \"%s\"",
				    arg);
		opts->netns = arg;
		return 0;
	case 'o':
		return parse_output(opts, req, arg);
	case 'i':
		return parse_number(req, "-i", arg, VH_INTERVAL_MAX,
				    &opts->interval);
	case 'c':
		return parse_number(req, "-c", arg, UINT32_MAX, &opts->count);
	case 't':
		opts->timestamp = true;
		return 0;
	case 'b':
		if (opts->batch)
			return perr(req, "Duplicate argument \"-b\"");
		opts->batch = arg;
		return 0;
	case 'f':
		opts->force = true;
		return 0;
	case 'V':
		opts->version = true;
		return 0;
	default:
		return perr(req, "Unknown option, try \"vhostctl help\"");
	}
}

/*
 * An option among the words of a command, "-i" or "--interval", when its
 * letter is in allowed: the same as before the object.  argv on its value.
 */
static int parse_word_opt(struct vh_opts *opts, struct vh_req *req,
			  int *argc, char ***argv, const char *allowed)
{
	const char *w = **argv;
	const struct option *lo;

	for (lo = long_opts; lo->name; lo++) {
		bool is_short = w[1] == lo->val && !w[2];

		if (is_short || (w[1] == '-' && !strcmp(w + 2, lo->name)))
			break;
	}
	if (!lo->name || !strchr(allowed, lo->val))
		return unknown_word(req, w);
	if (lo->has_arg == no_argument)
		return parse_opt(opts, req, lo->val, NULL);
	if (next_value(req, argc, argv))
		return -1;
	return parse_opt(opts, req, lo->val, **argv);
}

/* dev show: [ [dev] DEV ] */
static int parse_show(struct vh_req *req, int argc, char **argv)
{
	for (; argc > 0; argc--, argv++) {
		int r = parse_dev_word(req, &argc, &argv,
				       req->sel.kind == VH_SEL_ALL);

		if (r < 0)
			return -1;
		if (req->cmd == VH_CMD_HELP)
			return 0;
		if (!r)
			return unknown_word(req, *argv);
	}
	return 0;
}

/*
 * dev stats: [ [dev] DEV ] [ scope { device | queue } ]
 *	      [ -i SECONDS [ -c COUNT ] ] [ -o FORMAT ]
 */
static int parse_stats(struct vh_opts *opts, struct vh_req *req, int argc,
		       char **argv)
{
	for (; argc > 0; argc--, argv++) {
		int r;

		if ((*argv)[0] == '-' && (*argv)[1]) {
			if (parse_word_opt(opts, req, &argc, &argv, "ico"))
				return -1;
			continue;
		}
		if (!strcmp(*argv, "scope")) {
			if (next_value(req, &argc, &argv))
				return -1;
			if (req->scope != VH_SCOPE_DEFAULT)
				return perr(req, "Duplicate argument \"scope\"");
			if (!strcmp(*argv, "device"))
				req->scope = VH_SCOPE_DEVICE;
			else if (!strcmp(*argv, "queue"))
				req->scope = VH_SCOPE_QUEUE;
			else
				return perr(req,
					    "Invalid \"scope\" value \"%s\", expected \"device\" or \"queue\"",
					    *argv);
			continue;
		}
		r = parse_dev_word(req, &argc, &argv,
				   req->sel.kind == VH_SEL_ALL);
		if (r < 0)
			return -1;
		if (req->cmd == VH_CMD_HELP)
			return 0;
		if (!r)
			return unknown_word(req, *argv);
	}
	return 0;
}

/* queue show: [ [dev] DEV [ index N ] ] */
static int parse_queue_show(struct vh_req *req, int argc, char **argv)
{
	for (; argc > 0; argc--, argv++) {
		int r;

		if (!strcmp(*argv, "index")) {
			if (next_value(req, &argc, &argv))
				return -1;
			if (req->has_index)
				return perr(req, "Duplicate argument \"index\"");
			if (vh_get_u32(*argv, &req->index))
				return perr(req, "Invalid \"index\" value \"%s\"",
					    *argv);
			req->has_index = true;
			continue;
		}
		r = parse_dev_word(req, &argc, &argv,
				   req->sel.kind == VH_SEL_ALL);
		if (r < 0)
			return -1;
		if (req->cmd == VH_CMD_HELP)
			return 0;
		if (!r)
			return unknown_word(req, *argv);
	}
	if (req->has_index && req->sel.kind == VH_SEL_ALL)
		return perr(req, "Argument \"index\" needs a device, give \"dev DEV\"");
	return 0;
}

static int parse_on_off(struct vh_req *req, const char *key, const char *s,
			uint32_t *val)
{
	if (!strcmp(s, "on"))
		*val = 1;
	else if (!strcmp(s, "off"))
		*val = 0;
	else
		return perr(req, "Invalid \"%s\" value \"%s\", expected \"on\" or \"off\"",
			    key, s);
	return 0;
}

/* metamap: the spec's mode names, and "on", which meant map before batch. */
static int parse_metamap(struct vh_req *req, const char *key, const char *s,
			 uint32_t *val)
{
	uint32_t m;

	if (!strcmp(s, "on")) {
		*val = VHOST_METAMAP_MODE_MAP;
		return 0;
	}
	for (m = VHOST_METAMAP_MODE_OFF; m <= VHOST_METAMAP_MODE_BATCH; m++)
		if (vhost_metamap_mode_str(m) &&
		    !strcmp(s, vhost_metamap_mode_str(m))) {
			*val = m;
			return 0;
		}
	return perr(req, "Invalid \"%s\" value \"%s\", expected \"off\", \"batch\" or \"map\"",
		    key, s);
}

/*
 * The tunables of "dev set": keyword, attribute, value parser (NULL: a
 * number), field of struct vh_set, and the bit of enum vhost_tunable by
 * which a namespace's policy grants it ("policy set grant KEYWORD,...").
 */
static const struct set_param {
	const char *key;
	int attr;
	int (*parse)(struct vh_req *req, const char *key, const char *s,
		     uint32_t *val);
	size_t off;
	uint64_t tunable;
} set_params[] = {
	{ "busypoll-us", VHOST_A_DEV_ADMIN_BUSYPOLL_US, NULL,
	  offsetof(struct vh_set, busypoll_us), VHOST_TUNABLE_ADMIN_BUSYPOLL_US },
	{ "zerocopy", VHOST_A_DEV_ZEROCOPY, parse_on_off,
	  offsetof(struct vh_set, zerocopy), VHOST_TUNABLE_ZEROCOPY },
	{ "zcopy-min-len", VHOST_A_DEV_ZCOPY_MIN_LEN, NULL,
	  offsetof(struct vh_set, zcopy_min_len), VHOST_TUNABLE_ZCOPY_MIN_LEN },
	{ "metamap", VHOST_A_DEV_METAMAP, parse_metamap,
	  offsetof(struct vh_set, metamap), VHOST_TUNABLE_METAMAP },
	/* a string: parse_set_label() */
	{ "label", VHOST_A_DEV_LABEL, NULL, 0, VHOST_TUNABLE_LABEL },
};

const char *vh_tunable_keyword(uint64_t bit)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(set_params); i++)
		if (set_params[i].tunable == bit)
			return set_params[i].key;
	return NULL;
}

uint64_t vh_tunables_all(void)
{
	uint64_t all = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(set_params); i++)
		all |= set_params[i].tunable;
	return all;
}

static const struct set_param *find_set_param(const char *word)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(set_params); i++)
		if (!strcmp(word, set_params[i].key))
			return &set_params[i];
	return NULL;
}

static int parse_set_value(struct vh_req *req, const struct set_param *p,
			   const char *s)
{
	uint32_t *field = (uint32_t *)((char *)&req->set + p->off);

	if (req->set.mask & VH_BIT(p->attr))
		return perr(req, "Duplicate argument \"%s\"", p->key);
	if (p->parse) {
		if (p->parse(req, p->key, s, field))
			return -1;
	} else if (vh_get_u32(s, field)) {
		return perr(req, "Invalid \"%s\" value \"%s\"", p->key, s);
	}
	req->set.mask |= VH_BIT(p->attr);
	return 0;
}

static int parse_set_label(struct vh_req *req, const char *s)
{
	if (req->set.mask & VH_BIT(VHOST_A_DEV_LABEL))
		return perr(req, "Duplicate argument \"label\"");
	if (strlen(s) > VHOST_LABEL_LEN_MAX)
		return perr(req, "Invalid \"label\" value \"%s\", longer than %d bytes",
			    s, VHOST_LABEL_LEN_MAX);
	req->set.label = s;
	req->set.mask |= VH_BIT(VHOST_A_DEV_LABEL);
	return 0;
}

/*
 * dev set: { [dev] DEV | owner PID | label LABEL }
 *	    { busypoll-us N | zerocopy on|off | ... | label NEW } ...
 * "label" first selects, later sets.
 */
static int parse_set(struct vh_req *req, int argc, char **argv)
{
	int pos;

	for (pos = 0; argc > 0; pos++, argc--, argv++) {
		const struct set_param *p = find_set_param(*argv);
		int r;

		if (p && p->attr == VHOST_A_DEV_LABEL && pos == 0)
			p = NULL;
		if (p && p->attr == VHOST_A_DEV_LABEL) {
			if (next_value(req, &argc, &argv) ||
			    parse_set_label(req, *argv))
				return -1;
			continue;
		}
		if (p) {
			if (next_value(req, &argc, &argv) ||
			    parse_set_value(req, p, *argv))
				return -1;
			continue;
		}
		r = parse_dev_word(req, &argc, &argv, pos == 0);
		if (r < 0)
			return -1;
		if (req->cmd == VH_CMD_HELP)
			return 0;
		if (!r)
			return unknown_word(req, *argv);
	}
	if (req->sel.kind == VH_SEL_ALL)
		return perr(req, "Device name is missing");
	if (!req->set.mask)
		return perr(req,
			    "Nothing to set, give busypoll-us, zerocopy, zcopy-min-len, metamap or label");
	return 0;
}

/* ---- defaults ------------------------------------------------------------ */

static int parse_grants(struct vh_req *req, const char *key,
			const char *expected, const char *s, uint64_t *grants);

#define UNSET_EXPECTED	"expected \"all\" or a comma-separated list of busypoll-us, zerocopy, zcopy-min-len, metamap"

uint64_t vh_set_tunables(const struct vh_set *set)
{
	uint64_t t = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(set_params); i++)
		if (set->mask & VH_BIT(set_params[i].attr))
			t |= set_params[i].tunable;
	return t;
}

/* unset { all | TUNABLE[,TUNABLE...] }: the defaults to remove. */
static int parse_unset(struct vh_req *req, const char *s)
{
	if (req->set.unset)
		return perr(req, "Duplicate argument \"unset\"");
	if (!strcmp(s, "none"))
		return perr(req, "Invalid \"unset\" value \"none\", " UNSET_EXPECTED);
	if (parse_grants(req, "unset", UNSET_EXPECTED, s, &req->set.unset))
		return -1;
	if (!strcmp(s, "all"))
		req->set.unset &= ~(uint64_t)VHOST_TUNABLE_LABEL;
	if (req->set.unset & VHOST_TUNABLE_LABEL)
		return perr(req, "Invalid \"unset\" value \"%s\": a label has no default",
			    s);
	return 0;
}

/* show defaults; set defaults { busypoll-us N | zerocopy on|off | ... } ... */
static int parse_defaults_cmd(struct vh_req *req, const char *cmd, int argc,
			      char **argv)
{
	req->help = VH_HELP_DEV;
	if (!strcmp(cmd, "show")) {
		req->cmd = VH_CMD_DEFAULTS_SHOW;
		return argc ? unknown_word(req, *argv) : 0;
	}
	req->cmd = VH_CMD_DEFAULTS_SET;
	for (; argc > 0; argc--, argv++) {
		const struct set_param *p = find_set_param(*argv);

		if (!strcmp(*argv, "help")) {
			req->cmd = VH_CMD_HELP;
			return 0;
		}
		if (!strcmp(*argv, "unset")) {
			if (next_value(req, &argc, &argv) ||
			    parse_unset(req, *argv))
				return -1;
			continue;
		}
		if (!p || p->attr == VHOST_A_DEV_LABEL)
			return unknown_word(req, *argv);
		if (next_value(req, &argc, &argv) ||
		    parse_set_value(req, p, *argv))
			return -1;
	}
	if (vh_set_tunables(&req->set) & req->set.unset)
		return perr(req, "Argument \"unset\" names a default that is also given");
	if (!req->set.mask && !req->set.unset)
		return perr(req,
			    "Nothing to set, give busypoll-us, zerocopy, zcopy-min-len, metamap or unset");
	return 0;
}

/* ---- policy ---------------------------------------------------------------- */

#define GRANT_EXPECTED	"expected \"none\", \"all\" or a comma-separated list of busypoll-us, zerocopy, zcopy-min-len, metamap, label"

/*
 * grant { none | all | KEYWORD[,KEYWORD...] }: the keywords of "dev set"
 * (key and expected: the argument's name and what it takes, for the
 * message).
 */
static int parse_grants(struct vh_req *req, const char *key,
			const char *expected, const char *s, uint64_t *grants)
{
	const char *p = s, *end;
	uint64_t mask = 0;
	unsigned int i;

	if (!strcmp(s, "none") || !strcmp(s, "all")) {
		*grants = !strcmp(s, "all") ? vh_tunables_all() : 0;
		return 0;
	}
	for (;;) {
		const struct set_param *found = NULL;

		end = strchr(p, ',');
		if (!end)
			end = p + strlen(p);
		for (i = 0; i < ARRAY_SIZE(set_params); i++)
			if (strlen(set_params[i].key) == (size_t)(end - p) &&
			    !strncmp(p, set_params[i].key, end - p))
				found = &set_params[i];
		if (!found)
			return perr(req, "Invalid \"%s\" value \"%s\", %s",
				    key, s, expected);
		mask |= found->tunable;
		if (!*end)
			break;
		p = end + 1;
	}
	*grants = mask;
	return 0;
}

/* policy set: { grant GRANTS | busypoll-us-max USEC } ... */
static int parse_policy_set(struct vh_req *req, int argc, char **argv)
{
	struct vh_policy *pol = &req->policy;

	for (; argc > 0; argc--, argv++) {
		if (!strcmp(*argv, "help")) {
			req->cmd = VH_CMD_HELP;
			return 0;
		}
		if (!strcmp(*argv, "grant")) {
			if (next_value(req, &argc, &argv))
				return -1;
			if (pol->mask & VH_BIT(VHOST_A_POLICY_GRANTS))
				return perr(req, "Duplicate argument \"grant\"");
			if (parse_grants(req, "grant", GRANT_EXPECTED, *argv,
					 &pol->grants))
				return -1;
			pol->mask |= VH_BIT(VHOST_A_POLICY_GRANTS);
			continue;
		}
		if (!strcmp(*argv, "busypoll-us-max")) {
			if (next_value(req, &argc, &argv))
				return -1;
			if (pol->mask & VH_BIT(VHOST_A_POLICY_BUSYPOLL_US_MAX))
				return perr(req, "Duplicate argument \"busypoll-us-max\"");
			if (vh_get_u32(*argv, &pol->busypoll_us_max))
				return perr(req, "Invalid \"busypoll-us-max\" value \"%s\"",
					    *argv);
			pol->mask |= VH_BIT(VHOST_A_POLICY_BUSYPOLL_US_MAX);
			continue;
		}
		return unknown_word(req, *argv);
	}
	if (!pol->mask)
		return perr(req, "Nothing to set, give grant or busypoll-us-max");
	return 0;
}

/* policy show: nothing but help */
static int parse_policy_show(struct vh_req *req, int argc, char **argv)
{
	if (argc > 0 && !strcmp(*argv, "help")) {
		req->cmd = VH_CMD_HELP;
		return 0;
	}
	if (argc > 0)
		return unknown_word(req, *argv);
	return 0;
}

/* The commands of "policy"; also "show policy" and "set policy".  1: not one. */
static int parse_policy_cmd(struct vh_req *req, const char *cmd, int argc,
			    char **argv)
{
	req->help = VH_HELP_POLICY;
	if (!strcmp(cmd, "show") || !strcmp(cmd, "list")) {
		req->cmd = VH_CMD_POLICY_SHOW;
		return parse_policy_show(req, argc, argv);
	}
	if (!strcmp(cmd, "set")) {
		req->cmd = VH_CMD_POLICY_SET;
		return parse_policy_set(req, argc, argv);
	}
	if (!strcmp(cmd, "help")) {
		req->cmd = VH_CMD_HELP;
		return 0;
	}
	return 1;
}

/* policy [ { show | list } | set ... | help ] */
static int parse_policy(struct vh_req *req, int argc, char **argv)
{
	int r;

	req->help = VH_HELP_POLICY;
	if (argc < 1) {
		req->cmd = VH_CMD_POLICY_SHOW;
		return 0;
	}
	r = parse_policy_cmd(req, *argv, argc - 1, argv + 1);
	if (r > 0)
		return perr(req, "Command \"%s\" is unknown, try \"vhostctl policy help\"",
			    *argv);
	return r;
}

/* The commands of "dev", also accepted at the top level.  1: not one. */
static int parse_dev_cmd(struct vh_opts *opts, struct vh_req *req,
			 const char *cmd, int argc, char **argv)
{
	req->help = VH_HELP_DEV;
	if (!strcmp(cmd, "show") || !strcmp(cmd, "list")) {
		req->cmd = VH_CMD_SHOW;
		return parse_show(req, argc, argv);
	}
	if (!strcmp(cmd, "stats")) {
		req->cmd = VH_CMD_STATS;
		return parse_stats(opts, req, argc, argv);
	}
	if (!strcmp(cmd, "set")) {
		req->cmd = VH_CMD_SET;
		return parse_set(req, argc, argv);
	}
	if (!strcmp(cmd, "help")) {
		req->cmd = VH_CMD_HELP;
		return 0;
	}
	return 1;
}

/* queue [ { show | list } ... | help ] */
static int parse_queue(struct vh_req *req, int argc, char **argv)
{
	req->help = VH_HELP_QUEUE;
	req->cmd = VH_CMD_QUEUE_SHOW;
	if (argc < 1)
		return 0;
	if (!strcmp(*argv, "show") || !strcmp(*argv, "list"))
		return parse_queue_show(req, argc - 1, argv + 1);
	if (!strcmp(*argv, "help")) {
		req->cmd = VH_CMD_HELP;
		return 0;
	}
	return perr(req, "Command \"%s\" is unknown, try \"vhostctl queue help\"",
		    *argv);
}

/* monitor [ -t ] [ watch ] */
static int parse_monitor(struct vh_opts *opts, struct vh_req *req, int argc,
			 char **argv)
{
	req->cmd = VH_CMD_MONITOR;
	for (; argc > 0; argc--, argv++) {
		if (!strcmp(*argv, "help")) {
			req->cmd = VH_CMD_HELP;
			return 0;
		}
		if (!strcmp(*argv, "watch")) {
			req->watch = true;
			continue;
		}
		if ((*argv)[0] != '-')
			return unknown_word(req, *argv);
		if (parse_word_opt(opts, req, &argc, &argv, "t"))
			return -1;
	}
	return 0;
}

/* apply [ check ] FILE */
static int parse_apply(struct vh_req *req, int argc, char **argv)
{
	req->cmd = VH_CMD_APPLY;
	if (argc > 0 && !strcmp(*argv, "help")) {
		req->cmd = VH_CMD_HELP;
		return 0;
	}
	if (argc > 1 && !strcmp(*argv, "check")) {
		req->check = true;
		argc--, argv++;
	}
	if (argc < 1)
		return perr(req, "File name is missing, give \"apply [ check ] FILE\"");
	if (argc > 1)
		return perr(req, "Unknown keyword \"%s\" after the file name",
			    argv[1]);
	req->file = *argv;
	return 0;
}

static int parse_object(struct vh_opts *opts, struct vh_req *req, int argc,
			char **argv)
{
	const char *obj = *argv;
	int r;

	argc--, argv++;
	if (!strcmp(obj, "dev")) {
		req->help = VH_HELP_DEV;
		if (argc < 1) {
			req->cmd = VH_CMD_SHOW;
			return 0;
		}
		r = parse_dev_cmd(opts, req, *argv, argc - 1, argv + 1);
		if (r > 0)
			return perr(req, "Command \"%s\" is unknown, try \"vhostctl dev help\"",
				    *argv);
		return r;
	}
	if (!strcmp(obj, "queue"))
		return parse_queue(req, argc, argv);
	if (!strcmp(obj, "policy"))
		return parse_policy(req, argc, argv);
	/*
	 * "show policy" and "set policy ...": the policy, not a device whose
	 * TAP is named "policy" (that one is "show dev policy").
	 */
	if ((!strcmp(obj, "show") || !strcmp(obj, "set")) && argc > 0 &&
	    !strcmp(*argv, "policy"))
		return parse_policy_cmd(req, obj, argc - 1, argv + 1);
	/* the same for "show defaults" and "set defaults ..." */
	if ((!strcmp(obj, "show") || !strcmp(obj, "set")) && argc > 0 &&
	    !strcmp(*argv, "defaults"))
		return parse_defaults_cmd(req, obj, argc - 1, argv + 1);
	if (!strcmp(obj, "monitor"))
		return parse_monitor(opts, req, argc, argv);
	if (!strcmp(obj, "status")) {
		req->cmd = VH_CMD_STATUS;
		return argc ? unknown_word(req, *argv) : 0;
	}
	if (!strcmp(obj, "apply"))
		return parse_apply(req, argc, argv);
	if (!strcmp(obj, "help")) {
		req->cmd = VH_CMD_HELP;
		return 0;
	}
	r = parse_dev_cmd(opts, req, obj, argc, argv);
	if (r > 0) {
		req->help = VH_HELP_MAIN;
		return perr(req, "Object \"%s\" is unknown, try \"vhostctl help\"",
			    obj);
	}
	return r;
}

static int parse_options(int argc, char **argv, struct vh_opts *opts,
			 struct vh_req *req)
{
	int opt;

	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, SHORT_OPTS, long_opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			req->cmd = VH_CMD_HELP;
			return 0;
		case ':':
			return perr(req, "Missing value for \"%s\"",
				    argv[optind - 1]);
		case '?':
			return perr(req, "Unknown option \"%s\", try \"vhostctl help\"",
				    argv[optind - 1]);
		default:
			if (parse_opt(opts, req, opt, optarg))
				return -1;
		}
	}
	return 0;
}

/* Options of stats that go together only in some ways. */
static int check_stats_opts(const struct vh_opts *opts, struct vh_req *req)
{
	if (opts->count && !opts->interval)
		return perr(req, "Option \"-c\" needs \"-i\"");
	if (opts->interval && opts->openmetrics)
		return perr(req, "\"-o %s\" prints counters, not rates: it does not take \"-i\"",
			    opts->prometheus ? "prometheus" : "openmetrics");
	return 0;
}

int vh_parse_command(int argc, char **argv, struct vh_opts *opts,
		     struct vh_req *req)
{
	memset(req, 0, sizeof(*req));
	if (argc < 1)
		return -1;	/* no object: usage on stderr, as "ip" does */
	if (parse_object(opts, req, argc, argv))
		return -1;
	if (req->cmd != VH_CMD_STATS)
		return 0;
	if (req->scope == VH_SCOPE_DEFAULT)
		req->scope = opts->stats >= 2 ? VH_SCOPE_QUEUE : VH_SCOPE_DEVICE;
	return check_stats_opts(opts, req);
}

int vh_parse_cmdline(int argc, char **argv, struct vh_opts *opts,
		     struct vh_req *req)
{
	memset(opts, 0, sizeof(*opts));
	memset(req, 0, sizeof(*req));
	if (parse_options(argc, argv, opts, req))
		return -1;
	if (req->cmd == VH_CMD_HELP)
		return 0;
	if (opts->version) {
		req->cmd = VH_CMD_VERSION;
		return 0;
	}
	argc -= optind;
	argv += optind;
	if (opts->batch) {
		if (argc > 0)
			return perr(req,
				    "Option \"-b\" takes no command, \"%s\" belongs in the file",
				    *argv);
		req->cmd = VH_CMD_BATCH;
		return 0;
	}
	return vh_parse_command(argc, argv, opts, req);
}

int vh_parse_apply_line(char *line, const char **netns, struct vh_req *req)
{
	char *words[VH_LINE_MAX_WORDS], **w = words;
	struct vh_opts opts = {};
	int n;

	*netns = NULL;
	n = vh_split_line(line, words, ARRAY_SIZE(words), req);
	if (n <= 0)
		return n;
	if (!strcmp(*w, "-n") || !strcmp(*w, "--netns")) {
		if (n < 2)
			return perr(req, "Missing value for \"%s\"", *w);
		*netns = w[1];
		w += 2;
		n -= 2;
		if (!n)
			return perr(req, "Command is missing after \"-n %s\"",
				    *netns);
	}
	if (vh_parse_command(n, w, &opts, req))
		return -1;
	if (req->cmd != VH_CMD_DEFAULTS_SET && req->cmd != VH_CMD_POLICY_SET)
		return perr(req,
			    "Not a line of an apply file, which holds \"set defaults\" and \"set policy\" commands only");
	return 1;
}

int vh_split_line(char *line, char **argv, int max, struct vh_req *req)
{
	char *in = line, *out = line;
	int argc = 0;

	memset(req, 0, sizeof(*req));
	for (;;) {
		char quote = 0;

		while (isspace((unsigned char)*in))
			in++;
		if (!*in || *in == '#')
			break;
		if (argc >= max - 1)
			return perr(req, "Too many words, more than %d", max - 1);
		argv[argc++] = out;
		for (; *in && (quote || !isspace((unsigned char)*in)); in++) {
			if (*in == quote) {
				quote = 0;
				continue;
			}
			if (!quote && (*in == '\'' || *in == '"')) {
				quote = *in;
				continue;
			}
			if (*in == '\\' && quote != '\'' && in[1])
				in++;
			*out++ = *in;
		}
		if (quote)
			return perr(req, "Missing closing quote %c", quote);
		/* out is behind in: the word ends on its blank, or on the end */
		if (*in)
			in++;
		*out++ = '\0';
	}
	argv[argc] = NULL;
	return argc;
}

void vh_usage(FILE *f, enum vh_help which)
{
	if (which == VH_HELP_MAIN)
		fprintf(f,
			"Usage: vhostctl [ OPTIONS ] OBJECT { COMMAND | help }\n"
			"       vhostctl [ OPTIONS ] { show | set | stats } ...\n"
			"       vhostctl [ OPTIONS ] monitor [ -t ] [ watch ]\n"
			"       vhostctl [ OPTIONS ] status\n"
			"       vhostctl [ OPTIONS ] apply [ check ] FILE\n"
			"       vhostctl [ OPTIONS ] -b FILE\n"
			"where  OBJECT := { dev | queue | policy }\n"
			"       OPTIONS := { -j | --json | -p | --pretty | -s | --stats |\n"
			"                    -o FORMAT | --output FORMAT |\n"
			"                    -i SECONDS | --interval SECONDS |\n"
			"                    -c COUNT | --count COUNT | -t | --timestamp |\n"
			"                    -n NETNS | --netns NETNS |\n"
			"                    -b FILE | --batch FILE | -f | --force |\n"
			"                    -V | --version | -h | --help }\n"
			"       FILE := { PATH | - }\n");
	if (which == VH_HELP_MAIN || which == VH_HELP_DEV)
		fprintf(f,
			"Usage: vhostctl dev show [ [ dev ] DEV ]\n"
			"       vhostctl dev set [ dev ] DEV [ busypoll-us USEC ] [ zerocopy { on | off } ]\n"
			"                                    [ zcopy-min-len BYTES ] [ metamap { off | batch | map } ]\n"
			"                                    [ label LABEL ]\n"
			"       vhostctl { show defaults | set defaults [ busypoll-us USEC ] ...\n"
			"                                 [ unset { all | TUNABLE[,TUNABLE...] } ] }\n"
			"       vhostctl dev stats [ [ dev ] DEV ] [ scope { device | queue } ]\n"
			"                          [ -i SECONDS [ -c COUNT ] ] [ -o FORMAT ]\n"
			"       vhostctl dev help\n"
			"where  FORMAT := { text | json | openmetrics | prometheus }\n");
	if (which == VH_HELP_MAIN || which == VH_HELP_QUEUE)
		fprintf(f,
			"Usage: vhostctl queue show [ [ dev ] DEV [ index N ] ]\n"
			"       vhostctl queue help\n");
	if (which != VH_HELP_POLICY)
		fprintf(f, "where  DEV := { ID | vhostN | IFNAME of the devices' TAP backend |\n"
			   "                owner PID | label LABEL }\n");
	if (which == VH_HELP_MAIN || which == VH_HELP_POLICY)
		fprintf(f,
			"Usage: vhostctl policy show\n"
			"       vhostctl policy set [ grant GRANTS ] [ busypoll-us-max USEC ]\n"
			"       vhostctl policy help\n"
			"where  GRANTS := { none | all | TUNABLE[,TUNABLE...] }\n"
			"       TUNABLE := { busypoll-us | zerocopy | zcopy-min-len | metamap | label }\n");
}
