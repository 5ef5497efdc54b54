//! The session's events (docs/events.md): read back from the outbox the steps wrote them to.

use uuid::Uuid;

use crate::session::error::ServiceError;
use crate::session::service::SessionService;
use crate::session::timeline::{check_page_limit, page};
use crate::session::views::{Event, EventList};

impl SessionService {
    /// A page of the session's events with seq > `after`, in order.
    pub async fn list_events(
        &self,
        id: Uuid,
        after: i64,
        limit: i64,
    ) -> Result<EventList, ServiceError> {
        check_page_limit(limit)?;
        self.session_row(id).await?;
        let stored = self.store.list_events(id, after, limit + 1).await?;
        let (events, next_after) = page(stored, limit, Event::from, |event| event.seq);
        Ok(EventList { events, next_after })
    }
}
