//! HTTP metrics: every answer counted by method, route template and status, and its
//! latency by method and route template.

use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use metrics::{counter, histogram};

use super::{HTTP_DURATION, HTTP_REQUESTS};

/// The `route` of requests that matched no route (404s of unknown paths).
pub const UNMATCHED: &str = "unmatched";

/// Middleware (`axum::middleware::from_fn`) recording [`HTTP_REQUESTS`] and
/// [`HTTP_DURATION`]. Added with `Router::layer`, it runs after routing, so the route is
/// the matched template (`/v1/sessions/{id}`), never the path itself; outermost, it sees
/// the answers of the other layers (timeouts, transport limits) too. The latency runs to
/// the answer's head; a streamed body is not waited for.
pub async fn measure(request: Request, next: Next) -> Response {
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED.to_string(), |path| path.as_str().to_string());
    let started = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16().to_string();
    histogram!(HTTP_DURATION, "method" => method, "route" => route.clone())
        .record(started.elapsed());
    counter!(HTTP_REQUESTS, "method" => method, "route" => route, "status" => status).increment(1);
    response
}

/// The method's name for the standard methods, `other` for the rest (methods are
/// extensible: a label of whatever a client sends would be unbounded).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::PATCH => "PATCH",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::TRACE => "TRACE",
        Method::CONNECT => "CONNECT",
        _ => "other",
    }
}
