//! Webhooks (docs/events.md, "Webhooks"): a tenant's endpoints, the delivery of its
//! sessions' events to them, and the idle scan. Events are written with their deliveries
//! in the step's transaction (`store/commit.rs`); [`worker`] sends them, on every replica,
//! each delivery claimed by one.

pub mod allow;
mod send;
pub mod sign;
pub mod views;
pub mod worker;

use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;
use serde_json::json;
use uuid::Uuid;

use crate::domain::InvalidInput;
use crate::domain::events::EventKind;
use crate::keys::Caller;
use crate::session::error::ServiceError;
use crate::session::timeline::{check_page_limit, page};
use crate::store::Store;
use crate::store::outbox::WebhookRow;

pub use allow::AllowList;
use send::{Attempt, Failure, Sender};
use views::{CreateWebhook, DeliveryList, PingResult, Webhook, WebhookList};

/// Most webhooks one tenant may have.
pub const MAX_WEBHOOKS_PER_TENANT: i64 = 20;
/// Bounds on a secret's length, in characters.
const SECRET_CHARS: std::ops::RangeInclusive<usize> = 16..=256;

/// The names of the event kinds, comma-separated: what an error about a kind lists.
pub fn kind_names() -> String {
    let names: Vec<&str> = EventKind::ALL.iter().map(|kind| kind.as_str()).collect();
    names.join(", ")
}

/// The webhooks of the tenants, over the store.
#[derive(Clone)]
pub struct Webhooks {
    store: Arc<dyn Store>,
    allow: Arc<AllowList>,
    sender: Sender,
}

impl Webhooks {
    /// The webhooks over `store`, reaching only where `allow` permits.
    pub fn new(store: Arc<dyn Store>, allow: AllowList) -> Webhooks {
        let allow = Arc::new(allow);
        Webhooks {
            store,
            sender: Sender::new(allow.clone()),
            allow,
        }
    }

    /// Stores a webhook of the caller's tenant (422 naming the field at fault: `url` not
    /// allowed or with port 0, `events` longer than the kinds, `events[i]` unknown or
    /// repeated, `secret` of the wrong length or with a control character; 409
    /// `too-many-webhooks` past [`MAX_WEBHOOKS_PER_TENANT`]); its secret is answered here
    /// only.
    pub async fn create(
        &self,
        caller: &Caller,
        request: CreateWebhook,
    ) -> Result<Webhook, ServiceError> {
        let url = self.allow.check(&request.url)?;
        let kinds = request.events.unwrap_or_default();
        if kinds.len() > EventKind::ALL.len() {
            return Err(InvalidInput::new(
                "events",
                format!(
                    "has {} kinds; there are {} ({})",
                    kinds.len(),
                    EventKind::ALL.len(),
                    kind_names()
                ),
            )
            .into());
        }
        for (i, kind) in kinds.iter().enumerate() {
            let problem = if EventKind::named(kind).is_none() {
                format!("unknown event kind {kind:?}; kinds: {}", kind_names())
            } else if let Some(first) = kinds[..i].iter().position(|k| k == kind) {
                format!("duplicate kind {kind:?} (as events[{first}])")
            } else {
                continue;
            };
            return Err(InvalidInput::new(format!("events[{i}]"), problem).into());
        }
        let secret = match request.secret {
            Some(secret) => {
                let (min, max) = (*SECRET_CHARS.start(), *SECRET_CHARS.end());
                crate::domain::validate_text("secret", &secret, min, max)?;
                secret
            }
            None => new_secret(),
        };
        let row = WebhookRow {
            id: Uuid::new_v4(),
            tenant: caller.tenant.clone(),
            url: url.to_string(),
            kinds,
            secret: secret.clone(),
            created_at: Utc::now(),
            health: Default::default(),
        };
        if !self
            .store
            .insert_webhook(&row, MAX_WEBHOOKS_PER_TENANT)
            .await?
        {
            return Err(ServiceError::Limit(
                "too-many-webhooks",
                InvalidInput::new(
                    "url",
                    format!("the tenant has {MAX_WEBHOOKS_PER_TENANT} webhooks, the most allowed"),
                ),
            ));
        }
        Ok(Webhook {
            secret: Some(secret),
            ..row.into()
        })
    }

