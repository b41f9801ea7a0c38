//! The Kubernetes CEL libraries of kube-apiserver 1.32 (`k8s.io/apiserver/pkg/cel/library`):
//! quantities (`quantity.go`), IP addresses and CIDRs (`ip.go`, `cidr.go`), URLs (`urls.go`)
//! and named formats (`format.go`).

use std::cmp::Ordering;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use base64::Engine as _;
use wasmgate_apimachinery::validation as v;

// ---------------------------------------------------------------------------------------------
// Quantities
// ---------------------------------------------------------------------------------------------

/// Longest mantissa and largest exponent accepted, so that arithmetic stays small.
const MAX_DIGITS: usize = 1000;
const MAX_EXP: i32 = 1000;

const ERR_FORMAT: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const ERR_NUMERIC: &str = "unable to parse numeric part of quantity";
const ERR_SUFFIX: &str = "unable to parse quantity's suffix";

/// An exact `resource.Quantity` value: `±digits × 10^exp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Quantity {
    neg: bool,
    /// Most significant first, no leading zeros; empty is zero.
    digits: Vec<u8>,
    exp: i32,
}

impl Quantity {
    fn normalize(mut self) -> Quantity {
        let lead = self.digits.iter().take_while(|d| **d == 0).count();
        self.digits.drain(..lead);
        while self.digits.last() == Some(&0) {
            self.digits.pop();
            self.exp += 1;
        }
        if self.digits.is_empty() {
            self.neg = false;
            self.exp = 0;
        }
        self
    }

