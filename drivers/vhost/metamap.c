// SPDX-License-Identifier: GPL-2.0
/*
 * vhost metadata read-ahead and direct maps: each queue's state.
 *
 * A device that uses them (vhost-net) gives each queue a struct
 * vhost_metamap when a queue first leaves mode off, and the mode decides
 * which paths its ring and buffer accesses take:
 *
 * - off: uaccess, as upstream's vhost;
 * - batch: the read-ahead of heads and descriptors through uaccess
 *   (readahead.c);
 * - map: the ring map (ringmap.c) and the payload map (payload.c), the
 *   read-ahead through uaccess while the ring map cannot serve.
 *
 * This file owns the state's life (prepare, mode, release, free), what
 * makes the maps follow the queue's configuration and memory table,
 * translate_desc()'s region cache, the counters and fdinfo, the poison
 * checks and the safe page both maps share, and the module.  See
 * Documentation/networking/vhost-metamap.rst.
 */
#include <linux/cacheinfo.h>
#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>

#include "metamap_internal.h"

static const char * const vhost_metamap_mode_names[] = {
	[VHOST_METAMAP_MODE_OFF] = "off",
	[VHOST_METAMAP_MODE_MAP] = "map",
	[VHOST_METAMAP_MODE_BATCH] = "batch",
};

/*
 * batch by default: by make bench's counts the map adds nothing measurable
 * over the read-ahead through uaccess (vhost-metamap.rst, "Which mode").
 */
static unsigned int vhost_metamap_default = VHOST_METAMAP_MODE_BATCH;

static int vhost_metamap_param_set(const char *val,
				   const struct kernel_param *kp)
{
	int mode = sysfs_match_string(vhost_metamap_mode_names, val);

	if (mode < 0)
		return mode;
	WRITE_ONCE(*(unsigned int *)kp->arg, mode);
	return 0;
}

static int vhost_metamap_param_get(char *buf, const struct kernel_param *kp)
{
	unsigned int mode = READ_ONCE(*(unsigned int *)kp->arg);

	return sysfs_emit(buf, "%s\n", vhost_metamap_mode_names[mode]);
}

static const struct kernel_param_ops vhost_metamap_mode_ops = {
	.set = vhost_metamap_param_set,
	.get = vhost_metamap_param_get,
};

module_param_cb(mode, &vhost_metamap_mode_ops, &vhost_metamap_default, 0644);
MODULE_PARM_DESC(mode,
		 "How new vhost-net devices access virtqueue metadata: off, batch or map (default: batch)");

/*
 * On a CPU whose data cache aliases, a store through a kernel address is
 * not seen through the owner's without flush_dcache_page(), which neither
 * map does: neither serves such a CPU, and each refusal counts.  The
 * debugfs file vhost_metamap_dcache_aliasing makes the check true on any
 * CPU, for the tests.
 */
static bool vhost_metamap_pretend_aliasing;

bool vhost_metamap_dcache_aliasing(struct vhost_metamap *map)
{
	if (!cpu_dcache_is_aliasing() &&
	    !READ_ONCE(vhost_metamap_pretend_aliasing))
		return false;
	vhost_metamap_stat_inc(map, &map->stats.refused);
	return true;
}

/*
 * Where the kaddr[] of an invalid map point: the zero page, never freed.
 * A load issued under a mispredicted validity check reads zeroes from it,
 * and a store never retires; no stale page of the owner is reached.  Its
 * address is taken once: page_address() is not free, and the payload map
 * selects it on every page it reads.
 */
void *vhost_metamap_safe __ro_after_init;

/*
 * The longest an invalidate callback of either map waited for map->ring->lock
 * (held by a section) and held it, in ns: what an invalidation of the
 * owner's mm waits for the map.  debugfs file
 * vhost_metamap_callback_max_ns: read it, write 0 to start again.  A
 * store only when a callback takes longer than any before; loads and
 * stores, so it may run under map->ring->lock.
 */
static u64 vhost_metamap_callback_max_ns;

void vhost_metamap_callback_took(u64 t0)
{
	u64 d = ktime_get_mono_fast_ns() - t0;
	u64 old = READ_ONCE(vhost_metamap_callback_max_ns);

	while (d > old &&
	       !try_cmpxchg64(&vhost_metamap_callback_max_ns, &old, d))
		;
}

static void vhost_metamap_xlate_empty(struct vhost_metamap *map)
{
	unsigned int i;

	for (i = 0; i < VHOST_METAMAP_XLATE; i++)
		map->xlate[i] = (struct vhost_metamap_xlate){ .start = U64_MAX };
	map->xlate_next = 0;
}

