//! Compiling a component: in a helper process with its own memory and CPU
//! limits where the executable offers one, else in this process.
//!
//! A compile cannot be stopped once it has started, and what it costs is
//! not a function of the binary's size that an estimate can follow
//! everywhere (adapters and trampolines wasmtime generates, nesting,
//! quadratic passes over one function's locals). So `proem` and
//! `proem-full` compile in a child of themselves ([`use_helper`]): the child
//! limits its own data segment ([`Limits::memory_mib`]) and CPU time
//! ([`Limits::cpu_seconds`]) before reading a byte, compiles with the same
//! engine configuration, and writes the compiled code to its standard
//! output; the parent also kills it past a wall-clock limit. Whatever the
//! plugin, the compile ends within those limits or fails naming them, and
//! the process that asked goes on. (Open: compiles run at once, a child per
//! plugin being loaded, and a refusal is not remembered between
//! processes; docs/SECURITY.md, the compile helper's row.) The library (Rust, Python, Node)
//! compiles in its own process, bounded by the estimate of
//! [`crate::compile_cost`] alone.

use crate::engine::{Compiled, Compiler};
use proem_core::plugin::call::PluginError;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use wasmtime::component::Component;

/// The argument that makes an executable that called [`use_helper`] act as
/// the compile helper ([`helper_main`]).
pub const HELPER_ARG: &str = "__compile-plugin";

/// The most compiled code the parent reads back: the parent holds it and
/// wasmtime's copy of it at once (the largest real plugin's is 50 MB; a
/// red-team chain of conversions made 623 MB from 12 MB of wasm, and
/// memory images of unused modules 256 MB from 671 bytes).
const MAX_OUTPUT_BYTES: u64 = 128 << 20;

/// The most wasm the helper reads: the plugin size cap.
const MAX_INPUT_BYTES: u64 = proem_core::plugin::binary::MAX_PLUGIN_BYTES;

static HELPER: OnceLock<PathBuf> = OnceLock::new();

/// Compiles in a child process running `exe HELPER_ARG …` from now on:
/// for an executable whose `main` hands that argument to [`helper_main`].
pub fn use_helper(exe: PathBuf) {
    let _ = HELPER.set(exe);
}

/// This executable, as a helper: on Linux `/proc/self/exe`, which runs the
/// very image of this process even after the file was replaced or removed
/// (an upgrade under a running `proem serve`; a new binary's compiled code
/// would not match this engine); elsewhere its path.
pub fn this_executable() -> Option<PathBuf> {
    if cfg!(target_os = "linux") {
        return Some(PathBuf::from("/proc/self/exe"));
    }
    std::env::current_exe().ok()
}

/// What a compile in the helper may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The helper's data segment (heap and private mappings), in MiB:
    /// `PROEM_COMPILE_MAX_MIB`, 64..=65536, default 2048 (the largest real
    /// plugins peak at ~460 MiB).
    pub memory_mib: u64,
    /// The helper's CPU time, in seconds, all threads together:
    /// `PROEM_COMPILE_MAX_CPU_S`, 1..=3600, default 120 (the largest real
    /// plugins take ~3-6 s). The wall-clock limit is twice this plus 10 s.
    pub cpu_seconds: u64,
}

impl Limits {
    /// The defaults.
    pub const DEFAULT: Limits = Limits { memory_mib: 2048, cpu_seconds: 120 };

    /// The limits this process's environment sets, or why one is not a
    /// number in its range (naming the variable).
    pub fn from_env() -> Result<Limits, String> {
        Limits::from_lookup(|name| std::env::var(name).ok())
    }

    /// The limits the variables `lookup` gives set (see [`Limits::from_env`]).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Limits, String> {
        let read = |name: &str, default: u64, range: std::ops::RangeInclusive<u64>| -> Result<u64, String> {
            match lookup(name) {
                None => Ok(default),
                Some(text) => match text.trim().parse::<u64>() {
                    Ok(n) if range.contains(&n) => Ok(n),
                    _ => Err(format!(
                        "{name}={:?} is not a whole number from {} to {}",
                        proem_core::plugin::hooks::label(&text, 40),
                        range.start(),
                        range.end()
                    )),
                },
            }
        };
        Ok(Limits {
            memory_mib: read("PROEM_COMPILE_MAX_MIB", Limits::DEFAULT.memory_mib, 64..=65536)?,
            cpu_seconds: read("PROEM_COMPILE_MAX_CPU_S", Limits::DEFAULT.cpu_seconds, 1..=3600)?,
        })
    }

    fn wall(&self) -> Duration {
        Duration::from_secs(self.cpu_seconds.saturating_mul(2).saturating_add(10))
    }
}

