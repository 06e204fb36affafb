#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Host-side tests of vhostctl, no kernel support needed; KTAP on stdout,
# exit 1 on any failure.  Expects "make" to have built vhostctl and
# tests/test_vhostctl (make check does both; it gives their paths in
# VHOSTCTL, VHOSTCTL_UNIT and VHOSTCTL_GEN when it builds elsewhere).
#
#   1       the C unit tests (parsing, requests, printing, errors), nested
#   2..     the binary: exit statuses and messages of the command line,
#           nothing sent to the kernel on a parse error, -n with a
#           namespace that does not exist, -b batches that fail on a line,
#           JSON against python3 -m json.tool, OpenMetrics through a real
#           parser (tests/openmetrics-check.py), built on the generated library
#           only, the man page, the bash completion
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
bin=${VHOSTCTL:-$src/vhostctl}
unit=${VHOSTCTL_UNIT:-$here/test_vhostctl}
gen=${VHOSTCTL_GEN:-$src/generated}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

n=0 rc=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
nok() { n=$((n + 1)); echo "not ok $n $1"; rc=1; }
skip() { n=$((n + 1)); echo "ok $n $1 # SKIP $2"; }
diag() { sed 's/^/# /'; }

# expect NAME STATUS STDERR ARGS...: exit status and exact stderr, empty stdout
expect() {
	local name=$1 want_rc=$2 want_err=$3 got_rc
	shift 3
	"$bin" "$@" > "$tmp/out" 2> "$tmp/err"
	got_rc=$?
	if [ "$got_rc" = "$want_rc" ] && [ "$(cat "$tmp/err")" = "$want_err" ] &&
	   [ ! -s "$tmp/out" ]; then
		ok "$name"
	else
		{
			echo "vhostctl $*: status $got_rc, want $want_rc"
			echo "stderr:"; cat "$tmp/err"
			echo "want:"; echo "$want_err"
			echo "stdout:"; cat "$tmp/out"
		} | diag
		nok "$name"
	fi
}

plan=90
echo "TAP version 13"
echo "1..$plan"

# 1: unit tests, as a nested KTAP block
if [ -x "$unit" ]; then
	"$unit" > "$tmp/unit" 2>&1
	urc=$?
	sed 's/^/    /' "$tmp/unit"
	if [ $urc = 0 ]; then ok unit_tests; else nok unit_tests; fi
else
	echo "# $unit not built" ; nok unit_tests
fi

# 2-28: command line errors: status 2, one message, nothing on stdout
expect card_bad_value 2 'Invalid "busypoll-us" value "x"' \
	set dev vhost0 busypoll-us x zerocopy on
expect negative_value 2 'Invalid "busypoll-us" value "-1"' \
	set dev vhost0 busypoll-us -1
expect duplicate 2 'Duplicate argument "zerocopy"' \
	set dev vhost0 zerocopy on zerocopy off
expect on_off 2 'Invalid "zerocopy" value "yes", expected "on" or "off"' \
	set dev vhost0 zerocopy yes
expect unknown_keyword 2 'Unknown keyword "busypoll", try "vhostctl dev help"' \
	set dev vhost0 busypoll 50
expect missing_value 2 'Missing value for "zcopy-min-len"' \
	set dev vhost0 zcopy-min-len
expect device_missing 2 'Device name is missing' set busypoll-us 50
expect dev_without_name 2 'Device name is missing' show dev
expect nothing_to_set 2 \
	'Nothing to set, give busypoll-us, zerocopy, zcopy-min-len, metamap or label' \
	set dev vhost0
expect duplicate_dev 2 'Duplicate argument "dev"' show dev vhost0 dev vhost1
expect bad_id 2 'Invalid device id "4294967296"' show dev 4294967296
expect unknown_object 2 'Object "sh" is unknown, try "vhostctl help"' sh
expect unknown_command 2 'Command "lst" is unknown, try "vhostctl dev help"' dev lst
expect unknown_option 2 'Unknown option "-x", try "vhostctl help"' -x show
expect monitor_garbage 2 'Unknown keyword "now", try "vhostctl help"' monitor now
expect long_name 2 'Invalid device name "vhost0123456789ab"' show vhost0123456789ab
expect bad_scope 2 'Invalid "scope" value "queues", expected "device" or "queue"' \
	stats dev vhost0 scope queues