/*
 * Forget the queue's maps, its read-ahead and translate_desc()'s regions.
 * Sleeps; no reader may run (vq->mutex or stopped vq).
 */
void vhost_metamap_release(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = vq->metamap;

	if (!map)
		return;
	vhost_metamap_ring_release(map);
	map->batch.n = 0;
	vhost_metamap_xlate_empty(map);
	vhost_metamap_payload_release(map);
	/* A quarantine stays: the poisoned page may still be mapped. */
}
EXPORT_SYMBOL_GPL(vhost_metamap_release);

/*
 * The device's memory table is another one (VHOST_SET_MEM_TABLE, before
 * the old one is freed): translate_desc() forgets its regions.  vq->mutex.
 */
void vhost_metamap_mem_changed(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = vq->metamap;

	lockdep_assert_held(&vq->mutex);
	if (!map)
		return;
	vhost_metamap_xlate_empty(map);
	vhost_metamap_payload_release(map);
	vhost_metamap_payload_arm(vq);
}
EXPORT_SYMBOL_GPL(vhost_metamap_mem_changed);

/**
 * __vhost_metamap_xlate_fill - keep a region translate_desc() found
 * @map: the queue's state
 * @umem: the device's memory table, which @region is of
 * @region: the region vhost_iotlb_itree_first() found
 *
 * Kept only if it overlaps no other region of the table: then it is what
 * vhost_iotlb_itree_first() finds for any address in it.  A table whose
 * regions overlap (which QEMU never sends) is walked each time, as before.
 *
 * Context: vq->mutex held; the queue has no IOTLB.
 */
void __vhost_metamap_xlate_fill(struct vhost_metamap *map,
				struct vhost_iotlb *umem,
				const struct vhost_iotlb_map *region)
{
	struct vhost_metamap_xlate *x;

	lockdep_assert_held(&map->vq->mutex);
	if (vhost_iotlb_itree_first(umem, region->start, region->last) != region ||
	    vhost_iotlb_itree_next((struct vhost_iotlb_map *)region,
				   region->start, region->last))
		return;
	x = &map->xlate[map->xlate_next];
	map->xlate_next = (map->xlate_next + 1) % VHOST_METAMAP_XLATE;
	x->start = region->start;
	x->last = region->last;
	x->addr = region->addr;
	x->perm = region->perm;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_xlate_fill);

/*
 * The ring's addresses, size, features or endianness may have changed:
 * forget what was read ahead, and arm the map again unless it is armed for
 * this very ring.  Sleeps; ioctl context, vq->mutex held.
 */
void vhost_metamap_config_changed(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = vq->metamap;

	if (!map)
		return;
	vhost_metamap_drop_batch(vq);
	if (map->mode != VHOST_METAMAP_MODE_MAP)
		return;
	if (!map->ring->armed || !vhost_metamap_current(map)) {
		vhost_metamap_release(vq);
		vhost_metamap_arm(vq);
	}
	vhost_metamap_payload_arm(vq);
}
EXPORT_SYMBOL_GPL(vhost_metamap_config_changed);

/*
 * Whether vhost_get_vq_desc() must take the walk that knows the read-ahead
 * and the map (metamap_access.h): the mode is not off, or a poisoned page
 * quarantines the queue.  Kept with every change of either, which all hold
 * vq->mutex (a quarantine starts inside a section: a store).
 */
void vhost_metamap_engage(struct vhost_virtqueue *vq,
			  const struct vhost_metamap *map)
{
	vq->metamap_engaged = map && (map->mode != VHOST_METAMAP_MODE_OFF ||
				      map->quarantined);
}

/*
 * Switch the queue to mode (an enum vhost_metamap_mode): the read-ahead is
 * dropped in any case; map arms the map for the ring, the others release
 * it.  A mode other than off needs the queue's state, and map the maps'
 * state, which vhost_metamap_prepare() allocated.  Sleeps; ioctl context,
 * vq->mutex held.
 */
void vhost_metamap_set_mode(struct vhost_virtqueue *vq, u8 mode)
{
	struct vhost_metamap *map = vq->metamap;

	lockdep_assert_held(&vq->mutex);
	if (WARN_ON_ONCE(mode >= ARRAY_SIZE(vhost_metamap_mode_names)))
		mode = VHOST_METAMAP_MODE_OFF;
	if (!map) {
		WARN_ON_ONCE(mode != VHOST_METAMAP_MODE_OFF);
		return;
	}
	if (WARN_ON_ONCE(mode == VHOST_METAMAP_MODE_MAP && !map->ring))
		mode = VHOST_METAMAP_MODE_BATCH;
	map->mode = mode;
	vhost_metamap_engage(vq, map);
	if (mode == VHOST_METAMAP_MODE_MAP)
		vhost_metamap_config_changed(vq);
	else
		vhost_metamap_release(vq);
}
EXPORT_SYMBOL_GPL(vhost_metamap_set_mode);

