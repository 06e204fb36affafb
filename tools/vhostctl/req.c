// SPDX-License-Identifier: GPL-2.0
/*
 * A parsed command line -> the requests of the generated library.  The
 * devices are named to the kernel as the user named them: by id, by name,
 * by backend interface, owner or label, which the kernel resolves in the
 * caller's namespaces; set goes out as one request, so it applies to every
 * device the kernel selects, all values or none.
 */
#include "vhostctl.h"

struct vhost_dev_get_req *vh_dev_get_req(const struct vh_sel *sel)
{
	struct vhost_dev_get_req *req = vhost_dev_get_req_alloc();

	if (!req)
		return NULL;
	switch (sel->kind) {
	case VH_SEL_ID:
		vhost_dev_get_req_set_id(req, sel->id);
		break;
	case VH_SEL_NAME:
		vhost_dev_get_req_set_name(req, sel->name);
		break;
	case VH_SEL_IFNAME:
		vhost_dev_get_req_set_backend_ifname(req, sel->name);
		break;
	case VH_SEL_OWNER:
		vhost_dev_get_req_set_owner_pid(req, sel->id);
		break;
	case VH_SEL_LABEL:
		vhost_dev_get_req_set_match_label(req, sel->name);
		break;
	case VH_SEL_ALL:
		break;
	}
	return req;
}

struct vhost_dev_get_req_dump *vh_dev_dump_req(const struct vh_sel *sel)
{
	struct vhost_dev_get_req_dump *req = vhost_dev_get_req_dump_alloc();

	if (!req)
		return NULL;
	switch (sel->kind) {
	case VH_SEL_IFNAME:
		vhost_dev_get_req_dump_set_backend_ifname(req, sel->name);
		break;
	case VH_SEL_OWNER:
		vhost_dev_get_req_dump_set_owner_pid(req, sel->id);
		break;
	case VH_SEL_LABEL:
		vhost_dev_get_req_dump_set_match_label(req, sel->name);
		break;
	default:
		break;
	}
	return req;
}

struct vhost_dev_set_req *vh_dev_set_req(const struct vh_sel *sel,
					 const struct vh_set *set)
{
	struct vhost_dev_set_req *req = vhost_dev_set_req_alloc();

	if (!req)
		return NULL;
	switch (sel->kind) {
	case VH_SEL_ID:
		vhost_dev_set_req_set_id(req, sel->id);
		break;
	case VH_SEL_NAME:
		vhost_dev_set_req_set_name(req, sel->name);
		break;
	case VH_SEL_IFNAME:
		vhost_dev_set_req_set_backend_ifname(req, sel->name);
		break;
	case VH_SEL_OWNER:
		vhost_dev_set_req_set_owner_pid(req, sel->id);
		break;
	case VH_SEL_LABEL:
		vhost_dev_set_req_set_match_label(req, sel->name);
		break;
	case VH_SEL_ALL:
		break;
	}
	if (set->mask & VH_BIT(VHOST_A_DEV_LABEL)) {
		vhost_dev_set_req_set_label(req, set->label);
		/*
		 * The generated setter takes "" for absent (its length gates
		 * the attribute); "" is what removes the label.
		 */
		if (!*set->label)
			req->_present.label_len = 1;
	}
	if (set->mask & VH_BIT(VHOST_A_DEV_ADMIN_BUSYPOLL_US))
		vhost_dev_set_req_set_admin_busypoll_us(req, set->busypoll_us);
	if (set->mask & VH_BIT(VHOST_A_DEV_ZEROCOPY))
		vhost_dev_set_req_set_zerocopy(req, set->zerocopy);
	if (set->mask & VH_BIT(VHOST_A_DEV_ZCOPY_MIN_LEN))
		vhost_dev_set_req_set_zcopy_min_len(req, set->zcopy_min_len);
	if (set->mask & VH_BIT(VHOST_A_DEV_METAMAP))
		vhost_dev_set_req_set_metamap(req, set->metamap);
	return req;
}

struct vhost_queue_get_req *vh_queue_get_req(uint32_t dev_id, uint32_t index)
{
	struct vhost_queue_get_req *req = vhost_queue_get_req_alloc();

