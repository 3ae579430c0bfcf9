#!/usr/bin/env bash
# Builds the libFuzzer targets of //fuzz with clang-14 (--config=fuzz: libFuzzer, ASan,
# UBSan) and runs each for a bounded time, starting from a copy of its seed corpus
# (fuzz/corpus/<target>/). Fails when any target crashes, leaks, hits UB, or takes over
# 10 s on one input; the reproducer is left in OUT/<target>/ and the line to replay it
# is printed. Fix the bug, then commit the reproducer to fuzz/corpus/<target>/ so the
# corpus tests keep it fixed.
#
#   tools/fuzz.sh [-t SECONDS_EACH] [-o OUT] [-j JUNIT_DIR] [TARGET...]   (make fuzz)
#
# -t  seconds per target (default 20; FUZZ_SECONDS). -o  work dir (default
# /tmp/weft-fuzz). -j  also write JUnit XML per target under JUNIT_DIR/<target>/test.xml
# for tools/count_tests.sh. TARGETs: names like sysfs_parsers_fuzzer (default: all).
#
# Switching Bazel's compiler reconfigures its C++ toolchain, so this build runs in its
# own output base (WEFT_FUZZ_OUTPUT_BASE, default ~/.cache/weft-bazel-fuzz) and makes no
# bazel-* symlinks; it shares the disk cache with every other build.
set -uo pipefail
cd "$(dirname "$0")/.."

seconds="${FUZZ_SECONDS:-20}"
out=/tmp/weft-fuzz
junit=""
while getopts "t:o:j:" opt; do
  case "$opt" in
    t) seconds="$OPTARG" ;;
    o) out="$OPTARG" ;;
    j) junit="$OPTARG" ;;
    *) sed -n '2,15p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

bazel=(bazel "--output_base=${WEFT_FUZZ_OUTPUT_BASE:-$HOME/.cache/weft-bazel-fuzz}" --max_idle_secs=300)
if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <("${bazel[@]}" query 'kind(cc_binary, //fuzz:all)' 2>/dev/null | sed 's#^//fuzz:##')
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no targets found" >&2; exit 1; }

labels=("${targets[@]/#/\/\/fuzz:}")
if ! "${bazel[@]}" build --config=fuzz --symlink_prefix=/ "${labels[@]}"; then
  echo "fuzz: build failed" >&2
  exit 1
fi
bin="$("${bazel[@]}" info --config=fuzz bazel-bin 2>/dev/null)/fuzz"

write_junit() {  # target, failed (0/1), seconds, message
  [ -n "$junit" ] || return 0
  mkdir -p "$junit/$1"
  local failure=""
  [ "$2" -eq 1 ] && failure="<failure message=\"$4\"/>"
  printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuites tests="1" failures="%d" errors="0">\n<testsuite name="fuzz.%s" tests="1" failures="%d" errors="0">\n<testcase name="%s" classname="fuzz" time="%s">%s</testcase>\n</testsuite>\n</testsuites>\n' \
    "$2" "$1" "$2" "$1" "$3" "$failure" > "$junit/$1/test.xml"
}

failed=0
for t in "${targets[@]}"; do
  dir="$out/$t"
  rm -rf "$dir" && mkdir -p "$dir/corpus"
  cp fuzz/corpus/"$t"/* "$dir/corpus/"
  seeds=$(ls "$dir/corpus" | wc -l)
  # -timeout: one input taking 10 s is a bug (an agent or a controller handler would
  # hang on it). -rss_limit_mb: the controller fixture needs more than parsers do.
  "$bin/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="$dir/" "$dir/corpus" > "$dir/log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
  per_s=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log")
  grown=$(ls "$dir/corpus" | wc -l)
  if [ $rc -eq 0 ]; then
    echo "fuzz $t: ok, ${runs:-?} inputs in ${seconds} s (${per_s:-?}/s), corpus $seeds -> $grown"
    write_junit "$t" 0 "$seconds" ""
  else
    failed=1
    artifact=$(ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* 2>/dev/null | head -1)
    echo "fuzz $t: FAILED (exit $rc) after ${runs:-?} inputs; log $dir/log"
    grep -m3 -E "ERROR: |runtime error|property violated" "$dir/log" | sed 's/^/    /'
    [ -n "$artifact" ] && echo "    reproduce: $bin/$t $artifact"
    write_junit "$t" 1 "$seconds" "exit $rc, see $dir/log"
  fi
done
exit $failed
