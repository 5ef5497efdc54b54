//! Idempotency keys: a retried request with the same key and body gets the answer the
//! first one got, stored with the change it made. [`once`] runs a keyed request once;
//! the API reads the key from the request (`api/extract.rs`) and turns the [`Once`] into
//! a response, and the store keeps the answers with the changes (`IdempotencyRecord`).

use std::future::Future;

use uuid::Uuid;

use super::error::ServiceError;
use crate::store::{IdempotencyRecord, Store};

/// An idempotency key and the fingerprint of the request that carried it.
#[derive(Clone, Debug)]
pub struct IdempotencyKey {
    pub scope: String,
    pub key: String,
    pub request_hash: String,
}

impl IdempotencyKey {
    /// The record of the answer `body` (with `status`) to this key's request.
    pub(super) fn record<T: serde::Serialize>(
        &self,
        session_id: Uuid,
        status: u16,
        body: &T,
    ) -> IdempotencyRecord {
        IdempotencyRecord {
            scope: self.scope.clone(),
            session_id: Some(session_id),
            key: self.key.clone(),
            request_hash: self.request_hash.clone(),
            status,
            body: serde_json::to_string(body).expect("response bodies serialise"),
        }
    }
}

/// What a POST under an idempotency key comes to.
#[derive(Debug)]
pub enum Once<T> {
    /// The action ran now and committed: its answer (201).
    Acted(T),
    /// An earlier request with the same key and body acted: its stored answer.
    Replayed(StoredAnswer),
}

/// The answer stored with an idempotency key: status and JSON body, as first sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAnswer {
    pub status: u16,
    pub body: String,
}

/// Runs a keyed request once: the stored answer of an earlier request with the same key,
/// or `action` (which stores its answer in the same transaction as its effect). A key
/// used before with another body is refused.
///
/// When `action` fails and the key now has a stored answer, a concurrent request with
/// the same key (on this replica or another) acted first, and its answer is replayed: a
/// retry that raced its original gets the original's answer, not the error of acting
/// twice (such as a 409 for observing a suggestion already observed).
pub async fn once<T, F>(
    store: &dyn Store,
    key: Option<IdempotencyKey>,
    action: impl FnOnce(Option<IdempotencyKey>) -> F,
) -> Result<Once<T>, ServiceError>
where
    F: Future<Output = Result<T, ServiceError>>,
{
    if let Some(key) = &key
        && let Some(answer) = stored_answer(store, key).await?
    {
        return Ok(Once::Replayed(answer));
    }
    let error = match action(key.clone()).await {
        Ok(body) => return Ok(Once::Acted(body)),
        Err(error) => error,
    };
    if let Some(key) = &key
        && let Some(answer) = stored_answer(store, key).await?
    {
        return Ok(Once::Replayed(answer));
    }
    Err(match error {
        ServiceError::IdempotencyRace if key.is_some() => {
            ServiceError::Internal("idempotency record vanished".into())
        }
        other => other,
    })
}

/// The answer stored with `key`, if a request with it acted; refuses a key used with
/// another body.
async fn stored_answer(
    store: &dyn Store,
    key: &IdempotencyKey,
) -> Result<Option<StoredAnswer>, ServiceError> {
    let Some(record) = store.get_idempotency(&key.scope, &key.key).await? else {
        return Ok(None);
    };
    if record.request_hash != key.request_hash {
        return Err(ServiceError::IdempotencyKeyReused);
    }
    Ok(Some(StoredAnswer {
        status: record.status,
        body: record.body,
    }))
}
