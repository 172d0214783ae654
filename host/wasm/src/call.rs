//! One hook call: a fresh store, the deadline, the limits, and a verdict
//! that says in words what went wrong.
//!
//! Two clocks guard every call. The epoch deadline stops wasm code that runs
//! too long (a busy loop traps within the deadline plus one tick); the
//! wall-clock timeout stops a call blocked inside a host function, which
//! epochs cannot interrupt. Both are the deadline plus the real time host
//! functions gave back, at most
//! [`HOST_TIME_ALLOWANCE`](proem_core::plugin::sandbox::HOST_TIME_ALLOWANCE) (see
//! [`CallClock`]): whatever a plugin asks of the host, its call ends within
//! its deadline plus that allowance plus two epoch ticks. The store is
//! dropped after the call whatever happened, so a trapped instance is never
//! entered again and nothing survives into the next call.

use crate::cache::error_chain;
use crate::engine::{self, PluginEngine};
use crate::sandbox::{CallClock, State};
use crate::wit::{v0_1, v0_2, Bindings};
use proem_core::plugin::call::{CallLimits, Failure, Outcome, Request, Response};
use proem_core::plugin::hooks;
use proem_core::plugin::sandbox::Sandbox;
use std::future::Future;
use std::time::Instant;
use wasmtime::{Store, Trap, UpdateDeadline};

/// Runs one hook in a fresh store.
pub async fn call(
    engine: &'static PluginEngine,
    bindings: Bindings,
    sandbox: Sandbox,
    limits: CallLimits,
    request: Request,
) -> Outcome {
    // A slot of the instance pool, held until the store is dropped; the
    // call's clocks start once it has one.
    let Ok(_slot) = engine.slots.acquire().await else {
        return Outcome::host_failure("the plugin engine is shutting down".into());
    };
    let started = Instant::now();
    let sandbox_id = sandbox.plugin.clone();
    let hook = request.hook();
    let state = match crate::sandbox::state(&sandbox) {
        Ok(s) => s,
        Err(e) => return Outcome { result: Err(Failure::Host(e)), logs: Vec::new(), elapsed: started.elapsed() },
    };
    let mut state = state;
    state.clock = CallClock::start(limits.deadline);
    let clock = state.clock.clone();
    let mut store = Store::new(&engine.engine, state);
    store.limiter(|s| &mut s.limiter);
    store.set_hostcall_fuel(limits.max_transfer);
    // Every pollable, stream or other resource a plugin holds is host memory.
    store.set_max_component_handles(proem_core::plugin::sandbox::MAX_HANDLES);
    // Each tick past the epoch deadline asks the call's clock, whose deadline
    // host functions move (see `CallClock`): wasm time is the plugin's, host
    // time is not.
    store.set_epoch_deadline(engine::deadline_ticks(limits.deadline));
    store.epoch_deadline_callback(|ctx| {
        let left = ctx.data().clock.deadline().saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Trap::Interrupt.into());
        }
        Ok(UpdateDeadline::Continue(engine::deadline_ticks(left).saturating_sub(1).max(1)))
    });
    // The wall-clock timeout allows one more tick than the CPU deadline, so a
    // busy loop is reported as a CPU overrun, not as a blocked call.
    let result = match within_wall_time(&clock, dispatch(&bindings, &mut store, request)).await {
        None => Err(Failure::Timeout(limits.deadline)),
        Some(Ok(Ok(response))) => Ok(response),
        Some(Ok(Err(message))) => Err(Failure::Returned(hooks::label(&message, 500))),
        Some(Err(e)) => Err(classify(&e, &store, limits)),
    };
    let state = store.into_data();
    let elapsed = started.elapsed();
    let status = result.as_ref().map(|_| "ok").unwrap_or_else(|f| f.status());
    tracing::debug!(plugin = %sandbox_id, hook, elapsed_us = elapsed.as_micros() as u64, status, "plugin call");
    Outcome { result, logs: state.logs, elapsed }
}

/// Runs `future` until it finishes (`Some`) or the call's wall-clock limit
/// passes (`None`): its deadline plus the real time host functions gave
/// back so far (that time is not the plugin's, and is at most
/// [`HOST_TIME_ALLOWANCE`](proem_core::plugin::sandbox::HOST_TIME_ALLOWANCE)),
/// plus two epoch ticks.
async fn within_wall_time<F: Future>(clock: &CallClock, future: F) -> Option<F::Output> {
    let mut future = std::pin::pin!(future);
    let limit = || clock.wall_limit(engine::EPOCH_TICK * 2);
    loop {
        let at = limit();
        match tokio::time::timeout_at(at.into(), &mut future).await {
            Ok(out) => return Some(out),
            // Host functions gave time back meanwhile: wait for the new limit.
            Err(_) if limit() > at => continue,
            Err(_) => return None,
        }
    }
}

