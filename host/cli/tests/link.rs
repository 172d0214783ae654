//! How `proem` is linked (host/cli/build.rs), checked on the executable
//! itself: a static PIE where glibc's static archives are installed, with
//! the code a warm build runs laid out first by names it still defines.
//! Both only change how fast `proem` starts and how much of it is mapped
//! (docs/PERFORMANCE.md, round three), so both fail silently when they
//! break: these tests are what notices.

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;

const PROEM: &str = env!("CARGO_BIN_EXE_proem");

/// Whether build.rs links this build with rustup's lld, as it checks: the
/// x86-64 Linux GNU toolchain with no linker chosen through the environment.
fn linked_by_build_rs() -> bool {
    let own_linker = option_env!("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER")
        .is_some_and(|linker| !linker.is_empty())
        || option_env!("RUSTFLAGS").is_some_and(|flags| !flags.is_empty());
    cfg!(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu")) && !own_linker
}

/// Where `cc` finds `archive`, as build.rs asks.
fn installed(archive: &str) -> bool {
    let Ok(output) = Command::new("cc").arg(format!("-print-file-name={archive}")).output() else {
        return false;
    };
    let printed = String::from_utf8_lossy(&output.stdout);
    let path = Path::new(printed.trim());
    output.status.success() && path.is_absolute() && path.is_file()
}

/// The little of a 64-bit little-endian ELF file these tests read.
struct Elf {
    bytes: Vec<u8>,
}

const PT_INTERP: u32 = 3;
const ET_DYN: u16 = 3;
const SHT_SYMTAB: u32 = 2;

impl Elf {
    fn read(path: &str) -> Elf {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(bytes.get(..6), Some(&b"\x7fELF\x02\x01"[..]), "{path} is not a 64-bit little-endian ELF file");
        Elf { bytes }
    }

    fn slice(&self, at: u64, len: u64) -> &[u8] {
        let start = usize::try_from(at).expect("offset fits");
        let end = start.checked_add(usize::try_from(len).expect("length fits")).expect("no overflow");
        self.bytes.get(start..end).unwrap_or_else(|| panic!("ELF range {start}..{end} is outside the file"))
    }

    fn u16(&self, at: u64) -> u16 {
        u16::from_le_bytes(self.slice(at, 2).try_into().expect("two bytes"))
    }

    fn u32(&self, at: u64) -> u32 {
        u32::from_le_bytes(self.slice(at, 4).try_into().expect("four bytes"))
    }

    fn u64(&self, at: u64) -> u64 {
        u64::from_le_bytes(self.slice(at, 8).try_into().expect("eight bytes"))
    }

    /// (offset, entry size, count) of the program or section header table.
    fn table(&self, offset_at: u64, size_at: u64, count_at: u64) -> impl Iterator<Item = u64> + '_ {
        let (offset, size, count) = (self.u64(offset_at), u64::from(self.u16(size_at)), u64::from(self.u16(count_at)));
        (0..count).map(move |index| offset + index * size)
    }

    fn is_pie(&self) -> bool {
        self.u16(0x10) == ET_DYN
    }

    fn asks_for_a_loader(&self) -> bool {
        self.table(0x20, 0x36, 0x38).any(|header| self.u32(header) == PT_INTERP)
    }

    /// The names of the symbols the file defines, from its symbol table.
    fn defined_symbols(&self) -> HashSet<String> {
        let mut names = HashSet::new();
        let sections: Vec<u64> = self.table(0x28, 0x3a, 0x3c).collect();
        for &section in &sections {
            if self.u32(section + 4) != SHT_SYMTAB {
                continue;
            }
            let (offset, size, entry) = (self.u64(section + 0x18), self.u64(section + 0x20), self.u64(section + 0x38));
            let strings = sections[usize::try_from(self.u32(section + 0x28)).expect("index fits")];
            let strings = self.slice(self.u64(strings + 0x18), self.u64(strings + 0x20));
            assert!(entry >= 24, "symbol entries of {entry} bytes");
            for symbol in (offset..offset + size).step_by(usize::try_from(entry).expect("fits")) {
                let defined = self.u16(symbol + 6) != 0;
                let name = usize::try_from(self.u32(symbol)).expect("fits");
                let Some(rest) = strings.get(name..) else { continue };
                let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                if defined && end > 0 {
                    names.insert(String::from_utf8_lossy(&rest[..end]).into_owned());
                }
            }
        }
        names
    }
}

