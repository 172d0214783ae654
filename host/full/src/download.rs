//! The HTTP under `proem plugin pull`: GETs from one registry, each body
//! bounded as its bytes arrive.
//!
//! oci-client (which `plugin push` uses) reads a manifest, a token and
//! every error answer whole into memory (`Response::bytes`, `text`) and
//! follows a layer's `urls` to any host, so a registry could make a pull
//! hold gigabytes. Pulls therefore make their GETs here, on the same
//! reqwest oci-client is built on, with four rules that hold for every
//! request whatever the registry answers:
//!
//! - **Every body has a cap before it is read**: a `Content-Length` over
//!   the cap is refused before the body, and the body is read chunk by
//!   chunk, refused at the first chunk that passes the cap. An error
//!   answer is read up to [`MAX_ERROR_BODY_BYTES`], a token up to
//!   [`MAX_TOKEN_BYTES`]. No compression is negotiated (reqwest's decoders
//!   are not built in), so the bytes counted are the bytes held.
//! - **Time is bounded**: a connect timeout, a read timeout (the longest
//!   wait for the next bytes), and the caller's total timeout around the
//!   whole pull (a registry sending a byte a second passes the read
//!   timeout, not the total).
//! - **Where a request may go**: HTTPS, or plain HTTP to a loopback host
//!   only when the registry itself is on loopback; never a URL with
//!   credentials in it. Redirects are followed here, at most
//!   [`MAX_REDIRECTS`], each hop checked by the same rule; a hop to
//!   another origin (scheme, host, port) only for a content-addressed GET
//!   ([`Follow::AnyOrigin`]: a blob or a manifest named by its digest,
//!   whose bytes the caller checks against that digest). A tag's manifest
//!   is only taken from the registry's own origin.
//! - **Credentials stay with the registry**: the `Authorization` header
//!   goes to the registry's origin only, never along a redirect to
//!   another; Basic credentials go to a token service the registry names
//!   only over HTTPS (or loopback).

use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, LOCATION, WWW_AUTHENTICATE};
use reqwest::{StatusCode, Url};
use sha2::{Digest, Sha256};
use std::time::Duration;

/// The most redirects one GET follows.
pub const MAX_REDIRECTS: usize = 5;
/// The most bytes of an error answer read (to quote its start).
pub const MAX_ERROR_BODY_BYTES: usize = 16 * 1024;
/// The most bytes of a token service's answer.
pub const MAX_TOKEN_BYTES: usize = 64 * 1024;

/// How long a pull may wait (`--connect-timeout`, `--read-timeout`,
/// `--timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening one connection (TCP and TLS).
    pub connect: Duration,
    /// The longest wait for the next bytes of an answer.
    pub read: Duration,
    /// The whole pull: every request, redirect and byte.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts { connect: Duration::from_secs(10), read: Duration::from_secs(30), total: Duration::from_secs(300) }
    }
}

/// Whether a GET may follow a redirect to another origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follow {
    /// Only within the registry's origin (a tag's manifest).
    SameOrigin,
    /// Anywhere the URL rule allows: the caller checks the bytes against
    /// the digest that named them.
    AnyOrigin,
}

/// What one GET brought back.
#[derive(Debug)]
pub struct Fetched {
    /// The body, at most the cap it was read with.
    pub bytes: Vec<u8>,
    /// The `Docker-Content-Digest` header, if the registry sent one.
    pub digest_header: Option<String>,
}

/// One registry: its origin, whether it is on this machine, the
/// credentials to offer and, once a challenge asked for one, the
/// `Authorization` to send it.
pub struct Registry {
    http: reqwest::Client,
    base: Url,
    loopback: bool,
    credentials: Option<(String, String)>,
    authorization: Option<Authorization>,
    repository: String,
}

/// What the registry's challenge asked for, sent with every later request
/// to its origin.
enum Authorization {
    /// The credentials, as Basic.
    Basic,
    /// `Authorization: Bearer TOKEN`.
    Bearer(HeaderValue),
}

