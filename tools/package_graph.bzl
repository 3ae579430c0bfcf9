# Weft's floor plan: which component (a top-level folder with its sub-packages) may
# depend on which. One source for three things:
#   - Bazel visibility: every BUILD file sets
#       package(default_visibility = visible_to("<its component>"))
#     so a dependency edge that is not here fails the build of `make test` itself;
#   - the picture in docs/architecture.md, "Package graph" (tools/package_graph.py
#     draws it; //docs:package_graph_test fails when the page is not current);
#   - the edges still to remove (TRANSITIONAL), each with how; `make test` runs
#     `tools/package_graph.py --check-source`, which fails when one is no longer there.
# Plain dicts, lists and loops only: tools/package_graph.py reads this file as Python.

# Libraries and the libraries they build on. A component may use what it names and
# everything those build on, never a component above it.
LIBRARIES = {
    "third_party": [],
    "proto": ["third_party"],
    "common": ["proto"],
    "security": ["common"],
    "store": ["common"],
    "placement": ["common"],
    "policy": ["common"],
    "topology": ["common"],
    "rdma": ["common"],
    "sim": ["common"],  # the fabric twin's models: pure logic
    "pingmesh": ["common"],  # pinglists and fault localisation: pure logic
    "fabric": ["sim", "security", "placement"],  # weft-fabric, the twin's daemon
    "tuning": ["sim", "policy"],  # closed-loop DCQCN tuning: evaluates profiles on the twin
    "datapath": ["rdma"],  # libweft: sub-packages transport/, rendezvous/, collectives/
    "agent": ["rdma", "security"],
    "controller": ["pingmesh", "placement", "policy", "security", "store", "topology", "tuning"],
    "cli": ["placement", "policy", "security", "topology"],
}

# Harnesses may use every library: multi-process tests, benchmarks, fuzzers, build and
# packaging tools, deployment files and the docs, and their checks.
HARNESSES = ["tests", "bench", "fuzz", "tools", "deploy", "docs"]

# Harnesses every component's tests may use: the test-only libraries of tests/
# (testonly keeps production code off them), the data files of deploy/ and the scripts
# and sanitizer support of tools/.
SHARED_HARNESSES = ["tests", "tools", "deploy"]

# Edges the code still has that the floor plan removes: [from, to, how].
TRANSITIONAL = [
]

def components():
    return sorted(list(LIBRARIES.keys()) + HARNESSES)

def builds_on(component):
    """Every library `component` may use: what it names, and what those build on."""
    if component in HARNESSES:
        return sorted(LIBRARIES.keys())
    reached = {component: True}
    for _ in range(len(LIBRARIES)):
        for c in list(reached.keys()):
            for dep in LIBRARIES.get(c, []):
                reached[dep] = True
    return sorted([c for c in reached.keys() if c != component])

def users_of(component):
    """The components whose code may depend on `component` (itself included)."""
    if component in SHARED_HARNESSES:
        return components()
    users = {component: True}
    for user in components():
        if component in builds_on(user):
            users[user] = True
    for edge in TRANSITIONAL:
        if edge[1] == component:
            users[edge[0]] = True
    return sorted(users.keys())

def visible_to(component):
    """default_visibility for the packages of `component`."""
    return ["//%s:__subpackages__" % user for user in users_of(component)]
