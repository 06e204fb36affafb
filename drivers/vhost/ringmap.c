// SPDX-License-Identifier: GPL-2.0
/*
 * vhost metadata direct map: the ring map.
 *
 * The three parts of a split ring (descriptor table, avail ring, used ring)
 * are each watched by an mmu_interval_notifier on the owner's mm.  Building
 * the map faults the pages in with GUP, records their kernel addresses and
 * drops the page references: like KVM's gfn_to_pfn_cache, it is the notifier,
 * not a reference, that keeps the map coherent.  Every mm event that touches
 * a ring page (unmap, migration, reclaim, KSM, THP, COW on fork, mprotect,
 * soft-dirty, memory failure, the OOM reaper) runs the callback first, and
 * the callback makes the map invalid under map->ring->lock; readers hold that lock
 * around every access to mapped memory, so once the callback has returned
 * nobody touches the old pages.  While the map is invalid, accesses go
 * through uaccess as before, and the next batch rebuilds it.
 *
 * Three rules keep that safe whatever the owner, the guest or the mm do:
 *
 * - A section (map->ring->lock held) is opened and closed in this file, around
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
 * Lock order: vq->mutex -> mmap_lock (GUP, VMA checks) -> map->ring->lock.
 * The callback takes only map->ring->lock; it never sleeps and never waits for an
 * RCU grace period.  See Documentation/networking/vhost-metamap.rst.
 */
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/userfaultfd_k.h>

#include "metamap_internal.h"

/* vhost.c passes its VHOST_ADDR_* access type as the part. */
static_assert((int)VHOST_METAMAP_DESC == (int)VHOST_ADDR_DESC);
static_assert((int)VHOST_METAMAP_AVAIL == (int)VHOST_ADDR_AVAIL);
static_assert((int)VHOST_METAMAP_USED == (int)VHOST_ADDR_USED);

/* Make the map invalid; map->ring->lock held. */
static void __vhost_metamap_invalidate(struct vhost_metamap *map)
{
	void *safe = vhost_metamap_safe_page();
	unsigned int i;
	int p;

	lockdep_assert_held(&map->ring->lock);
	if (!map->ring->valid)
		return;		/* kaddr[] are at the safe page already */
	WRITE_ONCE(map->ring->valid, false);
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
		for (i = 0; i < map->ring->range[p].npages; i++)
			map->ring->range[p].kaddr[i] = safe;
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
	 * Readers hold map->ring->lock only around loads and stores of mapped ring
	 * memory: at worst a copy of the whole used ring (vhost_add_used_n()
	 * of every entry, num * 8 bytes, 256 KiB at num = 32768) or one
	 * read-ahead (64 heads and 64 descriptors).  That and the stores
	 * below (one per ring page) bound the wait here to microseconds, so
	 * non-blockable invalidations (the OOM reaper) are served like any
	 * other and this never answers false.
	 */
	t0 = ktime_get_mono_fast_ns();
	guard(spinlock)(&map->ring->lock);
	mmu_interval_set_seq(mni, cur_seq);
	__vhost_metamap_invalidate(map);
	WRITE_ONCE(map->stats.invalidations, map->stats.invalidations + 1);
	vhost_metamap_callback_took(t0);
	return true;
}

static const struct mmu_interval_notifier_ops vhost_metamap_ops = {
	.invalidate = vhost_metamap_invalidate,
};

/*
 * Forget the ring's ranges: the map made invalid, the notifiers removed;
 * nothing to do for a queue that never was in mode map.  Sleeps; no
 * reader may run (vq->mutex or stopped vq).
 */
void vhost_metamap_ring_release(struct vhost_metamap *map)
{
	int p;

	if (!map->ring)
		return;
	scoped_guard(spinlock, &map->ring->lock)
		__vhost_metamap_invalidate(map);
	map->ring->armed = false;
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
		struct vhost_metamap_range *r = &map->ring->range[p];

		/* Waits for running callbacks: never under map->ring->lock. */
		if (r->registered)
			mmu_interval_notifier_remove(&r->notifier);
		r->registered = false;
		kvfree(r->kaddr);
		r->kaddr = NULL;
		r->npages = 0;
	}
	map->ring->retry_at = jiffies;
}

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
 * map->ring->features).  Checked on every access and section; vq->mutex.
 */
bool vhost_metamap_current(const struct vhost_metamap *map)
{
	const struct vhost_virtqueue *vq = map->vq;
	const struct vhost_metamap_range *r = map->ring->range;

	return map->ring->armed && vq->num == map->ring->num &&
	       vq->acked_features == map->ring->features &&
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
		refuse = vhost_metamap_refuse_range(mm, &map->ring->range[p]);
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
void vhost_metamap_arm(struct vhost_virtqueue *vq)
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
		struct vhost_metamap_range *r = &map->ring->range[p];

		r->uaddr = vhost_metamap_part_uaddr(vq, p);
		r->len = vhost_metamap_part_len(vq, p);
	}
	/* The map serves only aligned descriptors: none crosses a page. */
	if (!IS_ALIGNED(map->ring->range[VHOST_METAMAP_DESC].uaddr,
			VHOST_METAMAP_DESC_ALIGN) || vhost_metamap_refuse(map)) {
		vhost_metamap_stat_inc(map, &map->stats.refused);
		goto out;
	}
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
		struct vhost_metamap_range *r = &map->ring->range[p];
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
	map->ring->num = vq->num;
	map->ring->features = vq->acked_features;
	map->ring->armed = true;
	map->ring->retry_at = jiffies;
	goto out;
