// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers of the admin plane selftests; see vhost_admin_lib.h.  Everything
 * the kernel is asked goes through the generated library: no message of the
 * family is built or parsed here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "vhost_admin_lib.h"
#include "vhost_net_lib.h"

/* The generated library's policy of the stats attribute set: the names. */
extern const struct ynl_policy_attr vhost_stats_policy[VHOST_A_STATS_MAX + 1];

struct ynl_sock *adm_open(void)
{
	struct ynl_error yerr;
	struct ynl_sock *ys = ynl_sock_create(&ynl_vhost_family, &yerr);

	if (!ys)
		fprintf(stderr, "# ynl_sock_create: %s\n", yerr.msg);
	return ys;
}

struct ynl_sock *adm_monitor(int *err)
{
	struct ynl_sock *ys = adm_open();

	*err = -ENOENT;
	if (!ys)
		return NULL;
	if (ynl_subscribe(ys, VHOST_MCGRP_MONITOR)) {
		*err = adm_err(ys) ?: -EINVAL;
		ynl_sock_destroy(ys);
		return NULL;
	}
	*err = 0;
	return ys;
}

int adm_err(struct ynl_sock *ys)
{
	return -(int)ys->err.code;
}

bool adm_msg_has(struct ynl_sock *ys, const char *text)
{
	return !!strstr(ys->err.msg, text);
}

struct vhost_dev_get_rsp *adm_get(struct ynl_sock *ys, uint32_t id)
{
	struct vhost_dev_get_req *req = vhost_dev_get_req_alloc();
	struct vhost_dev_get_rsp *rsp;

	vhost_dev_get_req_set_id(req, id);
	rsp = vhost_dev_get(ys, req);
	vhost_dev_get_req_free(req);
	return rsp;
}

struct vhost_dev_get_rsp *adm_get_name(struct ynl_sock *ys, const char *name)
{
	struct vhost_dev_get_req *req = vhost_dev_get_req_alloc();
	struct vhost_dev_get_rsp *rsp;

	vhost_dev_get_req_set_name(req, name);
	rsp = vhost_dev_get(ys, req);
	vhost_dev_get_req_free(req);
	return rsp;
}

int adm_set(struct ynl_sock *ys, uint32_t id, struct adm_tun t)
{
	struct vhost_dev_set_req *req = vhost_dev_set_req_alloc();
	int r;

	vhost_dev_set_req_set_id(req, id);
	if (t.busypoll_us >= 0)
		vhost_dev_set_req_set_admin_busypoll_us(req, t.busypoll_us);
	if (t.zerocopy >= 0)
		vhost_dev_set_req_set_zerocopy(req, t.zerocopy);
	if (t.zcopy_min_len >= 0)
		vhost_dev_set_req_set_zcopy_min_len(req, t.zcopy_min_len);
	if (t.metamap >= 0)
		vhost_dev_set_req_set_metamap(req, t.metamap);
	r = vhost_dev_set(ys, req) ? adm_err(ys) ?: -EIO : 0;
	vhost_dev_set_req_free(req);
	return r;
}

struct vhost_dev_get_list *adm_dev_dump(struct ynl_sock *ys)
{
	struct vhost_dev_get_req_dump *req = vhost_dev_get_req_dump_alloc();
	struct vhost_dev_get_list *l;

	if (!req)
		return NULL;
	l = vhost_dev_get_dump(ys, req);
	vhost_dev_get_req_dump_free(req);
	return l;
}

int adm_dump_ids(struct ynl_sock *ys, uint32_t *ids, int max)
{
	struct vhost_dev_get_list *l = adm_dev_dump(ys);
	int n = 0;

	if (!l)
		return adm_err(ys) ?: -EIO;
	ynl_dump_foreach(l, d)
		if (n < max)
			ids[n++] = d->id;
	vhost_dev_get_list_free(l);
	return n;
}

