//! The replica's memory for large reads (docs/security.md, "Memory per request"): a
//! timeline, a large page of observations. Each holds shares of the budget
//! (`TVBO_READ_MEMORY_MIB`) while its answer is built and sent; the others wait.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ServiceError;
use crate::engine::Limits;

/// The memory one share of the budget stands for: one timeline read, whatever its size,
/// above the peak of the largest answer (`MAX_TIMELINE_BYTES`: its rows, their view and
/// its JSON; tests/it/bounded_reads.rs measures it).
pub const TIMELINE_READ_MEMORY: usize = 80 << 20;
/// How long a read waits for its shares before it answers 503.
pub const READ_WAIT: Duration = Duration::from_secs(10);
/// How long an answer being sent keeps its shares: past it, the memory of a client that
/// does not read is no longer counted, so that such clients cannot hold every share.
pub const READ_SEND_LIMIT: Duration = Duration::from_secs(60);

/// The shares of a replica's read budget ([`Limits::read_memory`]): one per
/// [`TIMELINE_READ_MEMORY`], at least one.
#[derive(Clone, Debug)]
pub struct ReadBudget {
    shares: Arc<Semaphore>,
    total: usize,
}

impl ReadBudget {
    pub fn new(limits: &Limits) -> ReadBudget {
        let total = (limits.read_memory / TIMELINE_READ_MEMORY).max(1);
        ReadBudget {
            shares: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    /// Shares for a read whose answer may take `memory` bytes while it is built and
    /// sent: one per [`TIMELINE_READ_MEMORY`] (at least one, at most all of them), waited
    /// for up to [`READ_WAIT`], else [`ServiceError::ReadsBusy`].
    pub async fn share(&self, memory: usize) -> Result<ReadSlot, ServiceError> {
        let wanted = memory.div_ceil(TIMELINE_READ_MEMORY).clamp(1, self.total) as u32;
        let permit =
            tokio::time::timeout(READ_WAIT, self.shares.clone().acquire_many_owned(wanted))
                .await
                .map_err(|_| ServiceError::ReadsBusy)?
                .map_err(|_| ServiceError::Internal("the read budget is closed".into()))?;
        Ok(ReadSlot::new(permit))
    }
}

/// The shares a read's answer holds while it is built and sent (at most
/// [`READ_SEND_LIMIT`]).
pub struct ReadSlot {
    _held: Arc<Mutex<Option<OwnedSemaphorePermit>>>,
}

impl ReadSlot {
    /// Holds `permit` until this slot is dropped or [`READ_SEND_LIMIT`] has passed.
    fn new(permit: OwnedSemaphorePermit) -> ReadSlot {
        let held = Arc::new(Mutex::new(Some(permit)));
        let expiring = Arc::downgrade(&held);
        tokio::spawn(async move {
            tokio::time::sleep(READ_SEND_LIMIT).await;
            if let Some(held) = expiring.upgrade() {
                held.lock().expect("read slot poisoned").take();
            }
        });
        ReadSlot { _held: held }
    }
}

/// A large read's answer (a timeline, a page of observations): its JSON, and the shares
/// it holds until the JSON is sent (drop `slot` then; none for an answer too small to
/// count).
pub struct HeldJson {
    pub json: Vec<u8>,
    pub slot: Option<ReadSlot>,
}
