#!/usr/bin/env bash
# Builds the three packages from the Bazel-built binaries (tools/deb/build.sh, as
# `make deb` does), then checks them without touching this machine:
#   - contents (dpkg-deb -c) and control fields (dpkg-deb -f): each file where it
#     belongs, weftctl in weft-cli only, no path in two packages, conffiles;
#   - Depends covers every shared library the binaries need (each NEEDED soname is
#     found with dpkg -S and its package must be in Depends) and the package chain;
#   - install into a scratch root with dpkg --root (maintainer scripts run chrootless
#     with DPKG_ROOT, so the weft user is created in the scratch /etc/passwd), then
#     purge weft-controller: its conffile and state go, weft-agent and weftctl stay;
#   - lintian reports no errors.
set -euo pipefail

fail() { echo "FAIL: $*"; exit 1; }
# Whether line $2 is in text $1 (no pipe: grep -q would SIGPIPE the writer under pipefail).
contains() { grep -qxF -- "$2" <<< "$1"; }
matches() { grep -q -- "$2" <<< "$1"; }
for tool in dpkg-deb dpkg-shlibdeps dpkg; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool missing (Debian package dpkg-dev)"; exit 0; }
done

tmp=${TEST_TMPDIR:-$(mktemp -d)}
dist="$tmp/dist"
tools/deb/build.sh "$dist" "$PWD" > "$tmp/built.txt"
version=$(sed -n 's/^inline constexpr char kControllerVersion\[\] = "\(.*\)";/\1/p' \
  controller/server/controller_server.h)
arch=$(dpkg --print-architecture)
deb() { echo "$dist/${1}_${version}_${arch}.deb"; }
for p in weft-cli weft-controller weft-agent; do [ -f "$(deb $p)" ] || fail "no $(deb $p)"; done

# --- contents ---------------------------------------------------------------------
files() { dpkg-deb -c "$(deb "$1")" | awk '$1 !~ /^d/ {print $6}' | sed 's|^\./|/|' | sort; }
has() {  # package path
  contains "$(files "$1")" "$2" || fail "$1 lacks $2"
}
lacks() { ! contains "$(files "$1")" "$2" || fail "$1 ships $2"; }
has weft-cli /usr/bin/weftctl
has weft-controller /usr/bin/weft-controller
has weft-controller /lib/systemd/system/weft-controller.service
has weft-controller /etc/weft/controller.yaml
has weft-controller /usr/lib/sysusers.d/weft.conf
has weft-agent /usr/bin/weft-agent
has weft-agent /lib/systemd/system/weft-agent.service
has weft-agent /etc/weft/agent.yaml
for p in weft-cli weft-controller weft-agent; do
  has $p /usr/share/doc/$p/copyright
  has $p /usr/share/doc/$p/changelog.gz
done
lacks weft-controller /usr/bin/weftctl
lacks weft-agent /usr/bin/weftctl
matches "$(dpkg-deb -c "$(deb weft-controller)")" ' \./var/lib/weft/$' || fail "no /var/lib/weft in weft-controller"
dups=$(for p in weft-cli weft-controller weft-agent; do files $p; done | sort | uniq -d)
[ -z "$dups" ] || fail "paths shipped by two packages: $dups"
cmp -s <(dpkg-deb --fsys-tarfile "$(deb weft-agent)" | tar -xO ./lib/systemd/system/weft-agent.service) \
  deploy/systemd/weft-agent.service || fail "weft-agent.service differs from deploy/systemd"
matches "$(dpkg-deb -f "$(deb weft-controller)" Depends)" "weft-cli (= $version)" || fail "weft-controller does not depend on weft-cli"
matches "$(dpkg-deb -f "$(deb weft-agent)" Depends)" "weft-cli (= $version)" || fail "weft-agent does not depend on weft-cli"
contains "$(dpkg-deb --info "$(deb weft-controller)" conffiles)" /etc/weft/controller.yaml || fail "controller.yaml is not a conffile"
contains "$(dpkg-deb --info "$(deb weft-agent)" conffiles)" /etc/weft/agent.yaml || fail "agent.yaml is not a conffile"

