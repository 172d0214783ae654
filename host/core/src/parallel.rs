//! The one place a build uses a second thread: reading the workspace.
//!
//! A build that re-reads every file spends most of its time in system calls
//! (open, fstat, read, close for each of dozens of files). Those run on two
//! threads: the caller's and proem's reader thread. Results never depend on
//! which thread did what: every result lands in its item's slot, in item
//! order.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Whether builds may start the reader thread (see [`in_place_scope`]).
static READER_WANTED: AtomicBool = AtomicBool::new(true);

/// Says whether this process's builds share their reading with a second
/// thread (on by default). A process that builds once and exits (`proem
/// build`) turns it off: starting a thread (its stack, its malloc arena)
/// costs more than the thread saves on one build's reads. Call it before
/// the first build; it changes which thread reads, never what is read.
pub fn set_reader_thread(wanted: bool) {
    READER_WANTED.store(wanted, Ordering::Relaxed);
}

/// Runs `body` on this thread while the work it spawns runs on proem's
/// reader thread: one thread, so it never competes with the caller for more
/// than one other core (a pool of one thread per core spins on a 2-core
/// machine), and kept, so a build does not pay to start a thread. Without a
/// reader thread (the system refused one), spawned work runs on rayon's
/// global pool. `body` gets no scope when the process wants no reader
/// thread ([`set_reader_thread`]): it then does all the work itself.
pub(crate) fn in_place_scope<'s, R>(body: impl FnOnce(Option<&rayon::Scope<'s>>) -> R) -> R {
    in_place_scope_if(READER_WANTED.load(Ordering::Relaxed), body)
}

/// [`in_place_scope`], with or without the reader thread.
fn in_place_scope_if<'s, R>(reader: bool, body: impl FnOnce(Option<&rayon::Scope<'s>>) -> R) -> R {
    if !reader {
        return body(None);
    }
    static READER: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = READER.get_or_init(|| {
        rayon::ThreadPoolBuilder::new().num_threads(1).thread_name(|_| "proem-reader".into()).build().ok()
    });
    match pool {
        Some(pool) => pool.in_place_scope(|s| body(Some(s))),
        None => rayon::in_place_scope(|s| body(Some(s))),
    }
}

/// A list of items both threads work through, each item claimed by exactly
/// one of them, results kept in item order.
pub(crate) struct SharedWork<I, T> {
    items: OnceLock<(Vec<I>, Vec<OnceLock<T>>)>,
    next: AtomicUsize,
}

impl<I, T> Default for SharedWork<I, T> {
    fn default() -> Self {
        SharedWork { items: OnceLock::new(), next: AtomicUsize::new(0) }
    }
}

impl<I: Sync + Send, T: Send + Sync> SharedWork<I, T> {
    /// Lists the items (the first caller does; a second waits for the list)
    /// and processes unclaimed items with `f` until none is left.
    pub fn work(&self, list: impl FnOnce() -> Vec<I>, f: impl Fn(&I) -> T) {
        let (items, slots) = self.items.get_or_init(|| {
            let items = list();
            let slots = items.iter().map(|_| OnceLock::new()).collect();
            (items, slots)
        });
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            // Claimed by this thread alone, so the slot is empty.
            let _ = slots[i].set(f(item));
        }
    }

    /// The results in item order (empty when nobody worked). Call after
    /// every `work` call has returned (the end of the scope).
    pub fn into_results(self) -> Vec<T> {
        let Some((_, slots)) = self.items.into_inner() else { return Vec::new() };
        slots.into_iter().map(|s| s.into_inner().expect("every item is processed before work returns")).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_is_processed_once_and_results_keep_item_order() {
        for round in 0..50 {
            let calls = AtomicUsize::new(0);
            let shared = SharedWork::default();
            let square = |x: &u64| {
                calls.fetch_add(1, Ordering::Relaxed);
                x * x
            };
            // Every other round without the reader thread: the caller
            // then does all the work, with the same results.
            in_place_scope_if(round % 2 == 0, |scope| {
                if let Some(scope) = scope {
                    scope.spawn(|_| shared.work(|| (0..200).collect(), square));
                }
                shared.work(|| (0..200).collect(), square);
            });
            assert_eq!(calls.load(Ordering::Relaxed), 200);
            assert_eq!(shared.into_results(), (0..200u64).map(|x| x * x).collect::<Vec<_>>());
        }
        assert!(SharedWork::<u8, u8>::default().into_results().is_empty());
    }
}
