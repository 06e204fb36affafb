// SPDX-License-Identifier: GPL-2.0
/*
 * Netlink messages -> objects, and NLMSG_ERROR -> a message for the user.
 * Pure functions over buffers: no socket, so the unit tests can feed them
 * messages built by hand.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <netlink/attr.h>
#include <netlink/genl/genl.h>
#include <netlink/msg.h>

#include "vhostctl.h"

const char *const vh_dev_attr_names[VHOST_A_DEV_MAX + 1] = {
	[VHOST_A_DEV_ID]		= "dev",
	[VHOST_A_DEV_NAME]		= "dev",
	[VHOST_A_DEV_BUSYPOLL_US]	= "busypoll-us",
	[VHOST_A_DEV_ZEROCOPY]		= "zerocopy",
	[VHOST_A_DEV_ZCOPY_MIN_LEN]	= "zcopy-min-len",
	[VHOST_A_DEV_METAMAP]		= "metamap",
};

int vh_nla_get_uint(const struct nlattr *nla, uint64_t *val)
{
	uint32_t v32;

	switch (nla_len(nla)) {
	case sizeof(uint32_t):
		memcpy(&v32, nla_data(nla), sizeof(v32));
		*val = v32;
		return 0;
	case sizeof(uint64_t):
		memcpy(val, nla_data(nla), sizeof(*val));
		return 0;
	default:
		return -EINVAL;
	}
}

static int get_u8(const struct nlattr *nla, uint8_t *val)
{
	if (nla_len(nla) < (int)sizeof(*val))
		return -EINVAL;
	memcpy(val, nla_data(nla), sizeof(*val));
	return 0;
}

static int get_u32(const struct nlattr *nla, uint32_t *val)
{
	if (nla_len(nla) != sizeof(*val))
		return -EINVAL;
	memcpy(val, nla_data(nla), sizeof(*val));
	return 0;
}

static int get_u64(const struct nlattr *nla, uint64_t *val)
{
	if (nla_len(nla) != sizeof(*val))
		return -EINVAL;
	memcpy(val, nla_data(nla), sizeof(*val));
	return 0;
}

/* A NUL-terminated string that fits in len bytes (NUL included). */
static int get_str(const struct nlattr *nla, char *buf, size_t len)
{
	const char *s = nla_data(nla);
	int n = nla_len(nla);

	if (n < 1 || !memchr(s, '\0', n) || strlen(s) >= len)
		return -EINVAL;
	memcpy(buf, s, strlen(s) + 1);
	return 0;
}

static int stats_from_nest(struct nlattr *nest, struct vh_stats *st)
{
	struct nlattr *tb[VHOST_A_STATS_MAX + 1];
	int i;

	memset(st, 0, sizeof(*st));
	if (nla_parse_nested(tb, VHOST_A_STATS_MAX, nest, NULL))
		return -EINVAL;
	for (i = 1; i <= VHOST_A_STATS_MAX; i++) {
		if (!tb[i])
			continue;
		if (vh_nla_get_uint(tb[i], &st->val[i]))
			return -EINVAL;
		st->have |= VH_BIT(i);
	}
	return 0;
}