    /// `resource.ParseQuantity`.
    pub(crate) fn parse(s: &str) -> Result<Quantity, String> {
        if s.is_empty() {
            return Err(ERR_FORMAT.to_owned());
        }
        let b = s.as_bytes();
        let mut pos = 0;
        let mut neg = false;
        match b[0] {
            b'-' => {
                neg = true;
                pos = 1;
            }
            b'+' => pos = 1,
            _ => {}
        }
        let int_start = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        let int_part = &s[int_start..pos];
        let mut frac_part = "";
        if pos < b.len() && b[pos] == b'.' {
            pos += 1;
            let f = pos;
            while pos < b.len() && b[pos].is_ascii_digit() {
                pos += 1;
            }
            frac_part = &s[f..pos];
        }
        let suffix_start = pos;
        while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
            pos += 1;
        }
        if pos < b.len() && matches!(b[pos], b'-' | b'+') {
            pos += 1;
        }
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        if pos < b.len() {
            return Err(ERR_FORMAT.to_owned());
        }
        let suffix = &s[suffix_start..];
        let (exp10, pow2) = match suffix {
            "" => (0, 0),
            "n" => (-9, 0),
            "u" => (-6, 0),
            "m" => (-3, 0),
            "k" => (3, 0),
            "M" => (6, 0),
            "G" => (9, 0),
            "T" => (12, 0),
            "P" => (15, 0),
            "E" => (18, 0),
            "Ki" => (0, 10),
            "Mi" => (0, 20),
            "Gi" => (0, 30),
            "Ti" => (0, 40),
            "Pi" => (0, 50),
            "Ei" => (0, 60),
            other => match other.strip_prefix(['e', 'E']) {
                Some(e) if !e.is_empty() => {
                    let e: i32 = e.parse().map_err(|_| ERR_SUFFIX.to_owned())?;
                    (e, 0)
                }
                _ => return Err(ERR_SUFFIX.to_owned()),
            },
        };
        if int_part.len() + frac_part.len() > MAX_DIGITS {
            return Err(ERR_NUMERIC.to_owned());
        }
        let mut digits: Vec<u8> = int_part
            .bytes()
            .chain(frac_part.bytes())
            .map(|d| d - b'0')
            .collect();
        let frac_len = i32::try_from(frac_part.len()).map_err(|_| ERR_NUMERIC)?;
        let exp = exp10 - frac_len;
        if !(-MAX_EXP..=MAX_EXP).contains(&exp) {
            return Err(ERR_NUMERIC.to_owned());
        }
        for _ in 0..pow2 {
            digits = double(&digits);
        }
        Ok(Quantity { neg, digits, exp }.normalize())
    }

    pub(crate) fn from_int(i: i64) -> Quantity {
        Quantity {
            neg: i < 0,
            digits: i
                .unsigned_abs()
                .to_string()
                .bytes()
                .map(|d| d - b'0')
                .collect(),
            exp: 0,
        }
        .normalize()
    }

    pub(crate) fn sign(&self) -> i64 {
        if self.digits.is_empty() {
            0
        } else if self.neg {
            -1
        } else {
            1
        }
    }

    fn aligned(a: &Quantity, b: &Quantity) -> (Vec<u8>, Vec<u8>) {
        let exp = a.exp.min(b.exp);
        let pad = |q: &Quantity| {
            let mut d = q.digits.clone();
            d.extend(std::iter::repeat_n(
                0,
                usize::try_from(q.exp - exp).unwrap_or(0),
            ));
            d
        };
        (pad(a), pad(b))
    }

    pub(crate) fn cmp(&self, other: &Quantity) -> Ordering {
        match (self.sign(), other.sign()) {
            (a, b) if a != b => a.cmp(&b),
            (0, _) => Ordering::Equal,
            (s, _) => {
                let (x, y) = Quantity::aligned(self, other);
                let mag = cmp_mag(&x, &y);
                if s < 0 { mag.reverse() } else { mag }
            }
        }
    }

    pub(crate) fn add(&self, other: &Quantity) -> Quantity {
        let exp = self.exp.min(other.exp);
        let (x, y) = Quantity::aligned(self, other);
        let (neg, digits) = if self.neg == other.neg {
            (self.neg, add_mag(&x, &y))
        } else {
            match cmp_mag(&x, &y) {
                Ordering::Less => (other.neg, sub_mag(&y, &x)),
                _ => (self.neg, sub_mag(&x, &y)),
            }
        };
        Quantity { neg, digits, exp }.normalize()
    }

    pub(crate) fn negate(&self) -> Quantity {
        Quantity {
            neg: !self.neg,
            ..self.clone()
        }
        .normalize()
    }

    /// `AsInt64`.
    pub(crate) fn as_i64(&self) -> Option<i64> {
        if self.digits.is_empty() {
            return Some(0);
        }
        if self.exp < 0 || self.digits.len() + usize::try_from(self.exp).ok()? > 19 {
            return None;
        }
        let mut v: i128 = 0;
        for d in &self.digits {
            v = v * 10 + i128::from(*d);
        }
        for _ in 0..self.exp {
            v *= 10;
        }
        i64::try_from(if self.neg { -v } else { v }).ok()
    }

    /// `AsApproximateFloat64`.
    pub(crate) fn as_f64(&self) -> f64 {
        if self.digits.is_empty() {
            return 0.0;
        }
        let digits: String = self.digits.iter().map(|d| char::from(b'0' + d)).collect();
        let f: f64 = format!("{digits}e{}", self.exp)
            .parse()
            .unwrap_or(f64::INFINITY);
        if self.neg { -f } else { f }
    }
}

fn double(d: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(d.len() + 1);
    let mut carry = 0;
    for digit in d.iter().rev() {
        let v = digit * 2 + carry;
        out.push(v % 10);
        carry = v / 10;
    }
    if carry > 0 {
        out.push(carry);
    }
    out.reverse();
    out
}

fn cmp_mag(x: &[u8], y: &[u8]) -> Ordering {
    let strip = |d: &[u8]| d.iter().position(|v| *v != 0).map_or(0, |p| d.len() - p);
    let (lx, ly) = (strip(x), strip(y));
    lx.cmp(&ly)
        .then_with(|| x[x.len() - lx..].cmp(&y[y.len() - ly..]))
}

