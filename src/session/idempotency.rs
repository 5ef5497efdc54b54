//! Idempotency keys: a retried request with the same key and body gets the answer the
//! first one got, stored with the change it made. The service runs a keyed request once
//! (`SessionService::once`); the API only turns its [`Once`] into a response.

use uuid::Uuid;

use crate::store::IdempotencyRecord;

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
