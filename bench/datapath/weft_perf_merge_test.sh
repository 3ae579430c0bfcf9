#!/usr/bin/env bash
# weft-perf --merge_raw as an operator uses it: two --raw_out files of the same build,
# pooled into one report whose figures are medians over every pass; and files that are
# not raw output refused with the file and line named.
set -euo pipefail
perf=bench/datapath/weft-perf
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/merge.XXXXXX")
fail() { echo "FAIL: $*"; exit 1; }

# Run A: Weft behind Gloo in two of its three passes (median 130 µs against 120 µs).
cat >"$dir/a.raw" <<'RAW'
# pass 1
weft all-to-all 4 16777216 100.000 3 190.000
gloo all-to-all 4 16777216 120.000 3 230.000
# pass 2
gloo all-to-all 4 16777216 120.000 3 230.000
weft all-to-all 4 16777216 130.000 3 250.000
# pass 3
weft all-to-all 4 16777216 130.000 3 250.000
gloo all-to-all 4 16777216 120.000 3 230.000
RAW
# Run B: Weft ahead in both passes.
cat >"$dir/b.raw" <<'RAW'
# pass 1
gloo all-to-all 4 16777216 120.000 3 230.000
weft all-to-all 4 16777216 100.000 3 190.000
# pass 2
weft all-to-all 4 16777216 100.000 3 190.000
gloo all-to-all 4 16777216 120.000 3 230.000
RAW

alone=$("$perf" --merge_raw="$dir/a.raw")
grep -q "at least Gloo's in 0 of 1 cases (worst 0.92×)" <<<"$alone" || fail "run A alone: $alone"
grep -q "below Gloo: all-to-all, 4 ranks, 16 MiB: 0.92× (by pass: 1.20, 0.92, 0.92" <<<"$alone" ||
  fail "run A's shortfall line: $alone"

pooled=$("$perf" --merge_raw="$dir/a.raw,$dir/b.raw" --raw_out="$dir/pooled.raw" --out="$dir/pooled.md")
grep -q "Pooled by \`weft-perf --merge_raw\` from 5 passes: \`$dir/a.raw\` (3 passes), \`$dir/b.raw\` (2 passes)" \
  <<<"$pooled" || fail "pooled preamble: $pooled"
grep -q "at least Gloo's in 1 of 1 cases (worst 1.20×)" <<<"$pooled" || fail "pooled check: $pooled"
grep -q "below Gloo" <<<"$pooled" && fail "a shortfall is left after pooling: $pooled"
[ "$(grep -c '^# pass ' "$dir/pooled.raw")" = 5 ] || fail "--raw_out of the pool: $(cat "$dir/pooled.raw")"
cmp -s <(echo "$pooled") "$dir/pooled.md" || fail "--out differs from stdout"

# Not raw output: the file and the line are named, exit status 2.
printf '# pass 1\nweft all-to-all 4 16777216 fast\n' >"$dir/bad.raw"
rc=0; err=$("$perf" --merge_raw="$dir/bad.raw" 2>&1) || rc=$?
[ $rc = 2 ] || fail "bad file: exit $rc"
grep -q "$dir/bad.raw: line 2: bad measurement line" <<<"$err" || fail "bad file: $err"
rc=0; err=$("$perf" --merge_raw="$dir/none.raw" 2>&1) || rc=$?
[ $rc = 2 ] && grep -q "cannot read raw file '$dir/none.raw': No such file" <<<"$err" || fail "missing file: exit $rc, $err"
printf 'just a note\n' >"$dir/empty.raw"
rc=0; err=$("$perf" --merge_raw="$dir/empty.raw" 2>&1) || rc=$?
[ $rc = 2 ] && grep -q "before the first '# pass' line" <<<"$err" || fail "no pass line: exit $rc, $err"
echo "PASS"
