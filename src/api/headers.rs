//! Response headers every answer carries, and CORS for the origins an operator allows.
//!
//! Every answer gets `X-Content-Type-Options: nosniff`. An answer whose route does not
//! choose its own caching or content security policy (the API's JSON, problem+json
//! errors, health checks, `/openapi.json`) gets `Cache-Control: no-store` and a policy
//! that allows nothing; the pages (dashboard, `/docs`) and their assets set their own.

use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use tower_http::CompressionLevel;
use tower_http::compression::CompressionLayer;
use tower_http::compression::predicate::{DefaultPredicate, Predicate, SizeAbove};
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The policy of answers that are not pages: nothing may load from them, nor frame them.
pub const API_CONTENT_SECURITY_POLICY: &str = "default-src 'none'; frame-ancestors 'none'";

/// Answers of at least this many bytes go gzip-compressed to a client that accepts it.
/// The suggest/observe loop's answers are smaller and go as they are; a timeline, a
/// predict over a heat map's grid or a page of observations shrink about fivefold.
pub const COMPRESS_FROM_BYTES: u64 = 4096;

/// Gzip (at its fastest level) for answers of [`COMPRESS_FROM_BYTES`] or more, to clients
/// whose `accept-encoding` allows it; never for the event stream (`text/event-stream`,
/// whose messages must not wait in a compressor) nor images.
pub fn compression() -> CompressionLayer<impl Predicate> {
    CompressionLayer::new()
        .quality(CompressionLevel::Fastest)
        .compress_when(DefaultPredicate::new().and(SizeAbove::new(COMPRESS_FROM_BYTES)))
}

/// Middleware: adds the headers above to every answer.
pub async fn add_defaults(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(API_CONTENT_SECURITY_POLICY));
    response
}

/// The browser origins allowed to call the API from their pages (`TVBO_CORS_ORIGINS`);
/// none by default, and then no CORS header is ever sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CorsOrigins(Vec<HeaderValue>);

impl CorsOrigins {
    /// Comma-separated exact origins, each `http://` or `https://`, a lowercase host and
    /// an optional port, nothing after (as a browser sends `Origin`); empty for none.
    pub fn parse(list: &str) -> Result<CorsOrigins, String> {
        let mut origins = Vec::new();
        for origin in list.split(',').map(str::trim).filter(|o| !o.is_empty()) {
            let host = origin
                .strip_prefix("https://")
                .or_else(|| origin.strip_prefix("http://"));
            let valid = host.is_some_and(|host| {
                let (name, port) = match host.rsplit_once(':') {
                    Some((name, port)) if !port.contains(']') => (name, Some(port)),
                    _ => (host, None),
                };
                let name_valid = match name.strip_prefix('[').and_then(|n| n.strip_suffix(']')) {
                    Some(ip) => ip.parse::<std::net::Ipv6Addr>().is_ok() && ip == ip.to_lowercase(),
                    None => {
                        !name.is_empty()
                            && name.chars().all(|c| {
                                c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.'
                            })
                    }
                };
                name_valid
                    && port.is_none_or(|p| {
                        p.bytes().all(|b| b.is_ascii_digit()) && p.parse::<u16>().is_ok()
                    })
            });
            if !valid {
                return Err(format!(
                    "must be comma-separated origins like https://app.example.com or \
                     http://localhost:3000 (scheme, lowercase host, optional port, no path), \
                     not {origin:?}"
                ));
            }
            origins.push(HeaderValue::from_str(origin).map_err(|e| e.to_string())?);
        }
        Ok(CorsOrigins(origins))
    }

    /// The CORS layer for these origins: browsers on them may send the API's methods with
    /// `Authorization`, `Content-Type` and `Idempotency-Key`, and read
    /// `Idempotent-Replayed`; None when no origin is allowed.
    pub fn layer(&self) -> Option<CorsLayer> {
        (!self.0.is_empty()).then(|| {
            CorsLayer::new()
                .allow_origin(AllowOrigin::list(self.0.clone()))
                .allow_methods([Method::GET, Method::POST, Method::DELETE])
                .allow_headers([
                    header::AUTHORIZATION,
                    header::CONTENT_TYPE,
                    HeaderName::from_static("idempotency-key"),
                ])
                .expose_headers([HeaderName::from_static("idempotent-replayed")])
                .max_age(std::time::Duration::from_secs(600))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_exact() {
        assert_eq!(CorsOrigins::parse(" ").unwrap(), CorsOrigins::default());
        assert!(CorsOrigins::default().layer().is_none());
        let origins = CorsOrigins::parse(
            "https://app.example.com, http://localhost:3000,http://[::1]:8080,http://[::1]",
        )
        .unwrap();
        assert_eq!(origins.0.len(), 4);
        assert!(origins.layer().is_some());
        for bad in [
            "*",
            "app.example.com",
            "https://app.example.com/",
            "https://app.example.com/path",
            "https://App.example.com",
            "https://user@app.example.com",
            "https://app.example.com:99999",
            "ftp://app.example.com",
            "https://",
            "https://a.com,null",
            "https://a.com:+80",
            "https://[::g]",
        ] {
            assert!(CorsOrigins::parse(bad).is_err(), "{bad}");
        }
    }
}
