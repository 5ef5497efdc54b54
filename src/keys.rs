//! API keys (docs/security.md): making them, storing only a slow hash of their secret,
//! and telling who presents one.
//!
//! A key reads `tvbo_<id>_<secret>`: `id` (32 hex digits) finds the stored row, `secret`
//! (64 hex digits, 256 random bits) is checked against the row's Argon2id hash. Argon2id
//! costs tens of milliseconds on purpose, so a replica remembers which presented keys it
//! has already checked (by their SHA-256, in memory only) and pays it once per key.
//! It keeps the key's row with it for [`KEY_ROW_TTL`] and reads it again after that, so
//! that a request costs no database read while a revoked key stops working within
//! [`KEY_ROW_TTL`] on every replica.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use chrono::Utc;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};
use sha2::{Digest, Sha256};
use uuid::Uuid;

use crate::domain::records::DEFAULT_TENANT;
use crate::store::{ApiKeyRow, Store, StoreError};

/// Prefix of every key, so that a leaked one is recognisable (secret scanners, logs).
pub const KEY_PREFIX: &str = "tvbo_";
/// Most characters of a key's name and of a tenant.
pub const MAX_NAME_CHARS: usize = 100;
/// How many checked keys a replica remembers.
const VERIFIED_CAPACITY: usize = 10_000;
/// How long a replica uses a checked key's row before it reads it again: the longest a
/// revoked key (or a changed rate or tenant) goes on working on a replica. One read per
/// key and second at most, where every request read it before.
pub const KEY_ROW_TTL: Duration = Duration::from_secs(1);

/// A checked key as a replica remembers it: its id, its row and when the row was read.
#[derive(Clone)]
struct Verified {
    id: Uuid,
    row: ApiKeyRow,
    read_at: std::time::Instant,
}

/// Who is calling: the tenant whose sessions a request sees and creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub tenant: String,
    /// Sees every tenant's sessions.
    pub admin: bool,
    /// The key presented; None when authentication is off.
    pub key_id: Option<Uuid>,
    /// The key's own request rate (per second); None: the server's.
    pub rate_limit: Option<NonZeroU32>,
}

impl Caller {
    /// The caller of every request when authentication is off: an admin of the
    /// [`DEFAULT_TENANT`].
    pub fn unauthenticated() -> Caller {
        Caller {
            tenant: DEFAULT_TENANT.into(),
            admin: true,
            key_id: None,
            rate_limit: None,
        }
    }

    /// The caller presenting the key of `row`.
    fn of(row: ApiKeyRow) -> Caller {
        Caller {
            tenant: row.tenant,
            admin: row.admin,
            key_id: Some(row.id),
            rate_limit: row.rate_limit,
        }
    }

    /// Whether the caller may see a session of `tenant`.
    pub fn sees(&self, tenant: &str) -> bool {
        self.admin || self.tenant == tenant
    }

    /// The tenant a listing is restricted to: None for an admin (every tenant).
    pub fn listing_tenant(&self) -> Option<&str> {
        (!self.admin).then_some(self.tenant.as_str())
    }
}

/// Why a key was refused or could not be made.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("no API key: send `Authorization: Bearer <key>` (make one with `tvbo keys create`)")]
    Missing,
    /// Unknown, revoked, mistyped: the answer does not tell which.
    #[error("the API key is not valid (unknown, revoked or mistyped)")]
    Invalid,
    #[error("{field}: {message}")]
    BadName {
        field: &'static str,
        message: &'static str,
    },
    /// Too many uncached checks of this key id lately ([`ATTEMPT_BURST`],
    /// [`ATTEMPT_REFILL`]): said of known and unknown ids alike.
    #[error(
        "too many checks of this key id's secret; retry after {} s",
        retry_seconds(*retry_after)
    )]
    Throttled { retry_after: Duration },
    /// Every hashing thread is busy and the queue is full.
    #[error("the server is checking as many keys as it can; retry in a second")]
    Busy,
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("hashing the key: {0}")]
    Hash(String),
}

/// A key just made: its row (to store) and the key itself (shown once, never stored).
pub struct NewKey {
    pub row: ApiKeyRow,
    pub key: String,
}

/// Makes a key named `name` for `tenant` (the name when None); Argon2id hashes its secret
/// (tens of milliseconds: run it off an async runtime).
pub fn new_key(name: &str, tenant: Option<&str>, admin: bool) -> Result<NewKey, KeyError> {
    check_name("name", name, false)?;
    let tenant = tenant.unwrap_or(name);
    check_name("tenant", tenant, true)?;
    let id = Uuid::new_v4();
    let secret = hex::encode(rand::random::<[u8; 32]>());
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>())
        .map_err(|e| KeyError::Hash(e.to_string()))?;
    let secret_hash = Argon2::default()
        .hash_password(secret.as_bytes(), &salt)
        .map_err(|e| KeyError::Hash(e.to_string()))?
        .to_string();
    Ok(NewKey {
        key: format!("{KEY_PREFIX}{}_{secret}", id.simple()),
        row: ApiKeyRow {
            id,
            name: name.into(),
            tenant: tenant.into(),
            admin,
            secret_hash,
            created_at: Utc::now(),
            revoked_at: None,
            rate_limit: None,
        },
    })
}

