// SPDX-License-Identifier: GPL-2.0
/*
 * The generated reply structs -> text, JSON or OpenMetrics.  JSON keys are
 * the attribute
 * names of the spec, taken from the generated attribute tables, and values
 * have the spec's types (enums by name), so "-j" prints what the kernel's
 * tools/net/ynl/cli.py --output-json prints for the same op.  Text uses the
 * command line's keywords: the device's admin-busypoll-us is "busypoll-us",
 * the keyword that sets it; 0/1 tunables are "on"/"off".  Attributes the
 * kernel did not send are not printed at all.  A set of flags (a policy's
 * grants) is a list of names, as ynl decodes flags; the 6.12 cli.py leaves
 * it a number there, as it does every enum of an auto-sized integer (uint).
 * OpenMetrics names its families and labels after the same attributes.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "vhostctl.h"
#include "json.h"
#include "vhost-stats-help.h"

/* A new counter in the spec breaks the build here: add it below. */
_Static_assert(VHOST_A_STATS_MAX == VHOST_A_STATS_METAMAP_POISONED,
	       "add the spec's new counters to vh_stat_get() and stat_lines");

static bool stat(bool present, uint64_t v, uint64_t *val)
{
	if (present)
		*val = v;
	return present;
}

bool vh_stat_get(const struct vhost_stats_get_rsp_dump *s, int attr,
		 uint64_t *val)
{
	switch (attr) {
	case VHOST_A_STATS_RX_PACKETS:
		return stat(s->_present.rx_packets, s->rx_packets, val);
	case VHOST_A_STATS_RX_BYTES:
		return stat(s->_present.rx_bytes, s->rx_bytes, val);
	case VHOST_A_STATS_TX_PACKETS:
		return stat(s->_present.tx_packets, s->tx_packets, val);
	case VHOST_A_STATS_TX_BYTES:
		return stat(s->_present.tx_bytes, s->tx_bytes, val);
	case VHOST_A_STATS_KICKS:
		return stat(s->_present.kicks, s->kicks, val);
	case VHOST_A_STATS_CALLS:
		return stat(s->_present.calls, s->calls, val);
	case VHOST_A_STATS_BUSYPOLL_LOOPS:
		return stat(s->_present.busypoll_loops, s->busypoll_loops, val);
	case VHOST_A_STATS_BUSYPOLL_NS:
		return stat(s->_present.busypoll_ns, s->busypoll_ns, val);
	case VHOST_A_STATS_BUSYPOLL_FOUND:
		return stat(s->_present.busypoll_found, s->busypoll_found, val);
	case VHOST_A_STATS_ZCOPY_SENT:
		return stat(s->_present.zcopy_sent, s->zcopy_sent, val);
	case VHOST_A_STATS_ZCOPY_COPIED:
		return stat(s->_present.zcopy_copied, s->zcopy_copied, val);
	case VHOST_A_STATS_ZCOPY_PENDING:
		return stat(s->_present.zcopy_pending, s->zcopy_pending, val);
	case VHOST_A_STATS_ZCOPY_HOL_STALLS:
		return stat(s->_present.zcopy_hol_stalls, s->zcopy_hol_stalls, val);
	case VHOST_A_STATS_METAMAP_FAST:
		return stat(s->_present.metamap_fast, s->metamap_fast, val);
	case VHOST_A_STATS_METAMAP_FALLBACK:
		return stat(s->_present.metamap_fallback, s->metamap_fallback, val);
	case VHOST_A_STATS_METAMAP_INVALIDATIONS:
		return stat(s->_present.metamap_invalidations, s->metamap_invalidations, val);
	case VHOST_A_STATS_METAMAP_REMAPS:
		return stat(s->_present.metamap_remaps, s->metamap_remaps, val);
	case VHOST_A_STATS_METAMAP_REMAP_FAILURES:
		return stat(s->_present.metamap_remap_failures, s->metamap_remap_failures, val);
	case VHOST_A_STATS_METAMAP_REFUSED:
		return stat(s->_present.metamap_refused, s->metamap_refused, val);
	case VHOST_A_STATS_TX_ERRORS:
		return stat(s->_present.tx_errors, s->tx_errors, val);
	case VHOST_A_STATS_ZCOPY_FALLBACK:
		return stat(s->_present.zcopy_fallback, s->zcopy_fallback, val);
	case VHOST_A_STATS_ZCOPY_BACKOFF:
		return stat(s->_present.zcopy_backoff, s->zcopy_backoff, val);
	case VHOST_A_STATS_METAMAP_UACCESS_FILLS:
		return stat(s->_present.metamap_uaccess_fills,
			    s->metamap_uaccess_fills, val);
	case VHOST_A_STATS_USED_ENTRIES:
		return stat(s->_present.used_entries, s->used_entries, val);
	case VHOST_A_STATS_ZCOPY_IN_ORDER:
		return stat(s->_present.zcopy_in_order, s->zcopy_in_order, val);
	case VHOST_A_STATS_METAMAP_POISONED:
		return stat(s->_present.metamap_poisoned, s->metamap_poisoned,
			    val);
	default:
		return false;
	}
}

