//! `proem plugin push` and `proem plugin pull`: plugins as OCI artifacts.
//!
//! The layout is the one wkg, Spin and wasmCloud use for a Wasm component:
//! an OCI image manifest whose config has the media type
//! `application/vnd.wasm.config.v0+json` and whose one layer is the
//! component itself, `application/wasm`. A push is oci-client's. A pull
//! makes its GETs through [`crate::download`], which bounds every
//! body as it arrives (oci-client reads manifests, tokens and error
//! answers whole), and decides from the manifest alone what it will fetch.
//!
//! A pulled plugin is checked like any plugin file (a component for an API
//! version this proem supports, importing only what proem provides) before
//! it is written, and its `[[plugins]]` entry pins its sha256, so the bytes
//! that run are the bytes that were pulled.

pub use crate::download::Timeouts;
use crate::download::{self, Fetched, Follow, Registry};
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

/// Chooses TLS's crypto provider, ring, once per process (before any
/// HTTP client is built; an `Err` means one is installed already, which
/// is as good).
fn tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// oci-client, for `push`, with `timeouts`' connect and read timeouts.
fn client(r: &OciRef, timeouts: &Timeouts) -> Client {
    tls();
    let protocol = if r.is_loopback() {
        ClientProtocol::HttpsExcept(vec![r.reference.resolve_registry().to_string()])
    } else {
        ClientProtocol::Https
    };
    Client::new(ClientConfig {
        protocol,
        connect_timeout: Some(timeouts.connect),
        read_timeout: Some(timeouts.read),
        ..ClientConfig::default()
    })
}

/// Basic credentials from `PROEM_REGISTRY_USER` and
/// `PROEM_REGISTRY_PASSWORD` (never from a file proem writes), if both
/// are set.
fn credentials() -> Option<(String, String)> {
    match (std::env::var("PROEM_REGISTRY_USER"), std::env::var("PROEM_REGISTRY_PASSWORD")) {
        (Ok(user), Ok(password)) => Some((user, password)),
        _ => None,
    }
}

/// Anonymous, or the Basic [`credentials`] (for oci-client, in `push`).
fn auth() -> RegistryAuth {
    match credentials() {
        Some((user, password)) => RegistryAuth::Basic(user, password),
        None => RegistryAuth::Anonymous,
    }
}

/// The runtime a push or pull runs on.
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
    /// The manifest's URL at the registry.
    pub manifest_url: String,
    /// The component's sha256 (what `sha256 = …` pins).
    pub sha256: String,
}

/// Publishes the plugin at `file` to `reference`, after checking it is a
/// plugin this proem can load. `timeouts.total` bounds the whole push.
pub fn push(file: &Path, reference: &str, timeouts: &Timeouts) -> Result<Pushed, String> {
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
    let (client, layers, auth) = (client(&target, timeouts), [layer], auth());
    let push = client.push(&target.reference, &layers, config, &auth, Some(manifest));
    let response = runtime()?
        .block_on(async { tokio::time::timeout(timeouts.total, push).await })
        .map_err(|_| {
            format!(
                "cannot push to {}: not done within the total timeout of {} s (--timeout SECS)",
                target.shown(),
                timeouts.total.as_secs()
            )
        })?
        .map_err(|e| format!("cannot push to {}: {e}", target.shown()))?;
    Ok(Pushed { reference: target.shown().to_string(), manifest_url: response.manifest_url, sha256 })
}

