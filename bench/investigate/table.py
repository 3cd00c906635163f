"""Prints bench/investigate/run's table from its before-N.json / after-N.json eval reports."""

import argparse
import glob
import json
import os
import statistics


def load(directory, side):
    """Per case: tool calls (from the last run), wall times in ms (every run), last result."""
    cases = {}
    for path in sorted(glob.glob(os.path.join(directory, f"{side}-*.json"))):
        try:
            with open(path) as f:
                report = json.load(f)
        except (OSError, json.JSONDecodeError):
            continue
        for case in report.get("cases", []):
            entry = cases.setdefault(case["case"], {"walls": [], "calls": 0, "result": "-"})
            entry["calls"] = case.get("tool_calls", 0)
            entry["result"] = case.get("result", "-") if not case.get("error") else "error"
            if case.get("wall_ms") is not None:
                entry["walls"].append(case["wall_ms"])
    return cases


def cell(entry):
    if entry is None:
        return ("-", "-", "-", "n/a")
    walls = entry["walls"] or [0]
    return (str(entry["calls"]), str(int(statistics.median(walls))), str(max(walls)), entry["result"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--budget", type=int, default=25)
    parser.add_argument("directory")
    args = parser.parse_args()
    before, after = load(args.directory, "before"), load(args.directory, "after")
    names = sorted(set(before) | set(after))
    width = max(len(n) for n in names) if names else 10
    header = ("calls", "p50 ms", "max ms", "result")
    print(f"{'case':<{width}}  " + "  ".join(f"{h:>7}" for h in header) + "  |  "
          + "  ".join(f"{h:>7}" for h in header))
    for name in names:
        b, a = cell(before.get(name)), cell(after.get(name))
        print(f"{name:<{width}}  " + "  ".join(f"{v:>7}" for v in b) + "  |  "
              + "  ".join(f"{v:>7}" for v in a))

    def ran(cases, names=None):
        return {n: c for n, c in cases.items() if c["result"] != "error" and (names is None or n in names)}

    def line(label, cases):
        if not cases:
            print(f"{label:>22}: no case ran")
            return None
        passed = sum(1 for c in cases.values() if c["result"] == "pass")
        calls = [c["calls"] for c in cases.values()]
        walls = [statistics.median(c["walls"]) for c in cases.values() if c["walls"]] or [0]
        over = [n for n, c in cases.items() if c["calls"] > args.budget]
        print(f"{label:>22}: {passed}/{len(cases)} pass; tool calls p50 {statistics.median(calls):.0f}, "
              f"max {max(calls)}; wall p50 {statistics.median(walls):.0f} ms, max {max(walls):.0f} ms; "
              f"over the {args.budget}-call budget: {', '.join(over) if over else 'none'}")
        return statistics.median(calls), statistics.median(walls)

    print()
    errors = sorted(n for n, c in before.items() if c["result"] == "error")
    line(f"before ({len(before)} cases)", ran(before))
    line(f"after ({len(after)} cases)", ran(after))
    common = set(ran(before)) & set(ran(after))
    b = line(f"before, {len(common)} both ran", ran(before, common))
    a = line(f"after, {len(common)} both ran", ran(after, common))
    if a and b and b[0] and b[1]:
        print(f"{'ratio after/before':>22}: tool calls x{a[0] / b[0]:.2f}, wall x{a[1] / b[1]:.2f} (p50 over the common cases)")
    if errors:
        print(f"the base revision could not load {len(errors)} case(s) (newer scenario format): "
              f"{', '.join(errors)}")


if __name__ == "__main__":
    main()
