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
 *   vhost_net_hold -m TAP [-q PAIRS]
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
		"       %s -m tap [-q pairs]\n",
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

/* -m: the devices of a multiqueue NIC, held until SIGTERM or SIGINT. */
static int hold_mq(const char *ifname, int pairs, struct vnet_opts *o)
{
	struct vnet n[MQ_PAIRS_MAX];
	int fds[MQ_PAIRS_MAX], i, r;
	char name[32];
	sigset_t block, old;

	r = mq_tap(ifname, fds, pairs);
	for (i = 0; !r && i < pairs; i++) {
		r = vnet_open(&n[i], o);
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
	int pairs = 1;
	struct vnet n;

	while ((opt = getopt(argc, argv, "n:t:s:b:i:xm:q:")) != -1) {
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
		default:
			usage(argv[0]);
		}
	}
	if (optind != argc || len < 60 || len > 1514 || batch < 1 ||
	    interval < 0 || count < -1 || pairs < 1 || pairs > MQ_PAIRS_MAX ||
	    (mq && strlen(mq) >= IFNAMSIZ))
		usage(argv[0]);

	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);	/* no SA_RESTART: waits end early */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (mq)
		return hold_mq(mq, pairs, &o);
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
