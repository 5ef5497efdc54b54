//! Caps on open event streams (docs/security.md, "Event streams"): a stream holds its
//! connection for as long as the client wants, so without a cap one key could hold every
//! connection of a replica. Each key, each tenant and the replica as a whole may hold a
//! bounded number; the replica's cap is below its connection cap, so that a share of the
//! connections stays for requests that are not streams.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::http::StatusCode;
use uuid::Uuid;

use crate::api::error::ApiError;
use crate::keys::Caller;

/// How many event streams may be open at once on one replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamLimits {
    /// Per API key; one more answers 429 `too-many-streams`.
    pub per_key: usize,
    /// Per tenant, all its keys together; one more answers 429 `too-many-streams`.
    pub per_tenant: usize,
    /// On the replica, every tenant together; one more answers 503 `busy`.
    pub total: usize,
}

impl StreamLimits {
    /// Far more than the pages of a dashboard and a client's `watch` open (one each).
    pub const DEFAULT_PER_KEY: usize = 32;
    /// Four keys' worth: a tenant's team, its dashboards and its services.
    pub const DEFAULT_PER_TENANT: usize = 128;
    /// Half of the server's default connections (`TVBO_MAX_CONNECTIONS`, 1024).
    pub const DEFAULT_TOTAL: usize = 512;

    /// The defaults for a replica of `max_connections` connections: half of them at most
    /// may be streams, so that the other half serves everything else.
    pub fn for_connections(max_connections: usize) -> StreamLimits {
        StreamLimits {
            per_key: Self::DEFAULT_PER_KEY,
            per_tenant: Self::DEFAULT_PER_TENANT,
            total: (max_connections / 2).max(1),
        }
    }
}

impl Default for StreamLimits {
    /// The defaults of a replica of the default connections.
    fn default() -> Self {
        StreamLimits {
            per_key: Self::DEFAULT_PER_KEY,
            per_tenant: Self::DEFAULT_PER_TENANT,
            total: Self::DEFAULT_TOTAL,
        }
    }
}

/// Seconds a refused client is asked to wait before it tries again.
const RETRY_AFTER_SECONDS: u64 = 5;

/// The streams open on this replica, by key and by tenant.
#[derive(Clone, Debug)]
pub struct StreamSlots {
    limits: StreamLimits,
    open: Arc<Mutex<OpenStreams>>,
}

#[derive(Debug, Default)]
struct OpenStreams {
    by_key: HashMap<Uuid, usize>,
    by_tenant: HashMap<String, usize>,
    total: usize,
}

/// One open stream: its slots are given back when it is dropped (the stream ends, or
/// its client goes away).
#[derive(Debug)]
pub struct StreamSlot {
    slots: StreamSlots,
    /// The key and tenant it counts against (none without keys).
    counted: Option<(Uuid, String)>,
}

impl StreamSlots {
    pub fn new(limits: StreamLimits) -> StreamSlots {
        StreamSlots {
            limits,
            open: Arc::default(),
        }
    }

