// SPDX-License-Identifier: GPL-2.0
/*
 * Objects -> text or JSON.  Text uses the command line's keywords
 * ("busypoll-us 50"); JSON uses the same names with underscores, which are
 * also the names of the sysfs files ("busypoll_us": 50).  Attributes the
 * kernel did not send are not printed at all.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "vhostctl.h"
#include "json.h"

static const char *const stat_keys[VHOST_A_STATS_MAX + 1] = {
	[VHOST_A_STATS_RX_PACKETS]		= "rx_packets",
	[VHOST_A_STATS_RX_BYTES]		= "rx_bytes",
	[VHOST_A_STATS_TX_PACKETS]		= "tx_packets",
	[VHOST_A_STATS_TX_BYTES]		= "tx_bytes",
	[VHOST_A_STATS_KICKS]			= "kicks",
	[VHOST_A_STATS_CALLS]			= "calls",
	[VHOST_A_STATS_BUSYPOLL_LOOPS]		= "busypoll_loops",
	[VHOST_A_STATS_BUSYPOLL_NS]		= "busypoll_ns",
	[VHOST_A_STATS_BUSYPOLL_FOUND]		= "busypoll_found",
	[VHOST_A_STATS_ZCOPY_SENT]		= "zcopy_sent",
	[VHOST_A_STATS_ZCOPY_COPIED]		= "zcopy_copied",
	[VHOST_A_STATS_ZCOPY_PENDING]		= "zcopy_pending",
	[VHOST_A_STATS_ZCOPY_HOL_STALLS]	= "zcopy_hol_stalls",
	[VHOST_A_STATS_METAMAP_FAST]		= "metamap_fast",
	[VHOST_A_STATS_METAMAP_FALLBACK]	= "metamap_fallback",
	[VHOST_A_STATS_METAMAP_INVALIDATIONS]	= "metamap_invalidations",
	[VHOST_A_STATS_METAMAP_REMAPS]		= "metamap_remaps",
	[VHOST_A_STATS_METAMAP_REMAP_FAILURES]	= "metamap_remap_failures",
};

/* Text lines of counters: first attribute of each line, then the end. */
static const int stat_lines[] = {
	VHOST_A_STATS_RX_PACKETS,	/* rx/tx packets and bytes */
	VHOST_A_STATS_KICKS,		/* kicks, calls */
	VHOST_A_STATS_BUSYPOLL_LOOPS,
	VHOST_A_STATS_ZCOPY_SENT,
	VHOST_A_STATS_METAMAP_FAST,
	VHOST_A_STATS_MAX + 1,
};

const char *vh_stat_key(int attr)
{
	if (attr < 1 || attr > VHOST_A_STATS_MAX)
		return NULL;
	return stat_keys[attr];
}

const char *vh_dev_type_str(uint32_t type, char *buf, size_t len)
{
	if (type == VHOST_DEV_TYPE_NET)
		return "net";
	snprintf(buf, len, "%u", type);
	return buf;
}

const char *vh_queue_type_str(uint32_t type, char *buf, size_t len)
{
	if (type == VHOST_QUEUE_TYPE_RX)
		return "rx";
	if (type == VHOST_QUEUE_TYPE_TX)
		return "tx";
	snprintf(buf, len, "%u", type);
	return buf;
}