bool adm_dump_has(struct ynl_sock *ys, uint32_t id)
{
	struct vhost_dev_get_list *l = adm_dev_dump(ys);
	bool found = false;

	if (!l)
		return false;
	ynl_dump_foreach(l, d)
		found |= d->id == id;
	vhost_dev_get_list_free(l);
	return found;
}

#define STAT(field, attr)						\
	do {								\
		if (r->_present.field) {				\
			s->has[VHOST_A_STATS_##attr] = true;		\
			s->v[VHOST_A_STATS_##attr] = r->field;		\
		}							\
	} while (0)

static void adm_stats_from(const struct vhost_stats_get_rsp_dump *r,
			   struct adm_stats *s)
{
	memset(s, 0, sizeof(*s));
	s->dev_id = r->dev_id;
	s->queue = r->_present.queue_index ? (int)r->queue_index : -1;
	s->queue_type = r->_present.queue_type ? (int)r->queue_type : -1;
	STAT(rx_packets, RX_PACKETS);
	STAT(rx_bytes, RX_BYTES);
	STAT(tx_packets, TX_PACKETS);
	STAT(tx_bytes, TX_BYTES);
	STAT(kicks, KICKS);
	STAT(calls, CALLS);
	STAT(busypoll_loops, BUSYPOLL_LOOPS);
	STAT(busypoll_ns, BUSYPOLL_NS);
	STAT(busypoll_found, BUSYPOLL_FOUND);
	STAT(zcopy_sent, ZCOPY_SENT);
	STAT(zcopy_copied, ZCOPY_COPIED);
	STAT(zcopy_pending, ZCOPY_PENDING);
	STAT(zcopy_hol_stalls, ZCOPY_HOL_STALLS);
	STAT(metamap_fast, METAMAP_FAST);
	STAT(metamap_fallback, METAMAP_FALLBACK);
	STAT(metamap_invalidations, METAMAP_INVALIDATIONS);
	STAT(metamap_remaps, METAMAP_REMAPS);
	STAT(metamap_remap_failures, METAMAP_REMAP_FAILURES);
	STAT(metamap_refused, METAMAP_REFUSED);
	STAT(tx_errors, TX_ERRORS);
	STAT(zcopy_fallback, ZCOPY_FALLBACK);
	STAT(zcopy_backoff, ZCOPY_BACKOFF);
	STAT(metamap_uaccess_fills, METAMAP_UACCESS_FILLS);
	STAT(used_entries, USED_ENTRIES);
	STAT(zcopy_in_order, ZCOPY_IN_ORDER);
	STAT(metamap_poisoned, METAMAP_POISONED);
}

int adm_stats(struct ynl_sock *ys, uint32_t id, bool all, bool per_queue,
	      struct adm_stats *out, int max)
{
	struct vhost_stats_get_req_dump *req = vhost_stats_get_req_dump_alloc();
	struct vhost_stats_get_rsp_list *l;
	int n = 0;

	if (!all)
		vhost_stats_get_req_dump_set_dev_id(req, id);
	if (per_queue)
		vhost_stats_get_req_dump_set_scope(req, VHOST_STATS_SCOPE_QUEUE);
	l = vhost_stats_get_dump(ys, req);
	vhost_stats_get_req_dump_free(req);
	if (!l)
		return adm_err(ys) ?: -EIO;
	ynl_dump_foreach(l, r)
		if (n < max)
			adm_stats_from(r, &out[n++]);
	vhost_stats_get_rsp_list_free(l);
	return n;
}

uint64_t adm_zcopy_outcomes(const struct adm_stats *s)
{
	return s->v[VHOST_A_STATS_ZCOPY_SENT] +
	       s->v[VHOST_A_STATS_ZCOPY_FALLBACK] +
	       s->v[VHOST_A_STATS_ZCOPY_COPIED] +
	       s->v[VHOST_A_STATS_ZCOPY_HOL_STALLS] +
	       s->v[VHOST_A_STATS_ZCOPY_BACKOFF] +
	       s->v[VHOST_A_STATS_ZCOPY_IN_ORDER];
}

int adm_stats_dev(struct ynl_sock *ys, uint32_t id, struct adm_stats *dev,
		  struct adm_stats *rxq, struct adm_stats *txq)
{
	struct adm_stats q[2];
	int n;

	n = adm_stats(ys, id, false, false, dev, 1);
	if (n != 1)
		return n < 0 ? n : -EPROTO;
	n = adm_stats(ys, id, false, true, q, 2);
	if (n != 2)
		return n < 0 ? n : -EPROTO;
	if (q[0].queue != VNET_RX || q[1].queue != VNET_TX)
		return -EPROTO;
	*rxq = q[0];
	*txq = q[1];
	return 0;
}

const char *adm_stat_name(int attr)
{
	if (attr < 0 || attr > VHOST_A_STATS_MAX)
		return NULL;
	return vhost_stats_policy[attr].name;
}

static void adm_ntf_copy(struct vhost_dev_get_ntf *ntf, struct adm_ntf *n)
{
	memset(n, 0, sizeof(*n));
	n->cmd = ntf->cmd;
	n->dev = ntf->obj;
	if (ntf->obj.name)
		snprintf(n->name, sizeof(n->name), "%s", ntf->obj.name);
	if (ntf->obj.backend_ifname)
		snprintf(n->ifname, sizeof(n->ifname), "%s",
			 ntf->obj.backend_ifname);
	if (ntf->obj.label)
		snprintf(n->label, sizeof(n->label), "%s", ntf->obj.label);
	n->dev.name = NULL;
	n->dev.backend_ifname = NULL;
	n->dev.label = NULL;
	ynl_ntf_free((struct ynl_ntf_base_type *)ntf);
}

int adm_ntf_next(struct ynl_sock *ys, int timeout_ms, struct adm_ntf *n)
{
	struct pollfd p = { .fd = ynl_socket_get_fd(ys), .events = POLLIN };
	double end = now_ms() + timeout_ms;
	struct ynl_ntf_base_type *ntf;
	int left;

	for (;;) {
		ntf = ynl_ntf_dequeue(ys);
		if (ntf) {
			adm_ntf_copy((struct vhost_dev_get_ntf *)ntf, n);
			return 0;
		}
		left = end - now_ms();
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, left) < 0)
			return -errno;
		if (ynl_ntf_check(ys) < 0)
			return adm_err(ys) ?: -EIO;
	}
}

