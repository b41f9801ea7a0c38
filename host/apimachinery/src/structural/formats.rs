//! String formats: kube-openapi's `strfmt.Default` registry, as filtered by
//! `StripUnsupportedFormatsPostProcess`.

use std::sync::OnceLock;

use regex::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum StrFormat {
    BsonObjectId,
    Uri,
    Email,
    Hostname,
    Ipv4,
    Ipv6,
    Cidr,
    Mac,
    Uuid,
    Uuid3,
    Uuid4,
    Uuid5,
    Isbn,
    Isbn10,
    Isbn13,
    CreditCard,
    Ssn,
    HexColor,
    RgbColor,
    Byte,
    Password,
    Date,
    DateTime,
    Duration,
}

impl StrFormat {
    /// The registry lookup: names are compared with `-` removed (`date-time` = `datetime`).
    pub(super) fn lookup(format: &str) -> Option<StrFormat> {
        if format.is_empty() {
            return None;
        }
        Some(match format.replace('-', "").as_str() {
            "bsonobjectid" => StrFormat::BsonObjectId,
            "uri" => StrFormat::Uri,
            "email" => StrFormat::Email,
            "hostname" => StrFormat::Hostname,
            "ipv4" => StrFormat::Ipv4,
            "ipv6" => StrFormat::Ipv6,
            "cidr" => StrFormat::Cidr,
            "mac" => StrFormat::Mac,
            "uuid" => StrFormat::Uuid,
            "uuid3" => StrFormat::Uuid3,
            "uuid4" => StrFormat::Uuid4,
            "uuid5" => StrFormat::Uuid5,
            "isbn" => StrFormat::Isbn,
            "isbn10" => StrFormat::Isbn10,
            "isbn13" => StrFormat::Isbn13,
            "creditcard" => StrFormat::CreditCard,
            "ssn" => StrFormat::Ssn,
            "hexcolor" => StrFormat::HexColor,
            "rgbcolor" => StrFormat::RgbColor,
            "byte" => StrFormat::Byte,
            "password" => StrFormat::Password,
            "date" => StrFormat::Date,
            "datetime" => StrFormat::DateTime,
            "duration" => StrFormat::Duration,
            _ => return None,
        })
    }

