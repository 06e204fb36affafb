// SPDX-License-Identifier: GPL-2.0
/*
 * vhost admin plane: a registry of vhost devices, each with an id and a name
 * (vhostN), the network namespace it belongs to, its tunables, its
 * statistics and a class device with sysfs attributes.  The generic netlink
 * family is in vhost_netlink.c.
 *
 * Device drivers register a device when it is opened and unregister it
 * first thing when it is released.  A device belongs to the network
 * namespace it was opened in for its whole life; each namespace has its own
 * registry, ids and policy (struct vhost_admin_net).  Lookups take a
 * reference on a device of the requester's namespace (rules in
 * admin_internal.h); per device, the admin mutex serialises changes (lock
 * order in admin.h).  /sys/class/vhost is tagged by network namespace like
 * /sys/class/net: a sysfs mount shows the devices of the namespace it was
 * mounted in.
 *
 * See Documentation/networking/vhost-admin.rst.
 */
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/hash.h>
#include <linux/hashtable.h>
#include <linux/if.h>
#include <linux/kobject.h>
#include <linux/module.h>
#include <linux/netdevice.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/srcu.h>
#include <linux/sysfs.h>
#include <linux/wait_bit.h>
#include <linux/xarray.h>
#include <net/net_namespace.h>
#include <net/netns/generic.h>
#include <uapi/linux/net_namespace.h>

#include "admin_internal.h"
#include "vhost_nl.h"

/*
 * Boot-time defaults of every namespace's new devices; a namespace's own
 * are set over netlink (defaults-set), applied at VHOST_SET_OWNER.
 */
static unsigned int busypoll_us;
module_param(busypoll_us, uint, 0444);
MODULE_PARM_DESC(busypoll_us,
		 "Default busy-poll time of new devices, in microseconds (default: 0, the owner decides)");

static unsigned int zcopy_min_len = 256;
module_param(zcopy_min_len, uint, 0444);
MODULE_PARM_DESC(zcopy_min_len,
		 "Default length below which new devices copy TX packets even with zero-copy on (default and least: 256)");

/**
 * struct vhost_admin_net - the admin plane in a network namespace
 * @devs: its devices by id; rules in admin_internal.h
 * @next_id: where the cyclic allocation of ids goes on (under @devs' lock)
 * @lock: protects @policy and @defaults; loads and stores only
 * @policy: what the namespace's administrators may change, when they are
 *	tenants (vhost_admin_tenant())
 * @defaults: the tunables a device gets with its owner
 */
struct vhost_admin_net {
	struct xarray devs;
	u32 next_id;
	spinlock_t lock;	/* protects policy, defaults */
	struct vhost_admin_policy policy;
	struct vhost_admin_defaults defaults;
};

/*
 * A tenant's dev-set is checked against the policy again where its values
 * are stored, inside a read section of this: policy-set, once it changed
 * the policy, waits for the sections that may have checked the old one,
 * so that no value it revoked lands after it returned.  The sections wait
 * on nothing a guest or a tenant controls (the locks they need are held
 * before they start).
 */
DEFINE_STATIC_SRCU(vhost_admin_policy_srcu);

/*
 * The interfaces devices feed, by interface.  A device attached to one
 * holds a reference on it (struct vhost_admin's @backend); the netdevice
 * notifier follows the interface into the namespace it moves to and drops
 * the reference when it is unregistered, so that a device never names an
 * interface that went, nor one that took its index or its name.  The
 * mutex protects the table and every device's @backend.  Lock order:
 * RTNL -> vhost_backends_mutex, and a device's admin mutex ->
 * vhost_backends_mutex; nothing is taken inside it.  Readers of @backend
 * use RCU: a net_device is freed a grace period after the NETDEV_UNREGISTER
 * that made its devices forget it.
 */
static DEFINE_MUTEX(vhost_backends_mutex);
static DEFINE_HASHTABLE(vhost_backends, 8);

/*
 * The uevent budget of each user: uevent_burst uevents at once, then
 * uevent_rate a second, per bucket of users (users are hashed by the
 * effective uid that opened the device; two users in a bucket share it).
 * A uevent over budget waits, merged with the device's later ones
 * (struct vhost_admin): whatever one user does, udevd hears of its devices
 * at that rate, and of every device's last state.  REMOVE uevents are not
 * counted: one follows an ADD that was.
 */
static unsigned int uevent_rate = 50;
module_param(uevent_rate, uint, 0644);
MODULE_PARM_DESC(uevent_rate,
		 "uevents a second the vhost devices of one user send once its burst is spent; the others wait, merged (default 50)");

static unsigned int uevent_burst = 100;
module_param(uevent_burst, uint, 0644);
MODULE_PARM_DESC(uevent_burst,
		 "uevents the vhost devices of one user may send at once (default 100)");

#define VHOST_UEVENT_BUCKETS_BITS 6

struct vhost_uevent_bucket {
	unsigned long last;	/* jiffies of the last refill */
	u32 tokens;
};

static DEFINE_SPINLOCK(vhost_uevent_lock);	/* protects the buckets */
static struct vhost_uevent_bucket
	vhost_uevent_buckets[1 << VHOST_UEVENT_BUCKETS_BITS];

/*
 * Take one uevent of uid's budget: 0, or how many jiffies until there is
 * one.  Loads and stores under the lock.
 */
static unsigned long vhost_uevent_take(kuid_t uid)
{
	struct vhost_uevent_bucket *b =
		&vhost_uevent_buckets[hash_32(__kuid_val(uid),
					      VHOST_UEVENT_BUCKETS_BITS)];
	unsigned long rate = clamp(READ_ONCE(uevent_rate), 1U, (u32)HZ);
	unsigned long burst = clamp(READ_ONCE(uevent_burst), 1U, 100000U);
	unsigned long now = jiffies, wait = 0, n;

	spin_lock(&vhost_uevent_lock);
	/* Idle for long enough to fill the bucket: full (no overflow). */
	if (time_after(now, b->last + HZ * burst / rate)) {
		b->last = now;
		b->tokens = burst;
	}
	n = (now - b->last) * rate / HZ;
	if (n) {
		b->tokens = min(b->tokens + n, burst);
		b->last += n * HZ / rate;
	}
	if (b->tokens)
		b->tokens--;
	else
		wait = max(b->last + HZ / rate - now, 1UL);
	spin_unlock(&vhost_uevent_lock);
	return wait;
}

/* The tunables of dev-set; of defaults-set too but the label, last. */
const struct vhost_admin_tunable vhost_admin_tunables[VHOST_ADMIN_NTUNABLES] = {
	{ VHOST_A_DEV_ADMIN_BUSYPOLL_US, VHOST_TUNABLE_ADMIN_BUSYPOLL_US },
	{ VHOST_A_DEV_ZEROCOPY, VHOST_TUNABLE_ZEROCOPY },
	{ VHOST_A_DEV_ZCOPY_MIN_LEN, VHOST_TUNABLE_ZCOPY_MIN_LEN },
	{ VHOST_A_DEV_METAMAP, VHOST_TUNABLE_METAMAP },
	{ VHOST_A_DEV_LABEL, VHOST_TUNABLE_LABEL },
};

/**
 * struct vhost_admin_queue - a queue's sysfs directory and its worker
 * @kobj: queues/vqN
 * @dev: the device
 * @index: the queue's index
 * @ident: work queued on the queue's worker at VHOST_SET_OWNER, which
 *	records the worker; the owner's VHOST_SET_OWNER flushes it
 * @worker: the worker's thread, or NULL; under the device's admin.lock
 */
struct vhost_admin_queue {
	struct kobject kobj;
	struct vhost_dev *dev;
	unsigned int index;
	struct vhost_work ident;
	struct pid *worker;
};

static unsigned int vhost_admin_net_id __read_mostly;

/* The serial of the last device registered (struct vhost_admin). */
static atomic64_t vhost_admin_serial = ATOMIC64_INIT(0);

static struct vhost_admin_net *vhost_admin_net(struct net *net)
{
	return net_generic(net, vhost_admin_net_id);
}

static const char * const vhost_admin_type_names[] = {
	[VHOST_DEV_TYPE_NET] = "net",
};

static const char * const vhost_admin_queue_type_names[] = {
	[VHOST_QUEUE_TYPE_RX] = "rx",
	[VHOST_QUEUE_TYPE_TX] = "tx",
};

