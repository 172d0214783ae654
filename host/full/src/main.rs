//! `proem-full`: every proem command, plugins run in wasmtime (see
//! `proem_host::cli`). `proem` hands it what it cannot answer itself.

fn main() -> std::process::ExitCode {
    proem_host::cli::full()
}
