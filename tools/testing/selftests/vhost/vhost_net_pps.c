// SPDX-License-Identifier: GPL-2.0
/*
 * vhost_net_pps: TX packets per second through vhost-net, direct map off and
 * on, alternating inside one run.  The driver keeps the TX ring full (batches
 * of buffers, one kick per batch) and counts used buffers; frames go into
 * the TAP's ingress and are dropped by the stack (unknown ethertype).  Not a
 * test: a load generator for measurements.
 *
 *   vhost_net_pps [-r rounds] [-t seconds] [-s frame bytes] [-n ring size]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vhost_net_lib.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One measurement: a new device with the map on or off, TX for secs. */
static double run_tx(int map, double secs, size_t len, unsigned int num)
{
	struct vnet_opts o = { .ring_num = num, .event_idx = true };
	uint8_t frame[2048];
	bool counting = false;
	uint64_t pkts = 0;
	double t0, t;
	struct vnet n;
	int r;

	if (metamap_set_default(map) < 0 && map) {
		fprintf(stderr, "no vhost_metamap module parameter\n");
		exit(4);
	}
	r = vnet_open(&n, &o);
	if (r) {
		fprintf(stderr, "vnet_open: %s\n", strerror(-r));
		exit(1);
	}
	close(n.sock_fd);	/* nobody reads the wire */
	n.sock_fd = -1;
	frame_fill(frame, len, NULL, 1);
	t0 = now() + 0.2;	/* warm-up */
	for (;;) {
		while (vnet_tx_add(&n, NULL, frame, len) == 0)
			;
		vnet_kick(&n, VNET_TX);
		r = vnet_tx_reap(&n);
		if (r < 0 || (r == 0 && vq_wait(&n.vq[VNET_TX], 1000))) {
			fprintf(stderr, "TX stalled\n");
			exit(1);
		}
		t = now();
		if (!counting) {
			counting = t >= t0;
			t0 = counting ? t : t0;
			continue;
		}
		pkts += r;
		if (t - t0 >= secs)
			break;
	}
	vnet_close(&n);
	return pkts / (t - t0);
}

int main(int argc, char **argv)
{
	int rounds = 5, opt, i, m;
	double secs = 2, pps[2][64];
	unsigned int num = 1024;
	size_t len = 64;

	while ((opt = getopt(argc, argv, "r:t:s:n:")) != -1) {
		switch (opt) {
		case 'r':
			rounds = atoi(optarg);
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 's':
			len = atoi(optarg);
			break;
		case 'n':
			num = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-r rounds] [-t secs] [-s bytes] [-n ring]\n",
				argv[0]);
			return 2;
		}
	}
	if (rounds < 1 || rounds > 64 || len < 60 || len > 1514)
		return 2;
	printf("# TX %zu B, ring %u, %d rounds of %.1f s, modes alternating\n",
	       len, num, rounds, secs);
	for (i = 0; i < rounds; i++) {
		for (m = 0; m < 2; m++) {
			int map = (i + m) & 1;	/* alternate which goes first */

			pps[map][i] = run_tx(map, secs, len, num);
			printf("round %d map=%s %.0f pps\n", i, map ? "on" : "off",
			       pps[map][i]);
			fflush(stdout);
		}
	}
	metamap_set_default(1);
	for (m = 0; m < 2; m++)
		qsort(pps[m], rounds, sizeof(double), cmp);
	for (m = 0; m < 2; m++)
		printf("map=%s: min %.0f median %.0f max %.0f pps\n",
		       m ? "on" : "off", pps[m][0], pps[m][rounds / 2],
		       pps[m][rounds - 1]);
	printf("ratio on/off (medians): %.3f\n", pps[1][rounds / 2] / pps[0][rounds / 2]);
	return 0;
}
