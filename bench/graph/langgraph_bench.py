"""Per-invocation overhead of LangGraph on the same two graphs as graph/benches/overhead.rs.

Prints one JSON line per shape: mean wall time per invocation (median of 5 batches, the faster
of sync `invoke` and async `ainvoke`) and the peak traced memory of one invocation
(tracemalloc, Python-level allocations).
"""

import asyncio
import importlib.metadata
import json
import operator
import sys
import time
import tracemalloc
from typing import Annotated, Optional, TypedDict

from langgraph.graph import END, START, StateGraph


class Bench(TypedDict, total=False):
    alert: str
    evidence: Annotated[list, operator.add]
    summary: Optional[str]
    grounded: bool
    tokens: Annotated[int, operator.add]


def noop(_state):
    return {}


async def anoop(_state):
    return {}


def incident(node):
    g = StateGraph(Bench)
    for name in ["investigate", "recall", "summarise", "judge", "ask"]:
        g.add_node(name, node)
    g.add_edge(START, "investigate")
    g.add_edge(START, "recall")
    g.add_edge(["investigate", "recall"], "summarise")
    g.add_edge("summarise", "judge")
    g.add_conditional_edges(
        "judge", lambda s: "ask" if s.get("grounded") else END, [END, "ask"]
    )
    g.add_edge("ask", END)
    return g.compile()


def fan_out(node, width=50):
    g = StateGraph(Bench)
    g.add_node("source", node)
    g.add_node("sink", node)
    g.add_edge(START, "source")
    workers = [f"w{i:02}" for i in range(width)]
    for w in workers:
        g.add_node(w, node)
        g.add_edge("source", w)
    g.add_edge(workers, "sink")
    g.add_edge("sink", END)
    return g.compile()


INPUT = {"alert": "KubePodCrashLooping", "evidence": [], "tokens": 0, "grounded": False}
CONFIG = {"recursion_limit": 100}


def timed(run, iterations, batches=5):
    for _ in range(max(iterations // 10, 1)):
        run()
    means = []
    per_batch = max(iterations // batches, 1)
    for _ in range(batches):
        started = time.perf_counter()
        for _ in range(per_batch):
            run()
        means.append((time.perf_counter() - started) * 1e6 / per_batch)
    means.sort()
    return means[batches // 2]


def peak_bytes(run):
    run()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base, _ = tracemalloc.get_traced_memory()
    run()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak - base


def measure(shape, build, iterations):
    sync_graph = build(noop)
    async_graph = build(anoop)
    loop = asyncio.new_event_loop()

    def run_sync():
        sync_graph.invoke(dict(INPUT), CONFIG)

    def run_async():
        loop.run_until_complete(async_graph.ainvoke(dict(INPUT), CONFIG))

    sync_us = timed(run_sync, iterations)
    async_us = timed(run_async, iterations)
    best, run = (sync_us, run_sync) if sync_us <= async_us else (async_us, run_async)
    print(
        json.dumps(
            {
                "impl": "langgraph",
                "shape": shape,
                "us_per_invocation": round(best, 3),
                "us_sync_invoke": round(sync_us, 3),
                "us_async_ainvoke": round(async_us, 3),
                "peak_bytes": peak_bytes(run),
                "iterations": iterations,
                "version": importlib.metadata.version("langgraph"),
            }
        ),
        flush=True,
    )
    loop.close()


def main():
    scale = 1.0
    if "--scale" in sys.argv:
        scale = float(sys.argv[sys.argv.index("--scale") + 1])
    measure("incident", incident, max(int(500 * scale), 5))
    measure("fanout_1_50_1", fan_out, max(int(100 * scale), 5))


if __name__ == "__main__":
    main()
