#!/usr/bin/env bash
# tools/count_tests.sh against JUnit XML as GoogleTest writes it: the closing line counts
# cases, and --skipped names each skipped case with its reason and the run it was in.
set -euo pipefail
dir="${TEST_TMPDIR:-$(mktemp -d)}/testlogs"
mkdir -p "$dir/agent/linux/ethtool_stats_test" "$dir/common/file_test"
cat >"$dir/agent/linux/ethtool_stats_test/test.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="3" failures="1" disabled="0" errors="0" time="0.1" name="AllTests">
  <testsuite name="EthtoolStatsTest" tests="3" failures="1" disabled="0" skipped="1" errors="0">
    <testcase name="ReadsVeth" status="run" result="skipped" time="0" classname="EthtoolStatsTest">
      <skipped message="agent/linux/ethtool_stats_test.cc:50&#x0A;skipped: cannot create a network namespace (&quot;EPERM&quot;)"><![CDATA[agent/linux/ethtool_stats_test.cc:50
skipped: cannot create a network namespace]]></skipped>
    </testcase>
    <testcase name="Parses" status="run" result="completed" time="0" classname="EthtoolStatsTest" />
    <testcase name="Fails" status="run" result="completed" time="0" classname="EthtoolStatsTest">
      <failure message="boom" type=""><![CDATA[boom]]></failure>
    </testcase>
  </testsuite>
</testsuites>
XML
cat >"$dir/common/file_test/test.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="2" failures="0" disabled="0" errors="0" time="0.1" name="AllTests">
  <testsuite name="FileTest" tests="2" failures="0" disabled="0" skipped="0" errors="0">
    <testcase name="A" status="run" result="completed" time="0" classname="FileTest" />
    <testcase name="B" status="run" result="completed" time="0" classname="FileTest" />
  </testsuite>
</testsuites>
XML
count=tools/count_tests.sh
summary=$(bash "$count" "$dir")
[ "$summary" = "3 passed, 1 failed, 1 skipped" ] || { echo "summary: '$summary'"; exit 1; }
skipped=$(bash "$count" --skipped "$dir")
want='skipped: [plain] //agent/linux:ethtool_stats_test EthtoolStatsTest.ReadsVeth: skipped: cannot create a network namespace ("EPERM")'
[ "$skipped" = "$want" ] || { echo "skipped: '$skipped'"; echo "want:    '$want'"; exit 1; }
echo "PASS"
