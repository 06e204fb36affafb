// SPDX-License-Identifier: GPL-2.0
/*
 * vhost metadata direct map.
 *
 * The three parts of a split ring (descriptor table, avail ring, used ring)
 * are each watched by an mmu_interval_notifier on the owner's mm.  Building
 * the map faults the pages in with GUP, records their kernel addresses and
 * drops the page references: like KVM's gfn_to_pfn_cache, it is the notifier,
 * not a reference, that keeps the map coherent.  Every mm event that touches
 * a ring page (unmap, migration, reclaim, KSM, THP, COW on fork, mprotect,
 * soft-dirty, memory failure, the OOM reaper) runs the callback first, and
 * the callback makes the map invalid under map->lock; readers hold that lock
 * around every access to mapped memory, so once the callback has returned
 * nobody touches the old pages.  While the map is invalid, accesses go
 * through uaccess as before, and the next batch rebuilds it.
 *
 * Three rules keep that safe whatever the owner, the guest or the mm do:
 *
 * - A section (map->lock held) is opened and closed in this file, around
 *   loads and stores of ring memory only.  What a batch needs is copied out
 *   of the ring; translation, IOTLB misses, dirty logging and error reports
 *   run in vhost.c after the section has ended.
 * - Whether the queue may use the map is decided here on every access
 *   (vhost_metamap_current()), from the ring's configuration as it is now,
 *   so no device has to remember to tell us about a change.
 * - Notifiers are registered only from ioctl context (vhost_metamap_arm()),
 *   where the ring memory is checked once; the worker only rebuilds the map
 *   of an armed queue (GUP) when an invalidation made it invalid.
 *
 * Lock order: vq->mutex -> mmap_lock (GUP, VMA checks) -> map->lock.
 * The callback takes only map->lock; it never sleeps and never waits for an
 * RCU grace period.  See Documentation/networking/vhost-metamap.rst.
 */
#include <linux/cacheinfo.h>
#include <linux/debugfs.h>
#include <linux/fault-inject.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/userfaultfd_k.h>

#include "vhost.h"

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

/* A build that lost the race this many times in a row gives up until later. */
#define VHOST_METAMAP_BUILD_TRIES	8
#define VHOST_METAMAP_RETRY_DELAY	msecs_to_jiffies(10)
/* The split ring's descriptor table alignment (virtio 1.x, 2.7.5). */
#define VHOST_METAMAP_DESC_ALIGN	16

/* vhost.c passes its VHOST_ADDR_* access type as the part. */
static_assert((int)VHOST_METAMAP_DESC == (int)VHOST_ADDR_DESC);
static_assert((int)VHOST_METAMAP_AVAIL == (int)VHOST_ADDR_AVAIL);
static_assert((int)VHOST_METAMAP_USED == (int)VHOST_ADDR_USED);

/*
 * Add n to counter, one of map->stats: the u64_stats writer, the vq->mutex
 * holder; lockless readers see each counter whole.
 */
static void vhost_metamap_stat_add(struct vhost_metamap *map,
				   u64_stats_t *counter, unsigned int n)
{
	lockdep_assert_held(&map->vq->mutex);
	u64_stats_update_begin(&map->stats.syncp);
	u64_stats_add(counter, n);
	u64_stats_update_end(&map->stats.syncp);
}

static void vhost_metamap_stat_inc(struct vhost_metamap *map,
				   u64_stats_t *counter)
{
	vhost_metamap_stat_add(map, counter, 1);
}

/*
 * On a CPU whose data cache aliases, a store through a kernel address is
 * not seen through the owner's without flush_dcache_page(), which neither
 * map does: neither serves such a CPU, and each refusal counts.  The
 * debugfs file vhost_metamap_dcache_aliasing makes the check true on any
 * CPU, for the tests.
 */
static bool vhost_metamap_pretend_aliasing;

static bool vhost_metamap_dcache_aliasing(struct vhost_metamap *map)
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
static void *vhost_metamap_safe __ro_after_init;

static void *vhost_metamap_safe_page(void)
{
	return vhost_metamap_safe;
}

/*
 * The longest an invalidate callback of either map waited for map->lock
 * (held by a section) and held it, in ns: what an invalidation of the
 * owner's mm waits for the map.  debugfs file
 * vhost_metamap_callback_max_ns: read it, write 0 to start again.  A
 * store only when a callback takes longer than any before; loads and
 * stores, so it may run under map->lock.
 */
static u64 vhost_metamap_callback_max_ns;

static void vhost_metamap_callback_took(u64 t0)
{
	u64 d = ktime_get_mono_fast_ns() - t0;
	u64 old = READ_ONCE(vhost_metamap_callback_max_ns);

	while (d > old &&
	       !try_cmpxchg64(&vhost_metamap_callback_max_ns, &old, d))
		;
}

/* Make the map invalid; map->lock held. */
static void __vhost_metamap_invalidate(struct vhost_metamap *map)
{
	void *safe = vhost_metamap_safe_page();
	unsigned int i;
	int p;

	lockdep_assert_held(&map->lock);
	if (!map->valid)
		return;		/* kaddr[] are at the safe page already */
	WRITE_ONCE(map->valid, false);
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
		for (i = 0; i < map->range[p].npages; i++)
			map->range[p].kaddr[i] = safe;
}

static bool vhost_metamap_invalidate(struct mmu_interval_notifier *mni,
				     const struct mmu_notifier_range *range,
				     unsigned long cur_seq)
{
	struct vhost_metamap_range *r =
		container_of(mni, struct vhost_metamap_range, notifier);
	struct vhost_metamap *map = r->map;
	u64 t0;

	/*
	 * Readers hold map->lock only around loads and stores of mapped ring
	 * memory: at worst a copy of the whole used ring (vhost_add_used_n()
	 * of every entry, num * 8 bytes, 256 KiB at num = 32768) or one
	 * read-ahead (64 heads and 64 descriptors).  That and the stores
	 * below (one per ring page) bound the wait here to microseconds, so
	 * non-blockable invalidations (the OOM reaper) are served like any
	 * other and this never answers false.
	 */
	t0 = ktime_get_mono_fast_ns();
	spin_lock(&map->lock);
	mmu_interval_set_seq(mni, cur_seq);
	__vhost_metamap_invalidate(map);
	WRITE_ONCE(map->stats.invalidations, map->stats.invalidations + 1);
	vhost_metamap_callback_took(t0);
	spin_unlock(&map->lock);
	return true;
}

static const struct mmu_interval_notifier_ops vhost_metamap_ops = {
	.invalidate = vhost_metamap_invalidate,
};

static void vhost_metamap_xlate_empty(struct vhost_metamap *map)
{
	unsigned int i;

	for (i = 0; i < VHOST_METAMAP_XLATE; i++)
		map->xlate[i] = (struct vhost_metamap_xlate){ .start = U64_MAX };
	map->xlate_next = 0;
}

/*
 * Forget the entries of the owner's pages @first to @last: those in the
 * table at their own slots.  A walk of the pages or of the table,
 * whichever is shorter: VHOST_METAMAP_PAGES_MAX loads at most.  Loads and
 * stores; map->lock held.
 */
static void vhost_metamap_payload_forget(struct vhost_metamap_payload *pl,
					 unsigned long first, unsigned long last)
{
	struct vhost_metamap_page *e;
	unsigned long upfn;
	unsigned int i;

	if (last - first < pl->mask) {
		for (upfn = first; upfn <= last; upfn++) {
			e = &pl->page[upfn & pl->mask];
			if (e->upfn == upfn)
				e->upfn = ~0UL;
		}
		return;
	}
	for (i = 0; i <= pl->mask; i++) {
		e = &pl->page[i];
		if (e->upfn - first <= last - first)
			e->upfn = ~0UL;
	}
}

static bool vhost_metamap_payload_invalidate(struct mmu_interval_notifier *mni,
					     const struct mmu_notifier_range *range,
					     unsigned long cur_seq)
{
	struct vhost_metamap_region *r =
		container_of(mni, struct vhost_metamap_region, notifier);
	unsigned long start = max(range->start, r->start);
	unsigned long end = min(range->end, r->end);
	struct vhost_metamap *map = r->map;
	struct vhost_metamap_payload *pl;
	u64 t0;

	/*
	 * A section of the payload map copies one buffer's bytes: a TX
	 * buffer's, at most a page (the buffers vhost-net builds in place are
	 * smaller than a page), or a received frame's, at most
	 * VHOST_METAMAP_WRITE_PAGES pages: the wait here is that copy at
	 * most.  An event costs the entries of its pages, as KVM's pfncache
	 * checks the range: moving the sequence makes a fill in flight start
	 * again (vhost_metamap_payload_fill() checks it before it publishes),
	 * and the entries of the range's pages are forgotten; the rest of the
	 * table stays valid.  The payload map is NULL before the queue's map
	 * is armed and once it is released.
	 */
	t0 = ktime_get_mono_fast_ns();
	spin_lock(&map->lock);
	mmu_interval_set_seq(mni, cur_seq);
	pl = map->payload;
	if (pl && start < end)
		vhost_metamap_payload_forget(pl, start >> PAGE_SHIFT,
					     (end - 1) >> PAGE_SHIFT);
	WRITE_ONCE(map->stats.payload_invalidations,
		   map->stats.payload_invalidations + 1);
	vhost_metamap_callback_took(t0);
	spin_unlock(&map->lock);
	return true;
}

static const struct mmu_interval_notifier_ops vhost_metamap_payload_ops = {
	.invalidate = vhost_metamap_payload_invalidate,
};

/*
 * Forget the payload map: unregister the regions' notifiers (which waits
 * for running callbacks: never under map->lock) and free it.  Sleeps;
 * vq->mutex held or the queue stopped.
 */
static void vhost_metamap_payload_release(struct vhost_metamap *map)
{
	struct vhost_metamap_payload *pl = map->payload;
	unsigned int i;

	if (!pl)
		return;
	spin_lock(&map->lock);
	WRITE_ONCE(map->payload, NULL);
	spin_unlock(&map->lock);
	for (i = 0; i < pl->nregions; i++)
		mmu_interval_notifier_remove(&pl->regions[i].notifier);
	kvfree(pl->regions);
	kvfree(pl->page);
	kfree(pl);
	WRITE_ONCE(map->stats.payload_slots, 0);
}