/// Compiles `wasm` for `compiled`'s engine: in the helper when there is
/// one, else here.
pub fn compile(compiled: &Compiled, wasm: &[u8]) -> Result<Component, PluginError> {
    match HELPER.get() {
        Some(exe) => in_helper(exe, compiled, wasm, Limits::from_env().map_err(PluginError::Host)?, MAX_OUTPUT_BYTES),
        None => in_this_process(compiled, wasm),
    }
}

fn in_this_process(compiled: &Compiled, wasm: &[u8]) -> Result<Component, PluginError> {
    Component::new(&compiled.engine, wasm).map_err(|e| cannot_compile(&error_chain(&e)))
}

fn cannot_compile(why: &str) -> PluginError {
    PluginError::Compile(format!("cannot compile: {why}"))
}

fn in_helper(
    exe: &std::path::Path,
    compiled: &Compiled,
    wasm: &[u8],
    limits: Limits,
    max_output: u64,
) -> Result<Component, PluginError> {
    use std::process::{Command, Stdio};
    let child = Command::new(exe)
        .arg(HELPER_ARG)
        .arg(compiled.compiler.name())
        .arg(limits.memory_mib.to_string())
        .arg(limits.cpu_seconds.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) => {
            // No helper to run (no /proc, a sandbox forbidding exec): the
            // compile goes on here, bounded by the estimate alone, and says so.
            tracing::warn!("cannot start the compile helper {} ({e}); compiling in this process", exe.display());
            return in_this_process(compiled, wasm);
        }
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(PluginError::Host("the compile helper has no pipes".into()));
    };
    let pid = child.id();
    let started = Instant::now();
    let (done, finished) = std::sync::mpsc::channel::<()>();
    let (output, message, killed) = std::thread::scope(|scope| {
        // The wasm in, the message out, and a watchdog past the wall limit:
        // each on its own thread, so no pipe can fill and stall the others.
        scope.spawn(move || {
            let _ = stdin.write_all(wasm);
        });
        let message = scope.spawn(move || read_capped(stderr, 64 << 10));
        // The child is not reaped before the scope ends (the parent waits
        // below), so its pid is still its own when killed in here.
        let kill = move || {
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        };
        let watchdog = scope.spawn(move || {
            let timed_out =
                matches!(finished.recv_timeout(limits.wall()), Err(std::sync::mpsc::RecvTimeoutError::Timeout));
            if timed_out {
                kill();
            }
            timed_out
        });
        let output = read_capped(stdout, max_output);
        if output.len() as u64 > max_output {
            // It would block writing the rest, with its standard error open.
            kill();
        }
        let message = message.join().unwrap_or_default();
        let _ = done.send(());
        let killed = watchdog.join().unwrap_or(false);
        (output, message, killed)
    });
    let status = child.wait().map_err(|e| PluginError::Host(format!("the compile helper: {e}")))?;
    tracing::debug!(elapsed_ms = started.elapsed().as_millis() as u64, ?status, "compile helper ended");
    // Its first line, without the backtrace a compiler error may carry.
    let message = String::from_utf8_lossy(&message);
    let message = message.lines().next().unwrap_or_default();
    let message = proem_core::plugin::hooks::label(message.split(" Stack backtrace:").next().unwrap_or_default(), 400);
    if killed {
        return Err(over(format!(
            "compiling it took longer than {} s (PROEM_COMPILE_MAX_CPU_S × 2 + 10)",
            limits.wall().as_secs()
        )));
    }
    if output.len() as u64 > max_output {
        return Err(over(format!("its compiled code is over {} MiB", max_output >> 20)));
    }
    if !status.success() {
        return Err(match status_kind(&status) {
            Ended::Refused => cannot_compile(&message),
            Ended::Cpu => {
                over(format!("compiling it took more than {} s of CPU (PROEM_COMPILE_MAX_CPU_S)", limits.cpu_seconds))
            }
            Ended::Memory if message.contains("overflowed its stack") => {
                over("compiling it overflowed the compiler's stack (code nested too deep)".into())
            }
            Ended::Memory => over(format!(
                "compiling it needed more than {} MiB of memory (PROEM_COMPILE_MAX_MIB)",
                limits.memory_mib
            )),
            Ended::Other => PluginError::Host(format!("the compile helper failed ({status}): {message}")),
        });
    }
    // SAFETY: the bytes are what `Engine::precompile_component` wrote in a
    // child running this executable, with this compiler's configuration
    // (`engine::config`), through a pipe only that child holds; wasmtime
    // checks their header against this engine (its version, compiler
    // settings and features) and refuses anything else.
    unsafe { Component::deserialize(&compiled.engine, &output) }
        .map_err(|e| PluginError::Host(format!("the compile helper's output: {}", error_chain(&e))))
}

