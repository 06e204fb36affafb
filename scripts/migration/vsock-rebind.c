// SPDX-License-Identifier: GPL-2.0
/*
 * vsock-rebind: the nested guest's end of check-nested's rebind probe.
 *
 *   vsock-rebind CID PORT LOCAL_PORT ROUNDS
 *
 * ROUNDS times: a stream socket bound to LOCAL_PORT connects to CID:PORT
 * and is closed; then the probe binds a new socket to LOCAL_PORT again
 * every millisecond until the bind succeeds, and that socket makes the
 * next round's connection.  A closed virtio-vsock stream keeps its port
 * until the peer's RST arrives (the host sends it when it sees our
 * SHUTDOWN) or, if none ever does, until the close timeout (8 s) ends it.
 * So the time until the port is free is the round trip of SHUTDOWN and RST
 * through vhost-vsock's two queues: an RST the host's vhost-vsock never
 * delivers, or delivers without an interrupt, shows as a wait of seconds.
 * This is the condition of vsock_test's "double bind connect" without its
 * race (its client binds again as soon as the server's control message
 * arrives over TCP, which may come before the RST).
 *
 * Prints one line per round and a summary:
 *   VSOCK-REBIND <round> <us until the port was free>
 *   VSOCK-REBIND-DONE <rounds done> <max us> <error or "ok">
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/vm_sockets.h>

/* Longer than the close timeout: a port that is never freed fails. */
#define GIVE_UP_US	(20 * 1000 * 1000LL)

static long long now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

/* A stream socket bound to port, or -1 with errno (EADDRINUSE: taken). */
static int bound_socket(unsigned int port)
{
	struct sockaddr_vm sa = {
		.svm_family = AF_VSOCK,
		.svm_cid = VMADDR_CID_ANY,
		.svm_port = port,
	};
	int fd, err;

	fd = socket(AF_VSOCK, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	struct sockaddr_vm peer = { .svm_family = AF_VSOCK };
	unsigned int local_port;
	long long t0, waited, max = 0;
	int rounds, r, fd;
	const char *why = "ok";

	if (argc != 5) {
		fprintf(stderr, "usage: vsock-rebind CID PORT LOCAL_PORT ROUNDS\n");
		return 2;
	}
	peer.svm_cid = strtoul(argv[1], NULL, 0);
	peer.svm_port = strtoul(argv[2], NULL, 0);
	local_port = strtoul(argv[3], NULL, 0);
	rounds = atoi(argv[4]);

	fd = bound_socket(local_port);
	if (fd < 0) {
		printf("VSOCK-REBIND-DONE 0 0 bind:%s\n", strerror(errno));
		return 1;
	}
	for (r = 0; r < rounds; r++) {
		if (connect(fd, (struct sockaddr *)&peer, sizeof(peer))) {
			why = "connect";
			break;
		}
		close(fd);
		t0 = now_us();
		while ((fd = bound_socket(local_port)) < 0) {
			if (errno != EADDRINUSE || now_us() - t0 > GIVE_UP_US)
				break;
			usleep(1000);
		}
		waited = now_us() - t0;
		if (waited > max)
			max = waited;
		printf("VSOCK-REBIND %d %lld\n", r, waited);
		if (fd < 0) {
			why = errno == EADDRINUSE ? "never-freed" : "bind";
			break;
		}
	}
	if (strcmp(why, "ok"))
		printf("VSOCK-REBIND-DONE %d %lld %s:%s\n", r, max, why, strerror(errno));
	else
		printf("VSOCK-REBIND-DONE %d %lld ok\n", r, max);
	if (fd >= 0)
		close(fd);
	return strcmp(why, "ok") ? 1 : 0;
}
