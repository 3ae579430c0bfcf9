#!/usr/bin/env bash
# Counts GoogleTest cases (not Bazel targets) from the JUnit XML files Bazel leaves in
# bazel-testlogs/ (or in each directory given: CI adds the sanitizer runs' testlogs and
# tools/fuzz.sh's results), and prints "N passed, M failed[, K skipped]".
# A test binary that crashed leaves Bazel's stand-in XML with errors="1": counted failed.
set -euo pipefail
[ $# -gt 0 ] || set -- bazel-testlogs
find -L "$@" -name test.xml -print0 | xargs -0 -r awk '
  # The first <testsuites> or <testsuite> element of each file carries the totals.
  FNR == 1 { done = 0 }
  !done && /<testsuites[ >]/ || (!done && /<testsuite[ >]/) {
    t = f = e = s = d = 0
    if (match($0, /tests="[0-9]+"/))    t = substr($0, RSTART + 7, RLENGTH - 8)
    if (match($0, /failures="[0-9]+"/)) f = substr($0, RSTART + 10, RLENGTH - 11)
    if (match($0, /errors="[0-9]+"/))   e = substr($0, RSTART + 8, RLENGTH - 9)
    if (match($0, /disabled="[0-9]+"/)) d = substr($0, RSTART + 10, RLENGTH - 11)
    tests += t; failed += f + e; disabled += d
    done = 1
  }
  /<testcase / && /result="skipped"/ { skipped++ }
  END {
    passed = tests - failed - skipped - disabled
    if (passed < 0) passed = 0
    line = passed " passed, " failed " failed"
    if (skipped > 0) line = line ", " skipped " skipped"
    print line
  }'