bool vh_stat_is_gauge(int attr)
{
	return attr == VHOST_A_STATS_ZCOPY_PENDING;
}

double vh_rate(uint64_t prev, uint64_t cur, double seconds)
{
	uint64_t delta = cur >= prev ? cur - prev : cur;

	return seconds > 0 ? delta / seconds : 0;
}

const struct vhost_stats_get_rsp_dump *
vh_find_stats(struct vhost_stats_get_rsp_list *list, uint32_t dev_id,
	      const uint32_t *queue)
{
	if (!list)
		return NULL;
	ynl_dump_foreach(list, s) {
		if (!s->_present.dev_id || s->dev_id != dev_id)
			continue;
		if (queue ? s->_present.queue_index && s->queue_index == *queue :
			    !s->_present.queue_index)
			return s;
	}
	return NULL;
}

/*
 * The counters of one reply as they are printed: as they are, or ("stats
 * -i") as rates since prev, seconds before.
 */
struct counters {
	const struct vhost_stats_get_rsp_dump *s;
	const struct vhost_stats_get_rsp_dump *prev;	/* NULL: as they are */
	double seconds;
};

/*
 * A rate with two decimals at most, as the shortest number that reads back
 * the same ("12.5", "3"): what Python prints for it, so that pretty JSON
 * stays what json.tool prints.
 */
static void rate_str(double rate, char *buf, size_t len)
{
	/* rates are not negative: rounded half up without libm */
	snprintf(buf, len, "%.15g", (uint64_t)(rate * 100 + 0.5) / 100.0);
}

/* Counter attr of c as printed; false when it is not printed. */
static bool counter_str(const struct counters *c, int attr, char *buf,
			size_t len)
{
	uint64_t v, p;

	if (!vh_stat_get(c->s, attr, &v))
		return false;
	if (!c->prev || vh_stat_is_gauge(attr)) {
		snprintf(buf, len, "%" PRIu64, v);
		return true;
	}
	/* a rate needs the counter at both ends of the interval */
	if (!vh_stat_get(c->prev, attr, &p))
		return false;
	rate_str(vh_rate(p, v, c->seconds), buf, len);
	return true;
}

/* Text: counters that belong together on one line, 0-terminated. */
static const int stat_lines[][8] = {
	{ VHOST_A_STATS_RX_PACKETS, VHOST_A_STATS_RX_BYTES,
	  VHOST_A_STATS_TX_PACKETS, VHOST_A_STATS_TX_BYTES,
	  VHOST_A_STATS_TX_ERRORS },
	{ VHOST_A_STATS_KICKS, VHOST_A_STATS_CALLS,
	  VHOST_A_STATS_USED_ENTRIES },
	{ VHOST_A_STATS_BUSYPOLL_LOOPS, VHOST_A_STATS_BUSYPOLL_NS,
	  VHOST_A_STATS_BUSYPOLL_FOUND },
	{ VHOST_A_STATS_ZCOPY_SENT, VHOST_A_STATS_ZCOPY_FALLBACK,
	  VHOST_A_STATS_ZCOPY_COPIED, VHOST_A_STATS_ZCOPY_HOL_STALLS,
	  VHOST_A_STATS_ZCOPY_BACKOFF, VHOST_A_STATS_ZCOPY_IN_ORDER,
	  VHOST_A_STATS_ZCOPY_PENDING },
	{ VHOST_A_STATS_METAMAP_FAST, VHOST_A_STATS_METAMAP_FALLBACK,
	  VHOST_A_STATS_METAMAP_INVALIDATIONS, VHOST_A_STATS_METAMAP_REMAPS,
	  VHOST_A_STATS_METAMAP_REMAP_FAILURES,
	  VHOST_A_STATS_METAMAP_REFUSED, VHOST_A_STATS_METAMAP_UACCESS_FILLS,
	  VHOST_A_STATS_METAMAP_POISONED },
};

#define DEV_KEY(a)	(vhost_dev_policy[VHOST_A_DEV_##a].name)
#define QUEUE_KEY(a)	(vhost_queue_policy[VHOST_A_QUEUE_##a].name)
#define STATS_KEY(a)	(vhost_stats_policy[a].name)
#define POLICY_KEY(a)	(vhost_policy_policy[VHOST_A_POLICY_##a].name)

/* A value of an enum: its name, or its number when this tool has none. */
static const char *enum_str(const char *name, uint32_t v, char *buf,
			    size_t len)
{
	if (name)
		return name;
	snprintf(buf, len, "%u", v);
	return buf;
}

static const char *dev_type_str(uint32_t v, char *buf, size_t len)
{
	return enum_str(vhost_dev_type_str(v), v, buf, len);
}

