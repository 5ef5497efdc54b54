//! The request id (`X-Request-Id`): one id per request, shared by the load balancer's log
//! line, tvbo's log lines and the answer, so that a client's report can be found in both
//! logs (docs/operations.md, "Logs").

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;

/// The header: set by the load balancer (docker/haproxy.cfg), or by the client.
pub static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Longest request id kept from a request; a longer one is replaced.
pub const MAX_REQUEST_ID_BYTES: usize = 128;

/// Middleware (`from_fn`), outside the request's log span: the request's own
/// `X-Request-Id` when it has a usable one (1 to [`MAX_REQUEST_ID_BYTES`] bytes of
/// letters, digits and `-_.:`), else a new one (a UUID); set on the request, for the log
/// span, and on the answer.
pub async fn assign(mut request: Request, next: Next) -> Response {
    let id = match request.headers().get(&X_REQUEST_ID) {
        Some(value) if usable(value) => value.clone(),
        _ => HeaderValue::from_str(&uuid::Uuid::new_v4().simple().to_string())
            .expect("a UUID is a header value"),
    };
    request
        .headers_mut()
        .insert(X_REQUEST_ID.clone(), id.clone());
    let mut response = next.run(request).await;
    response.headers_mut().insert(X_REQUEST_ID.clone(), id);
    response
}

/// Whether a client's request id is kept: short, and nothing a log line would mangle.
fn usable(value: &HeaderValue) -> bool {
    let bytes = value.as_bytes();
    (1..=MAX_REQUEST_ID_BYTES).contains(&bytes.len())
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_short_plain_ids_are_kept() {
        assert!(usable(&HeaderValue::from_static("a1b2-c3_d4.e5:f6")));
        assert!(!usable(&HeaderValue::from_static("")));
        assert!(!usable(&HeaderValue::from_static("two words")));
        assert!(!usable(&HeaderValue::from_static("quote\"d")));
        let long = "x".repeat(MAX_REQUEST_ID_BYTES + 1);
        assert!(!usable(&HeaderValue::from_str(&long).unwrap()));
        let longest = "x".repeat(MAX_REQUEST_ID_BYTES);
        assert!(usable(&HeaderValue::from_str(&longest).unwrap()));
    }
}
