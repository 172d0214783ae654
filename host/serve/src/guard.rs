//! Who the service answers: the rules every request meets before a route
//! sees it, token or not, so that no web page the operator visits can use
//! the service through the operator's browser.
//!
//! - **Host** (DNS rebinding: a page on `evil.example` whose name is made
//!   to resolve to 127.0.0.1 reaches the service as a same-origin page):
//!   exactly one `Host`, an authority without user info, whose host is a
//!   loopback address, `localhost`, the listen address (any IP literal when
//!   listening on 0.0.0.0 or `::`, since an IP literal cannot be rebound) or
//!   an `--allow-host` name. Anything else is 421.
//! - **Origin** (a page elsewhere posting to the service): a request that
//!   carries an `Origin` is answered only when it is the served origin,
//!   `http://` or `https://` and the request's own `Host`; `Sec-Fetch-Site`
//!   (sent by browsers on every request, `<script>` and `<img>` loads too)
//!   must be `same-origin` or `none`, but for a top-level navigation. Else 403.
//! - **Content-Type** (the requests a page may send cross-origin without
//!   asking first): a request with a body must say `application/json`.
//!   Else 415.
//!
//! No CORS header is ever sent; every response says
//! `Cross-Origin-Resource-Policy: same-origin` and `nosniff`.

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode, Uri};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The names and addresses a service answers to.
#[derive(Debug, Clone)]
pub struct Guard {
    listen: SocketAddr,
    /// `--allow-host` names, lowercase, without a trailing dot.
    allowed: Vec<String>,
}

/// Why a request is refused: its status, its problem slug and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// 421, 403 or 415.
    pub status: StatusCode,
    /// The problem type's slug.
    pub slug: &'static str,
    /// What is wrong and the fix.
    pub detail: String,
}

/// A parsed `Host` (or URI authority).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Ip(IpAddr),
    /// Lowercase, without a trailing dot.
    Name(String),
}

impl Guard {
    /// The guard of a service listening on `listen`, also answering to the
    /// `allow_hosts` names (`--allow-host`). A name that is not a host name
    /// or IP literal is an error naming it.
    pub fn new(listen: SocketAddr, allow_hosts: &[String]) -> Result<Guard, String> {
        let mut allowed = Vec::new();
        for name in allow_hosts {
            match parse_host(name) {
                Some(Host::Name(n)) => allowed.push(n),
                Some(Host::Ip(_)) => {
                    return Err(format!(
                        "--allow-host {name}: an IP address is not a name; loopback addresses and the --listen \
                         address are always allowed, and every IP address is when listening on 0.0.0.0 or ::"
                    ))
                }
                None => {
                    return Err(format!(
                        "--allow-host {:?}: not a host name (letters, digits and hyphens in dot-separated labels, \
                         no port)",
                        proem_core::text::one_line(name, 80)
                    ))
                }
            }
        }
        allowed.sort();
        allowed.dedup();
        Ok(Guard { listen, allowed })
    }

    /// Checks a request's head against the three rules (see the module docs).
    pub fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        let host = self.check_host(uri, headers)?;
        check_origin(host, method, headers)?;
        check_content_type(headers)
    }

    /// The request's `Host`, when the service answers to it.
    fn check_host<'h>(&self, uri: &Uri, headers: &'h HeaderMap) -> Result<&'h str, Refusal> {
        let mut hosts = headers.get_all(header::HOST).iter();
        let (Some(value), None) = (hosts.next(), hosts.next()) else {
            return Err(misdirected("the request must carry exactly one Host header".into()));
        };
        let text = value.to_str().map_err(|_| misdirected("the Host header is not text".into()))?;
        self.check_authority(text)?;
        // An absolute request target names a host too: it must pass as well.
        if let Some(authority) = uri.authority() {
            self.check_authority(authority.as_str())?;
        }
        Ok(text)
    }

    fn check_authority(&self, authority: &str) -> Result<(), Refusal> {
        let shown = proem_core::text::one_line(authority, 80);
        let host = parse_authority(authority)
            .ok_or_else(|| misdirected(format!("the Host {shown:?} is not a host name or IP address with a port")))?;
        if self.answers_to(&host) {
            Ok(())
        } else {
            Err(misdirected(format!(
                "this service does not answer to the Host {shown:?}: only to loopback addresses, localhost and \
                 its --listen address; start it with --allow-host NAME to answer to another name"
            )))
        }
    }

    fn answers_to(&self, host: &Host) -> bool {
        match host {
            Host::Ip(ip) => {
                let listen = self.listen.ip();
                ip.to_canonical().is_loopback() || *ip == listen || listen.is_unspecified()
            }
            Host::Name(name) => name == "localhost" || self.allowed.binary_search(name).is_ok(),
        }
    }
}