/* A new, empty table of @n page translations; NULL if there is no memory. */
static struct vhost_metamap_page *vhost_metamap_payload_table(unsigned int n)
{
	struct vhost_metamap_page *page;
	unsigned int i;

	page = kvmalloc_array(n, sizeof(*page),
			      GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	for (i = 0; page && i < n; i++)
		page[i] = (struct vhost_metamap_page){ .upfn = ~0UL };
	return page;
}

/*
 * The admission ran out of credit with the table smaller than it may be
 * (a working set larger than the table, such as a DPDK driver's mbufs):
 * twice the entries, each translation held so far moved to its entry in
 * the new table, and a full credit for the new size.  The move and the
 * swap are a section: the callbacks forget entries of the table
 * (vhost_metamap_payload_forget()), so the table they find must hold
 * every valid entry and none they have forgotten.  Loads and stores of
 * VHOST_METAMAP_PAGES_MAX / 2 entries at most, at most four times in a
 * queue's arming.  Without memory the table stays as it is, and is not
 * grown again.  Sleeps; vq->mutex held, outside a section.
 */
static noinline void vhost_metamap_payload_grow(struct vhost_metamap *map)
{
	struct vhost_metamap_payload *pl = map->payload;
	unsigned int n = (pl->mask + 1) * 2, i;
	struct vhost_metamap_page *page, *old = pl->page;

	lockdep_assert_held(&map->vq->mutex);
	pl->grow = false;
	page = vhost_metamap_payload_table(n);
	if (!page) {
		pl->max = pl->mask + 1;
		return;
	}
	spin_lock(&map->lock);
	for (i = 0; i <= pl->mask; i++)
		if (old[i].upfn != ~0UL)
			page[old[i].upfn & (n - 1)] = old[i];
	pl->page = page;
	pl->mask = n - 1;
	spin_unlock(&map->lock);
	pl->credit = VHOST_METAMAP_FILL_COST * n;
	WRITE_ONCE(map->stats.payload_slots, n);
	kvfree(old);
}

static int vhost_metamap_region_cmp(const void *a, const void *b)
{
	const struct vhost_metamap_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * Merge the @n ranges of @r where they overlap or touch, sorted by
 * address: one notifier per distinct range (a table of aliases of the
 * same memory, or overlapping regions, would otherwise have an event in
 * the memory run a callback per region).  The number of ranges left.
 */
static unsigned int vhost_metamap_regions_merge(struct vhost_metamap_region *r,
						unsigned int n)
{
	unsigned int i, k = 0;

	if (!n)
		return 0;
	sort(r, n, sizeof(*r), vhost_metamap_region_cmp, NULL);
	for (i = 1; i < n; i++) {
		if (r[i].start <= r[k].end)
			r[k].end = max(r[k].end, r[i].end);
		else
			r[++k] = r[i];
	}
	return k + 1;
}

/*
 * Arm the payload map of a queue in mode map: one notifier per distinct
 * range of the device's memory table's regions (vhost_metamap_regions_merge()).
 * A device with an IOTLB translates through it,
 * not through the table: its queues copy through uaccess.  Only from
 * ioctl context (the mode, SET_MEM_TABLE); a failure leaves the queue on
 * uaccess until the next of those.  Sleeps; vq->mutex held.
 */
static void vhost_metamap_payload_arm(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = vq->metamap;
	struct vhost_iotlb *umem = vq->dev->umem;
	const struct vhost_iotlb_map *m;
	struct vhost_metamap_payload *pl;
	struct mm_struct *mm = vq->dev->mm;
	unsigned long pages = 0;
	unsigned int i, n = 0;

	lockdep_assert_held(&vq->mutex);
	if (map->payload || map->mode != VHOST_METAMAP_MODE_MAP || !umem ||
	    vq->dev->iotlb || !mm || !umem->nmaps ||
	    vhost_metamap_dcache_aliasing(map))
		return;
	pl = kzalloc(sizeof(*pl), GFP_KERNEL_ACCOUNT);
	if (!pl)
		goto fail;
	pl->page = vhost_metamap_payload_table(VHOST_METAMAP_PAGES);
	if (!pl->page)
		goto fail;
	pl->mask = VHOST_METAMAP_PAGES - 1;
	pl->credit = VHOST_METAMAP_FILL_COST * VHOST_METAMAP_PAGES;
	pl->regions = kvcalloc(umem->nmaps, sizeof(*pl->regions),
			       GFP_KERNEL_ACCOUNT);
	if (!pl->regions)
		goto fail;
	/* As vhost_metamap_arm(): no notifier on an mm without users. */
	if (!mmget_not_zero(mm))
		goto fail;
	/*
	 * A region the notifier cannot see (a tagged address, a range that
	 * wraps) stays with uaccess: it gets no notifier, and no page of it
	 * is found.  Checked under mmap_lock, which the registration below
	 * may take for write.
	 */
	mmap_read_lock(mm);
	list_for_each_entry(m, &umem->list, link) {
		unsigned long start = m->addr, len = m->size;

		if (n == umem->nmaps)
			break;
		if (!len || start + len < start ||
		    untagged_addr_remote(mm, start) != start)
			continue;
		pl->regions[n].map = map;
		pl->regions[n].start = start;
		pl->regions[n].end = start + len;
		n++;
	}
	mmap_read_unlock(mm);
	n = vhost_metamap_regions_merge(pl->regions, n);
	for (i = 0; i < n; i++)
		pages += min_t(unsigned long,
			       (pl->regions[i].end - pl->regions[i].start) >>
			       PAGE_SHIFT, VHOST_METAMAP_PAGES_MAX);
	/* The table's pages rounded up to a power of two, at most. */
	pl->max = clamp_t(unsigned long,
			  roundup_pow_of_two(clamp_t(unsigned long, pages, 1,
						     VHOST_METAMAP_PAGES_MAX)),
			  VHOST_METAMAP_PAGES, VHOST_METAMAP_PAGES_MAX);
	for (i = 0; i < n; i++) {
		struct vhost_metamap_region *r = &pl->regions[i];

		if (mmu_interval_notifier_insert(&r->notifier, mm, r->start,
						 r->end - r->start,
						 &vhost_metamap_payload_ops)) {
			/* No half of a table: all of it, or uaccess. */
			while (i--)
				mmu_interval_notifier_remove(&pl->regions[i].notifier);
			mmput(mm);
			goto fail;
		}
	}
	pl->nregions = n;
	mmput(mm);
	spin_lock(&map->lock);
	WRITE_ONCE(map->payload, pl);
	spin_unlock(&map->lock);
	WRITE_ONCE(map->stats.payload_slots, VHOST_METAMAP_PAGES);
	return;
fail:
	if (pl) {
		kvfree(pl->regions);
		kvfree(pl->page);
	}
	kfree(pl);
	vhost_metamap_stat_inc(map, &map->stats.remap_failures);
}

/* Forget the ranges.  Sleeps; no reader may run (vq->mutex or stopped vq). */
void vhost_metamap_release(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = vq->metamap;
	int p;

	if (!map)
		return;
	spin_lock(&map->lock);
	__vhost_metamap_invalidate(map);
	spin_unlock(&map->lock);
	map->armed = false;
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
		struct vhost_metamap_range *r = &map->range[p];

		/* Waits for running callbacks: never under map->lock. */
		if (r->registered)
			mmu_interval_notifier_remove(&r->notifier);
		r->registered = false;
		kvfree(r->kaddr);
		r->kaddr = NULL;
		r->npages = 0;
	}
	map->batch.n = 0;
	vhost_metamap_xlate_empty(map);
	vhost_metamap_payload_release(map);
	map->retry_at = jiffies;
	/* A quarantine stays: the poisoned page may still be mapped. */
}
EXPORT_SYMBOL_GPL(vhost_metamap_release);

/* Bytes of a ring part, as vhost_vq_access_ok() sizes it. */
static unsigned long vhost_metamap_part_len(struct vhost_virtqueue *vq, int p)
{
	size_t event = vhost_has_feature(vq, VIRTIO_RING_F_EVENT_IDX) ?
		       sizeof(__virtio16) : 0;

	switch (p) {
	case VHOST_METAMAP_DESC:
		return sizeof(*vq->desc) * vq->num;
	case VHOST_METAMAP_AVAIL:
		return sizeof(*vq->avail) + sizeof(*vq->avail->ring) * vq->num +
		       event;
	default:
		return sizeof(*vq->used) + sizeof(*vq->used->ring) * vq->num +
		       event;
	}
}

static unsigned long vhost_metamap_part_uaddr(struct vhost_virtqueue *vq, int p)
{
	switch (p) {
	case VHOST_METAMAP_DESC:
		return (unsigned long)vq->desc;
	case VHOST_METAMAP_AVAIL:
		return (unsigned long)vq->avail;
	default:
		return (unsigned long)vq->used;
	}
}

/*
 * Whether the ring, as configured now, is the one the map was armed for,
 * with nothing since that asks for uaccess: a device IOTLB (on the device,
 * set before the queues learn of it, or on the queue), dirty logging (the
 * used ring's, or VHOST_F_LOG_ALL, which arming refuses and so is never in
 * map->features).  Checked on every access and section; vq->mutex.
 */
static bool vhost_metamap_current(const struct vhost_metamap *map)
{
	const struct vhost_virtqueue *vq = map->vq;
	const struct vhost_metamap_range *r = map->range;

	return map->armed && vq->num == map->num &&
	       vq->acked_features == map->features &&
	       (unsigned long)vq->desc == r[VHOST_METAMAP_DESC].uaddr &&
	       (unsigned long)vq->avail == r[VHOST_METAMAP_AVAIL].uaddr &&
	       (unsigned long)vq->used == r[VHOST_METAMAP_USED].uaddr &&
	       !vq->iotlb && !READ_ONCE(vq->dev->iotlb) && !vq->log_used;
}

/* May the map serve this queue's ring at all?  vq->mutex. */
static bool vhost_metamap_wanted(struct vhost_virtqueue *vq)
{
	return vq->metamap->mode == VHOST_METAMAP_MODE_MAP && vq->dev->mm &&
	       vq->desc && vq->avail && vq->used && !vq->iotlb && !READ_ONCE(vq->dev->iotlb) &&
	       !vq->log_used && !vhost_has_feature(vq, VHOST_F_LOG_ALL);
}

/*
 * Whether the map must leave a part to uaccess for reasons GUP does not
 * know: an address range the notifier would not see as the owner's (one
 * that wraps, or carries a tag), or a VMA registered with userfaultfd,
 * whose faults belong to the owner's handler and whose write protection
 * the map's stores would bypass.  Everything GUP refuses (holes, VM_IO and
 * VM_PFNMAP, memfd_secret, a mapping without the access the map needs)
 * it refuses when the map is built (vhost_metamap_fault()).  mmap_lock
 * held.
 */
static bool vhost_metamap_refuse_range(struct mm_struct *mm,
				       const struct vhost_metamap_range *r)
{
	unsigned long addr = r->uaddr & PAGE_MASK;
	unsigned long end = r->uaddr + r->len;
	struct vm_area_struct *vma;

	mmap_assert_locked(mm);
	if (end < r->uaddr)
		return true;	/* wraps */
	if (untagged_addr_remote(mm, r->uaddr) != r->uaddr)
		return true;	/* the notifier would never see the range */
	while (addr < end) {
		vma = find_vma(mm, addr);
		if (!vma || vma->vm_start >= end)
			return false;	/* a hole: GUP's to refuse */
		if (userfaultfd_armed(vma))
			return true;
		addr = vma->vm_end;
	}
	return false;
}

static bool vhost_metamap_refuse(struct vhost_metamap *map)
{
	struct mm_struct *mm = map->vq->dev->mm;
	bool refuse = false;
	int p;

	mmap_read_lock(mm);
	for (p = 0; p < VHOST_METAMAP_NPARTS && !refuse; p++)
		refuse = vhost_metamap_refuse_range(mm, &map->range[p]);
	mmap_read_unlock(mm);
	return refuse;
}

/*
 * Register the three ranges for the ring as it is configured now, if the
 * map may serve it.  Only from ioctl context (the ring ioctls, SET_FEATURES,
 * SET_BACKEND through vhost_vq_init_access(), the admin plane), where the
 * ring memory is checked once; a failure leaves the queue on uaccess until
 * the next of those.  The map itself is built later, by the worker.
 */
static void vhost_metamap_arm(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = vq->metamap;
	void *safe = vhost_metamap_safe_page();
	unsigned int i;
	int p, ret;

	lockdep_assert_held(&vq->mutex);
	if (!vhost_metamap_wanted(vq) || vhost_metamap_dcache_aliasing(map))
		return;
	/*
	 * vhost-net holds a user reference on the owner's mm, but a device
	 * that only grabs it must not register a notifier on an mm whose
	 * users are gone (mmu_notifier_register() BUGs on that).
	 */
	if (!mmget_not_zero(vq->dev->mm))
		return;
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
		struct vhost_metamap_range *r = &map->range[p];

		r->uaddr = vhost_metamap_part_uaddr(vq, p);
		r->len = vhost_metamap_part_len(vq, p);
	}
	/* The map serves only aligned descriptors: none crosses a page. */
	if (!IS_ALIGNED(map->range[VHOST_METAMAP_DESC].uaddr,
			VHOST_METAMAP_DESC_ALIGN) || vhost_metamap_refuse(map)) {
		vhost_metamap_stat_inc(map, &map->stats.refused);
		goto out;
	}
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
		struct vhost_metamap_range *r = &map->range[p];
		unsigned int npages = PFN_UP(offset_in_page(r->uaddr) + r->len);

