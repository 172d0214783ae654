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

use crate::compile::error_chain;
use crate::engine::{self, Compiled, PluginEngine};
use crate::sandbox::{CallClock, State};
use crate::wit::Bindings;
use proem_core::plugin::call::{CallLimits, Outcome, PluginError, Request};
use proem_core::plugin::hooks;
use proem_core::plugin::sandbox::Sandbox;
use std::future::Future;
use std::time::Instant;
use wasmtime::{Store, Trap, UpdateDeadline};

/// Runs one hook in a fresh store.
pub async fn call(
    engine: &'static PluginEngine,
    compiled: &'static Compiled,
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
        Err(e) => return Outcome { result: Err(e), logs: Vec::new(), elapsed: started.elapsed() },
    };
    let mut store = limited_store(&compiled.engine, state, limits);
    let clock = store.data().clock.clone();
    // The wall-clock timeout allows one more tick than the CPU deadline, so a
    // busy loop is reported as a CPU overrun, not as a blocked call.
    let result = match within_wall_time(&clock, bindings.call(&mut store, request)).await {
        None => Err(PluginError::Timeout(limits.deadline)),
        Some(Ok(Ok(response))) => Ok(response),
        Some(Ok(Err(message))) => Err(PluginError::Returned(hooks::label(&message, 500))),
        Some(Err(e)) => Err(classify(&e, &store, limits)),
    };
    let state = store.into_data();
    let result = unless_host_troubled(result, state.host_trouble());
    let elapsed = started.elapsed();
    let status = result.as_ref().map_or_else(|f| f.status().as_str(), |_| "ok");
    tracing::debug!(plugin = %sandbox_id, hook = hook.label(), elapsed_us = elapsed.as_micros() as u64, status, "plugin call");
    Outcome { result, logs: state.logs, elapsed }
}

/// A call's result, or a host failure when the workspace's filesystem
/// answered the call for the machine's reason (`trouble`: a file the host
/// could not open for want of descriptors, say): an answer built from that
/// is not the plugin's answer to these inputs, so it is not used and, as a
/// failure, never kept.
fn unless_host_troubled<T>(result: Result<T, PluginError>, trouble: Option<&str>) -> Result<T, PluginError> {
    match (result, trouble) {
        (Err(PluginError::Returned(_) | PluginError::Trap(_) | PluginError::Panicked { .. }), Some(why))
        | (Ok(_), Some(why)) => Err(PluginError::Exhausted(format!(
            "a workspace read was refused ({}); its answer was not used",
            hooks::label(why, 200)
        ))),
        (result, _) => result,
    }
}

/// A store for one call with `state`, under `limits`: the memory limiter,
/// the transfer cap (hostcall fuel), the handle cap, and the CPU deadline
/// on the call's clock (started here).
fn limited_store(engine: &wasmtime::Engine, mut state: State, limits: CallLimits) -> Store<State> {
    state.clock = CallClock::start(limits.deadline);
    let mut store = Store::new(engine, state);
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
    store
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

/// Why a call that ended in a wasmtime error failed. The store's state
/// says first: a memory growth the call's limiter refused is the memory
/// cap, whatever trap followed it. Then the error's types
/// ([`classify_error`]). Texts carry plugin-controlled strings (function
/// names from the plugin's name section, its stderr), so they are made
/// [`hooks::label`]s.
fn classify(e: &wasmtime::Error, store: &Store<State>, limits: CallLimits) -> PluginError {
    let state = store.data();
    if let Some(asked) = state.limiter.denied {
        return PluginError::Memory { limit: state.limiter_cap(), asked };
    }
    classify_error(e, state.stderr_tail().as_deref(), limits)
}

/// A wasmtime error in the report's kinds, from its types alone: a
/// [`Trap`] (the epoch interrupt, which the call's clock raises, is the
/// CPU deadline), proem's own [`DeniedStub`](crate::stubs::DeniedStub), or
/// wasmtime's hostcall fuel ([`hostcall_fuel_ran_out`]); anything else is a
/// trap in wasmtime's words.
fn classify_error(e: &wasmtime::Error, stderr: Option<&str>, limits: CallLimits) -> PluginError {
    match e.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => PluginError::Deadline(limits.deadline),
        Some(Trap::StackOverflow) => PluginError::StackOverflow,
        Some(Trap::UnreachableCodeReached) => PluginError::Panicked { stderr: stderr.map(str::to_string) },
        Some(other) => PluginError::Trap(PluginError::with_stderr(&other.to_string(), stderr)),
        None if e.is::<crate::stubs::DeniedStub>() => {
            PluginError::Denied(PluginError::with_stderr(&error_chain(e), stderr))
        }
        None if hostcall_fuel_ran_out(e) => PluginError::Transfer { max: limits.max_transfer },
        None => PluginError::Trap(PluginError::with_stderr(&error_chain(e), stderr)),
    }
}

