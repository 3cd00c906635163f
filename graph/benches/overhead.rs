//! Per-invocation overhead of the runtime, for `bench/graph/run`.
//!
//! Two graphs with no-op nodes: the incident shape (START → investigate ∥ recall → join →
//! summarise → judge → END | ask → END) and a 1 → 50 → 1 fan-out/fan-in. For each, it prints
//! one JSON line: mean wall time per invocation (median of several batches) and the peak heap
//! bytes and allocation count of one invocation, measured by a counting global allocator.
//!
//! Usage: `cargo bench -p firstline-graph --bench overhead [-- --scale F]` (F multiplies the
//! iteration counts; default 1).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use firstline_graph::{BoxError, CompiledGraph, END, GraphBuilder, START, graph_state, sum};

/// Counts live bytes, their peak and the number of allocations.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

graph_state! {
    /// The benchmark state (same keys as the Python side).
    #[derive(Debug, Clone, Default)]
    pub struct Bench {
        /// Input.
        pub alert: String,
        /// Appended by nodes (unused by no-op nodes).
        pub evidence: Vec<String> = append,
        /// Overwritten once.
        pub summary: Option<String>,
        /// Router input.
        pub grounded: bool,
        /// Summed.
        pub tokens: u64 = fold(sum),
    }
    /// A partial update of `Bench`.
    pub struct BenchUpdate;
}

async fn noop(_state: Arc<Bench>) -> Result<BenchUpdate, BoxError> {
    Ok(BenchUpdate::default())
}

fn incident() -> CompiledGraph<Bench> {
    let mut g = GraphBuilder::<Bench>::new();
    for name in ["investigate", "recall", "summarise", "judge", "ask"] {
        g.add_node(name, noop);
    }
    g.add_edge(START, "investigate")
        .add_edge(START, "recall")
        .add_join(["investigate", "recall"], "summarise")
        .add_edge("summarise", "judge")
        .add_conditional_edges(
            "judge",
            [END, "ask"],
            |s: &Bench| {
                if s.grounded { "ask" } else { END }
            },
        )
        .add_edge("ask", END);
    g.compile().expect("valid incident graph")
}

fn fan_out(width: usize) -> CompiledGraph<Bench> {
    let mut g = GraphBuilder::<Bench>::new();
    g.add_node("source", noop).add_node("sink", noop);
    g.add_edge(START, "source");
    let workers: Vec<String> = (0..width).map(|i| format!("w{i:02}")).collect();
    for w in &workers {
        g.add_node(w.clone(), noop).add_edge("source", w.clone());
    }
    g.add_join(workers, "sink").add_edge("sink", END);
    g.compile().expect("valid fan-out graph")
}

fn measure(
    rt: &tokio::runtime::Runtime,
    shape: &str,
    graph: &CompiledGraph<Bench>,
    iterations: usize,
) {
    let input = Bench {
        alert: "KubePodCrashLooping".into(),
        ..Bench::default()
    };
    let run = |g: &CompiledGraph<Bench>| {
        rt.block_on(g.invoke(input.clone(), 100))
            .expect("benchmark graph runs")
    };
    for _ in 0..iterations / 10 + 1 {
        run(graph);
    }
    let batches = 5;
    let mut means = Vec::with_capacity(batches);
    for _ in 0..batches {
        let started = Instant::now();
        for _ in 0..iterations / batches {
            std::hint::black_box(run(graph));
        }
        means.push(started.elapsed().as_secs_f64() * 1e6 / (iterations / batches) as f64);
    }
    means.sort_by(f64::total_cmp);
    let median_us = means[batches / 2];

    // Memory of one invocation: peak live heap above what was live before it.
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let allocs_before = ALLOCS.load(Ordering::Relaxed);
    std::hint::black_box(run(graph));
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    let allocs = ALLOCS.load(Ordering::Relaxed) - allocs_before;

    println!(
        "{{\"impl\":\"rust\",\"shape\":\"{shape}\",\"us_per_invocation\":{median_us:.3},\
         \"peak_bytes\":{peak},\"allocations\":{allocs},\"iterations\":{iterations}}}"
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scale = args
        .iter()
        .position(|a| a == "--scale")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(1.0);
    let n = |base: f64| ((base * scale) as usize).max(5);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("tokio runtime");
    measure(&rt, "incident", &incident(), n(50_000.0));
    measure(&rt, "fanout_1_50_1", &fan_out(50), n(5_000.0));
}