fn add_mag(x: &[u8], y: &[u8]) -> Vec<u8> {
    let n = x.len().max(y.len());
    let mut out = Vec::with_capacity(n + 1);
    let mut carry = 0;
    for i in 0..n {
        let a = if i < x.len() { x[x.len() - 1 - i] } else { 0 };
        let b = if i < y.len() { y[y.len() - 1 - i] } else { 0 };
        let v = a + b + carry;
        out.push(v % 10);
        carry = v / 10;
    }
    if carry > 0 {
        out.push(carry);
    }
    out.reverse();
    out
}

/// `x - y` for `x >= y`.
fn sub_mag(x: &[u8], y: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(x.len());
    let mut borrow = 0i8;
    for i in 0..x.len() {
        let a = i8::try_from(x[x.len() - 1 - i]).unwrap_or(0);
        let b = if i < y.len() {
            i8::try_from(y[y.len() - 1 - i]).unwrap_or(0)
        } else {
            0
        };
        let mut v = a - b - borrow;
        borrow = 0;
        if v < 0 {
            v += 10;
            borrow = 1;
        }
        out.push(u8::try_from(v).unwrap_or(0));
    }
    out.reverse();
    out
}

// ---------------------------------------------------------------------------------------------
// IP addresses and CIDRs
// ---------------------------------------------------------------------------------------------

/// Go's `netip.ParseAddr` (no leading zeros in IPv4 octets), minus zones and IPv4-mapped IPv6
/// addresses, as kube's `parseIPAddr`.
pub(crate) fn parse_ip(raw: &str) -> Result<IpAddr, String> {
    if raw.contains('%') {
        return Err(format!("IP address {raw:?} with zone value is not allowed"));
    }
    let bad = || {
        format!(
            "IP Address {raw:?} parse error during conversion from string: ParseAddr({raw:?}): unable to parse IP"
        )
    };
    let v4_part = raw.rsplit(':').next().unwrap_or(raw);
    if v4_part.contains('.')
        && v4_part
            .split('.')
            .any(|o| o.len() > 1 && o.starts_with('0'))
    {
        return Err(bad());
    }
    let addr: IpAddr = raw.parse().map_err(|_| bad())?;
    if let IpAddr::V6(a) = addr
        && a.to_ipv4_mapped().is_some()
    {
        return Err(format!("IPv4-mapped IPv6 address {raw:?} is not allowed"));
    }
    Ok(addr)
}

/// A parsed CIDR: the address as written and the prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cidr {
    pub(crate) addr: IpAddr,
    pub(crate) bits: u8,
}

/// Go's `netip.ParsePrefix`, minus IPv4-mapped IPv6 addresses, as kube's `parseCIDR`.
pub(crate) fn parse_cidr(raw: &str) -> Result<Cidr, String> {
    let wrap = |e: String| {
        format!(
            "network address parse error during conversion from string: network address parse error during conversion from string: {e}"
        )
    };
    let Some((addr, bits)) = raw.rsplit_once('/') else {
        return Err(wrap(format!("netip.ParsePrefix({raw:?}): no '/'")));
    };
    if addr.contains('%') {
        return Err(wrap(format!(
            "netip.ParsePrefix({raw:?}): IPv6 zones cannot be present in a prefix"
        )));
    }
    let parsed: IpAddr = match parse_ip(addr) {
        Ok(a) => a,
        Err(e) if e.starts_with("IPv4-mapped") => {
            return Err(format!(
                "network address parse error during conversion from string: IPv4-mapped IPv6 address {raw:?} is not allowed"
            ));
        }
        Err(_) => {
            return Err(wrap(format!(
                "netip.ParsePrefix({raw:?}): ParseAddr({addr:?}): unable to parse IP"
            )));
        }
    };
    let max = if parsed.is_ipv4() { 32 } else { 128 };
    let valid_bits = !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && !(bits.len() > 1 && bits.starts_with('0'));
    let n: u8 = match bits.parse() {
        Ok(n) if valid_bits && n <= max => n,
        _ => {
            return Err(wrap(format!(
                "netip.ParsePrefix({raw:?}): bad bits after slash: {bits:?}"
            )));
        }
    };
    Ok(Cidr {
        addr: parsed,
        bits: n,
    })
}

