"""weft_fuzz_target: a libFuzzer target and the test that replays its seed corpus."""

def weft_fuzz_target(name, srcs, deps = []):
    """Declares fuzz target `name` and `name`_corpus_test.

    The binary defines LLVMFuzzerTestOneInput. Under --config=fuzz (clang, see
    tools/fuzz.sh) it links libFuzzer; in every other build it links
    //fuzz:replay_main, which runs the inputs named on the command line. The test
    replays fuzz/corpus/`name`/ through the binary, so each build (plain, asan, tsan,
    fuzz) re-checks the seeds and every committed crash reproducer.
    """
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = srcs,
        deps = deps + ["//fuzz:fuzz_check"] + select({
            "//fuzz:libfuzzer": [],
            "//conditions:default": ["//fuzz:replay_main"],
        }),
        linkopts = select({
            "//fuzz:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
    )
    native.sh_test(
        name = name + "_corpus_test",
        size = "small",
        srcs = ["//fuzz:replay_test.sh"],
        args = ["$(location :%s)" % name, "fuzz/corpus/" + name],
        data = [":" + name] + native.glob(["corpus/%s/**" % name]),
    )
