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
 * soft-dirty, the OOM reaper) runs the callback first, and the callback makes
 * the map invalid under map->lock; readers hold that lock around every access
 * to mapped memory, so once the callback has returned nobody touches the old
 * pages.  While the map is invalid, accesses go through uaccess as before,
 * and the next batch rebuilds it.
 *
 * Lock order: vq->mutex -> mmap_lock (GUP, notifier insert) -> map->lock.
 * The callback takes only map->lock; it never sleeps and never waits for an
 * RCU grace period.  See Documentation/networking/vhost-metamap.rst.
 */
#include <linux/cacheinfo.h>
#include <linux/jiffies.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "vhost.h"

static bool vhost_metamap_default = true;
module_param_named(enable, vhost_metamap_default, bool, 0644);
MODULE_PARM_DESC(enable,
		 "Access virtqueue metadata through a kernel mapping on new vhost-net devices (default: on)");

/* A build that lost the race this many times in a row gives up until later. */
#define VHOST_METAMAP_BUILD_TRIES	8
#define VHOST_METAMAP_RETRY_DELAY	msecs_to_jiffies(10)

/* vhost.c passes its VHOST_ADDR_* access type as the part. */
static_assert((int)VHOST_METAMAP_DESC == (int)VHOST_ADDR_DESC);
static_assert((int)VHOST_METAMAP_AVAIL == (int)VHOST_ADDR_AVAIL);
static_assert((int)VHOST_METAMAP_USED == (int)VHOST_ADDR_USED);

static void vhost_metamap_stat_inc(u64 *counter)
{
	WRITE_ONCE(*counter, *counter + 1);
}

static bool vhost_metamap_invalidate(struct mmu_interval_notifier *mni,
				     const struct mmu_notifier_range *range,
				     unsigned long cur_seq)
{
	struct vhost_metamap_range *r =
		container_of(mni, struct vhost_metamap_range, notifier);
	struct vhost_metamap *map = r->map;

	/*
	 * Readers hold map->lock only around loads and stores to mapped
	 * memory, which neither fault nor sleep: spinning here is bounded, so
	 * non-blockable invalidations (the OOM reaper) are served like any
	 * other and this never answers false.
	 */
	spin_lock(&map->lock);
	mmu_interval_set_seq(mni, cur_seq);
	WRITE_ONCE(map->valid, false);
	vhost_metamap_stat_inc(&map->stats.invalidations);
	spin_unlock(&map->lock);
	return true;
}

static const struct mmu_interval_notifier_ops vhost_metamap_ops = {
	.invalidate = vhost_metamap_invalidate,
};

void vhost_metamap_init(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = &vq->metamap;
	int p;

	memset(map, 0, sizeof(*map));
	spin_lock_init(&map->lock);
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
		map->range[p].map = map;
}
EXPORT_SYMBOL_GPL(vhost_metamap_init);

/* Forget the ranges.  Sleeps; no reader may run (vq->mutex or stopped vq). */
void vhost_metamap_release(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = &vq->metamap;
	int p;

	WARN_ON_ONCE(map->held);
	spin_lock(&map->lock);
	WRITE_ONCE(map->valid, false);
	spin_unlock(&map->lock);
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
	map->retry_at = jiffies;
}
EXPORT_SYMBOL_GPL(vhost_metamap_release);

/* The ring's addresses, size or features changed: rebuild from scratch. */
void vhost_metamap_config_changed(struct vhost_virtqueue *vq)
{
	lockdep_assert_held(&vq->mutex);
	vhost_metamap_release(vq);
}
EXPORT_SYMBOL_GPL(vhost_metamap_config_changed);

void vhost_metamap_set_enabled(struct vhost_virtqueue *vq, bool on)
{
	lockdep_assert_held(&vq->mutex);
	if (!on)
		vhost_metamap_release(vq);
	vq->metamap.enabled = on;
}
EXPORT_SYMBOL_GPL(vhost_metamap_set_enabled);

/* A new device's queues take the module parameter's default. */
void vhost_metamap_dev_init(struct vhost_dev *dev)
{
	bool on = READ_ONCE(vhost_metamap_default);
	int i;

	for (i = 0; i < dev->nvqs; i++) {
		mutex_lock(&dev->vqs[i]->mutex);
		vhost_metamap_set_enabled(dev->vqs[i], on);
		mutex_unlock(&dev->vqs[i]->mutex);
	}
}
EXPORT_SYMBOL_GPL(vhost_metamap_dev_init);

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

