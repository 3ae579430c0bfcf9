#!/usr/bin/env python3
"""Writes Weft's Grafana dashboards (weft-*.json beside this file).

The JSON files are what operators import (Dashboards > Import, or provisioning); this
script is their source: edit it, run `python3 deploy/grafana/dashboards.py`, commit
both. dashboards_test checks the files match it. Every panel queries the Prometheus
data source chosen in the DS_PROMETHEUS variable; metric names are those of
controller/inventory/controller_metrics.h, controller/placement/placement_metrics.h,
controller/rollout/rollout_metrics.h, controller/tuning/tune_metrics.h,
controller/pingmesh/pingmesh_metrics.h,
agent/agent_metrics.h.
"""
import json
import os
import sys

DS = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
RATE = "$__rate_interval"


def datasource_var():
    return {"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource",
            "query": "prometheus", "current": {}, "hide": 0, "refresh": 1,
            "regex": "", "options": []}


def query_var(name, label, query, multi=True, include_all=True):
    return {"name": name, "label": label, "type": "query", "datasource": DS,
            "query": {"query": query, "refId": f"{name}-query"}, "definition": query,
            "refresh": 2, "sort": 1, "multi": multi, "includeAll": include_all,
            "allValue": ".*" if include_all else None, "current": {}, "hide": 0,
            "options": [], "regex": ""}


class Dashboard:
    def __init__(self, uid, title, description, variables):
        self.uid, self.title, self.description = uid, title, description
        self.variables = [datasource_var()] + variables
        self.panels = []
        self.x = self.y = 0
        self.row_height = 0

    def panel(self, kind, title, targets, unit="short", w=12, h=8, description="",
              **extra):
        if self.x + w > 24:
            self.x, self.y = 0, self.y + self.row_height
            self.row_height = 0
        panel = {
            "id": len(self.panels) + 1, "type": kind, "title": title,
            "description": description, "datasource": DS,
            "gridPos": {"x": self.x, "y": self.y, "w": w, "h": h},
            "targets": [dict(datasource=DS, refId=chr(ord("A") + i), expr=expr,
                             legendFormat=legend, range=True, instant=False,
                             **({"format": "heatmap"} if kind == "heatmap" else {}))
                        for i, (expr, legend) in enumerate(targets)],
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {},
        }
        panel.update(extra)
        self.panels.append(panel)
        self.x += w
        self.row_height = max(self.row_height, h)

    def json(self):
        return {
            "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus",
                          "description": "The Prometheus that scrapes Weft",
                          "type": "datasource", "pluginId": "prometheus",
                          "pluginName": "Prometheus"}],
            "__requires": [{"type": "datasource", "id": "prometheus",
                            "name": "Prometheus", "version": "1.0.0"}],
            "uid": self.uid, "title": self.title, "description": self.description,
            "tags": ["weft", "rdma", "roce"], "timezone": "browser",
            "schemaVersion": 38, "version": 1, "editable": True, "refresh": "30s",
            "time": {"from": "now-1h", "to": "now"},
            "templating": {"list": self.variables},
            "annotations": {"list": []}, "links": [
                {"type": "dashboards", "tags": ["weft"], "title": "Weft",
                 "asDropdown": True}],
            "panels": self.panels,
        }