/// Names and tenants: 1 to [`MAX_NAME_CHARS`] characters, no control characters; a
/// tenant only letters, digits, `.`, `_` and `-` (it appears in logs and the dashboard).
fn check_name(field: &'static str, value: &str, strict: bool) -> Result<(), KeyError> {
    let count = value.chars().count();
    let message = if count == 0 || count > MAX_NAME_CHARS {
        "must have 1 to 100 characters"
    } else if value.chars().any(char::is_control) {
        "must not contain control characters"
    } else if strict
        && !value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        "may contain only ASCII letters, digits, '.', '_' and '-'"
    } else {
        return Ok(());
    };
    Err(KeyError::BadName { field, message })
}

/// Whole seconds to wait before retrying, rounded up, at least 1 (for `Retry-After`).
pub fn retry_seconds(wait: Duration) -> u64 {
    (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1)
}

/// The id of a key given as its id (what `tvbo keys list` shows) or as the whole key.
pub fn key_id(id_or_key: &str) -> Option<Uuid> {
    match parse_key(id_or_key) {
        Some((id, _)) => Some(id),
        None => Uuid::try_parse(id_or_key).ok(),
    }
}

/// The id and secret of a presented key; None if it is not of the form.
fn parse_key(key: &str) -> Option<(Uuid, &str)> {
    let (id, secret) = key.strip_prefix(KEY_PREFIX)?.split_once('_')?;
    let valid_secret = secret.len() == 64 && secret.bytes().all(|b| b.is_ascii_hexdigit());
    (id.len() == 32 && valid_secret)
        .then(|| Uuid::try_parse(id).ok())
        .flatten()
        .map(|id| (id, secret))
}

/// How many uncached checks (Argon2id runs) of one key id start at once; beyond them
/// [`ATTEMPT_REFILL`] more each second.
pub const ATTEMPT_BURST: u32 = 10;
/// Uncached checks of one key id per second, on average, once its burst is spent.
pub const ATTEMPT_REFILL: u32 = 1;
/// How many checks wait for a hashing thread, per thread, before more are answered
/// [`KeyError::Busy`].
pub const HASH_QUEUE_PER_THREAD: usize = 16;
/// The attempt limiter forgets idle key ids every this many uncached checks.
const ATTEMPT_SWEEP_EVERY: u64 = 4096;

/// Threads of a verifier's hashing pool: half the cores, 1 to 4. Each Argon2id check
/// holds 19 MiB while it runs, so this also bounds the memory the checks take.
pub fn hash_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |cores| cores.get() / 2)
        .clamp(1, 4)
}

/// An Argon2id hash, made once per process with the parameters of every key's, that
/// unknown and revoked keys are checked against: they take the time a wrong secret does.
fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| {
        let salt = SaltString::encode_b64(&[0u8; 16]).expect("a 16-byte salt encodes");
        Argon2::default()
            .hash_password(b"no key has this secret", &salt)
            .expect("hashing with the default parameters succeeds")
            .to_string()
    })
}

/// One check for the hashing pool: a secret, the hash to check it against (None: the
/// dummy hash, and the answer is no), where to send the answer.
struct HashJob {
    secret: String,
    hash: Option<String>,
    answer: tokio::sync::oneshot::Sender<bool>,
}

/// Argon2id checks, on threads of their own (never the async runtime's, nor tokio's
/// blocking pool, which model work uses): [`hash_threads`] threads take checks from a
/// queue of [`HASH_QUEUE_PER_THREAD`] per thread; a check that finds the queue full is
/// refused at once. The threads end when the pool is dropped.
struct HashPool {
    jobs: std::sync::mpsc::SyncSender<HashJob>,
    runs: Arc<AtomicU64>,
}