/* sysfs file of each counter; the netlink attribute is the index. */
static const char * const vhost_admin_stat_names[VHOST_A_STATS_MAX + 1] = {
	[VHOST_A_STATS_RX_PACKETS] = "rx_packets",
	[VHOST_A_STATS_RX_BYTES] = "rx_bytes",
	[VHOST_A_STATS_TX_PACKETS] = "tx_packets",
	[VHOST_A_STATS_TX_BYTES] = "tx_bytes",
	[VHOST_A_STATS_KICKS] = "kicks",
	[VHOST_A_STATS_CALLS] = "calls",
	[VHOST_A_STATS_BUSYPOLL_LOOPS] = "busypoll_loops",
	[VHOST_A_STATS_BUSYPOLL_NS] = "busypoll_ns",
	[VHOST_A_STATS_BUSYPOLL_FOUND] = "busypoll_found",
	[VHOST_A_STATS_ZCOPY_SENT] = "zcopy_sent",
	[VHOST_A_STATS_ZCOPY_COPIED] = "zcopy_copied",
	[VHOST_A_STATS_ZCOPY_PENDING] = "zcopy_pending",
	[VHOST_A_STATS_ZCOPY_HOL_STALLS] = "zcopy_hol_stalls",
	[VHOST_A_STATS_METAMAP_FAST] = "metamap_fast",
	[VHOST_A_STATS_METAMAP_FALLBACK] = "metamap_fallback",
	[VHOST_A_STATS_METAMAP_INVALIDATIONS] = "metamap_invalidations",
	[VHOST_A_STATS_METAMAP_REMAPS] = "metamap_remaps",
	[VHOST_A_STATS_METAMAP_REMAP_FAILURES] = "metamap_remap_failures",
	[VHOST_A_STATS_METAMAP_REFUSED] = "metamap_refused",
	[VHOST_A_STATS_TX_ERRORS] = "tx_errors",
	[VHOST_A_STATS_ZCOPY_FALLBACK] = "zcopy_fallback",
	[VHOST_A_STATS_ZCOPY_BACKOFF] = "zcopy_backoff",
	[VHOST_A_STATS_METAMAP_UACCESS_FILLS] = "metamap_uaccess_fills",
	[VHOST_A_STATS_USED_ENTRIES] = "used_entries",
	[VHOST_A_STATS_ZCOPY_IN_ORDER] = "zcopy_in_order",
	[VHOST_A_STATS_METAMAP_POISONED] = "metamap_poisoned",
};

/* ---- registry ---------------------------------------------------------- */

/* A reference on the device of id in net, or NULL. */
struct vhost_dev *vhost_admin_get(struct net *net, u32 id)
{
	struct xarray *devs = &vhost_admin_net(net)->devs;
	struct vhost_dev *dev;

	xa_lock(devs);
	dev = xa_load(devs, id);
	if (dev)
		refcount_inc(&dev->admin.refs);
	xa_unlock(devs);
	return dev;
}

/*
 * A reference on the device of id in net if it is the one of serial (not
 * a later device that got the id), or NULL.
 */
struct vhost_dev *vhost_admin_get_serial(struct net *net, u32 id, u64 serial)
{
	struct vhost_dev *dev = vhost_admin_get(net, id);

	if (dev && dev->admin.serial != serial) {
		vhost_admin_put(dev);
		dev = NULL;
	}
	return dev;
}

/* A reference on the device named name (vhostN) in net, or NULL. */
struct vhost_dev *vhost_admin_get_name(struct net *net, const char *name)
{
	struct vhost_dev *dev;
	u32 id;

	if (strncmp(name, "vhost", 5) || kstrtou32(name + 5, 10, &id))
		return NULL;
	dev = vhost_admin_get(net, id);
	if (dev && strcmp(dev->admin.name, name)) {	/* "vhost007" */
		vhost_admin_put(dev);
		dev = NULL;
	}
	return dev;
}

/*
 * A reference on the device of net with the lowest id >= *id, which is
 * updated; NULL at the end.
 */
struct vhost_dev *vhost_admin_get_next(struct net *net, unsigned long *id)
{
	struct xarray *devs = &vhost_admin_net(net)->devs;
	struct vhost_dev *dev;

	xa_lock(devs);
	dev = xa_find(devs, id, ULONG_MAX, XA_PRESENT);
	if (dev)
		refcount_inc(&dev->admin.refs);
	xa_unlock(devs);
	return dev;
}

void vhost_admin_put(struct vhost_dev *dev)
{
	/* The release may free dev once the count is 0: only its address. */
	if (refcount_dec_and_test(&dev->admin.refs))
		wake_up_var(&dev->admin.refs);
}

/* ---- statistics and state ---------------------------------------------- */

static u32 vhost_admin_queue_type(struct vhost_dev *dev, unsigned int index)
{
	return dev->admin.ops->queue_type(index);
}

static void vhost_admin_stat(struct vhost_admin_stats *st, int attr, u64 val)
{
	st->val[attr] += val;
	__set_bit(attr, st->has);
}

static void vhost_admin_metamap_stats(struct vhost_virtqueue *vq,
				      struct vhost_admin_stats *st)
{
	struct vhost_metamap_counts c;

	if (!IS_ENABLED(CONFIG_VHOST_METAMAP))
		return;
	vhost_metamap_read_stats(vq, &c);
	vhost_admin_stat(st, VHOST_A_STATS_METAMAP_FAST, c.fast);
	vhost_admin_stat(st, VHOST_A_STATS_METAMAP_FALLBACK, c.fallback);
	vhost_admin_stat(st, VHOST_A_STATS_METAMAP_INVALIDATIONS,
			 c.invalidations);
	vhost_admin_stat(st, VHOST_A_STATS_METAMAP_REMAPS, c.remaps);
	vhost_admin_stat(st, VHOST_A_STATS_METAMAP_REMAP_FAILURES,
			 c.remap_failures);
	vhost_admin_stat(st, VHOST_A_STATS_METAMAP_REFUSED, c.refused);
	vhost_admin_stat(st, VHOST_A_STATS_METAMAP_UACCESS_FILLS,
			 c.uaccess_fills);
	vhost_admin_stat(st, VHOST_A_STATS_METAMAP_POISONED, c.poisoned);
}

/* Add queue index's counters to st.  Lockless: u64_stats readers. */
void vhost_admin_queue_stats(struct vhost_dev *dev, unsigned int index,
			     struct vhost_admin_stats *st)
{
	struct vhost_virtqueue *vq = dev->vqs[index];
	const struct vhost_vq_stats *s = vq->stats;
	u64 pkts, bytes, errs, loops, ns, found, sent, fallback, copied, hol;
	u64 backoff, in_order, pend, calls, used, kicks;
	bool tx = vhost_admin_queue_type(dev, index) == VHOST_QUEUE_TYPE_TX;
	unsigned int start;

	do {
		start = u64_stats_fetch_begin(&s->syncp);
		pkts = u64_stats_read(&s->packets);
		bytes = u64_stats_read(&s->bytes);
		errs = u64_stats_read(&s->tx_errors);
		loops = u64_stats_read(&s->busypoll_loops);
		ns = u64_stats_read(&s->busypoll_ns);
		found = u64_stats_read(&s->busypoll_found);
		sent = u64_stats_read(&s->zcopy_sent);
		fallback = u64_stats_read(&s->zcopy_fallback);
		copied = u64_stats_read(&s->zcopy_copied);
		hol = u64_stats_read(&s->zcopy_hol_stalls);
		backoff = u64_stats_read(&s->zcopy_backoff);
		in_order = u64_stats_read(&s->zcopy_in_order);
		pend = u64_stats_read(&s->zcopy_pending);
		calls = u64_stats_read(&s->calls);
		used = u64_stats_read(&s->used_entries);
	} while (u64_stats_fetch_retry(&s->syncp, start));
	do {
		start = u64_stats_fetch_begin(&s->kick.syncp);
		kicks = u64_stats_read(&s->kick.kicks);
	} while (u64_stats_fetch_retry(&s->kick.syncp, start));

	vhost_admin_stat(st, tx ? VHOST_A_STATS_TX_PACKETS :
				  VHOST_A_STATS_RX_PACKETS, pkts);
	vhost_admin_stat(st, tx ? VHOST_A_STATS_TX_BYTES :
				  VHOST_A_STATS_RX_BYTES, bytes);
	vhost_admin_stat(st, VHOST_A_STATS_KICKS, kicks);
	vhost_admin_stat(st, VHOST_A_STATS_CALLS, calls);
	vhost_admin_stat(st, VHOST_A_STATS_USED_ENTRIES, used);
	vhost_admin_stat(st, VHOST_A_STATS_BUSYPOLL_LOOPS, loops);
	vhost_admin_stat(st, VHOST_A_STATS_BUSYPOLL_NS, ns);
	vhost_admin_stat(st, VHOST_A_STATS_BUSYPOLL_FOUND, found);
	if (tx)
		vhost_admin_stat(st, VHOST_A_STATS_TX_ERRORS, errs);
	if (tx && dev->admin.ops->type == VHOST_DEV_TYPE_NET) {
		vhost_admin_stat(st, VHOST_A_STATS_ZCOPY_SENT, sent);
		vhost_admin_stat(st, VHOST_A_STATS_ZCOPY_FALLBACK, fallback);
		vhost_admin_stat(st, VHOST_A_STATS_ZCOPY_COPIED, copied);
		vhost_admin_stat(st, VHOST_A_STATS_ZCOPY_HOL_STALLS, hol);
		vhost_admin_stat(st, VHOST_A_STATS_ZCOPY_BACKOFF, backoff);
		vhost_admin_stat(st, VHOST_A_STATS_ZCOPY_IN_ORDER, in_order);
		vhost_admin_stat(st, VHOST_A_STATS_ZCOPY_PENDING, pend);
	}
	vhost_admin_metamap_stats(vq, st);
}

/* A device's counters: the sums over its queues. */
void vhost_admin_dev_stats(struct vhost_dev *dev, struct vhost_admin_stats *st)
{
	int i;

	memset(st, 0, sizeof(*st));
	for (i = 0; i < dev->nvqs; i++)
		vhost_admin_queue_stats(dev, i, st);
}

/*
 * A tunable of tun by its VHOST_A_DEV_* attribute (each read once: the
 * device's are written under its admin mutex, read without it).
 */