/// Whether the plugin passed the host more than its hostcall fuel (the
/// transfer cap) at once. wasmtime raises a unit struct of its own for it,
/// `HostcallFuelExhausted`, which it does not export: no `downcast_ref` or
/// `is` can name it. A unit struct's derived `Debug` is its type name, so
/// that is what is compared (the type, not the message, which wasmtime may
/// reword); a wasmtime that renames it fails
/// `call::tests::a_transfer_over_the_cap_is_the_transfer_error`.
fn hostcall_fuel_ran_out(e: &wasmtime::Error) -> bool {
    e.chain().any(|cause| format!("{cause:?}") == "HostcallFuelExhausted")
}

#[cfg(test)]
mod tests {
    //! Each kind of failure a call can end in, made by a real component (a
    //! few lines of WAT) in a store set up as [`call`] sets it up, and the
    //! status and text the report gets from it.

    use super::*;
    use proem_core::plugin::sandbox::{Grants, View};
    use proem_core::report::PluginStatus;
    use proem_core::tokens::Tokenizer;
    use std::time::Duration;
    use wasmtime::component::{Component, Linker};

    const MIB: usize = 1024 * 1024;

    /// A component whose export `run` is the core function `body` (with a
    /// one-page memory, and `$denied` imported from the host).
    fn component(result: &str, body: &str) -> Vec<u8> {
        let lift_result = if result.is_empty() { String::new() } else { format!("(result {result})") };
        let core_result = if result.is_empty() { "" } else { "(result i32)" };
        wat::parse_str(format!(
            r#"(component
                (import "denied" (func $denied))
                (core func $denied_core (canon lower (func $denied)))
                (core module $m
                    (import "host" "denied" (func $denied))
                    (memory (export "memory") 1)
                    (data (i32.const 0) "\08\00\00\00\60\ea\00\00")
                    (func $run (export "run") {core_result} {body}))
                (core instance $host (export "denied" (func $denied_core)))
                (core instance $i (instantiate $m (with "host" (instance $host))))
                (func (export "run") {lift_result}
                    (canon lift (core func $i "run") (memory $i "memory"))))"#
        ))
        .expect("the test component is valid WAT")
    }

    /// How `run` of a component failed (see [`run`]).
    fn fail(wasm: &[u8], limits: CallLimits) -> PluginError {
        run(wasm, limits).expect_err("the call fails")
    }

    /// Calls `run` of a component in a store as a plugin call's, with
    /// `limits` and a 1 MiB memory cap (more than the one page it starts
    /// with): what it returned, or how it failed, classified.
    fn run(wasm: &[u8], limits: CallLimits) -> Result<Vec<wasmtime::component::Val>, PluginError> {
        let engine = engine::get().expect("the wasm engine starts");
        let compiled = engine.first().expect("the wasm engine starts");
        let component = Component::new(&compiled.engine, wasm).expect("the test component compiles");
        let mut linker: Linker<State> = Linker::new(&compiled.engine);
        linker
            .root()
            .func_new("denied", |_, _, _, _| {
                Err(wasmtime::Error::new(crate::stubs::DeniedStub(format!("denied#call {}", crate::stubs::DENIED))))
            })
            .unwrap();
        let sandbox = Sandbox {
            plugin: "test".into(),
            grants: Grants::default(),
            agent_dir: std::env::temp_dir(),
            memory_bytes: MIB,
            now: Duration::ZERO,
            tokenizer: Tokenizer::O200kBase,
            view: View::Turn,
        };
        let state = crate::sandbox::state(&sandbox).expect("a sandbox without grants is made");
        let run = async move {
            let mut store = limited_store(&compiled.engine, state, limits);
            let instance = linker.instantiate_async(&mut store, &component).await.expect("it instantiates");
            let run = instance.get_func(&mut store, "run").expect("it exports run");
            let mut results = vec![wasmtime::component::Val::Bool(false); run.ty(&store).results().len()];
            match run.call_async(&mut store, &[], &mut results).await {
                Ok(()) => Ok(results),
                Err(e) => Err(classify(&e, &store, limits)),
            }
        };
        engine.run_all(vec![run], &mut || {}).remove(0).expect("the call ends")
    }

    /// An answer the host's trouble shaped is a host failure (status
    /// `failed`, so neither memo keeps it); a failure stays what it was.
    #[test]
    fn an_answer_shaped_by_the_hosts_trouble_is_not_used() {
        let troubled = unless_host_troubled(Ok(1), Some("Too many open files (os error 24)"));
        let Err(PluginError::Exhausted(why)) = troubled else { panic!("{troubled:?}") };
        assert!(why.contains("Too many open files") && why.contains("not used"), "{why}");
        let error = PluginError::Exhausted(why);
        assert_eq!((error.status(), error.code()), (PluginStatus::Failed, "plugin_host_exhausted"));
        assert_eq!(unless_host_troubled(Ok(1), None).unwrap(), 1);
        // A plugin that gave up or trapped on the refusal failed for it too.
        for gave_up in [PluginError::Returned("no SOUL.md".into()), PluginError::Trap("unreachable".into())] {
            assert!(matches!(unless_host_troubled::<u8>(Err(gave_up), Some("x")), Err(PluginError::Exhausted(_))));
        }
        // Its own limits are its own.
        let failed = unless_host_troubled::<u8>(Err(PluginError::StackOverflow), Some("x"));
        assert!(matches!(failed, Err(PluginError::StackOverflow)));
    }

    fn limits(deadline_ms: u64) -> CallLimits {
        CallLimits { deadline: Duration::from_millis(deadline_ms), max_transfer: MIB }
    }

    fn assert_failure(error: &PluginError, status: PluginStatus, code: &str, text: &str) {
        assert_eq!(error.status(), status, "{error:?}");
        assert_eq!(error.code(), code, "{error:?}");
        assert_eq!(error.to_string(), text, "{error:?}");
    }

    #[test]
    fn unreachable_is_a_panic() {
        let error = fail(&component("", "unreachable"), limits(1000));
        assert_eq!(error, PluginError::Panicked { stderr: None });
        assert_failure(&error, PluginStatus::Trapped, "plugin_trap", "trapped: the plugin panicked or aborted");
    }

    #[test]
    fn endless_recursion_is_a_stack_overflow() {
        let error = fail(&component("", "call $run"), limits(5000));
        assert_eq!(error, PluginError::StackOverflow);
        assert_failure(&error, PluginStatus::Trapped, "plugin_trap", "trapped: stack overflow");
    }

    #[test]
    fn a_busy_loop_is_the_cpu_deadline() {
        let error = fail(&component("", "(loop br 0)"), limits(20));
        assert_eq!(error, PluginError::Deadline(Duration::from_millis(20)));
        assert_failure(
            &error,
            PluginStatus::Timeout,
            "plugin_timeout",
            "ran past its CPU deadline of 20 ms and was stopped",
        );
    }

    /// The limiter refuses growing to 64 MiB and says so; the trap that
    /// follows is the memory cap's doing.
    #[test]
    fn a_refused_growth_is_the_memory_cap() {
        let body = "(if (i32.eq (memory.grow (i32.const 1023)) (i32.const -1)) (then unreachable))";
        let error = fail(&component("", body), limits(1000));
        assert_eq!(error, PluginError::Memory { limit: MIB, asked: 64 * MIB });
        assert_failure(
            &error,
            PluginStatus::MemoryLimit,
            "plugin_memory_limit",
            "hit its memory limit of 1 MiB (asked to grow to 64 MiB)",
        );
    }

    /// A 60,000-byte string returned under a 1,000-byte transfer cap: the
    /// hostcall fuel runs out before anything is copied.
    #[test]
    fn a_transfer_over_the_cap_is_the_transfer_error() {
        let error = fail(&component("string", "i32.const 0"), CallLimits { max_transfer: 1000, ..limits(1000) });
        assert_eq!(error, PluginError::Transfer { max: 1000 });
        assert_failure(
            &error,
            PluginStatus::Trapped,
            "plugin_trap",
            "trapped: passed the host more than 1000 bytes at once, more than its output caps allow; nothing was \
             copied",
        );
        // Under the cap the same string is copied: the cap decided.
        let copied = run(&component("string", "i32.const 0"), limits(1000)).expect("60,000 bytes pass a 1 MiB cap");
        assert!(matches!(&copied[..], [wasmtime::component::Val::String(s)] if s.len() == 60_000), "{copied:?}");
    }

    #[test]
    fn a_denied_import_is_the_denied_stub() {
        let error = fail(&component("", "call $denied"), limits(1000));
        let denied = format!("denied#call {}", crate::stubs::DENIED);
        assert!(matches!(&error, PluginError::Denied(text) if text.contains(&denied)), "{error:?}");
        assert_eq!((error.status(), error.code()), (PluginStatus::Trapped, "plugin_trap"));
        assert!(error.to_string().starts_with("trapped: ") && error.to_string().contains(&denied), "{error}");
    }

    /// Any other trap keeps wasmtime's words for it.
    #[test]
    fn another_trap_is_a_trap_in_wasmtimes_words() {
        let error = fail(&component("", "i32.const 0 i32.const 0 i32.div_u drop"), limits(1000));
        assert!(matches!(&error, PluginError::Trap(_)), "{error:?}");
        assert_failure(&error, PluginStatus::Trapped, "plugin_trap", "trapped: wasm trap: integer divide by zero");
    }
}
