// SPDX-License-Identifier: GPL-2.0
/*
 * Host-side unit test of kmsg_splats() (tools/testing/selftests/vhost/
 * vhost_net_lib.c): records fed through a SOCK_SEQPACKET pair, which keeps
 * /dev/kmsg's one record per read().  A log that cannot be read fails
 * closed; an OOM report's own Call Trace is not a splat, a WARNING inside
 * its window and a second Call Trace after it are.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/socket.h>
#include "vhost_net_lib.h"

static int feed(const char *const *recs)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		return -1;
	for (; *recs; recs++)
		if (write(sv[1], *recs, strlen(*recs)) < 0)
			return -1;
	close(sv[1]);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	return sv[0];
}

static int hits(const char *const *recs)
{
	int fd = feed(recs), n;

	n = kmsg_splats(fd, NULL, 0, false);
	close(fd);
	return n;
}

int main(void)
{
	static const char *const clean[] = { "6,1,0,-;hello\n", NULL };
	static const char *const oom[] = {
		"4,2,0,-;a.out invoked oom-killer: gfp_mask=0xcc0\n",
		"4,3,0,-;Call Trace:\n", "4,4,0,-; dump_stack_lvl+0x1/0x2\n",
		"6,5,0,-;oom-kill:constraint=CONSTRAINT_MEMCG\n", NULL };
	static const char *const oom_warn[] = {
		"4,2,0,-;a.out invoked oom-killer: gfp_mask=0xcc0\n",
		"4,3,0,-;WARNING: CPU: 1 PID: 7 at drivers/vhost/vhost.c:10 f\n",
		"4,4,0,-;Call Trace:\n", NULL };
	static const char *const oom_twice[] = {
		"4,2,0,-;a.out invoked oom-killer: gfp_mask=0xcc0\n",
		"4,3,0,-;Call Trace:\n", "4,4,0,-;Call Trace:\n", NULL };
	int fail = 0;

	fail |= hits(clean) != 0;
	fail |= hits(oom) != 0;
	fail |= hits(oom_warn) != 1;
	fail |= hits(oom_twice) != 1;
	fail |= kmsg_splats(-1, NULL, 0, false) == 0;	/* fails closed */
	printf("%s\n", fail ? "kmsg_splats: FAIL" : "kmsg_splats: ok");
	return fail;
}