static const char *queue_type_str(uint32_t v, char *buf, size_t len)
{
	return enum_str(vhost_queue_type_str(v), v, buf, len);
}

static const char *metamap_mode_str(uint32_t v, char *buf, size_t len)
{
	return enum_str(vhost_metamap_mode_str(v), v, buf, len);
}

static const char *busypoll_source_str(uint32_t v, char *buf, size_t len)
{
	return enum_str(vhost_busypoll_source_str(v), v, buf, len);
}

/*
 * Text from the kernel for a terminal: bytes outside printable ASCII (a
 * kernel that does not check labels may hold any) as \xNN, and \ as \\.
 */
static const char *text_safe(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 5 < len; s++) {
		unsigned char c = *s;

		if (c < 0x20 || c > 0x7e)
			n += snprintf(buf + n, len - n, "\\x%02x", c);
		else if (c == '\\')
			n += snprintf(buf + n, len - n, "\\\\");
		else
			buf[n++] = c;
	}
	buf[n] = 0;
	return buf;
}

/* ---- text --------------------------------------------------------------- */

/* One line of text being built: "key value key value ...". */
struct line {
	char s[1024];
	size_t n;
};

static void line_add(struct line *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void line_add(struct line *l, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (l->n >= sizeof(l->s) - 1)
		return;
	if (l->n)
		l->s[l->n++] = ' ';
	l->s[l->n] = '\0';
	va_start(ap, fmt);
	r = vsnprintf(l->s + l->n, sizeof(l->s) - l->n, fmt, ap);
	va_end(ap);
	if (r > 0)
		l->n += r;
	if (l->n > sizeof(l->s) - 1)
		l->n = sizeof(l->s) - 1;
}

/* Lines of one object: indented, one per line, or all on one line. */
struct text {
	FILE *f;
	bool oneline;
	bool started;
};

static void text_emit(struct text *t, int indent, struct line *l)
{
	if (!l->n)
		return;
	if (t->oneline)
		fprintf(t->f, "%s%s", t->started ? " " : "", l->s);
	else
		fprintf(t->f, "%*s%s\n", indent, "", l->s);
	t->started = true;
	l->n = 0;
	l->s[0] = '\0';
}

static void text_stats(struct text *t, int indent, const struct counters *c)
{
	struct line l = { .n = 0 };
	unsigned int g, i;
	char v[32];

	for (g = 0; g < ARRAY_SIZE(stat_lines); g++) {
		for (i = 0; i < ARRAY_SIZE(stat_lines[g]) && stat_lines[g][i]; i++)
			if (counter_str(c, stat_lines[g][i], v, sizeof(v)))
				line_add(&l, "%s %s", STATS_KEY(stat_lines[g][i]), v);
		text_emit(t, indent, &l);
	}
}

static const char *on_off(uint32_t v)
{
	return v ? "on" : "off";
}

/* The tunables of a device or the defaults; NULL: absent. */
struct tunables_view {
	const uint32_t *busypoll_us, *zerocopy, *zcopy_min_len, *metamap;
};

#define TUNABLES_VIEW(x) ((struct tunables_view){			\
	(x)->_present.admin_busypoll_us ? &(x)->admin_busypoll_us : NULL,	\
	(x)->_present.zerocopy ? &(x)->zerocopy : NULL,			\
	(x)->_present.zcopy_min_len ? &(x)->zcopy_min_len : NULL,	\
	(x)->_present.metamap ? &(x)->metamap : NULL })

/* The tunables by the keywords of "set" (busypoll-us: the admin's limit). */
static void text_tunables(struct line *l, const struct tunables_view *v)
{
	char buf[32];

	if (v->busypoll_us)
		line_add(l, "busypoll-us %u", *v->busypoll_us);
	if (v->zerocopy)
		line_add(l, "zerocopy %s", on_off(*v->zerocopy));
	if (v->zcopy_min_len)
		line_add(l, "zcopy-min-len %u", *v->zcopy_min_len);
	if (v->metamap)
		line_add(l, "metamap %s",
			 metamap_mode_str(*v->metamap, buf, sizeof(buf)));
}

/* The device: header line, features line, tunables line. */
static void text_dev(struct text *t, const struct vhost_dev_get_rsp *d)
{
	struct line l = { .n = 0 };
	char buf[32], lbuf[4 * 256 + 1];

	if (d->_present.name_len)
		line_add(&l, "%s:", d->name);
	else if (d->_present.id)
		line_add(&l, "id %u:", d->id);
	else
		line_add(&l, "?:");
	if (d->_present.type)
		line_add(&l, "type %s", dev_type_str(d->type, buf, sizeof(buf)));
	if (d->_present.owner_pid)
		line_add(&l, "owner-pid %u", d->owner_pid);
	if (d->_present.backend_ifname_len)
		line_add(&l, "backend-ifname %s", d->backend_ifname);
	if (d->_present.backend_ifindex)
		line_add(&l, "backend-ifindex %u", d->backend_ifindex);
	if (d->_present.backend_netnsid)
		line_add(&l, "backend-netnsid %d", d->backend_netnsid);
	/* free-form, as ip prints an alias: last on the line */
	if (d->_present.label_len)
		line_add(&l, "label %s", text_safe(d->label, lbuf, sizeof(lbuf)));
	text_emit(t, 0, &l);

	if (d->_present.features)
		line_add(&l, "features 0x%016" PRIx64, (uint64_t)d->features);
	if (d->_present.num_queues)
		line_add(&l, "num-queues %u", d->num_queues);
	text_emit(t, 4, &l);

	text_tunables(&l, &TUNABLES_VIEW(d));
	text_emit(t, 4, &l);
}