		r->kaddr = kvmalloc_array(npages, sizeof(*r->kaddr),
					  GFP_KERNEL_ACCOUNT);
		if (!r->kaddr)
			goto fail;
		for (i = 0; i < npages; i++)
			r->kaddr[i] = safe;
		r->npages = npages;
		/* Fails with -EINTR on a signal: nothing half-registered. */
		ret = mmu_interval_notifier_insert(&r->notifier, vq->dev->mm,
						   r->uaddr & PAGE_MASK,
						   (unsigned long)npages << PAGE_SHIFT,
						   &vhost_metamap_ops);
		if (ret)
			goto fail;
		r->registered = true;
	}
	map->num = vq->num;
	map->features = vq->acked_features;
	map->armed = true;
	map->retry_at = jiffies;
	goto out;
fail:
	vhost_metamap_stat_inc(map, &map->stats.remap_failures);
	vhost_metamap_release(vq);
out:
	mmput(vq->dev->mm);
}

void vhost_metamap_drop_batch(struct vhost_virtqueue *vq)
{
	lockdep_assert_held(&vq->mutex);
	if (vq->metamap)
		vq->metamap->batch.n = 0;
}
EXPORT_SYMBOL_GPL(vhost_metamap_drop_batch);

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
	if (!map->armed || !vhost_metamap_current(map)) {
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
static void vhost_metamap_engage(struct vhost_virtqueue *vq,
				 const struct vhost_metamap *map)
{
	vq->metamap_engaged = map && (map->mode != VHOST_METAMAP_MODE_OFF ||
				      map->quarantined);
}

/*
 * Switch the queue to mode (an enum vhost_metamap_mode): the read-ahead is
 * dropped in any case; map arms the map for the ring, the others release
 * it.  A mode other than off needs the queue's state, which
 * vhost_metamap_prepare() allocated.  Sleeps; ioctl context, vq->mutex held.
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

	return map && READ_ONCE(map->valid);
}
EXPORT_SYMBOL_GPL(vhost_metamap_valid);

/**
 * vhost_metamap_prepare - allocate the read-ahead and map of every queue
 *	of a device that has none yet, before a mode other than off is set
 * @dev: the device
 *
 * Each queue's state is published under its vq->mutex, in mode off, and
 * stays with the device until vhost_metamap_dev_free(): what this
 * allocated before a failure is kept, and changes nothing.
 *
 * Context: sleeps; dev->vqs[]'s mutexes not held.
 * Return: 0, -ENOMEM, or -EINTR if a fatal signal came first.
 */
int vhost_metamap_prepare(struct vhost_dev *dev)
{
	struct vhost_metamap *map;
	int i, p;

	for (i = 0; i < dev->nvqs; i++) {
		struct vhost_virtqueue *vq = dev->vqs[i];

		if (READ_ONCE(vq->metamap))
			continue;
		map = kzalloc(sizeof(*map), GFP_KERNEL_ACCOUNT);
		if (!map)
			return -ENOMEM;
		spin_lock_init(&map->lock);
		u64_stats_init(&map->stats.syncp);
		map->vq = vq;
		map->retry_at = jiffies;
		vhost_metamap_xlate_empty(map);
		for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
			map->range[p].map = map;
		if (mutex_lock_killable(&vq->mutex)) {
			kfree(map);
			return -EINTR;
		}
		/* Whole before lockless readers (sysfs, netlink) see it. */
		smp_store_release(&vq->metamap, map);
		mutex_unlock(&vq->mutex);
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
	ret = vhost_metamap_prepare(dev);
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
		kfree(vq->metamap);
		vq->metamap = NULL;
		vhost_metamap_engage(vq, NULL);
	}
}
EXPORT_SYMBOL_GPL(vhost_metamap_dev_free);

/*
 * mmu_interval_read_begin() without its wait: false while an invalidation
 * of the range is in progress, which may last as long as the owner's
 * threads keep invalidating it, and the worker holds vq->mutex.  The
 * caller then copies through uaccess and tries again later.  On a kernel
 * without mmu_interval_read_try_begin() (the DKMS package on a
 * distribution's kernel: its mm/ is not ours to patch), the wait stays.
 */
static bool vhost_metamap_read_begin(struct mmu_interval_notifier *mni,
				     unsigned long *seq)
{
#ifdef VHOST_METAMAP_STOCK_MM
	*seq = mmu_interval_read_begin(mni);
	return true;
#else
	return mmu_interval_read_try_begin(mni, seq);
#endif
}

/*
 * Fault a range in; the page references are the caller's to drop.  GUP
 * refuses what the map may not serve (-EFAULT: a hole, VM_IO or VM_PFNMAP,
 * memfd_secret, a mapping without the access needed), counted as refused;
 * a range registered with userfaultfd since the map was armed is left to
 * uaccess too.  GUP is told it may drop mmap_lock (@locked), as a fault
 * that waits for a handler requires.  -EBUSY: the range is being
 * invalidated (vhost_metamap_read_begin()).
 */
static int vhost_metamap_fault(struct vhost_metamap *map,
			       struct vhost_metamap_range *r, bool write,
			       struct page **pages, unsigned long *seq)
{
	struct mm_struct *mm = map->vq->dev->mm;
	int locked = 1;
	long got;

	if (!vhost_metamap_read_begin(&r->notifier, seq))
		return -EBUSY;
	mmap_read_lock(mm);
	if (vhost_metamap_refuse_range(mm, r)) {
		mmap_read_unlock(mm);
		got = -EFAULT;
		goto refused;
	}
	got = get_user_pages_remote(mm, r->uaddr & PAGE_MASK, r->npages,
				    write ? FOLL_WRITE : 0, pages, &locked);
	if (locked)
		mmap_read_unlock(mm);
	if (got == r->npages)
		return 0;
	if (got > 0) {
		release_pages(pages, got);
		got = -EFAULT;	/* a hole or a refused VMA after the first */
	}
	if (got != -EFAULT)
		return got;
refused:
	vhost_metamap_stat_inc(map, &map->stats.refused);
	return -EPERM;
}

/*
 * Fault every part in, then publish the pages' kernel addresses under
 * map->lock if no invalidation ran meanwhile.  The used ring is faulted for
 * write: the pages are dirty from then on, and whatever cleans them
 * (writeback's page_mkclean, reclaim's unmap, soft-dirty clearing) runs the
 * callback first, so no set_page_dirty() is needed and no write is lost.
 */
static int vhost_metamap_build(struct vhost_metamap *map, struct page **pages)
{
	unsigned long seq[VHOST_METAMAP_NPARTS];
	unsigned int off[VHOST_METAMAP_NPARTS], total = 0;
	int p, i, ret = 0, tries;

	for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
		off[p] = total;
		total += map->range[p].npages;
	}
	for (tries = 0; tries < VHOST_METAMAP_BUILD_TRIES; tries++) {
		for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
			ret = vhost_metamap_fault(map, &map->range[p],
						  p == VHOST_METAMAP_USED,
						  pages + off[p], &seq[p]);
			if (ret) {
				release_pages(pages, off[p]);
				return ret;
			}
		}
		spin_lock(&map->lock);
		for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
			if (mmu_interval_read_retry(&map->range[p].notifier,
						    seq[p]))
				break;
		if (p == VHOST_METAMAP_NPARTS) {
			for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
				for (i = 0; i < map->range[p].npages; i++)
					map->range[p].kaddr[i] =
						page_address(pages[off[p] + i]);
			WRITE_ONCE(map->valid, true);
		}
		spin_unlock(&map->lock);
		release_pages(pages, total);
		if (READ_ONCE(map->valid))
			return 0;
		cond_resched();
	}
	return -EAGAIN;
}