impl Registry {
    /// A registry at `base` (`https://host[:port]`, or `http://` for a
    /// loopback registry), for pulls from `repository`.
    pub fn new(
        base: &str,
        loopback: bool,
        repository: &str,
        credentials: Option<(String, String)>,
        timeouts: &Timeouts,
    ) -> Result<Registry, String> {
        let base = Url::parse(base).map_err(|e| format!("{base}: not a registry address ({e})"))?;
        allowed(&base, loopback)?;
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeouts.connect)
            .read_timeout(timeouts.read)
            .user_agent(concat!("proem/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot start the HTTP client: {}", chain(&e)))?;
        Ok(Registry { http, base, loopback, credentials, authorization: None, repository: repository.to_string() })
    }

    /// `path` (starting with `/v2/`) at the registry.
    pub fn url(&self, path: &str) -> Result<Url, String> {
        self.base.join(path).map_err(|e| format!("{}{path}: not a URL ({e})", self.base))
    }

    /// GETs `url`, its body read up to `cap` bytes (more is refused as it
    /// arrives), `accept` as the `Accept` header. Redirects are followed
    /// by `follow`'s rule; a 401 from the registry is answered once with
    /// the credentials its challenge asks for.
    pub async fn get(&mut self, url: Url, accept: &str, cap: usize, follow: Follow) -> Result<Fetched, String> {
        let response = self.answer(url, accept, follow).await?;
        let digest_header = response
            .headers()
            .get("docker-content-digest")
            .and_then(|v| v.to_str().ok())
            .map(|s| proem_core::text::one_line(s, 160));
        let bytes = read_capped(response, cap).await?;
        Ok(Fetched { bytes, digest_header })
    }

    /// GETs a blob of exactly `size` bytes whose sha256 is `sha256_hex`:
    /// refused when the answer announces another length, sends one byte
    /// more or fewer, or hashes to anything else. Holds at most `size`
    /// bytes.
    pub async fn get_blob(&mut self, url: Url, size: usize, sha256_hex: &str) -> Result<Vec<u8>, String> {
        let mut response = self.answer(url.clone(), "application/octet-stream", Follow::AnyOrigin).await?;
        if let Some(announced) = response.content_length() {
            if announced != size as u64 {
                return Err(format!(
                    "{}: the registry announces {announced} bytes, but the manifest says the layer is {size} bytes",
                    shown(&url)
                ));
            }
        }
        let mut bytes = Vec::with_capacity(size);
        let mut hasher = Sha256::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| failed(&url, &e))? {
            if chunk.len() > size - bytes.len() {
                return Err(format!(
                    "{}: the registry sent more than the {size} bytes the manifest says the layer has",
                    shown(&url)
                ));
            }
            hasher.update(&chunk);
            bytes.extend_from_slice(&chunk);
        }
        if bytes.len() != size {
            return Err(format!(
                "{}: the layer ended after {} bytes, but the manifest says it has {size}",
                shown(&url),
                bytes.len()
            ));
        }
        let got = proem_core::digest::hex(&hasher.finalize());
        if got != sha256_hex {
            return Err(format!(
                "{}: the layer's sha256 is {got}, not sha256:{sha256_hex} as the manifest says; nothing was written",
                shown(&url)
            ));
        }
        Ok(bytes)
    }

    /// The successful answer to a GET of `url`, after redirects and at
    /// most one authentication; any other status is an error quoting the
    /// start of its body.
    async fn answer(&mut self, url: Url, accept: &str, follow: Follow) -> Result<reqwest::Response, String> {
        let mut authenticated = false;
        let mut url = url;
        let mut hops = 0usize;
        loop {
            allowed(&url, self.loopback)?;
            let mut request = self.http.get(url.clone()).header(ACCEPT, accept);
            let to_registry = same_origin(&url, &self.base);
            if to_registry {
                request = self.with_authorization(request);
            }
            let response = request.send().await.map_err(|e| failed(&url, &e))?;
            let status = response.status();
            if status.is_redirection() {
                hops += 1;
                let next = redirect_target(&url, response.headers(), hops)?;
                if follow == Follow::SameOrigin && !same_origin(&next, &self.base) {
                    return Err(format!(
                        "{} redirects to {}, another host: a tag's manifest is taken from the registry itself \
                         (pull by digest, oci://REGISTRY/REPOSITORY@sha256:…, to accept a mirror)",
                        shown(&url),
                        shown(&next)
                    ));
                }
                url = next;
                continue;
            }
            if status == StatusCode::UNAUTHORIZED && to_registry && !authenticated {
                authenticated = true;
                let challenge = response.headers().get(WWW_AUTHENTICATE).cloned();
                let _ = read_capped(response, MAX_ERROR_BODY_BYTES).await;
                self.authorization = Some(self.authorize(&url, challenge.as_ref()).await?);
                continue;
            }
            if !status.is_success() {
                return Err(refusal(&url, status, response).await);
            }
            return Ok(response);
        }
    }

    /// `request` with the registry's `Authorization`, if a challenge asked
    /// for one.
    fn with_authorization(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match (&self.authorization, &self.credentials) {
            (Some(Authorization::Bearer(token)), _) => request.header(AUTHORIZATION, token.clone()),
            (Some(Authorization::Basic), Some((user, password))) => request.basic_auth(user, Some(password)),
            _ => request,
        }
    }

    /// The `Authorization` a 401's challenge asks for: a Bearer token
    /// from the token service it names (anonymous, or with the
    /// credentials), or Basic with the credentials.
    async fn authorize(&self, url: &Url, challenge: Option<&HeaderValue>) -> Result<Authorization, String> {
        let denied = |why: &str| {
            format!(
                "{}: the registry asks for credentials ({why}); set PROEM_REGISTRY_USER and PROEM_REGISTRY_PASSWORD",
                shown(url)
            )
        };
        let text = challenge.and_then(|v| v.to_str().ok()).unwrap_or("");
        match parse_challenge(text) {
            Some(Challenge::Bearer { realm, service }) => {
                let token = self.token(&realm, service.as_deref()).await?;
                HeaderValue::from_str(&format!("Bearer {token}"))
                    .map(Authorization::Bearer)
                    .map_err(|_| format!("{}: the token service's token is not a header value", shown(&realm)))
            }
            Some(Challenge::Basic) if self.credentials.is_some() => Ok(Authorization::Basic),
            Some(Challenge::Basic) => Err(denied("Basic")),
            None => Err(denied("no challenge proem can answer")),
        }
    }

    /// A pull token from the token service at `realm`.
    async fn token(&self, realm: &Url, service: Option<&str>) -> Result<String, String> {
        allowed(realm, self.loopback)?;
        let scope = format!("repository:{}:pull", self.repository);
        let mut query = vec![("scope", scope.as_str())];
        if let Some(service) = service {
            query.push(("service", service));
        }
        let mut request = self.http.get(realm.clone()).query(&query);
        // `allowed` passed: HTTPS, or loopback on both ends.
        if let Some((user, password)) = &self.credentials {
            request = request.basic_auth(user, Some(password));
        }
        let response = request.send().await.map_err(|e| failed(realm, &e))?;
        let status = response.status();
        if !status.is_success() {
            return Err(refusal(realm, status, response).await);
        }
        let body = read_capped(response, MAX_TOKEN_BYTES).await?;
        #[derive(serde::Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body)
            .map_err(|e| format!("{}: the token service's answer is not a token ({e})", shown(realm)))?;
        token.token.or(token.access_token).filter(|t| !t.is_empty()).ok_or_else(|| {
            format!("{}: the token service's answer has no token (`token` or `access_token`)", shown(realm))
        })
    }
}