impl HashPool {
    /// # Panics
    ///
    /// If a thread cannot be started (as [`std::thread::spawn`]).
    fn new(threads: usize) -> HashPool {
        let (jobs, queue) =
            std::sync::mpsc::sync_channel::<HashJob>(threads * HASH_QUEUE_PER_THREAD);
        let queue = Arc::new(Mutex::new(queue));
        let runs = Arc::new(AtomicU64::new(0));
        for i in 0..threads {
            let queue = queue.clone();
            let runs = runs.clone();
            std::thread::Builder::new()
                .name(format!("tvbo-key-check-{i}"))
                .spawn(move || {
                    let dummy = dummy_hash();
                    loop {
                        // The lock is held while waiting, so one idle thread waits and
                        // the others wait for the lock: each job goes to one thread.
                        let job = match queue.lock() {
                            Ok(queue) => queue.recv(),
                            Err(_) => return,
                        };
                        let Ok(job) = job else { return };
                        let hash = job.hash.as_deref().unwrap_or(dummy);
                        let matches = PasswordHash::new(hash).is_ok_and(|parsed| {
                            Argon2::default()
                                .verify_password(job.secret.as_bytes(), &parsed)
                                .is_ok()
                        });
                        runs.fetch_add(1, Ordering::Relaxed);
                        let _ = job.answer.send(matches && job.hash.is_some());
                    }
                })
                .expect("a key-check thread starts");
        }
        HashPool { jobs, runs }
    }

    /// Whether `secret` matches `hash`; with no hash, checks against the dummy hash (the
    /// same work) and answers no. `Busy` when the queue is full.
    async fn check(&self, secret: &str, hash: Option<String>) -> Result<bool, KeyError> {
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job = HashJob {
            secret: secret.to_string(),
            hash,
            answer,
        };
        self.jobs.try_send(job).map_err(|e| match e {
            std::sync::mpsc::TrySendError::Full(_) => KeyError::Busy,
            std::sync::mpsc::TrySendError::Disconnected(_) => {
                KeyError::Hash("the hashing threads ended".into())
            }
        })?;
        answered
            .await
            .map_err(|_| KeyError::Hash("a hashing thread ended".into()))
    }
}

/// Tells who presents a key, against the store's keys. Cheap to clone.
///
/// A key already checked on this replica (its SHA-256 remembered) costs one read of its
/// row. Any other costs an Argon2id check, on the verifier's own threads
/// ([`hash_threads`], a bounded queue: [`KeyError::Busy`] beyond it), and is counted per
/// key id: [`ATTEMPT_BURST`] at once, then [`ATTEMPT_REFILL`] per second
/// ([`KeyError::Throttled`] beyond). Unknown and revoked keys are checked against a dummy
/// hash, so that the three ways of being invalid take the same time. Requests presenting
/// the same key at once share one check.
#[derive(Clone)]
pub struct KeyVerifier {
    store: Arc<dyn Store>,
    /// SHA-256 of keys whose secret matched their row's hash → their id.
    verified: Arc<quick_cache::sync::Cache<[u8; 32], Verified>>,
    /// Uncached checks per key id.
    attempts: Arc<DefaultKeyedRateLimiter<Uuid>>,
    checks: Arc<AtomicU64>,
    pool: Arc<HashPool>,
    /// Uncached checks under way, by the presented key's SHA-256.
    in_flight: Arc<Mutex<HashMap<[u8; 32], Arc<CheckCell>>>>,
}

/// The outcome of one uncached check, shared by the requests that wait for it.
type CheckCell = tokio::sync::OnceCell<Option<Verified>>;

/// A request's share of an uncached check; the last one out removes it from the map.
struct InFlight {
    cell: Arc<CheckCell>,
    map: Arc<Mutex<HashMap<[u8; 32], Arc<CheckCell>>>>,
    digest: [u8; 32],
}

impl InFlight {
    fn join(map: &Arc<Mutex<HashMap<[u8; 32], Arc<CheckCell>>>>, digest: [u8; 32]) -> Self {
        let mut flights = map.lock().unwrap_or_else(|e| e.into_inner());
        let cell = flights.entry(digest).or_default().clone();
        InFlight {
            cell,
            map: map.clone(),
            digest,
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut flights = self.map.lock().unwrap_or_else(|e| e.into_inner());
        // Ours and the map's only: no one else waits on it.
        if flights
            .get(&self.digest)
            .is_some_and(|cell| Arc::ptr_eq(cell, &self.cell) && Arc::strong_count(cell) == 2)
        {
            flights.remove(&self.digest);
        }
    }
}

impl KeyVerifier {
    /// A verifier with `threads` hashing threads, at least 1 ([`hash_threads`] for a
    /// server; started here, they end when the last clone is dropped).
    ///
    /// # Panics
    ///
    /// If a thread cannot be started (as [`std::thread::spawn`]).
    pub fn with_threads(store: Arc<dyn Store>, threads: usize) -> Self {
        let quota = Quota::per_second(NonZeroU32::new(ATTEMPT_REFILL).expect("non-zero"))
            .allow_burst(NonZeroU32::new(ATTEMPT_BURST).expect("non-zero"));
        KeyVerifier {
            store,
            verified: Arc::new(quick_cache::sync::Cache::new(VERIFIED_CAPACITY)),
            attempts: Arc::new(DefaultKeyedRateLimiter::keyed(quota)),
            checks: Arc::new(AtomicU64::new(0)),
            pool: Arc::new(HashPool::new(threads.max(1))),
            in_flight: Arc::default(),
        }
    }

