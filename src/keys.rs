//! API keys (docs/security.md): making them, storing only a slow hash of their secret,
//! and telling who presents one.
//!
//! A key reads `tvbo_<id>_<secret>`: `id` (32 hex digits) finds the stored row, `secret`
//! (64 hex digits, 256 random bits) is checked against the row's Argon2id hash. Argon2id
//! costs tens of milliseconds on purpose, so a replica remembers which presented keys it
//! has already checked (by their SHA-256, in memory only) and pays it once per key;
//! the row is still read on every request, so a revoked key stops working at once on
//! every replica.

use std::sync::Arc;

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use chrono::Utc;
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

/// Who is calling: the tenant whose sessions a request sees and creates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub tenant: String,
    /// Sees every tenant's sessions.
    pub admin: bool,
    /// The key presented; None when authentication is off.
    pub key_id: Option<Uuid>,
}

impl Caller {
    /// The caller of every request when authentication is off: an admin of the
    /// [`DEFAULT_TENANT`].
    pub fn unauthenticated() -> Caller {
        Caller {
            tenant: DEFAULT_TENANT.into(),
            admin: true,
            key_id: None,
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
    let secret = hex(&rand::random::<[u8; 32]>());
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

/// Tells who presents a key, against the store's keys. Cheap to clone.
#[derive(Clone)]
pub struct KeyVerifier {
    store: Arc<dyn Store>,
    /// SHA-256 of keys whose secret matched their row's hash → their id.
    verified: Arc<quick_cache::sync::Cache<[u8; 32], Uuid>>,
}

impl KeyVerifier {
    pub fn new(store: Arc<dyn Store>) -> Self {
        KeyVerifier {
            store,
            verified: Arc::new(quick_cache::sync::Cache::new(VERIFIED_CAPACITY)),
        }
    }

    /// The caller presenting `key`: `Invalid` unless it names a stored, unrevoked key
    /// whose secret matches. The first check of a key on this replica runs Argon2id on the
    /// blocking pool.
    pub async fn caller(&self, key: &str) -> Result<Caller, KeyError> {
        let (id, secret) = parse_key(key).ok_or(KeyError::Invalid)?;
        let row = self.store.get_api_key(id).await?.ok_or(KeyError::Invalid)?;
        if row.revoked_at.is_some() {
            return Err(KeyError::Invalid);
        }
        let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
        if self.verified.get(&digest) != Some(id) {
            let secret = secret.to_string();
            let hash = row.secret_hash.clone();
            let matches = tokio::task::spawn_blocking(move || {
                PasswordHash::new(&hash).is_ok_and(|parsed| {
                    Argon2::default()
                        .verify_password(secret.as_bytes(), &parsed)
                        .is_ok()
                })
            })
            .await
            .map_err(|e| KeyError::Hash(e.to_string()))?;
            if !matches {
                return Err(KeyError::Invalid);
            }
            self.verified.insert(digest, id);
        }
        Ok(Caller {
            tenant: row.tenant,
            admin: row.admin,
            key_id: Some(id),
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
