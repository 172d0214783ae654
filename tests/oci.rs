//! `proem plugin push` and `pull` against a real OCI registry: Debian's
//! `docker-registry` (the CNCF distribution server), started here on a free
//! loopback port with its storage in a temporary folder, and stopped when
//! the test ends. `.ci/run` installs it when missing; on a machine without
//! it, these tests say so and pass only outside CI.

use crate::common::*;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const REGISTRY: &str = "/usr/bin/docker-registry";

/// A registry process on 127.0.0.1, killed on drop.
struct Registry {
    child: Child,
    addr: SocketAddr,
    _storage: tempfile::TempDir,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn registry() -> Option<Registry> {
    if !Path::new(REGISTRY).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{REGISTRY} is missing: .ci/run installs Debian's docker-registry package"
        );
        eprintln!("skipped: {REGISTRY} is not installed (apt-get install docker-registry)");
        return None;
    }
    let storage = tempfile::tempdir().unwrap();
    // A free port: bind :0, read it, let it go (the registry binds it next).
    let addr = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let config = storage.path().join("config.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: {addr}\n",
            storage.path().join("data").display()
        ),
    )
    .unwrap();
    let child = Command::new(REGISTRY)
        .args(["serve", config.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start docker-registry");
    let registry = Registry { child, addr, _storage: storage };
    // Ready when /v2/ answers 200; bounded: 10 s at most.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
            let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = write!(s, "GET /v2/ HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
            let mut reply = String::new();
            let _ = s.read_to_string(&mut reply);
            if reply.starts_with("HTTP/1.1 200") {
                return Some(registry);
            }
        }
        assert!(Instant::now() < deadline, "docker-registry did not answer on {addr} within 10 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn proem(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(crate::common::front()).args(args).env("PROEM_CACHE_DIR", plugin_env()).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_plugin_pushed_to_a_registry_pulls_into_an_agent_pinned_and_runs() {
    let Some(registry) = registry() else { return };
    let dir = tempfile::tempdir().unwrap();
    let wasm = dir.path().join("hardware_access.wasm");
    let bytes = guest_wasm("hardware-access");
    std::fs::write(&wasm, &bytes).unwrap();
    let reference = format!("oci://{}/proem/hardware-access:0.2.0", registry.addr);

    let (code, out, err) = proem(&["plugin", "push", wasm.to_str().unwrap(), &reference]);
    assert_eq!(code, 0, "{out}{err}");
    let digest: String = {
        use sha2::{Digest, Sha256};
        Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect()
    };
    assert!(out.contains(&format!("sha256 {digest}")), "{out}");

    // The artifact has the Wasm layout: config and layer media types.
    let manifest = http_get(registry.addr, "/v2/proem/hardware-access/manifests/0.2.0");
    assert!(manifest.contains("application/vnd.wasm.config.v0+json"), "{manifest}");
    assert!(manifest.contains("\"mediaType\":\"application/wasm\"") || manifest.contains("application/wasm"));

    let agent = Agent::new();
    agent.with_standard_files();
    agent.config("[agent]\nid = \"puller\"\n");
    let (code, out, err) =
        proem(&["plugin", "pull", &reference, "--into", agent.path().to_str().unwrap(), "--id", "hw"]);
    assert_eq!(code, 0, "{out}{err}");
    let toml = std::fs::read_to_string(agent.path().join("proem.toml")).unwrap();
    assert!(toml.starts_with("[agent]\nid = \"puller\"\n"), "the operator's lines stay: {toml}");
    assert!(toml.contains(&format!("id = \"hw\"\npath = \"plugins/hw.wasm\"\nsha256 = \"{digest}\"")), "{toml}");
    assert_eq!(std::fs::read(agent.path().join("plugins/hw.wasm")).unwrap(), bytes);
    let built = agent.build(&proem::Turn { tools: Some(tools(&["gpio_write"])), ..turn() });
    assert_eq!(plugin_status(&built, "hw"), "ok", "{:?}", built.diagnostics);
    assert!(built.stable.contains("## Hardware Access"));

    // Pulling again with the same id changes nothing and says why.
    let before = agent.snapshot();
    let (code, _, err) = proem(&["plugin", "pull", &reference, "--into", agent.path().to_str().unwrap(), "--id", "hw"]);
    assert_eq!(code, 1);
    assert!(err.contains("already configured") && err.contains("--id"), "{err}");
    assert_eq!(agent.snapshot(), before);
}

#[test]
fn what_is_not_a_proem_plugin_is_refused_before_anything_is_written() {
    let Some(registry) = registry() else { return };
    let dir = tempfile::tempdir().unwrap();
    // Not a component: push refuses it.
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, wat::parse_str("(module)").unwrap()).unwrap();
    let reference = format!("oci://{}/proem/core:1", registry.addr);
    let (code, _, err) = proem(&["plugin", "push", core.to_str().unwrap(), &reference]);
    assert_eq!(code, 1);
    assert!(err.contains("not a component"), "{err}");
    // Nothing at that reference: pull says so and writes nothing.
    let agent = Agent::new();
    let before = agent.snapshot();
    let (code, _, err) = proem(&["plugin", "pull", &reference, "--into", agent.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains(&format!("cannot pull oci://{}/proem/core:1", registry.addr)), "{err}");
    assert_eq!(agent.snapshot(), before);
    // Not a reference at all.
    let (code, _, err) = proem(&["plugin", "pull", "plugins/x.wasm", "--into", agent.path().to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("oci://REGISTRY/REPOSITORY:TAG"), "{err}");
}

fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/vnd.oci.image.manifest.v1+json\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    reply
}