u32 vhost_tunables_get(const struct vhost_tunables *tun, int attr)
{
	switch (attr) {
	case VHOST_A_DEV_ADMIN_BUSYPOLL_US:
		return READ_ONCE(tun->busypoll_us);
	case VHOST_A_DEV_ZEROCOPY:
		return READ_ONCE(tun->zerocopy);
	case VHOST_A_DEV_ZCOPY_MIN_LEN:
		return READ_ONCE(tun->zcopy_min_len);
	case VHOST_A_DEV_METAMAP:
		return READ_ONCE(tun->metamap);
	}
	WARN_ON_ONCE(1);
	return 0;
}

/* Set a tunable of tun by its attribute (not a live device's: see above). */
void vhost_tunables_set(struct vhost_tunables *tun, int attr, u32 val)
{
	switch (attr) {
	case VHOST_A_DEV_ADMIN_BUSYPOLL_US:
		tun->busypoll_us = val;
		break;
	case VHOST_A_DEV_ZEROCOPY:
		tun->zerocopy = val;
		break;
	case VHOST_A_DEV_ZCOPY_MIN_LEN:
		tun->zcopy_min_len = val;
		break;
	case VHOST_A_DEV_METAMAP:
		tun->metamap = val;
		break;
	default:
		WARN_ON_ONCE(1);
	}
}

/* A tunable's value, by its VHOST_A_DEV_* attribute. */
u32 vhost_admin_tunable(struct vhost_dev *dev, int attr)
{
	return vhost_tunables_get(&dev->admin.tun, attr);
}

/* Whether dev feeds interface ifindex (> 0) of its own namespace. */
bool vhost_admin_feeds(struct vhost_dev *dev, int ifindex)
{
	struct vhost_admin *a = &dev->admin;
	struct net_device *nd;
	bool ret;

	rcu_read_lock();
	nd = rcu_dereference(a->backend);
	ret = ifindex > 0 && nd && READ_ONCE(nd->ifindex) == ifindex &&
	      net_eq(dev_net_rcu(nd), a->net);
	rcu_read_unlock();
	return ret;
}

/*
 * The owner's thread group in *pid (a reference), or NULL: copied under
 * the lock, translated by the caller outside it.
 */
static struct pid *vhost_admin_get_owner(struct vhost_dev *dev)
{
	struct pid *pid;

	spin_lock(&dev->admin.lock);
	pid = get_pid(dev->admin.owner);
	spin_unlock(&dev->admin.lock);
	return pid;
}

/*
 * The number in the caller's pid namespace of pid (a reference, which this
 * puts, or NULL) while it has a task of type; else 0 (its number may be
 * another task's by now).
 */
static u32 vhost_admin_pid_vnr(struct pid *pid, enum pid_type type)
{
	u32 nr = 0;

	rcu_read_lock();
	if (pid && pid_has_task(pid, type))
		nr = pid_vnr(pid);
	rcu_read_unlock();
	put_pid(pid);
	return nr;
}

/*
 * The owner's pid in the caller's pid namespace; 0 if there is none, it is
 * not visible there, or the owner has exited (its number may be another
 * process's by now).
 */
u32 vhost_admin_owner_pid(struct vhost_dev *dev)
{
	return vhost_admin_pid_vnr(vhost_admin_get_owner(dev), PIDTYPE_TGID);
}

/* Whether the owner of dev is the thread group of pid (not NULL). */
bool vhost_admin_owned_by(struct vhost_dev *dev, struct pid *pid)
{
	bool ret;

	spin_lock(&dev->admin.lock);
	ret = dev->admin.owner == pid;
	spin_unlock(&dev->admin.lock);
	return ret;
}

/*
 * The label of dev into buf (VHOST_LABEL_LEN_MAX + 1 bytes); false, and
 * buf "", when it has none.
 */
bool vhost_admin_label(struct vhost_dev *dev, char *buf)
{
	struct vhost_admin_label *l;

	rcu_read_lock();
	l = rcu_dereference(dev->admin.label);
	strscpy(buf, l ? l->s : "", VHOST_LABEL_LEN_MAX + 1);
	rcu_read_unlock();
	return buf[0];
}

/* Whether the label of dev is s. */
bool vhost_admin_label_is(struct vhost_dev *dev, const char *s)
{
	struct vhost_admin_label *l;
	bool ret;

	rcu_read_lock();
	l = rcu_dereference(dev->admin.label);
	ret = l && !strcmp(l->s, s);
	rcu_read_unlock();
	return ret;
}

/*
 * Whether s may be a label: printable ASCII, spaces included, nothing
 * else (no control character, which would forge lines in the uevent file
 * or reach a terminal; no byte that is not ASCII, which OpenMetrics and
 * JSON readers would take for UTF-8).
 */