int vh_dev_from_attrs(struct nlattr **tb, struct vh_dev *d)
{
	int i, r = 0;

	memset(d, 0, sizeof(*d));
	for (i = 1; i <= VHOST_A_DEV_MAX && !r; i++) {
		struct nlattr *a = tb[i];

		if (!a)
			continue;
		switch (i) {
		case VHOST_A_DEV_ID:
			r = get_u32(a, &d->id);
			break;
		case VHOST_A_DEV_NAME:
			r = get_str(a, d->name, sizeof(d->name));
			break;
		case VHOST_A_DEV_TYPE:
			r = get_u32(a, &d->type);
			break;
		case VHOST_A_DEV_OWNER_PID:
			r = get_u32(a, &d->owner_pid);
			break;
		case VHOST_A_DEV_BACKEND_IFINDEX:
			r = get_u32(a, &d->backend_ifindex);
			break;
		case VHOST_A_DEV_BACKEND_IFNAME:
			r = get_str(a, d->backend_ifname,
				    sizeof(d->backend_ifname));
			break;
		case VHOST_A_DEV_FEATURES:
			r = get_u64(a, &d->features);
			break;
		case VHOST_A_DEV_NUM_QUEUES:
			r = get_u32(a, &d->num_queues);
			break;
		case VHOST_A_DEV_BUSYPOLL_US:
			r = get_u32(a, &d->busypoll_us);
			break;
		case VHOST_A_DEV_ZEROCOPY:
			r = get_u8(a, &d->zerocopy);
			break;
		case VHOST_A_DEV_ZCOPY_MIN_LEN:
			r = get_u32(a, &d->zcopy_min_len);
			break;
		case VHOST_A_DEV_METAMAP:
			r = get_u8(a, &d->metamap);
			break;
		case VHOST_A_DEV_STATS:
			r = stats_from_nest(a, &d->stats);
			break;
		default:
			continue;	/* newer than us: ignore */
		}
		if (!r)
			d->have |= VH_BIT(i);
	}
	return r;
}

int vh_queue_from_attrs(struct nlattr **tb, struct vh_queue *q)
{
	int i, r = 0;

	memset(q, 0, sizeof(*q));
	for (i = 1; i <= VHOST_A_QUEUE_MAX && !r; i++) {
		struct nlattr *a = tb[i];

		if (!a)
			continue;
		switch (i) {
		case VHOST_A_QUEUE_DEV_ID:
			r = get_u32(a, &q->dev_id);
			break;
		case VHOST_A_QUEUE_INDEX:
			r = get_u32(a, &q->index);
			break;
		case VHOST_A_QUEUE_TYPE:
			r = get_u32(a, &q->type);
			break;
		case VHOST_A_QUEUE_NUM:
			r = get_u32(a, &q->num);
			break;
		case VHOST_A_QUEUE_BUSYPOLL_US:
			r = get_u32(a, &q->busypoll_us);
			break;
		case VHOST_A_QUEUE_METAMAP_VALID:
			r = get_u8(a, &q->metamap_valid);
			break;
		case VHOST_A_QUEUE_STATS:
			r = stats_from_nest(a, &q->stats);
			break;
		default:
			continue;
		}
		if (!r)
			q->have |= VH_BIT(i);
	}
	return r;
}

int vh_dev_from_msg(const struct nlmsghdr *nlh, struct vh_dev *d)
{
	struct nlattr *tb[VHOST_A_DEV_MAX + 1];

	if (genlmsg_parse((struct nlmsghdr *)nlh, 0, tb, VHOST_A_DEV_MAX, NULL))
		return -EINVAL;
	return vh_dev_from_attrs(tb, d);
}

int vh_queue_from_msg(const struct nlmsghdr *nlh, struct vh_queue *q)
{
	struct nlattr *tb[VHOST_A_QUEUE_MAX + 1];

	if (genlmsg_parse((struct nlmsghdr *)nlh, 0, tb, VHOST_A_QUEUE_MAX, NULL))
		return -EINVAL;
	return vh_queue_from_attrs(tb, q);
}

void vh_dev_free(struct vh_dev *d)
{
	free(d->queues);
	d->queues = NULL;
	d->nqueues = 0;
}

int vh_dev_add_queue(struct vh_dev *d, const struct vh_queue *q)
{
	struct vh_queue *qs;
	unsigned int i;

	qs = realloc(d->queues, (d->nqueues + 1) * sizeof(*qs));
	if (!qs)
		return -ENOMEM;
	d->queues = qs;
	for (i = d->nqueues; i > 0 && qs[i - 1].index > q->index; i--)
		qs[i] = qs[i - 1];
	qs[i] = *q;
	d->nqueues++;
	return 0;
}

