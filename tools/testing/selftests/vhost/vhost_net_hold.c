// SPDX-License-Identifier: GPL-2.0
/*
 * vhost_net_hold: open one vhost-net device with a TAP backend and keep it,
 * for tests that look at the device from outside (vhostctl.sh).  Prints
 * "<vhostN> <tap>" on the first line, then transmits frames into the TAP
 * (dropped by the stack: unknown ethertype) until told to stop, then prints
 * what it got completed:
 *
 *   tx_packets <N> tx_bytes <N>
 *
 * (frame bytes, virtio-net header excluded, as vhost counts them) and keeps
 * the device open, idle, until SIGTERM or SIGINT.  Not a test.
 *
 *   vhost_net_hold [-n COUNT] [-t SECONDS] [-s BYTES] [-b BATCH] [-i USEC] [-x]
 *   vhost_net_hold -m TAP [-q PAIRS] [-u]
 *
 *   -n COUNT    send COUNT frames, then stop (0: none; default: no limit)
 *   -t SECONDS  stop sending after SECONDS
 *   -s BYTES    frame length, 60..1514 (default 64)
 *   -b BATCH    frames per kick (default 32)
 *   -i USEC     pause between batches (default 1000)
 *   -x          exit after stopping instead of holding the device
 *   -m TAP      a virtio-net NIC of PAIRS queue pairs as QEMU sets it up:
 *               PAIRS devices (-q, default 1), each fed by one queue of the
 *               multiqueue TAP named TAP (made if it does not exist);
 *               prints "<vhostA>,<vhostB>,... <TAP>", sends nothing and
 *               holds them until SIGTERM or SIGINT
 *   -u          with -m, as an unprivileged user of the host would: open
 *               /dev/vhost-net (here, still as root: the node is 0666 on a
 *               systemd host), then become uid 65534, root of a user and
 *               network namespace of its own where it makes TAP; the
 *               devices belong to the host's namespace, their backend to
 *               the user's
 *
 * Signals: SIGUSR1 stops sending (counts printed, device kept); SIGTERM and
 * SIGINT stop sending if needed, print the counts if not printed yet, close
 * the device and exit 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <fcntl.h>
#include <net/if.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <grp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/ioctl.h>

#include "vhost_net_lib.h"

/* Queue pairs of -m at most. */
#define MQ_PAIRS_MAX	16

static volatile sig_atomic_t stop_req, term_req;

static void on_signal(int sig)
{
	stop_req = 1;
	if (sig != SIGUSR1)
		term_req = 1;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [-n count] [-t seconds] [-s bytes] [-b batch] [-i usec] [-x]\n"
		"       %s -m tap [-q pairs] [-u]\n",
		prog, prog);
	exit(2);
}

/* The queues of the multiqueue TAP ifname into fds[n]: 0 or -errno. */
static int mq_tap(const char *ifname, int *fds, int n)
{
	struct ifreq ifr = { .ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR |
					  IFF_MULTI_QUEUE };
	int i, len = sizeof(struct virtio_net_hdr_v1);

	snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
	for (i = 0; i < n; i++) {
		fds[i] = open("/dev/net/tun", O_RDWR | O_CLOEXEC);
		if (fds[i] < 0 || ioctl(fds[i], TUNSETIFF, &ifr) < 0 ||
		    ioctl(fds[i], TUNSETVNETHDRSZ, &len) < 0)
			return -errno;
	}
	return 0;
}

/* Write s to the /proc/self file name: 0 or -errno. */
static int proc_self_write(const char *name, const char *s)
{
	char path[64];
	int fd, r = 0;

	snprintf(path, sizeof(path), "/proc/self/%s", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		r = -errno;
	close(fd);
	return r;
}

/*
 * -u: uid 65534, root of a new user and network namespace; /dev/net/tun
 * a node it may open (0666 as on a systemd host), in a mount namespace of
 * its own.
 */
static int become_user(void)
{
	char node[64];
	struct stat st;

	snprintf(node, sizeof(node), "/tmp/vhost-hold-tun.%d", getpid());
	if (stat("/dev/net/tun", &st) || unshare(CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mknod(node, S_IFCHR | 0600, st.st_rdev) || chmod(node, 0666) ||
	    mount(node, "/dev/net/tun", NULL, MS_BIND, NULL))
		return -errno;
	unlink(node);
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534) ||
	    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) ||
	    unshare(CLONE_NEWUSER | CLONE_NEWNET))
		return -errno;
	return proc_self_write("setgroups", "deny") ?:
	       proc_self_write("uid_map", "0 65534 1") ?:
	       proc_self_write("gid_map", "0 65534 1");
}