/// Fetches the plugin at `reference` and installs it into `agent_dir`
/// with [`crate::install::Plan::install`]: `plugins/<id>.wasm` and a `[[plugins]]` entry
/// pinning its sha256. `id` defaults to the repository's last part.
///
/// Everything the registry sends is bounded before it is held (see
/// [`crate::download`]): the manifest at [`MAX_MANIFEST_BYTES`],
/// checked against the reference's digest; the artifact's shape (one
/// `application/wasm` layer, its size within [`MAX_LAYER_BYTES`], a
/// sha256 digest) decided from the manifest alone, before the layer is
/// asked for; the layer read up to the size the manifest gives, then
/// checked against that size and digest. `timeouts.total` bounds the
/// whole pull.
pub fn pull(reference: &str, agent_dir: &Path, id: Option<&str>, timeouts: &Timeouts) -> Result<Installed, String> {
    let source = OciRef::parse(reference)?;
    let id = id.unwrap_or(source.name()).to_string();
    // Everything that can be refused without the network is refused first.
    let plan = install::plan(agent_dir, &id)?;
    // The timer is made inside the runtime, which it needs.
    let fetch = async { tokio::time::timeout(timeouts.total, fetch_component(&source, timeouts)).await };
    let component = match runtime()?.block_on(fetch) {
        Ok(fetched) => fetched.map_err(|e| format!("cannot pull {}: {e}", source.shown()))?,
        Err(_) => {
            return Err(format!(
                "cannot pull {}: not done within the total timeout of {} s (--timeout SECS)",
                source.shown(),
                timeouts.total.as_secs()
            ))
        }
    };
    binary::check(&component.bytes).map_err(|e| format!("{}: {e}", source.shown()))?;
    let note = format!("Pulled from {} (manifest {}).", source.shown(), component.manifest_digest);
    plan.install(&component.bytes, &note)
}

/// The most bytes a pulled manifest may have (a plugin's is under 1 KiB).
pub const MAX_MANIFEST_BYTES: usize = 4 * 1024 * 1024;

/// The manifest media types a pull accepts (index types too, to say what
/// they are instead of a bare 406).
const MANIFEST_ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, \
     application/vnd.docker.distribution.manifest.v2+json, \
     application/vnd.oci.image.index.v1+json, \
     application/vnd.docker.distribution.manifest.list.v2+json";

/// A pulled component, its digest checked against the manifest's.
struct Component {
    bytes: Vec<u8>,
    manifest_digest: String,
}

/// GETs the manifest, decides from it alone what to fetch, then GETs the
/// one layer.
async fn fetch_component(source: &OciRef, timeouts: &Timeouts) -> Result<Component, String> {
    let reference = &source.reference;
    let scheme = if source.is_loopback() { "http" } else { "https" };
    let base = format!("{scheme}://{}", reference.resolve_registry());
    tls();
    let mut registry = Registry::new(&base, source.is_loopback(), reference.repository(), credentials(), timeouts)?;
    let (name, follow) = match reference.digest() {
        // Named by its digest: checked below, so a mirror may serve it.
        Some(digest) => (digest, Follow::AnyOrigin),
        None => (reference.tag().unwrap_or("latest"), Follow::SameOrigin),
    };
    let url = registry.url(&format!("/v2/{}/manifests/{name}", reference.repository()))?;
    let manifest = registry.get(url, MANIFEST_ACCEPT, MAX_MANIFEST_BYTES, follow).await?;
    let manifest_digest = manifest_digest(&manifest, reference.digest())?;
    let layer = wasm_layer(&manifest.bytes)?;
    // Not held while the layer arrives.
    drop(manifest);
    let url = registry.url(&format!("/v2/{}/blobs/{}", reference.repository(), layer.digest))?;
    let sha256 = download::sha256_of_digest(&layer.digest).unwrap_or_default();
    let bytes = registry.get_blob(url, layer.size, sha256).await?;
    Ok(Component { bytes, manifest_digest })
}

/// The manifest's digest (`sha256:…`), after checking the bytes against
/// the reference's digest and the registry's `Docker-Content-Digest`.
fn manifest_digest(manifest: &Fetched, named: Option<&str>) -> Result<String, String> {
    let digest = format!("sha256:{}", proem_core::digest::sha256_hex(&manifest.bytes));
    for (claim, whose) in [(named, "the reference"), (manifest.digest_header.as_deref(), "the registry's header")] {
        // Another algorithm than sha256 is not checked here (the layer's
        // own digest still is).
        match claim {
            Some(claim) if claim.starts_with("sha256:") && claim != digest => {
                return Err(format!("the manifest's digest is {digest}, not {claim} as {whose} says; refused"))
            }
            _ => {}
        }
    }
    Ok(digest)
}

