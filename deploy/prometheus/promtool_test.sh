#!/usr/bin/env bash
# promtool (Debian package prometheus) on Weft's Prometheus files: the scrape config's
# syntax, the alert rules, and the rules' unit tests (weft-alerts_test.yml).
set -euo pipefail
if ! command -v promtool >/dev/null; then
  echo "SKIPPED: promtool is not installed (Debian package prometheus; tools/deps.sh)"; exit 0
fi
cd deploy/prometheus
promtool check config --syntax-only prometheus.yml
promtool check rules weft-alerts.yml
promtool test rules weft-alerts_test.yml
