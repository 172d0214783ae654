//! `proem`: a warm `build` from the plugin answers kept on disk, without
//! wasmtime in the executable; every other case runs `proem-full` (see
//! `proem_host::cli`).

fn main() -> std::process::ExitCode {
    proem_host::cli::front()
}
