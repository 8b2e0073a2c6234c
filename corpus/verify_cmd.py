#!/usr/bin/env python3
"""Interim ground truth for loads that are not HTTP: runs a load command that
does a fixed number of units against the before and the after server,
alternating their order round by round as perfdoctor verify does, and writes
a verify.json of the same shape (ratios after/before with 95% intervals from
a paired t-test on per-round log ratios). Throughput is units over the
command's wall time; CPU per unit is the server process's CPU (/proc) over
the units. Replace with perfdoctor verify --load-cmd where it is available.

usage: verify_cmd.py --cmd 'CMD with {host} {port}' --units N
         --before PORT:PID --after PORT:PID [--rounds 6] --out verify.json
"""
import argparse
import json
import math
import os
import re
import shlex
import subprocess
import sys
import time

# two-sided 95% Student t quantiles by degrees of freedom
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365,
       8: 2.306, 9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 14: 2.145, 19: 2.093}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_side(cmd, port, pid, units):
    line = cmd.replace("{host}", "127.0.0.1").replace("{port}", str(port))
    c0, t0 = cpu_seconds(pid), time.monotonic()
    p = subprocess.run(shlex.split(line), capture_output=True, text=True)
    wall, cpu = time.monotonic() - t0, cpu_seconds(pid) - c0
    if p.returncode != 0:
        sys.exit(f"load command failed ({p.returncode}): {line}\n{p.stdout}{p.stderr}")
    # A driver that times its own units (corpus.load.Units prints "N units,
    # C clients, T s") is timed by that, without its JVM's start-up.
    m = re.search(r"(\d+) units, \d+ clients, ([\d.]+) s", p.stdout)
    if m and int(m.group(1)) == units:
        wall = float(m.group(2))
    return {"command": line, "seconds": wall, "units": units, "throughput": units / wall,
            "server_cpu_seconds": cpu, "cpu_per_unit_ms": 1000 * cpu / units, "output": p.stdout.strip()}


def interval(logs):
    n = len(logs)
    mean = sum(logs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1)) if n > 1 else 0
    t = T95.get(n - 1) or T95[max(k for k in T95 if k <= n - 1)]
    half = t * sd / math.sqrt(n)
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cmd", required=True)
    ap.add_argument("--units", type=int, required=True)
    ap.add_argument("--before", required=True)
    ap.add_argument("--after", required=True)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--warmup-cmd", help="run once per side before the rounds (same placeholders)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    sides = {}
    for name in ("before", "after"):
        port, pid = getattr(a, name).split(":")
        sides[name] = (int(port), int(pid))
    if a.warmup_cmd:
        for name, (port, pid) in sides.items():
            run_side(a.warmup_cmd, port, pid, 1)
    rounds = []
    for r in range(a.rounds):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        res = {"round": r + 1, "first": order[0]}
        for name in order:
            res[name] = run_side(a.cmd, *sides[name], a.units)
        print(f"round {r + 1}/{a.rounds}: before {res['before']['throughput']:.1f}/s "
              f"{res['before']['cpu_per_unit_ms']:.3f} ms CPU/unit, after {res['after']['throughput']:.1f}/s "
              f"{res['after']['cpu_per_unit_ms']:.3f} ms CPU/unit", file=sys.stderr)
        rounds.append(res)
    ratios = []
    for figure, key, better_up in (("throughput", "throughput", True), ("CPU/unit", "cpu_per_unit_ms", False)):
        logs = [math.log(x["after"][key] / x["before"][key]) for x in rounds]
        ratio, lo, hi = interval(logs)
        change = "none"
        if lo > 1 or hi < 1:
            change = "better" if (lo > 1) == better_up else "worse"
        ratios.append({"figure": figure, "ratio": ratio, "ci95_low": lo, "ci95_high": hi, "change": change})
        print(f"{figure}: x{ratio:.3f} [{lo:.3f}, {hi:.3f}] {change}", file=sys.stderr)
    out = {"schema_version": 1, "before": a.before, "after": a.after, "load_command": a.cmd, "units": a.units,
           "rounds": rounds, "ratios": ratios,
           "method": "corpus/verify_cmd.py: paired t-test on per-round log ratios (after/before), 95% interval, rounds alternate their order"}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
