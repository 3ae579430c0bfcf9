#!/usr/bin/env bash
# Captures what weft-agent reads from sysfs, debugfs and configfs on this node into one
# tarball to attach to a bug report: every RDMA device under /sys/class/infiniband (its
# ports' state, rate, link layer, GID table, counters/, counters_ext/, hw_counters/),
# the PCI function behind it (vendor, device, class, NUMA node, its place in the PCI
# tree) with its netdevs (mtu, speed, state, MLNX_OFED ecn/), the NVIDIA GPUs, and the
# DCQCN cc_params (debugfs) and rdma_cm ToS (configfs) where they exist. Symlinks stay
# symlinks, so the PCI tree distances and class links read back the same.
#
#   tools/capture-sysfs.sh [-r ROOT] [-o OUT.tar.gz]
#
# -r  the filesystem root holding sys/ (default /; a copy for tests). -o  the tarball
# (default ./weft-sysfs-<hostname>-<UTC time>.tar.gz). Run as root to include debugfs.
# Read it back with:  mkdir r && tar -C r -xzf OUT.tar.gz && weft-agent inspect --root r
# A file that cannot be read is left out and named in CAPTURE-ERRORS inside the tarball
# (the agent treats it as absent too). Needs bash, coreutils, find and tar only.
set -euo pipefail

root=/
out=""
while getopts "r:o:" opt; do
  case "$opt" in
    r) root="$OPTARG" ;;
    o) out="$OPTARG" ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
[ -d "$root" ] || { echo "capture-sysfs: root $root is not a directory" >&2; exit 2; }
root=$(cd -P "$root" && pwd)
[ "$root" = / ] && root=""
[ -d "$root/sys/class/infiniband" ] || {
  echo "capture-sysfs: no $root/sys/class/infiniband: no RDMA device (is the driver loaded?)" >&2
  exit 1
}
[ -n "$out" ] || out="weft-sysfs-$(hostname)-$(date -u +%Y%m%dT%H%M%SZ).tar.gz"

stage=$(mktemp -d /tmp/weft-capture.XXXXXX)
trap 'rm -rf "$stage"' EXIT
errors="$stage/CAPTURE-ERRORS"
: >"$errors"

# Root-relative path of an absolute path under $root.
rel() { REL="${1#"$root"/}"; }

declare -A made_dirs
make_parent() {  # of a stage path
  local dir="${1%/*}"
  [ -n "${made_dirs[$dir]:-}" ] && return 0
  mkdir -p "$dir"
  made_dirs[$dir]=1
}

# A sysfs attribute is read whole with one read(2) by the shell itself (no process per
# file: a node has thousands); its size on disk (4096) says nothing.
copy_file() {  # root-relative path of a regular file
  local dst="$stage/$1" value=""
  make_parent "$dst"
  local why
  if { IFS= read -r -d '' value || true; } 2>/dev/null <"$root/$1"; then
    # An empty value or a failed read(2) look alike to the shell: ask cat which.
    if [ -z "$value" ] && ! why=$(cat "$root/$1" 2>&1 >/dev/null); then
      echo "$1: ${why#cat: }" >>"$errors"
      return 0
    fi
    printf '%s' "$value" >"$dst"
  else
    echo "$1: cannot be opened" >>"$errors"
  fi
}

copy_link() {  # root-relative path of a symlink
  local dst="$stage/$1"
  make_parent "$dst"
  ln -sfn "$(readlink "$root/$1")" "$dst"
}

copy_dir_entries() {  # root-relative directory
  local dir="$root/$1" entry
  [ -d "$dir" ] || return 0
  mkdir -p "$stage/$1"
  for entry in "$dir"/*; do
    rel "$entry"
    if [ -L "$entry" ]; then
      copy_link "$REL"
    elif [ -f "$entry" ]; then
      copy_file "$REL"
    elif [ -d "$entry" ]; then
      mkdir -p "$stage/$REL"  # kept: an attribute that is a directory reads as absent
    fi
  done
}

copy_tree() {  # root-relative directory, recursively (small trees: ecn/, cc_params/)
  local dir="$root/$1" entry
  [ -d "$dir" ] || return 0
  while IFS= read -r -d '' entry; do
    rel "$entry"
    if [ -L "$entry" ]; then
      copy_link "$REL"
    elif [ -d "$entry" ]; then
      mkdir -p "$stage/$REL"
    else
      copy_file "$REL"
    fi
  done < <(find "$dir" -mindepth 1 -print0)
}

copy_pci_function() {  # absolute, resolved path of a PCI function
  local fn="$1" attr
  rel "$fn"
  local at="$REL"
  for attr in vendor device class numa_node local_cpulist subsystem_vendor subsystem_device; do
    [ -f "$fn/$attr" ] && copy_file "$at/$attr"
  done
  return 0
}

for class_link in "$root"/sys/class/infiniband/*; do
  [ -e "$class_link" ] || continue
  rel "$class_link"; copy_link "$REL"
  dev=$(cd -P "$class_link" && pwd)
  rel "$dev"; copy_dir_entries "$REL"
  for port in "$dev"/ports/*; do
    [ -d "$port" ] || continue
    rel "$port"; p="$REL"
    copy_dir_entries "$p"
    for sub in counters counters_ext hw_counters gids gid_attrs/types gid_attrs/ndevs; do
      copy_dir_entries "$p/$sub"
    done
  done
  if [ -L "$dev/device" ]; then
    fn=$(cd -P "$dev/device" && pwd)
    copy_pci_function "$fn"
    bdf=${fn##*/}
    [ -L "$root/sys/bus/pci/devices/$bdf" ] && copy_link "sys/bus/pci/devices/$bdf"
    for nd in "$fn"/net/*; do
      [ -e "$nd" ] || continue
      rel "$nd"; copy_dir_entries "$REL"; copy_tree "$REL/ecn"
    done
    copy_tree "sys/kernel/debug/mlx5/$bdf/cc_params"
  fi
  # The netdevs of the GID table (also those of a device without a PCI function).
  for ndev_file in "$dev"/ports/*/gid_attrs/ndevs/*; do
    [ -f "$ndev_file" ] || continue
    name=""
    { IFS= read -r name || true; } 2>/dev/null <"$ndev_file"
    name="${name//[[:space:]]/}"
    [ -n "$name" ] && [ -L "$root/sys/class/net/$name" ] || continue
    [ -L "$stage/sys/class/net/$name" ] && continue
    copy_link "sys/class/net/$name"
    nd=$(cd -P "$root/sys/class/net/$name" && pwd)
    rel "$nd"; copy_dir_entries "$REL"; copy_tree "$REL/ecn"
  done
done

# NVIDIA GPUs, for their closest NIC.
for fn_link in "$root"/sys/bus/pci/devices/*; do
  [ -e "$fn_link" ] || continue
  vendor=""
  { IFS= read -r vendor || true; } 2>/dev/null <"$fn_link/vendor"
  [ "$vendor" = 0x10de ] || continue
  rel "$fn_link"; copy_link "$REL"
  copy_pci_function "$(cd -P "$fn_link" && pwd)"
done

copy_tree sys/kernel/config/rdma_cm

{
  echo "weft capture-sysfs of $(hostname) at $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "kernel: $(uname -r)"
} >"$stage/CAPTURE-INFO"
tar -C "$stage" -czf "$out" .
echo "capture-sysfs: wrote $out ($(find "$stage/sys" -type f | wc -l) files, $(grep -c . "$errors" || true) unreadable)"
