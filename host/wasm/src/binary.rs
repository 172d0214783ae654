//! Checks on a plugin binary before anything is compiled: is it wasm, is it a
//! component, and which plugin API version was it built for.

use crate::wit;

/// The custom section the SDK stamps with the API version (`0.1.0`).
pub const API_VERSION_SECTION: &str = "proem:api-version";

/// Import name prefixes the host's linker can satisfy: proem's own
/// interfaces and the WASI 0.2 interfaces wasmtime-wasi and proem define
/// (sockets, the environment, exit and the terminal denied by policy), and
/// the ones linked as denied stubs ([`crate::stubs::STUBBED`]).
const OFFERED_IMPORTS: &[&str] = &[
    "proem:plugin/",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:filesystem/",
    "wasi:cli/",
    "wasi:sockets/",
    "wasi:http/",
];

/// The fix for a component that imports what proem does not offer, by the
/// toolchain that usually adds it.
const FOREIGN_IMPORT_FIX: &str = "a plugin may import only proem:plugin/…, WASI 0.2's io, clocks, random, \
    filesystem, cli and sockets, and wasi:http (a denied stub); build against the plugin's own \
    wit/ folder (proem plugin new writes one) and leave out what adds it (with componentize-py and \
    componentize-qjs nothing more is needed)";

/// Returns the API version a binary targets, or why it cannot be loaded.
/// Never panics, whatever the bytes.
pub fn check(bytes: &[u8]) -> Result<String, String> {
    const MAGIC: &[u8; 4] = b"\0asm";
    if bytes.len() < 8 || &bytes[..4] != MAGIC {
        return Err("not a WebAssembly file (a Rust plugin crate needs `crate-type = [\"cdylib\"]` in its [lib] \
                    section to produce one, in target/wasm32-wasip2/release/)"
            .into());
    }
    let layer = u16::from_le_bytes([bytes[6], bytes[7]]);
    if layer == 0 {
        return Err("a core wasm module, not a component: build the plugin with \
                    `cargo build --target wasm32-wasip2` (wasm32-wasip2 output is a component)"
            .into());
    }
    let mut stamped: Option<String> = None;
    let mut exported: Vec<String> = Vec::new();
    let mut foreign: Vec<String> = Vec::new();
    // Nesting depth: only the outer component's imports are the host's to
    // provide; nested components and modules import from their parent.
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let payload = payload.map_err(|e| format!("malformed component: {e}"))?;
        match payload {
            wasmparser::Payload::ModuleSection { .. } | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(reader) if depth == 0 => {
                for import in reader {
                    let name = import.map_err(|e| format!("malformed component: {e}"))?.name.0;
                    if !OFFERED_IMPORTS.iter().any(|prefix| name.starts_with(prefix)) {
                        foreign.push(name.to_string());
                    }
                }
            }
            wasmparser::Payload::CustomSection(reader) if reader.name() == API_VERSION_SECTION => {
                // The plugin's own bytes: made a printable label here, once.
                let data = &reader.data()[..reader.data().len().min(4096)];
                stamped = Some(proem_core::plugin::hooks::label(&String::from_utf8_lossy(data), 32));
            }
            wasmparser::Payload::ComponentExportSection(reader) => {
                for export in reader {
                    let export = export.map_err(|e| format!("malformed component: {e}"))?;
                    if let Some(version) = export.name.0.strip_prefix("proem:plugin/describe@") {
                        exported.push(proem_core::plugin::hooks::label(version, 32));
                    }
                }
            }
            _ => {}
        }
    }
    let version = match (stamped, exported.first()) {
        (Some(v), _) => v,
        (None, Some(v)) => v.clone(),
        (None, None) => {
            return Err("not a proem plugin: it exports no proem:plugin/describe interface \
                        (with proem-sdk, call `proem_sdk::register_plugin!(YourPlugin);` once in lib.rs)"
                .into());
        }
    };
    if !wit::is_supported(&version) {
        return Err(format!("built for proem plugin API {version}, but this proem supports {}", wit::supported_list()));
    }
    if !foreign.is_empty() {
        return Err(format!(
            "imports `{}`, which proem does not provide: {FOREIGN_IMPORT_FIX}",
            foreign.iter().take(8).map(|f| proem_core::plugin::hooks::label(f, 80)).collect::<Vec<_>>().join("`, `")
        ));
    }
    Ok(version)
}