/* May this queue use the map at all?  vq->mutex. */
static bool vhost_metamap_usable(struct vhost_virtqueue *vq)
{
	return vq->metamap.enabled && vq->dev->mm && !vq->iotlb &&
	       !vq->log_used && !vhost_has_feature(vq, VHOST_F_LOG_ALL) &&
	       vq->desc && vq->avail && vq->used && !cpu_dcache_is_aliasing();
}

static bool vhost_metamap_stale(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = &vq->metamap;
	int p;

	if (map->num != vq->num || map->features != vq->acked_features)
		return true;
	for (p = 0; p < VHOST_METAMAP_NPARTS; p++)
		if (!map->range[p].registered ||
		    map->range[p].uaddr != vhost_metamap_part_uaddr(vq, p))
			return true;
	return false;
}

/* Register the three ranges for the ring as it is configured now. */
static int vhost_metamap_arm(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = &vq->metamap;
	int p, ret;

	for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
		struct vhost_metamap_range *r = &map->range[p];

		r->uaddr = vhost_metamap_part_uaddr(vq, p);
		r->len = vhost_metamap_part_len(vq, p);
		r->npages = PFN_UP(offset_in_page(r->uaddr) + r->len);
		r->kaddr = kvcalloc(r->npages, sizeof(*r->kaddr),
				    GFP_KERNEL_ACCOUNT);
		if (!r->kaddr)
			return -ENOMEM;
		ret = mmu_interval_notifier_insert(&r->notifier, vq->dev->mm,
						   r->uaddr & PAGE_MASK,
						   (unsigned long)r->npages << PAGE_SHIFT,
						   &vhost_metamap_ops);
		if (ret)
			return ret;
		r->registered = true;
	}
	map->num = vq->num;
	map->features = vq->acked_features;
	return 0;
}

/* Fault a range in; the page references are the caller's to drop. */
static int vhost_metamap_fault(struct vhost_virtqueue *vq,
			       struct vhost_metamap_range *r, bool write,
			       struct page **pages, unsigned long *seq)
{
	struct mm_struct *mm = vq->dev->mm;
	long got;

	*seq = mmu_interval_read_begin(&r->notifier);
	mmap_read_lock(mm);
	got = get_user_pages_remote(mm, r->uaddr & PAGE_MASK, r->npages,
				    write ? FOLL_WRITE : 0, pages, NULL);
	mmap_read_unlock(mm);
	if (got == r->npages)
		return 0;
	if (got > 0)
		release_pages(pages, got);
	return got < 0 ? got : -EFAULT;
}

/*
 * Fault every part in, then publish the pages' kernel addresses under
 * map->lock if no invalidation ran meanwhile.  The used ring is faulted for
 * write: the pages are dirty from then on, and whatever cleans them
 * (writeback's page_mkclean, reclaim's unmap, soft-dirty clearing) runs the
 * callback first, so no set_page_dirty() is needed and no write is lost.
 */
