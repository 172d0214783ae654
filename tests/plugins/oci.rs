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
    let built = agent.build(&proem::Turn { tools: Some(tools(&["gpio_write"]).into()), ..turn() });
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

// ---------------------------------------------------------------------------
// A hostile registry: a loopback server answering what each case says.
// ---------------------------------------------------------------------------

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// A request the hostile registry saw.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    authorization: Option<String>,
}

/// What a hostile answer's body does.
enum Body {
    /// These bytes, `Content-Length` announced.
    Bytes(Vec<u8>),
    /// These bytes in chunked encoding (no length announced).
    Chunked(Vec<u8>),
    /// Zeros in chunked encoding until the client goes away.
    Endless,
    /// `Content-Length: N` announced, zeros sent until the client goes away.
    Announced(u64),
    /// `Content-Length: N` announced, one byte a second.
    Slow(usize),
    /// Nothing at all, not even a status line, for up to 30 s.
    Silent,
}

/// One hostile answer.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Body,
}

impl Reply {
    fn ok(body: Body) -> Reply {
        Reply { status: 200, headers: Vec::new(), body }
    }
    fn status(status: u16, body: Body) -> Reply {
        Reply { status, headers: Vec::new(), body }
    }
    fn redirect(to: String) -> Reply {
        Reply::status(307, Body::Bytes(Vec::new())).header("Location", &to)
    }
    fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
}

type Route = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A registry on 127.0.0.1 that answers every GET with its route's reply
/// (`Connection: close`, one thread per connection). Dropping it stops
/// the accept loop and every writer (each writer also stops when the
/// client goes away), so no thread outlives the test by more than a tick.
struct Hostile {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
    stop: Arc<AtomicBool>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

impl Hostile {
    fn serve(route: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let route: Arc<Route> = Arc::new(route);
        let accept = std::thread::spawn({
            let (seen, stop) = (seen.clone(), stop.clone());
            move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let (route, seen, stop) = (route.clone(), seen.clone(), stop.clone());
                            std::thread::spawn(move || answer(stream, &*route, &seen, &stop));
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(5))
                        }
                        Err(_) => break,
                    }
                }
            }
        });
        Hostile { addr, seen, stop, accept: Some(accept) }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn asked_for_a_blob(&self) -> bool {
        self.seen().iter().any(|s| s.path.contains("/blobs/"))
    }
}

/// Reads one request head and writes the route's reply.
fn answer(mut stream: TcpStream, route: &Route, seen: &Mutex<Vec<Seen>>, stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
        if head.len() > 64 * 1024 {
            return;
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let authorization = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(k, _)| k.eq_ignore_ascii_case("authorization")))
        .map(|(_, v)| v.trim().to_string());
    let request = Seen { path, authorization };
    seen.lock().unwrap().push(request.clone());
    let reply = route(&request);
    let mut out = format!("HTTP/1.1 {} Hostile\r\nConnection: close\r\n", reply.status);
    for (k, v) in &reply.headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    let running = || !stop.load(Ordering::SeqCst);
    let zeros = vec![0u8; 64 * 1024];
    let _ = (|| -> std::io::Result<()> {
        match reply.body {
            Body::Bytes(bytes) => {
                stream.write_all(format!("{out}Content-Length: {}\r\n\r\n", bytes.len()).as_bytes())?;
                stream.write_all(&bytes)?;
            }
            Body::Chunked(bytes) => {
                stream.write_all(format!("{out}Transfer-Encoding: chunked\r\n\r\n").as_bytes())?;
                for chunk in bytes.chunks(1000) {
                    stream.write_all(format!("{:x}\r\n", chunk.len()).as_bytes())?;
                    stream.write_all(chunk)?;
                    stream.write_all(b"\r\n")?;
                }
                stream.write_all(b"0\r\n\r\n")?;
            }
            Body::Endless => {
                stream.write_all(format!("{out}Transfer-Encoding: chunked\r\n\r\n").as_bytes())?;
                while running() {
                    stream.write_all(format!("{:x}\r\n", zeros.len()).as_bytes())?;
                    stream.write_all(&zeros)?;
                    stream.write_all(b"\r\n")?;
                }
            }
            Body::Announced(n) => {
                stream.write_all(format!("{out}Content-Length: {n}\r\n\r\n").as_bytes())?;
                let mut left = n;
                while left > 0 && running() {
                    let part = left.min(zeros.len() as u64) as usize;
                    stream.write_all(&zeros[..part])?;
                    left -= part as u64;
                }
            }
            Body::Slow(n) => {
                stream.write_all(format!("{out}Content-Length: {n}\r\n\r\n").as_bytes())?;
                for _ in 0..n {
                    if !running() {
                        break;
                    }
                    stream.write_all(b" ")?;
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            Body::Silent => {
                let until = Instant::now() + Duration::from_secs(30);
                while running() && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(20));
                    // Notice the client leaving: a read of 0 bytes.
                    stream.set_nonblocking(true)?;
                    if let Ok(0) = stream.read(&mut buf) {
                        break;
                    }
                    stream.set_nonblocking(false)?;
                }
            }
        }
        stream.flush()
    })();
}

