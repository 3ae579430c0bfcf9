#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ from the project's own examples:
deploy/examples/*.yaml (the daemon configs; the QoS/DCQCN policy and variants of it),
the sysfs values of tests/fixtures/*.tree, lldpcli output as lldpd prints it, ethtool
string tables as mlx5 fills them, and placement/admin requests encoded with protoc. Run from the repository root after changing any of those; the
output is committed. Crash reproducers (crash-*) that fuzzing found are kept as they are.
"""
import glob
import os
import re
import struct
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def config_seeds():
    for daemon in ("controller", "agent"):
        target = daemon + "_config_fuzzer"
        with open(os.path.join(ROOT, "deploy", "examples", daemon + ".yaml")) as f:
            example = f.read()
        write(target, "example.yaml", example)
        # The example without comments: denser for the mutator.
        bare = "\n".join(l for l in example.splitlines() if l.strip() and not l.lstrip().startswith("#"))
        write(target, "example_bare.yaml", bare + "\n")
        write(target, "empty.yaml", "")
        write(target, "null_section.yaml", "tls:\n")
    write("controller_config_fuzzer", "health.yaml",
          "listen_address: 0.0.0.0:7400\ninsecure: true\ntelemetry_interval_ms: 500\n"
          "health:\n  consecutive_samples: 3\n  pfc_pause_ratio: 0.4\n"
          "auto_drain:\n  enabled: true\n")
    write("controller_config_fuzzer", "bad_range.yaml", "window_samples: 0\n")
    write("agent_config_fuzzer", "simulated.yaml",
          "node_name: gpu-a01\nrack: r1\npod: p1\nbackend: simulated\n"
          "simulated:\n  nics: 8\n  gpus: 8\n  faults: [pfc_storm, link_flap]\n")
    write("agent_config_fuzzer", "linux.yaml",
          "node_name: gpu-b07\nbackend: linux\nlinux:\n  root: /\n  include_devices: [mlx5_0, mlx5_1]\n  exclude_netdevs: [eno1]\n")
    write("agent_config_fuzzer", "two_documents.yaml", "node_name: a\n---\nnode_name: b\n")


MINIMAL_POLICY = """qos:
  trust: dscp
  classes:
    - {name: training, dscp: 26, priority: 3, lossless: true, roce: true}
    - {name: cnp, dscp: 48, priority: 6, cnp: true}
  traffic_classes:
    - {tc: 0, priorities: [0, 1, 2, 4, 5, 7], tsa: ets, bandwidth_percent: 50}
    - {tc: 3, priorities: [3], tsa: ets, bandwidth_percent: 50}
    - {tc: 6, priorities: [6], tsa: strict}
"""


def policy_seeds():
    target = "policy_fuzzer"
    with open(os.path.join(ROOT, "deploy", "examples", "policy.yaml")) as f:
        example = f.read()
    write(target, "example.yaml", example)
    bare = "\n".join(l for l in example.splitlines() if l.strip() and not l.lstrip().startswith("#"))
    write(target, "example_bare.yaml", bare + "\n")
    write(target, "empty.yaml", "")
    write(target, "minimal.yaml", MINIMAL_POLICY)
    write(target, "pcp_trust.yaml", MINIMAL_POLICY.replace("trust: dscp", "trust: pcp"))
    write(target, "profiles.yaml", MINIMAL_POLICY +
          "dcqcn:\n  default_profile: fast\n  profiles:\n"
          "    - {name: fast, params: {rp_ai_rate: 20, rp_hai_rate: 200, np_cnp_dscp: 48}}\n"
          "    - {name: slow, params: {rp_enabled_priorities: [3], np_enabled_priorities: [3]}}\n"
          "  assignments:\n    - {profile: slow, racks: [rack-1], nodes: [gpu-001]}\n"
          "rollout: {canary_per_rack: 0, canary_share: 0.1, kpis: {sustain_s: 30}}\n")
    # Refused: only strict TCs listed (the unlisted ones are ETS at 0%, summing to 0),
    # ETS shares summing to 90, a lossless CNP class, an unknown profile, an np_cnp_dscp
    # that is not the CNP class's, a key that is not in the schema.
    write(target, "all_strict.yaml", MINIMAL_POLICY.replace(
        "tsa: ets, bandwidth_percent: 50", "tsa: strict"))
    write(target, "ets_sum_90.yaml", MINIMAL_POLICY.replace("bandwidth_percent: 50}\n    - {tc: 6",
                                                            "bandwidth_percent: 40}\n    - {tc: 6"))
    write(target, "cnp_lossless.yaml", MINIMAL_POLICY.replace("cnp: true}", "cnp: true, lossless: true}"))
    write(target, "unknown_profile.yaml", MINIMAL_POLICY +
          "dcqcn:\n  assignments:\n    - {profile: gentle, pods: [pod-9]}\n")
    write(target, "np_cnp_mismatch.yaml", MINIMAL_POLICY +
          "dcqcn:\n  profiles:\n    - {name: default, params: {np_cnp_dscp: 46, rp_gd: 16}}\n")
    write(target, "unknown_key.yaml", MINIMAL_POLICY + "rollout:\n  canary: 3\n")


def sysfs_seeds():
    values = set()
    for tree in glob.glob(os.path.join(ROOT, "tests", "fixtures", "*.tree")):
        with open(tree) as f:
            for line in f:
                m = re.match(r"file (\S+) = (.*)$", line.rstrip("\n"))
                if m and re.search(r"/(state|phys_state|rate|link_layer|types/\d+|counters/\w+|counters_ext/\w+|hw_counters/\w+|numa_node|class)$", m.group(1)):
                    value = m.group(2)
                    if "\\" in value:  # a value with stray blank lines: the file's bytes
                        value = value.encode().decode("unicode_escape") + "\n"
                    values.add(value)
    values |= {"100 Gb/sec (4X EDR)", "2.5 Gb/sec (1X SDR)", "1: DOWN", "18446744073709551615",
               "4294967295\n", " 0x030200 ", "-1",
               "1e300 Gb/sec (4X NDR)", "inf Gb/sec"}  # once undefined behaviour
    for i, value in enumerate(sorted(values)):
        write("sysfs_parsers_fuzzer", "value_%03d" % i, value)


def ethtool_table(names):
    out = len(names).to_bytes(2, "little")
    for n in names:
        out += n.encode().ljust(32, b"\0")
    return out


def ethtool_seeds():
    mlx5 = ["rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_prio3_pause",
            "rx_prio3_pause_duration", "tx_prio3_pause", "tx_prio3_pause_duration",
            "rx_prio3_pause_transition", "tx_pause_storm_warning_events",
            "tx_pause_storm_error_events", "rx_discards_phy", "rx_out_of_buffer"]
    write("ethtool_strings_fuzzer", "mlx5_pfc", ethtool_table(mlx5))
    write("ethtool_strings_fuzzer", "veth", ethtool_table(["peer_ifindex", "rx_queue_0_xdp_packets"]))
    write("ethtool_strings_fuzzer", "empty_table", ethtool_table([]))
    write("ethtool_strings_fuzzer", "short_buffer", ethtool_table(["rx_packets"])[:20])


def lldp_seeds():
    write("lldp_keyvalue_fuzzer", "two_neighbors",
          "lldp.ens1np0.via=LLDP\nlldp.ens1np0.rid=1\nlldp.ens1np0.age=0 day, 00:03:12\n"
          "lldp.ens1np0.chassis.mac=0c:42:a1:00:00:01\nlldp.ens1np0.chassis.name=leaf-a01\n"
          "lldp.ens1np0.chassis.descr=Cumulus Linux version 5.6.0 running on Mellanox SN4600C\n"
          "lldp.ens1np0.port.ifname=swp12\nlldp.ens1np0.port.descr=rail 0 to gpu-a01\n"
          "lldp.ens1np0.port.mfs=9216\n"
          "lldp.ens2np0.via=LLDP\nlldp.ens2np0.chassis.mac=0c:42:a1:00:00:02\n"
          "lldp.ens2np0.chassis.name=leaf-a02\nlldp.ens2np0.port.mac=0c:42:a1:00:10:02\n")
    write("lldp_keyvalue_fuzzer", "local_port_id",
          "lldp.veth-a.chassis.local=spine-1\nlldp.veth-a.port.local=Eth1/7\n")
    write("lldp_keyvalue_fuzzer", "no_equals", "lldp.eth0.chassis.name\n")
    write("lldp_keyvalue_fuzzer", "empty", "")


def nlattr(kind, payload):
    attr = struct.pack("<HH", 4 + len(payload), kind) + payload
    return attr + b"\0" * (-len(attr) % 4)


def dcb_reply(msg_type, cmd, attrs, seq=7):
    """A netlink message: nlmsghdr, struct dcbmsg (AF_UNSPEC, cmd), attributes."""
    body = struct.pack("<BBH", 0, cmd, 0) + b"".join(attrs)
    return struct.pack("<IHHII", 16 + len(body), msg_type, 0, seq, 0) + body


def dcb_seeds():
    RTM_GETDCB, RTM_SETDCB, NLMSG_ERROR = 78, 79, 2
    DCB_CMD_IEEE_GET, DCB_CMD_IEEE_SET = 21, 20
    DCB_ATTR_IFNAME, DCB_ATTR_IEEE = 1, 13
    ETS, PFC, APP_TABLE, APP = 1, 2, 3, 1
    # struct ieee_ets (59 bytes): willing, ets_cap, cbs, tc_tx_bw, tc_rx_bw, tc_tsa,
    # prio_tc, tc_reco_bw, tc_reco_tsa, reco_prio_tc. RoCE in TC3 with 50% ETS.
    ets = bytes([0, 8, 0]) + bytes([10, 10, 10, 50, 10, 10, 0, 0]) + bytes(8) + \
        bytes([2, 2, 2, 2, 2, 2, 0, 0]) + bytes([0, 1, 2, 3, 4, 5, 6, 7]) + bytes(24)
    # struct ieee_pfc (136 bytes): pfc_cap, pfc_en (priority 3), mbc, delay, counters.
    pfc = struct.pack("<BBBxH2x", 8, 0x08, 0, 0) + struct.pack("<8Q", *([0] * 8)) + \
        struct.pack("<8Q", 0, 0, 0, 12345, 0, 0, 0, 0)
    # struct dcb_app: selector 5 (DSCP), priority, protocol (the DSCP).
    apps = b"".join(nlattr(APP, struct.pack("<BBH", 5, p, d)) for p, d in ((3, 26), (6, 48)))
    ieee = nlattr(DCB_ATTR_IEEE, nlattr(ETS, ets) + nlattr(PFC, pfc) + nlattr(APP_TABLE, apps))
    ifname = nlattr(DCB_ATTR_IFNAME, b"ens1f0np0\0")
    write("dcb_netlink_fuzzer", "get_reply_mlx5", dcb_reply(RTM_GETDCB, DCB_CMD_IEEE_GET, [ifname, ieee]))
    write("dcb_netlink_fuzzer", "get_reply_no_pfc",
          dcb_reply(RTM_GETDCB, DCB_CMD_IEEE_GET, [ifname, nlattr(DCB_ATTR_IEEE, nlattr(ETS, ets))]))
    write("dcb_netlink_fuzzer", "set_reply_ok",
          dcb_reply(RTM_SETDCB, DCB_CMD_IEEE_SET, [nlattr(DCB_ATTR_IEEE, b"\0")]))
    write("dcb_netlink_fuzzer", "set_reply_einval",
          dcb_reply(RTM_SETDCB, DCB_CMD_IEEE_SET, [nlattr(DCB_ATTR_IEEE, bytes([256 - 22]))]))
    # NLMSG_ERROR: int error, then the request's header. EOPNOTSUPP (95): no dcbnl ops.
    err = struct.pack("<i", -95) + struct.pack("<IHHII", 16, RTM_GETDCB, 1, 7, 0)
    write("dcb_netlink_fuzzer", "error_eopnotsupp", struct.pack("<IHHII", 16 + len(err), NLMSG_ERROR, 0, 7, 0) + err)


def protoc_encode(message, text):
    proto = {"PlacementRequest": "proto/weft/v1/placement.proto"}.get(message, "proto/weft/v1/admin.proto")
    return subprocess.run(["protoc", "-I" + ROOT, "--encode=weft.v1." + message, proto],
                          input=text.encode(), capture_output=True, check=True, cwd=ROOT).stdout


def request_seeds():
    placements = {
        "ring_16_ranks": 'job_id: "job-1" rank_count: 16 gpus_per_node: 8',
        "two_nodes_storage": 'job_id: "ckpt" node_count: 2 qos_class: "storage" lease_ttl_s: 600',
        "alltoall_excluding": 'job_id: "moe" node_count: 6 pattern: TRAFFIC_PATTERN_ALL_TO_ALL '
                              'alltoall_bytes: 268435456 constraints { exclude_nodes: "node-03" max_racks: 2 }',
        "megatron_3d": 'job_id: "gpt" parallelism { tensor: 8 pipeline: 4 data: 2 expert: 2 } '
                       'gradient_bytes: 1073741824 activation_bytes: 16777216',
        "pipeline_single_pod": 'job_id: "pp" node_count: 4 pattern: TRAFFIC_PATTERN_PIPELINE '
                               'constraints { single_pod: true max_congestion: 0.5 }',
        "too_big": 'job_id: "huge" node_count: 64',
        "no_job_id": 'rank_count: 8',
        "half_node": 'job_id: "small" rank_count: 4 gpus_per_node: 4',
    }
    for name, text in placements.items():
        write("placement_request_fuzzer", name, protoc_encode("PlacementRequest", text))
    # First byte: the RPC (admin_request_fuzzer.cc's Rpc order).
    admin = [
        ("get_node", 0, "GetNodeRequest", 'name: "node-05"'),
        ("get_unknown", 0, "GetNodeRequest", 'name: "gpu-z99"'),
        ("drain", 1, "DrainNodeRequest", 'name: "node-07" reason: "replace optics on mlx5_3"'),
        ("drain_no_reason", 1, "DrainNodeRequest", 'name: "node-00"'),
        ("drain_empty_name", 1, "DrainNodeRequest", 'reason: "x"'),
        ("undrain", 2, "UndrainNodeRequest", 'name: "node-01"'),
        ("events", 3, "ListEventsRequest", 'node: "node-02" since_us: 1700000000000000 within_ms: 60000'),
        ("events_negative", 3, "ListEventsRequest", 'since_us: -5'),
        ("racks", 4, "ListRacksRequest", 'pod: "pod-1"'),
        ("nodes_rack", 5, "ListNodesRequest", 'rack: "rack-2"'),
    ]
    for name, rpc, message, text in admin:
        write("admin_request_fuzzer", name, bytes([rpc]) + protoc_encode(message, text))


if __name__ == "__main__":
    config_seeds()
    policy_seeds()
    sysfs_seeds()
    ethtool_seeds()
    lldp_seeds()
    dcb_seeds()
    request_seeds()
