// SPDX-License-Identifier: GPL-2.0
/*
 * "vhostctl status": whether the feature is active on this host.
 *
 * The vhost-metamap-dkms package replaces the kernel's vhost modules with
 * ones DKMS builds into /lib/modules/KERNEL/updates/dkms.  After a kernel
 * update without the matching linux-source-6.12 the new kernel has none of
 * them, and a vhost_net loaded before the package was installed stays the
 * kernel's own until it is reloaded: either way the host runs stock vhost
 * and nothing says so.  status says, for each module of the package,
 * whether it is loaded and whether the loaded one is the one modprobe
 * would load for this kernel (by srcversion, the hash of its sources that
 * modpost records, in sysfs for the loaded module and in the file's
 * modinfo), then the metadata mode new devices take.
 *
 * The collection reads sysfs under a root it is given and asks a lookup
 * function for the module files (libkmod in vhostctl.c), so that the unit
 * tests run it on a made-up tree.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include "json.h"
#include "vhostctl.h"

const char *const vh_status_modules[VH_STATUS_NMODULES] = {
	"vhost", "vhost_iotlb", "vhost_net", "vhost_vsock", "vhost_scsi",
	"vhost_vdpa", "tun", "vhost_metamap", "vhost_admin",
};

/* The first line of a file, without its newline: 0, or -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	int err = 0;

	buf[0] = '\0';
	if (!f)
		return -errno;
	if (!fgets(buf, len, f))
		err = ferror(f) ? -EIO : 0;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return err;
}

static bool exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

void vh_status_collect(struct vh_status *st, const char *sysfs,
		       vh_module_lookup_fn lookup, void *arg)
{
	char path[512];
	unsigned int i;

	for (i = 0; i < VH_STATUS_NMODULES; i++) {
		struct vh_module_status *m = &st->mods[i];

		memset(m, 0, sizeof(*m));
		m->name = vh_status_modules[i];
		snprintf(path, sizeof(path), "%s/module/%s", sysfs, m->name);
		m->present = exists(path);
		/* A module has an initstate; built-in code has none. */
		snprintf(path, sizeof(path), "%s/module/%s/initstate", sysfs,
			 m->name);
		m->builtin = m->present && !exists(path);
		snprintf(path, sizeof(path), "%s/module/%s/srcversion", sysfs,
			 m->name);
		if (m->present)
			read_line(path, m->srcversion, sizeof(m->srcversion));
		if (lookup)
			lookup(arg, m->name, m->file, sizeof(m->file),
			       m->file_srcversion, sizeof(m->file_srcversion));
		m->file_ours = !!strstr(m->file, "/updates/dkms/");
	}
	snprintf(path, sizeof(path), "%s/module/vhost_metamap/parameters/mode",
		 sysfs);
	read_line(path, st->metamap_default, sizeof(st->metamap_default));
	vh_status_decide(st);
}

static const struct vh_module_status *mod(const struct vh_status *st,
					  const char *name)
{
	unsigned int i;

	for (i = 0; i < VH_STATUS_NMODULES; i++)
		if (!strcmp(st->mods[i].name, name))
			return &st->mods[i];
	return NULL;
}

/*
 * Where a loaded module comes from: built into the kernel, the file
 * modprobe would load (the package's when it is under updates/dkms), or
 * something else (the kernel's own while the package's is installed, a
 * build since replaced).
 */
enum vh_module_from vh_module_from(const struct vh_module_status *m)
{
	if (!m->present)
		return VH_FROM_NONE;
	if (m->builtin)
		return VH_FROM_BUILTIN;
	if (m->file_ours && m->srcversion[0] &&
	    !strcmp(m->srcversion, m->file_srcversion))
		return VH_FROM_PACKAGE;
	if (!m->file_ours && m->file[0] && m->srcversion[0] &&
	    !strcmp(m->srcversion, m->file_srcversion))
		return VH_FROM_KERNEL;
	return VH_FROM_OTHER;
}