expect index_without_dev 2 'Argument "index" needs a device, give "dev DEV"' \
	queue show index 0
expect bad_index 2 'Invalid "index" value "rx"' queue show dev vhost0 index rx
expect queue_unknown_keyword 2 'Unknown keyword "scope", try "vhostctl queue help"' \
	queue show dev vhost0 scope queue
expect queue_unknown_command 2 'Command "set" is unknown, try "vhostctl queue help"' \
	queue set vhost0
expect policy_nothing_to_set 2 'Nothing to set, give grant or busypoll-us-max' \
	set policy
expect policy_bad_grant 2 'Invalid "grant" value "zerocopy,admin-busypoll-us", expected "none", "all" or a comma-separated list of busypoll-us, zerocopy, zcopy-min-len, metamap, label' \
	set policy grant zerocopy,admin-busypoll-us busypoll-us-max 50
expect policy_bad_max 2 'Invalid "busypoll-us-max" value "50us"' \
	policy set grant busypoll-us busypoll-us-max 50us
expect policy_unknown_keyword 2 'Unknown keyword "zerocopy", try "vhostctl policy help"' \
	set policy zerocopy on
expect netns_missing_value 2 'Missing value for "-n"' -n
expect netns_bad_name 2 'Invalid network namespace name "../x"' -n ../x show

# 29-34: stats -i, -c, -o and monitor -t, -b with a command
expect count_without_interval 2 'Option "-c" needs "-i"' stats dev vhost0 -c 2
expect interval_zero 2 'Invalid "-i" value "0", expected 1 to 86400' stats -i 0
expect openmetrics_rates 2 '"-o openmetrics" prints counters, not rates: it does not take "-i"' \
	-o openmetrics stats -i 1
expect bad_output 2 'Invalid "-o" value "yaml", expected "text", "json", "openmetrics" or "prometheus"' \
	stats -o yaml
expect monitor_bad_option 2 'Unknown keyword "-i", try "vhostctl help"' monitor -t -i 1
expect batch_with_command 2 'Option "-b" takes no command, "show" belongs in the file' \
	-b - show

# 35: -n with a namespace "ip netns add" never made: status 1, before any socket
nons=vhostctl-test-nosuch.$$
expect netns_does_not_exist 1 "Error: cannot open network namespace \"$nons\": No such file or directory." \
	-n "$nons" show policy

# 36-38: -b: the first failing line ends the batch and is named, as "ip -b" does;
# lines before it ran (help needs no socket), none after it did
printf '# a comment\n\ndev help\n  queue help # ok\nset dev vhost0 zerocopy maybe\nshow\n' \
	> "$tmp/batch"