fn over(why: String) -> PluginError {
    PluginError::Refused(format!(
        "{why}: a plugin's compile must end within proem's limits (docs/SECURITY.md, \"Bad binaries\"); \
         raise them only for a plugin you trust"
    ))
}

/// How the helper ended, when not well.
enum Ended {
    /// It said why the compiler refused the code (exit code 2).
    Refused,
    /// Its CPU limit (SIGXCPU, or SIGKILL at the hard limit).
    Cpu,
    /// Its memory limit: an allocation failed (Rust aborts: SIGABRT).
    Memory,
    Other,
}

fn status_kind(status: &std::process::ExitStatus) -> Ended {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(2), _) => Ended::Refused,
        (_, Some(signal)) if signal == rustix::process::Signal::XCPU.as_raw() => Ended::Cpu,
        (_, Some(signal)) if signal == rustix::process::Signal::KILL.as_raw() => Ended::Cpu,
        (_, Some(signal)) if signal == rustix::process::Signal::ABORT.as_raw() => Ended::Memory,
        _ => Ended::Other,
    }
}

/// Up to `cap` + 1 bytes of `from` (one more than the cap says "over").
fn read_capped(from: impl Read, cap: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let _ = from.take(cap.saturating_add(1)).read_to_end(&mut out);
    out
}

/// The helper: `exe HELPER_ARG COMPILER MEMORY_MIB CPU_SECONDS`, the wasm
/// on standard input, the compiled code on standard output. Limits itself
/// first. Exit 0: compiled; 2: the compiler refused the code (why, on
/// standard error); 3: a bad invocation.
pub fn helper_main(args: &[String]) -> i32 {
    let parsed = match args {
        [compiler, mib, cpu] => Compiler::parse(compiler).zip(mib.parse::<u64>().ok()).zip(cpu.parse::<u64>().ok()),
        _ => None,
    };
    let Some(((compiler, mib), cpu)) = parsed else {
        eprintln!("usage: {HELPER_ARG} winch|cranelift MEMORY_MIB CPU_SECONDS (proem's compile helper)");
        return 3;
    };
    // Ends with the process that asked (killed or stopped by a signal, it
    // cannot wait for the result).
    #[cfg(target_os = "linux")]
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    use rustix::process::{setrlimit, Resource, Rlimit};
    let memory = mib.saturating_mul(1 << 20);
    let limited = setrlimit(Resource::Data, Rlimit { current: Some(memory), maximum: Some(memory) })
        .and_then(|()| setrlimit(Resource::Cpu, Rlimit { current: Some(cpu), maximum: Some(cpu.saturating_add(1)) }));
    if let Err(e) = limited {
        eprintln!("cannot limit the compile helper: {e}");
        return 3;
    }
    let mut wasm = Vec::new();
    if std::io::stdin().lock().take(MAX_INPUT_BYTES).read_to_end(&mut wasm).is_err() {
        return 3;
    }
    let compiled =
        wasmtime::Engine::new(&crate::engine::config(compiler)).and_then(|engine| engine.precompile_component(&wasm));
    match compiled {
        Ok(code) => match std::io::stdout().lock().write_all(&code) {
            Ok(()) => 0,
            Err(_) => 3,
        },
        Err(e) => {
            eprintln!("{}", error_chain(&e));
            2
        }
    }
}

