//! Who may do what (docs/security.md): API keys on `/v1`, each request's rate per key,
//! and the tenant check of every session a request names.
//!
//! Everything under `/v1` needs `Authorization: Bearer <key>` (unless authentication is
//! off); the dashboard's pages, the API docs, the OpenAPI document, the health checks and
//! the metrics hold no session data and need none. A session of another tenant is
//! answered 404, exactly as one that does not exist.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use uuid::Uuid;

use crate::api::error::ApiError;
use crate::keys::{Caller, KeyError, KeyVerifier, retry_seconds};
use crate::store::Store;

/// How tvbo authenticates and throttles callers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AccessSettings {
    /// Whether `/v1` needs an API key. Off, every caller is an admin of the default tenant.
    pub auth: bool,
    /// Requests per second each key may make on `/v1`, on average, unless it has a rate
    /// of its own (`tvbo keys create --rate`); None: no limit but the keys' own. With
    /// authentication off there are no keys and no limit.
    pub rate_per_second: Option<NonZeroU32>,
    /// How many requests beyond the average a key may make at once (a key with a rate of
    /// its own: twice its rate).
    pub rate_burst: NonZeroU32,
    /// Most sessions one tenant may own.
    pub max_sessions_per_tenant: i64,
}

impl AccessSettings {
    /// Default average request rate per key: abuse protection, not a speed cap. One
    /// replica serves some 2,400–3,200 observations per second in all (docs/performance.md),
    /// so a client the server can keep up with never meets it, however busy; a runaway
    /// loop of cheap requests (listings, reads, refusals: tens of thousands per second)
    /// is held to it.
    pub const DEFAULT_RATE_PER_SECOND: u32 = 5_000;
    /// Default burst per key: two seconds' worth of the default rate.
    pub const DEFAULT_RATE_BURST: u32 = 10_000;

    /// No key needed (and so no rate limit, which counts by key): for tests and
    /// embedding behind another gate.
    pub fn open() -> Self {
        AccessSettings {
            auth: false,
            ..AccessSettings::default()
        }
    }
}

impl Default for AccessSettings {
    /// Keys required, 5,000 requests per second per key with bursts of 10,000, and
    /// [`DEFAULT_MAX_SESSIONS_PER_TENANT`](crate::session::service::DEFAULT_MAX_SESSIONS_PER_TENANT).
    fn default() -> Self {
        AccessSettings {
            auth: true,
            rate_per_second: NonZeroU32::new(Self::DEFAULT_RATE_PER_SECOND),
            rate_burst: NonZeroU32::new(Self::DEFAULT_RATE_BURST).expect("non-zero"),
            max_sessions_per_tenant: crate::session::service::DEFAULT_MAX_SESSIONS_PER_TENANT,
        }
    }
}

/// How many sessions' tenants a replica remembers (they never change).
const TENANT_CACHE_CAPACITY: usize = 65_536;
/// The rate limiter forgets idle callers every this many requests.
const RATE_SWEEP_EVERY: u64 = 4096;

/// The state of access control, shared by the requests of one router.
pub struct Access {
    auth: bool,
    keys: KeyVerifier,
    store: Arc<dyn Store>,
    /// The rate of keys without one of their own.
    rate: Option<DefaultKeyedRateLimiter<Uuid>>,
    /// One limiter per distinct rate of keys with their own (governor's keyed limiters
    /// share one quota); as many as operators chose distinct rates.
    own_rates: Mutex<HashMap<NonZeroU32, Arc<DefaultKeyedRateLimiter<Uuid>>>>,
    checks: AtomicU64,
    tenants: quick_cache::sync::Cache<Uuid, String>,
}

impl Access {
    /// Access control over the keys of `store`; starts the key verifier's hashing threads
    /// ([`KeyVerifier::with_threads`]) when keys are required.
    pub fn new(store: Arc<dyn Store>, settings: &AccessSettings) -> Self {
        Access {
            auth: settings.auth,
            keys: KeyVerifier::with_threads(
                store.clone(),
                if settings.auth {
                    crate::keys::hash_threads()
                } else {
                    1
                },
            ),
            store,
            rate: settings.rate_per_second.map(|rate| {
                DefaultKeyedRateLimiter::keyed(
                    Quota::per_second(rate).allow_burst(settings.rate_burst),
                )
            }),
            own_rates: Mutex::new(HashMap::new()),
            checks: AtomicU64::new(0),
            tenants: quick_cache::sync::Cache::new(TENANT_CACHE_CAPACITY),
        }
    }