static const char *const from_names[] = {
	[VH_FROM_NONE]		= "",
	[VH_FROM_BUILTIN]	= "built-in",
	[VH_FROM_PACKAGE]	= "package",
	[VH_FROM_KERNEL]	= "kernel",
	[VH_FROM_OTHER]		= "other",
};

static const char *const state_names[] = {
	[VH_STATE_ACTIVE]	= "active",
	[VH_STATE_READY]	= "ready",
	[VH_STATE_INACTIVE]	= "inactive",
};

/*
 * active:   the feature's own modules (vhost_admin, vhost_metamap) are
 *           loaded or built in, and every loaded module of the package is
 *           the one this kernel's modprobe loads from the package;
 * ready:    nothing of it loaded yet, and the package is built for this
 *           kernel: the first open of /dev/vhost-net loads it;
 * inactive: anything else, with the reason.
 */
void vh_status_decide(struct vh_status *st)
{
	const struct vh_module_status *net = mod(st, "vhost_net");
	const struct vh_module_status *admin = mod(st, "vhost_admin");
	const struct vh_module_status *metamap = mod(st, "vhost_metamap");
	unsigned int i, loaded = 0;

	for (i = 0; i < VH_STATUS_NMODULES; i++) {
		const struct vh_module_status *m = &st->mods[i];
		enum vh_module_from from = vh_module_from(m);

		if (!m->present)
			continue;
		/* tun is the kernel's own where the package leaves it be */
		if (!strcmp(m->name, "tun") && !m->file_ours)
			continue;
		loaded++;
		if (from == VH_FROM_PACKAGE || from == VH_FROM_BUILTIN)
			continue;
		st->state = VH_STATE_INACTIVE;
		if (m->file_ours)
			snprintf(st->reason, sizeof(st->reason),
				 "%s is loaded but is not the package's (srcversion %s, %s has %s): stop the guests and reload the modules",
				 m->name, m->srcversion[0] ? m->srcversion : "unknown",
				 m->file, m->file_srcversion);
		else
			snprintf(st->reason, sizeof(st->reason),
				 "%s is the kernel's own: the package is not built for this kernel (dkms status vhost-metamap; it needs linux-source-6.12 of the kernel's version)",
				 m->name);
		return;
	}
	if (admin->present && metamap->present) {
		st->state = VH_STATE_ACTIVE;
		snprintf(st->reason, sizeof(st->reason), "%s",
			 admin->builtin ? "built into the kernel" :
			 "the package's modules are loaded");
		return;
	}
	if (!loaded && net->file_ours) {
		st->state = VH_STATE_READY;
		snprintf(st->reason, sizeof(st->reason),
			 "the package is built for this kernel, not loaded yet: the first open of /dev/vhost-net loads it");
		return;
	}
	st->state = VH_STATE_INACTIVE;
	snprintf(st->reason, sizeof(st->reason), "%s",
		 loaded ? "vhost is loaded without vhost_admin and vhost_metamap" :
		 "the package is not built for this kernel (dkms status vhost-metamap; it needs linux-source-6.12 of the kernel's version)");
}

/* "defaults ..." or "policy ...": the line its show command prints. */
static void print_line(FILE *f, const char *what,
		       const struct vhost_defaults_get_rsp *d,
		       const struct vhost_policy_get_rsp *p)
{
	struct vh_opts text = { .json = false };
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return;
	if (d)
		vh_print_defaults(m, &text, d);
	else
		vh_print_policy(m, &text, p);
	fclose(m);
	if (len && buf[len - 1] == '\n')
		buf[--len] = '\0';
	fprintf(f, "%s%s%s\n", what, len ? " " : "", len ? buf : "");
	free(buf);
}

