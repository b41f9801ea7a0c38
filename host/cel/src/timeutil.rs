//! Timestamps and durations with Go's semantics (cel-go uses `time.Time` and
//! `time.Duration`): RFC 3339 parsing and printing, `time.ParseDuration`, and the looser
//! formats OpenAPI `date`, `date-time` and `duration` values may use.

use time::format_description::well_known::Rfc3339;
use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};

/// Seconds of 0001-01-01T00:00:00Z, the earliest CEL timestamp.
pub(crate) const MIN_UNIX: i64 = -62_135_596_800;
/// Seconds of 9999-12-31T23:59:59Z, the latest CEL timestamp.
pub(crate) const MAX_UNIX: i64 = 253_402_300_799;

/// A UTC instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ts {
    pub(crate) secs: i64,
    pub(crate) nanos: u32,
}

impl Ts {
    pub(crate) fn new(secs: i64, nanos: u32) -> Result<Ts, String> {
        if !(MIN_UNIX..=MAX_UNIX).contains(&secs) {
            return Err("timestamp overflow".to_owned());
        }
        Ok(Ts { secs, nanos })
    }

    fn total_nanos(self) -> i128 {
        i128::from(self.secs) * 1_000_000_000 + i128::from(self.nanos)
    }

    fn from_total_nanos(n: i128) -> Result<Ts, String> {
        let secs = i64::try_from(n.div_euclid(1_000_000_000)).map_err(|_| "timestamp overflow")?;
        let nanos = u32::try_from(n.rem_euclid(1_000_000_000)).map_err(|_| "timestamp overflow")?;
        Ts::new(secs, nanos)
    }

    pub(crate) fn add(self, d: i64) -> Result<Ts, String> {
        Ts::from_total_nanos(self.total_nanos() + i128::from(d))
    }

    /// `self - other` as a duration.
    pub(crate) fn sub(self, other: Ts) -> Result<i64, String> {
        i64::try_from(self.total_nanos() - other.total_nanos())
            .map_err(|_| "duration overflow".to_owned())
    }

    fn datetime(self) -> Option<OffsetDateTime> {
        OffsetDateTime::from_unix_timestamp(self.secs)
            .ok()?
            .replace_nanosecond(self.nanos)
            .ok()
    }

    /// The instant in a time zone: `""`/`UTC` or a fixed offset `±HH:MM`.
    pub(crate) fn in_zone(self, tz: &str) -> Result<OffsetDateTime, String> {
        let dt = self.datetime().ok_or("timestamp overflow")?;
        if tz.is_empty() || tz == "UTC" {
            return Ok(dt);
        }
        let offset = parse_offset(tz).ok_or_else(|| format!("unknown time zone {tz}"))?;
        Ok(dt.to_offset(offset))
    }

    /// Go's `time.RFC3339Nano` in UTC.
    pub(crate) fn format(self) -> String {
        let Some(dt) = self.datetime() else {
            return String::new();
        };
        let mut s = format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
            dt.year(),
            u8::from(dt.month()),
            dt.day(),
            dt.hour(),
            dt.minute(),
            dt.second()
        );
        if self.nanos != 0 {
            let frac = format!("{:09}", self.nanos);
            s.push('.');
            s.push_str(frac.trim_end_matches('0'));
        }
        s.push('Z');
        s
    }
}

fn parse_offset(tz: &str) -> Option<UtcOffset> {
    let (sign, rest) = match tz.as_bytes().first()? {
        b'+' => (1i8, &tz[1..]),
        b'-' => (-1i8, &tz[1..]),
        _ => return None,
    };
    let (h, m) = rest.split_once(':')?;
    let h: i8 = h.parse().ok()?;
    let m: i8 = m.parse().ok()?;
    UtcOffset::from_hms(sign * h, sign * m, 0).ok()
}

fn from_datetime(dt: OffsetDateTime) -> Result<Ts, String> {
    Ts::new(dt.unix_timestamp(), dt.nanosecond())
}