    /// The limiter of keys whose own rate is `rate`: `rate` per second, in bursts of
    /// twice that.
    fn own_rate(&self, rate: NonZeroU32) -> Arc<DefaultKeyedRateLimiter<Uuid>> {
        let mut own = self.own_rates.lock().unwrap_or_else(|e| e.into_inner());
        own.entry(rate)
            .or_insert_with(|| {
                let burst = rate.saturating_mul(NonZeroU32::new(2).expect("non-zero"));
                Arc::new(DefaultKeyedRateLimiter::keyed(
                    Quota::per_second(rate).allow_burst(burst),
                ))
            })
            .clone()
    }

    /// Whether key `id` is still stored and not revoked ([`KeyVerifier::is_live`]); a
    /// key that cannot be read counts as gone.
    pub async fn key_is_live(&self, id: Uuid) -> bool {
        self.keys.is_live(id).await.unwrap_or(false)
    }

    /// The caller of a request with these headers.
    async fn caller(&self, headers: &HeaderMap) -> Result<Caller, ApiError> {
        if !self.auth {
            return Ok(Caller::unauthenticated());
        }
        let key = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| {
                let (scheme, key) = value.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
            })
            .ok_or_else(|| unauthorized(KeyError::Missing))?;
        self.keys.caller(key).await.map_err(|e| match e {
            KeyError::Store(e) => ApiError::from(e),
            KeyError::Throttled { retry_after } => {
                let detail = e.to_string();
                ApiError::new(StatusCode::TOO_MANY_REQUESTS, "rate-limited", detail)
                    .retry_after(retry_seconds(retry_after))
            }
            KeyError::Busy => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", e.to_string()).retry_after(1)
            }
            other => unauthorized(other),
        })
    }

    /// Takes one request from the rate of `caller`'s key (its own, else the server's);
    /// the wait before the next one may come when there is none left.
    fn take(&self, key: Uuid, own_rate: Option<NonZeroU32>) -> Result<(), std::time::Duration> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % RATE_SWEEP_EVERY == RATE_SWEEP_EVERY - 1 {
            if let Some(rate) = &self.rate {
                rate.retain_recent();
            }
            let own: Vec<_> = {
                let own = self.own_rates.lock().unwrap_or_else(|e| e.into_inner());
                own.values().cloned().collect()
            };
            for rate in own {
                rate.retain_recent();
            }
        }
        let own;
        let rate = match own_rate {
            Some(rate) => {
                own = self.own_rate(rate);
                &*own
            }
            None => match &self.rate {
                Some(rate) => rate,
                None => return Ok(()),
            },
        };
        rate.check_key(&key)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// Whether `caller` may see session `id`: a session of another tenant, like one that
    /// does not exist, is not found.
    pub async fn check_session(&self, caller: &Caller, id: Uuid) -> Result<(), ApiError> {
        if caller.admin {
            return Ok(());
        }
        let tenant = match self.tenants.get(&id) {
            Some(tenant) => tenant,
            None => {
                let tenant = self
                    .store
                    .session_tenant(id)
                    .await
                    .map_err(ApiError::from)?
                    .ok_or_else(|| ApiError::not_found("session"))?;
                self.tenants.insert(id, tenant.clone());
                tenant
            }
        };
        if caller.sees(&tenant) {
            Ok(())
        } else {
            Err(ApiError::not_found("session"))
        }
    }
}

fn unauthorized(e: KeyError) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", e.to_string())
}

/// Whether a path is the API's (`/v1` and below), which needs a key.
fn is_api(path: &str) -> bool {
    path == "/v1" || path.starts_with("/v1/")
}

/// Middleware: on `/v1`, authenticates the caller (401 problem with `WWW-Authenticate`),
/// takes one request from its rate (429 problem with `Retry-After`), and hands the
/// [`Caller`] to the handlers as a request extension.
pub async fn authenticate(
    State(access): State<Arc<Access>>,
    mut request: Request,
    next: Next,
) -> Response {
    if !is_api(request.uri().path()) {
        return next.run(request).await;
    }
    let caller = match access.caller(request.headers()).await {
        Ok(caller) => caller,
        Err(e) => {
            let mut response = e.into_response();
            if response.status() == StatusCode::UNAUTHORIZED {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    HeaderValue::from_static("Bearer realm=\"tvbo\""),
                );
            }
            return response;
        }
    };
    // With authentication off there is no key to count by (and behind a load balancer
    // every client has its address): no rate limit; the proxy's job then.
    if let Some(Err(wait)) = caller.key_id.map(|id| access.take(id, caller.rate_limit)) {
        let seconds = retry_seconds(wait);
        let rate = if caller.rate_limit.is_some() {
            "its own rate (`tvbo keys create --rate`)"
        } else {
            "the server's rate (TVBO_RATE_LIMIT)"
        };
        return ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            format!("this key made more requests than {rate} allows; retry after {seconds} s"),
        )
        .retry_after(seconds)
        .into_response();
    }
    request.extensions_mut().insert(caller);
    next.run(request).await
}