def fleet():
    d = Dashboard("weft-fleet", "Weft / Fleet overview",
                  "Node states, fabric throughput and congestion over the whole cluster.", [])
    d.panel("stat", "Nodes by state", [("sum by (state) (weft_controller_nodes)", "{{state}}")],
            w=8, h=5)
    d.panel("stat", "Agents scraped", [('sum(up{job="weft-agent"})', "up"),
                                       ('count(up{job="weft-agent"})', "targets")], w=8, h=5)
    d.panel("stat", "Agent streams", [("weft_controller_agent_streams", "streams")], w=8, h=5)
    d.panel("timeseries", "Fabric throughput",
            [("sum(weft_rack_tx_bytes_per_second) * 8", "tx"),
             ("sum(weft_rack_rx_bytes_per_second) * 8", "rx")], unit="bps")
    d.panel("timeseries", "PFC pause (most-paused NIC)",
            [("max by (direction) (weft_rack_pfc_pause_share)", "{{direction}}")],
            unit="percentunit",
            description="Share of time the most-paused priority of the fleet's most-paused "
                        "NIC was paused: rx = paused by its switch, tx = pausing it.")
    d.panel("timeseries", "ECN marks and CNPs",
            [("sum(weft_rack_ecn_marked_packets_per_second)", "ECN-marked pkt/s"),
             ("sum(weft_rack_cnp_sent_per_second)", "CNP sent/s"),
             ("sum(weft_rack_cnp_handled_per_second)", "CNP handled/s")], unit="pps")
    d.panel("timeseries", "Retransmissions",
            [("sum(weft_rack_retransmissions_per_second)", "retransmissions/s")], unit="pps")
    d.panel("timeseries", "Health findings by rule",
            [("sum by (rule) (weft_controller_health_findings)", "{{rule}}")])
    d.panel("timeseries", "Node state changes",
            [(f"sum by (to) (increase(weft_controller_node_state_changes_total[{RATE}]))",
              "to {{to}}")])
    d.panel("timeseries", "Telemetry ingest",
            [(f"rate(weft_controller_telemetry_batches_total[{RATE}])", "batches/s"),
             (f"rate(weft_controller_telemetry_samples_total[{RATE}])", "NIC samples/s")],
            unit="ops")
    d.panel("timeseries", "Agent collection time (p99)",
            [("histogram_quantile(0.99, sum by (le) "
              f"(rate(weft_agent_collection_duration_seconds_bucket[{RATE}])))", "p99")],
            unit="s")
    d.panel("bargauge", "TLS certificates: time left (soonest 10)",
            [("bottomk(10, min by (job, instance, file) "
              "(weft_tls_certificate_expiry_timestamp_seconds) - time())",
              "{{job}} {{instance}} {{file}}")],
            unit="s", w=12,
            description="Until each daemon's TLS certificate expires (notAfter); "
                        "WeftTlsCertificateExpiresSoon fires under 14 days.")
    d.panel("stat", "TLS files without a valid certificate",
            [("count(weft_tls_certificate_valid == 0) or vector(0)", "invalid")], w=12,
            description="Expired, not yet valid or unreadable after a renewal; gRPC keeps "
                        "serving them, so handshakes fail.")
    return d


