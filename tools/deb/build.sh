#!/usr/bin/env bash
# Builds the Debian packages weft-cli, weft-controller and weft-agent from binaries
# Bazel already built (`make deb` builds them first), into OUT_DIR (default dist/).
#   weft-cli         /usr/bin/weftctl
#   weft-controller  /usr/bin/weft-controller, its unit, /etc/weft/controller.yaml,
#                    the sysusers.d entry of its user; Depends: weft-cli
#   weft-agent       /usr/bin/weft-agent, its unit, /etc/weft/agent.yaml; Depends: weft-cli
# weftctl lives in weft-cli alone (two packages cannot ship one path), so installing
# either daemon brings it. Depends on Debian's runtime libraries come from
# dpkg-shlibdeps over the binaries. Needs dpkg-dev (dpkg-shlibdeps, dpkg-deb); no root.
#
# Usage: tools/deb/build.sh [OUT_DIR] [BIN_DIR]   (BIN_DIR: `bazel info bazel-bin`)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:-$repo/dist}" && cd "${1:-$repo/dist}" && pwd)
bin=${2:-$(cd "$repo" && bazel info bazel-bin 2>/dev/null)}
version=$(sed -n 's/^inline constexpr char kControllerVersion\[\] = "\(.*\)";/\1/p' \
  "$repo/controller/server/controller_server.h")
[ -n "$version" ] || { echo "build.sh: no kControllerVersion in controller/server/controller_server.h" >&2; exit 1; }
arch=$(dpkg --print-architecture)
maintainer="The Weft maintainers <maintainers@weft.example.org>"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/debian"
# dpkg-shlibdeps reads debian/control of a source package; it needs only to exist.
printf 'Source: weft\n' > "$stage/debian/control"

# package name, summary, description lines (one per argument after the second)
start_package() {
  pkg=$1
  root="$stage/debian/$pkg"
  install -d "$root/DEBIAN" "$root/usr/share/doc/$pkg"
  install -m 0644 "$here/copyright" "$root/usr/share/doc/$pkg/copyright"
  install -m 0644 "$here/README.Debian" "$root/usr/share/doc/$pkg/README.Debian"
  gzip -9n < "$here/changelog" > "$root/usr/share/doc/$pkg/changelog.gz"
  chmod 0644 "$root/usr/share/doc/$pkg/changelog.gz"
}

install_binary() {  # built binary, destination under the package root
  install -D -m 0755 "$1" "$root/$2"
  # As dh_strip does: no debug sections, no compiler notes.
  strip --strip-unneeded --remove-section=.comment --remove-section=.note "$root/$2"
}

install_script() {  # DEBIAN/name from tools/deb/<pkg>.<name>
  install -m 0755 "$here/$pkg.$1" "$root/DEBIAN/$1"
}

finish_package() {  # extra Depends, summary, description
  local extra_depends=$1 summary=$2 description=$3
  local shlibs depends
  shlibs=$(cd "$stage" && find "debian/$pkg/usr/bin" -type f -print0 |
    xargs -0 dpkg-shlibdeps --warnings=0 -O | sed -n 's/^shlibs:Depends=//p')
  depends=$shlibs
  [ -n "$extra_depends" ] && depends="$extra_depends, $shlibs"
  find "$root" -path "$root/DEBIAN" -prune -o -type f -printf '%P\0' |
    (cd "$root" && xargs -0 md5sum) > "$root/DEBIAN/md5sums"
  chmod 0644 "$root/DEBIAN/md5sums"
  [ -d "$root/etc" ] && find "$root/etc" -type f -printf '/etc/%P\n' > "$root/DEBIAN/conffiles"
  cat > "$root/DEBIAN/control" <<CONTROL
Package: $pkg
Version: $version
Architecture: $arch
Maintainer: $maintainer
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Section: net
Priority: optional
Description: $summary
$(echo "$description" | fold -s -w 78 | sed 's/ *$//; s/^/ /')
CONTROL
  dpkg-deb --root-owner-group -Zxz --build "$root" "$out/${pkg}_${version}_${arch}.deb" >/dev/null
  echo "$out/${pkg}_${version}_${arch}.deb"
}

start_package weft-cli
install_binary "$bin/cli/weftctl" usr/bin/weftctl
finish_package "" "Weft operator CLI for RoCEv2 GPU clusters" \
  "weftctl talks to a weft-controller over gRPC: nodes, racks, drains, events, job placement, topology exports for Slurm and Kubernetes, and Prometheus scrape targets (weftctl prometheus targets)."

start_package weft-controller
install_binary "$bin/controller/weft-controller" usr/bin/weft-controller
install -D -m 0644 "$repo/deploy/systemd/weft-controller.service" \
  "$root/lib/systemd/system/weft-controller.service"
install -D -m 0644 "$repo/deploy/examples/controller.yaml" "$root/etc/weft/controller.yaml"
install -D -m 0644 "$here/weft.sysusers" "$root/usr/lib/sysusers.d/weft.conf"
install -d -m 0755 "$root/var/lib/weft"
for s in postinst prerm postrm; do install_script $s; done
finish_package "weft-cli (= $version), systemd" "Weft controller for RoCEv2 GPU clusters" \
  "The controller of a Weft cluster: inventory of nodes, racks, NICs and GPUs, agent sessions and liveness, fabric health rules, drains, rack-aware job placement, desired-state rollouts, Prometheus metrics. Runs as the systemd service weft-controller (Type=notify, user weft, state in /var/lib/weft/controller)."

start_package weft-agent
install_binary "$bin/agent/weft-agent" usr/bin/weft-agent
install -D -m 0644 "$repo/deploy/systemd/weft-agent.service" \
  "$root/lib/systemd/system/weft-agent.service"
install -D -m 0644 "$repo/deploy/examples/agent.yaml" "$root/etc/weft/agent.yaml"
install -d -m 0755 "$root/var/lib/weft"
for s in postinst prerm postrm; do install_script $s; done
finish_package "weft-cli (= $version)" "Weft node agent for RoCEv2 GPU clusters" \
  "The agent on every GPU node of a Weft cluster: discovers RDMA NICs and GPUs, streams port, ECN/CNP, retransmission and per-priority PFC counters to the controller, applies QoS and DCQCN tunables, serves Prometheus metrics. Runs as the systemd service weft-agent (Type=notify, root with CAP_NET_ADMIN only)."