    pub(super) fn validates(self, s: &str) -> bool {
        match self {
            StrFormat::BsonObjectId => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
            StrFormat::Uri => is_request_uri(s),
            StrFormat::Email => is_email(s),
            StrFormat::Hostname => {
                rx(&RX_HOSTNAME, HOSTNAME_PATTERN).is_some_and(|r| r.is_match(s))
                    && s.len() <= 255
                    && s.split('.').all(|p| p.len() <= 63)
            }
            StrFormat::Ipv4 => {
                (parse_ipv4_sloppy(s) || s.parse::<std::net::Ipv6Addr>().is_ok()) && s.contains('.')
            }
            StrFormat::Ipv6 => s.parse::<std::net::Ipv6Addr>().is_ok() && s.contains(':'),
            StrFormat::Cidr => is_cidr(s),
            StrFormat::Mac => is_mac(s),
            StrFormat::Uuid => is_uuid(s, None),
            StrFormat::Uuid3 => is_uuid(s, Some('3')),
            StrFormat::Uuid4 => is_uuid(s, Some('4')),
            StrFormat::Uuid5 => is_uuid(s, Some('5')),
            StrFormat::Isbn => is_isbn10(s) || is_isbn13(s),
            StrFormat::Isbn10 => is_isbn10(s),
            StrFormat::Isbn13 => is_isbn13(s),
            StrFormat::CreditCard => is_credit_card(s),
            StrFormat::Ssn => {
                s.len() == 11
                    && rx(&RX_SSN, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$").is_some_and(|r| r.is_match(s))
            }
            StrFormat::HexColor => rx(&RX_HEXCOLOR, "^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
                .is_some_and(|r| r.is_match(s)),
            StrFormat::RgbColor => rx(&RX_RGBCOLOR, RGB_PATTERN).is_some_and(|r| r.is_match(s)),
            StrFormat::Byte => rx(&RX_BASE64, BASE64_PATTERN).is_some_and(|r| r.is_match(s)),
            StrFormat::Password => true,
            StrFormat::Date => is_date(s),
            StrFormat::DateTime => is_date_time(s),
            StrFormat::Duration => is_duration(s),
        }
    }
}

const HOSTNAME_PATTERN: &str = r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$";
const RGB_PATTERN: &str = r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$";
const BASE64_PATTERN: &str =
    r"^(?:[A-Za-z0-9+\/]{4})*(?:[A-Za-z0-9+\/]{2}==|[A-Za-z0-9+\/]{3}=|[A-Za-z0-9+\/]{4})$";
const CREDIT_CARD_PATTERN: &str = r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$";

static RX_HOSTNAME: OnceLock<Option<Regex>> = OnceLock::new();
static RX_SSN: OnceLock<Option<Regex>> = OnceLock::new();
static RX_HEXCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
static RX_RGBCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
static RX_BASE64: OnceLock<Option<Regex>> = OnceLock::new();
static RX_CREDIT_CARD: OnceLock<Option<Regex>> = OnceLock::new();

/// A Go regular expression compiled once.
fn rx(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| crate::goregex::compile(pattern).ok())
        .as_ref()
}

/// `(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?V[0-9a-f]{3}-?[89ab]?…[0-9a-f]{12}$`.
fn is_uuid(s: &str, version: Option<char>) -> bool {
    let b = s.as_bytes();
    let mut pos = 0usize;
    for (group, len) in [8usize, 4, 4, 4, 12].iter().enumerate() {
        if group > 0 && b.get(pos) == Some(&b'-') {
            pos += 1;
        }
        let Some(chunk) = b.get(pos..pos + len) else {
            return false;
        };
        if !chunk.iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
        if let Some(v) = version {
            if group == 2 && chunk[0] != v as u8 {
                return false;
            }
            if group == 3
                && v != '3'
                && !matches!(chunk[0].to_ascii_lowercase(), b'8' | b'9' | b'a' | b'b')
            {
                return false;
            }
        }
        pos += len;
    }
    pos == b.len()
}

/// govalidator's `IsISBN(str, 10)`.
fn is_isbn10(s: &str) -> bool {
    let d: Vec<u8> = s.bytes().filter(|b| !b" \t\n\x0c\r-".contains(b)).collect();
    if d.len() != 10
        || !d[..9].iter().all(u8::is_ascii_digit)
        || !(d[9].is_ascii_digit() || d[9] == b'X')
    {
        return false;
    }
    let mut sum: i32 = (0..9)
        .map(|i| (i as i32 + 1) * i32::from(d[i] - b'0'))
        .sum();
    sum += if d[9] == b'X' {
        100
    } else {
        10 * i32::from(d[9] - b'0')
    };
    sum % 11 == 0
}

/// govalidator's `IsISBN(str, 13)`.
fn is_isbn13(s: &str) -> bool {
    let d: Vec<u8> = s.bytes().filter(|b| !b" \t\n\x0c\r-".contains(b)).collect();
    if d.len() != 13 || !d.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: i32 = (0..12)
        .map(|i| [1, 3][i % 2] * i32::from(d[i] - b'0'))
        .sum();
    i32::from(d[12] - b'0') - ((10 - (sum % 10)) % 10) == 0
}

/// govalidator's `IsCreditCard`: the digits match the card pattern and the Luhn sum.
fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !rx(&RX_CREDIT_CARD, CREDIT_CARD_PATTERN).is_some_and(|r| r.is_match(&digits)) {
        return false;
    }
    let mut sum = 0u32;
    let mut double = false;
    for c in digits.bytes().rev() {
        let mut d = u32::from(c - b'0');
        if double {
            d *= 2;
            if d >= 10 {
                d = d % 10 + 1;
            }
        }
        sum += d;
        double = !double;
    }
    sum.is_multiple_of(10)
}

/// `netutils.ParseIPSloppy` for IPv4: four decimal parts, leading zeros allowed.
fn parse_ipv4_sloppy(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.trim_start_matches('0').len() <= 3
                && p.parse::<u32>().is_ok_and(|v| v <= 255)
        })
}

/// `netutils.ParseCIDRSloppy`.
fn is_cidr(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = if parse_ipv4_sloppy(addr) {
        32
    } else if addr.parse::<std::net::Ipv6Addr>().is_ok() {
        128
    } else {
        return false;
    };
    !mask.is_empty()
        && mask.bytes().all(|b| b.is_ascii_digit())
        && mask
            .trim_start_matches('0')
            .parse::<u32>()
            .map_or(mask.bytes().all(|b| b == b'0'), |m| m <= bits)
}

/// `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx…`, `xx-xx…` or `xxxx.xxxx…`.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    let hex2 = |x: &[u8]| x.len() >= 2 && x[0].is_ascii_hexdigit() && x[1].is_ascii_hexdigit();
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) {
            return false;
        }
        let n = (b.len() + 1) / 3;
        if n != 6 && n != 8 && n != 20 {
            return false;
        }
        (0..n).all(|i| {
            let x = &b[i * 3..];
            hex2(x) && (i == n - 1 || x[2] == b[2])
        })
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) {
            return false;
        }
        let n = 2 * (b.len() + 1) / 5;
        if n != 6 && n != 8 && n != 20 {
            return false;
        }
        (0..n / 2).all(|i| {
            let x = &b[i * 5..];
            hex2(x) && hex2(&x[2..]) && (i == n / 2 - 1 || x[4] == b'.')
        })
    } else {
        false
    }
}