bool vhost_admin_label_valid(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* A label to give a device: NULL for "" (none), ERR_PTR(-ENOMEM). */
struct vhost_admin_label *vhost_admin_label_alloc(const char *s)
{
	struct vhost_admin_label *l;
	size_t len = strlen(s);

	if (!len)
		return NULL;
	l = kmalloc(struct_size(l, s, len + 1), GFP_KERNEL_ACCOUNT);
	if (!l)
		return ERR_PTR(-ENOMEM);
	memcpy(l->s, s, len + 1);
	return l;
}

/*
 * The thread id, in the caller's pid namespace, of the worker that serves
 * queue index; 0 when it has none or it is not visible there.
 */
u32 vhost_admin_queue_worker(struct vhost_dev *dev, unsigned int index)
{
	struct vhost_admin *a = &dev->admin;
	struct pid *pid;

	spin_lock(&a->lock);
	pid = get_pid(a->queues[index]->worker);
	spin_unlock(&a->lock);
	return vhost_admin_pid_vnr(pid, PIDTYPE_PID);
}

/*
 * The interface the device feeds: its index (0: none), the id in the
 * device's namespace of the interface's namespace in *nsid
 * (NETNSA_NSID_NOT_ASSIGNED when it is the device's), its name in ifname
 * (IFNAMSIZ bytes).  An interface in a namespace that has no id in the
 * device's (none could be allocated) reads as none: its index and name
 * would name another interface there.
 */
int vhost_admin_backend(struct vhost_dev *dev, int *nsid, char *ifname)
{
	struct vhost_admin *a = &dev->admin;
	struct net_device *nd;
	int ifindex = 0;
	struct net *net;

	*nsid = NETNSA_NSID_NOT_ASSIGNED;
	ifname[0] = 0;
	rcu_read_lock();
	nd = rcu_dereference(a->backend);
	if (nd) {
		net = dev_net_rcu(nd);
		if (!net_eq(net, a->net))
			*nsid = peernet2id(a->net, net);
		if (net_eq(net, a->net) || *nsid != NETNSA_NSID_NOT_ASSIGNED) {
			ifindex = READ_ONCE(nd->ifindex);
			/* A rename may tear the copy; strscpy() ends it. */
			strscpy(ifname, nd->name, IFNAMSIZ);
		}
	}
	rcu_read_unlock();
	return ifindex;
}

/**
 * vhost_admin_busypoll - the busy-poll time a queue uses
 * @dev: its device
 * @vq: the queue
 *
 * The larger of its owner's (VHOST_SET_VRING_BUSYLOOP_TIMEOUT) and the
 * admin's, within the bound of the host's policy for the device's network
 * namespace when that is a tenant's (0 there: no busy polling).
 *
 * Context: any; each value is read once.
 */
u32 vhost_admin_busypoll(struct vhost_dev *dev, struct vhost_virtqueue *vq)
{
	return min(max(READ_ONCE(vq->busyloop_timeout),
		       READ_ONCE(dev->admin.tun.busypoll_us)),
		   READ_ONCE(dev->admin.busypoll_max));
}
EXPORT_SYMBOL_GPL(vhost_admin_busypoll);

/* The busy-poll time queue index uses. */
u32 vhost_admin_queue_busypoll(struct vhost_dev *dev, unsigned int index)
{
	return vhost_admin_busypoll(dev, dev->vqs[index]);
}

/*
 * What decides the busy-poll time of queue index: the host's bound when
 * it cut it, else the larger of the admin's and the owner's.
 */
u32 vhost_admin_queue_busypoll_source(struct vhost_dev *dev,
				      unsigned int index)
{
	u32 owner = READ_ONCE(dev->vqs[index]->busyloop_timeout);
	u32 admin = READ_ONCE(dev->admin.tun.busypoll_us);

	if (max(owner, admin) > READ_ONCE(dev->admin.busypoll_max))
		return VHOST_BUSYPOLL_SOURCE_POLICY;
	return admin && admin >= owner ? VHOST_BUSYPOLL_SOURCE_ADMIN :
					 VHOST_BUSYPOLL_SOURCE_OWNER;
}

static void vhost_admin_unlock_vqs(struct vhost_dev *dev, int n)
{
	while (n--)
		mutex_unlock(&dev->vqs[n]->mutex);
}

/*
 * Every queue's mutex, or none: a worker stalled in its queue (on a
 * userfaultfd page, a FUSE file) holds it for as long as it likes, and a
 * fatal signal must end the wait.  Returns 0 or -EINTR.
 */
static int vhost_admin_lock_vqs(struct vhost_dev *dev)
{
	int i;

	for (i = 0; i < dev->nvqs; i++) {
		if (mutex_lock_killable_nested(&dev->vqs[i]->mutex, i)) {
			vhost_admin_unlock_vqs(dev, i);
			return -EINTR;
		}
	}
	return 0;
}

/*
 * Everything about a set of tunables that can refuse it or fail:
 * allocating what zero-copy and the read-ahead need (which stays with the
 * device whether or not they are then switched on).  Changes no tunable.
 * Called with dev->admin.mutex held, and dev->mutex too when the map or
 * zero-copy is switched (lock order in admin.h).
 */
int vhost_admin_prepare_tunables(struct vhost_dev *dev,
				 const struct vhost_tunables *tun,
				 struct netlink_ext_ack *extack)
{
	struct vhost_tunables *cur = &dev->admin.tun;
	int ret;

	lockdep_assert_held(&dev->admin.mutex);
	if (tun->metamap != VHOST_METAMAP_MODE_OFF &&
	    !IS_ENABLED(CONFIG_VHOST_METAMAP)) {
		NL_SET_ERR_MSG(extack,
			       "kernel built without the metadata direct map and read-ahead");
		return -EOPNOTSUPP;
	}
	if (tun->zerocopy && !cur->zerocopy && dev->admin.ops->zerocopy_prepare) {
		lockdep_assert_held(&dev->mutex);
		ret = dev->admin.ops->zerocopy_prepare(dev);
		if (ret) {
			if (ret == -ENOMEM)
				NL_SET_ERR_MSG(extack,
					       "no memory for the zero-copy buffers' bookkeeping");
			return ret;
		}
	}
	if (tun->metamap != cur->metamap &&
	    tun->metamap != VHOST_METAMAP_MODE_OFF) {
		ret = vhost_metamap_prepare(dev, tun->metamap);
		if (ret) {
			if (ret == -ENOMEM)
				NL_SET_ERR_MSG(extack,
					       "no memory for the queues' read-ahead or maps");
			return ret;
		}
	}
	return 0;
}

/* Whether the policy of net lets a tenant do what need says. */
static bool vhost_admin_policy_allows(struct net *net,
				      const struct vhost_admin_need *need)
{
	struct vhost_admin_policy pol;

	vhost_admin_get_policy(net, &pol);
	if (need->grants & ~pol.grants)
		return false;
	return !(need->grants & VHOST_TUNABLE_ADMIN_BUSYPOLL_US) ||
	       need->busypoll_us <= pol.busypoll_max;
}

/* Field by field: the struct has padding. */
static bool vhost_tunables_equal(const struct vhost_tunables *a,
				 const struct vhost_tunables *b)
{
	return a->busypoll_us == b->busypoll_us &&
	       a->zcopy_min_len == b->zcopy_min_len &&
	       a->zerocopy == b->zerocopy && a->metamap == b->metamap;
}

/**
 * vhost_admin_set - apply a complete set of tunables, and a label
 * @dev: a registered device
 * @tun: the tunables
 * @label: the new label (which this takes; *label NULL: none), or NULL to
 *	keep the label
 * @need: what a tenant's request needs of the policy, checked again here
 *	where the values are stored; NULL for the host's administrators
 * @changed: set to whether anything changed
 * @extack: for the reason of a refusal, or NULL
 *
 * Everything the request asks for, or, with an error, nothing.  What can
 * fail or wait (vhost_admin_prepare_tunables(), waiting for the queues)
 * comes first.  The metadata mode is applied with every queue's vq->mutex
 * held, which the datapath holds across each batch: a batch runs
 * entirely with the old or the new setting.  Locks as for
 * vhost_admin_prepare_tunables().
 *
 * Return: 0, -EPERM (the policy no longer grants it), or an error of
 * vhost_admin_prepare_tunables(); -EINTR on a fatal signal.
 */
int vhost_admin_set(struct vhost_dev *dev, const struct vhost_tunables *tun,
		    struct vhost_admin_label **label,
		    const struct vhost_admin_need *need, bool *changed,
		    struct netlink_ext_ack *extack)
{
	struct vhost_tunables *cur = &dev->admin.tun;
	bool metamap = tun->metamap != cur->metamap;
	int i, idx, ret;

	*changed = false;
	ret = vhost_admin_prepare_tunables(dev, tun, extack);
	if (ret)
		return ret;
	if (metamap) {
		/*
		 * Switching to map arms it (registers notifiers on the
		 * owner's mm): dev->mutex, which the caller holds, keeps the
		 * owner, and so the mm, from changing (VHOST_RESET_OWNER).
		 */
		lockdep_assert_held(&dev->mutex);
		ret = vhost_admin_lock_vqs(dev);
		if (ret)
			return ret;
	}
	/* Nothing waited for from here on: see vhost_admin_policy_srcu. */
	idx = srcu_read_lock(&vhost_admin_policy_srcu);
	if (need && !vhost_admin_policy_allows(dev->admin.net, need)) {
		NL_SET_ERR_MSG(extack,
			       "the host's vhost policy no longer grants what this request sets");
		ret = -EPERM;
		goto out;
	}
	*changed = !vhost_tunables_equal(tun, cur);
	if (metamap) {
		for (i = 0; i < dev->nvqs; i++)
			vhost_metamap_set_mode(dev->vqs[i], tun->metamap);
		WRITE_ONCE(cur->metamap, tun->metamap);
	}
	WRITE_ONCE(cur->busypoll_us, tun->busypoll_us);
	WRITE_ONCE(cur->zcopy_min_len, tun->zcopy_min_len);
	WRITE_ONCE(cur->zerocopy, tun->zerocopy);
	if (label) {
		*changed |= vhost_admin_set_label(dev, *label);
		*label = NULL;
	}
out:
	srcu_read_unlock(&vhost_admin_policy_srcu, idx);
	if (metamap)
		vhost_admin_unlock_vqs(dev, dev->nvqs);
	return ret;
}

/* The same, the host's own: no policy, no label. */
static int vhost_admin_set_tunables(struct vhost_dev *dev,
				    const struct vhost_tunables *tun)
{
	bool changed;

	return vhost_admin_set(dev, tun, NULL, NULL, &changed, NULL);
}

/* ---- policy: what a namespace's own administrators may change ----------- */

/*
 * Whether net's administrators are tenants: CAP_NET_ADMIN over the user
 * namespace that owns net is not CAP_NET_ADMIN in the initial one.
 */
bool vhost_admin_tenant(struct net *net)
{
	return net->user_ns != &init_user_ns;
}

void vhost_admin_get_policy(struct net *net, struct vhost_admin_policy *pol)
{
	struct vhost_admin_net *an = vhost_admin_net(net);

	spin_lock(&an->lock);
	*pol = an->policy;
	spin_unlock(&an->lock);
}

/* A device of a tenant's namespace is bound by its policy's bound. */
static void vhost_admin_bound(struct vhost_dev *dev)
{
	struct vhost_admin_net *an = vhost_admin_net(dev->admin.net);

	spin_lock(&an->lock);
	WRITE_ONCE(dev->admin.busypoll_max, an->policy.busypoll_max);
	spin_unlock(&an->lock);
}

/*
 * Set the policy's grants (unless NULL) and bound (unless NULL).  When
 * this returns, no dev-set that the old policy allowed and the new one
 * does not is still applying its values, and every queue of the
 * namespace busy-polls within the new bound.  Sleeps.
 */
void vhost_admin_set_policy(struct net *net, const u32 *grants,
			    const u32 *busypoll_max)
{
	struct vhost_admin_net *an = vhost_admin_net(net);
	struct vhost_dev *dev;
	unsigned long id = 0;

	spin_lock(&an->lock);
	if (grants)
		an->policy.grants = *grants;
	if (busypoll_max)
		an->policy.busypoll_max = *busypoll_max;
	spin_unlock(&an->lock);
	synchronize_srcu(&vhost_admin_policy_srcu);
	/* A device published since reads the new bound (register). */
	while ((dev = vhost_admin_get_next(net, &id))) {
		vhost_admin_bound(dev);
		vhost_admin_put(dev);
		id++;
	}
}

/* ---- defaults: what a device gets with its owner ------------------------ */

void vhost_admin_get_defaults(struct net *net, struct vhost_admin_defaults *d)
{
	struct vhost_admin_net *an = vhost_admin_net(net);

	spin_lock(&an->lock);
	*d = an->defaults;
	spin_unlock(&an->lock);
}

/*
 * Set the defaults d gives (d->set), remove those of unset (bits
 * VHOST_A_DEV_*, none of d->set's); the others keep theirs.
 */
void vhost_admin_set_defaults(struct net *net,
			      const struct vhost_admin_defaults *d, u32 unset)
{
	struct vhost_admin_net *an = vhost_admin_net(net);
	int i, attr;

	/* Loads and stores: the merge is in the section, one at a time. */
	spin_lock(&an->lock);
	for (i = 0; i < VHOST_ADMIN_NTUNABLES; i++) {
		attr = vhost_admin_tunables[i].attr;
		if (attr != VHOST_A_DEV_LABEL && (d->set & BIT(attr)))
			vhost_tunables_set(&an->defaults.tun, attr,
					   vhost_tunables_get(&d->tun, attr));
	}
	an->defaults.set = (an->defaults.set | d->set) & ~unset;
	spin_unlock(&an->lock);
}

/*
 * A device got its owner: the namespace's defaults, those the host's
 * policy grants a tenant's namespace, within its bound.  A default that
 * cannot be applied (no memory, a fatal signal) leaves the device as it
 * was; the owner is not refused for it.
 */
static void vhost_admin_apply_defaults(struct vhost_dev *dev)
{
	struct vhost_admin *a = &dev->admin;
	struct vhost_tunables tun = a->tun;
	struct vhost_admin_defaults d;
	struct vhost_admin_policy pol;
	int i, attr;

	lockdep_assert_held(&dev->mutex);
	lockdep_assert_held(&a->mutex);
	vhost_admin_get_defaults(a->net, &d);
	if (!d.set)
		return;
	pol.grants = ~0U;
	pol.busypoll_max = VHOST_BUSYPOLL_US_MAX;
	if (vhost_admin_tenant(a->net))
		vhost_admin_get_policy(a->net, &pol);
	for (i = 0; i < VHOST_ADMIN_NTUNABLES; i++) {
		attr = vhost_admin_tunables[i].attr;
		if ((d.set & BIT(attr)) &&
		    (pol.grants & vhost_admin_tunables[i].grant))
			vhost_tunables_set(&tun, attr,
					   vhost_tunables_get(&d.tun, attr));
	}
	tun.busypoll_us = min(tun.busypoll_us, max(a->tun.busypoll_us,
						   pol.busypoll_max));
	vhost_admin_set_tunables(dev, &tun);
}

/* ---- sysfs: /sys/class/vhost/vhostN ------------------------------------ */

static struct vhost_dev *to_vhost_dev(struct device *d)
{
	return dev_get_drvdata(d);
}

static ssize_t type_show(struct device *d, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n",
			  vhost_admin_type_names[to_vhost_dev(d)->admin.ops->type]);
}
static DEVICE_ATTR_RO(type);