fn mask(addr: IpAddr, bits: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let m = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(bits))
            };
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & m))
        }
        IpAddr::V6(a) => {
            let m = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(bits))
            };
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & m))
        }
    }
}

impl Cidr {
    pub(crate) fn masked(self) -> Cidr {
        Cidr {
            addr: mask(self.addr, self.bits),
            bits: self.bits,
        }
    }

    pub(crate) fn contains(self, ip: IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4() && mask(ip, self.bits) == mask(self.addr, self.bits)
    }

    /// `Overlaps(other) && Bits() <= other.Bits()`.
    pub(crate) fn contains_cidr(self, other: Cidr) -> bool {
        if self.addr.is_ipv4() != other.addr.is_ipv4() {
            return false;
        }
        let bits = self.bits.min(other.bits);
        mask(self.addr, bits) == mask(other.addr, bits) && self.bits <= other.bits
    }

    pub(crate) fn format(self) -> String {
        format!("{}/{}", self.addr, self.bits)
    }
}

pub(crate) fn ip_family(ip: IpAddr) -> i64 {
    if ip.is_ipv4() { 4 } else { 6 }
}

pub(crate) fn is_link_local_multicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.octets()[..3] == [224, 0, 0],
        IpAddr::V6(a) => a.segments()[0] & 0xff0f == 0xff02,
    }
}

pub(crate) fn is_link_local_unicast(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(a) => a.octets()[..2] == [169, 254],
        IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// Go's `netip.Addr.IsGlobalUnicast`.
pub(crate) fn is_global_unicast(ip: IpAddr) -> bool {
    if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() || is_link_local_unicast(ip) {
        return false;
    }
    !matches!(ip, IpAddr::V4(a) if a == Ipv4Addr::BROADCAST)
}

// ---------------------------------------------------------------------------------------------
// URLs
// ---------------------------------------------------------------------------------------------

/// The parts of a URL kube's library exposes (Go's `net/url.URL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Url {
    pub(crate) scheme: String,
    pub(crate) host: String,
    pub(crate) raw_path: String,
    pub(crate) raw_query: String,
    /// What follows `scheme:` when it does not start with `/` (`mailto:a@example.com`). No
    /// accessor exposes it, but URLs compare equal only with equal opaque parts (kube
    /// compares the whole URL).
    pub(crate) opaque: String,
}

impl Url {
    /// `url.URL.Hostname()`.
    pub(crate) fn hostname(&self) -> String {
        let (host, _) = split_host_port(&self.host);
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned()
    }

    /// `url.URL.Port()`.
    pub(crate) fn port(&self) -> String {
        split_host_port(&self.host).1.to_owned()
    }

    /// `url.URL.Query()`: keys and values unescaped, in first-seen order.
    pub(crate) fn query(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for part in self.raw_query.split('&') {
            if part.is_empty() || part.contains(';') {
                continue;
            }
            let (k, v) = part.split_once('=').unwrap_or((part, ""));
            let (Ok(k), Ok(v)) = (unescape(k, true), unescape(v, true)) else {
                continue;
            };
            match out.iter_mut().find(|(key, _)| *key == k) {
                Some((_, vals)) => vals.push(v),
                None => out.push((k, vec![v])),
            }
        }
        out
    }
}

fn split_host_port(host: &str) -> (&str, &str) {
    match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => {
            let port = &host[i + 1..];
            if port.bytes().all(|b| b.is_ascii_digit()) {
                (&host[..i], port)
            } else {
                (host, "")
            }
        }
        _ => (host, ""),
    }
}