/// `time.Parse("2006-01-02", s)`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &s[r];
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// strfmt's `IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let mut parts = lower.split('t');
    let (Some(date), Some(time)) = (parts.next(), parts.next()) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    // ^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$
    let chars: Vec<char> = time.chars().collect();
    let two = |i: usize| {
        chars
            .get(i..i + 2)
            .filter(|c| c.iter().all(char::is_ascii_digit))
            .map(|c| c.iter().collect::<String>())
    };
    let (Some(h), Some(m), Some(sec)) = (two(0), two(3), two(6)) else {
        return false;
    };
    if chars.get(2) != Some(&':') || chars.get(5) != Some(&':') {
        return false;
    }
    let mut i = 8;
    if i < chars.len() && chars[i] != 'z' && chars[i] != '+' && chars[i] != '-' {
        // `.` in the Go pattern matches any character.
        let start = i + 1;
        let mut j = start;
        while j < chars.len() && chars[j].is_ascii_digit() {
            j += 1;
        }
        if j == start {
            return false;
        }
        i = j;
    }
    let zone_ok = match chars.get(i) {
        Some('z') => i + 1 == chars.len(),
        Some('+' | '-') => {
            chars.len() == i + 6
                && two(i + 1).is_some()
                && chars[i + 3] == ':'
                && two(i + 4).is_some()
        }
        _ => false,
    };
    zone_ok && h.as_str() <= "23" && m.as_str() <= "59" && sec.as_str() <= "59"
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, else `<digits> <unit>` anywhere.
fn is_duration(s: &str) -> bool {
    go_parse_duration(s) || {
        let Some(re) = rx(&RX_DURATION, r"((\d+)\s*([A-Za-zµ]+))") else {
            return false;
        };
        const UNITS: &[&[&str]] = &[
            &["ns", "nano"],
            &["us", "µs", "micro"],
            &["ms", "milli"],
            &["s", "sec"],
            &["m", "min"],
            &["h", "hr", "hour"],
            &["d", "day"],
            &["w", "wk", "week"],
        ];
        let mut ok = false;
        for caps in re.captures_iter(s) {
            let (Some(num), Some(unit)) = (caps.get(2), caps.get(3)) else {
                continue;
            };
            if num.as_str().parse::<i64>().is_err() {
                return false;
            }
            let unit = unit.as_str().to_lowercase();
            for variants in UNITS {
                let last = variants.len() - 1;
                for (i, v) in variants.iter().enumerate() {
                    if (i == last && unit.starts_with(v)) || unit == *v {
                        ok = true;
                    }
                }
            }
        }
        ok
    }
}

static RX_DURATION: OnceLock<Option<Regex>> = OnceLock::new();

/// Whether Go's `time.ParseDuration` accepts `s`.
fn go_parse_duration(s: &str) -> bool {
    crate::gofmt::parse_go_duration(s).is_ok()
}

/// A simplified `net/mail.ParseAddress`: `addr-spec` or `[display name] <addr-spec>`.
fn is_email(s: &str) -> bool {
    let s = s.trim_matches([' ', '\t']);
    if let Some(inner) = s.strip_suffix('>')
        && let Some(lt) = inner.rfind('<')
    {
        let name = inner[..lt].trim_matches([' ', '\t']);
        let name_ok = name.is_empty()
            || (name.len() >= 2 && name.starts_with('"') && name.ends_with('"'))
            || name
                .split([' ', '\t'])
                .filter(|w| !w.is_empty())
                .all(|w| w.chars().all(|c| is_atext(c, true)));
        return name_ok && is_addr_spec(&inner[lt + 1..]);
    }
    is_addr_spec(s)
}

fn is_atext(c: char, dot: bool) -> bool {
    match c {
        '.' => dot,
        '(' | ')' | '<' | '>' | '[' | ']' | ':' | ';' | '@' | '\\' | ',' | '"' => false,
        c => ('!'..='~').contains(&c) || !c.is_ascii(),
    }
}

fn is_dot_atom(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|a| !a.is_empty() && a.chars().all(|c| is_atext(c, false)))
}

fn is_addr_spec(s: &str) -> bool {
    let Some(at) = s.rfind('@') else { return false };
    let (local, domain) = (&s[..at], &s[at + 1..]);
    let local_ok = if local.len() >= 2 && local.starts_with('"') && local.ends_with('"') {
        !local[1..local.len() - 1].contains(['"', '\n', '\r'])
    } else {
        is_dot_atom(local)
    };
    let domain_ok = if domain.starts_with('[') && domain.ends_with(']') && domain.len() >= 2 {
        !domain[1..domain.len() - 1].contains(['[', ']', '\\'])
    } else {
        is_dot_atom(domain)
    };
    local_ok && domain_ok
}