static int vhost_metamap_build(struct vhost_virtqueue *vq, struct page **pages)
{
	struct vhost_metamap *map = &vq->metamap;
	unsigned long seq[VHOST_METAMAP_NPARTS];
	unsigned int off[VHOST_METAMAP_NPARTS], total = 0;
	int p, i, ret = 0, tries;

	for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
		off[p] = total;
		total += map->range[p].npages;
	}
	for (tries = 0; tries < VHOST_METAMAP_BUILD_TRIES; tries++) {
		for (p = 0; p < VHOST_METAMAP_NPARTS; p++) {
			ret = vhost_metamap_fault(vq, &map->range[p],
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
 * Make the map valid if the queue may use it; false if it stays invalid.
 * The slow path of vhost_metamap_begin(), kept out of line so that the fast
 * path, once per descriptor chain, needs no stack frame.
 */
static noinline bool vhost_metamap_refresh(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = &vq->metamap;
	struct page **pages;
	unsigned int total;
	int ret;

	lockdep_assert_held(&vq->mutex);
	if (!vhost_metamap_usable(vq) || time_before(jiffies, map->retry_at))
		return false;
	if (vhost_metamap_stale(vq)) {
		vhost_metamap_release(vq);
		ret = vhost_metamap_arm(vq);
		if (ret)
			goto fail;
	}
	total = map->range[0].npages + map->range[1].npages +
		map->range[2].npages;
	pages = kvmalloc_array(total, sizeof(*pages), GFP_KERNEL);
	if (!pages) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = vhost_metamap_build(vq, pages);
	kvfree(pages);
	if (ret)
		goto fail;
	vhost_metamap_stat_inc(&map->stats.remaps);
	return true;
fail:
	vhost_metamap_stat_inc(&map->stats.remap_failures);
	map->retry_at = jiffies + max(1UL, VHOST_METAMAP_RETRY_DELAY);
	return false;
}

/*
 * Open a section: hold map->lock across the accesses of one batch (avail
 * index, heads, descriptors; or used entries and used index).  Builds the
 * map first if it is invalid.  Nothing in a section may fault or sleep; it
 * ends with vhost_metamap_end().
 */
void vhost_metamap_begin(struct vhost_virtqueue *vq)
{
	struct vhost_metamap *map = &vq->metamap;

	if (!map->enabled)
		return;
	lockdep_assert_held(&vq->mutex);
	if (unlikely(!READ_ONCE(map->valid)) && !vhost_metamap_refresh(vq))
		return;
	spin_lock(&map->lock);
	if (likely(map->valid)) {
		map->held = true;
		vhost_metamap_stat_inc(&map->stats.sections);
		return;
	}
	spin_unlock(&map->lock);
}
EXPORT_SYMBOL_GPL(vhost_metamap_begin);

/*
 * The head accessor missed the batch inside a section: read the heads the
 * driver has published from avail index idx on, up to VHOST_METAMAP_BATCH,
 * and the descriptor of each head that is a whole chain, so that the next
 * chains need no section.  Answers the head at idx; false if the map cannot
 * serve even that one.  The avail index was read before, with the barrier
 * that orders these reads after it.
 */
bool vhost_metamap_fill(struct vhost_virtqueue *vq, u16 idx, __virtio16 *head)
{
	struct vhost_metamap *map = &vq->metamap;
	const struct vhost_metamap_range *dr = &map->range[VHOST_METAMAP_DESC];
	unsigned long doff = offset_in_page(dr->uaddr), off, uaddr;
	__virtio16 whole = cpu_to_vhost16(vq, VRING_DESC_F_NEXT |
					      VRING_DESC_F_INDIRECT);
	struct vhost_metamap_batch *b = &map->batch;
	unsigned int num = vq->num, n, k, run, slot, i, reads;
	const struct vring_desc *d;
	const __virtio16 *h;

	lockdep_assert_held(&vq->mutex);
	lockdep_assert_held(&map->lock);
	b->idx = idx;
	n = min_t(u16, vq->avail_idx - idx, VHOST_METAMAP_BATCH);
	/* The heads: one copy per run up to a page boundary or the wrap. */
	for (k = 0; k < n; k += run) {
		slot = (u16)(idx + k) & (num - 1);
		uaddr = (unsigned long)&vq->avail->ring[slot];
		run = min3(n - k, num - slot, (unsigned int)
			   (PAGE_SIZE - offset_in_page(uaddr)) / sizeof(*h));
		h = __vhost_metamap_kaddr(map, VHOST_METAMAP_AVAIL, uaddr,
					  run * sizeof(*h));
		if (!h)
			break;
		memcpy(&b->head[k], h, run * sizeof(*h));
	}
	n = k;
	reads = n;
	/*
	 * Their descriptors.  i < num keeps d inside the table's pages, whose
	 * kaddr[] covers offset_in_page(table) + num descriptors; a
	 * descriptor that crosses a page (the table need not be aligned) is
	 * left to the section accessors.
	 */
	for (k = 0; k < n; k++) {
		b->didx[k] = VHOST_METAMAP_NO_DESC;
		i = vhost16_to_cpu(vq, b->head[k]);
		if (unlikely(i >= num))
			continue;	/* vhost_get_vq_desc() says what is wrong */
		off = doff + array_index_nospec(i, num) * sizeof(*d);
		if (unlikely(offset_in_page(off) > PAGE_SIZE - sizeof(*d)))
			continue;
		d = dr->kaddr[off >> PAGE_SHIFT] + offset_in_page(off);
		b->desc[k] = *d;
		reads++;
		if (!(b->desc[k].flags & whole))
			b->didx[k] = i;
	}
	b->n = n;
	WRITE_ONCE(map->stats.fast, map->stats.fast + reads);
	if (!n)
		return false;
	*head = b->head[0];
	return true;
}
EXPORT_SYMBOL_GPL(vhost_metamap_fill);

/* Take map->lock for one access unless a section holds it; false: no map. */
static bool vhost_metamap_lock(struct vhost_metamap *map)
{
	if (map->held)
		return true;
	if (!READ_ONCE(map->valid))
		goto fallback;
	spin_lock(&map->lock);
	if (likely(map->valid))
		return true;
	spin_unlock(&map->lock);
fallback:
	if (map->enabled)
		vhost_metamap_stat_inc(&map->stats.fallback);
	return false;
}

/*
 * After one access: a failed one (outside the part, or crossing a page) makes
 * the caller fall back to uaccess, which may fault, so it also ends the
 * section; the rest of the batch takes the lock per access.
 */
static void vhost_metamap_unlock(struct vhost_metamap *map, bool done)
{
	vhost_metamap_stat_inc(done ? &map->stats.fast : &map->stats.fallback);
	if (!map->held || !done) {
		map->held = false;
		spin_unlock(&map->lock);
	}
}

/*
 * The out-of-line halves of the accessors in metamap.h: an access outside
 * a section takes map->lock for itself; one the map cannot serve (outside
 * the part, across a page) ends the section and is counted as a fallback.
 */
bool __vhost_metamap_get16(struct vhost_metamap *map, unsigned int p,
			   const void __user *uaddr, __virtio16 *val)
{
	__virtio16 *k;

	if (!vhost_metamap_lock(map))
		return false;
	k = __vhost_metamap_kaddr(map, p, (unsigned long)uaddr, sizeof(*val));
	if (k)
		*val = READ_ONCE(*k);
	vhost_metamap_unlock(map, k);
	return k;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_get16);

bool __vhost_metamap_put16(struct vhost_metamap *map, void __user *uaddr,
			   __virtio16 val)
{
	__virtio16 *k;

	if (!vhost_metamap_lock(map))
		return false;
	k = __vhost_metamap_kaddr(map, VHOST_METAMAP_USED,
				  (unsigned long)uaddr, sizeof(val));
	if (k)
		WRITE_ONCE(*k, val);
	vhost_metamap_unlock(map, k);
	return k;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_put16);

bool __vhost_metamap_get_desc(struct vhost_metamap *map, struct vring_desc *d,
			      const struct vring_desc __user *uaddr)
{
	struct vring_desc *k;

	if (!vhost_metamap_lock(map))
		return false;
	k = __vhost_metamap_kaddr(map, VHOST_METAMAP_DESC,
				  (unsigned long)uaddr, sizeof(*d));
	if (k)
		*d = *k;
	vhost_metamap_unlock(map, k);
	return k;
}
EXPORT_SYMBOL_GPL(__vhost_metamap_get_desc);

/*
 * Write count used entries from u on, as copy_to_user() would: one copy per
 * page the entries span (an 8-byte entry, 4-byte aligned, may straddle two).
 * The guest reads none of them before the used idx that follows.
 */
bool vhost_metamap_put_used(struct vhost_metamap *map,
			    const struct vring_used_elem *heads,
			    struct vring_used_elem __user *u,
			    unsigned int count)
{
	unsigned long uaddr = (unsigned long)u;
	size_t left = count * sizeof(*heads);
	const void *src = heads;
	size_t chunk;
	void *k;

	if (!map->enabled || !vhost_metamap_lock(map))
		return false;
	for (; left; left -= chunk, uaddr += chunk, src += chunk) {
		chunk = min_t(size_t, left, PAGE_SIZE - offset_in_page(uaddr));
		k = __vhost_metamap_kaddr(map, VHOST_METAMAP_USED, uaddr, chunk);
		if (!k)
			break;
		memcpy(k, src, chunk);
	}
	/* Entries written before a failure are rewritten by uaccess. */
	vhost_metamap_unlock(map, !left);
	return !left;
}
EXPORT_SYMBOL_GPL(vhost_metamap_put_used);

void vhost_metamap_show_fdinfo(struct seq_file *m, struct vhost_virtqueue *vq,
			       unsigned int index)
{
	struct vhost_metamap *map = &vq->metamap;

	seq_printf(m, "vq%u-metamap:\tenabled=%d valid=%d fast=%llu fallback=%llu invalidations=%llu remaps=%llu remap_failures=%llu sections=%llu batched=%llu\n",
		   index, READ_ONCE(map->enabled), READ_ONCE(map->valid),
		   READ_ONCE(map->stats.fast), READ_ONCE(map->stats.fallback),
		   READ_ONCE(map->stats.invalidations),
		   READ_ONCE(map->stats.remaps),
		   READ_ONCE(map->stats.remap_failures),
		   READ_ONCE(map->stats.sections),
		   READ_ONCE(map->stats.batched));
}
EXPORT_SYMBOL_GPL(vhost_metamap_show_fdinfo);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("vhost: virtqueue metadata through a kernel mapping");