    /// A slot for one more stream of `caller`: 429 `too-many-streams` naming the cap when
    /// its key or its tenant holds as many as it may, 503 `busy` when the replica does;
    /// both with Retry-After. Without keys (`TVBO_AUTH=off`) every client is the one
    /// default tenant, so only the replica's cap applies (as the rate limits need keys).
    pub fn take(&self, caller: &Caller) -> Result<StreamSlot, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let Some(key) = caller.key_id else {
            return self.take_unkeyed(open);
        };
        let key_count = open.by_key.get(&key).copied().unwrap_or(0);
        let tenant_count = open.by_tenant.get(&caller.tenant).copied().unwrap_or(0);
        let too_many = |what: &str, limit: usize, setting: &str| {
            ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                "too-many-streams",
                format!(
                    "{what} holds {limit} open event streams, the most allowed per replica \
                     ({setting}); close one, or retry later"
                ),
            )
            .retry_after(RETRY_AFTER_SECONDS)
        };
        if key_count >= self.limits.per_key {
            return Err(too_many(
                "this key",
                self.limits.per_key,
                "TVBO_MAX_STREAMS_PER_KEY",
            ));
        }
        if tenant_count >= self.limits.per_tenant {
            return Err(too_many(
                "this key's tenant",
                self.limits.per_tenant,
                "TVBO_MAX_STREAMS_PER_TENANT",
            ));
        }
        self.check_replica(&open)?;
        *open.by_key.entry(key).or_insert(0) += 1;
        *open.by_tenant.entry(caller.tenant.clone()).or_insert(0) += 1;
        open.total += 1;
        crate::telemetry::set_open_streams(open.total);
        Ok(StreamSlot {
            slots: self.clone(),
            counted: Some((key, caller.tenant.clone())),
        })
    }

    /// A slot of a caller without a key: the replica's cap only.
    fn take_unkeyed(&self, mut open: MutexGuard<'_, OpenStreams>) -> Result<StreamSlot, ApiError> {
        self.check_replica(&open)?;
        open.total += 1;
        crate::telemetry::set_open_streams(open.total);
        Ok(StreamSlot {
            slots: self.clone(),
            counted: None,
        })
    }

    /// 503 `busy` when the replica holds as many streams as it may.
    fn check_replica(&self, open: &OpenStreams) -> Result<(), ApiError> {
        if open.total < self.limits.total {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            format!(
                "the replica holds {} open event streams, the most it keeps beside its other \
                 requests (TVBO_MAX_STREAMS); retry later",
                self.limits.total
            ),
        )
        .retry_after(RETRY_AFTER_SECONDS))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((key, tenant)) = &self.counted {
            release(&mut open.by_key, key);
            release(&mut open.by_tenant, tenant);
        }
        open.total -= 1;
        crate::telemetry::set_open_streams(open.total);
    }
}

/// One fewer under `name`, forgotten at zero.
fn release<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, usize>, name: &K) {
    if let Some(count) = counts.get_mut(name) {
        *count -= 1;
        if *count == 0 {
            counts.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(tenant: &str, key: Uuid) -> Caller {
        Caller {
            tenant: tenant.into(),
            admin: false,
            key_id: Some(key),
            rate_limit: None,
        }
    }

    #[test]
    fn keys_tenants_and_the_replica_are_capped_and_slots_come_back() {
        let slots = StreamSlots::new(StreamLimits {
            per_key: 2,
            per_tenant: 3,
            total: 4,
        });
        let (a1, a2, b1) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        let first = slots.take(&caller("a", a1)).unwrap();
        let _second = slots.take(&caller("a", a1)).unwrap();
        let refused = slots.take(&caller("a", a1)).unwrap_err();
        assert_eq!(refused.status, StatusCode::TOO_MANY_REQUESTS);
        let _third = slots.take(&caller("a", a2)).unwrap();
        let refused = slots.take(&caller("a", a2)).unwrap_err();
        assert!(refused.detail.contains("TENANT"), "{}", refused.detail);
        let _other = slots.take(&caller("b", b1)).unwrap();
        let refused = slots.take(&caller("b", b1)).unwrap_err();
        assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
        drop(first);
        let _again = slots.take(&caller("b", b1)).unwrap();
        let open = slots.open.lock().unwrap();
        assert_eq!(open.total, 4);
        assert_eq!(open.by_key.get(&a1), Some(&1));
        assert_eq!(open.by_tenant.get("b"), Some(&2));
        drop(open);
        // Without keys, only the replica's cap.
        let unkeyed = Caller::unauthenticated();
        assert!(slots.take(&unkeyed).is_err());
        let wide = StreamSlots::new(StreamLimits {
            per_key: 1,
            per_tenant: 1,
            total: 3,
        });
        let held: Vec<StreamSlot> = (0..3).map(|_| wide.take(&unkeyed).unwrap()).collect();
        assert_eq!(
            wide.take(&unkeyed).unwrap_err().status,
            StatusCode::SERVICE_UNAVAILABLE
        );
        drop(held);
        assert_eq!(wide.open.lock().unwrap().total, 0);
    }
}