# --- dependencies: every NEEDED library's package is in Depends ---------------------
libraries=$(ldconfig -p)
for pair in weft-cli:usr/bin/weftctl weft-controller:usr/bin/weft-controller weft-agent:usr/bin/weft-agent; do
  pkg=${pair%%:*} path=${pair#*:}
  x="$tmp/x-$pkg"; mkdir -p "$x"; dpkg-deb -x "$(deb $pkg)" "$x"
  depends=$(dpkg-deb -f "$(deb $pkg)" Depends | tr ',' '\n' | sed 's/^ *//; s/ .*//')
  for soname in $(readelf -d "$x/$path" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    lib=$(awk -v s="$soname" '$1 == s {print $NF; exit}' <<< "$libraries")
    [ -n "$lib" ] || fail "$pkg: $soname not found on this machine"
    # dpkg knows a library by the path its package ships: /lib or /usr/lib (merged /usr).
    real=$(readlink -f "$lib") owner=""
    for candidate in "$lib" "$real" "${real#/usr}" "/usr${real#/usr}"; do
      owner=$(dpkg -S "$candidate" 2>/dev/null | sed -n '1s/:.*//p' || true)
      if [ -n "$owner" ]; then break; fi
    done
    [ -n "$owner" ] || fail "$pkg: no package owns $lib"
    contains "$depends" "$owner" || fail "$pkg needs $soname from $owner, which Depends lacks"
  done
  # No debug symbols or build paths left behind.
  ! matches "$(readelf -S "$x/$path")" '\.debug_\|\.symtab' || fail "$pkg: $path is not stripped"
done

# --- install into a scratch root ------------------------------------------------------
root="$tmp/root"
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/log" "$root/etc"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
sdpkg() { dpkg --root="$root" --force-script-chrootless --force-not-root --force-depends \
  --log="$root/var/log/dpkg.log" "$@"; }
sdpkg -i "$(deb weft-cli)" "$(deb weft-controller)" "$(deb weft-agent)" > "$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "dpkg --root install failed"; }
for p in weft-cli weft-controller weft-agent; do
  matches "$(dpkg --root="$root" -s $p)" '^Status: install ok installed' || fail "$p not installed in the scratch root"
done
[ -x "$root/usr/bin/weftctl" ] && [ -x "$root/usr/bin/weft-controller" ] && [ -x "$root/usr/bin/weft-agent" ] ||
  fail "binaries missing in the scratch root"
# The stripped binaries load their libraries and run: an unknown command is a usage error.
rc=0; usage=$("$root/usr/bin/weftctl" no-such-command 2>&1) || rc=$?
[ $rc -eq 2 ] && matches "$usage" "unknown command 'no-such-command'" ||
  fail "installed weftctl does not run (exit $rc): $usage"
rc=0; usage=$("$root/usr/bin/weft-agent" no-such-command 2>&1) || rc=$?
[ $rc -eq 2 ] && matches "$usage" "unexpected argument" ||
  fail "installed weft-agent does not run (exit $rc): $usage"
if command -v systemd-sysusers >/dev/null; then
  grep -q '^weft:' "$root/etc/passwd" || fail "postinst did not create the weft user in the scratch root"
fi
# The controller's state (what StateDirectory= would create) goes on purge; its
# conffile too; the agent and weftctl stay.
mkdir -p "$root/var/lib/weft/controller" && echo state > "$root/var/lib/weft/controller/weft.db"
sdpkg --purge weft-controller >> "$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "purge failed"; }
[ ! -e "$root/var/lib/weft/controller" ] || fail "purge left /var/lib/weft/controller"
[ ! -e "$root/etc/weft/controller.yaml" ] || fail "purge left /etc/weft/controller.yaml"
[ -e "$root/etc/weft/agent.yaml" ] && [ -x "$root/usr/bin/weftctl" ] || fail "purging the controller took the agent's files"
# This machine was not touched.
! dpkg-query -W weft-cli >/dev/null 2>&1 || [ -n "${WEFT_DEB_INSTALLED:-}" ] ||
  fail "weft-cli is installed on this machine"

# --- lintian --------------------------------------------------------------------------
if command -v lintian >/dev/null; then
  lintian --tag-display-limit 0 "$(deb weft-cli)" "$(deb weft-controller)" "$(deb weft-agent)" \
    > "$tmp/lintian.txt" 2>&1 || true
  cat "$tmp/lintian.txt"
  ! grep -q '^E: ' "$tmp/lintian.txt" || fail "lintian reports errors"
else
  echo "SKIPPED lintian: not installed (Debian package lintian; tools/deps.sh)"
fi
echo "PASS: $(tr '\n' ' ' < "$tmp/built.txt" | sed "s|$dist/||g")"
