//! Links the executables with their relative relocations packed.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    pack_relative_relocations();
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