/* -m: the devices of a multiqueue NIC, held until SIGTERM or SIGINT. */
static int hold_mq(const char *ifname, int pairs, struct vnet_opts *o,
		   bool user)
{
	int fds[MQ_PAIRS_MAX], pre[MQ_PAIRS_MAX], i, r = 0;
	struct vnet n[MQ_PAIRS_MAX];
	char name[32];
	sigset_t block, old;

	for (i = 0; i < pairs; i++) {
		pre[i] = -1;
		if (user) {
			pre[i] = open("/dev/vhost-net", O_RDWR | O_CLOEXEC);
			if (pre[i] < 0)
				r = -errno;
		}
	}
	if (!r && user)
		r = become_user();
	if (!r)
		r = mq_tap(ifname, fds, pairs);
	for (i = 0; !r && i < pairs; i++) {
		r = vnet_open_fd(&n[i], o, pre[i]);
		if (!r)
			r = vnet_set_backend(&n[i], VNET_TX, fds[i]);
		if (!r)
			r = vnet_set_backend(&n[i], VNET_RX, fds[i]);
		if (!r)
			r = vhost_fd_name(n[i].vhost_fd, name, sizeof(name));
		if (!r)
			printf("%s%s", i ? "," : "", name);
	}
	if (r) {
		fprintf(stderr, "vhost_net_hold: -m %s: %s\n", ifname,
			strerror(-r));
		return 1;
	}
	printf(" %s\n", ifname);
	fflush(stdout);
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (!term_req)
		sigsuspend(&old);
	return 0;
}

int main(int argc, char **argv)
{
	struct vnet_opts o = { .ring_num = 256, .event_idx = true };
	struct sigaction sa = { .sa_handler = on_signal };
	long long count = -1, added = 0, done;
	int batch = 32, interval = 1000, opt, r;
	double secs = -1, t_end;
	bool hold = true;
	sigset_t block, old;
	uint8_t frame[2048];
	char name[32];
	size_t len = 64;
	const char *mq = NULL;
	bool user = false;
	int pairs = 1;
	struct vnet n;

	while ((opt = getopt(argc, argv, "n:t:s:b:i:xm:q:u")) != -1) {
		switch (opt) {
		case 'm':
			mq = optarg;
			break;
		case 'q':
			pairs = atoi(optarg);
			break;
		case 'n':
			count = atoll(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 's':
			len = atoi(optarg);
			break;
		case 'b':
			batch = atoi(optarg);
			break;
		case 'i':
			interval = atoi(optarg);
			break;
		case 'x':
			hold = false;
			break;
		case 'u':
			user = true;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc || len < 60 || len > 1514 || batch < 1 ||
	    interval < 0 || count < -1 || pairs < 1 || pairs > MQ_PAIRS_MAX ||
	    (mq && strlen(mq) >= IFNAMSIZ) || (user && !mq))
		usage(argv[0]);

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);	/* no SA_RESTART: waits end early */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (mq)
		return hold_mq(mq, pairs, &o, user);
	r = vnet_open(&n, &o);
	if (r) {
		fprintf(stderr, "vhost_net_hold: vnet_open: %s\n", strerror(-r));
		return 1;
	}
	close(n.sock_fd);	/* nobody reads the wire */
	n.sock_fd = -1;
	r = vhost_fd_name(n.vhost_fd, name, sizeof(name));
	if (r) {
		fprintf(stderr, "vhost_net_hold: no vhost-name in fdinfo: %s\n",
			strerror(-r));
		vnet_close(&n);
		return 1;
	}
	printf("%s %s\n", name, n.ifname);
	fflush(stdout);

	frame_fill(frame, len, NULL, 1);
	t_end = secs >= 0 ? now() + secs : 0;
	while (!stop_req && (count < 0 || added < count) &&
	       (secs < 0 || now() < t_end)) {
		int k = 0;

		while (k < batch && (count < 0 || added < count) &&
		       vnet_tx_add(&n, NULL, frame, len) == 0) {
			added++;
			k++;
		}
		vnet_kick(&n, VNET_TX);
		r = vnet_tx_reap(&n);
		if (r < 0) {
			fprintf(stderr, "vhost_net_hold: TX: %s\n", strerror(-r));
			return 1;
		}
		if (!k && !r)	/* ring full: wait for the device */
			vq_wait(&n.vq[VNET_TX], 100);
		if (interval)
			usleep(interval);
	}
	r = vnet_tx_drain(&n, 10000);
	if (r) {
		fprintf(stderr, "vhost_net_hold: TX did not drain: %s\n",
			strerror(-r));
		return 1;
	}
	done = added - (long long)n.tx_pending;
	printf("tx_packets %lld tx_bytes %lld\n", done, done * (long long)len);
	fflush(stdout);

	/* Idle, device open, until SIGTERM/SIGINT (checked without a race). */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigprocmask(SIG_BLOCK, &block, &old);
	while (hold && !term_req)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	vnet_close(&n);
	return 0;
}