/// Instantiates and calls. Outer `Err`: a trap or host error; inner `Err`:
/// the plugin's own error.
async fn dispatch(
    bindings: &Bindings,
    store: &mut Store<State>,
    request: Request,
) -> wasmtime::Result<Result<Response, String>> {
    let wrong =
        |request: &Request, api: &str| Ok(Err(format!("the {} hook is not part of plugin API {api}", request.hook())));
    match bindings {
        Bindings::V0_1(pre) => {
            let plugin = pre.instantiate_async(&mut *store).await?;
            // Instantiating is the host's work (it runs under the deadline,
            // so a start function cannot spin): the hook gets its whole
            // deadline from here.
            store.data().clock.restart();
            Ok(match request {
                Request::Info => {
                    Ok(Response::Info(v0_1::info(plugin.proem_plugin_describe().call_info(&mut *store).await?)))
                }
                Request::Sections(ctx) => plugin
                    .proem_plugin_sections()
                    .call_contribute(&mut *store, &v0_1::context(&ctx))
                    .await?
                    .map(|s| Response::Sections(v0_1::sections(s))),
                Request::Overlay(ctx) => plugin
                    .proem_plugin_overlay()
                    .call_overlay(&mut *store, &v0_1::context(&ctx))
                    .await?
                    .map(|o| Response::Overlay(o.map(v0_1::overlay))),
                Request::Bootstrap(ctx, files) => plugin
                    .proem_plugin_bootstrap()
                    .call_on_bootstrap(&mut *store, &v0_1::context(&ctx), &v0_1::files_in(&files))
                    .await?
                    .map(|f| Response::Bootstrap(v0_1::files_out(f))),
                other @ (Request::Stable(..) | Request::Turn(..)) => return wrong(&other, "0.1"),
            })
        }
        Bindings::V0_2(pre) => {
            let instantiating = Instant::now();
            let plugin = pre.instantiate_async(&mut *store).await?;
            tracing::debug!(instantiate_us = instantiating.elapsed().as_micros() as u64, "instantiated");
            store.data().clock.restart();
            let contribution = |(sections, overlay)| Response::Contribution(sections, overlay);
            Ok(match request {
                Request::Info => {
                    Ok(Response::Info(v0_2::info(plugin.proem_plugin_describe().call_info(&mut *store).await?)))
                }
                Request::Stable(ctx, files) => plugin
                    .proem_plugin_stable()
                    .call_contribute(&mut *store, &v0_2::agent_context(&ctx), &v0_2::files_in(&files))
                    .await?
                    .map(|o| contribution(v0_2::stable_output(o))),
                Request::Turn(ctx, files) => plugin
                    .proem_plugin_turn()
                    .call_contribute(&mut *store, &v0_2::turn_context(&ctx, &files))
                    .await?
                    .map(|o| contribution(v0_2::turn_output(o))),
                Request::Bootstrap(ctx, files) => plugin
                    .proem_plugin_bootstrap()
                    .call_on_bootstrap(&mut *store, &v0_2::agent_context(&ctx), &v0_2::files_in(&files))
                    .await?
                    .map(|f| Response::Bootstrap(v0_2::files_out(f))),
                other @ (Request::Sections(_) | Request::Overlay(_)) => return wrong(&other, "0.2"),
            })
        }
    }
}

/// A trap in words. Its text carries plugin-controlled strings (function
/// names from the plugin's name section, its stderr), so it is made a
/// [`hooks::label`] here.
fn classify(e: &wasmtime::Error, store: &Store<State>, limits: CallLimits) -> Failure {
    let state = store.data();
    if let Some(asked) = state.limiter.denied {
        return Failure::Memory { limit: state.limiter_cap(), asked };
    }
    let stderr = state.stderr_tail();
    let with_stderr = |what: String| {
        hooks::label(
            &match &stderr {
                Some(text) => format!("{what}; its stderr: {text}"),
                None => what,
            },
            1500,
        )
    };
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Failure::Deadline(limits.deadline),
        Some(Trap::StackOverflow) => Failure::Trap("stack overflow".into()),
        Some(Trap::UnreachableCodeReached) => Failure::Trap(with_stderr("the plugin panicked or aborted".into())),
        Some(other) => Failure::Trap(with_stderr(other.to_string())),
        None => {
            let chain = error_chain(e);
            if chain.contains("fuel allocated for hostcalls") {
                Failure::Trap(format!(
                    "passed the host more than {} bytes at once, more than its output caps allow; nothing was copied",
                    limits.max_transfer
                ))
            } else {
                Failure::Trap(with_stderr(chain))
            }
        }
    }
}