/* A queue's mode, for readers that hold no lock. */
u8 vhost_metamap_mode(const struct vhost_virtqueue *vq)
{
	const struct vhost_metamap *map = READ_ONCE(vq->metamap);

	return map ? READ_ONCE(map->mode) : VHOST_METAMAP_MODE_OFF;
}
EXPORT_SYMBOL_GPL(vhost_metamap_mode);

/* Whether a queue's map is valid now, for readers that hold no lock. */
bool vhost_metamap_valid(const struct vhost_virtqueue *vq)
{
	const struct vhost_metamap *map = READ_ONCE(vq->metamap);
	const struct vhost_metamap_ring *ring = map ? READ_ONCE(map->ring) : NULL;

	return ring && READ_ONCE(ring->valid);
}
EXPORT_SYMBOL_GPL(vhost_metamap_valid);

/* The maps' state of @map's queue, ready to be published. */
static struct vhost_metamap_ring *vhost_metamap_ring_alloc(struct vhost_metamap *map)
{
	struct vhost_metamap_ring *ring;
	int p;

	ring = kzalloc(sizeof(*ring), GFP_KERNEL_ACCOUNT);
	if (!ring)
		return NULL;
	spin_lock_init(&ring->lock);
	ring->retry_at = jiffies;
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
		ring->range[p].map = map;
	return ring;
}

/*
 * Publish what @map and @ring (each NULL if the queue has it already)
 * add to @vq, under its vq->mutex: whole before lockless readers (sysfs,
 * netlink) see it.  -EINTR, and nothing published, on a fatal signal.
 */
static int vhost_metamap_publish(struct vhost_virtqueue *vq,
				 struct vhost_metamap *map,
				 struct vhost_metamap_ring *ring)
{
	if (mutex_lock_killable(&vq->mutex))
		return -EINTR;
	if (map) {
		/* Whole before lockless readers (sysfs, netlink) see it. */
		smp_store_release(&vq->metamap, map);
	}
	if (ring) {
		/* Whole before vhost_metamap_valid() sees it. */
		smp_store_release(&vq->metamap->ring, ring);
	}
	mutex_unlock(&vq->mutex);
	return 0;
}

/**
 * vhost_metamap_prepare - allocate what the queues of a device need
 *	before they are set to a mode other than off
 * @dev: the device
 * @mode: the mode they are to be set to, an enum vhost_metamap_mode
 *
 * Every queue gets its state if it has none yet, and for mode map the
 * maps' state too.  Each is published under the queue's vq->mutex and
 * stays with the device until vhost_metamap_dev_free(): what this
 * allocated before a failure is kept, and changes nothing.
 *
 * Context: sleeps; dev->vqs[]'s mutexes not held.
 * Return: 0, -ENOMEM, or -EINTR if a fatal signal came first.
 */
int vhost_metamap_prepare(struct vhost_dev *dev, u8 mode)
{
	struct vhost_metamap_ring *ring;
	struct vhost_metamap *map;
	int i, ret;

	for (i = 0; i < dev->nvqs; i++) {
		struct vhost_virtqueue *vq = dev->vqs[i];
		struct vhost_metamap *cur = READ_ONCE(vq->metamap);

		map = NULL;
		ring = NULL;
		if (!cur) {
			map = kzalloc(sizeof(*map), GFP_KERNEL_ACCOUNT);
			if (!map)
				return -ENOMEM;
			u64_stats_init(&map->stats.syncp);
			map->vq = vq;
			vhost_metamap_xlate_empty(map);
		}
		if (mode == VHOST_METAMAP_MODE_MAP && !(cur && cur->ring)) {
			ring = vhost_metamap_ring_alloc(cur ?: map);
			if (!ring) {
				kfree(map);
				return -ENOMEM;
			}
		}
		if (!map && !ring)
			continue;
		ret = vhost_metamap_publish(vq, map, ring);
		if (ret) {
			kfree(ring);
			kfree(map);
			return ret;
		}
	}
	return 0;
}
EXPORT_SYMBOL_GPL(vhost_metamap_prepare);

