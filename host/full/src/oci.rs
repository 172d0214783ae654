//! `proem plugin push` and `proem plugin pull`: plugins as OCI artifacts.
//!
//! The layout is the one wkg, Spin and wasmCloud use for a Wasm component:
//! an OCI image manifest whose config has the media type
//! `application/vnd.wasm.config.v0+json` and whose one layer is the
//! component itself, `application/wasm`. The registry protocol is
//! oci-client's; this module only chooses what goes into the artifact and
//! checks what comes out of it.
//!
//! A pulled plugin is checked like any plugin file (a component for an API
//! version this proem supports, importing only what proem provides) before
//! it is written, and its `[[plugins]]` entry pins its sha256, so the bytes
//! that run are the bytes that were pulled.

use crate::install::{self, Installed};
use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use proem_wasm::binary;
use std::collections::BTreeMap;
use std::path::Path;

/// The manifest config media type of a Wasm artifact.
pub const WASM_CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The layer media type of a Wasm artifact.
pub const WASM_LAYER_MEDIA_TYPE: &str = "application/wasm";
/// The most bytes a pulled layer may have (the limit of a plugin file).
pub const MAX_LAYER_BYTES: usize = proem_core::plugin::set::MAX_PLUGIN_BYTES as usize;

/// A parsed `oci://REGISTRY/REPOSITORY[:TAG|@DIGEST]` reference.
#[derive(Debug, Clone)]
pub struct OciRef {
    reference: Reference,
    shown: String,
}

impl OciRef {
    /// Parses `oci://…` (the scheme is required, so a path is never taken
    /// for a reference). A tag defaults to `latest`.
    pub fn parse(text: &str) -> Result<OciRef, String> {
        let rest = text
            .strip_prefix("oci://")
            .ok_or_else(|| format!("{text:?} is not an OCI reference: write oci://REGISTRY/REPOSITORY:TAG"))?;
        if rest.is_empty() || rest.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("{text:?} is not an OCI reference: write oci://REGISTRY/REPOSITORY:TAG"));
        }
        if !rest.contains('/') {
            return Err(format!("{text:?} names no repository: write oci://REGISTRY/REPOSITORY:TAG"));
        }
        let reference: Reference = rest
            .parse()
            .map_err(|e| format!("{text:?} is not an OCI reference ({e}): write oci://REGISTRY/REPOSITORY:TAG"))?;
        Ok(OciRef { shown: format!("oci://{}", reference.whole()), reference })
    }

    /// The reference as people read it (`oci://127.0.0.1:5000/tools/gpio:1.0`).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The last part of the repository (`gpio` for `tools/gpio`).
    pub fn name(&self) -> &str {
        self.reference.repository().rsplit('/').next().unwrap_or("plugin")
    }

    /// Whether the registry is on this machine (localhost, 127.0.0.0/8):
    /// then plain HTTP is used,
    /// as a local registry rarely has a certificate. Every other registry
    /// is spoken to over HTTPS only.
    fn is_loopback(&self) -> bool {
        let registry = self.reference.resolve_registry();
        let host = match registry.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => registry.rsplit_once(':').map_or(registry, |(h, _)| h),
        };
        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

fn client(r: &OciRef) -> Client {
    // TLS with the ring provider, chosen once per process (an `Err` means
    // one is installed already, which is as good).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let protocol = if r.is_loopback() {
        ClientProtocol::HttpsExcept(vec![r.reference.resolve_registry().to_string()])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig { protocol, ..ClientConfig::default() })
}