/*
 * Make the map of an armed queue valid again; false if it stays invalid.
 * Only from the head, descriptor and used ring accessors, which run where
 * uaccess may fault; might_sleep() says so to the debug kernel.
 */
static noinline bool vhost_metamap_refresh(struct vhost_metamap *map)
{
	struct page **pages;
	unsigned int total;
	int ret;

	might_sleep();
	lockdep_assert_held(&map->vq->mutex);
	if (time_before(jiffies, map->retry_at))
		return false;
	total = map->range[0].npages + map->range[1].npages +
		map->range[2].npages;
	pages = kvmalloc_array(total, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = vhost_metamap_build(map, pages);
	kvfree(pages);
	if (ret)
		goto fail;
	vhost_metamap_stat_inc(map, &map->stats.remaps);
	return true;
fail:
	/* A refusal was counted as one; a range being invalidated is none. */
	if (ret != -EPERM && ret != -EBUSY)
		vhost_metamap_stat_inc(map, &map->stats.remap_failures);
	map->retry_at = jiffies + (ret == -EBUSY ? 1 :
				   max(1UL, VHOST_METAMAP_RETRY_DELAY));
	return false;
}

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

static bool vhost_metamap_inject_mc(void)
{
	return should_fail(&vhost_metamap_fail_mc, 1);
}

static bool vhost_metamap_inject_payload_mc(void)
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
static bool vhost_metamap_inject_mc(void)
{
	return false;
}

static bool vhost_metamap_inject_payload_mc(void)
{
	return false;
}

static void vhost_metamap_fault_init(void) {}
static void vhost_metamap_fault_exit(void) {}
#endif

/*
 * Open a section: take map->lock if the queue may use the map and it is
 * valid (rebuilt first if @refresh and it is not); false, counted as a
 * fallback, if the caller must use uaccess.  What runs until
 * spin_unlock(&map->lock) is loads and stores of ring memory.  *mc says
 * whether the section's first read reports poison (fault injection).
 */
static bool vhost_metamap_section(struct vhost_metamap *map, bool refresh,
				  bool *mc)
{
	lockdep_assert_held(&map->vq->mutex);
	if (!vhost_metamap_current(map))
		goto fallback;
	if (unlikely(!READ_ONCE(map->valid)) &&
	    (!refresh || !vhost_metamap_refresh(map)))
		goto fallback;
	*mc = vhost_metamap_inject_mc();
	spin_lock(&map->lock);
	if (likely(map->valid)) {
		vhost_metamap_stat_inc(map, &map->stats.sections);
		return true;
	}
	spin_unlock(&map->lock);
fallback:
	vhost_metamap_stat_inc(map, &map->stats.fallback);
	return false;
}

/*
 * Kernel address of [uaddr, uaddr + size) in part p, or NULL when that is
 * outside the part or crosses a page.  uaddr derives from guest-controlled
 * indices and this path has no uaccess speculation barrier, so the page
 * index and the offset in the page are clamped with array_index_nospec().
 * map->lock held.
 */
static void *vhost_metamap_kaddr(const struct vhost_metamap *map, int p,
				 unsigned long uaddr, size_t size)
{
	const struct vhost_metamap_range *r = &map->range[p];
	unsigned long off = uaddr - r->uaddr;	/* wraps if uaddr < r->uaddr */
	unsigned long pg;

	if (unlikely(size > r->len || off > r->len - size))
		return NULL;
	off += offset_in_page(r->uaddr);
	if (unlikely(offset_in_page(off) + size > PAGE_SIZE))
		return NULL;
	pg = array_index_nospec(off >> PAGE_SHIFT, (unsigned long)r->npages);
	/* Nor may a mispredicted page-crossing check reach the next page. */
	off = array_index_nospec(offset_in_page(off), PAGE_SIZE - size + 1);
	return r->kaddr[pg] + off;
}

/*
 * Read len bytes of ring memory at kernel address src, the owner's uaddr,
 * inside a section.  Guest memory may hold an uncorrectable error:
 * copy_mc_to_kernel() recovers from consuming it.  A poisoned read makes
 * the map invalid and quarantines the queue: the access fails, and so
 * does every later access to the ring until the page is gone
 * (__vhost_metamap_poisoned()), so the worker never consumes the poison
 * again, through the map or through uaccess.  vhost_metamap_report_poison()
 * has the page handled once the section is over.  @mc: report poison
 * without reading (fault injection).  Only heads and descriptors the
 * driver has published are read this way: they do not change, so the
 * byte copy cannot tear.
 */
static bool vhost_metamap_read(struct vhost_metamap *map, void *dst,
			       const void *src, unsigned long uaddr,
			       size_t len, bool *mc)
{
	unsigned long left = *mc ? len : copy_mc_to_kernel(dst, src, len);

	if (likely(!left))
		return true;
	*mc = false;
	map->poison_pfn = page_to_pfn(virt_to_page(src + len - left));
	map->poison_uaddr = (uaddr + len - left) & PAGE_MASK;
	WRITE_ONCE(map->quarantined, true);
	vhost_metamap_engage(map->vq, map);
	__vhost_metamap_invalidate(map);
	return false;
}

/*
 * After a section whose read hit poison: queue the page for
 * memory_failure() (which takes locks, so not in the section), which
 * unmaps it from the owner.  vq->mutex.
 */
static void vhost_metamap_report_poison(struct vhost_metamap *map)
{
	if (likely(!map->poison_pfn) || !map->quarantined)
		return;
	memory_failure_queue(map->poison_pfn, 0);
	map->poison_check_at = jiffies;
}

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
static bool vhost_metamap_poison_gone(struct vhost_metamap *map,
				      unsigned long uaddr, unsigned long pfn,
				      unsigned long *check_at)
{
	if (time_before(jiffies, *check_at))
		return false;
	if (!vhost_metamap_poison_mapped(map, uaddr, pfn))
		return true;
	*check_at = jiffies + max(1UL, VHOST_METAMAP_RETRY_DELAY);
	return false;
}

/**
 * __vhost_metamap_poisoned - whether a quarantined queue must still fail
 *	every access to its ring
 * @map: the queue's map, quarantined
 *
 * Checks at most every VHOST_METAMAP_RETRY_DELAY whether the poisoned page
 * is gone, and lifts the quarantine once it is.  Each access failed is
 * counted (poisoned).
 *
 * Context: vq->mutex held; sleeps.
 */
bool __vhost_metamap_poisoned(struct vhost_metamap *map)
{
	lockdep_assert_held(&map->vq->mutex);
	if (vhost_metamap_poison_gone(map, map->poison_uaddr, map->poison_pfn,
				      &map->poison_check_at)) {
		WRITE_ONCE(map->quarantined, false);
		vhost_metamap_engage(map->vq, map);
		map->poison_pfn = 0;
		return false;
	}
	vhost_metamap_stat_inc(map, &map->stats.poisoned);
	return true;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_poisoned);

/* End a section; done: the access was made through the map. */
static void vhost_metamap_section_end(struct vhost_metamap *map, bool done)
{
	spin_unlock(&map->lock);
	vhost_metamap_stat_inc(map, done ? &map->stats.fast :
					   &map->stats.fallback);
}

/*
 * What an accessor answers after a section: -EIO if it found poison (the
 * access fails, and the page is reported), 1 if the access was made, 0 if
 * uaccess is to make it.
 */
static int vhost_metamap_after(struct vhost_metamap *map, bool done)
{
	if (unlikely(map->quarantined)) {
		vhost_metamap_report_poison(map);
		vhost_metamap_stat_inc(map, &map->stats.poisoned);
		return -EIO;
	}
	return done;
}

bool __vhost_metamap_put16(struct vhost_metamap *map, void __user *uaddr,
			   __virtio16 val)
{
	__virtio16 *k;
	bool mc;

	if (!vhost_metamap_section(map, false, &mc))
		return false;
	k = vhost_metamap_kaddr(map, VHOST_METAMAP_USED, (unsigned long)uaddr,
				sizeof(val));
	if (k)
		WRITE_ONCE(*k, val);
	vhost_metamap_section_end(map, k);
	return k;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_put16);

/*
 * Find the page at the owner's address @uaddr for the payload map: GUP it
 * (for write if @write), keep its kernel address unless an invalidation
 * of its region began since the notifier's sequence was read (under
 * map->lock, as the callback moves it), drop the reference.  Refused, as the
 * ring map refuses, where it is in no region, not mapped in a VMA
 * registered with userfaultfd, or where GUP refuses it (a hole, VM_IO or VM_PFNMAP,
 * memfd_secret, hwpoison); and the page quarantined for poison, wherever
 * the owner maps it.  0, or -EAGAIN if the region was invalidated
 * meanwhile, -EBUSY if it is being invalidated (no wait for that:
 * vhost_metamap_read_begin()), or -EPERM.  Sleeps; vq->mutex held,
 * outside a section.
 */
static noinline int vhost_metamap_payload_fill(struct vhost_metamap *map,
					       unsigned long uaddr, bool write)
{
	struct vhost_metamap_payload *pl = map->payload;
	struct mm_struct *mm = map->vq->dev->mm;
	struct vhost_metamap_region *r = NULL;
	struct vhost_metamap_page *e;
	struct vm_area_struct *vma;
	unsigned long seq;
	struct page *page;
	int locked = 1;
	unsigned int i;
	long got;

	for (i = 0; i < pl->nregions; i++) {
		if (uaddr >= pl->regions[i].start && uaddr < pl->regions[i].end) {
			r = &pl->regions[i];
			break;
		}
	}
	if (!r)
		goto refused;
	if (!vhost_metamap_read_begin(&r->notifier, &seq))
		return -EBUSY;
	/*
	 * The worker runs in the owner's mm: a page that is mapped already,
	 * the common case, is found without mmap_lock.  GUP-fast takes no
	 * page of a VMA registered with userfaultfd: its pages are mapped
	 * (uffd's faults are for what is not), and the ring map refuses such
	 * a VMA only for the stores that would bypass its write protection,
	 * which TX never makes.  A page found for write takes the slow path:
	 * its FOLL_TOUCH marks the page dirty, as a store through the
	 * owner's mapping would (GUP-fast does not), and what cleans it again
	 * (writeback, reclaim) invalidates the region first.
	 */
	if (!write && current->mm == mm &&
	    get_user_pages_fast_only(uaddr & PAGE_MASK, 1, 0, &page) == 1)
		goto found;
	mmap_read_lock(mm);
	vma = find_vma(mm, uaddr);
	if (!vma || vma->vm_start > uaddr || userfaultfd_armed(vma)) {
		mmap_read_unlock(mm);
		goto refused;
	}
	got = get_user_pages_remote(mm, uaddr & PAGE_MASK, 1,
				    write ? FOLL_WRITE : 0, &page, &locked);
	if (locked)
		mmap_read_unlock(mm);
	if (got != 1)
		goto refused;
found:
	if (unlikely(page_to_pfn(page) == map->payload_poison_pfn)) {
		put_page(page);
		goto refused;
	}
	spin_lock(&map->lock);
	if (mmu_interval_read_retry(&r->notifier, seq)) {
		spin_unlock(&map->lock);
		put_page(page);
		return -EAGAIN;
	}
	e = &pl->page[(uaddr >> PAGE_SHIFT) & pl->mask];
	e->upfn = uaddr >> PAGE_SHIFT;
	e->kaddr = page_address(page);
	e->write = write;
	spin_unlock(&map->lock);
	put_page(page);
	vhost_metamap_stat_inc(map, &map->stats.payload_fills);
	return 0;
refused:
	/* Counted by the caller's payload_fallback; refused is the ring's. */
	return -EPERM;
}

/*
 * The kernel address of the owner's page @upfn if the payload map holds it
 * (no invalidation of the page came since it was found: the callback
 * forgets its entry), else NULL.  A lookup mispredicted as a hit reads
 * the safe page: the check is folded into the address without a branch.
 * map->lock held.
 */
static __always_inline void *
vhost_metamap_payload_page(const struct vhost_metamap_payload *pl,
			   unsigned long upfn, bool write)
{
	const struct vhost_metamap_page *e = &pl->page[upfn & pl->mask];
	unsigned long mask;

	if (unlikely(e->upfn != upfn || (write && !e->write)))
		return NULL;
	mask = array_index_mask_nospec(e->upfn ^ upfn, 1);
	if (unlikely(!mask))
		return NULL;
	return (void *)(((unsigned long)e->kaddr & mask) |
			((unsigned long)vhost_metamap_safe_page() & ~mask));
}

/*
 * Whether a page the payload map does not hold is worth finding (GUP).
 * Two tests.  The slot: it is free (an invalidation of its page frees
 * it), holds the same page (found for reading, now wanted for writing),
 * or the page is the one last refused there; a page met where another sits
 * is copied through uaccess and remembered.  The credit: a fill spends
 * VHOST_METAMAP_FILL_COST, a copy served by the one-page fast path
 * earns one, up to a whole map's worth of fills (so a new working set
 * that fits is found at once).  A working set larger than the map (a DPDK
 * driver's thousands of mbufs, two to a page, each page met twice in a
 * row and then not for a whole cycle) passes the first test on every page
 * and fails the second: its fills are bounded by the hits they buy, and
 * the map grows, twice as large each time the credit runs out, as far as
 * it may (vhost_metamap_payload_grow(), after the section).  vq->mutex and
 * map->lock held.
 */
static bool vhost_metamap_payload_admit(struct vhost_metamap_payload *pl,
					unsigned long upfn)
{
	struct vhost_metamap_page *e = &pl->page[upfn & pl->mask];

	if (e->upfn != ~0UL && e->upfn != upfn && e->seen != upfn) {
		e->seen = upfn;
		return false;
	}
	if (pl->credit < VHOST_METAMAP_FILL_COST) {
		pl->grow = pl->mask + 1 < pl->max;
		return false;
	}
	pl->credit -= VHOST_METAMAP_FILL_COST;
	return true;
}

/*
 * After a copy of @total bytes within the first segment of @iter served by
 * a fast path: a credit earned, @iter advanced, the copy counted.  The
 * advance is iov_iter_advance()'s for an iovec, inline: the call cost a
 * third of the TX fast path.
 */
static __always_inline void
vhost_metamap_payload_fast(struct vhost_metamap *map, struct iov_iter *iter,
			   size_t total)
{
	struct vhost_metamap_payload *pl = map->payload;

	if (pl->credit < VHOST_METAMAP_FILL_COST * (pl->mask + 1))
		pl->credit++;
	iter->count -= total;
	iter->iov_offset += total;
	if (iter->iov_offset == iter_iov(iter)->iov_len) {
		iter->__iov++;
		iter->nr_segs--;
		iter->iov_offset = 0;
	}
	vhost_metamap_stat_inc(map, &map->stats.payload_fast);
}

/*
 * A copy through the payload map read poison in the page @pfn, the
 * owner's page @upfn: quarantine it.  No entry serves the page any more,
 * no fill takes it again (vhost_metamap_payload_fill()), every copy of a
 * buffer in @upfn fails before reading anything until the page there is
 * not @pfn (vhost_metamap_payload_poisoned()), and memory failure handling
 * is asked to unmap it: one machine check per poisoned page, however often
 * the guest kicks.  One page at a time: a second takes the first's place.
 * The entries are forgotten in a section, as the callbacks forget them
 * (struct vhost_metamap_payload).  vq->mutex, outside a section.
 */
static noinline void vhost_metamap_payload_quarantine(struct vhost_metamap *map,
						      unsigned long pfn,
						      unsigned long upfn)
{
	struct vhost_metamap_payload *pl = map->payload;
	void *kaddr = page_address(pfn_to_page(pfn));
	unsigned int i;

	spin_lock(&map->lock);
	for (i = 0; i <= pl->mask; i++)
		if (pl->page[i].kaddr == kaddr)
			pl->page[i].upfn = ~0UL;
	spin_unlock(&map->lock);
	map->payload_poison_pfn = pfn;
	map->payload_poison_upfn = upfn;
	map->payload_poison_check_at = jiffies;
	memory_failure_queue(pfn, 0);
	vhost_metamap_stat_inc(map, &map->stats.poisoned);
}

/*
 * Whether a copy of the first @total bytes of @from would read the page
 * quarantined for poison.  At most every VHOST_METAMAP_RETRY_DELAY it asks
 * GUP whether the page is gone, and lifts the quarantine once it is.  A
 * copy refused is counted (poisoned).  vq->mutex; sleeps.
 */
static noinline bool vhost_metamap_payload_poisoned(struct vhost_metamap *map,
						    const struct iov_iter *from,
						    size_t total)
{
	unsigned long upfn = map->payload_poison_upfn, start, seg;
	const struct iovec *iov = iter_iov(from);
	size_t off = from->iov_offset, n;
	bool hit = false;

	for (seg = 0; seg < from->nr_segs && total && !hit; seg++, off = 0) {
		n = min(iov[seg].iov_len - off, total);
		if (!n)
			continue;
		start = (unsigned long)iov[seg].iov_base + off;
		hit = upfn >= start >> PAGE_SHIFT &&
		      upfn <= (start + n - 1) >> PAGE_SHIFT;
		total -= n;
	}
	if (!hit)
		return false;
	if (vhost_metamap_poison_gone(map, upfn << PAGE_SHIFT,
				      map->payload_poison_pfn,
				      &map->payload_poison_check_at)) {
		map->payload_poison_upfn = 0;
		map->payload_poison_pfn = 0;
		return false;
	}
	vhost_metamap_stat_inc(map, &map->stats.poisoned);
	return true;
}

/**
 * __vhost_metamap_copy_from_iter - copy a buffer of the guest's through
 *	the payload map
 * @map: the queue's state, with a payload map
 * @to: where to, in order: @nto pieces (a header, a frame)
 * @nto: how many
 * @from: the buffer, an iterator over the owner's addresses
 *
 * Copies as far as the payload map serves, in one section: a page it does
 * not hold is found (GUP, outside the section) and the copy goes on, a
 * page it may not serve ends it.  Guest memory may hold an uncorrectable
 * error: the read is copy_mc_to_kernel(), and a poisoned page is
 * quarantined and handed to memory_failure() after the section
 * (fail_vhost_metamap_payload_mc injects such poison into the first page
 * the call reads through the map).
 *
 * Context: vq->mutex held; sleeps.
 * Return: the bytes copied, @from advanced by as many; fewer than the
 * pieces' total where a page could not be served, and the caller copies
 * the rest through uaccess; -EIO if a page holds poison, or the buffer
 * is in the page quarantined for it.
 */
ssize_t __vhost_metamap_copy_from_iter(struct vhost_metamap *map,
				       const struct vhost_metamap_to *to,
				       unsigned int nto, struct iov_iter *from)
{
	struct vhost_metamap_payload *pl = map->payload;
	const struct iovec *iov = iter_iov(from);
	size_t off = from->iov_offset, done = 0, total = 0, at = 0;
	unsigned long seg = 0, poison = 0, poison_upfn = 0;
	unsigned int fills = 0, t = 0;
	bool admitted = false, mc;
	int ret;

	lockdep_assert_held(&map->vq->mutex);
	for (t = 0; t < nto; t++)
		total += to[t].len;
	if (!pl || !iter_is_iovec(from) || !total ||
	    total > iov_iter_count(from))
		return 0;
	if (unlikely(map->payload_poison_upfn) &&
	    vhost_metamap_payload_poisoned(map, from, total))
		return -EIO;
	t = 0;
	mc = vhost_metamap_inject_payload_mc();
	spin_lock(&map->lock);
	/*
	 * The common case, a buffer in one segment and one page: one lookup,
	 * a copy per piece.  Anything else, or a miss, takes the walk.
	 */
	if (likely(iov[0].iov_len - off >= total)) {
		unsigned long uaddr = (unsigned long)iov[0].iov_base + off;
		bool one = offset_in_page(uaddr) + total <= PAGE_SIZE;
		void *k = NULL;

		if (one)
			k = vhost_metamap_payload_page(pl,
						       uaddr >> PAGE_SHIFT,
						       false);
		if (unlikely(!k) && one) {
			/* A miss the map will not find: uaccess, at once. */
			admitted = vhost_metamap_payload_admit(pl, uaddr >> PAGE_SHIFT);
			if (!admitted) {
				spin_unlock(&map->lock);
				goto out;
			}
		}
		if (k) {
			k += offset_in_page(uaddr);
			for (; t < nto && !poison; t++) {
				unsigned long left = unlikely(mc) ? to[t].len :
					copy_mc_to_kernel(to[t].dst, k, to[t].len);

				if (unlikely(left)) {
					poison = page_to_pfn(virt_to_page(k));
					poison_upfn = uaddr >> PAGE_SHIFT;
				}
				k += to[t].len;
			}
			spin_unlock(&map->lock);
			if (unlikely(poison))
				goto out;
			vhost_metamap_payload_fast(map, from, total);
			return total;
		}
	}
	while (done < total) {
		unsigned long uaddr, left;
		size_t n;
		void *k;

		if (at == to[t].len) {
			t++;
			at = 0;
			continue;
		}
		if (off == iov[seg].iov_len) {
			if (++seg >= from->nr_segs)
				break;
			off = 0;
			continue;
		}
		uaddr = (unsigned long)iov[seg].iov_base + off;
		n = min3(to[t].len - at, iov[seg].iov_len - off,
			 PAGE_SIZE - offset_in_page(uaddr));
		k = vhost_metamap_payload_page(pl, uaddr >> PAGE_SHIFT, false);
		if (!k) {
			/*
			 * Two pages found per copy at most, and only those
			 * vhost_metamap_payload_admit() lets in (the fast
			 * path's miss was asked already): the rest through
			 * uaccess.
			 */
			if (fills++ == 2 ||
			    (!admitted &&
			     !vhost_metamap_payload_admit(pl, uaddr >> PAGE_SHIFT))) {
				spin_unlock(&map->lock);
				goto out;
			}
			admitted = false;
			spin_unlock(&map->lock);
			ret = vhost_metamap_payload_fill(map, uaddr, false);
			if (ret == -EPERM || ret == -EBUSY)
				goto out;
			spin_lock(&map->lock);
			continue;
		}
		k += offset_in_page(uaddr);
		left = unlikely(mc) ? n : copy_mc_to_kernel(to[t].dst + at, k, n);
		if (unlikely(left)) {
			poison = page_to_pfn(virt_to_page(k + n - left));
			poison_upfn = uaddr >> PAGE_SHIFT;
			break;
		}
		done += n;
		at += n;
		off += n;
	}
	spin_unlock(&map->lock);
out:
	if (unlikely(pl->grow))
		vhost_metamap_payload_grow(map);
	if (unlikely(poison)) {
		vhost_metamap_payload_quarantine(map, poison, poison_upfn);
		return -EIO;
	}
	if (done)
		iov_iter_advance(from, done);
	vhost_metamap_stat_inc(map, done == total ? &map->stats.payload_fast :
						 &map->stats.payload_fallback);
	return done;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_copy_from_iter);

/*
 * __vhost_metamap_copy_to_iter()'s walk: a buffer over more than one page or
 * segment, or a page the map does not hold yet.  Out of line, its pieces'
 * array with it (the kernel zeroes a stack array on every call).
 */
static noinline ssize_t
vhost_metamap_copy_to_iter_walk(struct vhost_metamap *map, const void *hdr,
				size_t hlen, size_t skip, size_t len,
				vhost_metamap_copy_t copy, void *arg,
				struct iov_iter *to)
{
	struct vhost_metamap_payload *pl = map->payload;
	struct {
		unsigned long uaddr;
		size_t n;
		void *k;
	} piece[VHOST_METAMAP_WRITE_PAGES];
	size_t total = hlen + skip + len, off = to->iov_offset, got = 0, at;
	const struct iovec *iov = iter_iov(to);
	unsigned int np = 0, i, fills = 0;
	unsigned long seg = 0;
	int ret;

	/* The buffer's pieces, one page each, outside the section. */
	while (got < total) {
		unsigned long uaddr;
		size_t n;

		if (off == iov[seg].iov_len) {
			if (++seg >= to->nr_segs)
				goto uaccess;
			off = 0;
			continue;
		}
		if (np == ARRAY_SIZE(piece))
			goto uaccess;
		uaddr = (unsigned long)iov[seg].iov_base + off;
		n = min3(total - got, iov[seg].iov_len - off,
			 PAGE_SIZE - offset_in_page(uaddr));
		piece[np].uaddr = uaddr;
		piece[np++].n = n;
		got += n;
		off += n;
	}
	for (;;) {
		spin_lock(&map->lock);
		for (i = 0; i < np; i++) {
			unsigned long upfn = piece[i].uaddr >> PAGE_SHIFT;

			piece[i].k = vhost_metamap_payload_page(pl, upfn, true);
			if (!piece[i].k)
				break;
		}
		if (i == np)
			break;
		/*
		 * A page the map does not hold: found if the admission lets
		 * it in, a page per piece and one more try (an invalidation
		 * that raced the fill) at most, then the buffer is looked up
		 * again from the start.
		 */
		if (fills++ > np ||
		    !vhost_metamap_payload_admit(pl, piece[i].uaddr >> PAGE_SHIFT)) {
			spin_unlock(&map->lock);
			goto uaccess;
		}
		spin_unlock(&map->lock);
		ret = vhost_metamap_payload_fill(map, piece[i].uaddr, true);
		if (ret == -EPERM || ret == -EBUSY)
			goto uaccess;
	}
	/* The writes: loads and stores until the unlock. */
	for (i = 0, at = 0; i < np; i++) {
		void *k = piece[i].k + offset_in_page(piece[i].uaddr);
		size_t end = at + piece[i].n, n;

		while (at < end) {
			if (at < hlen) {
				n = min(end, hlen) - at;
				memcpy(k, hdr + at, n);
			} else if (at < hlen + skip) {
				n = min(end, hlen + skip) - at;
			} else {
				n = end - at;
				copy(arg, at - hlen - skip, k, n);
			}
			k += n;
			at += n;
		}
	}
	spin_unlock(&map->lock);
	if (pl->credit < VHOST_METAMAP_FILL_COST * (pl->mask + 1))
		pl->credit++;
	iov_iter_advance(to, total);
	vhost_metamap_stat_inc(map, &map->stats.payload_fast);
	return total;
uaccess:
	if (unlikely(pl->grow))
		vhost_metamap_payload_grow(map);
	vhost_metamap_stat_inc(map, &map->stats.payload_fallback);
	return 0;
}

/**
 * __vhost_metamap_copy_to_iter - write a received frame into a buffer of
 *	the guest's through the payload map
 * @map: the queue's state, with a payload map
 * @hdr: @hlen bytes to write first (a virtio-net header)
 * @hlen: how many
 * @skip: bytes after them left as they are (the header's rest, which the
 *	caller writes: num_buffers)
 * @len: the frame's bytes, after those, written by @copy
 * @copy: writes the frame's bytes; called in the section, loads and stores
 * @arg: passed to @copy
 * @to: the buffer, an iterator over the owner's addresses
 *
 * All or nothing, in one section: every page the @hlen + @skip + @len
 * bytes fall in is held by the payload map, found for write (a page it
 * does not hold is found, outside the section, as far as the admission
 * lets), and then all of it is written.  No more than
 * VHOST_METAMAP_WRITE_PAGES pages: a larger buffer, or one spread over
 * more pieces, is for uaccess.  Stores to guest memory consume no poison,
 * so there is no memory-failure path here.
 *
 * Context: vq->mutex held; sleeps.
 * Return: @hlen + @skip + @len, @to advanced by as many; or 0, nothing
 * written and @to as it was: the caller writes the frame through uaccess.
 */
ssize_t __vhost_metamap_copy_to_iter(struct vhost_metamap *map,
				     const void *hdr, size_t hlen,
				     size_t skip, size_t len,
				     vhost_metamap_copy_t copy, void *arg,
				     struct iov_iter *to)
{
	struct vhost_metamap_payload *pl = map->payload;
	size_t total = hlen + skip + len, off = to->iov_offset;
	const struct iovec *iov = iter_iov(to);
	unsigned long uaddr;
	void *k;

	lockdep_assert_held(&map->vq->mutex);
	if (!pl || !iter_is_iovec(to) || !total ||
	    total > iov_iter_count(to))
		return 0;
	/*
	 * The common case, a buffer in one segment and one page, held: one
	 * lookup, the header, the frame.  Anything else takes the walk.
	 */
	uaddr = (unsigned long)iov[0].iov_base + off;
	if (unlikely(iov[0].iov_len - off < total ||
		     offset_in_page(uaddr) + total > PAGE_SIZE))
		goto walk;
	spin_lock(&map->lock);
	k = vhost_metamap_payload_page(pl, uaddr >> PAGE_SHIFT, true);
	if (unlikely(!k)) {
		spin_unlock(&map->lock);
		goto walk;
	}
	k += offset_in_page(uaddr);
	memcpy(k, hdr, hlen);
	copy(arg, 0, k + hlen + skip, len);
	spin_unlock(&map->lock);
	vhost_metamap_payload_fast(map, to, total);
	return total;
walk:
	return vhost_metamap_copy_to_iter_walk(map, hdr, hlen, skip, len, copy,
					       arg, to);
}
EXPORT_SYMBOL_GPL(__vhost_metamap_copy_to_iter);

/* Remember which ring a new read-ahead from avail index idx comes from. */
static void vhost_metamap_batch_start(struct vhost_metamap *map, u16 idx)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;

	b->n = 0;
	b->idx = idx;
	b->is_le = vq->is_le;
	b->num = vq->num;
	b->ring_desc = vq->desc;
	b->ring_avail = vq->avail;
}