int vh_ext_ack_parse(const struct nlmsghdr *nlh, size_t len,
		     const struct nlmsghdr *sent, struct vh_ext_ack *ea)
{
	const struct nlmsghdr *base;
	const struct nlmsgerr *e;
	const struct nlattr *a;
	uint32_t offs = 0;
	size_t hlen, off;
	int rem;

	ea->error = 0;
	ea->msg[0] = '\0';
	ea->bad_attr = -1;
	if (len < NLMSG_HDRLEN || nlh->nlmsg_len > len ||
	    nlh->nlmsg_len < NLMSG_HDRLEN)
		return -EINVAL;
	if (nlh->nlmsg_type == NLMSG_DONE) {
		/* End of a dump: an int error, then the TLVs. */
		int done_err;

		e = NULL;
		hlen = sizeof(done_err);
		if (nlh->nlmsg_len < NLMSG_HDRLEN + hlen)
			return 0;	/* old kernels: no payload */
		memcpy(&done_err, NLMSG_DATA(nlh), sizeof(done_err));
		ea->error = done_err < 0 ? -done_err : done_err;
		goto tlvs;
	}
	if (nlh->nlmsg_len < NLMSG_HDRLEN + sizeof(*e))
		return -EINVAL;
	e = NLMSG_DATA(nlh);
	ea->error = e->error < 0 ? -e->error : e->error;
	hlen = sizeof(*e);
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return 0;
	if (!(nlh->nlmsg_flags & NLM_F_CAPPED)) {
		if (e->msg.nlmsg_len < NLMSG_HDRLEN)
			return -EINVAL;
		hlen += e->msg.nlmsg_len - NLMSG_HDRLEN;
		if (NLMSG_HDRLEN + hlen > nlh->nlmsg_len)
			return -EINVAL;
	}
tlvs:
	if (!(nlh->nlmsg_flags & NLM_F_ACK_TLVS))
		return 0;
	off = NLMSG_HDRLEN + NLMSG_ALIGN(hlen);
	if (off >= nlh->nlmsg_len)
		return 0;
	a = (const struct nlattr *)((const char *)nlh + off);
	rem = nlh->nlmsg_len - off;
	for (; nla_ok(a, rem); a = nla_next(a, &rem)) {
		switch (nla_type(a)) {
		case NLMSGERR_ATTR_MSG:
			if (nla_len(a) > 0) {
				size_t n = nla_len(a);

				if (n >= sizeof(ea->msg))
					n = sizeof(ea->msg) - 1;
				memcpy(ea->msg, nla_data(a), n);
				ea->msg[n] = '\0';
			}
			break;
		case NLMSGERR_ATTR_OFFS:
			if (nla_len(a) == sizeof(offs))
				memcpy(&offs, nla_data(a), sizeof(offs));
			break;
		}
	}
	/* The offset is from the start of the request the error is about. */
	if (!e)
		return 0;
	base = nlh->nlmsg_flags & NLM_F_CAPPED ? sent : &e->msg;
	if (offs && base && offs >= NLMSG_HDRLEN + GENL_HDRLEN &&
	    offs + NLA_HDRLEN <= base->nlmsg_len) {
		a = (const struct nlattr *)((const char *)base + offs);
		ea->bad_attr = nla_type(a);
	}
	return 0;
}

void vh_ext_ack_format(const struct vh_ext_ack *ea, const char *dev,
		       const char *const *attr_names, int max_attr,
		       char *buf, size_t len)
{
	const char *what = ea->error ? "Error" : "Warning";
	const char *name = NULL;

	if (attr_names && ea->bad_attr > 0 && ea->bad_attr <= max_attr)
		name = attr_names[ea->bad_attr];
	if (ea->msg[0]) {
		size_t n = strlen(ea->msg);

		snprintf(buf, len, "%s: %s%s", what, ea->msg,
			 ea->msg[n - 1] == '.' ? "" : ".");
	} else if (!ea->error) {
		snprintf(buf, len, "%s", "");
	} else if (ea->error == ENODEV && dev) {
		snprintf(buf, len, "Cannot find device \"%s\"", dev);
	} else if (name) {
		snprintf(buf, len, "Error: invalid \"%s\": %s.", name,
			 strerror(ea->error));
	} else {
		snprintf(buf, len, "Error: %s.", strerror(ea->error));
	}
}