#[test]
fn the_front_is_a_static_pie_where_glibcs_static_archives_are_installed() {
    if !linked_by_build_rs() || option_env!("PROEM_LINK_DYNAMIC").is_some_and(|v| !v.is_empty()) {
        eprintln!("skipped: build.rs links statically only with rustup's x86-64 Linux GNU toolchain and linker");
        return;
    }
    if !["libc.a", "libm.a", "libgcc_eh.a", "libgcc.a"].iter().all(|archive| installed(archive)) {
        assert!(
            std::env::var_os("CI").is_none(),
            "glibc's static archives are missing: Debian's libc6-dev (which .ci/run's machine has) ships them"
        );
        eprintln!("skipped: glibc's static archives are not installed here, so proem is linked dynamically");
        return;
    }
    let proem = Elf::read(PROEM);
    assert!(
        !proem.asks_for_a_loader(),
        "{PROEM} asks for a dynamic loader although glibc's static archives are installed: host/cli/build.rs's static link was not made"
    );
    assert!(proem.is_pie(), "{PROEM} is static but no longer position-independent (loaded at a fixed address)");
    // A static glibc still loads its name-service modules (libnss_*.so) from
    // the system when asked for a user or a host name, and a module of
    // another glibc version can crash it: the front must ask for neither
    // (proem-full, which resolves `serve`'s host names, stays dynamic).
    let defined = proem.defined_symbols();
    let needs_nss: Vec<&str> = [
        "getaddrinfo",
        "gethostbyname",
        "gethostbyname2",
        "getpwuid_r",
        "getpwnam_r",
        "getpwuid",
        "getpwnam",
        "getgrgid_r",
        "getgrnam_r",
    ]
    .into_iter()
    .filter(|name| defined.contains(*name))
    .collect();
    assert!(
        needs_nss.is_empty(),
        "the static {PROEM} links {needs_nss:?}, which load glibc's shared name-service modules at run time: \
         keep what calls them (host names, the user database) out of proem-cli, or link proem dynamically"
    );
    // And it runs: the C library's start-up, without a loader, works.
    let version = Command::new(PROEM).arg("--version").output().expect("proem runs");
    assert!(version.status.success(), "{}", String::from_utf8_lossy(&version.stderr));
    assert!(String::from_utf8_lossy(&version.stdout).starts_with("proem "), "{version:?}");
}

/// A name proem.order lists that `proem` does not define is code a build
/// runs that lld leaves where it was, so each costs up to 64 KB of peak RSS
/// (the kernel maps code around each page touched), unless it is gone
/// because it is now inlined into its callers (then its code moves with
/// them). Names change when a hot function is renamed or its generic
/// arguments change (proem-core and proem-cli are one codegen unit each,
/// so an edit does not rename their local functions); an edit moves a
/// percent or two of them in or out of line. Over 3%,
/// benches/order/regen.sh writes the file again.
#[test]
fn the_hot_code_order_names_functions_the_front_still_defines() {
    if !linked_by_build_rs() {
        eprintln!("skipped: build.rs orders the code only with rustup's x86-64 Linux GNU toolchain and linker");
        return;
    }
    let order = include_str!("../proem.order");
    // The C library's names are defined only when it is linked statically.
    let rust: Vec<&str> = order.lines().filter(|name| name.starts_with("_ZN") || name.starts_with("_R")).collect();
    assert!(rust.len() >= 500, "proem.order names {} Rust functions: it is not a warm build's", rust.len());
    let defined = Elf::read(PROEM).defined_symbols();
    let missing: Vec<&&str> = rust.iter().filter(|name| !defined.contains(**name)).collect();
    assert!(
        missing.len() * 100 <= rust.len() * 3,
        "{} of the {} Rust functions host/cli/proem.order lists are not in {PROEM}, so lld cannot lay them out with \
         the rest: run benches/order/regen.sh (needs valgrind) and commit the file. (Built with `-p proem-cli` alone, \
         the dependencies get other features and other names: the README's commands build the workspace.) \
         The first: {:?}",
        missing.len(),
        rust.len(),
        &missing[..missing.len().min(5)]
    );
}