/*
 * How many entries a read-ahead from avail index idx reads: those the
 * driver has published (below vq->avail_idx, which was read with the
 * barrier that orders these reads after it), at most VHOST_METAMAP_BATCH,
 * never more than the ring holds.
 */
static unsigned int vhost_metamap_batch_len(struct vhost_virtqueue *vq,
					    u16 idx, unsigned int num)
{
	return min3((unsigned int)(u16)(vq->avail_idx - idx),
		    (unsigned int)VHOST_METAMAP_BATCH, num);
}

/*
 * Whether the read-ahead counts the heads instead of reading them: in
 * order (VIRTIO_F_IN_ORDER) the driver makes descriptors available in ring
 * order, so the chains from vq->last_avail_idx on start at
 * vq->next_avail_head and follow each other in the table, once a head read
 * from the avail ring has said where they are.
 */
static bool vhost_metamap_in_order(struct vhost_virtqueue *vq)
{
	return vq->next_avail_head_known &&
	       vhost_has_feature(vq, VIRTIO_F_IN_ORDER);
}

/*
 * In order: entries k..k+run-1 of the batch hold the descriptors from
 * table index i on; each is the head of a chain.  Returns how many the
 * batch keeps: up to the first chain of more than one descriptor, whose
 * length only the walk of vhost_get_vq_desc() finds, and which ends the
 * batch.
 */
