//! A private stack for one test binary run with plain `cargo test`.
//!
//! The stack lives on a dedicated thread (children's parent-death signal is tied to the thread
//! that spawned them, and test threads come and go). An `atexit` hook asks that thread to stop
//! the services and delete their state when the test binary exits.

use crate::TestStack;
use firstline_stack::{Stack, StackConfig};
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::Duration;

static SHUTDOWN: Mutex<Option<mpsc::Sender<mpsc::Sender<()>>>> = Mutex::new(None);

pub(crate) fn start() -> TestStack {
    let (ready_tx, ready_rx) = mpsc::channel();
    let (shutdown_tx, shutdown_rx) = mpsc::channel::<mpsc::Sender<()>>();
    std::thread::Builder::new()
        .name("testkit-stack".into())
        .spawn(move || keep_stack(ready_tx, shutdown_rx))
        .expect("spawning the stack thread");
    let stack = match ready_rx.recv() {
        Ok(Ok(stack)) => stack,
        Ok(Err(message)) => panic!("starting the test stack: {message}"),
        Err(_) => panic!("the test stack thread died while starting"),
    };
    *SHUTDOWN.lock().unwrap_or_else(|p| p.into_inner()) = Some(shutdown_tx);
    // SAFETY: registering a plain extern "C" function with no captured state.
    unsafe {
        libc::atexit(stop_at_exit);
    }
    stack
}

fn keep_stack(
    ready: mpsc::Sender<Result<TestStack, String>>,
    shutdown: mpsc::Receiver<mpsc::Sender<()>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return;
        }
    };
    let state_dir = std::env::temp_dir().join(format!("firstline-test-{}", std::process::id()));
    let config = StackConfig {
        state_dir: state_dir.clone(),
        tools_dir: std::env::var_os("FIRSTLINE_DEV__TOOLS_DIR")
            .map_or_else(|| crate::workspace_root().join(".tools"), Into::into),
        postgres_port: 0,
        temporal_port: 0,
        kafka_port: 0,
        postgres_os_user: std::env::var("FIRSTLINE_DEV__POSTGRES_OS_USER")
            .unwrap_or_else(|_| "firstline".into()),
        ready_timeout: Duration::from_secs(60),
        durable: false,
    };
    let started = runtime.block_on(Stack::start(config));
    let stack = match started {
        Ok(stack) => stack,
        Err(e) => {
            let _ = ready.send(Err(e.to_string()));
            return;
        }
    };
    let addresses = stack.addresses().clone();
    let _ = ready.send(Ok(TestStack {
        postgres_admin_url: addresses.database_url("postgres"),
        temporal_address: addresses.temporal_address(),
        kafka_brokers: addresses.kafka_brokers(),
    }));
    if let Ok(done) = shutdown.recv() {
        runtime.block_on(stack.stop(Duration::from_secs(3)));
        let _ = std::fs::remove_dir_all(&state_dir);
        let _ = done.send(());
    }
}

extern "C" fn stop_at_exit() {
    let sender = SHUTDOWN.lock().ok().and_then(|mut s| s.take());
    if let Some(sender) = sender {
        let (done_tx, done_rx) = mpsc::channel();
        if sender.send(done_tx).is_ok() {
            let _ = done_rx.recv_timeout(Duration::from_secs(15));
        }
    }
}