/// Anonymous, or basic credentials from `PROEM_REGISTRY_USER` and
/// `PROEM_REGISTRY_PASSWORD` (never from a file proem writes).
fn auth() -> RegistryAuth {
    match (std::env::var("PROEM_REGISTRY_USER"), std::env::var("PROEM_REGISTRY_PASSWORD")) {
        (Ok(user), Ok(password)) => RegistryAuth::Basic(user, password),
        _ => RegistryAuth::Anonymous,
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the network runtime: {e}"))
}

/// What a push did.
#[derive(Debug, Clone)]
pub struct Pushed {
    /// The reference pushed to.
    pub reference: String,
    /// The component's sha256 (what `sha256 = …` pins).
    pub sha256: String,
}

/// Publishes the plugin at `file` to `reference`, after checking it is a
/// plugin this proem can load.
pub fn push(file: &Path, reference: &str) -> Result<Pushed, String> {
    let target = OciRef::parse(reference)?;
    let bytes = proem_core::disk::read_regular_file(file, proem_core::plugin::set::MAX_PLUGIN_BYTES)
        .map_err(|e| format!("{}: cannot read: {e}", file.display()))?;
    let api = binary::check(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
    let sha256 = proem_core::digest::sha256_hex(&bytes);
    let config = serde_json::json!({
        "architecture": "wasm",
        "os": "wasip2",
        "layerDigests": [format!("sha256:{sha256}")],
        "component": { "proemApiVersion": api },
    });
    let mut annotations = BTreeMap::new();
    annotations.insert("org.opencontainers.image.title".to_string(), target.name().to_string());
    annotations.insert("dev.proem.plugin.api-version".to_string(), api.clone());
    let layer = ImageLayer::new(bytes, WASM_LAYER_MEDIA_TYPE.to_string(), None);
    let config = Config::new(
        serde_json::to_vec(&config).expect("a JSON value serialises"),
        WASM_CONFIG_MEDIA_TYPE.to_string(),
        None,
    );
    let mut manifest = oci_client::manifest::OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
    manifest.annotations = Some(annotations);
    runtime()?
        .block_on(client(&target).push(&target.reference, &[layer], config, &auth(), Some(manifest)))
        .map_err(|e| format!("cannot push to {}: {e}", target.shown()))?;
    Ok(Pushed { reference: target.shown().to_string(), sha256 })
}

/// Fetches the plugin at `reference` and installs it into `agent_dir`
/// with [`crate::install::Plan::install`]: `plugins/<id>.wasm` and a `[[plugins]]` entry
/// pinning its sha256. `id` defaults to the repository's last part.
pub fn pull(reference: &str, agent_dir: &Path, id: Option<&str>) -> Result<Installed, String> {
    let source = OciRef::parse(reference)?;
    let id = id.unwrap_or(source.name()).to_string();
    // Everything that can be refused without the network is refused first.
    let plan = install::plan(agent_dir, &id)?;
    let image = runtime()?
        .block_on(client(&source).pull(&source.reference, &auth(), vec![WASM_LAYER_MEDIA_TYPE]))
        .map_err(|e| format!("cannot pull {}: {e}", source.shown()))?;
    if image.config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(format!(
            "{} is not a Wasm component artifact: its config is {:?}, not {WASM_CONFIG_MEDIA_TYPE}",
            source.shown(),
            proem_core::text::one_line(&image.config.media_type, 80)
        ));
    }
    let [layer] = image.layers.as_slice() else {
        return Err(format!(
            "{} has {} layers; a Wasm component artifact has exactly one",
            source.shown(),
            image.layers.len()
        ));
    };
    if layer.data.len() > MAX_LAYER_BYTES {
        return Err(format!(
            "{}: the component is {} bytes, over the {MAX_LAYER_BYTES} byte limit",
            source.shown(),
            layer.data.len()
        ));
    }
    binary::check(&layer.data).map_err(|e| format!("{}: {e}", source.shown()))?;
    let note =
        format!("Pulled from {} (manifest {}).", source.shown(), image.digest.as_deref().unwrap_or("digest not given"));
    plan.install(&layer.data, &note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_need_the_scheme_and_a_repository() {
        let r = OciRef::parse("oci://127.0.0.1:5000/tools/gpio:1.0").unwrap();
        assert_eq!(r.shown(), "oci://127.0.0.1:5000/tools/gpio:1.0");
        assert_eq!(r.name(), "gpio");
        assert!(r.is_loopback());
        assert!(OciRef::parse("oci://localhost:5000/a:1").unwrap().is_loopback());
        assert!(!OciRef::parse("oci://ghcr.io/acme/gpio:1").unwrap().is_loopback());
        assert!(!OciRef::parse("oci://127.0.0.1.example.com/a:1").unwrap().is_loopback());
        for bad in ["ghcr.io/acme/x:1", "oci://", "oci://x", "oci://a b/c", "oci://ghcr.io/Upper/x:1", "plugins/x.wasm"]
        {
            assert!(OciRef::parse(bad).is_err(), "{bad}");
        }
    }
}