static __always_inline unsigned int
__vhost_metamap_in_order_run(struct vhost_metamap_batch *b, unsigned int k,
			     unsigned int run, unsigned int i, const bool le)
{
	__virtio16 next = __cpu_to_virtio16(le, VRING_DESC_F_NEXT);
	unsigned int h, d;

	for (h = 0; h < run; h++) {
		d = (i + h) & (b->num - 1);
		b->head[k + h] = __cpu_to_virtio16(le, d);
		b->didx[k + h] = d;
		if (b->desc[k + h].flags & next)
			return h + 1;
	}
	return run;
}

static unsigned int vhost_metamap_in_order_run(struct vhost_metamap *map,
					       unsigned int k,
					       unsigned int run,
					       unsigned int i)
{
	if (vhost_is_little_endian(map->vq))
		return __vhost_metamap_in_order_run(&map->batch, k, run, i,
						    true);
	return __vhost_metamap_in_order_run(&map->batch, k, run, i, false);
}

/*
 * Inside a section, in order: the descriptors from vq->next_avail_head on,
 * one copy per run up to a page boundary or the wrap, without reading the
 * avail ring.  n chains have at least n descriptors, so none is read
 * beyond what the driver published.  Returns the number of heads kept.
 */
static unsigned int vhost_metamap_fill_in_order(struct vhost_metamap *map,
						unsigned int n, bool *mc)
{
	const struct vhost_metamap_range *dr = &map->range[VHOST_METAMAP_DESC];
	unsigned long doff = offset_in_page(dr->uaddr), off;
	struct vhost_metamap_batch *b = &map->batch;
	unsigned int num = map->num, k = 0, run, kept, i, reads = 0;
	const struct vring_desc *d;

	i = map->vq->next_avail_head & (num - 1);
	while (k < n) {
		off = doff + i * sizeof(*d);
		run = min3(n - k, num - i, (unsigned int)
			   (PAGE_SIZE - offset_in_page(off)) / sizeof(*d));
		d = dr->kaddr[off >> PAGE_SHIFT] + offset_in_page(off);
		if (!vhost_metamap_read(map, &b->desc[k], d,
					(dr->uaddr & PAGE_MASK) + off,
					run * sizeof(*d), mc))
			break;
		reads += run;
		kept = vhost_metamap_in_order_run(map, k, run, i);
		k += kept;
		if (kept < run)
			break;
		i = (i + run) & (num - 1);
	}
	/* A poisoned descriptor: keep nothing. */
	b->n = map->valid ? k : 0;
	vhost_metamap_stat_add(map, &map->stats.fast, reads);
	return b->n;
}

