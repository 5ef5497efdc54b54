//! Running the server: open the store, serve the router, shut down gracefully.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::body::Body;
use axum::http::Request;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::Service;

use crate::api::drain::Draining;
use crate::api::{self, RouterSettings};
use crate::store::{PoolSettings, PostgresStore, SqliteStore, Store};

/// Opens the store named by a database URL: `sqlite:` URLs open SQLite, `postgres://` and
/// `postgresql://` URLs open PostgreSQL; any other scheme is an error.
pub async fn open_store(database_url: &str, pool: &PoolSettings) -> anyhow::Result<Arc<dyn Store>> {
    if database_url.starts_with("sqlite:") {
        let store = SqliteStore::connect(database_url, pool)
            .await
            .with_context(|| format!("opening {database_url}"))?;
        Ok(Arc::new(store))
    } else if database_url.starts_with("postgres://") || database_url.starts_with("postgresql://") {
        // Not the URL: it may carry a password.
        let store = PostgresStore::connect(database_url, pool)
            .await
            .context("opening the PostgreSQL database")?;
        Ok(Arc::new(store))
    } else {
        anyhow::bail!(
            "unsupported DATABASE_URL {:?}: expected sqlite://path, \
             sqlite::memory: or postgres://user@host/database",
            redacted_database_url(database_url)
        )
    }
}

/// The database URL with its password replaced by `***`, for logs and error messages.
pub fn redacted_database_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_string();
    };
    let authority_end = url[scheme_end..]
        .find('/')
        .map_or(url.len(), |i| scheme_end + i);
    let Some(at) = url[scheme_end..authority_end]
        .rfind('@')
        .map(|i| scheme_end + i)
    else {
        return url.to_string();
    };
    match url[scheme_end..at].find(':') {
        Some(colon) => format!("{}***{}", &url[..scheme_end + colon + 1], &url[at..]),
        None => url.to_string(),
    }
}

/// Limits on the connections themselves (docs/security.md): what a client that opens
/// sockets and sends nothing, or sends a request head byte by byte, can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectionSettings {
    /// Most connections open at once; one more is answered 503 `busy` and closed.
    pub max_connections: usize,
    /// Most connections open at once from one peer IP address; one more from it is
    /// answered 503 `busy` and closed. None: no cap per address (behind a reverse proxy,
    /// every client has the proxy's address).
    pub max_connections_per_peer: Option<usize>,
    /// Longest wait for a complete request head, counted from when the server starts
    /// reading one: from the accept on a new connection, from the end of the previous
    /// answer on a kept-alive one. Past it the connection is closed, so it is also how
    /// long an idle kept-alive connection stays open.
    pub header_read_timeout: Duration,
}

impl ConnectionSettings {
    pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
    /// An eighth of [`Self::DEFAULT_MAX_CONNECTIONS`]: far more than a browser (6 per
    /// host) or a client's connection pool opens, and one address alone cannot take every
    /// connection.
    pub const DEFAULT_MAX_CONNECTIONS_PER_PEER: usize = 128;
    pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
}

impl Default for ConnectionSettings {
    /// [`Self::DEFAULT_MAX_CONNECTIONS`], [`Self::DEFAULT_MAX_CONNECTIONS_PER_PEER`],
    /// [`Self::DEFAULT_HEADER_READ_TIMEOUT`].
    fn default() -> Self {
        ConnectionSettings {
            max_connections: Self::DEFAULT_MAX_CONNECTIONS,
            max_connections_per_peer: Some(Self::DEFAULT_MAX_CONNECTIONS_PER_PEER),
            header_read_timeout: Self::DEFAULT_HEADER_READ_TIMEOUT,
        }
    }
}

/// Which connection cap a refused connection met.
#[derive(Clone, Copy, Debug)]
enum Cap {
    /// [`ConnectionSettings::max_connections`].
    Server,
    /// [`ConnectionSettings::max_connections_per_peer`].
    Peer,
}