	if (!req)
		return NULL;
	vhost_queue_get_req_set_dev_id(req, dev_id);
	vhost_queue_get_req_set_index(req, index);
	return req;
}

struct vhost_queue_get_req_dump *vh_queue_dump_req(const uint32_t *dev_id)
{
	struct vhost_queue_get_req_dump *req = vhost_queue_get_req_dump_alloc();

	if (req && dev_id)
		vhost_queue_get_req_dump_set_dev_id(req, *dev_id);
	return req;
}

struct vhost_stats_get_req_dump *vh_stats_dump_req(const uint32_t *dev_id,
						   bool per_queue)
{
	struct vhost_stats_get_req_dump *req = vhost_stats_get_req_dump_alloc();

	if (!req)
		return NULL;
	if (dev_id)
		vhost_stats_get_req_dump_set_dev_id(req, *dev_id);
	if (per_queue)
		vhost_stats_get_req_dump_set_scope(req, VHOST_STATS_SCOPE_QUEUE);
	return req;
}

struct vhost_defaults_set_req *vh_defaults_set_req(const struct vh_set *set)
{
	struct vhost_defaults_set_req *req = vhost_defaults_set_req_alloc();

	if (!req)
		return NULL;
	if (set->mask & VH_BIT(VHOST_A_DEV_ADMIN_BUSYPOLL_US))
		vhost_defaults_set_req_set_admin_busypoll_us(req, set->busypoll_us);
	if (set->mask & VH_BIT(VHOST_A_DEV_ZEROCOPY))
		vhost_defaults_set_req_set_zerocopy(req, set->zerocopy);
	if (set->mask & VH_BIT(VHOST_A_DEV_ZCOPY_MIN_LEN))
		vhost_defaults_set_req_set_zcopy_min_len(req, set->zcopy_min_len);
	if (set->mask & VH_BIT(VHOST_A_DEV_METAMAP))
		vhost_defaults_set_req_set_metamap(req, set->metamap);
	if (set->unset)
		vhost_defaults_set_req_set_defaults_unset(req, set->unset);
	return req;
}

void vh_defaults_restore(const struct vhost_defaults_get_rsp *d,
			 uint64_t touched, struct vh_set *set)
{
	memset(set, 0, sizeof(*set));
	if ((touched & VHOST_TUNABLE_ADMIN_BUSYPOLL_US) &&
	    d->_present.admin_busypoll_us) {
		set->mask |= VH_BIT(VHOST_A_DEV_ADMIN_BUSYPOLL_US);
		set->busypoll_us = d->admin_busypoll_us;
	}
	if ((touched & VHOST_TUNABLE_ZEROCOPY) && d->_present.zerocopy) {
		set->mask |= VH_BIT(VHOST_A_DEV_ZEROCOPY);
		set->zerocopy = d->zerocopy;
	}
	if ((touched & VHOST_TUNABLE_ZCOPY_MIN_LEN) &&
	    d->_present.zcopy_min_len) {
		set->mask |= VH_BIT(VHOST_A_DEV_ZCOPY_MIN_LEN);
		set->zcopy_min_len = d->zcopy_min_len;
	}
	if ((touched & VHOST_TUNABLE_METAMAP) && d->_present.metamap) {
		set->mask |= VH_BIT(VHOST_A_DEV_METAMAP);
		set->metamap = d->metamap;
	}
	set->unset = touched & ~vh_set_tunables(set);
}

struct vhost_policy_set_req *vh_policy_set_req(const struct vh_policy *policy)
{
	struct vhost_policy_set_req *req = vhost_policy_set_req_alloc();

	if (!req)
		return NULL;
	if (policy->mask & VH_BIT(VHOST_A_POLICY_GRANTS))
		vhost_policy_set_req_set_grants(req, policy->grants);
	if (policy->mask & VH_BIT(VHOST_A_POLICY_BUSYPOLL_US_MAX))
		vhost_policy_set_req_set_busypoll_us_max(req, policy->busypoll_us_max);
	return req;
}
