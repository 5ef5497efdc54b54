//! One HTTP attempt at a webhook: a signed POST over HTTP/1.1 (TLS by rustls with the
//! system's roots), no redirect followed (the client follows none), no proxy, short
//! timeouts, nothing of the answer read but its status.

use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use http_body_util::Full;
use hyper::Request;
use hyper::header::{CONTENT_TYPE, USER_AGENT};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use url::Url;

use super::sign::{SIGNATURE_HEADER, signature};

/// Longest wait for a receiver's connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest an attempt may take, answer included.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest body sent; an event's data is far smaller.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// What an attempt found.
#[derive(Clone, Debug, PartialEq)]
pub enum Attempt {
    /// The receiver answered 2xx.
    Delivered { status: u16 },
    /// It answered otherwise (a redirect included), or could not be reached.
    Refused { status: Option<u16>, error: String },
}

/// The HTTP client of webhook deliveries.
#[derive(Clone, Debug)]
pub struct Sender {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
}

impl Sender {
    /// A client over http and https (rustls with ring; the system's root certificates,
    /// or Mozilla's bundled ones where the system has none, as in a minimal container),
    /// connecting within [`CONNECT_TIMEOUT`].
    pub fn new() -> Sender {
        let mut http = HttpConnector::new();
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.enforce_http(false);
        let provider = || rustls::crypto::ring::default_provider();
        let roots = HttpsConnectorBuilder::new().with_provider_and_native_roots(provider());
        let builder = match roots {
            Ok(builder) => builder,
            Err(e) => {
                tracing::info!(
                    "webhooks trust Mozilla's root certificates: the system's cannot be read ({e})"
                );
                HttpsConnectorBuilder::new()
                    .with_provider_and_webpki_roots(provider())
                    .expect("ring supports rustls's default protocol versions")
            }
        };
        let https = builder.https_or_http().enable_http1().wrap_connector(http);
        let client = Client::builder(TokioExecutor::new()).build(https);
        Sender { client }
    }

    /// POSTs `body` to `url`, signed with `secret`, with `headers` (the event's id and
    /// kind and the webhook's id).
    pub async fn post(
        &self,
        url: Url,
        secret: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
    ) -> Attempt {
        let refused = |error: String| Attempt::Refused {
            status: None,
            error,
        };
        if body.len() > MAX_BODY_BYTES {
            return refused(format!("the event's body is over {MAX_BODY_BYTES} bytes"));
        }
        let mut request = Request::post(url.as_str())
            .header(CONTENT_TYPE, "application/json")
            .header(
                USER_AGENT,
                concat!("tvbo-webhooks/", env!("CARGO_PKG_VERSION")),
            )
            .header(
                SIGNATURE_HEADER,
                signature(secret, Utc::now().timestamp(), &body),
            );
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        let request = match request.body(Full::new(Bytes::from(body))) {
            Ok(request) => request,
            Err(e) => return refused(format!("cannot make the request: {e}")),
        };
        match tokio::time::timeout(ATTEMPT_TIMEOUT, self.client.request(request)).await {
            Err(_) => refused(format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs())),
            Ok(Err(e)) => refused(describe(&e)),
            Ok(Ok(response)) if response.status().is_success() => Attempt::Delivered {
                status: response.status().as_u16(),
            },
            Ok(Ok(response)) => {
                let status = response.status();
                Attempt::Refused {
                    status: Some(status.as_u16()),
                    error: if status.is_redirection() {
                        format!("answered {status}: redirects are not followed")
                    } else {
                        format!("answered {status}")
                    },
                }
            }
        }
    }
}

/// An error with its causes, in one line.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
