//! One HTTP attempt at a webhook: a signed POST over HTTP/1.1 (TLS by rustls with the
//! system's roots), no redirect followed (the client follows none), no proxy, short
//! timeouts, nothing of the answer read but its status, and only to addresses the allow
//! list permits ([`AllowList::permits`]): names are resolved by [`Resolver`], which drops
//! the addresses refused, so the check is on the addresses the connection uses.

use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use http_body_util::Full;
use hyper::header::{CONTENT_TYPE, USER_AGENT};
use hyper::{Request, Uri};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;
use tower::Service;
use url::Url;

use super::AllowList;
use super::sign::{SIGNATURE_HEADER, signature};

/// Longest wait for a receiver's connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Longest an attempt may take, answer included.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest body sent; an event's data is far smaller.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

/// What an attempt found.
#[derive(Clone, Debug, PartialEq)]
pub enum Attempt {
    /// The receiver answered 2xx.
    Delivered { status: u16 },
    /// It answered otherwise (a redirect included), or could not be reached: its status if
    /// it answered, and `error`, a [`Failure`]'s word (never the receiver's own text).
    Refused { status: Option<u16>, error: String },
}

/// Why an attempt was not delivered, coarsely: what a ping answers and a delivery's log
/// keeps, so that neither tells more about a receiver than whether and how it answered
/// (docs/events.md, "Outbound safety").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// `not-allowed`: nothing sent; every address of the host is one the allow list refuses.
    NotAllowed,
    /// `unreachable`: no HTTP answer (no address, connection refused or not made within
    /// [`CONNECT_TIMEOUT`], TLS failed, or what came back was not HTTP).
    Unreachable,
    /// `timeout`: no answer within [`ATTEMPT_TIMEOUT`].
    Timeout,
    /// `answered-Nxx`: a status other than 2xx, by its class (3xx: a redirect, not followed).
    Answered(u16),
    /// `not-sent`: the server could not make the request (a body over [`MAX_BODY_BYTES`]).
    NotSent,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::NotAllowed => f.write_str("not-allowed"),
            Failure::Unreachable => f.write_str("unreachable"),
            Failure::Timeout => f.write_str("timeout"),
            Failure::Answered(status) => write!(f, "answered-{}xx", status / 100),
            Failure::NotSent => f.write_str("not-sent"),
        }
    }
}

impl Failure {
    pub fn refused(self) -> Attempt {
        let status = match self {
            Failure::Answered(status) => Some(status),
            _ => None,
        };
        Attempt::Refused {
            status,
            error: self.to_string(),
        }
    }
}

/// A connection the allow list refuses: to an address literal it does not permit, or to a
/// name none of whose addresses it permits.
#[derive(Debug, thiserror::Error)]
#[error("no address of {host} is allowed on port {port} (TVBO_WEBHOOK_ALLOW)")]
struct NotAllowed {
    host: String,
    port: u16,
}

/// The HTTP client of webhook deliveries.
#[derive(Clone, Debug)]
pub struct Sender {
    client: Client<HttpsConnector<Guarded>, Full<Bytes>>,
}

impl Sender {
    /// A client over http and https (rustls with ring; the system's root certificates,
    /// or Mozilla's bundled ones where the system has none, as in a minimal container),
    /// connecting within [`CONNECT_TIMEOUT`] to addresses `allow` permits only.
    pub fn new(allow: Arc<AllowList>) -> Sender {
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
        let https = builder
            .https_or_http()
            .enable_http1()
            .wrap_connector(Guarded { allow });
        let client = Client::builder(TokioExecutor::new()).build(https);
        Sender { client }
    }