/// An OCI image manifest with the given config media type and layers
/// (media type, digest, size).
fn manifest_json(config: &str, layers: &[(&str, &str, i64)]) -> Vec<u8> {
    let layers: Vec<serde_json::Value> = layers
        .iter()
        .map(|(media, digest, size)| serde_json::json!({"mediaType": media, "digest": digest, "size": size}))
        .collect();
    serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": config, "digest": format!("sha256:{}", "0".repeat(64)), "size": 2},
        "layers": layers,
    }))
    .unwrap()
}

const WASM_CONFIG: &str = "application/vnd.wasm.config.v0+json";
const WASM_LAYER: &str = "application/wasm";

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The plugin a well-behaved registry would serve, its layer digest and
/// a manifest naming it with `size`.
fn component() -> (Vec<u8>, String) {
    let bytes = guest_wasm("hardware-access");
    let digest = format!("sha256:{}", sha256_hex(&bytes));
    (bytes, digest)
}

/// What one `proem plugin pull` did.
struct Pulled {
    code: i32,
    stderr: String,
    /// The pulling process's peak resident set in KiB, when measured.
    peak_rss_kib: Option<u64>,
    elapsed: Duration,
}

/// GNU time, which reports a command's peak RSS (`%M`). A child's
/// `ru_maxrss` counts the memory of the process it was forked from (the
/// test binary, hundreds of MB in a full run), so the pull is measured as
/// the child of this small process instead.
const TIME: &str = "/usr/bin/time";

/// Runs `proem-full plugin pull REFERENCE --into AGENT ARGS…` (what
/// `proem plugin pull` execs), killed (and the test failed) if it has not
/// ended within `limit`; with `measure`, under [`TIME`] for its peak RSS.
fn pull(reference: &str, agent: &Path, args: &[&str], env: &[(&str, &str)], limit: Duration, measure: bool) -> Pulled {
    let started = Instant::now();
    let report = tempfile::NamedTempFile::new().unwrap();
    let mut command = if measure {
        let mut time = Command::new(TIME);
        time.args(["-f", "%M", "-o"]).arg(report.path()).arg(env!("CARGO_BIN_EXE_proem-full"));
        time
    } else {
        Command::new(env!("CARGO_BIN_EXE_proem-full"))
    };
    command
        .args(["plugin", "pull", reference, "--into", agent.to_str().unwrap()])
        .args(args)
        .env("PROEM_CACHE_DIR", plugin_env())
        .env_remove("PROEM_REGISTRY_USER")
        .env_remove("PROEM_REGISTRY_PASSWORD")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`proem plugin pull {reference}` did not end within {limit:?}: {}", reader.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let peak_rss_kib = measure.then(|| {
        let text = std::fs::read_to_string(report.path()).unwrap();
        text.lines().last().and_then(|l| l.trim().parse().ok()).unwrap_or_else(|| panic!("{TIME} said {text:?}"))
    });
    Pulled {
        code: status.code().unwrap_or(-1),
        stderr: reader.join().unwrap(),
        peak_rss_kib,
        elapsed: started.elapsed(),
    }
}

