//! HTTP metrics: every answer counted by method, route template and status, and its
//! latency by method and route template; and the log line of each request.

use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::Response;
use metrics::{counter, histogram};
use tower_http::classify::{ServerErrorsAsFailures, SharedClassifier};
use tower_http::trace::{
    DefaultOnBodyChunk, DefaultOnEos, DefaultOnRequest, MakeSpan, OnResponse, TraceLayer,
};
use tracing::Span;

use super::request_id::X_REQUEST_ID;

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

/// The paths of probes and scrapes, which a balancer, an orchestrator or Prometheus asks
/// every few seconds: logged at DEBUG, not INFO (two probes every 2 s are 86 400 lines a
/// day).
const PROBES: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// Each request's log span (`request`, with its method, URI and request id) and its
/// answer's one log line (status and latency): at INFO (WARN for a 5xx), but at DEBUG for
/// the probes and scrapes (`/healthz`, `/readyz`, `/metrics`). The request id is set
/// before ([`super::request_id::assign`]).
pub fn trace_layer() -> TraceLayer<
    SharedClassifier<ServerErrorsAsFailures>,
    RequestSpan,
    DefaultOnRequest,
    AnswerLine,
    DefaultOnBodyChunk,
    DefaultOnEos,
    (),
> {
    TraceLayer::new_for_http()
        .make_span_with(RequestSpan)
        .on_response(AnswerLine)
        // The answer's line says it all: no second line for a 5xx.
        .on_failure(())
}

/// [`trace_layer`]'s span of a request.
#[derive(Clone, Copy, Debug)]
pub struct RequestSpan;

impl<B> MakeSpan<B> for RequestSpan {
    fn make_span(&mut self, request: &axum::http::Request<B>) -> Span {
        let request_id = request
            .headers()
            .get(&X_REQUEST_ID)
            .and_then(|id| id.to_str().ok())
            .unwrap_or_default();
        let (method, uri) = (request.method(), request.uri());
        if PROBES.contains(&uri.path()) {
            tracing::debug_span!("request", %method, %uri, request_id)
        } else {
            tracing::info_span!("request", %method, %uri, request_id)
        }
    }
}

/// [`trace_layer`]'s line of an answer, at the level of its request's span: none when
/// that span is not logged.
#[derive(Clone, Copy, Debug)]
pub struct AnswerLine;

impl<B> OnResponse<B> for AnswerLine {
    fn on_response(self, response: &axum::http::Response<B>, latency: Duration, span: &Span) {
        if span.is_disabled() {
            return;
        }
        let status = response.status().as_u16();
        let latency_ms = latency.as_secs_f64() * 1e3;
        let is_probe = span
            .metadata()
            .is_some_and(|metadata| *metadata.level() == tracing::Level::DEBUG);
        if is_probe {
            tracing::debug!(parent: span, status, latency_ms, "answered");
        } else if response.status().is_server_error() {
            tracing::warn!(parent: span, status, latency_ms, "answered");
        } else {
            tracing::info!(parent: span, status, latency_ms, "answered");
        }
    }
}