static ssize_t owner_pid_show(struct device *d, struct device_attribute *attr,
			      char *buf)
{
	return sysfs_emit(buf, "%u\n", vhost_admin_owner_pid(to_vhost_dev(d)));
}
static DEVICE_ATTR_ADMIN_RO(owner_pid);

static ssize_t backend_ifindex_show(struct device *d,
				    struct device_attribute *attr, char *buf)
{
	char name[IFNAMSIZ];
	int nsid;

	return sysfs_emit(buf, "%d\n",
			  vhost_admin_backend(to_vhost_dev(d), &nsid, name));
}
static DEVICE_ATTR_ADMIN_RO(backend_ifindex);

static ssize_t backend_ifname_show(struct device *d,
				   struct device_attribute *attr, char *buf)
{
	char name[IFNAMSIZ];
	int nsid;

	vhost_admin_backend(to_vhost_dev(d), &nsid, name);
	return sysfs_emit(buf, "%s\n", name);
}
static DEVICE_ATTR_ADMIN_RO(backend_ifname);

static ssize_t label_show(struct device *d, struct device_attribute *attr,
			  char *buf)
{
	char label[VHOST_LABEL_LEN_MAX + 1];

	vhost_admin_label(to_vhost_dev(d), label);
	return sysfs_emit(buf, "%s\n", label);
}
static DEVICE_ATTR_RO(label);

static ssize_t features_show(struct device *d, struct device_attribute *attr,
			     char *buf)
{
	struct vhost_dev *dev = to_vhost_dev(d);

	return sysfs_emit(buf, "0x%016llx\n",
			  READ_ONCE(dev->vqs[0]->acked_features));
}
static DEVICE_ATTR_RO(features);

static ssize_t num_queues_show(struct device *d, struct device_attribute *attr,
			       char *buf)
{
	return sysfs_emit(buf, "%d\n", to_vhost_dev(d)->nvqs);
}
static DEVICE_ATTR_RO(num_queues);

/* The tunables' files; each attribute's var is its VHOST_A_DEV_* id. */
static ssize_t vhost_tunable_show(struct device *d,
				  struct device_attribute *attr, char *buf)
{
	struct dev_ext_attribute *ea =
		container_of(attr, struct dev_ext_attribute, attr);

	return sysfs_emit(buf, "%u\n",
			  vhost_admin_tunable(to_vhost_dev(d),
					      (uintptr_t)ea->var));
}

static struct dev_ext_attribute dev_attr_admin_busypoll_us = {
	__ATTR(admin_busypoll_us, 0444, vhost_tunable_show, NULL),
	(void *)VHOST_A_DEV_ADMIN_BUSYPOLL_US,
};

static struct dev_ext_attribute dev_attr_zcopy_min_len = {
	__ATTR(zcopy_min_len, 0444, vhost_tunable_show, NULL),
	(void *)VHOST_A_DEV_ZCOPY_MIN_LEN,
};

static struct dev_ext_attribute dev_attr_zerocopy = {
	__ATTR(zerocopy, 0444, vhost_tunable_show, NULL),
	(void *)VHOST_A_DEV_ZEROCOPY,
};

static struct dev_ext_attribute dev_attr_metamap = {
	__ATTR(metamap, 0444, vhost_tunable_show, NULL),
	(void *)VHOST_A_DEV_METAMAP,
};

static struct attribute *vhost_dev_attrs[] = {
	&dev_attr_type.attr,
	&dev_attr_owner_pid.attr,
	&dev_attr_backend_ifindex.attr,
	&dev_attr_backend_ifname.attr,
	&dev_attr_features.attr,
	&dev_attr_label.attr,
	&dev_attr_num_queues.attr,
	&dev_attr_admin_busypoll_us.attr.attr,
	&dev_attr_zcopy_min_len.attr.attr,
	&dev_attr_zerocopy.attr.attr,
	&dev_attr_metamap.attr.attr,
	NULL,
};

static const struct attribute_group vhost_dev_group = {
	.attrs = vhost_dev_attrs,
};

/* statistics/: one file per counter, built from vhost_admin_stat_names. */
#define VHOST_ADMIN_COUNTERS (VHOST_A_STATS_MAX - VHOST_ADMIN_FIRST_COUNTER + 1)

static struct dev_ext_attribute vhost_dev_stat_attrs[VHOST_ADMIN_COUNTERS];
static struct attribute *vhost_dev_stat_ptrs[VHOST_ADMIN_COUNTERS + 1];

static ssize_t vhost_dev_stat_show(struct device *d,
				   struct device_attribute *attr, char *buf)
{
	struct dev_ext_attribute *ea =
		container_of(attr, struct dev_ext_attribute, attr);
	struct vhost_admin_stats st;

	vhost_admin_dev_stats(to_vhost_dev(d), &st);
	return sysfs_emit(buf, "%llu\n", st.val[(uintptr_t)ea->var]);
}

/* A device shows only the counters that apply to it. */
static umode_t vhost_dev_stat_visible(struct kobject *kobj,
				      struct attribute *attr, int n)
{
	struct dev_ext_attribute *ea =
		container_of(attr, struct dev_ext_attribute, attr.attr);
	struct vhost_admin_stats st;

	vhost_admin_dev_stats(to_vhost_dev(kobj_to_dev(kobj)), &st);
	return test_bit((uintptr_t)ea->var, st.has) ? attr->mode : 0;
}

static const struct attribute_group vhost_dev_stats_group = {
	.name = "statistics",
	.attrs = vhost_dev_stat_ptrs,
	.is_visible = vhost_dev_stat_visible,
};

static const struct attribute_group *vhost_dev_groups[] = {
	&vhost_dev_group,
	&vhost_dev_stats_group,
	NULL,
};

/* Tagged by network namespace, like /sys/class/net. */
static const void *vhost_class_namespace(const struct device *d)
{
	return to_vhost_dev((struct device *)d)->admin.net;
}

static void vhost_class_get_ownership(const struct device *d, kuid_t *uid,
				      kgid_t *gid)
{
	net_ns_get_ownership(vhost_class_namespace(d), uid, gid);
}

/*
 * The properties of every uevent of a device (and of its uevent file,
 * which anyone may read): what a udev rule needs to decide whether to
 * trust the device, nothing private (vhost-admin.rst, "Security model").
 * The id; the owner's effective uid as the user namespace of the device's
 * network namespace sees it (when it has an owner and the uid is mapped
 * there); whether the backend is in the device's own network namespace
 * (VHOST_BACKEND_NETNS=own) or not (other); the label.  Which process owns
 * the device and which interface it feeds are for CAP_NET_ADMIN only
 * (sysfs owner_pid and backend_ifname, which udev's ATTR{} reads as root).
 */
static int vhost_class_uevent(const struct device *d,
			      struct kobj_uevent_env *env)
{
	struct vhost_dev *dev = dev_get_drvdata(d);
	struct vhost_admin *a = &dev->admin;
	char label[VHOST_LABEL_LEN_MAX + 1];
	bool owned, backend, foreign = false;
	struct net_device *nd;
	kuid_t kuid;
	uid_t uid;

	if (add_uevent_var(env, "VHOST_ID=%u", a->id))
		return -ENOMEM;
	spin_lock(&a->lock);
	owned = a->owner;
	kuid = a->owner_uid;
	spin_unlock(&a->lock);
	rcu_read_lock();
	nd = rcu_dereference(a->backend);
	backend = nd;
	if (nd)
		foreign = !net_eq(dev_net_rcu(nd), a->net);
	rcu_read_unlock();
	uid = from_kuid(a->net->user_ns, kuid);
	if (owned && uid != (uid_t)-1 &&
	    add_uevent_var(env, "VHOST_OWNER_UID=%u", uid))
		return -ENOMEM;
	if (backend && add_uevent_var(env, "VHOST_BACKEND_NETNS=%s",
				      foreign ? "other" : "own"))
		return -ENOMEM;
	if (vhost_admin_label(dev, label) &&
	    add_uevent_var(env, "VHOST_LABEL=%s", label))
		return -ENOMEM;
	return 0;
}

static const struct class vhost_class = {
	.name = "vhost",
	.dev_uevent = vhost_class_uevent,
	.ns_type = &net_ns_type_operations,
	.namespace = vhost_class_namespace,
	.get_ownership = vhost_class_get_ownership,
};

