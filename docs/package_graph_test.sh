#!/usr/bin/env bash
# docs/architecture.md's package graph is what tools/package_graph.bzl says, and a
# picture drawn from a changed graph is caught.
set -euo pipefail
python3 tools/package_graph.py --check-doc docs/architecture.md
# The check must be able to fail: a copy of the page with one edge drawn off.
stale="${TEST_TMPDIR:-/tmp}/architecture.md"
sed 's/^  agent --> security$/  agent --> store/' docs/architecture.md >"$stale"
if python3 tools/package_graph.py --check-doc "$stale" >/dev/null; then
  echo "a stale picture passed the check" >&2
  exit 1
fi
echo PASS