    /// How many Argon2id checks this verifier has run (dummy ones included).
    pub fn hash_runs(&self) -> u64 {
        self.pool.runs.load(Ordering::Relaxed)
    }

    /// The caller presenting `key`: `Invalid` unless it names a stored, unrevoked key
    /// whose secret matches; `Throttled` when its id's uncached checks are spent, `Busy`
    /// when the hashing queue is full (neither says anything about the key).
    pub async fn caller(&self, key: &str) -> Result<Caller, KeyError> {
        let (id, secret) = parse_key(key).ok_or(KeyError::Invalid)?;
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        if let Some(known) = self.verified.get(&digest).filter(|known| known.id == id) {
            // Checked before: neither counted nor hashed, whatever others send with its id;
            // its row read again once it is older than KEY_ROW_TTL.
            if known.read_at.elapsed() < KEY_ROW_TTL {
                return Ok(Caller::of(known.row));
            }
            let read_at = std::time::Instant::now();
            let Some(row) = self.live_row(id).await? else {
                self.verified.remove(&digest);
                return Err(KeyError::Invalid);
            };
            let fresh = Verified {
                id,
                row: row.clone(),
                read_at,
            };
            self.verified.insert(digest, fresh);
            return Ok(Caller::of(row));
        }
        // Requests presenting the same key at once (a client's threads starting) share one
        // check: one attempt, one Argon2id run.
        let flight = InFlight::join(&self.in_flight, digest);
        let checked = flight
            .cell
            .get_or_try_init(|| self.check(id, secret))
            .await?;
        let known = checked.clone().ok_or(KeyError::Invalid)?;
        let caller = Caller::of(known.row.clone());
        self.verified.insert(digest, known);
        Ok(caller)
    }

    /// The uncached check of a key: its row, and when it was read, if `secret` matches an
    /// unrevoked one.
    async fn check(&self, id: Uuid, secret: &str) -> Result<Option<Verified>, KeyError> {
        self.take_attempt(id)?;
        let read_at = std::time::Instant::now();
        let live = self.live_row(id).await?;
        let hash = live.as_ref().map(|row| row.secret_hash.clone());
        let matches = self.pool.check(secret, hash).await?;
        Ok(live
            .filter(|_| matches)
            .map(|row| Verified { id, row, read_at }))
    }

    /// Whether key `id` is stored and not revoked, read now (an open event stream asks
    /// every few seconds, so that it ends soon after its key is revoked).
    pub async fn is_live(&self, id: Uuid) -> Result<bool, KeyError> {
        Ok(self.live_row(id).await?.is_some())
    }

    /// The row of key `id` if it is stored and not revoked.
    async fn live_row(&self, id: Uuid) -> Result<Option<ApiKeyRow>, StoreError> {
        Ok(self
            .store
            .get_api_key(id)
            .await?
            .filter(|row| row.revoked_at.is_none()))
    }

    /// Takes one uncached check from `id`'s allowance.
    fn take_attempt(&self, id: Uuid) -> Result<(), KeyError> {
        if self.checks.fetch_add(1, Ordering::Relaxed) % ATTEMPT_SWEEP_EVERY
            == ATTEMPT_SWEEP_EVERY - 1
        {
            self.attempts.retain_recent();
        }
        self.attempts
            .check_key(&id)
            .map_err(|not_until| KeyError::Throttled {
                retry_after: not_until.wait_time_from(DefaultClock::default().now()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_key_parses_and_its_hash_matches_only_its_secret() {
        let made = new_key("ci", None, false).unwrap();
        assert!(made.key.starts_with("tvbo_"));
        let (id, secret) = parse_key(&made.key).unwrap();
        assert_eq!(id, made.row.id);
        assert_eq!(made.row.tenant, "ci");
        assert!(!made.row.secret_hash.contains(secret));
        let parsed = PasswordHash::new(&made.row.secret_hash).unwrap();
        assert!(
            Argon2::default()
                .verify_password(secret.as_bytes(), &parsed)
                .is_ok()
        );
        let other = "0".repeat(64);
        assert!(
            Argon2::default()
                .verify_password(other.as_bytes(), &parsed)
                .is_err()
        );
    }

    #[test]
    fn malformed_keys_and_names_are_refused() {
        for key in [
            "",
            "tvbo_",
            "tvbo_abc_def",
            "Bearer tvbo_x",
            &"tvbo_".repeat(30),
        ] {
            assert!(parse_key(key).is_none(), "{key}");
        }
        assert!(new_key("", None, false).is_err());
        assert!(new_key("ops", Some("a b"), false).is_err());
        assert!(new_key("line\nbreak", Some("ops"), false).is_err());
        assert!(new_key("Ops team", Some("ops-team"), true).is_ok());
    }
}
