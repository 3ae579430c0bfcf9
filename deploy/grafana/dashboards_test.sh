#!/usr/bin/env bash
# Runs dashboards_test.py (Debian's python3) from the workspace root of the runfiles.
set -euo pipefail
exec python3 deploy/grafana/dashboards_test.py
