//! `proem`: a warm `build` from the plugin answers kept on disk, with no
//! plugin runtime in the executable; every other case runs `proem-full`
//! (see `proem_cli`).

fn main() -> std::process::ExitCode {
    proem_cli::front()
}