/// The URL rule: HTTPS anywhere, plain HTTP only to a loopback host and
/// only for a loopback registry, no credentials in the URL.
pub fn allowed(url: &Url, registry_is_loopback: bool) -> Result<(), String> {
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!("{}: a URL with credentials in it is never fetched", shown(url)));
    }
    match url.scheme() {
        "https" => Ok(()),
        "http" if registry_is_loopback && is_loopback_host(url) => Ok(()),
        "http" => Err(format!(
            "{}: plain HTTP is used only between a registry on this machine and this machine; \
             every other address is fetched over HTTPS",
            shown(url)
        )),
        other => {
            Err(format!("{}: the {other:?} scheme is never fetched (only https, or http on loopback)", shown(url)))
        }
    }
}

/// Whether `url`'s host is `localhost` or a loopback address.
pub fn is_loopback_host(url: &Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let host = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether two URLs have one origin (scheme, host and port).
fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme() && a.host() == b.host() && a.port_or_known_default() == b.port_or_known_default()
}

/// Where a redirect answer points, resolved against `url`; refused past
/// [`MAX_REDIRECTS`] hops or without a usable `Location`.
fn redirect_target(url: &Url, headers: &HeaderMap, hops: usize) -> Result<Url, String> {
    if hops > MAX_REDIRECTS {
        return Err(format!("{}: more than {MAX_REDIRECTS} redirects; refused", shown(url)));
    }
    let location = headers
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| format!("{}: a redirect without a usable Location header", shown(url)))?;
    url.join(location).map_err(|e| {
        format!("{}: redirects to {:?}, not a URL ({e})", shown(url), proem_core::text::one_line(location, 120))
    })
}

