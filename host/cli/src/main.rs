//! `proem`: a warm `build` from the plugin answers kept on disk, with no
//! plugin runtime in the executable; every other case runs `proem-full`
//! (see `proem_cli`).
//!
//! On Linux the C library calls [`main`] directly (`no_main`), without Rust's
//! own start-up, which reads `/proc/self/maps` to find the main thread's
//! stack and sets up a stack-overflow handler on a signal stack of its own:
//! ~15 system calls and 60-100 µs of a ~2 ms warm build (docs/PERFORMANCE.md,
//! round three, tenth session). What that start-up does that a command
//! line needs, `main` does: standard streams that were closed are opened on
//! /dev/null (so no file proem opens becomes its stdout), SIGPIPE is
//! ignored (a closed pipe is an error on write), a panic exits with 101,
//! and a stack overflow prints one line and aborts.

#![cfg_attr(all(target_os = "linux", not(test)), no_main)]

#[cfg(any(not(target_os = "linux"), test))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(proem_cli::front())
}

#[cfg(all(target_os = "linux", not(test)))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    standard_streams_open();
    say_so_on_stack_overflow();
    // SAFETY: setting SIGPIPE's disposition to "ignore" before any thread
    // starts, as Rust's own start-up does.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    // Everything is printed unbuffered (`proem_cli::output`), so there is
    // no stdout buffer left to flush at the end.
    match std::panic::catch_unwind(proem_cli::front) {
        Ok(status) => std::ffi::c_int::from(status),
        // The panic hook has printed the message; 101 as Rust's start-up.
        Err(_) => 101,
    }
}

/// The signal stack [`say_so_on_stack_overflow`]'s handler runs on (in
/// .bss: no page of it is touched unless the handler runs).
#[cfg(all(target_os = "linux", not(test)))]
static mut SIGNAL_STACK: [u8; SIGNAL_STACK_BYTES] = [0; SIGNAL_STACK_BYTES];

#[cfg(all(target_os = "linux", not(test)))]
const SIGNAL_STACK_BYTES: usize = 16 * 1024;

/// A stack overflow (SIGSEGV or SIGBUS: safe Rust has no other cause)
/// prints one line and aborts, as Rust's start-up would have arranged
/// (its own handler needs the stack's bounds, read from /proc/self/maps:
/// the cost this start-up avoids), so `proem` and `proem-full` end alike.
#[cfg(all(target_os = "linux", not(test)))]
fn say_so_on_stack_overflow() {
    extern "C" fn on_fault(_: std::ffi::c_int) {
        const LINE: &[u8] = b"proem: error: the process ran out of stack (raise `ulimit -s`), aborting\n";
        // SAFETY: write(2) and abort(3) are async-signal-safe.
        unsafe {
            libc::write(2, LINE.as_ptr().cast(), LINE.len());
            libc::abort();
        }
    }
    // SAFETY: the signal stack is a static only this handler uses; the
    // handler runs on it, calls only async-signal-safe functions and never
    // returns.
    unsafe {
        let stack = libc::stack_t { ss_sp: (&raw mut SIGNAL_STACK).cast(), ss_flags: 0, ss_size: SIGNAL_STACK_BYTES };
        if libc::sigaltstack(&stack, std::ptr::null_mut()) != 0 {
            return;
        }
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_fault as extern "C" fn(std::ffi::c_int) as usize;
        action.sa_flags = libc::SA_ONSTACK;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(libc::SIGSEGV, &action, std::ptr::null_mut());
        libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
    }
}

/// Opens /dev/null on each of the standard descriptors (0, 1, 2) that is
/// closed, as Rust's start-up does; aborts when it cannot.
#[cfg(target_os = "linux")]
fn standard_streams_open() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd { fd, events: 0, revents: 0 });
    // SAFETY: poll reads and writes the three entries of `fds`, whose length
    // it is given; a zero timeout does not block.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    for entry in &fds {
        // SAFETY: fcntl(F_GETFD) only asks whether the descriptor is open.
        let closed = match polled {
            -1 => (unsafe { libc::fcntl(entry.fd, libc::F_GETFD) }) == -1,
            _ => entry.revents & libc::POLLNVAL != 0,
        };
        // SAFETY: open with a constant NUL-terminated path; the lowest free
        // descriptor is the closed one (those below it are open).
        if closed && unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) } == -1 {
            std::process::abort();
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    /// In a child process (fork: this test's own streams stay as they
    /// are), each combination of closed standard descriptors is opened on
    /// /dev/null by [`super::standard_streams_open`], and the next file
    /// opened gets descriptor 3.
    #[test]
    fn every_closed_standard_descriptor_is_opened_on_dev_null() {
        for closed in 1u8..8 {
            // SAFETY: the child calls only async-signal-safe functions
            // (close, poll, fcntl, open, fstat, _exit) before it exits.
            let pid = unsafe { libc::fork() };
            assert!(pid >= 0, "fork failed");
            if pid == 0 {
                let ok = unsafe {
                    for fd in 0..3 {
                        if closed & (1 << fd) != 0 {
                            libc::close(fd);
                        }
                    }
                    super::standard_streams_open();
                    let null = {
                        let mut st: libc::stat = std::mem::zeroed();
                        libc::stat(c"/dev/null".as_ptr(), &mut st);
                        st.st_rdev
                    };
                    let on_null = |fd| {
                        let mut st: libc::stat = std::mem::zeroed();
                        libc::fstat(fd, &mut st) == 0
                            && st.st_mode & libc::S_IFMT == libc::S_IFCHR
                            && st.st_rdev == null
                    };
                    let reopened = (0..3).all(|fd| closed & (1 << fd) == 0 || on_null(fd));
                    let next = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
                    reopened && next == 3
                };
                unsafe { libc::_exit(if ok { 0 } else { 1 }) };
            }
            let mut status = 0;
            // SAFETY: waits for the child just forked.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            assert!(
                libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
                "closed descriptors {closed:03b}: not all opened on /dev/null"
            );
        }
    }
}