"$bin" -b "$tmp/batch" > "$tmp/out" 2> "$tmp/err"
brc=$?
if [ $brc = 2 ] && [ "$(cat "$tmp/err")" = "Invalid \"zerocopy\" value \"maybe\", expected \"on\" or \"off\"
Command failed $tmp/batch:5" ] && grep -q '^Usage: vhostctl dev show' "$tmp/out" &&
   grep -q '^Usage: vhostctl queue show' "$tmp/out"; then
	ok batch_stops_at_failed_line
else
	{ echo "status $brc"; cat "$tmp/err" "$tmp/out"; } | diag
	nok batch_stops_at_failed_line
fi
# -f goes on; stdin; the status is the first failure's
printf 'stats -c 1\nset vhost0 "zerocopy\nhelp\n' |
	"$bin" -f -b - > "$tmp/out" 2> "$tmp/err"
brc=$?
if [ $brc = 2 ] && [ "$(cat "$tmp/err")" = 'Option "-c" needs "-i"
Command failed -:1
Missing closing quote "
Command failed -:2' ] && grep -q '^Usage: vhostctl' "$tmp/out"; then
	ok batch_force_goes_on
else
	{ echo "status $brc"; cat "$tmp/err" "$tmp/out"; } | diag
	nok batch_force_goes_on
fi
expect batch_no_file 1 "Error: cannot open \"$tmp/nosuch\": No such file or directory." \
	-b "$tmp/nosuch"

# 39: no arguments: usage on stderr, status 2
"$bin" > "$tmp/out" 2> "$tmp/err"
if [ $? = 2 ] && grep -q '^Usage: vhostctl' "$tmp/err" && [ ! -s "$tmp/out" ]; then
	ok no_arguments_usage
else
	nok no_arguments_usage
fi

# 40: help and -V: stdout, status 0
if "$bin" help > "$tmp/h1" && "$bin" dev help > "$tmp/h2" &&
   "$bin" queue help > "$tmp/h3" && "$bin" -V > "$tmp/v" &&
   "$bin" policy help > "$tmp/h4" && "$bin" -n "$nons" set policy help > "$tmp/h5" &&
   grep -q 'vhostctl dev set \[ dev \] DEV' "$tmp/h1" &&
   grep -q 'vhostctl queue show' "$tmp/h1" &&
   grep -q 'vhostctl policy set \[ grant GRANTS \]' "$tmp/h1" &&
   grep -q -- '-n NETNS | --netns NETNS' "$tmp/h1" &&
   grep -q -- 'vhostctl \[ OPTIONS \] -b FILE' "$tmp/h1" &&
   grep -q -- 'monitor \[ -t \]' "$tmp/h1" &&
   grep -q -- '\[ -i SECONDS \[ -c COUNT \] \] \[ -o FORMAT \]' "$tmp/h2" &&
   grep -q -- 'FORMAT := { text | json | openmetrics | prometheus }' "$tmp/h2" &&
   grep -q '^Usage: vhostctl dev show' "$tmp/h2" &&
   ! grep -q 'queue show\|policy' "$tmp/h2" &&
   grep -q '^Usage: vhostctl queue show' "$tmp/h3" &&
   grep -q '^Usage: vhostctl policy show' "$tmp/h4" &&
   ! grep -q 'dev show\|queue show' "$tmp/h4" &&
   cmp -s "$tmp/h4" "$tmp/h5" &&
   grep -q '^vhostctl 2\.' "$tmp/v"; then
	ok help_and_version
else
	cat "$tmp"/h? "$tmp/v" | diag
	nok help_and_version
fi

# 41-42: a parse error never opens a netlink socket nor enters a namespace
if command -v strace > /dev/null && strace -o /dev/null true 2> /dev/null; then
	strace -f -e trace=socket,setns -o "$tmp/strace" "$bin" set dev vhost0 \
		busypoll-us 50 zerocopy maybe > /dev/null 2>&1
	if [ -s "$tmp/strace" ] && ! grep -q 'AF_NETLINK\|setns' "$tmp/strace"; then
		ok parse_error_sends_nothing
	else
		diag < "$tmp/strace"
		nok parse_error_sends_nothing
	fi
	strace -f -e trace=socket,setns,openat -o "$tmp/strace" "$bin" -n "$nons" \
		set policy grant zerocopy,metamap busypoll-us-max x > /dev/null 2>&1
	if [ -s "$tmp/strace" ] && ! grep -q "AF_NETLINK\|setns\|$nons" "$tmp/strace"; then
		ok policy_parse_error_sends_nothing
	else
		diag < "$tmp/strace"
		nok policy_parse_error_sends_nothing
	fi
else
	# strace is one of scripts/install-deps' packages: without it the
	# check did not run, which is a failure, not a skip.
	echo "strace not usable (scripts/install-deps installs it)" | diag
	nok parse_error_sends_nothing
	nok policy_parse_error_sends_nothing
fi

# 43: without the family: one clear message, status 1
if [ ! -d /sys/class/vhost ]; then
	expect no_family 1 'Error: the kernel has no "vhost" generic netlink family (no vhost admin plane in this kernel, or the vhost_admin module is not loaded).' \
		show
else
	skip no_family "this kernel has the vhost family"
fi

# 44: built on the generated library: no libnl, no hand-made messages
if grep -q libnl < <(ldd "$bin" 2> /dev/null); then
	ldd "$bin" | diag
	nok generated_library_only
elif grep -q . < <(grep -l -E 'nla_put|nlmsg_|genlmsg_|NLA_HDRLEN' "$src"/*.c "$src"/*.h \
		     2> /dev/null | diag); then
	nok generated_library_only
elif grep -q . < <(grep -rl 'YNL-GEN\|auto-generated from' "$src" --exclude-dir=generated \
		     --exclude-dir=tests | diag); then
	echo "generated files outside generated/" | diag
	nok generated_library_only
elif [ ! -f "$gen/vhost-user.h" ]; then
	echo "no $gen/vhost-user.h" | diag
	nok generated_library_only
else
	ok generated_library_only
fi

# 45-48: JSON: valid, pretty output is exactly json.tool's
py=$(command -v python3)
for s in "" "-s" "-s -s"; do
	name="json_tool_pretty${s:+_}${s//[- ]/}"
	if [ -z "$py" ]; then skip "$name" "no python3"; continue; fi
	# shellcheck disable=SC2086
	"$unit" --sample-json $s > "$tmp/c" && "$unit" --sample-json -p $s > "$tmp/p" &&
		"$py" -m json.tool < "$tmp/c" > "$tmp/t"
	if [ -s "$tmp/t" ] && cmp -s "$tmp/t" "$tmp/p"; then
		ok "$name"
	else
		diff "$tmp/t" "$tmp/p" | diag
		nok "$name"
	fi
done
if [ -n "$py" ] && "$unit" --sample-json -s -s | "$py" -c '
import json, sys
d = json.load(sys.stdin)
assert isinstance(d, list) and len(d) == 2
a, b = d
assert a["name"] == "vhost3" and a["features"] == 0x130000000
assert a["admin-busypoll-us"] == 50 and "busypoll-us" not in a
assert a["zerocopy"] == 1 and a["metamap"] == "off"
assert a["stats"]["tx-packets"] == 5000000000
assert [q["type"] for q in a["queues"]] == ["rx", "tx"]
assert [q["owner-busypoll-us"] for q in a["queues"]] == [0, 20]
assert "zcopy-sent" not in a["queues"][0]["stats"]
assert "owner-pid" not in b and "backend-ifname" not in b and "stats" not in b
'; then
	ok json_types
else
	nok json_types
fi

# 49-51: OpenMetrics through prometheus_client's parser, with the same values as
# the JSON (a failure without it: scripts/install-deps installs it)
omc=$here/openmetrics-check.py
for s in "" "-s -s"; do
	name="openmetrics_parses${s:+_queue_scope}"
	# shellcheck disable=SC2086
	"$unit" --sample-stats -j $s > "$tmp/sj" &&
		"$unit" --sample-stats --devices > "$tmp/sd" &&
		"$unit" --sample-stats -o openmetrics $s > "$tmp/om" &&
		"$omc" --stats-json "$tmp/sj" --devices-json "$tmp/sd" "$tmp/om" \
			> "$tmp/omc" 2>&1
	if [ $? = 0 ]; then
		ok "$name"
	else
		diag < "$tmp/omc"
		nok "$name"
	fi
done
# the check is not vacuous: what it must refuse, it refuses
"$unit" --sample-stats -o openmetrics > "$tmp/om"
bad=
for edit in '/^# EOF$/d' '3p' 's/{name=/{name=\\"/' '/^# TYPE vhost_zcopy_pending/s/gauge/counter/' \
	    '$i vhost_rx_packets_total{name="vhost9"} 1' 's/,queue_pair="0"//' \
	    '/^# UNIT vhost_busypoll_seconds/d'; do
	if sed "$edit" "$tmp/om" | "$omc" > /dev/null 2>&1; then
		bad+=" '$edit'"
	fi
done
# against the JSON: a value that differs, a sample missing
if [ -z "$bad" ] && ! "$omc" --stats-json <(sed 's/:640,/:641,/' "$tmp/sj") \
	--devices-json "$tmp/sd" "$tmp/om" > /dev/null 2>&1 &&
   ! sed '0,/^vhost_kicks_total/{/^vhost_kicks_total/d}' "$tmp/om" |
	"$omc" --stats-json "$tmp/sj" --devices-json "$tmp/sd" > /dev/null 2>&1 &&
   ! sed 's/queue_pair="0"/queue_pair="1"/' "$tmp/om" |
	"$omc" --devices-json "$tmp/sd" > /dev/null 2>&1; then
	ok openmetrics_check_refuses
else
	echo "openmetrics-check took the output edited with:$bad" | diag
	nok openmetrics_check_refuses
fi

# Prometheus's text format (-o prometheus) through promtool, as Prometheus
# and node_exporter's textfile collector read it: no lint problem (the
# OpenMetrics output fails there, its types lost: the check is not
# vacuous).  promtool comes from scripts/install-deps (build/tools); where
# it is not (a package build), the test says it is skipped.
promtool=${PROMTOOL:-$src/../../build/tools/promtool}
if [ -x "$promtool" ]; then
	"$unit" --sample-stats -o prometheus -s -s > "$tmp/prom" &&
		"$promtool" check metrics < "$tmp/prom" > "$tmp/pt" 2>&1
	r1=$?
	"$promtool" check metrics < "$tmp/om" > /dev/null 2>&1
	r2=$?
	if [ "$r1" = 0 ] && [ "$r2" != 0 ] && ! grep -q '^# EOF' "$tmp/prom"; then
		ok prometheus_text_passes_promtool
	else
		diag < "$tmp/pt"
		echo "promtool: $r1 on -o prometheus, $r2 on -o openmetrics" | diag
		nok prometheus_text_passes_promtool
	fi
else
	skip prometheus_text_passes_promtool "no promtool ($promtool: scripts/install-deps)"
fi

# 52-53: man page renders without warnings, and documents the grammar
if command -v man > /dev/null; then
	if MANWIDTH=80 man --warnings -l "$src/vhostctl.8" > "$tmp/man" 2> "$tmp/manerr" &&
	   [ ! -s "$tmp/manerr" ] && grep -q 'EXIT STATUS' "$tmp/man"; then
		ok man_page
	else
		diag < "$tmp/manerr"
		nok man_page
	fi
	missing=
	for w in "vhostctl queue show" "scope" "index" "busypoll-us" \
		 "admin-busypoll-us" "owner-busypoll-us" "metamap-valid" \
		 "backend-netnsid" "EXAMPLES" "EXIT STATUS" "monitor" \
		 "vhostctl policy show" "vhostctl policy set" "grant" \
		 "busypoll-us-max" "tenant" "--netns" "/var/run/netns" \
		 "PERMISSIONS AND NAMESPACES" "--interval" "--count" \
		 "--output" "openmetrics" "# EOF" "--timestamp" "--batch" \
		 "--force" "Command failed" "vhost_rx_packets_total"; do
		grep -q -- "$w" "$tmp/man" || missing+=" \"$w\""
	done
	if [ -z "$missing" ]; then
		ok man_page_grammar
	else
		echo "not in the man page:$missing" | diag
		nok man_page_grammar
	fi
else
	skip man_page "man not installed"
	skip man_page_grammar "man not installed"
fi

# 54-86: bash completion, with a stand-in vhostctl that lists two devices
mkdir -p "$tmp/bin"
cat > "$tmp/bin/vhostctl" << 'EOF2'
#!/bin/sh
echo '[{"id":0,"name":"vhost0","backend-ifname":"tap0"},{"id":1,"name":"vhost1"}]'
EOF2
chmod +x "$tmp/bin/vhostctl"
complete_test() {	# complete_test NAME WANT WORDS...
	local name=$1 want=$2 got
	shift 2
	got=$(PATH="$tmp/bin:$PATH" bash -c '
		. "$0"
		COMP_WORDS=("${@}"); COMP_CWORD=$(($# - 1))
		_vhostctl
		echo "${COMPREPLY[*]}"' "$src/bash-completion/vhostctl" "$@")
	if [ "$got" = "$want" ]; then
		ok "$name"
	else
		echo "completing '$*': got '$got', want '$want'" | diag
		nok "$name"
	fi
}
complete_test completion_objects "dev queue policy show set stats monitor status apply help" vhostctl ""
complete_test completion_dev_names "vhost0 tap0 vhost1" vhostctl set dev ""
complete_test completion_set_words "dev owner label policy defaults vhost0 tap0 vhost1" vhostctl set ""
complete_test completion_keywords "busypoll-us zcopy-min-len metamap label" \
	vhostctl set dev vhost0 zerocopy on ""
complete_test completion_on_off "on off" vhostctl dev set vhost0 zerocopy ""
complete_test completion_metamap "off batch map" vhostctl dev set vhost0 metamap ""
complete_test completion_stats_scope "device queue" vhostctl stats dev vhost0 scope ""
complete_test completion_stats_words "scope" vhostctl -j dev stats vhost0 ""
complete_test completion_queue_cmds "show help" vhostctl queue ""
complete_test completion_queue_dev "dev vhost0 tap0 vhost1" vhostctl queue show ""
complete_test completion_queue_index "index" vhostctl queue show dev vhost1 ""
complete_test completion_ids "1" vhostctl set dev 1
complete_test completion_policy_cmds "show set help" vhostctl policy ""
complete_test completion_policy_set_words "grant busypoll-us-max" vhostctl -j set policy ""
complete_test completion_policy_set_left "busypoll-us-max" vhostctl policy set grant all ""
complete_test completion_grants "none all busypoll-us zerocopy zcopy-min-len metamap label" \
	vhostctl set policy grant ""
complete_test completion_grants_after_comma \
	"zerocopy,busypoll-us zerocopy,zcopy-min-len zerocopy,metamap zerocopy,label" \
	vhostctl set policy grant zerocopy,
complete_test completion_show_policy "" vhostctl show policy ""
complete_test completion_defaults_unset "busypoll-us zerocopy zcopy-min-len metamap unset" \
	vhostctl set defaults ""
complete_test completion_unset_values "all busypoll-us zerocopy zcopy-min-len metamap" \
	vhostctl set defaults unset ""
complete_test completion_apply_check "check" vhostctl apply ch
complete_test completion_netns_value_skipped "vhost0 tap0 vhost1" \
	vhostctl -n tenant1 set dev ""
complete_test completion_netns_option "--netns" vhostctl -j --ne
complete_test completion_output_formats "text json openmetrics" vhostctl -o ""
complete_test completion_stats_output "text json openmetrics" vhostctl stats vhost0 -o ""
complete_test completion_stats_options "-i -c -o" vhostctl stats vhost0 -
complete_test completion_stats_options_left "-c -o" vhostctl stats -i 1 -
complete_test completion_stats_after_options "dev scope" vhostctl stats -i 1 ""
complete_test completion_monitor_t "-t" vhostctl monitor -
complete_test completion_monitor_watch "watch" vhostctl monitor ""
complete_test completion_defaults_set "busypoll-us zcopy-min-len metamap unset" \
	vhostctl set defaults zerocopy on ""
complete_test completion_show_defaults "" vhostctl show defaults ""
complete_test completion_option_values_skipped "vhost0 tap0 vhost1" \
	vhostctl -o json -i 2 -c 1 stats dev ""
complete_test completion_timestamp_option "--timestamp" vhostctl -j --ti
complete_test completion_batch_file "" vhostctl -b /nonexistent/x
complete_test completion_after_batch "" vhostctl -b /dev/null ""

if [ "$n" != "$plan" ]; then
	echo "# planned $plan tests, ran $n"
	rc=1
fi
exit $rc