fn misdirected(detail: String) -> Refusal {
    Refusal { status: StatusCode::MISDIRECTED_REQUEST, slug: "wrong-host", detail }
}

fn forbidden(detail: String) -> Refusal {
    Refusal { status: StatusCode::FORBIDDEN, slug: "cross-origin", detail }
}

/// A request from a browser must come from the page the service serves
/// itself (see the module docs). `host` is the request's checked `Host`.
fn check_origin(host: &str, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
    let mut origins = headers.get_all(header::ORIGIN).iter();
    match (origins.next(), origins.next()) {
        (None, _) => {}
        (Some(origin), None) if is_served_origin(origin, host) => {}
        (Some(origin), _) => {
            let shown = proem_core::text::one_line(&String::from_utf8_lossy(origin.as_bytes()), 80);
            return Err(forbidden(format!(
                "a request from the page at Origin {shown:?} is refused: this service answers browsers only on \
                 the page it serves itself (http://{}/)",
                proem_core::text::one_line(host, 80)
            )));
        }
    }
    let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_ascii_lowercase);
    let site = value("sec-fetch-site");
    let navigation = matches!(*method, Method::GET | Method::HEAD)
        && value("sec-fetch-mode").as_deref() == Some("navigate")
        && value("sec-fetch-dest").as_deref() == Some("document");
    match site.as_deref() {
        None | Some("same-origin") | Some("none") => Ok(()),
        Some(_) if navigation => Ok(()),
        Some(other) => Err(forbidden(format!(
            "a {} request from another site (Sec-Fetch-Site: {}) is refused: this service answers browsers only \
             on the page it serves itself",
            method,
            proem_core::text::one_line(other, 40)
        ))),
    }
}

/// Whether `origin` is `http://HOST` or `https://HOST` for the request's
/// own `Host` (ASCII case ignored: both are host names).
fn is_served_origin(origin: &HeaderValue, host: &str) -> bool {
    let Ok(origin) = origin.to_str() else { return false };
    let lower = origin.to_ascii_lowercase();
    let authority = lower.strip_prefix("http://").or_else(|| lower.strip_prefix("https://"));
    authority.is_some_and(|a| a.eq_ignore_ascii_case(host))
}

/// A request with a body says `Content-Type: application/json` (parameters
/// such as `charset` allowed): the one type a cross-origin page cannot send
/// without the browser asking the service first.
fn check_content_type(headers: &HeaderMap) -> Result<(), Refusal> {
    let has_body = headers.contains_key(header::TRANSFER_ENCODING)
        || headers.get_all(header::CONTENT_LENGTH).iter().any(|v| v.as_bytes() != b"0");
    if !has_body {
        return Ok(());
    }
    let mut types = headers.get_all(header::CONTENT_TYPE).iter();
    let json = match (types.next(), types.next()) {
        (Some(value), None) => value
            .to_str()
            .ok()
            .and_then(|v| v.split(';').next())
            .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json")),
        _ => false,
    };
    if json {
        return Ok(());
    }
    let given = headers
        .get(header::CONTENT_TYPE)
        .map(|v| format!("{:?}", proem_core::text::one_line(&String::from_utf8_lossy(v.as_bytes()), 60)))
        .unwrap_or_else(|| "none".into());
    Err(Refusal {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        slug: "unsupported-media-type",
        detail: format!("the body must be JSON sent with `Content-Type: application/json` (given: {given})"),
    })
}

