//! The one lock type proem uses on shared paths.
//!
//! `std::sync::Mutex` poisons itself when a thread panics while holding it,
//! and every later `lock().unwrap()` panics too: one bad input would turn a
//! long-running library user's every later build into a panic. [`Lock`]
//! never poisons: a guard dropped by a panic leaves the data as it was, and
//! every value kept behind a `Lock` is a cache or a counter that is valid in
//! any state a panic can leave it in (an entry is inserted whole or not at
//! all). `tests/security/hostile.rs` checks that no other mutex is used in the host crates.

use std::sync::{Mutex, MutexGuard};

/// A mutex that ignores poisoning. See the module docs.
#[derive(Debug, Default)]
pub struct Lock<T>(Mutex<T>);

impl<T> Lock<T> {
    /// A lock around `value`.
    pub const fn new(value: T) -> Lock<T> {
        Lock(Mutex::new(value))
    }

    /// The value, through an exclusive borrow (no locking needed).
    pub fn get_mut(&mut self) -> &mut T {
        self.0.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Locks, whether or not an earlier holder panicked.
    pub fn lock(&self) -> MutexGuard<'_, T> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_while_locked_does_not_break_later_locks() {
        let lock = std::sync::Arc::new(Lock::new(1u32));
        let held = lock.clone();
        let joined = std::thread::spawn(move || {
            let _guard = held.lock();
            panic!("boom while holding the lock");
        })
        .join();
        assert!(joined.is_err(), "the thread panicked");
        *lock.lock() += 1;
        assert_eq!(*lock.lock(), 2);
    }
}