/// Every way a registry can misbehave ends in a refusal that says what
/// happened, within the timeouts, without the agent changing, and, where
/// the manifest alone decides, without the layer being asked for.
#[test]
fn a_hostile_registry_is_refused_with_a_reason_and_nothing_is_written() {
    let (bytes, digest) = component();
    let size = bytes.len() as i64;
    let good = manifest_json(WASM_CONFIG, &[(WASM_LAYER, &digest, size)]);
    let mib = 1024 * 1024;
    let other = Hostile::serve(|_| Reply::ok(Body::Bytes(b"{}".to_vec())));
    let other_addr = other.addr;
    // An answer, given the request and the registry's own address.
    type Answer = Box<dyn Fn(&Seen, SocketAddr) -> Reply + Send + Sync>;
    // (case, manifest answer, blob answer, extra pull arguments, what the error says, may the blob be asked for)
    type Case<'a> = (&'a str, Answer, Answer, Vec<&'a str>, Vec<String>, bool);
    let manifest = |m: Vec<u8>| -> Answer { Box::new(move |_, _| Reply::ok(Body::Bytes(m.clone()))) };
    let blob = |f: fn(&[u8]) -> Body| -> Answer {
        let bytes = guest_wasm("hardware-access");
        Box::new(move |_, _| Reply::ok(f(&bytes)))
    };
    let none = || -> Answer { Box::new(|_, _| Reply::status(404, Body::Bytes(Vec::new()))) };
    let wrong_digest = format!("sha256:{}", "e".repeat(64));
    let cases: Vec<Case> = vec![
        (
            "a manifest over 4 MiB, announced",
            Box::new(move |_, _| Reply::ok(Body::Announced(5 * mib))),
            none(),
            vec![],
            vec!["over 4194304 bytes".into()],
            false,
        ),
        (
            "an endless manifest",
            Box::new(|_, _| Reply::ok(Body::Endless)),
            none(),
            vec![],
            vec!["over 4194304 bytes".into()],
            false,
        ),
        (
            "a layer of 2 GiB by the manifest",
            manifest(manifest_json(WASM_CONFIG, &[(WASM_LAYER, &digest, 2 << 30)])),
            none(),
            vec![],
            vec!["2147483648 bytes".into(), "1 to 67108864".into()],
            false,
        ),
        (
            "a negative layer size",
            manifest(manifest_json(WASM_CONFIG, &[(WASM_LAYER, &digest, -1)])),
            none(),
            vec![],
            vec!["-1 bytes".into()],
            false,
        ),
        (
            "two wasm layers",
            manifest(manifest_json(WASM_CONFIG, &[(WASM_LAYER, &digest, size), (WASM_LAYER, &digest, size)])),
            none(),
            vec![],
            vec!["lists 2 layers".into()],
            false,
        ),
        ("no layer", manifest(manifest_json(WASM_CONFIG, &[])), none(), vec![], vec!["lists 0 layers".into()], false),
        (
            "a layer that is not wasm",
            manifest(manifest_json(WASM_CONFIG, &[("application/vnd.oci.image.layer.v1.tar", &digest, size)])),
            none(),
            vec![],
            vec!["not application/wasm".into()],
            false,
        ),
        (
            "a container image's config",
            manifest(manifest_json("application/vnd.oci.image.config.v1+json", &[(WASM_LAYER, &digest, size)])),
            none(),
            vec![],
            vec!["not a Wasm component artifact".into()],
            false,
        ),
        (
            "an image index",
            manifest(
                br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#.to_vec(),
            ),
            none(),
            vec![],
            vec!["not an image manifest".into()],
            false,
        ),
        (
            "a layer digest that is not sha256",
            manifest(manifest_json(WASM_CONFIG, &[(WASM_LAYER, "sha512:00", size)])),
            none(),
            vec![],
            vec!["is not sha256".into()],
            false,
        ),
        (
            "a manifest that is not JSON",
            manifest(b"\xff\xfe not json".to_vec()),
            none(),
            vec![],
            vec!["not an OCI image manifest".into()],
            false,
        ),
        (
            "a registry header naming another manifest digest",
            Box::new({
                let good = good.clone();
                let wrong = wrong_digest.clone();
                move |_, _| Reply::ok(Body::Bytes(good.clone())).header("Docker-Content-Digest", &wrong)
            }),
            none(),
            vec![],
            vec![format!("not {wrong_digest} as the registry's header says")],
            false,
        ),
        (
            "a layer longer than its size field",
            manifest(manifest_json(WASM_CONFIG, &[(WASM_LAYER, &digest, size - 10)])),
            blob(|b| Body::Chunked(b.to_vec())),
            vec![],
            vec!["sent more than".into()],
            true,
        ),
        (
            "a layer shorter than its size field",
            manifest(manifest_json(WASM_CONFIG, &[(WASM_LAYER, &digest, size + 10)])),
            blob(|b| Body::Chunked(b.to_vec())),
            vec![],
            vec!["ended after".into()],
            true,
        ),
        (
            "a layer announcing another length",
            manifest(good.clone()),
            blob(|b| Body::Bytes(b[..b.len() - 1].to_vec())),
            vec![],
            vec!["announces".into()],
            true,
        ),
        (
            "a layer of 2 GiB, announced",
            manifest(good.clone()),
            Box::new(|_, _| Reply::ok(Body::Announced(2 << 30))),
            vec![],
            vec!["announces 2147483648 bytes".into()],
            true,
        ),
        (
            "an endless layer",
            manifest(good.clone()),
            Box::new(|_, _| Reply::ok(Body::Endless)),
            vec![],
            vec!["sent more than".into()],
            true,
        ),
        (
            "a layer with other bytes",
            manifest(good.clone()),
            blob(|b| {
                let mut b = b.to_vec();
                b[100] ^= 1;
                Body::Bytes(b)
            }),
            vec![],
            vec!["the layer's sha256 is".into(), "nothing was written".into()],
            true,
        ),
        (
            "a manifest sent a byte a second",
            Box::new(|_, _| Reply::ok(Body::Slow(600))),
            none(),
            vec!["--timeout", "2"],
            vec!["total timeout of 2 s (--timeout SECS)".into()],
            false,
        ),
        (
            "a registry that never answers",
            Box::new(|_, _| Reply::ok(Body::Silent)),
            none(),
            vec!["--read-timeout", "1"],
            vec!["read timeout (--read-timeout SECS)".into()],
            false,
        ),
        (
            "an endless error answer",
            Box::new(|_, _| Reply::status(404, Body::Endless)),
            none(),
            vec![],
            vec!["HTTP 404".into()],
            false,
        ),
        (
            "an endless token",
            Box::new(|seen, addr| {
                if seen.path.starts_with("/token") {
                    Reply::ok(Body::Endless)
                } else {
                    Reply::status(401, Body::Bytes(Vec::new()))
                        .header("WWW-Authenticate", &format!("Bearer realm=\"http://{addr}/token\",service=\"x\""))
                }
            }),
            none(),
            vec![],
            vec!["over 65536 bytes".into()],
            false,
        ),
        (
            "a token service elsewhere over plain HTTP",
            Box::new(|_, _| {
                Reply::status(401, Body::Bytes(Vec::new()))
                    .header("WWW-Authenticate", "Bearer realm=\"http://192.0.2.1/token\"")
            }),
            none(),
            vec![],
            vec!["plain HTTP".into()],
            false,
        ),
        (
            "a tag's manifest redirected to another host",
            Box::new(move |seen, _| Reply::redirect(format!("http://{other_addr}{}", seen.path))),
            none(),
            vec![],
            vec!["another host".into()],
            false,
        ),
        (
            "a redirect loop",
            Box::new(|seen, _| Reply::redirect(seen.path.clone())),
            none(),
            vec![],
            vec!["more than 5 redirects".into()],
            false,
        ),
        (
            "a redirect to plain HTTP elsewhere",
            manifest(good.clone()),
            Box::new(|_, _| Reply::redirect("http://192.0.2.1/blob".into())),
            vec![],
            vec!["plain HTTP".into()],
            true,
        ),
        (
            "a redirect to another scheme",
            manifest(good.clone()),
            Box::new(|_, _| Reply::redirect("file:///etc/passwd".into())),
            vec![],
            vec!["\"file\" scheme is never fetched".into()],
            true,
        ),
    ];
    for (case, on_manifest, on_blob, args, expected, blob_allowed) in cases {
        let answers: Arc<(Answer, Answer)> = Arc::new((on_manifest, on_blob));
        let addr_cell = Arc::new(std::sync::OnceLock::<SocketAddr>::new());
        let registry = Hostile::serve({
            let (answers, addr_cell) = (answers.clone(), addr_cell.clone());
            move |seen| {
                let addr = *addr_cell.get().unwrap();
                if seen.path.contains("/blobs/") {
                    (answers.1)(seen, addr)
                } else {
                    (answers.0)(seen, addr)
                }
            }
        });
        addr_cell.set(registry.addr).unwrap();
        let agent = Agent::new();
        let before = agent.snapshot();
        let reference = format!("oci://{}/evil/x:1", registry.addr);
        let mut all = args.clone();
        for (flag, value) in [("--connect-timeout", "2"), ("--read-timeout", "5"), ("--timeout", "10")] {
            if !args.contains(&flag) {
                all.extend([flag, value]);
            }
        }
        let pulled = pull(&reference, agent.path(), &all, &[], Duration::from_secs(20), false);
        assert_eq!(pulled.code, 1, "{case}: {}", pulled.stderr);
        assert!(pulled.stderr.contains(&format!("cannot pull {reference}")), "{case}: {}", pulled.stderr);
        for phrase in &expected {
            assert!(pulled.stderr.contains(phrase.as_str()), "{case}: expected {phrase:?} in {}", pulled.stderr);
        }
        assert_eq!(agent.snapshot(), before, "{case}: the agent changed");
        if !blob_allowed {
            assert!(!registry.asked_for_a_blob(), "{case}: the layer was asked for: {:?}", registry.seen());
        }
        assert!(pulled.elapsed < Duration::from_secs(15), "{case}: took {:?}", pulled.elapsed);
    }
    assert!(other.seen().is_empty(), "another host was asked: {:?}", other.seen());
}