/// `host[:port]`, `[v6][:port]`: its host, when it is well formed (no user
/// info, a port of 1 to 5 digits up to 65535 when there is a colon).
fn parse_authority(authority: &str) -> Option<Host> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let ip: Ipv6Addr = inside.parse().ok()?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        return port_ok(port).then_some(Host::Ip(IpAddr::V6(ip)));
    } else {
        match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if !port_ok(port) {
        return None;
    }
    parse_host(host)
}

fn port_ok(port: Option<&str>) -> bool {
    match port {
        None => true,
        Some(p) => {
            (1..=5).contains(&p.len())
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n != 0)
        }
    }
}

/// A dotted IPv4 address, or a host name (RFC 1123 labels of letters,
/// digits and hyphens, one trailing dot allowed and dropped, lowercased).
/// Whatever a resolver or browser might read as another IPv4 form
/// (`127.1`, `0x7f.0.0.1`, `2130706433`: a last label starting with a
/// digit) is not a name.
fn parse_host(host: &str) -> Option<Host> {
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return Some(Host::Ip(IpAddr::V4(ip)));
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    let label_ok = |l: &str| {
        (1..=63).contains(&l.len())
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    let last = name.rsplit('.').next().unwrap_or("");
    let ok = (1..=253).contains(&name.len())
        && name.split('.').all(label_ok)
        && !last.starts_with(|c: char| c.is_ascii_digit());
    ok.then_some(Host::Name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(listen: &str, allowed: &[&str]) -> Guard {
        let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        Guard::new(listen.parse().unwrap(), &allowed).unwrap()
    }

    fn host_only(g: &Guard, host: &str) -> Result<(), Refusal> {
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        g.check(&Method::GET, &Uri::from_static("/v1/agents"), &headers)
    }

    #[test]
    fn hosts_a_rebinding_page_could_send_are_refused_and_loopback_ones_answered() {
        let g = guard("127.0.0.1:7878", &["proem.internal"]);
        for ok in [
            "localhost",
            "LocalHost:7878",
            "localhost.",
            "127.0.0.1",
            "127.9.8.7:1",
            "[::1]",
            "[::1]:7878",
            "[0:0:0:0:0:0:0:1]:7878",
            "[::ffff:127.0.0.1]",
            "proem.internal",
            "PROEM.internal.:443",
        ] {
            assert_eq!(host_only(&g, ok), Ok(()), "{ok}");
        }
        for refused in [
            "evil.example",
            "evil.example:7878",
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "localhost:7878@evil.example",
            "user@localhost",
            "localhost:0",
            "localhost:65536",
            "localhost:",
            "localhost:78:78",
            "::1",
            "[::1",
            "[fe80::1%25eth0]",
            "[::2]",
            "127.1",
            "0x7f.0.0.1",
            "2130706433",
            "10.0.0.1",
            "0.0.0.0",
            "localhost..",
            "",
            "a.proem.internal",
        ] {
            assert_eq!(host_only(&g, refused).map_err(|r| r.status), Err(StatusCode::MISDIRECTED_REQUEST), "{refused}");
        }
    }

    #[test]
    fn listening_on_every_address_answers_ip_literals_but_not_names() {
        let g = guard("0.0.0.0:7878", &[]);
        assert_eq!(host_only(&g, "192.168.1.20:7878"), Ok(()));
        assert!(host_only(&g, "nas.home.example:7878").is_err());
        let g = guard("192.168.1.20:7878", &[]);
        assert_eq!(host_only(&g, "192.168.1.20:7878"), Ok(()));
        assert!(host_only(&g, "192.168.1.21:7878").is_err());
    }

    #[test]
    fn allow_host_takes_names_only() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let listen = "127.0.0.1:1".parse().unwrap();
        assert!(Guard::new(listen, &names(&["proem.example", "box"])).is_ok());
        for bad in ["10.0.0.1", "proem.example:80", "*.example", "", "a b", "-x.example"] {
            let err = Guard::new(listen, &names(&[bad])).unwrap_err();
            assert!(err.starts_with("--allow-host"), "{err}");
        }
    }
}
