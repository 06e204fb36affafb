// SPDX-License-Identifier: GPL-2.0
/*
 * What went wrong, as iproute2 says it: "Error: <kernel message>." (the
 * extended ACK, lib/libnetlink.c's print_ext_ack_msg()), else a message from
 * the errno.  The generated library leaves a failed request's errno and
 * extended ACK in struct ynl_error, the ACK formatted by ynl_ext_ack_check()
 * (tools/net/ynl/lib/ynl.c) as one of
 *
 *   Kernel error: 'MSG'
 *   Kernel error: 'MSG' (bad attribute: .ATTR[, missing attribute: .ATTR])
 *   Kernel error: bad attribute: .ATTR
 *   <strerror(code)>				no extended ACK
 *
 * ("Kernel warning: ..." the same for an ACK that carried a message).
 */
#include <errno.h>
#include <string.h>

#include "vhostctl.h"

#define KERNEL_ERROR	"Kernel error: "
#define KERNEL_WARNING	"Kernel warning: "

static const char *after_prefix(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) ? NULL : s + n;
}

/* The last occurrence of needle in s, or NULL. */
static const char *last_strstr(const char *s, const char *needle)
{
	const char *p, *last = NULL;

	for (p = strstr(s, needle); p; p = strstr(p + 1, needle))
		last = p;
	return last;
}

/* MSG of "'MSG'" or "'MSG' (...attribute: ...)" into buf; false if none. */
static bool quoted_msg(const char *s, char *buf, size_t len)
{
	static const char *const tails[] = {
		"' (bad attribute: ",
		"' (missing attribute: ",
	};
	size_t n = strlen(s), end = 0;
	unsigned int i;

	if (n < 2 || s[0] != '\'')
		return false;
	if (s[n - 1] == ')') {
		for (i = 0; i < ARRAY_SIZE(tails) && !end; i++) {
			const char *p = last_strstr(s + 1, tails[i]);

			if (p)
				end = p - s;
		}
	}
	if (!end && s[n - 1] == '\'')
		end = n - 1;
	if (!end)
		return false;
	snprintf(buf, len, "%.*s", (int)(end - 1), s + 1);
	return true;
}

/* "<what>: <msg>." without doubling a final period. */
static void sentence(char *buf, size_t len, const char *what, const char *msg)
{
	size_t n = strlen(msg);

	snprintf(buf, len, "%s: %s%s", what, msg,
		 n && msg[n - 1] == '.' ? "" : ".");
}

/* "bad attribute: .x" -> "bad attribute: x" */
static void attr_info(const char *s, char *buf, size_t len)
{
	size_t i = 0;

	for (; *s && i + 1 < len; s++) {
		if (*s == '.' && i >= 2 && buf[i - 1] == ' ' && buf[i - 2] == ':')
			continue;
		buf[i++] = *s;
	}
	buf[i] = '\0';
}

/*
 * The numbers vhostctl sends as given and the kernel checks against the
 * spec's bounds, by the name YNL reports, with vhostctl's keyword and the
 * bounds (zerocopy and metamap are words vhostctl checks itself).
 */
static const struct {
	const char *attr;
	const char *key;
	unsigned int min, max;
} ranges[] = {
	{ "admin-busypoll-us", "busypoll-us", 0, VHOST_BUSYPOLL_US_MAX },
	{ "zcopy-min-len", "zcopy-min-len", VHOST_ZCOPY_MIN_LEN_MIN,
	  VHOST_ZCOPY_MIN_LEN_MAX },
	{ "busypoll-us-max", "busypoll-us-max", 0, VHOST_BUSYPOLL_US_MAX },
};

/*
 * The extended ACK names a bounded attribute ("(bad attribute: .x") that
 * msg does not: " (KEYWORD: MIN to MAX)" into buf, else "" (a device
 * not found needs no attribute).
 */
static void bad_attr(const char *rest, const char *msg, char *buf, size_t len)
{
	const char *p = strstr(rest, "' (bad attribute: .");
	char name[64];
	unsigned int i;
	size_t n;

	buf[0] = '\0';
	if (!p)
		return;
	p += strlen("' (bad attribute: .");
	n = strcspn(p, ",)");
	if (!n || n >= sizeof(name))
		return;
	snprintf(name, sizeof(name), "%.*s", (int)n, p);
	for (i = 0; i < ARRAY_SIZE(ranges); i++) {
		if (strcmp(name, ranges[i].attr))
			continue;
		if (strstr(msg, ranges[i].attr) || strstr(msg, ranges[i].key))
			return;
		snprintf(buf, len, " (%s: %u to %u)", ranges[i].key,
			 ranges[i].min, ranges[i].max);
		return;
	}
}

void vh_err_format(const struct ynl_error *e, const char *dev, char *buf,
		   size_t len)
{
	char msg[sizeof(e->msg)], info[sizeof(e->msg)];
	const char *rest = after_prefix(e->msg, KERNEL_ERROR);

	if (rest && quoted_msg(rest, msg, sizeof(msg))) {
		size_t n = strlen(msg);

		if (n && msg[n - 1] == '.')
			msg[--n] = '\0';
		bad_attr(rest, msg, info, sizeof(info));
		snprintf(buf, len, "Error: %s%s.", msg, info);
	} else if (rest) {
		attr_info(rest, info, sizeof(info));
		snprintf(buf, len, "Error: %s (%s).", strerror(e->code), info);
	} else if (e->code >= __YNL_ERRNO_END) {
		/* The library's own: a malformed reply, an interrupted dump... */
		sentence(buf, len, "Error", e->msg);
	} else if (e->code == ENODEV && dev) {
		snprintf(buf, len, "Cannot find device \"%s\"", dev);
	} else {
		sentence(buf, len, "Error", strerror(e->code));
	}
}

bool vh_warn_format(const struct ynl_error *e, char *buf, size_t len)
{
	const char *rest = after_prefix(e->msg, KERNEL_WARNING);
	char msg[sizeof(e->msg)];

	if (!rest || !quoted_msg(rest, msg, sizeof(msg)))
		return false;
	sentence(buf, len, "Warning", msg);
	return true;
}

void vh_sock_err_format(const struct ynl_error *e, char *buf, size_t len)
{
	if (e->code == ENOENT)
		snprintf(buf, len,
			 "Error: the kernel has no \"%s\" generic netlink family (no vhost admin plane in this kernel, or the vhost_admin module is not loaded).",
			 VHOST_FAMILY_NAME);
	else
		snprintf(buf, len,
			 "Error: cannot open the \"%s\" generic netlink family: %s%s%s%s.",
			 VHOST_FAMILY_NAME, e->msg, e->msg[0] ? " (" : "",
			 strerror(e->code), e->msg[0] ? ")" : "");
}
