//! The accept loop the test fronts (`temporal_front.rs`, `postgres_front.rs`) share: one task per
//! connection, every one of them stopped when the loop is dropped.

use std::future::Future;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

/// A running accept loop; dropping it closes the listener and every connection.
pub struct AcceptLoop(JoinHandle<()>);

impl AcceptLoop {
    /// Accepts on `listener` and runs `handle` for each connection.
    pub fn spawn<F, Fut>(listener: TcpListener, handle: F) -> Self
    where
        F: Fn(TcpStream) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        Self(tokio::spawn(async move {
            let mut connections = JoinSet::new();
            loop {
                let tcp = match listener.accept().await {
                    Ok((tcp, _)) => tcp,
                    // Out of descriptors, say: wait for connections to close rather than spin.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Reap finished connections so the set stays as small as the open ones.
                while connections.try_join_next().is_some() {}
                connections.spawn(handle(tcp));
            }
        }))
    }
}

impl Drop for AcceptLoop {
    fn drop(&mut self) {
        // Dropping the loop's task drops its JoinSet, which aborts every connection.
        self.0.abort();
    }
}
