#!/usr/bin/env bash
# Installs the Debian 12 packages Weft builds, tests and demos with, if any is missing.
# Idempotent and silent when everything is there. Needs root (or sudo) only to install.
set -euo pipefail

packages=(
  bazel-bootstrap g++ make curl iproute2 nftables procps python3
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev
  libabsl-dev libyaml-cpp-dev prometheus-cpp-dev
  libibverbs-dev librdmacm-dev libsqlite3-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  lldpd prometheus-node-exporter slurmctld slurmd slurm-client
  libgloo-dev libopenmpi-dev openmpi-bin
  clang-14 libclang-rt-14-dev
  systemd prometheus dpkg-dev fakeroot lintian
  etcd-server etcd-client golang-etcd-server-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "weft: installing missing Debian packages: ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "weft: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
