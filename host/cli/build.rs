//! Links the executables with their relative relocations packed, and
//! `proem` with the code a build runs laid out together.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    pack_relative_relocations();
    order_hot_code();
}

/// Links the executables with their relative relocations packed (DT_RELR,
/// glibc 2.36+): the loader walks a ~30 KB bitmap instead of ~1.8 MB of
/// RELA entries at every start, and those pages are never mapped, which
/// took ~2.7 MB off a warm `proem build`'s peak RSS (docs/PERFORMANCE.md).
fn pack_relative_relocations() {
    let var = |name| std::env::var(name).unwrap_or_default();
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
fn order_hot_code() {
    let var = |name: &str| std::env::var(name).unwrap_or_default();
    println!("cargo:rerun-if-changed=proem.order");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    let rustflags = var("CARGO_ENCODED_RUSTFLAGS");
    let own_linker = !var("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_empty()
        || ["linker", "fuse-ld", "link-self-contained"].iter().any(|flag| rustflags.contains(flag));
    if var("TARGET") != "x86_64-unknown-linux-gnu" || own_linker {
        return;
    }
    let order = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("proem.order");
    if order.is_file() {
        println!("cargo:rustc-link-arg-bin=proem=-Wl,--symbol-ordering-file={}", order.display());
        println!("cargo:rustc-link-arg-bin=proem=-Wl,--no-warn-symbol-ordering");
    }
}