/*
 * Inside a section: read the heads the driver has published from avail
 * index idx on, and the first descriptor of each head's chain, so that the
 * next chains need no section for either.  Every index is bounded by
 * map->num, the size the ranges were registered for.  Returns the number
 * of heads read.
 */
static __always_inline unsigned int
__vhost_metamap_fill(struct vhost_metamap *map, u16 idx, bool *mc,
		     const bool le)
{
	struct vhost_virtqueue *vq = map->vq;
	const struct vhost_metamap_range *ar = &map->range[VHOST_METAMAP_AVAIL];
	const struct vhost_metamap_range *dr = &map->range[VHOST_METAMAP_DESC];
	unsigned long doff = offset_in_page(dr->uaddr), off, uaddr;
	struct vhost_metamap_batch *b = &map->batch;
	unsigned int num = map->num, n, k, run, slot, i, h, pos, room, lim;
	unsigned int reads;
	const struct vring_desc *d;
	const __virtio16 *hp;
	bool down;

	lockdep_assert_held(&map->lock);
	vhost_metamap_batch_start(map, idx);
	n = vhost_metamap_batch_len(vq, idx, num);
	if (vhost_metamap_in_order(vq))
		return vhost_metamap_fill_in_order(map, n, mc);
	/* The heads: one copy per run up to a page boundary or the wrap. */
	for (k = 0; k < n; k += run) {
		slot = (u16)(idx + k) & (num - 1);
		uaddr = ar->uaddr + offsetof(struct vring_avail, ring) +
			slot * sizeof(*hp);
		run = min3(n - k, num - slot, (unsigned int)
			   (PAGE_SIZE - offset_in_page(uaddr)) / sizeof(*hp));
		hp = vhost_metamap_kaddr(map, VHOST_METAMAP_AVAIL, uaddr,
					 run * sizeof(*hp));
		if (!hp || !vhost_metamap_read(map, &b->head[k], hp, uaddr,
					       run * sizeof(*hp), mc))
			break;
	}
	n = map->valid ? k : 0;
	reads = n;
	/*
	 * Their descriptors, one copy per run of heads that name consecutive
	 * descriptors of one page, up or down (the second head says which):
	 * a driver that recycles its buffers through a free list (Linux's
	 * virtio_ring, LIFO) publishes descending runs, an in-order one
	 * ascending runs.  The table is aligned (arming refuses it
	 * otherwise), so a descriptor never crosses a page; i < num keeps it
	 * inside the pages kaddr[] covers, and the run is clamped to i's
	 * page, so that a mispredicted check cannot take the copy off it.
	 */
	for (k = 0; k < n && map->valid; k += run) {
		run = 1;
		i = __virtio16_to_cpu(le, b->head[k]);
		if (unlikely(i >= num)) {
			/* vhost_get_vq_desc() says what is wrong */
			b->didx[k] = VHOST_METAMAP_NO_DESC;
			continue;
		}
		off = doff + array_index_nospec(i, num) * sizeof(*d);
		pos = offset_in_page(off) / sizeof(*d);
		h = k + 1 < n ? __virtio16_to_cpu(le, b->head[k + 1]) : i;
		down = h + 1 == i;
		if (h == i + 1) {
			room = PAGE_SIZE / sizeof(*d) - pos;	/* i and after */
			lim = num - i;
		} else if (down) {
			room = pos + 1;				/* i and before */
			lim = i + 1;
		} else {
			room = 1;
			lim = 1;
		}
		while (k + run < n && run < room && run < lim &&
		       __virtio16_to_cpu(le, b->head[k + run]) ==
		       (down ? i - run : i + run))
			run++;
		run = array_index_nospec(run - 1, room) + 1;
		if (down)
			off -= (run - 1) * sizeof(*d);
		d = dr->kaddr[off >> PAGE_SHIFT] + offset_in_page(off);
		if (!vhost_metamap_read(map, &b->desc[k], d,
					(dr->uaddr & PAGE_MASK) + off,
					run * sizeof(*d), mc))
			break;
		reads += run;
		if (down) {
			struct vring_desc *lo = &b->desc[k];
			struct vring_desc *hi = lo + run - 1;

			for (; lo < hi; lo++, hi--)
				swap(*lo, *hi);
			for (h = 0; h < run; h++)
				b->didx[k + h] = i - h;
		} else {
			for (h = 0; h < run; h++)
				b->didx[k + h] = i + h;
		}
	}
	/*
	 * A poisoned head or descriptor invalidated the map: nothing of this
	 * read-ahead is kept.
	 */
	b->n = map->valid ? n : 0;
	vhost_metamap_stat_add(map, &map->stats.fast, reads);
	return b->n;
}

/* One copy per byte order, so that the loops convert no entry at run time. */
static unsigned int vhost_metamap_fill(struct vhost_metamap *map, u16 idx,
				       bool *mc)
{
	if (vhost_is_little_endian(map->vq))
		return __vhost_metamap_fill(map, idx, mc, true);
	return __vhost_metamap_fill(map, idx, mc, false);
}

/*
 * Whether the read-ahead may go through uaccess: the ring's addresses are
 * the owner's, not I/O virtual addresses of a device IOTLB, and the table
 * is aligned for 64-bit loads (a driver that does not align it, against
 * virtio, is served by the per-access path).  The rings passed
 * access_ok() when they were set (vq_access_ok()), and every entry read
 * lies inside them.  vq->mutex.
 */
static bool vhost_metamap_user_ok(const struct vhost_virtqueue *vq)
{
	return vq->desc && vq->avail && vq->num &&
	       IS_ALIGNED((unsigned long)vq->desc, sizeof(u64)) &&
	       !vq->iotlb && !READ_ONCE(vq->dev->iotlb);
}

/*
 * Heads from avail index idx on, n at most: one copy up to the ring's end
 * and one from its start, with no speculation barrier (the ring passed
 * access_ok() and every slot is masked into it); how many were read
 * before a fault, if any.
 */
