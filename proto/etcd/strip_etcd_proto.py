#!/usr/bin/env python3
"""Rewrites one of etcd's API .proto files so Debian's protoc compiles it alone.

etcd's protos (Debian's golang-etcd-server-dev) carry Go-only annotations: gogoproto
options and imports, and grpc-gateway `option (google.api.http) = { ... };` blocks
whose bodies nest braces. Neither changes the wire format, so they are removed; the
imports of etcd's other protos are rewritten to where the build puts the stripped
copies (proto/etcd/<file>.proto).

Usage: strip_etcd_proto.py IN OUT
"""
import re
import sys

DROPPED_IMPORTS = ("gogoproto/gogo.proto", "google/api/annotations.proto")


def drop_option_blocks(text, head):
    """Removes every `option (X) = { ... };` starting with `head`, matching braces."""
    out = []
    i = 0
    while True:
        j = text.find(head, i)
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        out.append(text[i:j])
        k = text.index("{", j)
        depth = 0
        while True:
            c = text[k]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        k += 1
        while k < len(text) and text[k] in " \t":
            k += 1
        if k < len(text) and text[k] == ";":
            k += 1
        i = k


def strip(text):
    text = drop_option_blocks(text, "option (google.api.http)")
    lines = []
    for line in text.splitlines():
        m = re.match(r'\s*import\s+"([^"]+)"\s*;', line)
        if m:
            path = m.group(1)
            if path in DROPPED_IMPORTS:
                continue
            if path.startswith("etcd/"):
                line = 'import "proto/etcd/%s";' % path.rsplit("/", 1)[1]
        if re.match(r"\s*option\s+\(gogoproto\.[^)]*\)\s*=.*;\s*$", line):
            continue
        # Field options such as [(gogoproto.nullable) = false]; none in etcd 3.4's API
        # files, handled so a newer file does not break the build silently.
        line = re.sub(r"\s*\[\s*\(gogoproto\.[^\]]*\]", "", line)
        lines.append(line)
    out = "\n".join(lines) + "\n"
    for leftover in ("gogoproto", "google.api"):
        if leftover in out:
            sys.exit("strip_etcd_proto: '%s' is still referenced after stripping" % leftover)
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: strip_etcd_proto.py IN OUT")
    with open(sys.argv[1]) as f:
        text = f.read()
    with open(sys.argv[2], "w") as f:
        f.write(strip(text))


if __name__ == "__main__":
    main()