/// The bytes of the plugin's config schema section
/// ([`proem_core::plugin::config_schema::SECTION`], in the component or in
/// one of its modules), if it has one; more than one, or one over
/// [`MAX_SCHEMA_BYTES`](proem_core::plugin::config_schema::MAX_SCHEMA_BYTES),
/// is refused. Never panics, whatever the bytes.
pub fn config_schema(bytes: &[u8]) -> Result<Option<Vec<u8>>, String> {
    use proem_core::plugin::config_schema::{MAX_SCHEMA_BYTES, SECTION};
    let mut found: Option<Vec<u8>> = None;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        if let wasmparser::Payload::CustomSection(reader) = payload.map_err(|e| format!("malformed component: {e}"))? {
            if reader.name() != SECTION {
                continue;
            }
            if found.is_some() {
                return Err(format!("its config schema: more than one {SECTION} custom section"));
            }
            if reader.data().len() > MAX_SCHEMA_BYTES {
                return Err(format!(
                    "its config schema ({SECTION}): {} bytes, over the {MAX_SCHEMA_BYTES} byte limit",
                    reader.data().len()
                ));
            }
            found = Some(reader.data().to_vec());
        }
    }
    Ok(found)
}

/// What a failure to link says: the import wasmtime named (a label), and
/// the fix. Every import a component may have is offered (see
/// [`check`]), so what is left is an import whose types differ from
/// proem's: a WIT other than this proem's, or a WASI other than 0.2.
pub fn link_error(chain: &str) -> String {
    let import = chain
        .split_once("imports instance `")
        .or_else(|| chain.split_once("imports `"))
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(name, _)| proem_core::plugin::hooks::label(name, 120));
    let fix = "rebuild it against the WIT this proem speaks (wit/0.2.0, which proem plugin new copies into a \
               new plugin) with a WASI 0.2 toolchain";
    match import {
        Some(import) => {
            format!("cannot link: its import `{import}` does not match what this proem provides ({chain}); {fix}")
        }
        None => format!("cannot link against this proem ({chain}); {fix}"),
    }
}

/// The imports among `imports` that proem links as denied stubs or whose
/// calls its policy denies, each with what a call gets, for `proem plugin
/// check`.
pub fn denied_imports(imports: &[String]) -> Vec<(String, &'static str)> {
    imports.iter().filter_map(|name| crate::stubs::denial(name).map(|how| (name.clone(), how))).collect()
}

/// The top-level interfaces a component imports and exports, for
/// `proem plugin check`. Names are labels (safe to print).
pub fn interfaces(bytes: &[u8]) -> (Vec<String>, Vec<String>) {
    let mut imports = Vec::new();
    let mut exports = Vec::new();
    let mut depth = 0usize;
    for payload in wasmparser::Parser::new(0).parse_all(bytes) {
        let Ok(payload) = payload else { break };
        match payload {
            wasmparser::Payload::ModuleSection { .. } | wasmparser::Payload::ComponentSection { .. } => depth += 1,
            wasmparser::Payload::End(_) => depth = depth.saturating_sub(1),
            wasmparser::Payload::ComponentImportSection(reader) if depth == 0 => {
                imports.extend(reader.into_iter().flatten().map(|i| proem_core::plugin::hooks::label(i.name.0, 120)));
            }
            wasmparser::Payload::ComponentExportSection(reader) if depth == 0 => {
                exports.extend(reader.into_iter().flatten().map(|e| proem_core::plugin::hooks::label(e.name.0, 120)));
            }
            _ => {}
        }
    }
    (imports, exports)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(wit::is_supported("0.1.0") && wit::is_supported("0.1.9"));
        assert!(wit::is_supported("0.2.0") && wit::is_supported("0.2.3"));
        for other in ["0.3.0", "1.0.0", "0", "", "x.y", "0.10.0", "0.20.0"] {
            assert!(!wit::is_supported(other), "{other}");
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut seed = 7u64;
        for len in 0..400 {
            let mut bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    (seed >> 56) as u8
                })
                .collect();
            if len >= 8 {
                bytes[..8].copy_from_slice(b"\0asm\x0d\0\x01\0");
            }
            assert!(check(&bytes).is_err());
        }
    }
}