/// RFC 3339 (`timestamp('2023-01-01T00:00:00Z')`), as Go's `time.Parse(time.RFC3339, …)`.
pub(crate) fn parse_rfc3339(s: &str) -> Result<Ts, String> {
    OffsetDateTime::parse(s, &Rfc3339)
        .map_err(|_| format!("parsing time {s:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {s:?} as \"2006\""))
        .and_then(from_datetime)
}

/// An OpenAPI `date-time` value (strfmt's layouts: RFC 3339, with or without a zone).
pub(crate) fn parse_date_time(s: &str) -> Result<Ts, String> {
    if let Ok(ts) = parse_rfc3339(s) {
        return Ok(ts);
    }
    let normalized = s.replacen(' ', "T", 1);
    if let Ok(ts) = parse_rfc3339(&normalized) {
        return Ok(ts);
    }
    if let Ok(ts) = parse_rfc3339(&format!("{normalized}Z")) {
        return Ok(ts);
    }
    Err(format!("Invalid date-time formatted string {s}"))
}

/// An OpenAPI `date` value (`2006-01-02`), at midnight UTC.
pub(crate) fn parse_date(s: &str) -> Result<Ts, String> {
    let bad = || format!("Invalid date formatted string {s}");
    let mut parts = s.splitn(3, '-');
    let (y, m, d) = (parts.next(), parts.next(), parts.next());
    let (Some(y), Some(m), Some(d)) = (y, m, d) else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let y: i32 = y.parse().map_err(|_| bad())?;
    let m: u8 = m.parse().map_err(|_| bad())?;
    let d: u8 = d.parse().map_err(|_| bad())?;
    let month = Month::try_from(m).map_err(|_| bad())?;
    let date = Date::from_calendar_date(y, month, d).map_err(|_| bad())?;
    from_datetime(PrimitiveDateTime::new(date, Time::MIDNIGHT).assume_utc())
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub(crate) fn parse_go_duration(orig: &str) -> Result<i64, String> {
    wasmgate_apimachinery::gofmt::parse_go_duration(orig)
}

/// An OpenAPI `duration` value (strfmt: Go durations, plus `d`, `w` and spelled-out units).
pub(crate) fn parse_openapi_duration(s: &str) -> Result<i64, String> {
    if let Ok(d) = parse_go_duration(s) {
        return Ok(d);
    }
    const LONG: &[(&str, u64)] = &[
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
        ("d", 86_400_000_000_000),
        ("w", 604_800_000_000_000),
    ];
    let compact: String = s.split_whitespace().collect();
    let normalized = [
        "nanoseconds",
        "nanosecond",
        "microseconds",
        "microsecond",
        "milliseconds",
        "millisecond",
        "seconds",
        "second",
        "sec",
        "minutes",
        "minute",
        "min",
        "hours",
        "hour",
        "hr",
        "days",
        "day",
        "weeks",
        "week",
        "wk",
    ]
    .iter()
    .zip([
        "ns", "ns", "us", "us", "ms", "ms", "s", "s", "s", "m", "m", "m", "h", "h", "h", "d", "d",
        "w", "w", "w",
    ])
    .fold(compact, |acc, (long, short)| acc.replace(long, short));
    wasmgate_apimachinery::gofmt::parse_duration_units(&normalized, LONG)
        .map_err(|_| format!("Invalid duration {s}: time: invalid duration {s:?}"))
}

/// `string(duration)`: seconds with Go's `strconv.FormatFloat(…, 'f', -1, 64)`, then `s`.
pub(crate) fn format_duration(nanos: i64) -> String {
    #[allow(
        clippy::cast_precision_loss,
        reason = "Go formats Duration.Seconds(), a float64"
    )]
    let secs = (nanos / 1_000_000_000) as f64 + (nanos % 1_000_000_000) as f64 / 1e9;
    format!("{secs}s")
}