    /// POSTs `body` to `url`, signed with `secret`, with `headers` (the event's id and
    /// kind and the webhook's id). The connection goes only to an address the allow list
    /// permits; `url` itself is the caller's to check ([`AllowList::check`]).
    pub async fn post(
        &self,
        url: Url,
        secret: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
    ) -> Attempt {
        if body.len() > MAX_BODY_BYTES {
            return Failure::NotSent.refused();
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
        let Ok(request) = request.body(Full::new(Bytes::from(body))) else {
            return Failure::NotSent.refused();
        };
        match tokio::time::timeout(ATTEMPT_TIMEOUT, self.client.request(request)).await {
            Err(_) => Failure::Timeout.refused(),
            Ok(Err(e)) => {
                // The cause stays in the server's log; the tenant sees the coarse word.
                tracing::debug!(
                    host = url.host_str(),
                    "webhook attempt failed: {}",
                    describe(&e)
                );
                if caused_by_not_allowed(&e) {
                    Failure::NotAllowed.refused()
                } else {
                    Failure::Unreachable.refused()
                }
            }
            Ok(Ok(response)) if response.status().is_success() => Attempt::Delivered {
                status: response.status().as_u16(),
            },
            Ok(Ok(response)) => Failure::Answered(response.status().as_u16()).refused(),
        }
    }
}

/// Whether the allow list refused the connection behind `error`.
fn caused_by_not_allowed(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(error) = cause {
        if error.is::<NotAllowed>() {
            return true;
        }
        cause = error.source();
    }
    false
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

/// The TCP connector of webhooks: an address literal is checked here (hyper's connector
/// does not resolve it), a name by the [`Resolver`] of a connector made for the URL's port.
#[derive(Clone, Debug)]
struct Guarded {
    allow: Arc<AllowList>,
}

impl Service<Uri> for Guarded {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = BoxFuture<TokioIo<TcpStream>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let allow = self.allow.clone();
        Box::pin(async move {
            let host = uri.host().unwrap_or_default();
            let host = host.trim_start_matches('[').trim_end_matches(']');
            let default_port = if uri.scheme_str() == Some("https") {
                443
            } else {
                80
            };
            let port = uri.port_u16().unwrap_or(default_port);
            if let Ok(ip) = host.parse::<IpAddr>()
                && !allow.permits(ip, port)
            {
                let host = host.to_string();
                return Err(NotAllowed { host, port }.into());
            }
            let mut http = HttpConnector::new_with_resolver(Resolver { allow, port });
            http.set_connect_timeout(Some(CONNECT_TIMEOUT));
            http.enforce_http(false);
            Ok(http.call(uri).await?)
        })
    }
}

/// Resolves a webhook's host name by the system's resolver and keeps the addresses the
/// allow list permits on `port`; fails with [`NotAllowed`] when none is left.
#[derive(Clone, Debug)]
struct Resolver {
    allow: Arc<AllowList>,
    port: u16,
}

impl Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = BoxFuture<Self::Response>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let (allow, port) = (self.allow.clone(), self.port);
        Box::pin(async move {
            let kept: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), port))
                .await?
                .filter(|addr| allow.permits(addr.ip(), port))
                .collect();
            if kept.is_empty() {
                let host = name.to_string();
                return Err(NotAllowed { host, port }.into());
            }
            Ok(kept.into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_a_few_words() {
        let words: Vec<String> = [
            Failure::NotAllowed,
            Failure::Unreachable,
            Failure::Timeout,
            Failure::Answered(302),
            Failure::Answered(418),
            Failure::Answered(503),
            Failure::NotSent,
        ]
        .iter()
        .map(Failure::to_string)
        .collect();
        assert_eq!(
            words,
            [
                "not-allowed",
                "unreachable",
                "timeout",
                "answered-3xx",
                "answered-4xx",
                "answered-5xx",
                "not-sent"
            ]
        );
        assert_eq!(
            Failure::Answered(404).refused(),
            Attempt::Refused {
                status: Some(404),
                error: "answered-4xx".into()
            }
        );
    }

    /// A name resolving to loopback only, with loopback not listed: no address is left.
    #[tokio::test]
    async fn the_resolver_drops_refused_addresses() {
        let listed = Arc::new(AllowList::parse("localhost, 127.0.0.1:9000").unwrap());
        let name: Name = "localhost".parse().unwrap();
        let mut resolver = Resolver {
            allow: listed.clone(),
            port: 9000,
        };
        let kept: Vec<SocketAddr> = resolver.call(name.clone()).await.unwrap().collect();
        assert_eq!(kept, [SocketAddr::from(([127, 0, 0, 1], 9000))]);
        let mut other_port = Resolver {
            allow: listed,
            port: 9001,
        };
        let error = other_port.call(name).await.unwrap_err();
        assert!(caused_by_not_allowed(&*error), "{error}");
    }

    /// A URL naming a refused address is refused before any connection.
    #[tokio::test]
    async fn address_literals_are_checked_before_connecting() {
        let allow = Arc::new(AllowList::parse("127.0.0.1:9000").unwrap());
        let mut connector = Guarded { allow };
        for uri in [
            "http://127.0.0.1:9001/",
            "http://[::1]:9000/",
            "https://10.0.0.1/",
        ] {
            let error = connector.call(uri.parse().unwrap()).await.unwrap_err();
            assert!(caused_by_not_allowed(&*error), "{uri}: {error}");
        }
    }
}