static noinline unsigned int vhost_metamap_user_heads(struct vhost_metamap *map,
						      u16 idx, unsigned int n)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;
	const __virtio16 __user *ring = vq->avail->ring;
	unsigned int num = vq->num, k, run, slot, left;

	if (!access_ok(ring, num * sizeof(*ring)))
		return 0;
	for (k = 0; k < n; k += run) {
		slot = (u16)(idx + k) & (num - 1);
		run = min(n - k, num - slot);
		left = __copy_from_user(&b->head[k], &ring[slot],
					run * sizeof(*ring));
		if (unlikely(left))
			return k + (run * sizeof(*ring) - left) / sizeof(*ring);
	}
	return n;
}

/*
 * The first descriptor of the chain of each of the first n heads of the
 * batch, in one uaccess section (masked user pointers where the
 * architecture has them, so no speculation barrier either; open-coded,
 * as objtool wants to see it); how many heads are done (a fault stops
 * at the head whose descriptor it hit).  In order the heads are not in
 * the batch yet: they are the table entries from vq->next_avail_head on,
 * each the head of a chain, up to the first chain of several descriptors,
 * which ends the batch (vhost_metamap_in_order_run()).  A descriptor is
 * two aligned 64-bit words (vhost_metamap_user_ok() wants the table
 * aligned, as virtio does), copied as they are.
 */
static __always_inline unsigned int
__vhost_metamap_user_descs(struct vhost_metamap *map, unsigned int n,
			   const bool in_order, const bool le)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;
	/*
	 * The batch through pointers, not its arrays: UBSAN's bounds check
	 * of an array index calls a handler, which may not run with user
	 * access enabled (objtool).  k < n <= VHOST_METAMAP_BATCH
	 * (vhost_metamap_batch_len()).
	 */
	__virtio16 *head = b->head;
	struct vring_desc *desc = b->desc;
	u16 *didx = b->didx;
	const __virtio16 next = __cpu_to_virtio16(le, VRING_DESC_F_NEXT);
	const struct vring_desc __user *table = vq->desc;
	unsigned int num = vq->num, first = vq->next_avail_head, k, i;
	const u64 __user *u;
	u64 *d;

	if (!access_ok(table, num * sizeof(*table)))
		return 0;
	if (can_do_masked_user_access())
		table = masked_user_access_begin(table);
	else if (!user_read_access_begin(table, num * sizeof(*table)))
		return 0;
	for (k = 0; k < n; k++) {
		if (in_order) {
			i = (first + k) & (num - 1);
			head[k] = __cpu_to_virtio16(le, i);
		} else {
			i = __virtio16_to_cpu(le, head[k]);
			if (unlikely(i >= num)) {
				/* vhost_get_vq_desc() says what is wrong */
				didx[k] = VHOST_METAMAP_NO_DESC;
				continue;
			}
		}
		u = (const u64 __user *)&table[array_index_nospec(i, num)];
		d = (u64 *)&desc[k];
		unsafe_get_user(d[0], &u[0], fault);
		unsafe_get_user(d[1], &u[1], fault);
		didx[k] = i;
		if (in_order && (desc[k].flags & next))
			n = k + 1;	/* the last this batch keeps */
	}
	user_read_access_end();
	return n;
fault:
	user_read_access_end();
	return k;
}

/*
 * One copy of the section each, so that the plain one tests no order, and
 * one per byte order, so that the loop converts no entry at run time.
 */
static noinline unsigned int vhost_metamap_user_descs(struct vhost_metamap *map,
						      unsigned int n)
{
	if (vhost_is_little_endian(map->vq))
		return __vhost_metamap_user_descs(map, n, false, true);
	return __vhost_metamap_user_descs(map, n, false, false);
}

static noinline unsigned int
vhost_metamap_user_descs_in_order(struct vhost_metamap *map, unsigned int n)
{
	if (vhost_is_little_endian(map->vq))
		return __vhost_metamap_user_descs(map, n, true, true);
	return __vhost_metamap_user_descs(map, n, true, false);
}

/*
 * The read-ahead through uaccess: the heads and descriptors
 * vhost_metamap_fill() reads through the map, in one copy for the heads
 * (two at the ring's wrap; none in order: they are counted) and one
 * uaccess section for their descriptors instead of one per access.  A fault ends it: what was read
 * before stays, and the access that faulted is made again by the
 * per-access path, which reports it.  The ring passed access_ok() when it
 * was set (vq_access_ok()) and every entry read lies inside it.  Returns
 * the number of heads read.
 */
static unsigned int vhost_metamap_fill_user(struct vhost_metamap *map, u16 idx)
{
	struct vhost_virtqueue *vq = map->vq;
	unsigned int n;

	might_fault();
	vhost_metamap_batch_start(map, idx);
	n = vhost_metamap_batch_len(vq, idx, vq->num);
	if (vhost_metamap_in_order(vq)) {
		n = vhost_metamap_user_descs_in_order(map, n);
	} else {
		n = vhost_metamap_user_heads(map, idx, n);
		if (n)
			n = vhost_metamap_user_descs(map, n);
	}
	map->batch.n = n;
	if (n)		/* one that faulted before reading anything is none */
		vhost_metamap_stat_inc(map, &map->stats.uaccess_fills);
	return n;
}

/*
 * Entry k of the batch, if it may be served: below vq->avail_idx, read
 * from the ring as it is now, and no IOTLB since.  A driver that took
 * entries back (lowered its avail index) loses those read ahead beyond it
 * for good, so that what it publishes there again is read again.
 */
static bool vhost_metamap_batched(struct vhost_metamap *map, u16 k)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;
	u16 published = vq->avail_idx - b->idx;

	if (published < b->n)
		b->n = published;
	return k < b->n && b->is_le == vq->is_le && b->num == vq->num &&
	       b->ring_desc == vq->desc && b->ring_avail == vq->avail &&
	       !vq->iotlb && !READ_ONCE(vq->dev->iotlb);
}

/*
 * A new read-ahead from avail index idx: through the map in mode map if it
 * can serve, through uaccess otherwise.  The miss that asks for it
 * empties the batch first, so that an entry read through the per-access
 * path is never followed by one read ahead before it, in this lap or
 * 65536 chains ago.  Returns the entries read, or -EIO if the map found
 * poison (nothing is read through uaccess then).
 */
static int vhost_metamap_refill(struct vhost_metamap *map, u16 idx)
{
	struct vhost_metamap_batch *b = &map->batch;
	bool mc;

	b->n = 0;
	if (map->mode == VHOST_METAMAP_MODE_MAP &&
	    vhost_metamap_section(map, true, &mc)) {
		vhost_metamap_fill(map, idx, &mc);
		spin_unlock(&map->lock);
		if (vhost_metamap_after(map, true) < 0)
			return -EIO;
		if (!b->n)
			vhost_metamap_stat_inc(map, &map->stats.fallback);
	}
	if (!b->n && vhost_metamap_user_ok(map->vq))
		vhost_metamap_fill_user(map, idx);
	return b->n;
}

/*
 * The head at avail index idx: from the read-ahead, filled from idx on if
 * it does not hold it.
 */
int __vhost_metamap_get_head(struct vhost_metamap *map, u16 idx,
			     __virtio16 *head)
{
	struct vhost_metamap_batch *b = &map->batch;
	u16 k = idx - b->idx;
	int ret;

	if (!vhost_metamap_batched(map, k)) {
		ret = vhost_metamap_refill(map, idx);
		if (ret <= 0)
			return ret;
		k = 0;
	}
	*head = b->head[array_index_nospec(k, b->n)];
	return 1;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_get_head);

/*
 * Descriptor i, at uaddr in the table: from the read-ahead if it is the
 * first descriptor of the chain at vq->last_avail_idx (in order, the
 * read-ahead is filled for the chain that starts at i when it does not
 * hold it), through the map in mode map otherwise.
 */
int __vhost_metamap_get_desc(struct vhost_metamap *map, struct vring_desc *d,
			     unsigned int i,
			     const struct vring_desc __user *uaddr)
{
	struct vhost_virtqueue *vq = map->vq;
	struct vhost_metamap_batch *b = &map->batch;
	u16 k = vq->last_avail_idx - b->idx;
	const struct vring_desc *kd;
	bool done, mc;

	if (!vhost_metamap_batched(map, k) && vhost_metamap_in_order(vq) &&
	    i == (vq->next_avail_head & (vq->num - 1))) {
		if (vhost_metamap_refill(map, vq->last_avail_idx) < 0)
			return -EIO;
		k = 0;
	}
	if (vhost_metamap_batched(map, k)) {
		k = array_index_nospec(k, b->n);
		if (b->didx[k] == i) {
			*d = b->desc[k];
			vhost_metamap_stat_inc(map, &map->stats.batched);
			return 1;
		}
	}
	if (map->mode != VHOST_METAMAP_MODE_MAP ||
	    !vhost_metamap_section(map, false, &mc))
		return 0;
	kd = vhost_metamap_kaddr(map, VHOST_METAMAP_DESC, (unsigned long)uaddr,
				 sizeof(*d));
	done = kd && vhost_metamap_read(map, d, kd, (unsigned long)uaddr,
					sizeof(*d), &mc);
	vhost_metamap_section_end(map, done);
	return vhost_metamap_after(map, done);
}
EXPORT_SYMBOL_GPL(__vhost_metamap_get_desc);

/*
 * Write count used entries from u on, as copy_to_user() would: one copy per
 * page the entries span (an 8-byte entry, 4-byte aligned, may straddle two).
 * The guest reads none of them before the used idx that follows.
 */
int __vhost_metamap_put_used(struct vhost_metamap *map,
			     const struct vring_used_elem *heads,
			     struct vring_used_elem __user *u,
			     unsigned int count)
{
	unsigned long uaddr = (unsigned long)u;
	size_t left = count * sizeof(*heads);
	const void *src = heads;
	size_t chunk;
	void *k;
	bool mc;

	if (!vhost_metamap_section(map, true, &mc))
		return 0;
	for (; left; left -= chunk, uaddr += chunk, src += chunk) {
		chunk = min_t(size_t, left, PAGE_SIZE - offset_in_page(uaddr));
		k = vhost_metamap_kaddr(map, VHOST_METAMAP_USED, uaddr, chunk);
		if (!k)
			break;
		memcpy(k, src, chunk);
	}
	/* Entries written before a failure are rewritten by uaccess. */
	vhost_metamap_section_end(map, !left);
	return !left;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_put_used);

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
