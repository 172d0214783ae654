//! Links the executables with their relative relocations packed, and
//! `proem` statically with the code a build runs laid out together.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    pack_relative_relocations();
    let rustup_lld = rustup_lld();
    if rustup_lld {
        link_front_statically();
    }
    order_hot_code(rustup_lld);
}

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_default()
}

/// Whether `proem` is linked for this very machine by rustup's x86-64 Linux
/// toolchain, which links through `cc` with its own lld, with no linker
/// chosen through the environment: the only link the two steps below know.
fn rustup_lld() -> bool {
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    let own_linker = !var("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_empty()
        || ["linker", "fuse-ld", "link-self-contained", "crt-static"].iter().any(|flag| rustflags.contains(flag));
    var("TARGET") == "x86_64-unknown-linux-gnu" && var("HOST") == var("TARGET") && !own_linker
}

/// The libraries Rust's standard library asks the linker for on glibc
/// (`-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc`), each with the static
/// archives that stand in for it.
const STAND_INS: [(&str, &[&str]); 7] = [
    ("gcc_s", &["libgcc_eh.a", "libgcc.a"]),
    ("util", &["libutil.a"]),
    ("rt", &["librt.a"]),
    ("pthread", &["libpthread.a"]),
    ("m", &["libm.a"]),
    ("dl", &["libdl.a"]),
    ("c", &["libc.a"]),
];

/// Links `proem` as a static PIE (still loaded at a random address), as
/// `-C target-feature=+crt-static` would: no dynamic loader, no shared C
/// library to map and relocate, and the C library's code laid out with the
/// rest by `proem.order`. A warm build: 2.2 → 1.9 ms of CPU, and ~1.3 MB
/// less mapped (docs/PERFORMANCE.md, tenth session). `crt-static` itself
/// cannot be asked for one executable (RUSTFLAGS would reach the proc
/// macros, which cannot be static, unless `--target` is given), so the
/// same link is made from link arguments: `-static-pie`, and a folder of
/// linker scripts searched first, in which each library the standard
/// library asks for (`-lc`, `-lgcc_s`, …) names glibc's and libgcc's static
/// archives. Only `proem`: its tests and `proem-full` (which resolves host
/// names for `serve`, as a static glibc cannot without its shared
/// libraries) stay dynamic. When an
/// archive is not installed (glibc's static libraries are in Debian's
/// libc6-dev, Fedora's glibc-static), `proem` is linked dynamically, as
/// before, and the build says so once.
fn link_front_statically() {
    println!("cargo:rerun-if-env-changed=PROEM_LINK_DYNAMIC");
    if !var("PROEM_LINK_DYNAMIC").is_empty() {
        return;
    }
    let mut scripts = Vec::new();
    for (library, archives) in STAND_INS {
        let mut paths = Vec::new();
        for archive in archives {
            match installed_archive(archive) {
                Some(path) => paths.push(path.display().to_string()),
                None => {
                    println!(
                        "cargo:warning=proem is linked dynamically: {archive} is not installed \
                         (glibc's and gcc's static libraries; Debian: libc6-dev, Fedora: \
                         glibc-static); a static proem starts ~0.3 ms sooner"
                    );
                    return;
                }
            }
        }
        // A path with a space or a parenthesis would need quoting that
        // linker scripts spell differently; such a system links dynamically.
        if paths.iter().any(|path| path.contains([' ', '(', ')', '"'])) {
            return;
        }
        scripts.push((format!("lib{library}.a"), format!("INPUT({})\n", paths.join(" "))));
    }
    let folder = PathBuf::from(var("OUT_DIR")).join("static-libs");
    if std::fs::create_dir_all(&folder).is_err() {
        return;
    }
    for (name, script) in &scripts {
        if std::fs::write(folder.join(name), script).is_err() {
            return;
        }
    }
    println!("cargo:rustc-link-arg-bin=proem=-L{}", folder.display());
    println!("cargo:rustc-link-arg-bin=proem=-static-pie");
}

/// Where `cc` finds `archive`, if it is installed (`cc` answers with the
/// bare name when it is not).
fn installed_archive(archive: &str) -> Option<PathBuf> {
    let output = Command::new("cc").arg(format!("-print-file-name={archive}")).output().ok()?;
    let printed = String::from_utf8(output.stdout).ok()?;
    let path = Path::new(printed.trim());
    if !output.status.success() || !path.is_absolute() || !path.is_file() {
        return None;
    }
    path.canonicalize().ok()
}

/// Links the executables with their relative relocations packed (DT_RELR,
/// glibc 2.36+): the loader walks a ~30 KB bitmap instead of ~1.8 MB of
/// RELA entries at every start, and those pages are never mapped, which
/// took ~2.7 MB off a warm `proem build`'s peak RSS (docs/PERFORMANCE.md).
fn pack_relative_relocations() {
    if var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu" {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Links `proem` with the functions a warm build runs first and together
/// (`proem.order`, written by benches/order/regen.sh), so that the pages of
/// code a build touches are ~1.5 MB together instead of spread over all
/// 3.4 MB of text: the kernel maps code 64 KB around each page touched, so
/// a build spread over the whole text maps it all (peak RSS 6.3 → 4.3-4.8
/// MiB, docs/PERFORMANCE.md). Only for rustup's x86-64 Linux toolchain, which
/// links with its own lld (GNU ld has no such option), and not when a
/// linker is chosen through the environment. A name the file lists that the
/// binary lacks (the file older than the code) is skipped.
fn order_hot_code(rustup_lld: bool) {
    println!("cargo:rerun-if-changed=proem.order");
    if !rustup_lld {
        return;
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("proem.order");
    if order.is_file() {
        println!("cargo:rustc-link-arg-bin=proem=-Wl,--symbol-ordering-file={}", order.display());
        println!("cargo:rustc-link-arg-bin=proem=-Wl,--no-warn-symbol-ordering");
    }
}
