//! Fair scheduling of model work (GP fits, acquisition, forgetting) across sessions.
//!
//! Model work is CPU-bound and runs on the blocking pool, at most one job per core. Jobs
//! wait in one queue per session, and a free core goes to the session that has waited
//! longest for its turn (round robin), with **at most one running job per session**. So a
//! session with a backlog of big fits holds at most one core, and another session's job
//! waits at most for one running job to end (when every core is busy), never for the
//! backlog.
//!
//! The queue reports to the process's metrics: jobs waiting and running, and each job's
//! wait for its turn.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::oneshot;
use uuid::Uuid;

use crate::acquisition::Cores;
use crate::telemetry;

/// The queues and the count of running jobs.
#[derive(Debug)]
struct Queues {
    /// Most jobs running at once (the number of cores).
    capacity: usize,
    running: usize,
    /// Per session: whether one of its jobs runs, and its waiting jobs in arrival order.
    lanes: HashMap<Uuid, Lane>,
    /// Sessions with waiting jobs and none running, in the order they became ready.
    ready: VecDeque<Uuid>,
}

#[derive(Debug, Default)]
struct Lane {
    running: bool,
    waiting: VecDeque<oneshot::Sender<()>>,
}

impl Queues {
    /// Starts waiting jobs while there are free cores; a job whose waiter went away (its
    /// request was cancelled) is skipped.
    fn dispatch(&mut self) {
        while self.running < self.capacity {
            let Some(id) = self.ready.pop_front() else {
                return;
            };
            let lane = self.lanes.get_mut(&id).expect("ready sessions have lanes");
            let mut started = false;
            while let Some(waiter) = lane.waiting.pop_front() {
                telemetry::model_work_dequeued();
                if waiter.send(()).is_ok() {
                    started = true;
                    break;
                }
            }
            if started {
                lane.running = true;
                self.running += 1;
                telemetry::model_work_started();
            } else {
                self.lanes.remove(&id);
            }
        }
    }

    /// Ends a running job of session `id` and starts the next waiting ones.
    fn release(&mut self, id: Uuid) {
        self.running -= 1;
        telemetry::model_work_ended();
        let lane = self
            .lanes
            .get_mut(&id)
            .expect("running sessions have lanes");
        lane.running = false;
        if lane.waiting.is_empty() {
            self.lanes.remove(&id);
        } else {
            self.ready.push_back(id);
        }
        self.dispatch();
    }
}

/// A fair queue of model work. Cheap to clone.
#[derive(Clone, Debug)]
pub struct FairScheduler {
    queues: Arc<Mutex<Queues>>,
}

/// The right to run one job of a session; the next job starts when it is dropped.
#[derive(Debug)]
pub struct Turn {
    queues: Arc<Mutex<Queues>>,
    session: Uuid,
}

/// The cores this job may use now: its own, and those no job holds (their next job would
/// start at once, there is no queue for them). Asked again before each piece of work it
/// lends out (half of UCB's raw samples, or a group of its refinements), so a job that
/// starts has its core back within one piece.
impl Cores for Turn {
    fn available(&self) -> usize {
        let queues = self.queues.lock().expect("scheduler poisoned");
        1 + queues.capacity.saturating_sub(queues.running)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.queues
            .lock()
            .expect("scheduler poisoned")
            .release(self.session);
    }
}

/// A job waiting for its turn. If it is dropped after the turn was granted but before it
/// was taken (the request was cancelled at that moment), the turn is passed on.
struct Waiting {
    queues: Arc<Mutex<Queues>>,
    session: Uuid,
    receiver: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(mut receiver) = self.receiver.take()
            && receiver.try_recv().is_ok()
        {
            drop(Turn {
                queues: self.queues.clone(),
                session: self.session,
            });
        }
    }
}

impl FairScheduler {
    /// A scheduler running at most `capacity` jobs at once (at least one).
    pub fn new(capacity: usize) -> Self {
        FairScheduler {
            queues: Arc::new(Mutex::new(Queues {
                capacity: capacity.max(1),
                running: 0,
                lanes: HashMap::new(),
                ready: VecDeque::new(),
            })),
        }
    }

