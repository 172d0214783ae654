//! Writing to the standard streams: everything proem prints goes through
//! here, written straight to descriptors 1 and 2 rather than through
//! `std::io::stdout()`, which reports success for a descriptor that is not
//! open for writing (EBADF), so a caller would get exit 0 and no prompt.
//!
//! - A stream left non-blocking by whoever opened it (a Node.js parent, a
//!   supervisor that reads lazily) is waited on (`poll`) when full: the
//!   reader is slow, not gone. A reader that never reads blocks proem, as a
//!   blocking pipe would; a signal still ends it.
//! - A write that fails otherwise (a closed pipe, a full disk, a file-size
//!   limit, a descriptor open read-only) is an error for stdout: the
//!   command fails with `cannot write the output to stdout: …` (exit 1).
//!   Stderr's failures are ignored: there is nowhere left to say them.

use std::io;

/// Which standard stream.
#[derive(Clone, Copy)]
enum Stream {
    Out,
    Err,
}

/// Writes all of `bytes` to stdout.
pub fn write_stdout(bytes: &[u8]) -> io::Result<()> {
    write_all(Stream::Out, bytes)
}

/// A command's output on stdout; when it cannot be written, says why on
/// stderr and gives the exit status of a command that failed (1).
pub fn print(bytes: &[u8]) -> Result<(), u8> {
    write_stdout(bytes).map_err(|e| {
        say(format_args!("proem: error: cannot write the output to stdout: {e}"));
        proem_core::error::ExitStatus::Failed.code()
    })
}

/// Writes all of `bytes` to stderr; a failure is ignored.
pub fn write_stderr(bytes: &[u8]) {
    let _ = write_all(Stream::Err, bytes);
}

/// One line on stderr (a newline added); a failure is ignored.
pub fn say(line: std::fmt::Arguments<'_>) {
    write_stderr(format!("{line}\n").as_bytes());
}

/// Stdout as an [`io::Write`], for code that writes as it goes (`plugin
/// dev`, `serve`'s first line): unbuffered, each write whole.
pub struct Stdout;

impl io::Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_stdout(buf).map(|()| buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        write_stdout(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn write_all(stream: Stream, mut bytes: &[u8]) -> io::Result<()> {
    let fd = match stream {
        Stream::Out => 1,
        Stream::Err => 2,
    };
    while !bytes.is_empty() {
        // SAFETY: write(2) reads at most `bytes.len()` bytes of `bytes`.
        let written = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
        match usize::try_from(written) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = bytes.get(n..).unwrap_or_default(),
            Err(_) => {
                let e = io::Error::last_os_error();
                match e.kind() {
                    io::ErrorKind::Interrupted => {}
                    io::ErrorKind::WouldBlock => {
                        let mut ready = libc::pollfd { fd, events: libc::POLLOUT, revents: 0 };
                        // SAFETY: poll reads and writes the one entry it is
                        // given; -1 waits as long as the reader takes, as a
                        // blocking write would.
                        unsafe { libc::poll(&mut ready, 1, -1) };
                    }
                    _ => return Err(e),
                }
            }
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn write_all(stream: Stream, bytes: &[u8]) -> io::Result<()> {
    use std::io::Write;
    match stream {
        Stream::Out => {
            let mut out = io::stdout().lock();
            out.write_all(bytes).and_then(|()| out.flush())
        }
        Stream::Err => io::stderr().lock().write_all(bytes),
    }
}

/// Ignores SIGXFSZ, so that a file-size limit (`ulimit -f`) makes a write
/// fail with EFBIG, an error proem reports (or, for a cache file, a write
/// it gives up), instead of ending the process with no word. Call it first
/// thing, before threads start.
pub fn ignore_file_size_signal() {
    #[cfg(target_os = "linux")]
    // SAFETY: setting one signal's disposition to "ignore".
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}