/// An error and its causes on one line.
pub fn error_chain(e: &wasmtime::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    proem_core::text::one_line(&parts.join(": "), 2000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn limits_come_from_the_environment_within_their_ranges() {
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            Limits::from_lookup(move |name| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string()))
        };
        assert_eq!(with(&[]), Ok(Limits::DEFAULT));
        assert_eq!(
            with(&[("PROEM_COMPILE_MAX_MIB", " 64 "), ("PROEM_COMPILE_MAX_CPU_S", "3600")]),
            Ok(Limits { memory_mib: 64, cpu_seconds: 3600 })
        );
        for (name, bad) in [
            ("PROEM_COMPILE_MAX_MIB", "63"),
            ("PROEM_COMPILE_MAX_MIB", "65537"),
            ("PROEM_COMPILE_MAX_MIB", "18446744073709551616"),
            ("PROEM_COMPILE_MAX_CPU_S", "0"),
            ("PROEM_COMPILE_MAX_CPU_S", "-1"),
            ("PROEM_COMPILE_MAX_CPU_S", "1e3"),
            ("PROEM_COMPILE_MAX_CPU_S", "\u{1b}[31m"),
        ] {
            let pairs: &'static [(&'static str, &'static str)] = Box::leak(Box::new([(name, bad)]));
            let err = with(pairs).unwrap_err();
            assert!(err.starts_with(name) && err.contains("whole number"), "{err}");
            assert!(!err.contains('\u{1b}'), "{err:?}");
        }
    }

    /// No helper to start: the compile happens here (with a warning).
    #[test]
    fn a_helper_that_cannot_start_leaves_the_compile_to_this_process() {
        let compiled = crate::engine::get().unwrap().first().unwrap();
        let wasm = std::fs::read(std::path::Path::new(crate::GUEST_DIR).join("gpt5_overlay.wasm")).unwrap();
        let missing = std::path::Path::new("/nonexistent/proem-full");
        let component = in_helper(missing, compiled, &wasm, Limits::DEFAULT, MAX_OUTPUT_BYTES).unwrap();
        assert!(component.component_type().exports(&compiled.engine).count() > 0);
    }

    /// A helper that misbehaves (never ends, ends with nothing, writes what
    /// is not compiled code, is killed) fails the compile with an error
    /// naming why; the caller goes on.
    #[test]
    fn a_helper_that_misbehaves_fails_the_compile_and_nothing_else() {
        let compiled = crate::engine::get().unwrap().first().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let script = |name: &str, body: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o700)).unwrap();
            path
        };
        let wasm = b"\0asm\x0d\0\x01\0";
        let limits = Limits { memory_mib: 64, cpu_seconds: 1 };
        let run =
            |name: &str, body: &str| in_helper(&script(name, body), compiled, wasm, limits, 1 << 20).err().unwrap();
        let garbage = run("garbage", "cat > /dev/null; echo not compiled code");
        assert!(matches!(&garbage, PluginError::Host(m) if m.contains("the compile helper's output")), "{garbage:?}");
        let refused = run("refused", "cat > /dev/null; echo 'bad code' >&2; echo 'Stack backtrace: x' >&2; exit 2");
        assert_eq!(refused, PluginError::Compile("cannot compile: bad code".into()));
        let aborted = run("aborted", "cat > /dev/null; kill -ABRT $$");
        assert!(matches!(&aborted, PluginError::Refused(m) if m.contains("more than 64 MiB of memory")), "{aborted:?}");
        // One that writes more than the parent reads (and would block there).
        let flood = run("flood", "cat > /dev/null; exec cat /dev/zero");
        assert!(matches!(&flood, PluginError::Refused(m) if m.contains("compiled code is over 1 MiB")), "{flood:?}");
        let cpu = run("cpu", "cat > /dev/null; kill -XCPU $$");
        assert!(matches!(&cpu, PluginError::Refused(m) if m.contains("more than 1 s of CPU")), "{cpu:?}");
        // One that sleeps past the wall-clock limit (2 × 1 s + 10 s) is killed.
        let started = Instant::now();
        let slept = run("sleeps", "exec sleep 600");
        assert!(matches!(&slept, PluginError::Refused(m) if m.contains("longer than 12 s")), "{slept:?}");
        assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
    }
}
