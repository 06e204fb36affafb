// SPDX-License-Identifier: GPL-2.0
/*
 * XDP_DROP everything: attached to the TAP that vhost-net transmits into, so
 * that the benchmark measures vhost-net and tun's XDP batch path, not the
 * stack behind it (upstream measured the direct map the same way).  Built by
 * scripts/bench with clang -target bpf into build/bench/xdp_drop.o and
 * attached with "ip link set dev TAP xdp obj xdp_drop.o sec xdp".
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

SEC("xdp")
int xdp_drop(struct xdp_md *ctx)
{
	return XDP_DROP;
}

char _license[] SEC("license") = "GPL";
