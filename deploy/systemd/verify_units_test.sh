#!/usr/bin/env bash
# systemd-analyze verify on both units, in a scratch root that holds the real daemon
# binaries at their packaged paths (/usr/bin) and a copy of this machine's systemd
# units (verify resolves targets like sysinit.target). Works where systemd is not
# PID 1: verify loads units offline. Any warning fails the test, and a deliberately
# broken unit must be refused, so the check itself is checked.
set -euo pipefail

if ! command -v systemd-analyze >/dev/null; then
  echo "SKIPPED: systemd-analyze is not installed (Debian package systemd)"; exit 0
fi
units_dir=""
for d in /usr/lib/systemd/system /lib/systemd/system; do
  [ -f "$d/sysinit.target" ] && { units_dir=$d; break; }
done
if [ -z "$units_dir" ]; then
  echo "SKIPPED: no systemd unit directory with sysinit.target on this machine"; exit 0
fi

root=$(mktemp -d "${TEST_TMPDIR:-/tmp}/root.XXXXXX")
mkdir -p "$root/usr/bin" "$root/usr/lib/systemd" "$root/etc/systemd/system"
cp -r "$units_dir" "$root/usr/lib/systemd/system"
install -m 0755 controller/weft-controller agent/weft-agent "$root/usr/bin/"
cp deploy/systemd/weft-controller.service deploy/systemd/weft-agent.service \
   "$root/etc/systemd/system/"

verify() {  # unit... ; prints systemd-analyze's output, fails on any of it
  local out rc=0
  out=$(systemd-analyze verify --root="$root" "$@" 2>&1) || rc=$?
  if [ $rc -ne 0 ] || [ -n "$out" ]; then
    echo "$out"; return 1
  fi
}

verify weft-controller.service weft-agent.service || {
  echo "FAIL: systemd-analyze verify reported problems with the units above"; exit 1; }

# The check must be able to fail: a typo'd directive and a missing binary.
sed -e 's/^Type=notify/Type=notifyy/' deploy/systemd/weft-agent.service \
  > "$root/etc/systemd/system/broken-type.service"
sed -e 's|^ExecStart=/usr/bin/weft-agent|ExecStart=/usr/bin/weft-agentx|' \
  deploy/systemd/weft-agent.service > "$root/etc/systemd/system/broken-exec.service"
for broken in broken-type.service broken-exec.service; do
  if verify "$broken" >/dev/null; then
    echo "FAIL: verify accepted $broken"; exit 1
  fi
done

# What the units promise: Type=notify with a watchdog, a state directory, and the
# capability sets the comments justify.
expect() {  # file line
  grep -qxF "$2" "deploy/systemd/$1" || { echo "FAIL: $1 lacks '$2'"; exit 1; }
}
for unit in weft-controller.service weft-agent.service; do
  expect "$unit" "Type=notify"
  expect "$unit" "NoNewPrivileges=yes"
  expect "$unit" "ProtectSystem=strict"
  grep -q '^WatchdogSec=' "deploy/systemd/$unit" || { echo "FAIL: $unit has no WatchdogSec"; exit 1; }
done
expect weft-controller.service "CapabilityBoundingSet="
expect weft-controller.service "StateDirectory=weft/controller"
expect weft-agent.service "CapabilityBoundingSet=CAP_NET_ADMIN"
expect weft-agent.service "StateDirectory=weft/agent"
echo "PASS: both units verify; broken units are refused"
