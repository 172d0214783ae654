//! The clock of one plugin call: its deadline in the plugin's own time,
//! moved by what host functions charge and give back.

use proem_core::plugin::sandbox::HOST_TIME_ALLOWANCE;
use proem_core::sync::Lock;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The deadline of one call, in the plugin's own time.
///
/// The epoch callback stops wasm code once `Instant::now()` passes
/// [`CallClock::deadline`]. A host function moves the deadline: out by the
/// real time it spent (the host's time is not the plugin's), in all at most
/// [`HOST_TIME_ALLOWANCE`], and in by a fixed cost for the work it did for
/// the plugin. The same real time moves the call's wall-clock timeout (a
/// backstop for blocked calls), so both stay within the deadline plus the
/// allowance.
///
/// Clones share one clock: every host object a call creates (a file stream)
/// charges the same deadline.
#[derive(Debug, Clone)]
pub struct CallClock(Arc<Lock<Charges>>);

/// What a [`CallClock`] has counted since its call started.
#[derive(Debug)]
struct Charges {
    budget: Duration,
    started: Instant,
    /// Fixed costs host functions charged.
    charged: Duration,
    /// Real host time given back (at most [`HOST_TIME_ALLOWANCE`]).
    given_back: Duration,
}

impl CallClock {
    /// A clock whose deadline is `budget` from now.
    pub fn start(budget: Duration) -> CallClock {
        let started = Instant::now();
        CallClock(Arc::new(Lock::new(Charges { budget, started, charged: Duration::ZERO, given_back: Duration::ZERO })))
    }

    /// Gives the whole budget again from now, the time since the start
    /// counted as the host's (used once instantiation is done).
    pub fn restart(&self) {
        let mut c = self.0.lock();
        c.given_back = c.started.elapsed().min(HOST_TIME_ALLOWANCE);
    }

    /// When the plugin's time runs out: its budget from the start, plus the
    /// host time given back, less what host functions charged.
    pub fn deadline(&self) -> Instant {
        let c = self.0.lock();
        (c.started + c.budget + c.given_back).checked_sub(c.charged).unwrap_or(c.started)
    }

    /// When the call is stopped whatever it is doing: the budget plus the
    /// host time given back, uncharged (`slack` is added for the epoch
    /// tick in progress).
    pub fn wall_limit(&self, slack: Duration) -> Instant {
        let c = self.0.lock();
        c.started + c.budget + c.given_back + slack
    }

    /// Runs host work for the plugin: refused (as a deadline overrun) when
    /// `cost` does not fit in the time left; otherwise `work` runs, its real
    /// time is given back (within [`HOST_TIME_ALLOWANCE`]) and `cost` is
    /// charged instead.
    pub fn charge<R>(&self, cost: Duration, work: impl FnOnce() -> R) -> Result<R, wasmtime::Error> {
        let started = Instant::now();
        if started + cost > self.deadline() {
            return Err(wasmtime::Trap::Interrupt.into());
        }
        let out = work();
        let spent = started.elapsed();
        let mut c = self.0.lock();
        c.given_back = (c.given_back + spent).min(HOST_TIME_ALLOWANCE);
        c.charged += cost;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_time_is_given_back_up_to_the_allowance_and_charges_are_fixed() {
        let budget = Duration::from_millis(50);
        let clock = CallClock::start(budget);
        let first = clock.deadline();
        // Host work that takes longer than the allowance gives back only
        // the allowance; the fixed cost comes off whatever the real time.
        let cost = Duration::from_millis(5);
        clock.charge(cost, || std::thread::sleep(HOST_TIME_ALLOWANCE + Duration::from_millis(30))).unwrap();
        assert_eq!(clock.deadline(), first + HOST_TIME_ALLOWANCE - cost);
        assert_eq!(clock.wall_limit(Duration::ZERO), first + HOST_TIME_ALLOWANCE);
        // A cost that does not fit in what is left traps before any work.
        let mut ran = false;
        let refused = clock.charge(budget + HOST_TIME_ALLOWANCE, || ran = true);
        assert!(refused.unwrap_err().downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::Interrupt));
        assert!(!ran);
    }
}
