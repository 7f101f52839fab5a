#!/usr/bin/env python3
"""scripts/bench_cross_floors.py: the pinned cross-priority switch against three floors, interleaved.

The cross-priority target (preempt's Listing 1 at priorities 1 and 2 within 1.05x the raw
FUTEX_WAIT/WAKE ping-pong, one CPU) is a ratio of two figures that each move by 5-10 % between
runs on a shared VM. Two harnesses measured it and disagreed (docs/PERFORMANCE.md, "Which
floor"). This script runs every candidate and every floor in ONE series, pinned to CPU 0,
rotating the order each repetition so that a drift of the host hits all of them alike:

  candidates  listing1_cross_priority   the thesis example (what bench_framework.sh times)
              switch cross / cross-bare the switch bench's Listing-1 app, default and bare
              rtic_switch_cross         linux-rtic 0.1.1's Listing 1 (bench/peers)
  floors      c_futex_pingpong          bench/floor/futex_pingpong.c, built with cc
              raw_futex_pingpong        bench/peers (what bench_framework.sh divides by)
              switch raw-futex          the switch bench's own ping-pong

and prints each one's median, min and max (ns per hand-off) and the ratios of the medians and
of the minimums against each floor, with the host CPU model, load and revision.

Usage: scripts/bench_cross_floors.py [--reps N] [--iterations N] [--out FILE]
  --reps N        repetitions of the whole series (default 15)
  --iterations N  hand-offs per run (default 200000, ~0.4 s a run here)
  --out FILE      also write the report (Markdown) to FILE
Environment: CARGO_TARGET_DIR (default <repo>/target/bench-framework, shared with
scripts/bench_framework.sh). Needs SCHED_FIFO (root or CAP_SYS_NICE), taskset, cc, cargo.
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(msg, code=1):
    print(f"bench_cross_floors: {msg}", file=sys.stderr)
    sys.exit(code)


def build(target):
    env = dict(os.environ, CARGO_TARGET_DIR=target)
    cargo = ["cargo", "build", "--quiet"]
    steps = [
        cargo + ["--profile", "bench", "-p", "preempt", "--example", "listing1_cross_priority"],
        cargo + ["--release", "--manifest-path", f"{REPO}/bench/peers/Cargo.toml",
                 "--bin", "raw_futex_pingpong", "--bin", "rtic_switch_cross"],
    ]
    for cmd in steps:
        if subprocess.run(cmd, cwd=REPO, env=env).returncode != 0:
            fail(f"build failed: {shlex.join(cmd)}")
    out = subprocess.run(["cargo", "bench", "--quiet", "--no-run", "-p", "preempt", "--bench",
                          "switch", "--message-format=json"], cwd=REPO, env=env,
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        fail("build of the switch bench failed")
    switch = None
    for line in out.stdout.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg["target"]["name"] == "switch" \
                and msg.get("executable"):
            switch = msg["executable"]
    if switch is None:
        fail("cargo named no executable for the switch bench")
    floor_c = f"{target}/floor/c_futex_pingpong"
    os.makedirs(os.path.dirname(floor_c), exist_ok=True)
    cmd = ["cc", "-O2", "-Wall", "-Wextra", "-o", floor_c,
           f"{REPO}/bench/floor/futex_pingpong.c", "-lpthread"]
    if subprocess.run(cmd).returncode != 0:
        fail(f"build failed: {shlex.join(cmd)}")
    return {"switch": switch, "example": f"{target}/release/examples/listing1_cross_priority",
            "peer_raw": f"{target}/release/raw_futex_pingpong",
            "rtic": f"{target}/release/rtic_switch_cross", "c_floor": floor_c}


def run(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != 0:
        fail(f"{shlex.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return p.stdout


def programs(bins, n):
    pin = ["taskset", "-c", "0"]

    def figure(cmd):
        return lambda: float(re.search(r"ns_per_op=([\d.]+)", run(cmd)).group(1))

    def switch(scenario):
        cmd = [bins["switch"], "--scenario", scenario, "--iterations", str(n), "--pin"]
        return lambda: int(re.search(r"result_ns=(\d+)", run(cmd)).group(1)) / n

    def example():
        out = run(pin + [bins["example"]], env=dict(os.environ, PREEMPT_EXAMPLE_ITERATIONS=str(n)))
        t = re.search(r"Time: ([\d.]+)(s|ms|µs)\b", out)
        switches = int(re.search(r"Switches: (\d+)", out).group(1))
        return float(t.group(1)) * {"s": 1e9, "ms": 1e6, "µs": 1e3}[t.group(2)] / switches

    return {
        "listing1_cross_priority (example)": ("candidate", example),
        "switch --scenario cross": ("candidate", switch("cross")),
        "switch --scenario cross-bare": ("candidate", switch("cross-bare")),
        "rtic_switch_cross (linux-rtic)": ("candidate", figure(pin + [bins["rtic"], "--iterations", str(n)])),
        "c_futex_pingpong (bench/floor)": ("floor C", figure([bins["c_floor"], str(n)])),
        "raw_futex_pingpong (bench/peers)": ("floor peers", figure(pin + [bins["peer_raw"], "--iterations", str(n)])),
        "switch --scenario raw-futex": ("floor switch", switch("raw-futex")),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--iterations", type=int, default=200_000)
    ap.add_argument("--out")
    a = ap.parse_args()
    if a.reps < 1 or a.iterations < 2:
        fail("--reps must be >= 1 and --iterations >= 2", 2)
    if a.out:
        try:
            open(a.out, "a").close()
        except OSError as e:
            fail(f"cannot write --out {a.out}: {e}", 2)
    target = os.environ.get("CARGO_TARGET_DIR", f"{REPO}/target/bench-framework")
    bins = build(target)
    progs = programs(bins, a.iterations)
    names = list(progs)
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown")
    rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    load0 = open("/proc/loadavg").read().split()[:3]
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    res = {k: [] for k in names}
    for r in range(a.reps):
        for k in names[r % len(names):] + names[:r % len(names)]:
            res[k].append(progs[k][1]())
        print(f"rep {r + 1}/{a.reps}: " + "  ".join(f"{res[k][-1]:.0f}" for k in names), file=sys.stderr)
    load1 = open("/proc/loadavg").read().split()[:3]
    med = {k: statistics.median(v) for k, v in res.items()}
    floors = [k for k in names if progs[k][0].startswith("floor")]
    lines = [
        "# Pinned cross-priority switch against three floors, interleaved",
        "",
        f"- command: `{shlex.join([sys.argv[0]] + sys.argv[1:])}` at {rev}, {started}",
        f"- host CPU: {cpu}, {os.cpu_count()} CPUs; kernel {os.uname().release}",
        f"- load average before {' '.join(load0)}, after {' '.join(load1)}",
        f"- {a.reps} repetitions of {a.iterations} hand-offs each, order rotated per repetition, CPU 0",
        "",
        "Ratios of medians, then of minimums: the host moves between modes about 10 % apart "
        "(docs/PERFORMANCE.md, \"Which floor\"), so a median can land in either mode; the "
        "minimum is each program's cost in the host's fast mode.",
        "",
        "| program | kind | median ns/hand-off | min | max | "
        + " | ".join(f"median / {progs[f][0]}" for f in floors) + " | "
        + " | ".join(f"min / {progs[f][0]}" for f in floors) + " |",
        "|---|---|---:|---:|---:|" + "---:|" * (2 * len(floors)),
    ]
    for k in names:
        v = res[k]
        ratios = " | ".join(f"{med[k] / med[f]:.3f}" for f in floors) + " | " \
            + " | ".join(f"{min(v) / min(res[f]):.3f}" for f in floors)
        lines.append(f"| {k} | {progs[k][0]} | {med[k]:.1f} | {min(v):.0f} | {max(v):.0f} | {ratios} |")
    report = "\n".join(lines) + "\n"
    sys.stdout.write(report)
    if a.out:
        with open(a.out, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