/// Reads `response`'s body, refusing it (before reading, when it
/// announces its length) once it passes `cap` bytes.
async fn read_capped(mut response: reqwest::Response, cap: usize) -> Result<Vec<u8>, String> {
    let url = response.url().clone();
    let too_big =
        || format!("{}: the answer is over {cap} bytes ({}), the limit for it; refused", shown(&url), mib(cap));
    if response.content_length().is_some_and(|n| n > cap as u64) {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| failed(&url, &e))? {
        if chunk.len() > cap - bytes.len() {
            return Err(too_big());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// The error for a status that is not success: the status and the start
/// of what the registry said (one line, at most 200 characters of the
/// first [`MAX_ERROR_BODY_BYTES`]).
async fn refusal(url: &Url, status: StatusCode, mut response: reqwest::Response) -> String {
    let mut said = Vec::new();
    while said.len() < MAX_ERROR_BODY_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => said.extend_from_slice(&chunk[..chunk.len().min(MAX_ERROR_BODY_BYTES - said.len())]),
            _ => break,
        }
    }
    let said = proem_core::text::one_line(&String::from_utf8_lossy(&said), 200);
    let hint = match status {
        StatusCode::NOT_FOUND => " (check the repository and tag)",
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
            " (set PROEM_REGISTRY_USER and PROEM_REGISTRY_PASSWORD if the registry needs them)"
        }
        _ => "",
    };
    if said.is_empty() {
        format!("{}: HTTP {status}{hint}", shown(url))
    } else {
        format!("{}: HTTP {status}{hint}: {said}", shown(url))
    }
}

/// A failed request, with what failed (the timeout to raise, if one
/// fired) and reqwest's chain of causes.
fn failed(url: &Url, e: &reqwest::Error) -> String {
    let what = if e.is_connect() && e.is_timeout() {
        "cannot connect within the connect timeout (--connect-timeout SECS)"
    } else if e.is_timeout() {
        "no bytes within the read timeout (--read-timeout SECS)"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "the request failed"
    };
    format!("{}: {what}: {}", shown(url), chain(e))
}

/// An error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    proem_core::text::one_line(&text, 300)
}

/// A URL as an error shows it: one line, without its query.
fn shown(url: &Url) -> String {
    let mut url = url.clone();
    url.set_query(None);
    proem_core::text::one_line(url.as_str(), 200)
}

/// `n` bytes in MiB, for messages.
fn mib(n: usize) -> String {
    format!("{} MiB", n / (1024 * 1024))
}

/// What a `WWW-Authenticate` header asks for.
#[derive(Debug, PartialEq, Eq)]
enum Challenge {
    /// A token from `realm`.
    Bearer { realm: Url, service: Option<String> },
    /// Basic credentials.
    Basic,
}