/* "queue N: type rx num 256 owner-busypoll-us 0 busypoll-us 50 ..." */
static void text_queue(struct line *l, const struct vhost_queue_get_rsp *q)
{
	char buf[16];

	if (q->_present.index)
		line_add(l, "queue %u:", q->index);
	else
		line_add(l, "queue ?:");
	if (q->_present.type)
		line_add(l, "type %s", queue_type_str(q->type, buf, sizeof(buf)));
	if (q->_present.num)
		line_add(l, "num %u", q->num);
	if (q->_present.owner_busypoll_us)
		line_add(l, "owner-busypoll-us %u", q->owner_busypoll_us);
	if (q->_present.busypoll_us)
		line_add(l, "busypoll-us %u", q->busypoll_us);
	if (q->_present.busypoll_source)
		line_add(l, "busypoll-source %s",
			 busypoll_source_str(q->busypoll_source, buf, sizeof(buf)));
	if (q->_present.metamap_valid)
		line_add(l, "metamap-valid %s", q->metamap_valid ? "yes" : "no");
	if (q->_present.worker_pid)
		line_add(l, "worker-pid %u", q->worker_pid);
}

/* ---- JSON --------------------------------------------------------------- */

static void json_counters(struct jw *jw, const struct counters *c)
{
	char v[32];
	int i;

	for (i = VH_STATS_FIRST; i <= VHOST_A_STATS_MAX; i++)
		if (counter_str(c, i, v, sizeof(v)))
			jw_num(jw, STATS_KEY(i), v);
}

static void json_tunables(struct jw *jw, const struct tunables_view *v)
{
	char buf[16];

	if (v->busypoll_us)
		jw_u64(jw, DEV_KEY(ADMIN_BUSYPOLL_US), *v->busypoll_us);
	if (v->zerocopy)
		jw_u64(jw, DEV_KEY(ZEROCOPY), *v->zerocopy);
	if (v->zcopy_min_len)
		jw_u64(jw, DEV_KEY(ZCOPY_MIN_LEN), *v->zcopy_min_len);
	if (v->metamap)
		jw_str(jw, DEV_KEY(METAMAP),
		       metamap_mode_str(*v->metamap, buf, sizeof(buf)));
}

static void json_dev(struct jw *jw, const struct vhost_dev_get_rsp *d)
{
	char buf[16];

	if (d->_present.id)
		jw_u64(jw, DEV_KEY(ID), d->id);
	if (d->_present.name_len)
		jw_str(jw, DEV_KEY(NAME), d->name);
	if (d->_present.type)
		jw_str(jw, DEV_KEY(TYPE), dev_type_str(d->type, buf, sizeof(buf)));
	if (d->_present.owner_pid)
		jw_u64(jw, DEV_KEY(OWNER_PID), d->owner_pid);
	if (d->_present.backend_ifindex)
		jw_u64(jw, DEV_KEY(BACKEND_IFINDEX), d->backend_ifindex);
	if (d->_present.backend_ifname_len)
		jw_str(jw, DEV_KEY(BACKEND_IFNAME), d->backend_ifname);
	if (d->_present.backend_netnsid)
		jw_s64(jw, DEV_KEY(BACKEND_NETNSID), d->backend_netnsid);
	if (d->_present.label_len)
		jw_str(jw, DEV_KEY(LABEL), d->label);
	if (d->_present.features)
		jw_u64(jw, DEV_KEY(FEATURES), d->features);
	if (d->_present.num_queues)
		jw_u64(jw, DEV_KEY(NUM_QUEUES), d->num_queues);
	json_tunables(jw, &TUNABLES_VIEW(d));
}

