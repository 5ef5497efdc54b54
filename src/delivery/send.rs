//! One HTTP attempt at a webhook: a signed POST, no redirect followed, short timeouts,
//! nothing of the answer read but its status.

use std::time::Duration;

use chrono::Utc;
use reqwest::{Client, Url, redirect};

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
    client: Client,
}

impl Sender {
    /// A client that follows no redirect, uses no proxy, and gives up after
    /// [`ATTEMPT_TIMEOUT`].
    pub fn new() -> Result<Sender, reqwest::Error> {
        // reqwest's rustls takes the process's crypto provider: ring, as sqlx's TLS does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::builder()
            .redirect(redirect::Policy::none())
            .no_proxy()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(ATTEMPT_TIMEOUT)
            .user_agent(concat!("tvbo-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Sender { client })
    }

    /// POSTs `body` to `url`, signed with `secret`, with the event's id and kind and the
    /// webhook's id in headers.
    pub async fn post(
        &self,
        url: Url,
        secret: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
    ) -> Attempt {
        if body.len() > MAX_BODY_BYTES {
            return Attempt::Refused {
                status: None,
                error: format!("the event's body is over {MAX_BODY_BYTES} bytes"),
            };
        }
        let mut request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(
                SIGNATURE_HEADER,
                signature(secret, Utc::now().timestamp(), &body),
            );
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        match request.body(body).send().await {
            Ok(response) if response.status().is_success() => Attempt::Delivered {
                status: response.status().as_u16(),
            },
            Ok(response) => {
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
            Err(e) => Attempt::Refused {
                status: None,
                error: describe(&e),
            },
        }
    }
}

/// A reqwest error with its causes, in one line.
fn describe(error: &reqwest::Error) -> String {
    let mut text = if error.is_timeout() {
        "timed out".to_string()
    } else if error.is_connect() {
        "cannot connect".to_string()
    } else {
        "request failed".to_string()
    };
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
