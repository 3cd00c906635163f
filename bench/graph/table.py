"""Joins the Rust and LangGraph JSON lines into one table (bench/graph/run)."""

import json
import sys

TARGET = 50.0


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                row = json.loads(line)
                rows[row["shape"]] = row
    return rows


def main():
    rust, py = load(sys.argv[1]), load(sys.argv[2])
    version = next(iter(py.values()), {}).get("version")
    header = (
        f"{'shape':<16}{'firstline-graph':>18}{'langgraph ' + str(version):>20}{'ratio':>9}"
        f"{'rust peak':>13}{'py peak':>13}{'ratio':>9}"
    )
    print(header)
    print(f"{'':<16}{'µs/invocation':>18}{'µs/invocation':>20}{'':>9}{'B/invocation':>13}{'B/invocation':>13}")
    print("-" * len(header))
    ok = True
    for shape in ["incident", "fanout_1_50_1"]:
        r, p = rust.get(shape), py.get(shape)
        if r is None or p is None:
            print(f"{shape:<16} missing measurement")
            ok = False
            continue
        t_ratio = p["us_per_invocation"] / r["us_per_invocation"]
        m_ratio = p["peak_bytes"] / max(r["peak_bytes"], 1)
        ok = ok and t_ratio >= TARGET
        print(
            f"{shape:<16}{r['us_per_invocation']:>18.2f}{p['us_per_invocation']:>20.1f}"
            f"{t_ratio:>8.0f}x{r['peak_bytes']:>13}{p['peak_bytes']:>13}{m_ratio:>8.0f}x"
        )
    print()
    print("langgraph time = faster of sync invoke and async ainvoke; rust = current-thread tokio,")
    print("invoke(); peak = heap above baseline during one invocation (rust: counting allocator,")
    print("python: tracemalloc). Rust allocations per invocation: "
          + ", ".join(f"{s} {r['allocations']}" for s, r in rust.items()))
    print(f"target: >= {TARGET:.0f}x less time per invocation on both shapes: {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