/* ---- sysfs: queues/vqN --------------------------------------------------- */

struct vhost_queue_attr {
	struct attribute attr;
	ssize_t (*show)(struct vhost_admin_queue *q, struct vhost_queue_attr *qa,
			char *buf);
	uintptr_t stat;
};

static struct vhost_admin_queue *to_queue(struct kobject *kobj)
{
	return container_of(kobj, struct vhost_admin_queue, kobj);
}

static ssize_t vhost_queue_attr_show(struct kobject *kobj,
				     struct attribute *attr, char *buf)
{
	struct vhost_queue_attr *qa =
		container_of(attr, struct vhost_queue_attr, attr);

	return qa->show(to_queue(kobj), qa, buf);
}

static const struct sysfs_ops vhost_queue_sysfs_ops = {
	.show = vhost_queue_attr_show,
};

static ssize_t queue_type_show(struct vhost_admin_queue *q,
			       struct vhost_queue_attr *qa, char *buf)
{
	u32 type = vhost_admin_queue_type(q->dev, q->index);

	return sysfs_emit(buf, "%s\n", vhost_admin_queue_type_names[type]);
}

static ssize_t queue_num_show(struct vhost_admin_queue *q,
			      struct vhost_queue_attr *qa, char *buf)
{
	return sysfs_emit(buf, "%u\n", READ_ONCE(q->dev->vqs[q->index]->num));
}

static ssize_t queue_owner_busypoll_us_show(struct vhost_admin_queue *q,
					    struct vhost_queue_attr *qa,
					    char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  READ_ONCE(q->dev->vqs[q->index]->busyloop_timeout));
}

static ssize_t queue_busypoll_us_show(struct vhost_admin_queue *q,
				      struct vhost_queue_attr *qa, char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  vhost_admin_queue_busypoll(q->dev, q->index));
}

static ssize_t queue_metamap_valid_show(struct vhost_admin_queue *q,
					struct vhost_queue_attr *qa, char *buf)
{
	return sysfs_emit(buf, "%d\n",
			  vhost_metamap_valid(q->dev->vqs[q->index]));
}

static ssize_t queue_worker_pid_show(struct vhost_admin_queue *q,
				     struct vhost_queue_attr *qa, char *buf)
{
	return sysfs_emit(buf, "%u\n",
			  vhost_admin_queue_worker(q->dev, q->index));
}

static const char * const vhost_admin_busypoll_source_names[] = {
	[VHOST_BUSYPOLL_SOURCE_OWNER] = "owner",
	[VHOST_BUSYPOLL_SOURCE_ADMIN] = "admin",
	[VHOST_BUSYPOLL_SOURCE_POLICY] = "policy",
};

static ssize_t queue_busypoll_source_show(struct vhost_admin_queue *q,
					  struct vhost_queue_attr *qa,
					  char *buf)
{
	u32 src = vhost_admin_queue_busypoll_source(q->dev, q->index);

	return sysfs_emit(buf, "%s\n", vhost_admin_busypoll_source_names[src]);
}

static ssize_t queue_stat_show(struct vhost_admin_queue *q,
			       struct vhost_queue_attr *qa, char *buf)
{
	struct vhost_admin_stats st = {};

	vhost_admin_queue_stats(q->dev, q->index, &st);
	return sysfs_emit(buf, "%llu\n", st.val[qa->stat]);
}