static void json_queue(struct jw *jw, const struct vhost_queue_get_rsp *q)
{
	char buf[16];

	if (q->_present.dev_id)
		jw_u64(jw, QUEUE_KEY(DEV_ID), q->dev_id);
	if (q->_present.index)
		jw_u64(jw, QUEUE_KEY(INDEX), q->index);
	if (q->_present.type)
		jw_str(jw, QUEUE_KEY(TYPE), queue_type_str(q->type, buf, sizeof(buf)));
	if (q->_present.num)
		jw_u64(jw, QUEUE_KEY(NUM), q->num);
	if (q->_present.owner_busypoll_us)
		jw_u64(jw, QUEUE_KEY(OWNER_BUSYPOLL_US), q->owner_busypoll_us);
	if (q->_present.busypoll_us)
		jw_u64(jw, QUEUE_KEY(BUSYPOLL_US), q->busypoll_us);
	if (q->_present.busypoll_source)
		jw_str(jw, QUEUE_KEY(BUSYPOLL_SOURCE),
		       busypoll_source_str(q->busypoll_source, buf, sizeof(buf)));
	if (q->_present.metamap_valid)
		jw_u64(jw, QUEUE_KEY(METAMAP_VALID), q->metamap_valid);
	if (q->_present.worker_pid)
		jw_u64(jw, QUEUE_KEY(WORKER_PID), q->worker_pid);
}

/* "stats": the counters only, inside a device or a queue. */
static void json_nested_stats(struct jw *jw,
			      const struct vhost_stats_get_rsp_dump *s)
{
	struct counters c = { .s = s };

	if (!s)
		return;
	jw_obj_open(jw, "stats");
	json_counters(jw, &c);
	jw_obj_close(jw);
}

static void json_dev_queues(struct jw *jw, const struct vh_dev_more *m)
{
	unsigned int i;

	jw_arr_open(jw, "queues");
	for (i = 0; i < m->nqueues; i++) {
		jw_obj_open(jw, NULL);
		json_queue(jw, m->queue[i]);
		json_nested_stats(jw, m->queue_stats[i]);
		jw_obj_close(jw);
	}
	jw_arr_close(jw);
}

/* ---- entry points ------------------------------------------------------- */

void vh_out_open(struct vh_out *o, FILE *f, const struct vh_opts *opts)
{
	static struct jw jw;

	memset(o, 0, sizeof(*o));
	o->f = f;
	o->json = opts->json;
	if (o->json) {
		o->jw = &jw;
		jw_init(o->jw, f, opts->pretty);
		jw_arr_open(o->jw, NULL);
	}
}

void vh_out_close(struct vh_out *o)
{
	if (o->json) {
		jw_arr_close(o->jw);
		fputc('\n', o->f);
	}
	fflush(o->f);
}

void vh_print_dev(struct vh_out *o, const struct vhost_dev_get_rsp *d,
		  const struct vh_dev_more *more)
{
	struct text t = { .f = o->f };
	struct line l = { .n = 0 };
	unsigned int i;

	if (o->json) {
		jw_obj_open(o->jw, NULL);
		json_dev(o->jw, d);
		if (more)
			json_nested_stats(o->jw, more->stats);
		if (more && more->queues)
			json_dev_queues(o->jw, more);
		jw_obj_close(o->jw);
		return;
	}
	text_dev(&t, d);
	if (!more)
		return;
	if (more->stats) {
		struct counters c = { .s = more->stats };

		fprintf(o->f, "    statistics:\n");
		text_stats(&t, 8, &c);
	}
	for (i = 0; more->queues && i < more->nqueues; i++) {
		struct counters c = { .s = more->queue_stats[i] };

		text_queue(&l, more->queue[i]);
		text_emit(&t, 4, &l);
		if (c.s)
			text_stats(&t, 8, &c);
	}
}

void vh_print_queue(struct vh_out *o, const struct vhost_queue_get_rsp *q)
{
	struct text t = { .f = o->f };
	struct line l = { .n = 0 };

	if (o->json) {
		jw_obj_open(o->jw, NULL);
		json_queue(o->jw, q);
		jw_obj_close(o->jw);
		return;
	}
	if (q->_present.dev_id)
		line_add(&l, "vhost%u", q->dev_id);
	text_queue(&l, q);
	text_emit(&t, 0, &l);
}

static void print_counters(struct vh_out *o, const struct counters *c)
{
	const struct vhost_stats_get_rsp_dump *s = c->s;
	struct text t = { .f = o->f };
	char buf[16];

	if (o->json) {
		jw_obj_open(o->jw, NULL);
		if (s->_present.dev_id)
			jw_u64(o->jw, STATS_KEY(VHOST_A_STATS_DEV_ID), s->dev_id);
		if (s->_present.queue_index)
			jw_u64(o->jw, STATS_KEY(VHOST_A_STATS_QUEUE_INDEX),
			       s->queue_index);
		if (s->_present.queue_type)
			jw_str(o->jw, STATS_KEY(VHOST_A_STATS_QUEUE_TYPE),
			       queue_type_str(s->queue_type, buf, sizeof(buf)));
		json_counters(o->jw, c);
		jw_obj_close(o->jw);
		return;
	}
	/* A header per device: the name is vhost followed by the id. */
	if (!s->_present.queue_index || !o->have_dev || o->dev_id != s->dev_id) {
		if (s->_present.dev_id)
			fprintf(o->f, "vhost%u:\n", s->dev_id);
		else
			fprintf(o->f, "?:\n");
		o->have_dev = true;
		o->dev_id = s->dev_id;
	}
	if (!s->_present.queue_index) {
		text_stats(&t, 4, c);
		return;
	}
	fprintf(o->f, "    queue %u:", s->queue_index);
	if (s->_present.queue_type)
		fprintf(o->f, " type %s",
			queue_type_str(s->queue_type, buf, sizeof(buf)));
	fputc('\n', o->f);
	text_stats(&t, 8, c);
}