/// The answer to a connection over a cap: 503 `busy` as problem+json, then the
/// connection closes.
fn at_capacity(cap: Cap) -> Vec<u8> {
    let detail = match cap {
        Cap::Server => {
            "the server holds as many connections as it may (TVBO_MAX_CONNECTIONS); retry"
        }
        Cap::Peer => {
            "the server holds as many connections from this address as it may \
             (TVBO_MAX_CONNECTIONS_PER_PEER); close one, or retry"
        }
    };
    let body = serde_json::json!({
        "type": "https://tvbo.dev/problems/busy",
        "title": "Service Unavailable",
        "status": 503,
        "detail": detail,
    })
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/problem+json\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves the API on `listener` until `shutdown` completes, then finishes the requests
/// in flight (the drain before, if any, is `shutdown`'s: [`shutdown_signal`]).
pub async fn serve(
    listener: TcpListener,
    store: Arc<dyn Store>,
    settings: RouterSettings,
    connections: ConnectionSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_router(
        listener,
        api::router(store, settings),
        connections,
        shutdown,
    )
    .await
}

/// Serves `app` (an [`api::router`]) on `listener` until `shutdown` completes, then
/// finishes the requests in flight: [`serve`] for a caller that keeps the router, to call it
/// in-process as well (tests).
pub async fn serve_router(
    listener: TcpListener,
    app: axum::Router,
    connections: ConnectionSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // HTTP/1.1 only (a load balancer in front speaks it to its backends): hyper's
    // protocol detection would read the first bytes with no timeout.
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(connections.header_read_timeout);
    let slots = Arc::new(Semaphore::new(connections.max_connections));
    let peers = PeerSlots::new(connections.max_connections_per_peer);
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    accept_failed(e).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Some(peer_slot) = peers.take(peer.ip()) else {
            tokio::spawn(refuse(stream, Cap::Peer));
            continue;
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tokio::spawn(refuse(stream, Cap::Server));
            continue;
        };
        // Each answer and stream message goes out when written: with Nagle's algorithm, a
        // message written in two segments waits for the client's delayed ACK of the first
        // (40–200 ms), which a live stream's reader sees.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(error = %e, %peer, "cannot set TCP_NODELAY");
        }
        let app = app.clone();
        let service =
            service_fn(move |request: Request<Incoming>| app.clone().call(request.map(Body::new)));
        let connection = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
            drop(slot);
            drop(peer_slot);
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// The open connections of each peer address, against
/// [`ConnectionSettings::max_connections_per_peer`].
#[derive(Clone)]
struct PeerSlots {
    max: Option<usize>,
    open: Arc<std::sync::Mutex<HashMap<IpAddr, usize>>>,
}

/// One open connection of a peer address: given back when dropped.
struct PeerSlot {
    peers: PeerSlots,
    ip: IpAddr,
}

impl PeerSlots {
    fn new(max: Option<usize>) -> PeerSlots {
        PeerSlots {
            max,
            open: Arc::default(),
        }
    }

    /// A slot for one more connection of `ip`; None when it has as many as it may. An
    /// IPv4 address mapped into IPv6 counts as the IPv4 address.
    fn take(&self, ip: IpAddr) -> Option<Option<PeerSlot>> {
        let Some(max) = self.max else {
            return Some(None);
        };
        let ip = ip.to_canonical();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let count = open.entry(ip).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Some(PeerSlot {
            peers: self.clone(),
            ip,
        }))
    }
}

impl Drop for PeerSlot {
    fn drop(&mut self) {
        let mut open = self.peers.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(count) = open.get_mut(&self.ip) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.ip);
            }
        }
    }
}

/// Answers a connection over a cap 503 and closes it.
async fn refuse(mut stream: tokio::net::TcpStream, cap: Cap) {
    use tokio::io::AsyncWriteExt;
    match cap {
        Cap::Server => tracing::warn!("connection refused: at TVBO_MAX_CONNECTIONS"),
        Cap::Peer => match stream.peer_addr() {
            Ok(peer) => tracing::warn!(
                peer = %peer.ip(),
                "connection refused: at TVBO_MAX_CONNECTIONS_PER_PEER"
            ),
            Err(_) => tracing::warn!("connection refused: at TVBO_MAX_CONNECTIONS_PER_PEER"),
        },
    }
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        stream.write_all(&at_capacity(cap)).await?;
        stream.shutdown().await
    })
    .await;
}

