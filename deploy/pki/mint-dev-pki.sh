#!/usr/bin/env bash
# Mints a development PKI for Weft with openssl: a CA, the controller's server
# certificate, one certificate per node (CN = node name, OU = agent), one client
# certificate per operator role (OU = viewer, scheduler, operator, admin), an expired
# node certificate (for tests), and one bearer token per role with the tokens file the
# controller reads. NOT for production: the CA key sits next to the certificates.
#
#   deploy/pki/mint-dev-pki.sh OUT_DIR [--controller-name NAME]... [--node NAME]...
#
# OUT_DIR gets:
#   ca.crt ca.key                       the development CA (valid 365 days)
#   controller.crt controller.key      SANs: localhost, 127.0.0.1, ::1 and every
#                                      --controller-name (an IP address or a DNS name)
#   <node>.crt <node>.key              per --node (default: gpu-node-01)
#   viewer|scheduler|operator|admin.crt/.key   CN = dev-<role>, OU = <role>
#   expired.crt expired.key            CN = the first node, OU = agent, expired yesterday
#   token-<role>                       a bearer token (weftctl --token "$(cat token-operator)")
#   tokens                             the controller's tokens_file (SHA-256 hashes only)
# Install as /etc/weft/pki/ (deploy/examples/*.yaml point there). Keys are mode 0600.
set -euo pipefail

usage() {
  echo "usage: $0 OUT_DIR [--controller-name NAME]... [--node NAME]..." >&2
  exit 2
}

[ $# -ge 1 ] || usage
out=$1
shift
controller_names=()
nodes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --controller-name) [ $# -ge 2 ] || usage; controller_names+=("$2"); shift 2 ;;
    --node) [ $# -ge 2 ] || usage; nodes+=("$2"); shift 2 ;;
    *) echo "mint-dev-pki: unknown argument '$1'" >&2; usage ;;
  esac
done
[ ${#nodes[@]} -gt 0 ] || nodes=(gpu-node-01)
command -v openssl >/dev/null || { echo "mint-dev-pki: openssl is not installed (apt-get install openssl)" >&2; exit 1; }

mkdir -p "$out"
cd "$out"
umask 077

# A P-256 key and a CSR for SUBJECT; NAME.key, NAME.csr.
new_key_and_csr() {
  local name=$1 subject=$2
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$name.key" -out "$name.csr" -subj "$subject" 2>/dev/null
}

# Signs NAME.csr with the CA for DAYS days (negative: already expired) and EXTENSIONS.
sign() {
  local name=$1 days=$2 extensions=$3
  printf '%b' "$extensions" >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial \
    -days "$days" -sha256 -extfile "$name.ext" -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
  chmod 0644 "$name.crt"
}

client_ext='basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n'

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 365 -sha256 \
  -keyout ca.key -out ca.crt -subj "/O=Weft development/CN=Weft development CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  2>/dev/null
chmod 0644 ca.crt

sans="DNS:localhost,IP:127.0.0.1,IP:::1"
for name in ${controller_names[@]+"${controller_names[@]}"}; do
  if [[ "$name" =~ ^[0-9.]+$ || "$name" == *:* ]]; then sans+=",IP:$name"; else sans+=",DNS:$name"; fi
done
new_key_and_csr controller "/O=Weft development/OU=controller/CN=weft-controller"
sign controller 365 "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=$sans\n"

for node in "${nodes[@]}"; do
  new_key_and_csr "$node" "/O=Weft development/OU=agent/CN=$node"
  sign "$node" 365 "$client_ext"
done

for role in viewer scheduler operator admin; do
  new_key_and_csr "$role" "/O=Weft development/OU=$role/CN=dev-$role"
  sign "$role" 365 "$client_ext"
done

# OpenSSL 3.0's x509 -req accepts a negative -days: notAfter lands before now.
new_key_and_csr expired "/O=Weft development/OU=agent/CN=${nodes[0]}"
sign expired -1 "$client_ext"

: >tokens
echo "# Weft development tokens: NAME ROLE sha256:HEX (made by mint-dev-pki.sh)" >>tokens
for role in viewer scheduler operator admin; do
  token=$(openssl rand -hex 32)
  printf '%s\n' "$token" >"token-$role"
  hash=$(printf '%s' "$token" | openssl dgst -sha256 -r | cut -d' ' -f1)
  echo "dev-$role $role sha256:$hash" >>tokens
done
chmod 0644 tokens
rm -f ca.srl

echo "mint-dev-pki: wrote a development CA, controller, ${#nodes[@]} node, 4 role and 1 expired certificate(s) and 4 tokens to $out"
