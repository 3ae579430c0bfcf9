#!/usr/bin/env bash
# Counts GoogleTest cases (not Bazel targets) from the JUnit XML files Bazel leaves in
# bazel-testlogs/ (or in each directory given: CI adds the sanitizer runs' testlogs and
# tools/fuzz.sh's results), and prints "N passed, M failed[, K skipped]".
# A test binary that crashed leaves Bazel's stand-in XML with errors="1": counted failed.
#
#   tools/count_tests.sh [DIR...]            the closing line
#   tools/count_tests.sh --skipped [DIR...]  one line per skipped case, with its reason:
#                                            "skipped: [plain|asan|tsan] <target> <Suite.Case>: <reason>"
set -euo pipefail
mode=count
if [ "${1:-}" = --skipped ]; then mode=skipped; shift; fi
[ $# -gt 0 ] || set -- bazel-testlogs

if [ "$mode" = skipped ]; then
  for dir in "$@"; do
    root=$(cd -P "$dir" 2>/dev/null && pwd) || continue
    case "$root" in
      *-asan/testlogs*) label=asan ;;
      *-tsan/testlogs*) label=tsan ;;
      *weft-fuzz-results*) label=fuzz ;;
      *) label=plain ;;
    esac
    find -L "$root" -name test.xml -print0 | xargs -0 -r awk -v root="$root" -v label="[$label]" '
      FNR == 1 {
        target = FILENAME
        sub("^" root "/", "", target); sub("/test\\.xml$", "", target)
        n = split(target, part, "/"); target = "//"
        for (i = 1; i < n; i++) target = target (i > 1 ? "/" : "") part[i]
        target = target ":" part[n]
      }
      /<testcase / {
        name = ""; suite = ""; pending = 0
        if (match($0, / name="[^"]*"/)) name = substr($0, RSTART + 7, RLENGTH - 8)
        if (match($0, /classname="[^"]*"/)) suite = substr($0, RSTART + 11, RLENGTH - 12)
        if ($0 ~ /result="skipped"/) pending = 1
      }
      pending && /<skipped/ {
        reason = ""
        if (match($0, /message="[^"]*"/)) reason = substr($0, RSTART + 9, RLENGTH - 10)
        # GoogleTest writes "file:line&#x0A;message": keep the message.
        sub(/^[^&]*&#x0A;/, "", reason)
        gsub(/&#x0A;/, " ", reason); gsub(/&quot;/, "\"", reason); gsub(/&apos;/, "'\''", reason)
        gsub(/&lt;/, "<", reason); gsub(/&gt;/, ">", reason); gsub(/&amp;/, "\\&", reason)
        print "skipped: " label " " target " " suite "." name ": " reason
        pending = 0
      }'
  done
  exit 0
fi

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