/// The one layer to fetch, decided from the manifest alone: an image
/// manifest (schema 2) with the Wasm config media type and exactly one
/// `application/wasm` layer, whose digest is a sha256 and whose size is
/// 1 byte to [`MAX_LAYER_BYTES`].
fn wasm_layer(manifest: &[u8]) -> Result<Layer, String> {
    let manifest: Manifest =
        serde_json::from_slice(manifest).map_err(|e| format!("the manifest is not an OCI image manifest: {e}"))?;
    if manifest.schema_version != 2 {
        return Err(format!("the manifest has schemaVersion {}; only 2 is read", manifest.schema_version));
    }
    let media_type = manifest.media_type.as_deref().unwrap_or(oci_client::manifest::OCI_IMAGE_MEDIA_TYPE);
    let Some(config) = manifest.config.filter(|_| {
        media_type == oci_client::manifest::OCI_IMAGE_MEDIA_TYPE
            || media_type == oci_client::manifest::IMAGE_MANIFEST_MEDIA_TYPE
    }) else {
        return Err(format!(
            "the manifest is {:?}, not an image manifest: a Wasm component artifact is one image manifest",
            proem_core::text::one_line(media_type, 80)
        ));
    };
    if config.media_type != WASM_CONFIG_MEDIA_TYPE {
        return Err(format!(
            "not a Wasm component artifact: its config is {:?}, not {WASM_CONFIG_MEDIA_TYPE}",
            proem_core::text::one_line(&config.media_type, 80)
        ));
    }
    let Layers { count, first } = manifest.layers;
    let layer = match (count, first) {
        (1, Some(layer)) => layer,
        _ => return Err(format!("the manifest lists {count} layers; a Wasm component artifact has exactly one")),
    };
    if layer.media_type != WASM_LAYER_MEDIA_TYPE {
        return Err(format!(
            "its layer is {:?}, not {WASM_LAYER_MEDIA_TYPE}",
            proem_core::text::one_line(&layer.media_type, 80)
        ));
    }
    if download::sha256_of_digest(&layer.digest).is_none() {
        return Err(format!(
            "the layer's digest {:?} is not sha256:<64 lowercase hex digits>",
            proem_core::text::one_line(&layer.digest, 100)
        ));
    }
    let size = usize::try_from(layer.size).ok().filter(|n| (1..=MAX_LAYER_BYTES).contains(n)).ok_or_else(|| {
        format!(
            "the manifest says the component is {} bytes; a plugin is 1 to {MAX_LAYER_BYTES} bytes (64 MiB)",
            layer.size
        )
    })?;
    Ok(Layer { digest: layer.digest, size })
}

/// The one layer a pull fetches.
struct Layer {
    digest: String,
    size: usize,
}

/// The fields of an image manifest a pull reads; the rest (annotations,
/// subject…) is skipped without being kept.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Manifest {
    schema_version: u64,
    media_type: Option<String>,
    config: Option<Descriptor>,
    #[serde(default)]
    layers: Layers,
}

/// A content descriptor, as far as a pull reads one.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor {
    media_type: String,
    digest: String,
    size: i64,
}

/// A manifest's layers, counted: only the first is kept, so a manifest
/// listing a million layers costs no more than its bytes.
#[derive(Default)]
struct Layers {
    count: usize,
    first: Option<Descriptor>,
}

impl<'de> serde::Deserialize<'de> for Layers {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Layers;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a list of layer descriptors")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Layers, A::Error> {
                let first: Option<Descriptor> = seq.next_element()?;
                let mut count = usize::from(first.is_some());
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    count = count.saturating_add(1);
                }
                Ok(Layers { count, first })
            }
        }
        deserializer.deserialize_seq(Visitor)
    }
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
