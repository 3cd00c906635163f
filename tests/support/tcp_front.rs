//! A TCP front a test can take down: it forwards every connection to a target set after it
//! started (so its address can be configured before what it fronts exists) and, once stopped,
//! refuses connections on its port and cuts the open ones, as a server that went down does.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

pub struct TcpFront {
    pub addr: SocketAddr,
    target: Arc<Mutex<Option<SocketAddr>>>,
    task: Mutex<Option<JoinHandle<()>>>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl TcpFront {
    /// Listens on a free local port; connections wait for a target.
    pub async fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let target: Arc<Mutex<Option<SocketAddr>>> = Arc::default();
        let forward_to = target.clone();
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let open = connections.clone();
        let task = tokio::spawn(async move {
            // Ends when the test stops the front (the task is aborted).
            while let Ok((mut inbound, _)) = listener.accept().await {
                let Some(to) = *forward_to.lock().unwrap_or_else(|p| p.into_inner()) else {
                    continue;
                };
                let connection = tokio::spawn(async move {
                    if let Ok(mut outbound) = TcpStream::connect(to).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                open.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(connection);
            }
        });
        Self {
            addr,
            target,
            task: Mutex::new(Some(task)),
            connections,
        }
    }

    /// `http://addr{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Forwards new connections to `to`.
    pub fn forward_to(&self, to: SocketAddr) {
        *self.target.lock().unwrap_or_else(|p| p.into_inner()) = Some(to);
    }

    /// Closes the port and cuts every open connection: new connections are refused.
    pub async fn stop(&self) {
        let task = self.task.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
        let open: Vec<JoinHandle<()>> = self
            .connections
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        for connection in open {
            connection.abort();
            let _ = connection.await;
        }
    }
}