void vh_print_stats(struct vh_out *o, const struct vhost_stats_get_rsp_dump *s)
{
	struct counters c = { .s = s };

	print_counters(o, &c);
}

void vh_print_rates(struct vh_out *o, struct vhost_stats_get_rsp_list *cur,
		    struct vhost_stats_get_rsp_list *prev, double seconds)
{
	ynl_dump_foreach(cur, s) {
		struct counters c = { .s = s, .seconds = seconds };

		if (!s->_present.dev_id)
			continue;
		c.prev = vh_find_stats(prev, s->dev_id, s->_present.queue_index ?
				       &s->queue_index : NULL);
		if (c.prev)
			print_counters(o, &c);
	}
}

/* ---- OpenMetrics and Prometheus text --------------------------------------- */

/*
 * Every family is vhost_<counter>, a counter's samples <family>_total;
 * busypoll-ns is vhost_busypoll_seconds, in seconds, a base unit as
 * Prometheus wants.
 */
#define OM_PREFIX	"vhost_"

/* The first sentence of the counter's doc in the spec. */
static const char *stat_help(int attr)
{
	unsigned int i;

	if (attr == VHOST_A_STATS_BUSYPOLL_NS)
		return "Seconds spent in busy-poll loops.";
	for (i = 0; i < ARRAY_SIZE(vh_stats_help); i++)
		if (!strcmp(vh_stats_help[i].name, STATS_KEY(attr)))
			return vh_stats_help[i].help;
	return STATS_KEY(attr);
}

/* A name of the spec as a metric or label name: "rx-packets", rx_packets. */
static void om_name(FILE *f, const char *name)
{
	for (; *name; name++)
		fputc(isalnum((unsigned char)*name) ? *name : '_', f);
}

/* The family's name after the prefix: the counter's, or busypoll_seconds. */
static void om_family_name(FILE *f, int attr)
{
	if (attr == VHOST_A_STATS_BUSYPOLL_NS)
		fputs("busypoll_seconds", f);
	else
		om_name(f, STATS_KEY(attr));
}

/*
 * A label value or a HELP text: \, " and newline escaped; any other byte
 * outside printable ASCII (which a kernel that does not check labels may
 * hold, and which need not be UTF-8) as '?'.
 */
static void om_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s != '\n' && ((unsigned char)*s < 0x20 ||
				   (unsigned char)*s > 0x7e)) {
			fputc('?', f);
			continue;
		}
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

static void om_label(FILE *f, bool *first, const char *key, const char *val)
{
	fputc(*first ? '{' : ',', f);
	om_name(f, key);
	fputs("=\"", f);
	om_escape(f, val);
	fputc('"', f);
	*first = false;
}

static const struct vhost_dev_get_rsp *
find_dev(struct vhost_dev_get_list *devs, uint32_t id)
{
	if (!devs)
		return NULL;
	ynl_dump_foreach(devs, d)
		if (d->_present.id && d->id == id)
			return d;
	return NULL;
}

static const char *dev_backend(const struct vhost_dev_get_rsp *d)
{
	return d->_present.backend_ifname_len ? d->backend_ifname : NULL;
}

