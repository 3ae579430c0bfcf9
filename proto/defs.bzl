"""cc_proto: C++ (and optionally gRPC) code from .proto files with the system protoc.

Generated files keep the proto's workspace-relative path, so code includes them as
"proto/weft/v1/agent.pb.h" and imports between protos resolve the same way.
"""

def cc_proto(name, srcs, deps = [], grpc = False, visibility = None):
    """Declares a cc_library `name` built from `srcs` (.proto files in this package).

    Args:
      name: the cc_library's name.
      srcs: .proto files in this package.
      deps: other cc_proto targets whose protos these import.
      grpc: also generate gRPC service stubs (.grpc.pb.{h,cc}).
      visibility: passed to the cc_library.
    """
    pkg = native.package_name()
    bases = [s[:-len(".proto")] for s in srcs]
    hdrs = [b + ".pb.h" for b in bases]
    cc_srcs = [b + ".pb.cc" for b in bases]
    if grpc:
        hdrs += [b + ".grpc.pb.h" for b in bases]
        cc_srcs += [b + ".grpc.pb.cc" for b in bases]
    proto_paths = " ".join([pkg + "/" + s for s in srcs])
    dep_protos = [d + "_srcs" for d in deps]
    cmd = "protoc --proto_path=. --proto_path=/usr/include --cpp_out=$(GENDIR)"
    if grpc:
        cmd += " --grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin)"
    cmd += " " + proto_paths

    native.filegroup(
        name = name + "_srcs",
        srcs = srcs + dep_protos,
        visibility = visibility,
    )
    native.genrule(
        name = name + "_gen",
        srcs = srcs + dep_protos,
        outs = hdrs + cc_srcs,
        cmd = cmd,
    )
    native.cc_library(
        name = name,
        srcs = cc_srcs,
        hdrs = hdrs,
        deps = deps + ["//third_party:protobuf"] + (["//third_party:grpc"] if grpc else []),
        visibility = visibility,
    )