def racks():
    d = Dashboard("weft-racks", "Weft / Racks",
                  "Congestion by rack: where ECN marks, CNPs and PFC pauses concentrate.",
                  [query_var("pod", "Pod", "label_values(weft_rack_nodes, pod)"),
                   query_var("rack", "Rack", 'label_values(weft_rack_nodes{pod=~"$pod"}, rack)')])
    heat = {"options": {"calculate": False, "yAxis": {"axisPlacement": "left"},
                        "color": {"scheme": "Oranges", "mode": "scheme"},
                        "cellGap": 1, "rowsFrame": {"layout": "auto"}}}
    d.panel("heatmap", "ECN-marked packets per rack",
            [('sum by (rack) (weft_rack_ecn_marked_packets_per_second{pod=~"$pod",rack=~"$rack"})',
              "{{rack}}")], unit="pps", w=24, h=9, **heat)
    d.panel("heatmap", "PFC pause per rack",
            [('max by (rack) (weft_rack_pfc_pause_share{pod=~"$pod",rack=~"$rack"})',
              "{{rack}}")], unit="percentunit", w=24, h=9,
            description="Share of time the rack's most-paused NIC priority was paused, the "
                        "worse of rx and tx.", **heat)
    d.panel("heatmap", "PFC pause time per node",
            [(f'max by (node) (rate(weft_nic_pfc_pause_duration_seconds_total'
              f'{{pod=~"$pod",rack=~"$rack"}}[{RATE}]))', "{{node}}")], unit="percentunit",
            w=24, h=12, description="Share of time the node's most paused NIC priority is paused.",
            **heat)
    d.panel("timeseries", "ECN mark ratio per rack",
            [(f'sum by (rack) (rate(weft_nic_np_ecn_marked_roce_packets_total{{pod=~"$pod",rack=~"$rack"}}[{RATE}]))'
              f' / clamp_min(sum by (rack) (rate(weft_nic_port_rcv_packets_total{{pod=~"$pod",rack=~"$rack"}}[{RATE}])), 1)',
              "{{rack}}")], unit="percentunit",
            description="ECN-marked RoCE packets per packet received (alert WeftRackEcnHot at 5%).")
    d.panel("timeseries", "CNPs sent per rack",
            [('sum by (rack) (weft_rack_cnp_sent_per_second{pod=~"$pod",rack=~"$rack"})', "{{rack}}")],
            unit="pps")
    d.panel("timeseries", "Throughput per rack",
            [('sum by (rack) (weft_rack_tx_bytes_per_second{pod=~"$pod",rack=~"$rack"}) * 8',
              "{{rack}} tx")], unit="bps")
    d.panel("timeseries", "Nodes per rack by state",
            [('sum by (rack, state) (weft_rack_nodes{pod=~"$pod",rack=~"$rack"})',
              "{{rack}} {{state}}")])
    # Pingmesh (controller/pingmesh/pingmesh_metrics.h): the probe loss and latency
    # matrix rack to rack, and what the localiser blames.
    d.panel("heatmap", "Pingmesh: probe loss rack to rack",
            [('max by (source_rack, destination_rack) (weft_controller_pingmesh_rack_loss_ratio'
              '{source_rack=~"$rack"})', "{{source_rack}} -> {{destination_rack}}")],
            unit="percentunit", w=24, h=9,
            description="Share of the probes from one rack to another lost over the last "
                        "matrix period (weftctl pingmesh matrix has the same, node to node "
                        "with --rack).", **heat)
    d.panel("heatmap", "Pingmesh: probe RTT p99 rack to rack",
            [('max by (source_rack, destination_rack) (weft_controller_pingmesh_rack_rtt_p99_us'
              '{source_rack=~"$rack"})', "{{source_rack}} -> {{destination_rack}}")],
            unit="\u00b5s", w=24, h=9,
            description="Worst window's 99th percentile network round trip of the probes.",
            **heat)
    d.panel("table", "Pingmesh: blamed components",
            [("max by (kind, component, problem) (weft_controller_pingmesh_verdict)",
              "{{kind}} {{component}} {{problem}}")], unit="percentunit",
            description="Every verdict in force (weftctl pingmesh status shows the evidence); "
                        "the value is its confidence.")
    d.panel("timeseries", "Pingmesh: probe windows",
            [(f"sum by (result) (rate(weft_controller_pingmesh_windows_total[{RATE}]))",
              "{{result}}"),
             ("weft_controller_pingmesh_streams", "streams planned")],
            description="Windows accepted, late and unknown per second, and the streams in "
                        "the plan.")
    return d


