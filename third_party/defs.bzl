"""system_library: a Debian system library as a cc_library of link flags.

By default it links the shared objects (-lfoo). Under `--config=static` (which sets
--define=static_deps=1) a library marked static links its .a archives instead, inside
one --start-group/--end-group so the archives' mutual references resolve.
"""

def system_library(name, libs, static_libs = [], system_libs = [], static = True, deps = [], testonly = False):
    """Declares cc_library `name` linking `libs`.

    Args:
      name: target name.
      libs: library names (without -l) linked in both modes.
      static_libs: more archives needed only when linking statically (what the shared
        objects would have pulled in on their own).
      system_libs: flags kept shared in both modes (e.g. -ldl, -pthread).
      static: whether --config=static links this library from its archives.
      deps: other system_library targets this one needs (linked after it).
      testonly: passed through.
    """
    dynamic = ["-l" + lib for lib in libs] + system_libs
    if static:
        linkopts = select({
            "//third_party:static_deps": ["-Wl,-Bstatic", "-Wl,--start-group"] +
                                         ["-l" + lib for lib in libs + static_libs] +
                                         ["-Wl,--end-group", "-Wl,-Bdynamic"] + system_libs,
            "//conditions:default": dynamic,
        })
    else:
        linkopts = dynamic
    native.cc_library(name = name, linkopts = linkopts, deps = deps, testonly = testonly)
