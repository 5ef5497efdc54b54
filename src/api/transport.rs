//! Answers about the request as a whole rather than its fields: a request head over the
//! limits (414, 431) and a request that takes too long (503), all problem+json; and the
//! connection of an answer given before the request's body was read.
//!
//! hyper parses the request head before any of this runs and answers by itself, with an
//! empty body, the heads it cannot hold: a URI over 65,534 bytes (414), more than 100
//! header fields or a head over about 400 KiB (431), a malformed request line or header
//! (400). The limits here are well below hyper's, so a head that is merely too large gets
//! a problem naming what is too large.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::body::{Body as HttpBody, Frame, SizeHint};

use crate::api::error::ApiError;
use crate::domain::InvalidInput;

/// Longest request target (path and query) accepted, in bytes.
pub const MAX_URI_BYTES: usize = 8 << 10;

/// Largest total of the header fields accepted (names and values), in bytes.
pub const MAX_HEADER_BYTES: usize = 32 << 10;

/// Refuses a request whose target is over [`MAX_URI_BYTES`] (414 naming `URI`) or whose
/// header fields total over [`MAX_HEADER_BYTES`] (431 naming the largest field).
pub async fn limit_head(request: Request, next: Next) -> Response {
    let target = request
        .uri()
        .path_and_query()
        .map_or(0, |target| target.as_str().len());
    if target > MAX_URI_BYTES {
        return ApiError::field_error(
            StatusCode::URI_TOO_LONG,
            "uri-too-long",
            InvalidInput::new(
                "URI",
                format!("is {target} bytes long; at most {MAX_URI_BYTES} are accepted"),
            ),
        )
        .into_response();
    }
    let headers = request.headers();
    let total: usize = headers
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len())
        .sum();
    if total > MAX_HEADER_BYTES
        && let Some((largest, _)) = headers
            .iter()
            .max_by_key(|(name, value)| name.as_str().len() + value.len())
    {
        return ApiError::field_error(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers-too-large",
            InvalidInput::new(
                largest.as_str(),
                format!(
                    "is the largest of header fields that total {total} bytes; at most \
                     {MAX_HEADER_BYTES} are accepted"
                ),
            ),
        )
        .into_response();
    }
    next.run(request).await
}

/// Answers 503 `timeout` when the rest of the stack takes longer than the given time to
/// answer; the work in progress is dropped, so a write may or may not have committed.
pub async fn answer_within(
    State(limit): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    match tokio::time::timeout(limit, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "timeout",
            format!(
                "no answer within {} s; the request was abandoned and may or may not have \
                 taken effect: retry it with the same Idempotency-Key",
                limit.as_secs_f64()
            ),
        )
        .into_response(),
    }
}

/// Middleware (`from_fn`): an answer given before the request's body was read to its end
/// (a 401, 404, 405, 413, 415 or 429 to a request with a body) carries
/// `Connection: close`. The server closes such a connection rather than read a body
/// nobody wants; the header tells the client so, instead of leaving it to find a dead
/// connection on its next request.
pub async fn close_when_body_unread(request: Request, next: Next) -> Response {
    let has_body = request.headers().contains_key(header::TRANSFER_ENCODING)
        || request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|length| length.to_str().ok())
            .is_some_and(|length| length.trim() != "0");
    if !has_body {
        return next.run(request).await;
    }
    let read = Arc::new(AtomicBool::new(false));
    let request = request.map(|body| {
        Body::new(ReadToEnd {
            body,
            read: read.clone(),
        })
    });
    let mut response = next.run(request).await;
    if !read.load(Ordering::Acquire) {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// A request body that records when it has been read to its end.
struct ReadToEnd {
    body: Body,
    read: Arc<AtomicBool>,
}

impl HttpBody for ReadToEnd {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(frame, Poll::Ready(None)) || self.body.is_end_stream() {
            self.read.store(true, Ordering::Release);
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
