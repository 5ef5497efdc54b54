//! The webhook API's bodies (docs/events.md, "Webhooks").

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::store::outbox::{DeliveryRow, WebhookRow};

/// `POST /v1/webhooks`.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// Where deliveries are POSTed: http or https, a port other than 0, its host in the
    /// server's allow list (`TVBO_WEBHOOK_ALLOW`), and the addresses it resolves to public
    /// unless the list names them.
    pub url: String,
    /// The event kinds to deliver, each at most once; absent or empty for every kind.
    #[serde(default)]
    pub events: Option<Vec<String>>,
    /// The key of each delivery's HMAC-SHA256 signature, 16 to 256 characters and no
    /// control characters; the server makes one if absent (answered once, by this create).
    #[serde(default)]
    pub secret: Option<String>,
}

/// A webhook.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Webhook {
    pub id: Uuid,
    pub url: String,
    /// The kinds it takes; empty for every kind.
    pub events: Vec<String>,
    pub created_at: DateTime<Utc>,
    /// `active`, or `paused`: its attempts kept failing (10 in a row, for an hour), so it
    /// takes no new deliveries and its pending ones wait until a delivered ping
    /// (`POST /v1/webhooks/{id}/ping`) resumes it.
    pub state: WebhookState,
    /// Attempts that failed in a row since the last delivered one.
    pub consecutive_failures: i64,
    /// When the first of those failed attempts was made.
    pub failing_since: Option<DateTime<Utc>>,
    /// When it was paused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused_at: Option<DateTime<Utc>>,
    /// The error of the attempt that paused it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused_reason: Option<String>,
    /// The signing secret: in the create's answer only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// Whether a webhook takes deliveries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WebhookState {
    Active,
    Paused,
}

impl From<WebhookRow> for Webhook {
    fn from(row: WebhookRow) -> Self {
        Webhook {
            id: row.id,
            url: row.url,
            events: row.kinds,
            created_at: row.created_at,
            state: if row.health.paused_at.is_some() {
                WebhookState::Paused
            } else {
                WebhookState::Active
            },
            consecutive_failures: row.health.consecutive_failures,
            failing_since: row.health.failing_since,
            paused_at: row.health.paused_at,
            paused_reason: row.health.paused_reason,
            secret: None,
        }
    }
}

/// `GET /v1/webhooks`.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct WebhookList {
    /// The tenant's webhooks, oldest first.
    pub webhooks: Vec<Webhook>,
}

/// What a test ping found, coarsely: never the receiver's own text.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct PingResult {
    /// The receiver answered 2xx.
    pub delivered: bool,
    /// Its 2xx status when delivered; null otherwise (`error` gives the class).
    pub status: Option<u16>,
    /// Why not delivered: `not-allowed` (nothing sent: the URL's host or every address it
    /// resolves to is refused by the allow list), `unreachable` (no HTTP answer),
    /// `timeout` (none within 10 s), `answered-3xx`, `answered-4xx`, `answered-5xx` (a
    /// status of that class; redirects are not followed) or `not-sent`.
    pub error: Option<String>,
    pub duration_ms: f64,
    /// The webhook was paused (its attempts kept failing) and this delivered ping resumed
    /// it: its pending deliveries go out again.
    pub resumed: bool,
}

/// A delivery of an event to a webhook.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct Delivery {
    /// The event's id (`Tvbo-Event-Id`); pass as `after` for the next page.
    pub event: i64,
    pub session: Uuid,
    /// The event's number within its session.
    pub seq: i64,
    pub kind: String,
    /// `pending` (not yet answered 2xx; retried), `delivered`, or `failed` (retries gave
    /// up after a day).
    pub state: String,
    pub attempts: i64,
    /// The receiver's status at the last attempt, if it answered.
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
    /// When a pending delivery is tried next.
    pub next_attempt_at: Option<DateTime<Utc>>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl From<DeliveryRow> for Delivery {
    fn from(row: DeliveryRow) -> Self {
        Delivery {
            event: row.event_id,
            session: row.session,
            seq: row.seq,
            kind: row.kind,
            state: row.state,
            attempts: row.attempts,
            last_status: row.last_status,
            last_error: row.last_error,
            next_attempt_at: row.next_attempt_at,
            delivered_at: row.delivered_at,
            created_at: row.created_at,
        }
    }
}

/// `GET /v1/webhooks/{id}/deliveries`: a page, by event id.
#[derive(Clone, Debug, Serialize, Deserialize, ToSchema)]
pub struct DeliveryList {
    pub deliveries: Vec<Delivery>,
    /// Pass as `after` for the next page; null on the last.
    pub next_after: Option<i64>,
}
