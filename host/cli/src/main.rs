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
//! and stdout is flushed before the exit. A stack overflow ends the process
//! with SIGSEGV, without Rust's one-line message.

#![cfg_attr(all(target_os = "linux", not(test)), no_main)]

#[cfg(any(not(target_os = "linux"), test))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(proem_cli::front())
}

#[cfg(all(target_os = "linux", not(test)))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    use std::io::Write;
    standard_streams_open();
    // SAFETY: setting SIGPIPE's disposition to "ignore" before any thread
    // starts, as Rust's own start-up does.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let status = match std::panic::catch_unwind(proem_cli::front) {
        Ok(status) => std::ffi::c_int::from(status),
        // The panic hook has printed the message; 101 as Rust's start-up.
        Err(_) => 101,
    };
    if std::io::stdout().flush().is_err() && status == 0 {
        return 1;
    }
    status
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