/* "rx_packets" -> "rx-packets" */
static const char *text_key(const char *key, char *buf, size_t len)
{
	size_t i;

	for (i = 0; key[i] && i + 1 < len; i++)
		buf[i] = key[i] == '_' ? '-' : key[i];
	buf[i] = '\0';
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

static void text_stats(struct text *t, int indent, const struct vh_stats *st)
{
	struct line l = { .n = 0 };
	char key[32];
	int g, i;

	for (g = 0; stat_lines[g] <= VHOST_A_STATS_MAX; g++) {
		for (i = stat_lines[g]; i < stat_lines[g + 1]; i++)
			if (st->have & VH_BIT(i))
				line_add(&l, "%s %" PRIu64,
					 text_key(stat_keys[i], key, sizeof(key)),
					 st->val[i]);
		text_emit(t, indent, &l);
	}
}

static const char *dev_label(const struct vh_dev *d, char *buf, size_t len)
{
	if (VH_HAS(d, VHOST_A_DEV_NAME))
		return d->name;
	if (VH_HAS(d, VHOST_A_DEV_ID))
		snprintf(buf, len, "id %u", d->id);
	else
		snprintf(buf, len, "?");
	return buf;
}

/* The device's own attributes: header line, features line, tunables line. */
static void text_dev_attrs(struct text *t, const struct vh_dev *d)
{
	struct line l = { .n = 0 };
	char buf[32];

	line_add(&l, "%s:", dev_label(d, buf, sizeof(buf)));
	if (VH_HAS(d, VHOST_A_DEV_TYPE))
		line_add(&l, "type %s", vh_dev_type_str(d->type, buf, sizeof(buf)));
	if (VH_HAS(d, VHOST_A_DEV_OWNER_PID))
		line_add(&l, "owner-pid %u", d->owner_pid);
	if (VH_HAS(d, VHOST_A_DEV_BACKEND_IFNAME))
		line_add(&l, "backend-ifname %s", d->backend_ifname);
	if (VH_HAS(d, VHOST_A_DEV_BACKEND_IFINDEX))
		line_add(&l, "backend-ifindex %u", d->backend_ifindex);
	text_emit(t, 0, &l);

	if (VH_HAS(d, VHOST_A_DEV_FEATURES))
		line_add(&l, "features 0x%016" PRIx64, d->features);
	if (VH_HAS(d, VHOST_A_DEV_NUM_QUEUES))
		line_add(&l, "num-queues %u", d->num_queues);
	text_emit(t, 4, &l);

	if (VH_HAS(d, VHOST_A_DEV_BUSYPOLL_US))
		line_add(&l, "busypoll-us %u", d->busypoll_us);
	if (VH_HAS(d, VHOST_A_DEV_ZEROCOPY))
		line_add(&l, "zerocopy %s", d->zerocopy ? "on" : "off");
	if (VH_HAS(d, VHOST_A_DEV_ZCOPY_MIN_LEN))
		line_add(&l, "zcopy-min-len %u", d->zcopy_min_len);
	if (VH_HAS(d, VHOST_A_DEV_METAMAP))
		line_add(&l, "metamap %s", d->metamap ? "on" : "off");
	text_emit(t, 4, &l);
}

static void text_queue(struct text *t, int indent, const struct vh_queue *q,
		       bool with_stats)
{
	struct line l = { .n = 0 };
	char buf[16];

	if (VH_HAS(q, VHOST_A_QUEUE_INDEX))
		line_add(&l, "queue %u:", q->index);
	else
		line_add(&l, "queue ?:");
	if (VH_HAS(q, VHOST_A_QUEUE_TYPE))
		line_add(&l, "type %s", vh_queue_type_str(q->type, buf, sizeof(buf)));
	if (VH_HAS(q, VHOST_A_QUEUE_NUM))
		line_add(&l, "num %u", q->num);
	if (VH_HAS(q, VHOST_A_QUEUE_BUSYPOLL_US))
		line_add(&l, "busypoll-us %u", q->busypoll_us);
	if (VH_HAS(q, VHOST_A_QUEUE_METAMAP_VALID))
		line_add(&l, "metamap-valid %s", q->metamap_valid ? "yes" : "no");
	text_emit(t, indent, &l);
	if (with_stats && VH_HAS(q, VHOST_A_QUEUE_STATS))
		text_stats(t, indent + 4, &q->stats);
}

/* ---- JSON --------------------------------------------------------------- */

static void json_stats(struct jw *jw, const struct vh_stats *st)
{
	int i;

	jw_obj_open(jw, "stats");
	for (i = 1; i <= VHOST_A_STATS_MAX; i++)
		if (st->have & VH_BIT(i))
			jw_u64(jw, stat_keys[i], st->val[i]);
	jw_obj_close(jw);
}

static void json_queue(struct jw *jw, const struct vh_queue *q)
{
	char buf[16];

	jw_obj_open(jw, NULL);
	if (VH_HAS(q, VHOST_A_QUEUE_INDEX))
		jw_u64(jw, "index", q->index);
	if (VH_HAS(q, VHOST_A_QUEUE_TYPE))
		jw_str(jw, "type", vh_queue_type_str(q->type, buf, sizeof(buf)));
	if (VH_HAS(q, VHOST_A_QUEUE_NUM))
		jw_u64(jw, "num", q->num);
	if (VH_HAS(q, VHOST_A_QUEUE_BUSYPOLL_US))
		jw_u64(jw, "busypoll_us", q->busypoll_us);
	if (VH_HAS(q, VHOST_A_QUEUE_METAMAP_VALID))
		jw_bool(jw, "metamap_valid", q->metamap_valid);
	if (VH_HAS(q, VHOST_A_QUEUE_STATS))
		json_stats(jw, &q->stats);
	jw_obj_close(jw);
}

static void json_queues(struct jw *jw, const struct vh_dev *d)
{
	unsigned int i;

	jw_arr_open(jw, "queues");
	for (i = 0; i < d->nqueues; i++)
		json_queue(jw, &d->queues[i]);
	jw_arr_close(jw);
}

static void json_dev_id(struct jw *jw, const struct vh_dev *d)
{
	if (VH_HAS(d, VHOST_A_DEV_ID))
		jw_u64(jw, "id", d->id);
	if (VH_HAS(d, VHOST_A_DEV_NAME))
		jw_str(jw, "name", d->name);
}

/* Members of a device object, without the braces. */
static void json_dev_attrs(struct jw *jw, const struct vh_dev *d)
{
	char buf[16];

	json_dev_id(jw, d);
	if (VH_HAS(d, VHOST_A_DEV_TYPE))
		jw_str(jw, "type", vh_dev_type_str(d->type, buf, sizeof(buf)));
	if (VH_HAS(d, VHOST_A_DEV_OWNER_PID))
		jw_u64(jw, "owner_pid", d->owner_pid);
	if (VH_HAS(d, VHOST_A_DEV_BACKEND_IFINDEX))
		jw_u64(jw, "backend_ifindex", d->backend_ifindex);
	if (VH_HAS(d, VHOST_A_DEV_BACKEND_IFNAME))
		jw_str(jw, "backend_ifname", d->backend_ifname);
	if (VH_HAS(d, VHOST_A_DEV_FEATURES))
		jw_u64(jw, "features", d->features);
	if (VH_HAS(d, VHOST_A_DEV_NUM_QUEUES))
		jw_u64(jw, "num_queues", d->num_queues);
	if (VH_HAS(d, VHOST_A_DEV_BUSYPOLL_US))
		jw_u64(jw, "busypoll_us", d->busypoll_us);
	if (VH_HAS(d, VHOST_A_DEV_ZEROCOPY))
		jw_bool(jw, "zerocopy", d->zerocopy);
	if (VH_HAS(d, VHOST_A_DEV_ZCOPY_MIN_LEN))
		jw_u64(jw, "zcopy_min_len", d->zcopy_min_len);
	if (VH_HAS(d, VHOST_A_DEV_METAMAP))
		jw_bool(jw, "metamap", d->metamap);
}

/* ---- entry points ------------------------------------------------------- */

int vh_out_open(struct vh_out *o, FILE *f, const struct vh_opts *opts)
{
	static struct jw jw;

	o->f = f;
	o->json = opts->json;
	o->stats = opts->stats;
	o->jw = NULL;
	if (o->json) {
		o->jw = &jw;
		jw_init(o->jw, f, opts->pretty);
		jw_arr_open(o->jw, NULL);
	}
	return 0;
}

void vh_out_close(struct vh_out *o)
{
	if (o->json) {
		jw_arr_close(o->jw);
		fputc('\n', o->f);
	}
	fflush(o->f);
}

void vh_print_dev(struct vh_out *o, const struct vh_dev *d)
{
	bool stats = o->stats >= 1 && VH_HAS(d, VHOST_A_DEV_STATS);
	bool queues = o->stats >= 2 && d->queues_fetched;
	struct text t = { .f = o->f };
	unsigned int i;

	if (o->json) {
		jw_obj_open(o->jw, NULL);
		json_dev_attrs(o->jw, d);
		if (stats)
			json_stats(o->jw, &d->stats);
		if (queues)
			json_queues(o->jw, d);
		jw_obj_close(o->jw);
		return;
	}
	text_dev_attrs(&t, d);
	if (stats) {
		fprintf(o->f, "    statistics:\n");
		text_stats(&t, 8, &d->stats);
	}
	for (i = 0; queues && i < d->nqueues; i++)
		text_queue(&t, 4, &d->queues[i], true);
}

void vh_print_dev_stats(struct vh_out *o, const struct vh_dev *d)
{
	bool queues = o->stats >= 2 && d->queues_fetched;
	struct text t = { .f = o->f };
	unsigned int i;
	char buf[32];

	if (o->json) {
		jw_obj_open(o->jw, NULL);
		json_dev_id(o->jw, d);
		if (VH_HAS(d, VHOST_A_DEV_STATS))
			json_stats(o->jw, &d->stats);
		if (queues)
			json_queues(o->jw, d);
		jw_obj_close(o->jw);
		return;
	}
	fprintf(o->f, "%s:\n", dev_label(d, buf, sizeof(buf)));
	if (VH_HAS(d, VHOST_A_DEV_STATS))
		text_stats(&t, 4, &d->stats);
	for (i = 0; queues && i < d->nqueues; i++)
		text_queue(&t, 4, &d->queues[i], true);
}

static const char *const event_names[] = {
	[VH_EV_ADD]	= "add",
	[VH_EV_DEL]	= "del",
	[VH_EV_CHANGE]	= "change",
};

void vh_print_event(FILE *f, const struct vh_opts *opts, enum vh_event ev,
		    const struct vh_dev *d)
{
	bool stats = opts->stats >= 1 && VH_HAS(d, VHOST_A_DEV_STATS);

	if (opts->json) {
		struct jw jw;

		jw_init(&jw, f, opts->pretty);
		jw_obj_open(&jw, NULL);
		jw_str(&jw, "event", event_names[ev]);
		json_dev_attrs(&jw, d);
		if (stats)
			json_stats(&jw, &d->stats);
		jw_obj_close(&jw);
	} else {
		struct text t = { .f = f, .oneline = true, .started = true };

		fprintf(f, "[%s]", event_names[ev]);
		text_dev_attrs(&t, d);
		if (stats)
			text_stats(&t, 0, &d->stats);
	}
	fputc('\n', f);
	fflush(f);
}
