//! [`BackgroundServer`]: a [`Server`] answering HTTP on a local port from threads of its own, for
//! a program (a trainer, a test, a notebook) that wants an endpoint without running an async
//! runtime itself.

use std::net::SocketAddr;

use tokio::sync::oneshot;

use crate::error::Result;
use crate::server::Server;

/// A server running on its own tokio runtime; it stops (finishing open requests) when dropped.
pub struct BackgroundServer {
    base_url: String,
    server: Server,
    stop: Option<oneshot::Sender<()>>,
    _runtime: tokio::runtime::Runtime,
}

impl BackgroundServer {
    /// Binds `addr` (port 0 picks a free port; `127.0.0.1:0` for a loopback-only test server)
    /// and serves `server` there from `worker_threads` runtime threads.
    ///
    /// # Errors
    /// [`crate::Error::Io`] when the runtime cannot start or the address cannot be bound.
    pub fn start(server: Server, addr: SocketAddr, worker_threads: usize) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(worker_threads.max(1))
            .enable_all()
            .build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind(addr))?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = server.clone();
        runtime.spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            if let Err(e) = serving.serve(listener, shutdown).await {
                tracing::error!(error = %e, "background server stopped");
            }
        });
        Ok(Self {
            base_url,
            server,
            stop: Some(stop),
            _runtime: runtime,
        })
    }

    /// `http://HOST:PORT`, the address actually bound.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The running server (its [`Server::stats`], weight updates).
    pub fn server(&self) -> &Server {
        &self.server
    }
}

impl Drop for BackgroundServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
