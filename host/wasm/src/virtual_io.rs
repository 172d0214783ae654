//! Virtual time for plugins: no clock, timer or `poll` a plugin can reach
//! tells it how much real time has passed.
//!
//! The wall clock is frozen at the build's `now` and the monotonic clock at
//! 0 (`sandbox.rs`). That alone is not enough: WASI's timers
//! (`subscribe-duration`, `subscribe-instant`) sleep in real time, so a
//! plugin that spins on `pollable.ready()` until a timer fires, or polls a
//! timer against a file read, can count how long things took and put the
//! count in its output. Here both interfaces are replaced (the linker
//! shadows wasmtime-wasi's definitions):
//!
//! - every timer is a pollable that is ready at once: virtual time jumps to
//!   any deadline asked for, and the monotonic clock still reads 0;
//! - `poll` waits until every pollable in its list is ready and returns them
//!   all, and `pollable.ready` waits and returns true: which of several
//!   pollables finished first, or whether one has finished yet, is never
//!   visible. A pollable that can never be ready makes the call block until
//!   its wall-clock timeout, the same way every time.
//!
//! `tests/security/containment.rs` (`virtual_time_*`) runs a plugin that spins on
//! timers and polls and asserts the same output on every build.

use crate::sandbox::State;
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock;
use wasmtime_wasi::p2::bindings::io::poll;
use wasmtime_wasi::p2::{subscribe, DynPollable, Pollable};

/// The view of a call's state the virtual clock and poll work on.
pub struct VirtualIo<'a> {
    table: &'a mut ResourceTable,
}

struct Virtual;

impl HasData for Virtual {
    type Data<'a> = VirtualIo<'a>;
}

/// Replaces WASI's monotonic clock and poll in `linker` (which must already
/// hold wasmtime-wasi's definitions) with the virtual ones.
pub fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    monotonic_clock::add_to_linker::<State, Virtual>(linker, view)?;
    poll::add_to_linker::<State, Virtual>(linker, view)?;
    linker.allow_shadowing(false);
    Ok(())
}

fn view(state: &mut State) -> VirtualIo<'_> {
    VirtualIo { table: state.table() }
}

/// A timer in virtual time: already fired.
struct Fired;

#[wasmtime_wasi::async_trait]
impl Pollable for Fired {
    async fn ready(&mut self) {}
}

impl VirtualIo<'_> {
    fn fired(&mut self) -> wasmtime::Result<Resource<DynPollable>> {
        let timer = self.table.push(Fired)?;
        subscribe(self.table, timer)
    }

    async fn wait(&mut self, pollable: &Resource<DynPollable>) -> wasmtime::Result<()> {
        let borrowed = Resource::new_borrow(pollable.rep());
        poll::HostPollable::block(&mut *self.table, borrowed).await
    }
}

impl monotonic_clock::Host for VirtualIo<'_> {
    fn now(&mut self) -> wasmtime::Result<monotonic_clock::Instant> {
        Ok(0)
    }

    fn resolution(&mut self) -> wasmtime::Result<monotonic_clock::Duration> {
        Ok(1_000_000_000)
    }

    fn subscribe_instant(&mut self, _when: monotonic_clock::Instant) -> wasmtime::Result<Resource<DynPollable>> {
        self.fired()
    }

    fn subscribe_duration(&mut self, _after: monotonic_clock::Duration) -> wasmtime::Result<Resource<DynPollable>> {
        self.fired()
    }
}

impl poll::Host for VirtualIo<'_> {
    async fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        if pollables.is_empty() {
            wasmtime::bail!("empty poll list");
        }
        let n = u32::try_from(pollables.len())?;
        for pollable in &pollables {
            self.wait(pollable).await?;
        }
        Ok((0..n).collect())
    }
}

impl poll::HostPollable for VirtualIo<'_> {
    async fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        self.wait(&pollable).await
    }

    async fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        self.wait(&pollable).await?;
        Ok(true)
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        poll::HostPollable::drop(&mut *self.table, pollable)
    }
}
