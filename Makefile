# The two entry points a newcomer needs:
#   make demo   a local simulated cluster (controller + 32 agents) on the embedded defaults
#   make test   every test (and the package graph's dotted edges, tools/package_graph.py)
#   make deb    Debian packages weft-cli, weft-controller, weft-agent in dist/
# Each installs missing Debian packages first (tools/deps.sh), then builds with Bazel.
# Also: make asan (every test under ASan+UBSan), make tsan (every test under
# ThreadSanitizer), make fuzz (each libFuzzer target for FUZZ_SECONDS, tools/fuzz.sh);
# docs/architecture.md, "Testing under sanitizers and fuzzers".

BAZEL ?= bazel
# Extra flags for `bazel test`; CI passes --nocache_test_results so every test runs.
TEST_FLAGS ?=
FUZZ_SECONDS ?= 20
# Extra flags for tools/fuzz.sh; CI passes -j DIR for JUnit results.
FUZZ_FLAGS ?=
BINARIES = //controller:weft-controller //agent:weft-agent //cli:weftctl //fabric:weft-fabric

.PHONY: deps build demo test asan tsan fuzz deb clean

deps:
	@tools/deps.sh

build: deps
	@$(BAZEL) build $(BINARIES)

demo: build
	@tools/demo.sh

test: deps
	@python3 tools/package_graph.py --check-source
	@$(BAZEL) test $(TEST_FLAGS) //...

asan: deps
	@$(BAZEL) test --config=asan $(TEST_FLAGS) //...

tsan: deps
	@$(BAZEL) test --config=tsan $(TEST_FLAGS) //...

fuzz: deps
	@tools/fuzz.sh -t $(FUZZ_SECONDS) $(FUZZ_FLAGS)

deb: build
	@tools/deb/build.sh dist "$$($(BAZEL) info bazel-bin)"

clean:
	@$(BAZEL) clean
