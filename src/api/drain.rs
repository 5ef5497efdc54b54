//! Draining before a stop (docs/operations.md, "Stopping"): once a replica is told to
//! stop, it first tells its load balancer, then closes its connections as their answers
//! end, and only then stops accepting.
//!
//! While [`Draining`] is set, `/readyz` answers 503 `draining` (a balancer's health check
//! takes the replica out of rotation) and every answer carries `Connection: close` (a
//! balancer's kept-alive connection is not reused for a request the replica would never
//! read); requests are otherwise served as ever.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// Whether the server is draining: shared by the router (readiness, `Connection: close`)
/// and whoever stops it. Starts unset; once set it stays set.
#[derive(Clone, Debug, Default)]
pub struct Draining(Arc<AtomicBool>);

impl Draining {
    /// From now on the server drains.
    pub fn start(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether [`Self::start`] was called.
    pub fn is_draining(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Middleware (`from_fn_with_state`): while draining, the answer carries
/// `Connection: close`, so that hyper closes the connection once it is written.
pub async fn close_connections(
    State(draining): State<Draining>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = next.run(request).await;
    if draining.is_draining() {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