#define VHOST_QUEUE_ATTR_MODE(_name, _mode)				\
	static struct vhost_queue_attr vhost_queue_attr_##_name =	\
		{ .attr = { .name = __stringify(_name), .mode = _mode },	\
		  .show = queue_##_name##_show }
#define VHOST_QUEUE_ATTR(_name) VHOST_QUEUE_ATTR_MODE(_name, 0444)

VHOST_QUEUE_ATTR(type);
VHOST_QUEUE_ATTR(num);
VHOST_QUEUE_ATTR(owner_busypoll_us);
VHOST_QUEUE_ATTR(busypoll_us);
VHOST_QUEUE_ATTR(metamap_valid);
/* The worker is a thread of the owner: as private as owner_pid. */
VHOST_QUEUE_ATTR_MODE(worker_pid, 0400);
VHOST_QUEUE_ATTR(busypoll_source);

static struct attribute *vhost_queue_attrs[] = {
	&vhost_queue_attr_type.attr,
	&vhost_queue_attr_num.attr,
	&vhost_queue_attr_owner_busypoll_us.attr,
	&vhost_queue_attr_busypoll_us.attr,
	&vhost_queue_attr_metamap_valid.attr,
	&vhost_queue_attr_worker_pid.attr,
	&vhost_queue_attr_busypoll_source.attr,
	NULL,
};

static struct vhost_queue_attr vhost_queue_stat_attrs[VHOST_ADMIN_COUNTERS];
static struct attribute *vhost_queue_stat_ptrs[VHOST_ADMIN_COUNTERS + 1];

/* A queue shows only the counters that apply to it. */
static umode_t vhost_queue_stat_visible(struct kobject *kobj,
					struct attribute *attr, int n)
{
	struct vhost_queue_attr *qa =
		container_of(attr, struct vhost_queue_attr, attr);
	struct vhost_admin_queue *q = to_queue(kobj);
	struct vhost_admin_stats st = {};

	vhost_admin_queue_stats(q->dev, q->index, &st);
	return test_bit(qa->stat, st.has) ? attr->mode : 0;
}

static const struct attribute_group vhost_queue_group = {
	.attrs = vhost_queue_attrs,
};

static const struct attribute_group vhost_queue_stats_group = {
	.attrs = vhost_queue_stat_ptrs,
	.is_visible = vhost_queue_stat_visible,
};

static const struct attribute_group *vhost_queue_groups[] = {
	&vhost_queue_group,
	&vhost_queue_stats_group,
	NULL,
};

static void vhost_queue_release(struct kobject *kobj)
{
	struct vhost_admin_queue *q = to_queue(kobj);

	put_pid(q->worker);
	kfree(q);
}

/* Runs in the worker of the queue: records it. */
static void vhost_admin_ident_work(struct vhost_work *work)
{
	struct vhost_admin_queue *q =
		container_of(work, struct vhost_admin_queue, ident);
	struct vhost_admin *a = &q->dev->admin;
	struct pid *pid = get_task_pid(current, PIDTYPE_PID);

	spin_lock(&a->lock);
	swap(q->worker, pid);
	spin_unlock(&a->lock);
	put_pid(pid);
}

static const struct kobj_type vhost_queue_ktype = {
	.sysfs_ops = &vhost_queue_sysfs_ops,
	.release = vhost_queue_release,
	.default_groups = vhost_queue_groups,
};

/* Fill the counter attribute tables from the name table, once. */
static void vhost_admin_init_stat_attrs(void)
{
	int i, n = 0;

	/* Each bucket full at its first use. */
	for (i = 0; i < ARRAY_SIZE(vhost_uevent_buckets); i++)
		vhost_uevent_buckets[i].last = jiffies - 2 * HZ * 3600;

	for (i = VHOST_ADMIN_FIRST_COUNTER; i <= VHOST_A_STATS_MAX; i++, n++) {
		struct dev_ext_attribute *da = &vhost_dev_stat_attrs[n];
		struct vhost_queue_attr *qa = &vhost_queue_stat_attrs[n];

		sysfs_attr_init(&da->attr.attr);
		da->attr.attr.name = vhost_admin_stat_names[i];
		da->attr.attr.mode = 0444;
		da->attr.show = vhost_dev_stat_show;
		da->var = (void *)(uintptr_t)i;
		vhost_dev_stat_ptrs[n] = &da->attr.attr;

		sysfs_attr_init(&qa->attr);
		qa->attr.name = vhost_admin_stat_names[i];
		qa->attr.mode = 0444;
		qa->show = queue_stat_show;
		qa->stat = i;
		vhost_queue_stat_ptrs[n] = &qa->attr;
	}
}

static void vhost_admin_cdev_release(struct device *d)
{
	kfree(d);
}

static void vhost_admin_sysfs_del(struct vhost_dev *dev)
{
	struct vhost_admin *a = &dev->admin;
	int i;

	for (i = 0; a->queues && i < dev->nvqs; i++)
		if (a->queues[i])
			kobject_put(&a->queues[i]->kobj);
	kfree(a->queues);
	a->queues = NULL;
	kobject_put(a->queues_kobj);
	a->queues_kobj = NULL;
	if (a->cdev)
		device_unregister(a->cdev);
	a->cdev = NULL;
}

/*
 * The class device with its queues/ directories, not announced yet: the
 * ADD uevent goes out once the device is published (vhost_admin_register).
 */
static int vhost_admin_sysfs_add(struct vhost_dev *dev)
{
	struct vhost_admin *a = &dev->admin;
	struct vhost_admin_queue *q;
	struct device *cdev;
	int i, ret;

	cdev = kzalloc(sizeof(*cdev), GFP_KERNEL);
	if (!cdev)
		return -ENOMEM;
	device_initialize(cdev);
	cdev->class = &vhost_class;
	cdev->groups = vhost_dev_groups;
	cdev->release = vhost_admin_cdev_release;
	dev_set_drvdata(cdev, dev);
	dev_set_uevent_suppress(cdev, true);
	ret = dev_set_name(cdev, "%s", a->name);
	if (!ret)
		ret = device_add(cdev);
	if (ret) {
		put_device(cdev);
		return ret;
	}
	a->cdev = cdev;
	a->queues_kobj = kobject_create_and_add("queues", &cdev->kobj);
	a->queues = kcalloc(dev->nvqs, sizeof(*a->queues), GFP_KERNEL);
	if (!a->queues_kobj || !a->queues) {
		ret = -ENOMEM;
		goto err;
	}
	for (i = 0; i < dev->nvqs; i++) {
		q = kzalloc(sizeof(*q), GFP_KERNEL);
		if (!q) {
			ret = -ENOMEM;
			goto err;
		}
		q->dev = dev;
		q->index = i;
		vhost_work_init(&q->ident, vhost_admin_ident_work);
		a->queues[i] = q;
		ret = kobject_init_and_add(&q->kobj, &vhost_queue_ktype,
					   a->queues_kobj, "vq%d", i);
		if (ret)
			goto err;
	}
	return 0;
err:
	vhost_admin_sysfs_del(dev);
	return ret;
}

/* ---- registration, owner and backend ------------------------------------ */

/* The device forgets its interface and puts its reference. */
static void vhost_backend_drop(struct vhost_admin *a)
{
	struct net_device *nd;

	lockdep_assert_held(&vhost_backends_mutex);
	nd = rcu_dereference_protected(a->backend,
				       lockdep_is_held(&vhost_backends_mutex));
	if (!nd)
		return;
	hash_del(&a->backend_node);
	RCU_INIT_POINTER(a->backend, NULL);
	netdev_put(nd, &a->backend_tracker);
}

/*
 * The namespace of the device's interface, when it is another, gets an id
 * in the device's (as rtnetlink gives the namespace of a link's peer), so
 * that the interface can be named; sleeps.
 */
static void vhost_admin_backend_nsid(struct vhost_admin *a)
{
	struct net_device *nd;
	struct net *peer = NULL;

	rcu_read_lock();
	nd = rcu_dereference(a->backend);
	if (nd)
		peer = maybe_get_net(dev_net_rcu(nd));
	rcu_read_unlock();
	if (!peer)
		return;
	if (!net_eq(peer, a->net))
		peernet2id_alloc(a->net, peer, GFP_KERNEL);
	put_net(peer);
}

/* The uevent due: the device's ADD while it was not announced, else CHANGE. */
static void vhost_admin_uevent_send(struct vhost_dev *dev)
{
	struct vhost_admin *a = &dev->admin;

	lockdep_assert_held(&a->mutex);
	if (a->announced) {
		kobject_uevent(&a->cdev->kobj, KOBJ_CHANGE);
		return;
	}
	a->announced = true;
	dev_set_uevent_suppress(a->cdev, false);
	kobject_uevent(&a->cdev->kobj, KOBJ_ADD);
}

static void vhost_admin_uevent_work(struct work_struct *work)
{
	struct vhost_admin *a = container_of(to_delayed_work(work),
					     struct vhost_admin, uevent_work);
	unsigned long wait;

	mutex_lock(&a->mutex);
	wait = vhost_uevent_take(a->uid);
	if (wait) {
		schedule_delayed_work(&a->uevent_work, wait);
	} else {
		a->uevent_pending = false;
		vhost_admin_uevent_send(container_of(a, struct vhost_dev,
						     admin));
	}
	mutex_unlock(&a->mutex);
}

/*
 * Tell udev the device was published, or that its owner, backend or label
 * changed: a uevent whose properties (vhost_class_uevent()) say what they
 * are now, sent now within the opener's budget, else when the budget
 * allows, once for all the changes until then.  Sleeps and allocates; the
 * caller holds the admin mutex, which orders the uevents of a device as
 * its changes.
 */
static void vhost_admin_uevent(struct vhost_dev *dev)
{
	struct vhost_admin *a = &dev->admin;
	unsigned long wait;

	lockdep_assert_held(&a->mutex);
	if (a->uevent_pending)
		return;
	wait = vhost_uevent_take(a->uid);
	if (wait) {
		a->uevent_pending = true;
		schedule_delayed_work(&a->uevent_work, wait);
		return;
	}
	vhost_admin_uevent_send(dev);
}

/*
 * The device's interface is another, moved, was renamed or went: its
 * namespace gets an id in the device's, and udev and the monitor group
 * are told.  Sleeps; the admin mutex held.
 */
static void vhost_admin_backend_changed(struct vhost_dev *dev)
{
	struct vhost_admin *a = &dev->admin;

	lockdep_assert_held(&a->mutex);
	vhost_admin_backend_nsid(a);
	vhost_admin_uevent(dev);
	vhost_nl_dev_notify(dev, VHOST_CMD_DEV_CHANGE_NTF);
}

/* What the netdevice notifier saw, told from process context. */
static void vhost_admin_backend_work(struct work_struct *work)
{
	struct vhost_admin *a = container_of(work, struct vhost_admin,
					     backend_work);

	mutex_lock(&a->mutex);
	vhost_admin_backend_changed(container_of(a, struct vhost_dev, admin));
	mutex_unlock(&a->mutex);
}

/*
 * An interface some device feeds moved to another namespace (its
 * NETDEV_UNREGISTER in the old one, state still registered, then its
 * NETDEV_REGISTER in the new), was renamed, or is being unregistered: the
 * devices follow it, or forget it and put their references, and tell.
 * Under RTNL; the work items do what needs the devices' mutexes.
 */
static int vhost_backend_event(struct notifier_block *nb,
			       unsigned long event, void *ptr)
{
	struct net_device *nd = netdev_notifier_info_to_dev(ptr);
	struct hlist_node *tmp;
	struct vhost_admin *a;
	bool gone;

	if (event != NETDEV_REGISTER && event != NETDEV_UNREGISTER &&
	    event != NETDEV_CHANGENAME)
		return NOTIFY_DONE;
	gone = event == NETDEV_UNREGISTER &&
	       nd->reg_state == NETREG_UNREGISTERING;
	/* A move's NETDEV_UNREGISTER: its NETDEV_REGISTER tells. */
	if (event == NETDEV_UNREGISTER && !gone)
		return NOTIFY_DONE;
	mutex_lock(&vhost_backends_mutex);
	hash_for_each_possible_safe(vhost_backends, a, tmp, backend_node,
				    (unsigned long)nd) {
		if (rcu_access_pointer(a->backend) != nd)
			continue;
		if (gone)
			vhost_backend_drop(a);
		queue_work(system_wq, &a->backend_work);
	}
	mutex_unlock(&vhost_backends_mutex);
	return NOTIFY_DONE;
}

static struct notifier_block vhost_backend_nb = {
	.notifier_call = vhost_backend_event,
};

/**
 * vhost_admin_register - give a new device a name and publish it
 * @dev: the device, initialised (vhost_dev_init), not yet in use
 * @ops: its type
 * @zerocopy: default of the zerocopy tunable
 *
 * The device belongs to the caller's network namespace for its whole
 * life and gets the next id of that namespace.
 *
 * Return: 0, -ENOMEM, -ENOSPC (no free id) or an error of sysfs.
 */
int vhost_admin_register(struct vhost_dev *dev,
			 const struct vhost_admin_ops *ops, bool zerocopy)
{
	struct vhost_admin *a = &dev->admin;
	struct vhost_admin_net *an;
	int ret;

	a->ops = ops;	/* sysfs readers use it as soon as the files exist */
	a->tun.busypoll_us = min_t(u32, READ_ONCE(busypoll_us),
				   VHOST_BUSYPOLL_US_MAX);
	a->tun.zcopy_min_len = clamp_t(u32, READ_ONCE(zcopy_min_len),
				       VHOST_ZCOPY_MIN_LEN_MIN,
				       VHOST_ZCOPY_MIN_LEN_MAX);
	a->tun.zerocopy = zerocopy;
	a->tun.metamap = dev->nvqs ? vhost_metamap_mode(dev->vqs[0]) :
				     VHOST_METAMAP_MODE_OFF;
	a->uid = current_euid();
	a->serial = atomic64_inc_return(&vhost_admin_serial);
	INIT_DELAYED_WORK(&a->uevent_work, vhost_admin_uevent_work);
	INIT_WORK(&a->backend_work, vhost_admin_backend_work);
	a->net = get_net(current->nsproxy->net_ns);
	an = vhost_admin_net(a->net);
	refcount_set(&a->refs, 1);

	/* Reserve an id (lookups see nothing there yet), cyclically. */
	ret = xa_alloc_cyclic(&an->devs, &a->id, NULL, xa_limit_31b,
			      &an->next_id, GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		goto err_net;
	snprintf(a->name, sizeof(a->name), "vhost%u", a->id);
	ret = vhost_admin_sysfs_add(dev);
	if (ret) {
		xa_erase(&an->devs, a->id);
		goto err_net;
	}
	/* The slot is reserved: storing allocates nothing and cannot fail. */
	xa_store(&an->devs, a->id, dev, GFP_KERNEL);
	/* After publishing: policy-set bounds the devices it finds. */
	if (vhost_admin_tenant(a->net))
		vhost_admin_bound(dev);
	/* Published: whoever the uevent wakes finds the device. */
	mutex_lock(&a->mutex);
	vhost_admin_uevent(dev);
	mutex_unlock(&a->mutex);
	vhost_nl_dev_notify(dev, VHOST_CMD_DEV_ADD_NTF);
	return 0;

err_net:
	put_net(a->net);
	a->net = NULL;
	a->ops = NULL;
	return ret == -EBUSY ? -ENOSPC : ret;
}
EXPORT_SYMBOL_GPL(vhost_admin_register);

/**
 * vhost_admin_unregister - remove a device from the admin plane
 * @dev: a registered device, still fully working
 *
 * Once this returns no admin operation or sysfs reader touches @dev.
 * Waits for the admin operations on @dev that hold a reference (and, with
 * them, for whatever they wait on in @dev); sleeps.
 */
void vhost_admin_unregister(struct vhost_dev *dev)
{
	struct vhost_admin *a = &dev->admin;

	if (!a->ops)
		return;
	xa_erase(&vhost_admin_net(a->net)->devs, a->id);
	vhost_admin_put(dev);
	wait_var_event(&a->refs, !refcount_read(&a->refs));
	/* The notifier queues no work for it once it is out of the table. */
	mutex_lock(&vhost_backends_mutex);
	vhost_backend_drop(a);
	mutex_unlock(&vhost_backends_mutex);
	cancel_work_sync(&a->backend_work);
	/* After every other notification about the device. */
	vhost_nl_dev_notify(dev, VHOST_CMD_DEV_DEL_NTF);
	/* Not announced yet: its REMOVE is not sent either (suppressed). */
	cancel_delayed_work_sync(&a->uevent_work);
	vhost_admin_sysfs_del(dev);
	a->ops = NULL;
	put_pid(a->owner);
	a->owner = NULL;
	/* No reader is left (the references went, sysfs is gone). */
	kfree(rcu_replace_pointer(a->label, NULL, true));
	put_net(a->net);
	a->net = NULL;
}
EXPORT_SYMBOL_GPL(vhost_admin_unregister);

/*
 * A new owner's workers: each queue's is recorded by a work queued on it
 * (which the owner's VHOST_SET_OWNER flushes); with no owner, none.
 */
static void vhost_admin_workers(struct vhost_dev *dev, bool owned)
{
	struct vhost_admin *a = &dev->admin;
	struct pid *pid;
	int i;

	lockdep_assert_held(&dev->mutex);
	for (i = 0; i < dev->nvqs; i++) {
		if (owned) {
			vhost_vq_work_queue(dev->vqs[i], &a->queues[i]->ident);
			continue;
		}
		spin_lock(&a->lock);
		pid = a->queues[i]->worker;
		a->queues[i]->worker = NULL;
		spin_unlock(&a->lock);
		put_pid(pid);
	}
}

/**
 * vhost_admin_set_label - give a device a label, or take it away
 * @dev: a registered device
 * @l: the label (vhost_admin_label_alloc()), which this takes, or NULL
 *
 * Return: whether the label changed.
 *
 * Context: the admin mutex held; sleeps.
 */
bool vhost_admin_set_label(struct vhost_dev *dev, struct vhost_admin_label *l)
{
	struct vhost_admin *a = &dev->admin;
	struct vhost_admin_label *old;

	lockdep_assert_held(&a->mutex);
	old = rcu_dereference_protected(a->label, lockdep_is_held(&a->mutex));
	if ((!old && !l) || (old && l && !strcmp(old->s, l->s))) {
		kfree(l);
		return false;
	}
	rcu_assign_pointer(a->label, l);
	kfree_rcu(old, rcu);
	vhost_admin_uevent(dev);
	return true;
}

/**
 * vhost_admin_set_owner - record that the caller became the owner, or that
 *	the device has none any more
 * @dev: a device, registered or not
 * @owned: true after VHOST_SET_OWNER, false after VHOST_RESET_OWNER
 *
 * The device stays in the network namespace it was opened in, whichever
 * namespace its owner is in: an fd passed to another namespace does not
 * take the device out of sight of the administrators of its own, nor give
 * it to those of the other.
 *
 * Context: dev->mutex held; sleeps.
 */
void vhost_admin_set_owner(struct vhost_dev *dev, bool owned)
{
	struct vhost_admin *a = &dev->admin;
	struct pid *pid = owned ? get_pid(task_tgid(current)) : NULL;
	kuid_t uid = current_euid();

	lockdep_assert_held(&dev->mutex);
	if (!a->ops) {
		put_pid(pid);
		return;
	}
	mutex_lock(&a->mutex);
	spin_lock(&a->lock);
	swap(a->owner, pid);
	a->owner_uid = uid;
	spin_unlock(&a->lock);
	put_pid(pid);
	if (owned)
		vhost_admin_apply_defaults(dev);
	vhost_admin_workers(dev, owned);
	vhost_admin_uevent(dev);
	vhost_nl_dev_notify(dev, VHOST_CMD_DEV_CHANGE_NTF);
	mutex_unlock(&a->mutex);
}
EXPORT_SYMBOL_GPL(vhost_admin_set_owner);

/**
 * vhost_admin_set_backend - record the interface the device feeds
 * @dev: a device, registered or not
 * @ifindex: its index, 0 when there is none
 * @net: a reference on its namespace (or NULL), which this puts
 *
 * The device holds a reference on the interface from now on, until
 * another is set, the interface is unregistered or the device goes.  An
 * interface that moved away or went since the caller read its index is
 * not found, or found unregistering: the device then feeds none.
 *
 * Context: dev->mutex held (which keeps the device's namespace); sleeps.
 */
void vhost_admin_set_backend(struct vhost_dev *dev, int ifindex,
			     struct net *net)
{
	struct vhost_admin *a = &dev->admin;
	struct net_device *nd = NULL, *old;
	netdevice_tracker tracker;
	bool changed;

	lockdep_assert_held(&dev->mutex);
	if (ifindex && net && a->ops)
		nd = netdev_get_by_index(net, ifindex, &tracker, GFP_KERNEL);
	if (net)
		put_net(net);
	if (!a->ops)
		return;
	mutex_lock(&a->mutex);
	mutex_lock(&vhost_backends_mutex);
	old = rcu_dereference_protected(a->backend,
					lockdep_is_held(&vhost_backends_mutex));
	changed = old != nd;
	if (changed)
		vhost_backend_drop(a);
	/*
	 * Unregistering already: its NETDEV_UNREGISTER, sent after the state
	 * changed, has run or waits for the mutex and would not find it.
	 */
	if (changed && nd && READ_ONCE(nd->reg_state) == NETREG_REGISTERED) {
		a->backend_tracker = tracker;
		rcu_assign_pointer(a->backend, nd);
		hash_add(vhost_backends, &a->backend_node, (unsigned long)nd);
	} else if (nd) {
		netdev_put(nd, &tracker);
	}
	mutex_unlock(&vhost_backends_mutex);
	if (changed)
		vhost_admin_backend_changed(dev);
	mutex_unlock(&a->mutex);
}
EXPORT_SYMBOL_GPL(vhost_admin_set_backend);

/**
 * vhost_admin_changed - tell the monitor group the device's configuration
 *	changed where the admin plane reads it from the device (features)
 * @dev: a device, registered or not
 *
 * Context: dev->mutex held; sleeps.
 */
void vhost_admin_changed(struct vhost_dev *dev)
{
	struct vhost_admin *a = &dev->admin;

	lockdep_assert_held(&dev->mutex);
	if (!a->ops)
		return;
	mutex_lock(&a->mutex);
	vhost_nl_dev_notify(dev, VHOST_CMD_DEV_CHANGE_NTF);
	mutex_unlock(&a->mutex);
}
EXPORT_SYMBOL_GPL(vhost_admin_changed);

void vhost_admin_show_fdinfo(struct seq_file *m, struct vhost_dev *dev)
{
	if (dev->admin.ops)
		seq_printf(m, "vhost-name:\t%s\n", dev->admin.name);
}
EXPORT_SYMBOL_GPL(vhost_admin_show_fdinfo);

/* A namespace starts with no device and grants its tenants nothing. */
static int __net_init vhost_admin_net_init(struct net *net)
{
	struct vhost_admin_net *an = vhost_admin_net(net);

	xa_init_flags(&an->devs, XA_FLAGS_ALLOC | XA_FLAGS_ACCOUNT);
	spin_lock_init(&an->lock);
	return 0;
}

/* Every device holds a reference on its namespace: none is left. */
static void __net_exit vhost_admin_net_exit(struct net *net)
{
	struct vhost_admin_net *an = vhost_admin_net(net);

	WARN_ON_ONCE(!xa_empty(&an->devs));
	xa_destroy(&an->devs);
}

static struct pernet_operations vhost_admin_net_ops = {
	.init = vhost_admin_net_init,
	.exit = vhost_admin_net_exit,
	.id = &vhost_admin_net_id,
	.size = sizeof(struct vhost_admin_net),
};

static int __init vhost_admin_init(void)
{
	int ret;

	vhost_admin_init_stat_attrs();
	ret = register_pernet_subsys(&vhost_admin_net_ops);
	if (ret)
		return ret;
	ret = class_register(&vhost_class);
	if (ret)
		goto err_pernet;
	ret = register_netdevice_notifier(&vhost_backend_nb);
	if (ret)
		goto err_class;
	ret = vhost_nl_init();
	if (ret)
		goto err_notifier;
	return 0;

err_notifier:
	unregister_netdevice_notifier(&vhost_backend_nb);
err_class:
	class_unregister(&vhost_class);
err_pernet:
	unregister_pernet_subsys(&vhost_admin_net_ops);
	return ret;
}

static void __exit vhost_admin_exit(void)
{
	vhost_nl_exit();
	unregister_netdevice_notifier(&vhost_backend_nb);
	class_unregister(&vhost_class);
	unregister_pernet_subsys(&vhost_admin_net_ops);
}

module_init(vhost_admin_init);
module_exit(vhost_admin_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vhost: device names, tunables, statistics and netlink");
