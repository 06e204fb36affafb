// SPDX-License-Identifier: GPL-2.0
/*
 * Command line parsing: argv -> struct vh_opts + struct vh_req.  No I/O: a
 * parse error leaves a message in req->err and nothing is sent anywhere.
 * Keywords match exactly (strcmp), as iproute2's newer keywords do.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
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

bool vh_is_vhost_name(const char *s)
{
	size_t i, n = strlen("vhost");

	if (strncmp(s, "vhost", n) || !s[n] || strlen(s) >= VH_NAME_LEN)
		return false;
	for (i = n; s[i]; i++)
		if (!isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static int parse_dev_name(struct vh_req *req, const char *name)
{
	if (req->dev)
		return perr(req, "Duplicate argument \"dev\"");
	if (!*name || strlen(name) >= IFNAMSIZ)
		return perr(req, "Invalid device name \"%s\"", name);
	req->dev = name;
	return 0;
}

/*
 * The words of every device command: "dev NAME", "help", and a bare NAME
 * where @bare allows one.  Returns 1 when *argv was one of them (argv then
 * on its last word), 0 when it was not, -1 on error.
 */
static int parse_dev_word(struct vh_req *req, int *argc, char ***argv,
			  bool bare)
{
	if (!strcmp(**argv, "dev")) {
		if (*argc < 2)
			return perr(req, "Device name is missing");
		(*argc)--, (*argv)++;
		return parse_dev_name(req, **argv) ? -1 : 1;
	}
	if (!strcmp(**argv, "help")) {
		req->cmd = VH_CMD_HELP;
		req->help = VH_HELP_DEV;
		return 1;
	}
	if (bare)
		return parse_dev_name(req, **argv) ? -1 : 1;
	return 0;
}

static int unknown_dev_word(struct vh_req *req, const char *word)
{
	return perr(req, "Unknown keyword \"%s\", try \"vhostctl dev help\"",
		    word);
}

/* show / stats: [ [dev] DEV ] */
static int parse_dev_filter(struct vh_req *req, int argc, char **argv)
{
	for (; argc > 0; argc--, argv++) {
		int r = parse_dev_word(req, &argc, &argv, !req->dev);

		if (r < 0)
			return -1;
		if (req->cmd == VH_CMD_HELP)
			return 0;
		if (!r)
			return unknown_dev_word(req, *argv);
	}
	return 0;
}

static int parse_on_off(struct vh_req *req, const char *key, const char *s,
			uint8_t *val)
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

enum set_kind { SET_U32, SET_ON_OFF };

static const struct set_param {
	const char *key;
	int attr;
	enum set_kind kind;
	size_t off;
} set_params[] = {
	{ "busypoll-us", VHOST_A_DEV_BUSYPOLL_US, SET_U32,
	  offsetof(struct vh_set, busypoll_us) },
	{ "zerocopy", VHOST_A_DEV_ZEROCOPY, SET_ON_OFF,
	  offsetof(struct vh_set, zerocopy) },
	{ "zcopy-min-len", VHOST_A_DEV_ZCOPY_MIN_LEN, SET_U32,
	  offsetof(struct vh_set, zcopy_min_len) },
	{ "metamap", VHOST_A_DEV_METAMAP, SET_ON_OFF,
	  offsetof(struct vh_set, metamap) },
};

/* set: [dev] DEV { busypoll-us N | zerocopy on|off | ... } ... */
static int parse_set(struct vh_req *req, int argc, char **argv)
{
	int pos;

	for (pos = 0; argc > 0; pos++, argc--, argv++) {
		const struct set_param *p = NULL;
		unsigned int i;

		for (i = 0; i < ARRAY_SIZE(set_params); i++)
			if (!strcmp(*argv, set_params[i].key))
				p = &set_params[i];
		if (p) {
			char *field = (char *)&req->set + p->off;

			if (argc < 2)
				return perr(req, "Missing value for \"%s\"", p->key);
			argc--, argv++;
			if (req->set.mask & VH_BIT(p->attr))
				return perr(req, "Duplicate argument \"%s\"", p->key);
			if (p->kind == SET_ON_OFF) {
				if (parse_on_off(req, p->key, *argv,
						 (uint8_t *)field))
					return -1;
			} else if (vh_get_u32(*argv, (uint32_t *)field)) {
				return perr(req, "Invalid \"%s\" value \"%s\"",
					    p->key, *argv);
			}
			req->set.mask |= VH_BIT(p->attr);
		} else {
			int r = parse_dev_word(req, &argc, &argv, pos == 0);

			if (r < 0)
				return -1;
			if (req->cmd == VH_CMD_HELP)
				return 0;
			if (!r)
				return unknown_dev_word(req, *argv);
		}
	}
	if (!req->dev)
		return perr(req, "Device name is missing");
	if (!req->set.mask)
		return perr(req, "Nothing to set, give busypoll-us, zerocopy, zcopy-min-len or metamap");
	return 0;
}