static const char *dev_label(const struct vhost_dev_get_rsp *d)
{
	return d->_present.label_len ? d->label : NULL;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/*
 * The queue pair a device serves on its backend: its rank among the
 * devices of devs that feed the same interface, by id (QEMU opens a
 * multiqueue NIC's devices pair by pair, in order).  -1 without a backend.
 */
int vh_queue_pair(struct vhost_dev_get_list *devs,
		  const struct vhost_dev_get_rsp *d)
{
	const char *b = dev_backend(d);
	int n = 0;

	if (!b)
		return -1;
	ynl_dump_foreach(devs, e)
		if (e != d && same_str(dev_backend(e), b) && e->_present.id &&
		    e->id < d->id)
			n++;
	return n;
}

/*
 * Whether d needs its name to be told apart: it has neither label nor
 * backend (nothing stable names it), or another device has the same
 * label, backend and queue pair.
 */
static bool needs_name(struct vhost_dev_get_list *devs,
		       const struct vhost_dev_get_rsp *d)
{
	int pair = vh_queue_pair(devs, d);

	if (!dev_label(d) && !dev_backend(d))
		return true;
	ynl_dump_foreach(devs, e)
		if (e != d && same_str(dev_label(e), dev_label(d)) &&
		    same_str(dev_backend(e), dev_backend(d)) &&
		    vh_queue_pair(devs, e) == pair)
			return true;
	return false;
}

/*
 * The labels of a sample.  What names a VM's device across its restarts
 * (the device's name, vhostN, is new at every start, and a series per
 * name is a new series per start): its label, its backend interface and
 * the queue pair it serves there.  The name only where those do not tell
 * it apart (or the device is gone since the dump, named by its id).  Then
 * the queue's index and type.
 */
static void om_labels(FILE *f, const struct vhost_stats_get_rsp_dump *s,
		      struct vhost_dev_get_list *devs)
{
	const struct vhost_dev_get_rsp *d = NULL;
	bool first = true;
	char buf[24];
	int pair;

	if (s->_present.dev_id) {
		d = find_dev(devs, s->dev_id);
		if (!d || needs_name(devs, d)) {
			snprintf(buf, sizeof(buf), "vhost%u", s->dev_id);
			om_label(f, &first, DEV_KEY(NAME),
				 d && d->_present.name_len ? d->name : buf);
		}
	}
	if (d && dev_label(d))
		om_label(f, &first, DEV_KEY(LABEL), d->label);
	if (d && dev_backend(d)) {
		om_label(f, &first, DEV_KEY(BACKEND_IFNAME), d->backend_ifname);
		pair = vh_queue_pair(devs, d);
		snprintf(buf, sizeof(buf), "%d", pair);
		om_label(f, &first, "queue-pair", buf);
	}
	if (s->_present.queue_index) {
		snprintf(buf, sizeof(buf), "%u", s->queue_index);
		om_label(f, &first, STATS_KEY(VHOST_A_STATS_QUEUE_INDEX), buf);
	}
	if (s->_present.queue_type)
		om_label(f, &first, STATS_KEY(VHOST_A_STATS_QUEUE_TYPE),
			 queue_type_str(s->queue_type, buf, sizeof(buf)));
	if (!first)
		fputc('}', f);
}

/* The sample's name: the family's, and _total for a counter. */
static void om_sample_name(FILE *f, int attr)
{
	fputs(OM_PREFIX, f);
	om_family_name(f, attr);
	if (!vh_stat_is_gauge(attr))
		fputs("_total", f);
}

/*
 * A family's metadata.  OpenMetrics names the family (and gives busy
 * polling's unit); Prometheus's text format, which node_exporter's
 * textfile collector reads, names the samples, or their type is lost.
 */
static void om_family(FILE *f, int attr, bool prometheus)
{
	const char *type = vh_stat_is_gauge(attr) ? "gauge" : "counter";

	fputs("# HELP ", f);
	if (prometheus) {
		om_sample_name(f, attr);
	} else {
		fputs(OM_PREFIX, f);
		om_family_name(f, attr);
	}
	fputc(' ', f);
	om_escape(f, stat_help(attr));
	fputs("\n# TYPE ", f);
	if (prometheus) {
		om_sample_name(f, attr);
	} else {
		fputs(OM_PREFIX, f);
		om_family_name(f, attr);
	}
	fprintf(f, " %s\n", type);
	if (!prometheus && attr == VHOST_A_STATS_BUSYPOLL_NS)
		fputs("# UNIT " OM_PREFIX "busypoll_seconds seconds\n", f);
}

void vh_print_metrics(FILE *f, struct vhost_stats_get_rsp_list *stats,
		      struct vhost_dev_get_list *devs, bool prometheus)
{
	uint64_t v;
	int attr;

	/* the samples of a family together: a family per pass */
	for (attr = VH_STATS_FIRST; attr <= VHOST_A_STATS_MAX; attr++) {
		bool seen = false;

		ynl_dump_foreach(stats, s) {
			if (!vh_stat_get(s, attr, &v))
				continue;
			if (!seen)
				om_family(f, attr, prometheus);
			seen = true;
			om_sample_name(f, attr);
			om_labels(f, s, devs);
			if (attr == VHOST_A_STATS_BUSYPOLL_NS)
				fprintf(f, " %" PRIu64 ".%09" PRIu64 "\n",
					v / 1000000000, v % 1000000000);
			else
				fprintf(f, " %" PRIu64 "\n", v);
		}
	}
	if (!prometheus)
		fputs("# EOF\n", f);
	fflush(f);
}

/* ---- policy -------------------------------------------------------------- */

/*
 * The name of one granted tunable bit: the keyword of "dev set" in text,
 * the spec's name in JSON, the bit's value for one this tool does not know.
 */
static const char *tunable_str(uint64_t bit, bool json, char *buf, size_t len)
{
	const char *name = json ? vhost_tunable_str(bit) : vh_tunable_keyword(bit);

	if (name)
		return name;
	snprintf(buf, len, "%" PRIu64, bit);
	return buf;
}

/* "busypoll-us,zerocopy", or "none": what "policy set grant" takes. */
static void text_grants(struct line *l, uint64_t grants)
{
	char list[256] = "", buf[24];
	size_t n = 0;
	int i;

	for (i = 0; i < 64; i++) {
		uint64_t bit = 1ull << i;

		if (!(grants & bit))
			continue;
		n += snprintf(list + n, n < sizeof(list) ? sizeof(list) - n : 0,
			      "%s%s", n ? "," : "",
			      tunable_str(bit, false, buf, sizeof(buf)));
		if (n >= sizeof(list))
			n = sizeof(list) - 1;
	}
	line_add(l, "grant %s", n ? list : "none");
}

static void json_grants(struct jw *jw, uint64_t grants)
{
	char buf[24];
	int i;

	jw_arr_open(jw, POLICY_KEY(GRANTS));
	for (i = 0; i < 64; i++)
		if (grants & (1ull << i))
			jw_str(jw, NULL, tunable_str(1ull << i, true, buf, sizeof(buf)));
	jw_arr_close(jw);
}

void vh_json_policy(struct jw *jw, const char *key,
		    const struct vhost_policy_get_rsp *p)
{
	jw_obj_open(jw, key);
	if (p->_present.grants)
		json_grants(jw, p->grants);
	if (p->_present.busypoll_us_max)
		jw_u64(jw, POLICY_KEY(BUSYPOLL_US_MAX), p->busypoll_us_max);
	if (p->_present.tenant)
		jw_u64(jw, POLICY_KEY(TENANT), p->tenant);
	jw_obj_close(jw);
}

void vh_json_defaults(struct jw *jw, const char *key,
		      const struct vhost_defaults_get_rsp *d)
{
	jw_obj_open(jw, key);
	json_tunables(jw, &TUNABLES_VIEW(d));
	jw_obj_close(jw);
}

void vh_print_policy(FILE *f, const struct vh_opts *opts,
		     const struct vhost_policy_get_rsp *p)
{
	struct text t = { .f = f };
	struct line l = { .n = 0 };
	struct jw jw;

	if (opts->json) {
		jw_init(&jw, f, opts->pretty);
		vh_json_policy(&jw, NULL, p);
		fputc('\n', f);
		fflush(f);
		return;
	}
	/* The keywords of "policy set", so a line can be given back to it. */
	if (p->_present.grants)
		text_grants(&l, p->grants);
	if (p->_present.busypoll_us_max)
		line_add(&l, "%s %u", POLICY_KEY(BUSYPOLL_US_MAX), p->busypoll_us_max);
	if (p->_present.tenant)
		line_add(&l, "%s %s", POLICY_KEY(TENANT), p->tenant ? "yes" : "no");
	text_emit(&t, 0, &l);
	fflush(f);
}

void vh_print_defaults(FILE *f, const struct vh_opts *opts,
		       const struct vhost_defaults_get_rsp *d)
{
	struct text t = { .f = f };
	struct line l = { .n = 0 };
	struct jw jw;

	if (opts->json) {
		jw_init(&jw, f, opts->pretty);
		vh_json_defaults(&jw, NULL, d);
		fputc('\n', f);
		fflush(f);
		return;
	}
	/* The keywords of "set defaults", so a line can be given back to it. */
	text_tunables(&l, &TUNABLES_VIEW(d));
	text_emit(&t, 0, &l);
	fflush(f);
}

static const char *const event_names[] = {
	[VH_EV_ADD]	= "add",
	[VH_EV_DEL]	= "del",
	[VH_EV_CHANGE]	= "change",
};

void vh_timestamp_format(const struct timespec *ts, char *buf, size_t len)
{
	char date[32], zone[8];
	struct tm tm;

	localtime_r(&ts->tv_sec, &tm);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm);
	/* RFC 3339 wants +01:00 where strftime() says +0100 */
	if (strftime(zone, sizeof(zone), "%z", &tm) != 5)
		zone[0] = '\0';
	snprintf(buf, len, "%s.%06ld%.3s%s%s", date, ts->tv_nsec / 1000, zone,
		 zone[0] ? ":" : "", zone[0] ? zone + 3 : "");
}

void vh_print_event(FILE *f, const struct vh_opts *opts, enum vh_event ev,
		    const struct vhost_dev_get_rsp *d,
		    const struct timespec *ts)
{
	char stamp[64];

	if (ts)
		vh_timestamp_format(ts, stamp, sizeof(stamp));
	if (opts->json) {
		struct jw jw;

		jw_init(&jw, f, opts->pretty);
		jw_obj_open(&jw, NULL);
		if (ts)
			jw_str(&jw, "timestamp", stamp);
		jw_str(&jw, "event", event_names[ev]);
		json_dev(&jw, d);
		jw_obj_close(&jw);
	} else {
		struct text t = { .f = f, .oneline = true, .started = true };

		if (ts)
			fprintf(f, "[%s] ", stamp);
		fprintf(f, "[%s]", event_names[ev]);
		text_dev(&t, d);
	}
	fputc('\n', f);
	fflush(f);
}