/// The first challenge proem can answer in `header` (parsed by http-auth,
/// as oci-client does).
fn parse_challenge(header: &str) -> Option<Challenge> {
    let mut basic = false;
    for challenge in http_auth::parser::ChallengeParser::new(header).flatten() {
        if challenge.scheme.eq_ignore_ascii_case("basic") {
            basic = true;
        } else if challenge.scheme.eq_ignore_ascii_case("bearer") {
            let param = |name: &str| {
                challenge.params.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.to_unescaped())
            };
            let realm = param("realm").and_then(|r| Url::parse(&r).ok())?;
            return Some(Challenge::Bearer { realm, service: param("service") });
        }
    }
    basic.then_some(Challenge::Basic)
}

/// The lowercase hex of `sha256:HEX`, refusing any other algorithm or a
/// malformed digest.
pub fn sha256_of_digest(digest: &str) -> Option<&str> {
    let hex = digest.strip_prefix("sha256:")?;
    (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))).then_some(hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn plain_http_only_between_loopback_ends_and_never_credentials_in_a_url() {
        assert!(allowed(&url("https://ghcr.io/v2/"), false).is_ok());
        assert!(allowed(&url("http://127.0.0.1:5000/v2/"), true).is_ok());
        assert!(allowed(&url("http://[::1]:5000/v2/"), true).is_ok());
        assert!(allowed(&url("http://localhost/v2/"), true).is_ok());
        // A remote registry never sends proem to plain HTTP, even on loopback.
        assert!(allowed(&url("http://127.0.0.1:5000/v2/"), false).is_err());
        // A loopback registry never sends proem to plain HTTP elsewhere.
        assert!(allowed(&url("http://10.0.0.1/v2/"), true).is_err());
        assert!(allowed(&url("http://127.0.0.1.example.com/v2/"), true).is_err());
        assert!(allowed(&url("https://user:pw@ghcr.io/v2/"), false).is_err());
        assert!(allowed(&url("file:///etc/passwd"), true).is_err());
        assert!(allowed(&url("ftp://127.0.0.1/x"), true).is_err());
    }

    #[test]
    fn challenges_are_read_by_scheme() {
        assert_eq!(
            parse_challenge(r#"Bearer realm="https://ghcr.io/token",service="ghcr.io",scope="repository:a/b:pull""#),
            Some(Challenge::Bearer { realm: url("https://ghcr.io/token"), service: Some("ghcr.io".into()) })
        );
        assert_eq!(parse_challenge(r#"Basic realm="registry""#), Some(Challenge::Basic));
        assert_eq!(parse_challenge("Bearer service=\"x\""), None, "no realm");
        assert_eq!(parse_challenge("Negotiate"), None);
        assert_eq!(parse_challenge(""), None);
    }

    #[test]
    fn only_well_formed_sha256_digests_are_accepted() {
        let hex = "a".repeat(64);
        assert_eq!(sha256_of_digest(&format!("sha256:{hex}")), Some(hex.as_str()));
        for bad in [
            format!("sha512:{hex}"),
            format!("sha256:{}", "A".repeat(64)),
            format!("sha256:{}", "a".repeat(63)),
            "sha256:../../etc".to_string(),
            String::new(),
        ] {
            assert_eq!(sha256_of_digest(&bad), None, "{bad}");
        }
    }

    #[test]
    fn redirects_resolve_relative_locations_and_stop_after_the_limit() {
        let mut headers = HeaderMap::new();
        headers.insert(LOCATION, HeaderValue::from_static("/v2/x/blobs/y"));
        let from = url("http://127.0.0.1:5000/v2/a/manifests/1");
        assert_eq!(redirect_target(&from, &headers, 1).unwrap(), url("http://127.0.0.1:5000/v2/x/blobs/y"));
        assert!(redirect_target(&from, &headers, MAX_REDIRECTS + 1).unwrap_err().contains("redirects"));
        assert!(redirect_target(&from, &HeaderMap::new(), 1).unwrap_err().contains("Location"));
        assert!(same_origin(&url("https://a.io/x"), &url("https://a.io:443/y")));
        assert!(!same_origin(&url("http://127.0.0.1:5000/"), &url("http://127.0.0.1:5001/")));
        assert!(!same_origin(&url("http://127.0.0.1:5000/"), &url("http://localhost:5000/")));
    }
}
