//! Draining before a stop (docs/operations.md, "Stopping"): once a replica is told to
//! stop, it first tells its load balancer, then closes its connections as their answers
//! end, and only then stops accepting.
//!
//! While [`Draining`] is set, `/readyz` answers 503 `draining` (a balancer's health check
//! takes the replica out of rotation) and every answer carries `Connection: close` (a
//! balancer's kept-alive connection is not reused for a request the replica would never
//! read); requests are otherwise served as ever.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;

/// Whether the server is draining: shared by the router (readiness, `Connection: close`,
/// the end of event streams) and whoever stops it. Starts unset; once set it stays set.
#[derive(Clone, Debug)]
pub struct Draining(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Draining {
    fn default() -> Self {
        Draining(Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl Draining {
    /// From now on the server drains.
    pub fn start(&self) {
        self.0.send_replace(true);
    }

    /// Whether [`Self::start`] was called.
    pub fn is_draining(&self) -> bool {
        *self.0.borrow()
    }

    /// Completes once [`Self::start`] is called (at once if it was).
    pub async fn started(&self) {
        let mut draining = self.0.subscribe();
        // The sender lives as long as `self`: the wait ends only by the drain.
        let _ = draining.wait_for(|draining| *draining).await;
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