    /// Waits for session `session`'s next turn (see the module's rules).
    pub async fn turn(&self, session: Uuid) -> Turn {
        let asked = Instant::now();
        let receiver = {
            let mut queues = self.queues.lock().expect("scheduler poisoned");
            let has_capacity = queues.running < queues.capacity;
            let lane = queues.lanes.entry(session).or_default();
            if !lane.running && lane.waiting.is_empty() && has_capacity {
                lane.running = true;
                queues.running += 1;
                telemetry::model_work_started();
                telemetry::model_work_waited(asked.elapsed());
                return Turn {
                    queues: self.queues.clone(),
                    session,
                };
            }
            let (sender, receiver) = oneshot::channel();
            let became_ready = !lane.running && lane.waiting.is_empty();
            lane.waiting.push_back(sender);
            telemetry::model_work_queued();
            if became_ready {
                queues.ready.push_back(session);
            }
            receiver
        };
        let mut waiting = Waiting {
            queues: self.queues.clone(),
            session,
            receiver: Some(receiver),
        };
        let granted = waiting
            .receiver
            .as_mut()
            .expect("the receiver is taken only here and in drop")
            .await;
        waiting.receiver = None;
        granted.expect("a waiter's sender is only dropped after a failed send to it");
        telemetry::model_work_waited(asked.elapsed());
        Turn {
            queues: self.queues.clone(),
            session,
        }
    }

    /// Jobs running now and jobs waiting (for tests and metrics).
    pub fn load(&self) -> (usize, usize) {
        let queues = self.queues.lock().expect("scheduler poisoned");
        let waiting = queues.lanes.values().map(|l| l.waiting.len()).sum();
        (queues.running, waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Records the order in which jobs start.
    async fn start_order(capacity: usize, jobs: Vec<(Uuid, u64)>) -> Vec<usize> {
        let scheduler = FairScheduler::new(capacity);
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut handles = Vec::new();
        for (i, (session, millis)) in jobs.into_iter().enumerate() {
            let (scheduler, order) = (scheduler.clone(), order.clone());
            handles.push(tokio::spawn(async move {
                let _turn = scheduler.turn(session).await;
                order.lock().unwrap().push(i);
                tokio::time::sleep(Duration::from_millis(millis)).await;
            }));
            // Queue in index order.
            tokio::task::yield_now().await;
        }
        for handle in handles {
            handle.await.unwrap();
        }
        assert_eq!(scheduler.load(), (0, 0));
        Arc::try_unwrap(order).unwrap().into_inner().unwrap()
    }

    #[tokio::test]
    async fn a_job_may_use_the_cores_no_job_holds() {
        let scheduler = FairScheduler::new(2);
        let first = scheduler.turn(Uuid::new_v4()).await;
        assert_eq!(first.available(), 2);
        let second = scheduler.turn(Uuid::new_v4()).await;
        assert_eq!((first.available(), second.available()), (1, 1));
        drop(first);
        assert_eq!(second.available(), 2);
    }

    #[tokio::test]
    async fn a_backlog_holds_one_core_and_others_take_turns() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        // Two cores; session a queues five jobs, then b queues one: b starts second, on
        // the core a's backlog may not take.
        let mut jobs: Vec<(Uuid, u64)> = (0..5).map(|_| (a, 100)).collect();
        jobs.push((b, 10));
        let order = start_order(2, jobs).await;
        assert_eq!(order, vec![0, 5, 1, 2, 3, 4]);
    }

    #[tokio::test]
    async fn waiting_sessions_are_served_round_robin() {
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        // One core, held first by c; then a, a, b, b queue: a and b alternate.
        let jobs = vec![(c, 50), (a, 10), (a, 10), (b, 10), (b, 10)];
        let order = start_order(1, jobs).await;
        assert_eq!(order, vec![0, 1, 3, 2, 4]);
    }

    #[tokio::test]
    async fn a_cancelled_waiter_passes_its_turn_on() {
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let scheduler = FairScheduler::new(1);
        let first = scheduler.turn(a).await;
        let cancelled = tokio::spawn({
            let scheduler = scheduler.clone();
            async move {
                let _turn = scheduler.turn(b).await;
            }
        });
        tokio::task::yield_now().await;
        assert_eq!(scheduler.load(), (1, 1));
        cancelled.abort();
        let _ = cancelled.await;
        drop(first);
        // The core is free again: a new job starts at once.
        let again = tokio::time::timeout(Duration::from_secs(1), scheduler.turn(a)).await;
        assert!(again.is_ok(), "the turn was lost");
        drop(again);
        assert_eq!(scheduler.load(), (0, 0));
    }
}