int adm_ntf_drain(struct ynl_sock *ys, int quiet_ms, struct adm_ntf *n,
		  int max)
{
	struct adm_ntf tmp;
	int got = 0;

	while (!adm_ntf_next(ys, quiet_ms, got < max ? &n[got] : &tmp))
		got++;
	return got;
}

int64_t vhost_fd_id(int fd)
{
	char name[IFNAMSIZ];
	int r = vhost_fd_name(fd, name, sizeof(name));

	if (r)
		return r;
	if (strncmp(name, "vhost", 5))
		return -EPROTO;
	return strtoll(name + 5, NULL, 10);
}

int sysfs_u64(const char *name, const char *file, uint64_t *v)
{
	char path[256];
	int ok, err;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/vhost/%s/%s", name, file);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	errno = 0;
	ok = fscanf(f, "%" SCNi64, (int64_t *)v) == 1;
	/* the read's own error: ENODEV once the device is gone */
	err = ferror(f) ? errno : 0;
	fclose(f);
	return ok ? 0 : err ? -err : -EINVAL;
}

int module_param_u64(const char *module, const char *param, uint64_t *v)
{
	char path[256], buf[32];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/sys/module/%s/parameters/%s", module,
		 param);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%31s", buf) == 1;
	fclose(f);
	if (!ok)
		return -EINVAL;
	if (buf[0] == 'Y' || buf[0] == 'N')
		*v = buf[0] == 'Y';
	else
		*v = strtoull(buf, NULL, 0);
	return 0;
}

int wait_child(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "# child %d killed by signal %d\n", pid,
			WTERMSIG(status));
		return 128 + WTERMSIG(status);
	}
	return WEXITSTATUS(status);
}

double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