fail:
	vhost_metamap_stat_inc(map, &map->stats.remap_failures);
	vhost_metamap_release(vq);
out:
	mmput(vq->dev->mm);
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
 * map->ring->lock if no invalidation ran meanwhile.  The used ring is faulted for
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
		total += map->ring->range[p].npages;
	}
	for (tries = 0; tries < VHOST_METAMAP_BUILD_TRIES; tries++) {
		for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
			ret = vhost_metamap_fault(map, &map->ring->range[p],
						  p == VHOST_METAMAP_USED,
						  pages + off[p], &seq[p]);
			if (ret) {
				release_pages(pages, off[p]);
				return ret;
			}
		}
		spin_lock(&map->ring->lock);
		for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
			if (mmu_interval_read_retry(&map->ring->range[p].notifier,
						    seq[p]))
				break;
		if (p == VHOST_METAMAP_NPARTS) {
			for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
				for (i = 0; i < map->ring->range[p].npages; i++)
					map->ring->range[p].kaddr[i] =
						page_address(pages[off[p] + i]);
			WRITE_ONCE(map->ring->valid, true);
		}
		spin_unlock(&map->ring->lock);
		release_pages(pages, total);
		if (READ_ONCE(map->ring->valid))
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
	if (time_before(jiffies, map->ring->retry_at))
		return false;
	total = map->ring->range[0].npages + map->ring->range[1].npages +
		map->ring->range[2].npages;
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
	map->ring->retry_at = jiffies + (ret == -EBUSY ? 1 :
				   max(1UL, VHOST_METAMAP_RETRY_DELAY));
	return false;
}

/*
 * Open a section: take map->ring->lock if the queue may use the map and it is
 * valid (rebuilt first if @refresh and it is not); false, counted as a
 * fallback, if the caller must use uaccess.  What runs until
 * spin_unlock(&map->ring->lock) is loads and stores of ring memory.  *mc says
 * whether the section's first read reports poison (fault injection).
 */
static bool vhost_metamap_section(struct vhost_metamap *map, bool refresh,
				  bool *mc)
{
	lockdep_assert_held(&map->vq->mutex);
	if (!vhost_metamap_current(map))
		goto fallback;
	if (unlikely(!READ_ONCE(map->ring->valid)) &&
	    (!refresh || !vhost_metamap_refresh(map)))
		goto fallback;
	*mc = vhost_metamap_inject_mc();
	spin_lock(&map->ring->lock);
	if (likely(map->ring->valid)) {
		vhost_metamap_stat_inc(map, &map->stats.sections);
		return true;
	}
	spin_unlock(&map->ring->lock);
fallback:
	vhost_metamap_stat_inc(map, &map->stats.fallback);
	return false;
}

/*
 * Kernel address of [uaddr, uaddr + size) in part p, or NULL when that is
 * outside the part or crosses a page.  uaddr derives from guest-controlled
 * indices and this path has no uaccess speculation barrier, so the page
 * index and the offset in the page are clamped with array_index_nospec().
 * map->ring->lock held.
 */
static void *vhost_metamap_kaddr(const struct vhost_metamap *map, int p,
				 unsigned long uaddr, size_t size)
{
	const struct vhost_metamap_range *r = &map->ring->range[p];
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
	map->ring->poison_pfn = page_to_pfn(virt_to_page(src + len - left));
	map->ring->poison_uaddr = (uaddr + len - left) & PAGE_MASK;
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
	if (likely(!map->ring->poison_pfn) || !map->quarantined)
		return;
	memory_failure_queue(map->ring->poison_pfn, 0);
	map->ring->poison_check_at = jiffies;
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
	if (vhost_metamap_poison_gone(map, map->ring->poison_uaddr, map->ring->poison_pfn,
				      &map->ring->poison_check_at)) {
		WRITE_ONCE(map->quarantined, false);
		vhost_metamap_engage(map->vq, map);
		map->ring->poison_pfn = 0;
		return false;
	}
	vhost_metamap_stat_inc(map, &map->stats.poisoned);
	return true;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_poisoned);

