//! The threads a server's searches run on: a fixed set, started once,
//! that a search is handed to without a lock held across a thread's
//! start.
//!
//! tokio's blocking pool takes one mutex for every task handed to it and
//! for every thread that takes one, and starts a thread (with the mutex
//! held) when none is idle. On 2 busy cores, a thread preempted while it
//! held that mutex stalled every lookup behind it: in an off-CPU profile
//! of the live bench during ingest (10M lines), most of the lookups'
//! sleeps of 5 ms and more were there. A search given to this pool is
//! sent on a lock-free channel that the pool's threads wait on, already
//! running; one of them wakes for it. (rayon's pool, used before, woke
//! idle threads that then spun on `sched_yield` before they slept: at
//! about 900 lookups/s during ingest its threads took a tenth of the
//! server's CPU, half of it in switches.) When every thread is busy
//! (slow clients hold the searches that stream to them), [`try_spawn`]
//! gives the search back, for the caller to run it elsewhere.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

type Search = Box<dyn FnOnce() + Send>;

struct Pool {
    searches: crossbeam_channel::Sender<Search>,
    size: usize,
    busy: AtomicUsize,
}

/// Threads of the pool: four a core, at least 8 (a search streaming a
/// long answer to a slow client holds its thread until the client reads).
fn size() -> usize {
    (std::thread::available_parallelism().map_or(2, |n| n.get()) * 4).max(8)
}

fn pool() -> Option<&'static Pool> {
    static POOL: OnceLock<Option<Pool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let size = size();
        let (searches, taken) = crossbeam_channel::unbounded::<Search>();
        for i in 0..size {
            let taken = taken.clone();
            let started = std::thread::Builder::new()
                .name(format!("ukvs-search-{i}"))
                .spawn(move || {
                    for search in taken {
                        // A search that panics has dropped its answer's
                        // channels, which the caller answers as a
                        // failure; the panic hook has printed it. The
                        // thread goes on with the next.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(search));
                    }
                });
            // Without its threads the pool gives every search back.
            started.ok()?;
        }
        Some(Pool {
            searches,
            size,
            busy: AtomicUsize::new(0),
        })
    })
    .as_ref()
}

/// Counts a search out of the pool's busy threads, also when it panics.
struct Taken(&'static Pool);

impl Drop for Taken {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `search` on a thread of the pool if one is free; gives it back if
/// every thread is busy (or the pool could not be started).
pub fn try_spawn<F>(search: F) -> Result<(), F>
where
    F: FnOnce() + Send + 'static,
{
    let Some(pool) = pool() else {
        return Err(search);
    };
    if pool.busy.fetch_add(1, Ordering::AcqRel) >= pool.size {
        pool.busy.fetch_sub(1, Ordering::AcqRel);
        return Err(search);
    }
    let taken = Taken(pool);
    // The receivers live as long as the threads, which never end: the
    // send cannot fail.
    let _ = pool.searches.send(Box::new(move || {
        let _taken = taken;
        search();
    }));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_search_runs_on_the_pool_until_every_thread_is_taken() {
        let (tx, rx) = mpsc::channel();
        try_spawn(move || {
            tx.send(std::thread::current().name().map(str::to_owned))
                .unwrap()
        })
        .ok()
        .unwrap();
        let name = rx.recv().unwrap().unwrap();
        assert!(name.starts_with("ukvs-search-"), "{name}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let all_given_back = |what: &str| {
            while pool().unwrap().busy.load(Ordering::Acquire) > 0 {
                assert!(std::time::Instant::now() < deadline, "{what}");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        };
        // The search above counts as busy until it has returned, which
        // may be after its answer was received.
        all_given_back("the first search's thread not given back");

        // Every thread held: the next search comes back.
        let n = pool().unwrap().size;
        let (hold_tx, hold_rx) = mpsc::channel::<()>();
        let hold_rx = std::sync::Arc::new(std::sync::Mutex::new(hold_rx));
        let (started_tx, started_rx) = mpsc::channel();
        for _ in 0..n {
            let hold = hold_rx.clone();
            let started = started_tx.clone();
            assert!(try_spawn(move || {
                started.send(()).unwrap();
                let _ = hold.lock().unwrap().recv();
            })
            .is_ok());
        }
        for _ in 0..n {
            started_rx.recv().unwrap();
        }
        assert!(try_spawn(|| {}).is_err());
        drop(hold_tx);
        // Released (the held searches end as the channel closes), and a
        // panicking search gives its thread back too.
        all_given_back("threads not given back");
        assert!(try_spawn(|| panic!("a search that panics")).is_ok());
        let (tx, rx) = mpsc::channel();
        all_given_back("not given back after a panic");
        try_spawn(move || tx.send(()).unwrap()).ok().unwrap();
        rx.recv().unwrap();
    }
}