/**
 * vhost_metamap_dev_init - give a new device's queues the default mode
 * @dev: a device that uses the read-ahead and map (vhost-net)
 *
 * The module parameter's default; a queue left in mode off allocates
 * nothing.
 *
 * Context: sleeps.
 * Return: 0, or what vhost_metamap_prepare() failed with.
 */
int vhost_metamap_dev_init(struct vhost_dev *dev)
{
	u8 mode = READ_ONCE(vhost_metamap_default);
	int i, ret;

	if (mode == VHOST_METAMAP_MODE_OFF)
		return 0;
	ret = vhost_metamap_prepare(dev, mode);
	if (ret)
		return ret;
	for (i = 0; i < dev->nvqs; i++) {
		mutex_lock(&dev->vqs[i]->mutex);
		vhost_metamap_set_mode(dev->vqs[i], mode);
		mutex_unlock(&dev->vqs[i]->mutex);
	}
	return 0;
}
EXPORT_SYMBOL_GPL(vhost_metamap_dev_init);

/**
 * vhost_metamap_dev_free - free what vhost_metamap_prepare() allocated
 * @dev: a device whose queues are stopped and reset (vhost_dev_cleanup()),
 *	and that no lockless reader can reach any more
 */
void vhost_metamap_dev_free(struct vhost_dev *dev)
{
	int i;

	for (i = 0; i < dev->nvqs; i++) {
		struct vhost_virtqueue *vq = dev->vqs[i];

		vhost_metamap_release(vq);
		if (vq->metamap)
			kfree(vq->metamap->ring);
		kfree(vq->metamap);
		vq->metamap = NULL;
		vhost_metamap_engage(vq, NULL);
	}
}
EXPORT_SYMBOL_GPL(vhost_metamap_dev_free);

#ifdef CONFIG_FAULT_INJECTION
/*
 * fail_vhost_metamap_mc and fail_vhost_metamap_payload_mc: make a read
 * through the ring map, or through the payload map, report poison, as
 * copy_mc_to_kernel() does when it consumes an uncorrectable memory error
 * (which an emulator cannot raise).  Decided before the section, since
 * should_fail() may print.
 */
static DECLARE_FAULT_ATTR(vhost_metamap_fail_mc);
static DECLARE_FAULT_ATTR(vhost_metamap_fail_payload_mc);
static struct dentry *vhost_metamap_fail_dir[2];

bool vhost_metamap_inject_mc(void)
{
	return should_fail(&vhost_metamap_fail_mc, 1);
}

bool vhost_metamap_inject_payload_mc(void)
{
	return should_fail(&vhost_metamap_fail_payload_mc, 1);
}

static void vhost_metamap_fault_init(void)
{
	struct dentry *dir;

	dir = fault_create_debugfs_attr("fail_vhost_metamap_mc", NULL,
					&vhost_metamap_fail_mc);
	vhost_metamap_fail_dir[0] = IS_ERR(dir) ? NULL : dir;
	dir = fault_create_debugfs_attr("fail_vhost_metamap_payload_mc", NULL,
					&vhost_metamap_fail_payload_mc);
	vhost_metamap_fail_dir[1] = IS_ERR(dir) ? NULL : dir;
}

static void vhost_metamap_fault_exit(void)
{
	debugfs_remove_recursive(vhost_metamap_fail_dir[0]);
	debugfs_remove_recursive(vhost_metamap_fail_dir[1]);
}
#else
bool vhost_metamap_inject_mc(void)
{
	return false;
}

bool vhost_metamap_inject_payload_mc(void)
{
	return false;
}

static void vhost_metamap_fault_init(void) {}
static void vhost_metamap_fault_exit(void) {}
#endif

/*
 * Whether the poisoned page @pfn is still where a quarantine found it, at
 * the owner's address @uaddr: GUP finds it there (memory failure handling
 * has not unmapped it yet).  Any other answer (an error, -EHWPOISON for
 * the unmapped page, or another page) means no access there can consume
 * that poison again.
 */
static bool vhost_metamap_poison_mapped(struct vhost_metamap *map,
					unsigned long uaddr, unsigned long pfn)
{
	struct mm_struct *mm = map->vq->dev->mm;
	struct page *page;
	int locked = 1;
	bool mapped;
	long got;

	if (!mm || !mmget_not_zero(mm))
		return false;
	mmap_read_lock(mm);
	got = get_user_pages_remote(mm, uaddr, 1, 0, &page, &locked);
	if (locked)
		mmap_read_unlock(mm);
	mmput(mm);
	if (got != 1)
		return false;
	mapped = page_to_pfn(page) == pfn;
	put_page(page);
	return mapped;
}