    /// The caller's webhooks (an admin's: its own tenant's too; webhooks belong to the
    /// tenant whose events they take).
    pub async fn list(&self, caller: &Caller) -> Result<WebhookList, ServiceError> {
        let rows = self.store.list_webhooks(&caller.tenant).await?;
        Ok(WebhookList {
            webhooks: rows.into_iter().map(Webhook::from).collect(),
        })
    }

    /// The webhook `id` if the caller sees its tenant (else not found).
    async fn find(&self, caller: &Caller, id: Uuid) -> Result<WebhookRow, ServiceError> {
        self.store
            .get_webhook(id)
            .await?
            .filter(|row| caller.sees(&row.tenant))
            .ok_or(ServiceError::NotFound("webhook"))
    }

    pub async fn get(&self, caller: &Caller, id: Uuid) -> Result<Webhook, ServiceError> {
        Ok(self.find(caller, id).await?.into())
    }

    /// Deletes the webhook and its pending deliveries.
    pub async fn delete(&self, caller: &Caller, id: Uuid) -> Result<(), ServiceError> {
        self.find(caller, id).await?;
        if self.store.delete_webhook(id).await? {
            Ok(())
        } else {
            Err(ServiceError::NotFound("webhook"))
        }
    }

    /// Sends a `ping` (event id 0, never a real event's) now and says how it went, coarsely:
    /// the 2xx status if delivered, else one of a few words (`not-allowed` when the URL or
    /// every address of its host is refused; docs/events.md), never the receiver's text. A
    /// delivered ping resumes a webhook its circuit breaker paused.
    pub async fn ping(&self, caller: &Caller, id: Uuid) -> Result<PingResult, ServiceError> {
        let row = self.find(caller, id).await?;
        let started = Instant::now();
        let attempt = match self.allow.check(&row.url) {
            Err(_) => Failure::NotAllowed.refused(),
            Ok(url) => {
                let body = json!({"id": 0, "kind": "ping", "webhook": id, "at": Utc::now()});
                let headers = delivery_headers(id, 0, "ping");
                let body = serde_json::to_vec(&body).expect("plain data serialises");
                self.sender.post(url, &row.secret, &headers, body).await
            }
        };
        let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
        Ok(match attempt {
            Attempt::Delivered { status } => PingResult {
                delivered: true,
                status: Some(status),
                error: None,
                duration_ms,
                // The receiver is back: a webhook the breaker paused takes deliveries again.
                resumed: row.health.paused_at.is_some() && self.store.resume_webhook(id).await?,
            },
            Attempt::Refused { error, .. } => PingResult {
                delivered: false,
                status: None,
                error: Some(error),
                duration_ms,
                resumed: false,
            },
        })
    }

    /// A page of the webhook's deliveries with event id > `after`.
    pub async fn deliveries(
        &self,
        caller: &Caller,
        id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<DeliveryList, ServiceError> {
        check_page_limit(limit)?;
        self.find(caller, id).await?;
        let rows = self.store.list_deliveries(id, after, limit + 1).await?;
        let (deliveries, next_after) = page(rows, limit, Into::into, |d: &views::Delivery| d.event);
        Ok(DeliveryList {
            deliveries,
            next_after,
        })
    }
}

/// The headers of a delivery besides the signature and the content type.
fn delivery_headers(webhook: Uuid, event: i64, kind: &str) -> [(&'static str, String); 3] {
    [
        ("Tvbo-Event-Id", event.to_string()),
        ("Tvbo-Event-Kind", kind.to_string()),
        ("Tvbo-Webhook-Id", webhook.to_string()),
    ]
}

/// A random secret: `whsec_` and 32 bytes in hex.
fn new_secret() -> String {
    format!("whsec_{}", hex::encode(rand::random::<[u8; 32]>()))
}