/// After a failed accept: a connection that went away is nothing; anything else (out of
/// file descriptors, say) is logged, and accepting waits a second rather than spin.
async fn accept_failed(e: std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::error!(error = %e, "accepting a connection failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
}

/// The default of `TVBO_DRAIN_PERIOD`: how long a replica keeps serving after SIGTERM
/// while its load balancer takes it out of rotation. Above what HAProxy of
/// docker/compose.yaml takes to notice (two failed checks 1 s apart) and what Kubernetes
/// takes to remove an endpoint (a few seconds).
pub const DEFAULT_DRAIN_PERIOD: Duration = Duration::from_secs(5);

/// A signal asking the process to stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StopSignal {
    /// SIGINT: Ctrl-C at a terminal.
    Interrupt,
    /// SIGTERM: what `docker stop` and Kubernetes send.
    Terminate,
}

/// The process's stop signals, listened to from creation on (so a second one is not
/// missed).
struct StopSignals {
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl StopSignals {
    fn new() -> StopSignals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let terminate = signal(SignalKind::terminate())
                .inspect_err(|e| tracing::error!(error = %e, "cannot listen for SIGTERM"))
                .ok();
            StopSignals { terminate }
        }
        #[cfg(not(unix))]
        StopSignals {}
    }

    /// The next stop signal.
    async fn next(&mut self) -> StopSignal {
        let interrupt = async {
            if let Err(e) = tokio::signal::ctrl_c().await {
                tracing::error!(error = %e, "cannot listen for SIGINT");
                std::future::pending::<()>().await;
            }
        };
        #[cfg(unix)]
        let terminate = async {
            match self.terminate.as_mut() {
                Some(signal) => {
                    signal.recv().await;
                }
                None => std::future::pending().await,
            }
        };
        #[cfg(not(unix))]
        let terminate = std::future::pending::<()>();
        tokio::select! {
            () = interrupt => StopSignal::Interrupt,
            () = terminate => StopSignal::Terminate,
        }
    }
}

/// Completes when the server should stop accepting connections and finish what is in
/// flight (the `shutdown` of [`serve`]). Either way `draining` is set at the first signal
/// (`/readyz` answers 503, answers close their connections, event streams end: nothing
/// open holds the shutdown). On SIGINT the server stops at once; on SIGTERM after a
/// drain: it goes on serving for `drain_period`, or until a second signal.
pub async fn shutdown_signal(draining: Draining, drain_period: Duration) {
    let mut signals = StopSignals::new();
    let first = signals.next().await;
    draining.start();
    if first == StopSignal::Terminate && !drain_period.is_zero() {
        tracing::info!(
            drain_seconds = drain_period.as_secs_f64(),
            "SIGTERM: draining: /readyz answers 503, connections close after their \
             answers; serving on until the drain period ends (or a second signal)"
        );
        tokio::select! {
            () = tokio::time::sleep(drain_period) => {}
            signal = signals.next() => tracing::info!(?signal, "the drain is cut short"),
        }
    }
    tracing::info!("shutting down: accepting no more connections, finishing requests in flight");
}

#[cfg(test)]
mod tests {
    use super::redacted_database_url;

    #[test]
    fn passwords_are_redacted() {
        assert_eq!(
            redacted_database_url("postgres://tvbo:s3cr@t@db:5432/tvbo"),
            "postgres://tvbo:***@db:5432/tvbo"
        );
        assert_eq!(
            redacted_database_url("postgres://postgres@127.0.0.1/test"),
            "postgres://postgres@127.0.0.1/test"
        );
        assert_eq!(
            redacted_database_url("sqlite://tvbo.db"),
            "sqlite://tvbo.db"
        );
    }
}