def node():
    d = Dashboard("weft-node", "Weft / Node detail",
                  "One node: every NIC's throughput, congestion, PFC per priority and errors.",
                  [query_var("node", "Node", "label_values(weft_nic_port_xmit_bytes_total, node)",
                             multi=False, include_all=False),
                   query_var("device", "NIC",
                             'label_values(weft_nic_port_xmit_bytes_total{node="$node"}, device)')])
    sel = 'node="$node",device=~"$device"'

    def per_nic(metric):
        return f"sum by (device) (rate({metric}{{{sel}}}[{RATE}]))"

    d.panel("stat", "Agent",
            [('up{job="weft-agent",node="$node"}', "scraped"),
             ('weft_agent_registered{node="$node"}', "registered")], w=8, h=5)
    d.panel("stat", "Collection time (p99)",
            [("histogram_quantile(0.99, sum by (le) (rate(weft_agent_collection_duration_seconds_bucket"
              f'{{node="$node"}}[{RATE}])))', "p99")], unit="s", w=8, h=5)
    d.panel("stat", "Collection errors",
            [(f'sum(increase(weft_agent_collection_errors_total{{node="$node"}}[{RATE}]))', "errors")],
            w=8, h=5)
    d.panel("timeseries", "Throughput per NIC",
            [(per_nic("weft_nic_port_xmit_bytes_total") + " * 8", "{{device}} tx"),
             (per_nic("weft_nic_port_rcv_bytes_total") + " * 8", "{{device}} rx")], unit="bps")
    d.panel("timeseries", "PFC pause time per NIC and priority",
            [(f"sum by (device, priority, direction) (rate(weft_nic_pfc_pause_duration_seconds_total"
              f"{{{sel}}}[{RATE}]))", "{{device}} prio {{priority}} {{direction}}")],
            unit="percentunit", description="Share of time paused (rx: this port was paused; "
            "tx: it paused its peer). Alert WeftPfcPauseStorm above 50%.")
    d.panel("timeseries", "PFC pause frames per NIC and priority",
            [(f"sum by (device, priority, direction) (rate(weft_nic_pfc_pause_frames_total"
              f"{{{sel}}}[{RATE}]))", "{{device}} prio {{priority}} {{direction}}")], unit="pps")
    d.panel("timeseries", "ECN marks and CNPs per NIC",
            [(per_nic("weft_nic_np_ecn_marked_roce_packets_total"), "{{device}} ECN-marked"),
             (per_nic("weft_nic_np_cnp_sent_total"), "{{device}} CNP sent"),
             (per_nic("weft_nic_rp_cnp_handled_total"), "{{device}} CNP handled"),
             (per_nic("weft_nic_rp_cnp_ignored_total"), "{{device}} CNP ignored")], unit="pps",
            description="CNP ignored rising means DCQCN is off on that priority.")
    d.panel("timeseries", "Retransmissions per NIC",
            [(per_nic("weft_nic_packet_seq_err_total"), "{{device}} packet_seq_err"),
             (per_nic("weft_nic_local_ack_timeout_err_total"), "{{device}} local_ack_timeout_err"),
             (per_nic("weft_nic_out_of_sequence_total"), "{{device}} out_of_sequence"),
             (per_nic("weft_nic_rnr_nak_retry_err_total"), "{{device}} rnr_nak_retry_err")],
            unit="pps")
    d.panel("timeseries", "Port errors per NIC",
            [(per_nic("weft_nic_port_rcv_errors_total"), "{{device}} rcv_errors"),
             (per_nic("weft_nic_port_xmit_discards_total"), "{{device}} xmit_discards"),
             (per_nic("weft_nic_symbol_error_total"), "{{device}} symbol_error"),
             (per_nic("weft_nic_out_of_buffer_total"), "{{device}} out_of_buffer")], unit="pps")
    d.panel("timeseries", "Link downs per NIC",
            [(f"sum by (device) (increase(weft_nic_link_downed_total{{{sel}}}[{RATE}]))",
              "{{device}}")])
    return d