fn unescape(s: &str, query: bool) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = s
                    .get(i + 1..i + 3)
                    .ok_or_else(|| format!("invalid URL escape {:?}", &s[i..]))?;
                let v = u8::from_str_radix(hex, 16)
                    .map_err(|_| format!("invalid URL escape {:?}", format!("%{hex}")))?;
                out.push(v);
                i += 3;
            }
            b'+' if query => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// Go's `url.ParseRequestURI`, for the parts kube's library uses.
pub(crate) fn parse_request_uri(raw: &str) -> Result<Url, String> {
    let err = |m: &str| format!("parse {raw:?}: {m}");
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err(err("net/url: invalid control character in URL"));
    }
    if raw.is_empty() {
        return Err(err("empty url"));
    }
    let mut url = Url {
        scheme: String::new(),
        host: String::new(),
        raw_path: String::new(),
        raw_query: String::new(),
        opaque: String::new(),
    };
    if raw == "*" {
        url.raw_path = "*".to_owned();
        return Ok(url);
    }
    let mut rest = raw;
    for (i, c) in raw.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if c.is_ascii_digit() || matches!(c, '+' | '-' | '.') {
            if i == 0 {
                break;
            }
            continue;
        }
        if c == ':' {
            if i == 0 {
                return Err(err("missing protocol scheme"));
            }
            url.scheme = raw[..i].to_ascii_lowercase();
            rest = &raw[i + 1..];
        }
        break;
    }
    if let Some((r, q)) = rest.split_once('?') {
        url.raw_query = q.to_owned();
        rest = r;
    }
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            url.opaque = rest.to_owned();
            return Ok(url);
        }
        return Err(err("invalid URI for request"));
    }
    if !url.scheme.is_empty() && rest.starts_with("//") {
        let after = &rest[2..];
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        if let Some(i) = host.rfind(':') {
            let port = &host[i + 1..];
            if !host[i..].contains(']') && !port.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err(&format!("invalid port {:?} after host", &host[i..])));
            }
        }
        url.host = host.to_owned();
        rest = path;
    }
    unescape(rest, false).map_err(|e| err(&e))?;
    url.raw_path = rest.to_owned();
    Ok(url)
}

// ---------------------------------------------------------------------------------------------
// Named formats
// ---------------------------------------------------------------------------------------------

/// The named formats of `format.<name>()` and `format.named(<name>)`, with their
/// `MaxRegexSize` (cost).
pub(crate) const FORMATS: &[(&str, u64)] = &[
    ("dns1123Label", 30),
    ("dns1123Subdomain", 60),
    ("dns1035Label", 30),
    ("qualifiedName", 60),
    ("dns1123LabelPrefix", 30),
    ("dns1123SubdomainPrefix", 60),
    ("dns1035LabelPrefix", 30),
    ("labelValue", 40),
    ("uri", 400),
    ("uuid", 88),
    ("byte", 100),
    ("date", 150),
    ("datetime", 150),
];

/// The errors of a value in a named format (none when it is valid).
pub(crate) fn validate_format(name: &str, s: &str) -> Vec<String> {
    let prefix = |x: &str| v::mask_trailing_dash(x);
    match name {
        "dns1123Label" => v::is_dns1123_label(s),
        "dns1123Subdomain" => v::is_dns1123_subdomain(s),
        "dns1035Label" => v::is_dns1035_label(s),
        "qualifiedName" => v::is_qualified_name(s),
        "dns1123LabelPrefix" => v::is_dns1123_label(&prefix(s)),
        "dns1123SubdomainPrefix" => v::is_dns1123_subdomain(&prefix(s)),
        "dns1035LabelPrefix" => v::is_dns1035_label(&prefix(s)),
        "labelValue" => v::is_valid_label_value(s),
        "uri" => parse_request_uri(s).err().into_iter().collect(),
        "uuid" => {
            let hex: String = s.chars().filter(|c| *c != '-').collect();
            let dashes_ok = s.len() == 32
                || (s.len() == 36 && [8, 13, 18, 23].iter().all(|i| s.as_bytes()[*i] == b'-'));
            if dashes_ok && hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                Vec::new()
            } else {
                vec!["does not match the UUID format".to_owned()]
            }
        }
        "byte" => {
            if base64::engine::general_purpose::STANDARD.decode(s).is_ok() {
                Vec::new()
            } else {
                vec!["invalid base64".to_owned()]
            }
        }
        "date" => {
            if crate::timeutil::parse_date(s).is_ok() {
                Vec::new()
            } else {
                vec!["invalid date".to_owned()]
            }
        }
        "datetime" => {
            if crate::timeutil::parse_date_time(s).is_ok() {
                Vec::new()
            } else {
                vec!["invalid datetime".to_owned()]
            }
        }
        _ => vec![format!("unknown format {name}")],
    }
}