/// A registry may send its blobs from elsewhere (a CDN): proem follows
/// such a redirect because the layer is named by its digest and checked
/// against it, and sends the registry's credentials to the registry only.
/// The same redirect serving other bytes installs nothing.
#[test]
fn a_blob_redirected_to_another_host_is_taken_only_with_its_digest_and_no_credentials() {
    let (bytes, digest) = component();
    let good = manifest_json(WASM_CONFIG, &[(WASM_LAYER, &digest, bytes.len() as i64)]);
    for tampered in [false, true] {
        let served = if tampered {
            let mut b = bytes.clone();
            b[200] ^= 0xff;
            b
        } else {
            bytes.clone()
        };
        let cdn = Hostile::serve(move |_| Reply::ok(Body::Bytes(served.clone())));
        let cdn_addr = cdn.addr;
        let addr_cell = Arc::new(std::sync::OnceLock::<SocketAddr>::new());
        let registry = Hostile::serve({
            let (good, addr_cell) = (good.clone(), addr_cell.clone());
            move |seen| {
                let addr = addr_cell.get().unwrap();
                if seen.path.starts_with("/token") {
                    // The token service wants the operator's credentials (u:p).
                    return match seen.authorization.as_deref() {
                        Some("Basic dTpw") => Reply::ok(Body::Bytes(br#"{"token":"T0KEN"}"#.to_vec())),
                        _ => Reply::status(401, Body::Bytes(Vec::new())),
                    };
                }
                if seen.authorization.as_deref() != Some("Bearer T0KEN") {
                    return Reply::status(401, Body::Bytes(Vec::new())).header(
                        "WWW-Authenticate",
                        &format!("Bearer realm=\"http://{addr}/token\",service=\"hostile\""),
                    );
                }
                if seen.path.contains("/blobs/") {
                    Reply::redirect(format!("http://{cdn_addr}/cdn/blob?sig=1"))
                } else {
                    Reply::ok(Body::Bytes(good.clone()))
                }
            }
        });
        addr_cell.set(registry.addr).unwrap();
        let agent = Agent::new();
        let before = agent.snapshot();
        let reference = format!("oci://{}/evil/x:1", registry.addr);
        let credentials = [("PROEM_REGISTRY_USER", "u"), ("PROEM_REGISTRY_PASSWORD", "p")];
        let pulled = pull(&reference, agent.path(), &["--id", "hw"], &credentials, Duration::from_secs(20), false);
        let cdn_seen = cdn.seen();
        assert_eq!(cdn_seen.len(), 1, "{cdn_seen:?}");
        assert_eq!(cdn_seen[0].authorization, None, "the registry's token went to another host");
        let token_asks: Vec<Seen> = registry.seen().into_iter().filter(|s| s.path.starts_with("/token")).collect();
        assert!(token_asks[0].path.contains("scope=repository%3Aevil%2Fx%3Apull"), "{token_asks:?}");
        if tampered {
            assert_eq!(pulled.code, 1, "{}", pulled.stderr);
            assert!(pulled.stderr.contains("the layer's sha256 is"), "{}", pulled.stderr);
            assert_eq!(agent.snapshot(), before);
        } else {
            assert_eq!(pulled.code, 0, "{}", pulled.stderr);
            assert_eq!(std::fs::read(agent.path().join("plugins/hw.wasm")).unwrap(), bytes);
            let toml = std::fs::read_to_string(agent.path().join("proem.toml")).unwrap();
            let manifest_digest = format!("sha256:{}", sha256_hex(&good));
            assert!(toml.contains(&format!("(manifest {manifest_digest})")), "{toml}");
        }
    }
}

/// Peak memory of a pull is the plugin size cap at most, plus what the
/// process holds anyway, whatever the registry sends: each hostile pull's
/// peak RSS against a pull answered 404 at once (the baseline).
#[test]
fn a_hostile_pull_holds_at_most_the_size_cap_in_memory() {
    if !Path::new(TIME).exists() {
        assert!(std::env::var_os("CI").is_none(), "{TIME} is missing: .ci/run installs Debian's time package");
        eprintln!("skipped: {TIME} is not installed (apt-get install time)");
        return;
    }
    let (_, digest) = component();
    let cap = 64 * 1024 * 1024;
    let agent = Agent::new();
    type Routed = Box<dyn Fn(&Seen) -> Reply + Send + Sync>;
    let run = |route: Routed| {
        let registry = Hostile::serve(route);
        let reference = format!("oci://{}/evil/x:1", registry.addr);
        let pulled = pull(&reference, agent.path(), &["--timeout", "60"], &[], Duration::from_secs(90), true);
        assert_eq!(pulled.code, 1, "{}", pulled.stderr);
        pulled.peak_rss_kib.unwrap()
    };
    let baseline = run(Box::new(|_| Reply::status(404, Body::Bytes(Vec::new()))));
    let at_cap = manifest_json(WASM_CONFIG, &[(WASM_LAYER, &digest, cap as i64)]);
    let small = manifest_json(WASM_CONFIG, &[(WASM_LAYER, &digest, 1024 * 1024)]);
    let blob_or = |blob: fn() -> Reply, manifest: Vec<u8>| -> Routed {
        Box::new(move |s| if s.path.contains("/blobs/") { blob() } else { Reply::ok(Body::Bytes(manifest.clone())) })
    };
    let cases: Vec<(&str, Routed, u64)> = vec![
        ("an endless manifest", Box::new(|_| Reply::ok(Body::Endless)), 4 * 1024 * 1024),
        ("an endless error answer", Box::new(|_| Reply::status(500, Body::Endless)), 0),
        ("a 1 MiB layer answered with 2 GiB", blob_or(|| Reply::ok(Body::Announced(2 << 30)), small), 0),
        ("a 64 MiB layer answered with an endless body", blob_or(|| Reply::ok(Body::Endless), at_cap), cap),
    ];
    eprintln!("a pull answered 404: peak RSS {baseline} KiB");
    for (case, route, held) in cases {
        let peak = run(route);
        let over = peak.saturating_sub(baseline);
        eprintln!("{case}: peak RSS {peak} KiB, {over} KiB over the 404 pull");
        // What the case may hold (the manifest cap, or the layer's size
        // field), plus 8 MiB for reqwest's and hyper's buffers.
        let bound_kib = held / 1024 + 8 * 1024;
        assert!(over <= bound_kib, "{case}: {over} KiB over the 404 pull, more than {bound_kib} KiB");
    }
}
