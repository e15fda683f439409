#!/usr/bin/env python3
"""Self time per op in a Chrome trace of LibTorch's profiler (bench/op_profile.cpp).

usage: op_self_time.py TRACE.json [STEPS]   prints ms per step (the trace's total / STEPS)

An op's self time is its duration less that of the ops nested in it on the same thread.
Custom autograd functions' forwards are not ops: their time is nobody's here.
"""
import collections
import json
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    steps = float(sys.argv[2]) if len(sys.argv) == 3 else 1.0
    with open(sys.argv[1]) as f:
        events = [e for e in json.load(f) if e.get("ph") == "X"]
    by_thread = collections.defaultdict(list)
    for e in events:
        by_thread[e["tid"]].append(e)
    self_us = collections.Counter()
    calls = collections.Counter()
    for thread_events in by_thread.values():
        thread_events.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_ops = []  # (end, name) of the enclosing ops
        for e in thread_events:
            while open_ops and open_ops[-1][0] <= e["ts"]:
                open_ops.pop()
            if open_ops:
                self_us[open_ops[-1][1]] -= e["dur"]
            self_us[e["name"]] += e["dur"]
            calls[e["name"]] += 1
            open_ops.append((e["ts"] + e["dur"], e["name"]))
    print("self time per step: %.1f ms" % (sum(self_us.values()) / 1e3 / steps))
    for name, us in self_us.most_common(30):
        print("%9.2f ms %7.0f calls  %s" % (us / 1e3 / steps, calls[name] / steps, name))


if __name__ == "__main__":
    main()