/// A simplified `url.ParseRequestURI`: an absolute URI or an absolute path.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if s == "*" {
        return true;
    }
    // Scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
    let mut scheme = "";
    let mut rest = s;
    for (i, c) in s.char_indices() {
        if c.is_ascii_alphabetic() || (i > 0 && (c.is_ascii_digit() || "+-.".contains(c))) {
            continue;
        }
        if c == ':' {
            if i == 0 {
                return false;
            }
            scheme = &s[..i];
            rest = &s[i + 1..];
        }
        break;
    }
    let rest = rest.split_once('?').map_or(rest, |(p, _)| p);
    if !rest.starts_with('/') {
        return !scheme.is_empty();
    }
    let mut path = rest;
    if !scheme.is_empty()
        && let Some(after) = rest.strip_prefix("//")
    {
        let end = after.find('/').unwrap_or(after.len());
        let authority = &after[..end];
        path = &after[end..];
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let port_ok = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        if let Some(bracketed) = host.strip_prefix('[') {
            let Some((_, after_bracket)) = bracketed.split_once(']') else {
                return false;
            };
            match after_bracket.strip_prefix(':') {
                Some(port) if !port_ok(port) => return false,
                None if !after_bracket.is_empty() => return false,
                _ => {}
            }
        } else if let Some((_, port)) = host.rsplit_once(':')
            && !port_ok(port)
        {
            return false;
        }
        if !valid_percent_escapes(host) {
            return false;
        }
    }
    valid_percent_escapes(path)
}

fn valid_percent_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
            {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::structural::test_util::*;
    use crate::validation::go_quote;
    use serde_json::json;

    #[test]
    fn crdv01_string_formats() {
        let cases: &[(&str, &[&str], &[&str])] = &[
            ("byte", &["aGVsbG8=", "YWJj"], &["", "abc", "a?c="]),
            ("date", &["2024-02-29"], &["2023-02-29", "2024-1-01"]),
            (
                "duration",
                &["1h30m", "0", "5 sec", "3 days"],
                &["", "x", "5 foo"],
            ),
            ("ipv4", &["10.0.0.1", "010.0.0.1"], &["256.0.0.1", "::1"]),
            ("ipv6", &["::1", "fe80::1"], &["10.0.0.1", "zz::"]),
            (
                "cidr",
                &["10.0.0.0/8", "::/0"],
                &["10.0.0.0/33", "10.0.0.0"],
            ),
            (
                "mac",
                &["01:23:45:67:89:ab", "0123.4567.89ab"],
                &["01:23:45:67:89", "x"],
            ),
            (
                "email",
                &["a@example.com", "Bob <b@x.org>"],
                &["a", "a@", "@b"],
            ),
            (
                "uri",
                &["https://example.com/a?b", "/abs", "mailto:x"],
                &["rel/path", "", "http://h:x/"],
            ),
            ("hostname", &["example.com", "a"], &["-x"]),
            ("hexcolor", &["#fff", "00ff00"], &["#ffff"]),
            ("isbn10", &["0321751043"], &["0321751044"]),
            ("isbn13", &["978-0321751041"], &["9780321751042"]),
            (
                "creditcard",
                &["4111 1111 1111 1111"],
                &["4111 1111 1111 1112"],
            ),
            ("ssn", &["123-45-6789"], &["123456789"]),
            ("rgbcolor", &["rgb(255, 0, 10)"], &["rgb(256,0,0)"]),
            (
                "bsonobjectid",
                &["507f1f77bcf86cd799439011"],
                &["507f1f77bcf86cd79943901"],
            ),
            (
                "uuid4",
                &["123e4567-e89b-42d3-a456-426614174000"],
                &["123e4567-e89b-12d3-a456-426614174000"],
            ),
            ("password", &["anything"], &[]),
            ("int32", &["not checked"], &[]),
        ];
        for (format, good, bad) in cases {
            let s = parse(
                json!({"type": "object", "properties": {"f": {"type": "string", "format": format}}}),
            );
            for g in *good {
                assert!(
                    s.validate(&json!({"f": g})).is_empty(),
                    "{format}: {g} should pass"
                );
            }
            for b in *bad {
                assert_eq!(
                    msgs(&s.validate(&json!({"f": b}))),
                    vec![format!(
                        "f: Invalid value: {q}: f in body must be of type {format}: {q}",
                        q = go_quote(b)
                    )],
                    "{format}: {b}"
                );
            }
        }
    }
}