/* End a section; done: the access was made through the map. */
static void vhost_metamap_section_end(struct vhost_metamap *map, bool done)
{
	spin_unlock(&map->ring->lock);
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
 * Inside a section: @run descriptors of the table @dr, from byte @off of its
 * pages on (the offset in its first page included), into the batch from
 * entry @k, in one read; false if it hit poison.
 */
static __always_inline bool
vhost_metamap_read_descs(struct vhost_metamap *map,
			 const struct vhost_metamap_range *dr, unsigned int k,
			 unsigned long off, unsigned int run, bool *mc)
{
	const struct vring_desc *d = dr->kaddr[off >> PAGE_SHIFT] +
				     offset_in_page(off);

	return vhost_metamap_read(map, &map->batch.desc[k], d,
				  (dr->uaddr & PAGE_MASK) + off,
				  run * sizeof(*d), mc);
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
	const struct vhost_metamap_range *dr = &map->ring->range[VHOST_METAMAP_DESC];
	unsigned long doff = offset_in_page(dr->uaddr), off;
	struct vhost_metamap_batch *b = &map->batch;
	unsigned int num = map->ring->num, k = 0, run, kept, i, reads = 0;
	const struct vring_desc *d;

	i = map->vq->next_avail_head & (num - 1);
	while (k < n) {
		off = doff + i * sizeof(*d);
		run = min3(n - k, num - i, (unsigned int)
			   (PAGE_SIZE - offset_in_page(off)) / sizeof(*d));
		if (!vhost_metamap_read_descs(map, dr, k, off, run, mc))
			break;
		reads += run;
		kept = vhost_metamap_in_order_run(map, k, run, i);
		k += kept;
		if (kept < run)
			break;
		i = (i + run) & (num - 1);
	}
	/* A poisoned descriptor: keep nothing. */
	b->n = map->ring->valid ? k : 0;
	vhost_metamap_stat_add(map, &map->stats.fast, reads);
	return b->n;
}

/*
 * Inside a section: read the heads the driver has published from avail
 * index idx on, and the first descriptor of each head's chain, so that the
 * next chains need no section for either.  Every index is bounded by
 * map->ring->num, the size the ranges were registered for.  Returns the number
 * of heads read.
 */
static __always_inline unsigned int
__vhost_metamap_fill(struct vhost_metamap *map, u16 idx, bool *mc,
		     const bool le)
{
	struct vhost_virtqueue *vq = map->vq;
	const struct vhost_metamap_range *ar = &map->ring->range[VHOST_METAMAP_AVAIL];
	const struct vhost_metamap_range *dr = &map->ring->range[VHOST_METAMAP_DESC];
	unsigned long doff = offset_in_page(dr->uaddr), off, uaddr;
	struct vhost_metamap_batch *b = &map->batch;
	unsigned int num = map->ring->num, n, k, run, slot, i, h, pos, room, lim;
	unsigned int reads;
	const struct vring_desc *d;
	const __virtio16 *hp;
	bool down;

	lockdep_assert_held(&map->ring->lock);
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
	n = map->ring->valid ? k : 0;
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
	for (k = 0; k < n && map->ring->valid; k += run) {
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
		if (!vhost_metamap_read_descs(map, dr, k, off, run, mc))
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
	b->n = map->ring->valid ? n : 0;
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

/**
 * vhost_metamap_ring_fill - read ahead through the ring map
 * @map: the queue's state, in mode map
 * @idx: the avail index to read from
 *
 * The read-ahead of readahead.c, through the map in one section when it
 * can serve (rebuilt first if an invalidation made it invalid).
 *
 * Context: vq->mutex held; sleeps.
 * Return: the entries read, 0 if the map could not serve (the caller reads
 * through uaccess), -EIO if the map found poison.
 */
int vhost_metamap_ring_fill(struct vhost_metamap *map, u16 idx)
{
	struct vhost_metamap_batch *b = &map->batch;
	bool mc;

	if (!vhost_metamap_section(map, true, &mc))
		return 0;
	vhost_metamap_fill(map, idx, &mc);
	spin_unlock(&map->ring->lock);
	if (vhost_metamap_after(map, true) < 0)
		return -EIO;
	if (!b->n)
		vhost_metamap_stat_inc(map, &map->stats.fallback);
	return b->n;
}

/**
 * vhost_metamap_ring_get_desc - read a descriptor through the ring map
 * @map: the queue's state, in mode map
 * @d: where to
 * @uaddr: the descriptor's address in the table
 *
 * Context: vq->mutex held.
 * Return: 1 if read, 0 if the caller must use uaccess, -EIO if the
 * descriptor's page holds poison.
 */
int vhost_metamap_ring_get_desc(struct vhost_metamap *map,
				struct vring_desc *d,
				const struct vring_desc __user *uaddr)
{
	const struct vring_desc *kd;
	bool done, mc;

	if (!vhost_metamap_section(map, false, &mc))
		return 0;
	kd = vhost_metamap_kaddr(map, VHOST_METAMAP_DESC, (unsigned long)uaddr,
				 sizeof(*d));
	done = kd && vhost_metamap_read(map, d, kd, (unsigned long)uaddr,
					sizeof(*d), &mc);
	vhost_metamap_section_end(map, done);
	return vhost_metamap_after(map, done);
}

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
