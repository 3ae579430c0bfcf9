#!/usr/bin/env bash
# Runs a fuzz target once over its seed corpus, where crash reproducers are kept after
# their fix: usage replay_test.sh FUZZ_BINARY CORPUS_DIR. The same invocation works
# for the libFuzzer build (-runs=0: execute the corpus, no fuzzing) and the replay
# build (fuzz/replay_main.cc ignores the flag).
set -euo pipefail
exec "$1" -runs=0 "$2"