/* The commands of "dev", also accepted at the top level. */
static int parse_dev_cmd(struct vh_req *req, const char *cmd, int argc,
			 char **argv)
{
	if (!strcmp(cmd, "show") || !strcmp(cmd, "list")) {
		req->cmd = VH_CMD_SHOW;
		return parse_dev_filter(req, argc, argv);
	}
	if (!strcmp(cmd, "stats")) {
		req->cmd = VH_CMD_STATS;
		return parse_dev_filter(req, argc, argv);
	}
	if (!strcmp(cmd, "set")) {
		req->cmd = VH_CMD_SET;
		return parse_set(req, argc, argv);
	}
	if (!strcmp(cmd, "help")) {
		req->cmd = VH_CMD_HELP;
		req->help = VH_HELP_DEV;
		return 0;
	}
	return 1;	/* not a dev command */
}

static const struct option long_opts[] = {
	{ "json",	no_argument, NULL, 'j' },
	{ "pretty",	no_argument, NULL, 'p' },
	{ "stats",	no_argument, NULL, 's' },
	{ "statistics",	no_argument, NULL, 's' },
	{ "Version",	no_argument, NULL, 'V' },
	{ "version",	no_argument, NULL, 'V' },
	{ "help",	no_argument, NULL, 'h' },
	{ NULL,		0,	     NULL, 0 },
};

int vh_parse_cmdline(int argc, char **argv, struct vh_opts *opts,
		     struct vh_req *req)
{
	const char *obj;
	int opt, r;

	memset(opts, 0, sizeof(*opts));
	memset(req, 0, sizeof(*req));
	/* "+": stop at the first non-option, so values like -1 stay values. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+jpsVh", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			opts->json = true;
			break;
		case 'p':
			opts->pretty = true;
			break;
		case 's':
			opts->stats++;
			break;
		case 'V':
			opts->version = true;
			break;
		case 'h':
			req->cmd = VH_CMD_HELP;
			req->help = VH_HELP_MAIN;
			return 0;
		default:
			return perr(req, "Unknown option \"%s\", try \"vhostctl help\"",
				    argv[optind - 1]);
		}
	}
	if (opts->version) {
		req->cmd = VH_CMD_VERSION;
		return 0;
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		/* No object: usage on stderr, as "ip" does. */
		req->help = VH_HELP_MAIN;
		return -1;
	}
	obj = *argv;
	argc--, argv++;

	if (!strcmp(obj, "dev")) {
		if (argc < 1) {
			req->cmd = VH_CMD_SHOW;
			return 0;
		}
		r = parse_dev_cmd(req, *argv, argc - 1, argv + 1);
		if (r > 0)
			return perr(req, "Command \"%s\" is unknown, try \"vhostctl dev help\"",
				    *argv);
		return r;
	}
	if (!strcmp(obj, "monitor")) {
		req->cmd = VH_CMD_MONITOR;
		if (argc > 0 && !strcmp(*argv, "help")) {
			req->cmd = VH_CMD_HELP;
			req->help = VH_HELP_MAIN;
		} else if (argc > 0) {
			return perr(req, "Unknown keyword \"%s\", try \"vhostctl help\"",
				    *argv);
		}
		return 0;
	}
	if (!strcmp(obj, "help")) {
		req->cmd = VH_CMD_HELP;
		req->help = VH_HELP_MAIN;
		return 0;
	}
	r = parse_dev_cmd(req, obj, argc, argv);
	if (r > 0)
		return perr(req, "Object \"%s\" is unknown, try \"vhostctl help\"",
			    obj);
	return r;
}

void vh_usage(FILE *f, enum vh_help which)
{
	if (which == VH_HELP_MAIN)
		fprintf(f,
			"Usage: vhostctl [ OPTIONS ] OBJECT { COMMAND | help }\n"
			"       vhostctl [ OPTIONS ] { show | set | stats } ...\n"
			"       vhostctl [ OPTIONS ] monitor\n"
			"where  OBJECT := { dev }\n"
			"       OPTIONS := { -j | --json | -p | --pretty | -s | --stats |\n"
			"                    -V | --version | -h | --help }\n");
	fprintf(f,
		"Usage: vhostctl dev show [ [ dev ] DEV ]\n"
		"       vhostctl dev set [ dev ] DEV [ busypoll-us USEC ] [ zerocopy { on | off } ]\n"
		"                                    [ zcopy-min-len BYTES ] [ metamap { on | off } ]\n"
		"       vhostctl dev stats [ [ dev ] DEV ]\n"
		"       vhostctl dev help\n"
		"where  DEV := { vhostN | IFNAME of the device's TAP backend }\n");
}
