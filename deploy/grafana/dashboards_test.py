#!/usr/bin/env python3
"""Checks Weft's Grafana dashboards: the committed JSON is what dashboards.py writes,
each file is an importable dashboard (inputs, a Prometheus data-source variable that
every panel and query uses, unique panel ids and refIds, panels inside the 24-column
grid without overlaps), every template variable a query uses is defined, every metric
a query names is registered by the controller or agent code, and every query parses
as PromQL (promtool, with the variables substituted). Run from the workspace root."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = "deploy/grafana"
METRIC_SOURCES = ["controller/inventory/controller_metrics.cc", "controller/placement/placement_metrics.cc",
                  "controller/rollout/rollout_metrics.cc", "controller/tuning/tune_metrics.cc",
                  "controller/pingmesh/pingmesh_metrics.cc",
                  "agent/agent_metrics.cc",
                  "security/certificate_monitor.cc"]
BUILTINS = {"__rate_interval", "__interval", "__range"}
PANEL_TYPES = {"stat", "timeseries", "heatmap", "state-timeline", "table", "bargauge"}
failures = []


def fail(msg):
    failures.append(msg)


def registered_metrics():
    names = set()
    for path in METRIC_SOURCES:
        if os.path.exists(path):
            names.update(re.findall(r'"(weft_[a-z0-9_]+)"', open(path).read()))
    return names


def substitute(expr):
    """The query with variables as a viewer would have them: any value matches."""
    expr = expr.replace("$__rate_interval", "1m").replace("$__interval", "15s")
    expr = re.sub(r'(?<![=!~])="\$', '=~"$', expr)
    return re.sub(r"\$\{?(\w+)\}?", ".*", expr)


def check(path, generated, metrics, uids):
    text = open(path).read()
    if text != generated:
        fail(f"{path}: differs from what dashboards.py writes (run python3 {HERE}/dashboards.py)")
    d = json.loads(text)
    for key in ("uid", "title", "schemaVersion", "panels", "templating", "__inputs"):
        if key not in d:
            fail(f"{path}: no '{key}'")
    if d["uid"] in uids:
        fail(f"{path}: uid {d['uid']} also used by {uids[d['uid']]}")
    uids[d["uid"]] = path
    if not any(i.get("name") == "DS_PROMETHEUS" and i.get("pluginId") == "prometheus"
               for i in d["__inputs"]):
        fail(f"{path}: no DS_PROMETHEUS input for import")
    variables = {v["name"]: v for v in d["templating"]["list"]}
    ds = variables.get("DS_PROMETHEUS")
    if not ds or ds["type"] != "datasource" or ds["query"] != "prometheus":
        fail(f"{path}: no Prometheus data-source variable DS_PROMETHEUS")
    for v in variables.values():
        if v["type"] == "query" and v["datasource"]["uid"] != "${DS_PROMETHEUS}":
            fail(f"{path}: variable {v['name']} does not query ${{DS_PROMETHEUS}}")
    ids, cells, exprs = set(), set(), []
    for p in d["panels"]:
        where = f"{path}: panel {p.get('id')} '{p.get('title')}'"
        if p["id"] in ids:
            fail(f"{where}: duplicate id")
        ids.add(p["id"])
        if p["type"] not in PANEL_TYPES:
            fail(f"{where}: unknown type {p['type']}")
        if p["datasource"] != {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}:
            fail(f"{where}: data source is not ${{DS_PROMETHEUS}}")
        g = p["gridPos"]
        if g["x"] < 0 or g["w"] <= 0 or g["x"] + g["w"] > 24 or g["h"] <= 0:
            fail(f"{where}: outside the 24-column grid: {g}")
        for x in range(g["x"], g["x"] + g["w"]):
            for y in range(g["y"], g["y"] + g["h"]):
                if (x, y) in cells:
                    fail(f"{where}: overlaps another panel at {x},{y}")
                cells.add((x, y))
        if not p["targets"]:
            fail(f"{where}: no queries")
        refs = [t["refId"] for t in p["targets"]]
        if len(set(refs)) != len(refs):
            fail(f"{where}: duplicate refId")
        for t in p["targets"]:
            if t.get("datasource") != p["datasource"]:
                fail(f"{where}: query {t['refId']} on another data source")
            expr = t.get("expr", "")
            if not expr:
                fail(f"{where}: query {t['refId']} is empty")
            for var in re.findall(r"\$\{?(\w+)\}?", expr):
                if var not in variables and var not in BUILTINS:
                    fail(f"{where}: query uses undefined variable ${var}")
            for name in re.findall(r"\b(weft_[a-z0-9_]+)", expr):
                base = re.sub(r"_(bucket|sum|count)$", "", name)
                if name not in metrics and base not in metrics:
                    fail(f"{where}: metric {name} is not registered by {', '.join(METRIC_SOURCES)}")
            exprs.append((where, substitute(expr)))
    return exprs


def check_promql(exprs):
    """Every query parses: promtool check rules on one recording rule per query."""
    if subprocess.run(["sh", "-c", "command -v promtool"], capture_output=True).returncode:
        print("SKIPPED (PromQL parse only): promtool is not installed (Debian package prometheus)")
        return
    rules = {"groups": [{"name": "dashboards", "rules": [
        {"record": f"weft:dashboard_query_{i}", "expr": e} for i, (_, e) in enumerate(exprs)]}]}
    with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
        json.dump(rules, f)  # JSON is YAML
    out = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True)
    if out.returncode != 0:
        fail("promtool refuses a dashboard query:\n" + out.stdout + out.stderr)
    os.unlink(f.name)


def main():
    sys.path.insert(0, HERE)
    import dashboards
    metrics = registered_metrics()
    if not metrics:
        fail("no metric names found in " + ", ".join(METRIC_SOURCES))
    files = sorted(glob.glob(f"{HERE}/weft-*.json"))
    if sorted(os.path.basename(f) for f in files) != sorted(dashboards.DASHBOARDS):
        fail(f"dashboard files {files} are not those dashboards.py writes")
    uids, exprs = {}, []
    for name, build in sorted(dashboards.DASHBOARDS.items()):
        exprs += check(f"{HERE}/{name}", dashboards.render(build), metrics, uids)
    check_promql(exprs)
    for f in failures:
        print("FAIL:", f)
    print(f"{len(files)} dashboards, {len(exprs)} queries checked")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