/*
 * Whether a quarantine of the poisoned page @pfn at @uaddr may lift: asks
 * vhost_metamap_poison_mapped() at most every VHOST_METAMAP_RETRY_DELAY
 * (*@check_at), and true once the page is gone.  vq->mutex; sleeps.
 */
bool vhost_metamap_poison_gone(struct vhost_metamap *map, unsigned long uaddr,
			       unsigned long pfn, unsigned long *check_at)
{
	if (time_before(jiffies, *check_at))
		return false;
	if (!vhost_metamap_poison_mapped(map, uaddr, pfn))
		return true;
	*check_at = jiffies + max(1UL, VHOST_METAMAP_RETRY_DELAY);
	return false;
}

/**
 * vhost_metamap_read_stats - copy a queue's read-ahead and map counters
 * @vq: the queue
 * @c: the copy (zeroes for a queue that never left mode off)
 *
 * Context: any; takes no lock (a u64_stats reader).
 */
void vhost_metamap_read_stats(struct vhost_virtqueue *vq,
			      struct vhost_metamap_counts *c)
{
	const struct vhost_metamap *map = READ_ONCE(vq->metamap);
	const struct vhost_metamap_stats *s;
	unsigned int start;

	memset(c, 0, sizeof(*c));
	if (!map)
		return;
	s = &map->stats;
	do {
		start = u64_stats_fetch_begin(&s->syncp);
		c->fast = u64_stats_read(&s->fast);
		c->fallback = u64_stats_read(&s->fallback);
		c->remaps = u64_stats_read(&s->remaps);
		c->remap_failures = u64_stats_read(&s->remap_failures);
		c->sections = u64_stats_read(&s->sections);
		c->batched = u64_stats_read(&s->batched);
		c->refused = u64_stats_read(&s->refused);
		c->uaccess_fills = u64_stats_read(&s->uaccess_fills);
		c->poisoned = u64_stats_read(&s->poisoned);
		c->payload_fast = u64_stats_read(&s->payload_fast);
		c->payload_fallback = u64_stats_read(&s->payload_fallback);
		c->payload_fills = u64_stats_read(&s->payload_fills);
	} while (u64_stats_fetch_retry(&s->syncp, start));
	c->invalidations = READ_ONCE(s->invalidations);
	c->payload_invalidations = READ_ONCE(s->payload_invalidations);
	c->payload_slots = READ_ONCE(s->payload_slots);
}
EXPORT_SYMBOL_GPL(vhost_metamap_read_stats);

void vhost_metamap_show_fdinfo(struct seq_file *m, struct vhost_virtqueue *vq,
			       unsigned int index)
{
	struct vhost_metamap_counts c;

	vhost_metamap_read_stats(vq, &c);
	seq_printf(m, "vq%u-metamap:\tmode=%u valid=%d fast=%llu fallback=%llu invalidations=%llu remaps=%llu remap_failures=%llu sections=%llu batched=%llu refused=%llu uaccess_fills=%llu poisoned=%llu payload_fast=%llu payload_fallback=%llu payload_fills=%llu payload_invalidations=%llu payload_slots=%llu\n",
		   index, vhost_metamap_mode(vq), vhost_metamap_valid(vq),
		   c.fast, c.fallback, c.invalidations, c.remaps,
		   c.remap_failures, c.sections, c.batched, c.refused,
		   c.uaccess_fills, c.poisoned, c.payload_fast,
		   c.payload_fallback, c.payload_fills,
		   c.payload_invalidations, c.payload_slots);
}
EXPORT_SYMBOL_GPL(vhost_metamap_show_fdinfo);

static int __init vhost_metamap_mod_init(void)
{
	vhost_metamap_safe = page_address(ZERO_PAGE(0));
	vhost_metamap_fault_init();
	debugfs_create_bool("vhost_metamap_dcache_aliasing", 0600, NULL,
			    &vhost_metamap_pretend_aliasing);
	debugfs_create_u64("vhost_metamap_callback_max_ns", 0600, NULL,
			   &vhost_metamap_callback_max_ns);
	return 0;
}
module_init(vhost_metamap_mod_init);

static void __exit vhost_metamap_mod_exit(void)
{
	debugfs_lookup_and_remove("vhost_metamap_dcache_aliasing", NULL);
	debugfs_lookup_and_remove("vhost_metamap_callback_max_ns", NULL);
	vhost_metamap_fault_exit();
}
module_exit(vhost_metamap_mod_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vhost: virtqueue metadata read-ahead and kernel mapping");
