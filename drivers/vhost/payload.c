// SPDX-License-Identifier: GPL-2.0
/*
 * vhost metadata direct map: the payload map.
 *
 * In mode map, vhost-net copies the buffers its descriptors point to (TX
 * frames read, received frames written) through the kernel addresses of
 * the guest memory's pages instead of uaccess.  Each distinct range of the
 * device's memory table is watched by an mmu_interval_notifier of the
 * queue's; a table of page translations, direct-mapped by the owner's
 * page number, holds what GUP found, without a page reference: a callback
 * forgets the entries of the pages it covers under map->ring->lock, which every
 * copy through the map holds, so that no copy touches a page after its
 * callback has returned.  A page the table does not hold is found (GUP)
 * outside the lock, and kept only if no invalidation of its range began
 * meanwhile; one the map may not serve is copied through uaccess.
 *
 * Owns struct vhost_metamap_payload (metamap.h): armed from ioctl context
 * (mode, memory table, ring configuration), released with the queue's
 * state.  See Documentation/networking/vhost-metamap.rst, "Payload
 * map".
 */
#include <linux/mm.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/sort.h>
#include <linux/timekeeping.h>
#include <linux/uaccess.h>
#include <linux/uio.h>
#include <linux/userfaultfd_k.h>

#include "metamap_internal.h"

/*
 * Forget the entries of the owner's pages @first to @last: those in the
 * table at their own slots.  A walk of the pages or of the table,
 * whichever is shorter: VHOST_METAMAP_PAGES_MAX loads at most.  Loads and
 * stores; map->ring->lock held.
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
	guard(spinlock)(&map->ring->lock);
	mmu_interval_set_seq(mni, cur_seq);
	pl = map->payload;
	if (pl && start < end)
		vhost_metamap_payload_forget(pl, start >> PAGE_SHIFT,
					     (end - 1) >> PAGE_SHIFT);
	WRITE_ONCE(map->stats.payload_invalidations,
		   map->stats.payload_invalidations + 1);
	vhost_metamap_callback_took(t0);
	return true;
}

static const struct mmu_interval_notifier_ops vhost_metamap_payload_ops = {
	.invalidate = vhost_metamap_payload_invalidate,
};

/*
 * Forget the payload map: unregister the regions' notifiers (which waits
 * for running callbacks: never under map->ring->lock) and free it.  Sleeps;
 * vq->mutex held or the queue stopped.
 */
void vhost_metamap_payload_release(struct vhost_metamap *map)
{
	struct vhost_metamap_payload *pl = map->payload;
	unsigned int i;

	if (!pl)
		return;
	scoped_guard(spinlock, &map->ring->lock)
		WRITE_ONCE(map->payload, NULL);
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
	scoped_guard(spinlock, &map->ring->lock) {
		for (i = 0; i <= pl->mask; i++)
			if (old[i].upfn != ~0UL)
				page[old[i].upfn & (n - 1)] = old[i];
		pl->page = page;
		pl->mask = n - 1;
	}
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
void vhost_metamap_payload_arm(struct vhost_virtqueue *vq)
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
	scoped_guard(spinlock, &map->ring->lock)
		WRITE_ONCE(map->payload, pl);
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

/*
 * Find the page at the owner's address @uaddr for the payload map: GUP it
 * (for write if @write), keep its kernel address unless an invalidation
 * of its region began since the notifier's sequence was read (under
 * map->ring->lock, as the callback moves it), drop the reference.  Refused, as the
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
	if (unlikely(page_to_pfn(page) == map->ring->payload_poison_pfn)) {
		put_page(page);
		goto refused;
	}
	spin_lock(&map->ring->lock);
	if (mmu_interval_read_retry(&r->notifier, seq)) {
		spin_unlock(&map->ring->lock);
		put_page(page);
		return -EAGAIN;
	}
	e = &pl->page[(uaddr >> PAGE_SHIFT) & pl->mask];
	e->upfn = uaddr >> PAGE_SHIFT;
	e->kaddr = page_address(page);
	e->write = write;
	spin_unlock(&map->ring->lock);
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
 * map->ring->lock held.
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
 * map->ring->lock held.
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

	scoped_guard(spinlock, &map->ring->lock) {
		for (i = 0; i <= pl->mask; i++)
			if (pl->page[i].kaddr == kaddr)
				pl->page[i].upfn = ~0UL;
	}
	map->ring->payload_poison_pfn = pfn;
	map->ring->payload_poison_upfn = upfn;
	map->ring->payload_poison_check_at = jiffies;
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
	unsigned long upfn = map->ring->payload_poison_upfn, start, seg;
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
				      map->ring->payload_poison_pfn,
				      &map->ring->payload_poison_check_at)) {
		map->ring->payload_poison_upfn = 0;
		map->ring->payload_poison_pfn = 0;
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
	if (unlikely(map->ring->payload_poison_upfn) &&
	    vhost_metamap_payload_poisoned(map, from, total))
		return -EIO;
	t = 0;
	mc = vhost_metamap_inject_payload_mc();
	spin_lock(&map->ring->lock);
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
				spin_unlock(&map->ring->lock);
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
			spin_unlock(&map->ring->lock);
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
				spin_unlock(&map->ring->lock);
				goto out;
			}
			admitted = false;
			spin_unlock(&map->ring->lock);
			ret = vhost_metamap_payload_fill(map, uaddr, false);
			if (ret == -EPERM || ret == -EBUSY)
				goto out;
			spin_lock(&map->ring->lock);
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
	spin_unlock(&map->ring->lock);
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
		spin_lock(&map->ring->lock);
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
			spin_unlock(&map->ring->lock);
			goto uaccess;
		}
		spin_unlock(&map->ring->lock);
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
	spin_unlock(&map->ring->lock);
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
	spin_lock(&map->ring->lock);
	k = vhost_metamap_payload_page(pl, uaddr >> PAGE_SHIFT, true);
	if (unlikely(!k)) {
		spin_unlock(&map->ring->lock);
		goto walk;
	}
	k += offset_in_page(uaddr);
	memcpy(k, hdr, hlen);
	copy(arg, 0, k + hlen + skip, len);
	spin_unlock(&map->ring->lock);
	vhost_metamap_payload_fast(map, to, total);
	return total;
walk:
	return vhost_metamap_copy_to_iter_walk(map, hdr, hlen, skip, len, copy,
					       arg, to);
}
EXPORT_SYMBOL_GPL(__vhost_metamap_copy_to_iter);