def rollouts():
    d = Dashboard("weft-rollouts", "Weft / Rollouts",
                  "Desired state (QoS and DCQCN tuning) and its staged rollouts.", [])
    d.panel("stat", "Rollout phase", [("weft_controller_rollout_phase == 1", "{{phase}}")],
            w=6, h=5)
    d.panel("stat", "Rollout step", [("weft_controller_rollout_wave", "step (0 = canary)")],
            w=6, h=5)
    d.panel("stat", "Desired-state version", [("weft_controller_desired_state_version", "version")],
            w=6, h=5)
    d.panel("stat", "Nodes with drifted tunables",
            [("weft_controller_tunables_drift_nodes", "drifted")], w=6, h=5)
    d.panel("timeseries", "Nodes by desired-state status",
            [("sum by (status) (weft_controller_desired_state_nodes)", "{{status}}")],
            description="in_sync: applied; pending: sent, unanswered; nacked: refused; drifted.")
    d.panel("timeseries", "ACKs and NACKs",
            [(f"sum by (result) (rate(weft_controller_desired_state_acks_total[{RATE}]))",
              "{{result}}")], unit="ops")
    d.panel("timeseries", "Rollouts ended",
            [("sum by (result) (increase(weft_controller_rollouts_total[1h]))", "{{result}}")],
            description="Per hour, by result (completed, rolled_back, aborted).")
    d.panel("state-timeline", "Rollout phase over time",
            [("max by (phase) (weft_controller_rollout_phase)", "{{phase}}")])
    d.panel("timeseries", "DCQCN tuner: searches by result",
            [("sum by (result) (increase(weft_controller_tune_proposals_total[1h]))",
              "{{result}}")],
            description="Per hour: proposed (better than the profile in force in the twin), "
                        "no_better, dry_run, failed. weftctl tune history lists them.")
    d.panel("timeseries", "DCQCN tuner: best score and evaluations",
            [("weft_controller_tune_last_score", "last score (> 0: better)"),
             (f"rate(weft_controller_tune_evaluations_total[{RATE}]) * 60",
              "evaluations per minute")])
    d.panel("timeseries", "Tuned rollouts by result",
            [("sum by (result) (weft_controller_tune_rollouts_total)", "{{result}}")],
            description="Applied proposals: completed on the live fabric, or rolled back by "
                        "its KPIs (the model's error is recorded for the scope).")
    d.panel("stat", "Tuner searching", [("weft_controller_tune_searching", "searching")])
    d.panel("timeseries", "DCQCN tuner: triggers and traffic-mix divergence",
            [("sum by (reason) (increase(weft_controller_tune_triggers_total[1h]))",
              "{{reason}} per hour"),
             ("weft_controller_tune_mix_divergence", "mix divergence (0-1)")],
            description="Trigger firings (mix_shift, kpi_regression), counted whether or not "
                        "tuning.automatic.propose starts a search, and how far the jobs' "
                        "traffic mix is from the one the profile in force was tuned for.")
    return d


def jobs():
    d = Dashboard("weft-jobs", "Weft / Jobs",
                  "Placed training jobs as they report themselves (ReportJobProgress): "
                  "iteration time against the job's own first iteration, throughput and "
                  "the share of each iteration spent communicating.",
                  [query_var("job_id", "Job", "label_values(weft_job_iterations, job_id)")])
    sel = '{job_id=~"$job_id"}'
    d.panel("stat", "Jobs reporting", [("count(weft_job_iterations)", "jobs")], w=8, h=5)
    d.panel("stat", "Nodes held by reporting jobs", [("sum(weft_job_nodes)", "nodes")],
            w=8, h=5)
    d.panel("stat", "Slowest job against its first iteration",
            [("max(weft_job_iteration_seconds / weft_job_first_iteration_seconds)", "worst")],
            unit="x", w=8, h=5,
            description="1.0: as fast as when it started; a PFC storm or a congested "
                        "uplink on its paths shows here first.")
    d.panel("timeseries", "Iteration time",
            [(f"weft_job_iteration_seconds{sel}", "{{job_id}}")], unit="s")
    d.panel("timeseries", "Slowdown against the first iteration",
            [(f"weft_job_iteration_seconds{sel} / weft_job_first_iteration_seconds{sel}",
              "{{job_id}}")], unit="x")
    d.panel("timeseries", "Tokens per second",
            [(f"weft_job_tokens_per_second{sel}", "{{job_id}}")], unit="short")
    d.panel("timeseries", "Communication share of the iteration",
            [(f"weft_job_communication_seconds{sel} / weft_job_iteration_seconds{sel}",
              "{{job_id}}")], unit="percentunit",
            description="Time in collectives and sends over the iteration time; the rest "
                        "is compute.")
    d.panel("timeseries", "Iterations per minute",
            [(f"rate(weft_job_iterations{sel}[{RATE}]) * 60", "{{job_id}}")], unit="short",
            description="Drops to 0 when a job stops; restarts from 0 when it is placed "
                        "again.")
    d.panel("bargauge", "Nodes per job", [(f"weft_job_nodes{sel}", "{{job_id}}")], unit="short")
    return d


DASHBOARDS = {"weft-fleet.json": fleet, "weft-racks.json": racks,
              "weft-node.json": node, "weft-rollouts.json": rollouts, "weft-jobs.json": jobs}


def render(build):
    return json.dumps(build().json(), indent=2, sort_keys=True) + "\n"


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for name, build in DASHBOARDS.items():
        with open(os.path.join(out_dir, name), "w") as f:
            f.write(render(build))


if __name__ == "__main__":
    main()
