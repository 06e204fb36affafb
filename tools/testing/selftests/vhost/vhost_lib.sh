# SPDX-License-Identifier: GPL-2.0
#
# Shell helpers of the vhost selftests' scripts; sourced, not run.

wait_for() {	# wait_for SECONDS CMD...: until CMD succeeds
	local end=$((SECONDS + $1))

	shift
	until "$@"; do
		[ "$SECONDS" -ge "$end" ] && return 1
		sleep 0.1
	done
}