#[cfg(test)]
mod tests {
    use super::{Quantity, parse_cidr, parse_ip, parse_request_uri};
    use std::cmp::Ordering;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn quantities() {
        assert_eq!(q("0.2G"), q("200M"));
        assert_eq!(q("2M"), q("0.002G"));
        assert_eq!(q("1Ki"), q("1024"));
        assert_eq!(q("0.5Ki"), q("512"));
        assert_eq!(q("1e3"), q("1k"));
        assert_eq!(q("50k").add(&q("20")), q("50.02k"));
        assert_eq!(q("50k").add(&q("20").negate()), q("49980"));
        assert_eq!(q("1").add(&q("3").negate()), q("-2"));
        assert_eq!(q("100m").cmp(&q("0.1")), Ordering::Equal);
        assert_eq!(q("-1").cmp(&q("1")), Ordering::Less);
        assert_eq!(q("-2").cmp(&q("-1")), Ordering::Less);
        assert_eq!(q("50k").as_i64(), Some(50_000));
        assert_eq!(q("0.5").as_i64(), None);
        assert_eq!(q("9999999999999999999999999999999999999G").as_i64(), None);
        assert!((q("1.5Gi").as_f64() - 1_610_612_736.0).abs() < 1e-3);
        // Go accepts "Mi" (as 0), whatever the library docs say.
        assert_eq!(q("Mi"), q("0"));
        for bad in ["", "200K", "Three", "1,3G", "1 G", "1e"] {
            assert!(Quantity::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ips_cidrs_urls() {
        assert!(parse_ip("192.168.0.1").is_ok());
        assert!(parse_ip("01.1.1.1").is_err());
        assert!(parse_ip("::ffff:1.2.3.4").is_err());
        assert!(parse_ip("fe80::1%eth0").is_err());
        assert!(parse_ip("2001:db8::1").is_ok());
        let c = parse_cidr("192.168.0.0/24").unwrap_or_else(|e| panic!("{e}"));
        assert!(c.contains("192.168.0.1".parse().unwrap_or_else(|_| panic!())));
        assert!(parse_cidr("192.168.0.0/33").is_err());
        assert!(parse_cidr("192.168.0.0").is_err());
        let u = parse_request_uri("https://user@example.com:8443/a%20b?x=1&x=2&y=")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (u.scheme.as_str(), u.hostname(), u.port()),
            ("https", "example.com".to_owned(), "8443".to_owned())
        );
        assert_eq!(
            u.query(),
            vec![
                ("x".to_owned(), vec!["1".to_owned(), "2".to_owned()]),
                ("y".to_owned(), vec![String::new()])
            ]
        );
        assert!(parse_request_uri("example.com").is_err());
        assert!(parse_request_uri("https:://kubernetes.io/").is_ok());
        let url = |s: &str| parse_request_uri(s).unwrap_or_else(|e| panic!("{e}"));
        assert_ne!(url("mailto:a@example.com"), url("mailto:b@example.com"));
        assert_eq!(url("mailto:a@example.com"), url("mailto:a@example.com"));
    }
}