void vh_print_status(FILE *f, const struct vh_opts *opts,
		     const struct vh_status *st, const struct vh_status_devs *devs)
{
	static const char *const modes[] = { "off", "map", "batch" };
	unsigned int i;
	struct jw jw;

	if (opts->json) {
		jw_init(&jw, f, opts->pretty);
		jw_obj_open(&jw, NULL);
		jw_str(&jw, "state", state_names[st->state]);
		jw_str(&jw, "reason", st->reason);
		jw_str(&jw, "kernel", st->kernel);
		jw_arr_open(&jw, "modules");
		for (i = 0; i < VH_STATUS_NMODULES; i++) {
			const struct vh_module_status *m = &st->mods[i];

			jw_obj_open(&jw, NULL);
			jw_str(&jw, "name", m->name);
			jw_str(&jw, "loaded", m->builtin ? "built-in" :
			       m->present ? "yes" : "no");
			if (m->present)
				jw_str(&jw, "from", from_names[vh_module_from(m)]);
			if (m->srcversion[0])
				jw_str(&jw, "srcversion", m->srcversion);
			if (m->file[0])
				jw_str(&jw, "file", m->file);
			if (m->file_srcversion[0])
				jw_str(&jw, "file-srcversion", m->file_srcversion);
			jw_obj_close(&jw);
		}
		jw_arr_close(&jw);
		if (st->metamap_default[0])
			jw_str(&jw, "metamap-default", st->metamap_default);
		if (devs->known) {
			jw_u64(&jw, "devices", devs->total);
			jw_obj_open(&jw, "devices-by-metamap");
			for (i = 0; i < ARRAY_SIZE(modes); i++)
				jw_u64(&jw, modes[i], devs->by_mode[i]);
			jw_obj_close(&jw);
		}
		if (devs->defaults)
			vh_json_defaults(&jw, "defaults", devs->defaults);
		if (devs->policy)
			vh_json_policy(&jw, "policy", devs->policy);
		jw_obj_close(&jw);
		fputc('\n', f);
		fflush(f);
		return;
	}
	if (opts->openmetrics) {
		/* Prometheus's text format has no info type: a gauge of 1 */
		fprintf(f,
			"# HELP vhost_status%s Whether the vhost-metamap modules are the ones loaded (state active, ready or inactive).\n"
			"# TYPE vhost_status%s\n",
			opts->prometheus ? "_info" : "",
			opts->prometheus ? "_info gauge" : " info");
		fprintf(f,
			"vhost_status_info{state=\"%s\",kernel=\"%s\",metamap_default=\"%s\"} 1\n",
			state_names[st->state], st->kernel,
			st->metamap_default);
		if (devs->known) {
			fputs("# HELP vhost_devices Open vhost-net devices of this network namespace, by metadata mode.\n"
			      "# TYPE vhost_devices gauge\n", f);
			for (i = 0; i < ARRAY_SIZE(modes); i++)
				fprintf(f, "vhost_devices{metamap=\"%s\"} %u\n",
					modes[i], devs->by_mode[i]);
		}
		if (!opts->prometheus)
			fputs("# EOF\n", f);
		fflush(f);
		return;
	}
	fprintf(f, "state %s: %s\n", state_names[st->state], st->reason);
	fprintf(f, "kernel %s\n", st->kernel);
	for (i = 0; i < VH_STATUS_NMODULES; i++) {
		const struct vh_module_status *m = &st->mods[i];

		fprintf(f, "module %s", m->name);
		if (m->builtin)
			fputs(" built-in", f);
		else if (m->present)
			fprintf(f, " loaded from %s srcversion %s",
				from_names[vh_module_from(m)],
				m->srcversion[0] ? m->srcversion : "unknown");
		else
			fputs(" not loaded", f);
		if (m->file[0])
			fprintf(f, " file %s", m->file);
		fputc('\n', f);
	}
	if (st->metamap_default[0])
		fprintf(f, "metamap-default %s\n", st->metamap_default);
	if (devs->known)
		fprintf(f, "devices %u metamap off %u map %u batch %u\n",
			devs->total, devs->by_mode[0], devs->by_mode[1],
			devs->by_mode[2]);
	/* each on a line of the keywords of its set command */
	if (devs->defaults)
		print_line(f, "defaults", devs->defaults, NULL);
	if (devs->policy)
		print_line(f, "policy", NULL, devs->policy);
	fflush(f);
}

void vh_status_kernel(struct vh_status *st)
{
	struct utsname u;

	if (!uname(&u))
		snprintf(st->kernel, sizeof(st->kernel), "%s", u.release);
}
