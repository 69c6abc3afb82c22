//! Go's `time.Time` for templates: an instant (Unix seconds and nanoseconds) with a location,
//! printed, formatted and parsed exactly as Go's `time` package does.
//!
//! Calendar arithmetic is our own (proleptic Gregorian over the whole `i64` range, as Go's);
//! time-zone rules come from the system's IANA database through `jiff`. Go layouts
//! (`2006-01-02T15:04:05Z07:00`) are handled by [`layout`], durations by [`gocompat::duration`].
//!
//! A [`GoTime`] enters templates as a host [`Object`] of type `time.Time`: it prints as Go's
//! `Time.String()` (`2024-05-06 07:08:09 +0000 UTC`), marshals to JSON as RFC 3339, and has the
//! zero-argument methods templates call (`.Year`, `.Unix`, `.UTC`, ...) and `.Format`.

pub mod layout;

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use gocompat::duration;

use crate::value::{Object, ObjectKind, Value};

/// A time zone as Go's `*time.Location`.
#[derive(Debug, Clone)]
pub enum Zone {
    /// `time.UTC`.
    Utc,
    /// `time.Local`: the system zone (`TZ`, else `/etc/localtime`).
    Local,
    /// A zone loaded by name (`time.LoadLocation("America/New_York")`).
    Named(jiff::tz::TimeZone),
    /// `time.FixedZone(name, offset)`: what parsing produces for a numeric offset that is not
    /// the local one (the name may be empty).
    Fixed {
        /// The abbreviation.
        name: String,
        /// Seconds east of UTC.
        offset: i32,
    },
}

fn local_zone() -> &'static jiff::tz::TimeZone {
    static LOCAL: OnceLock<jiff::tz::TimeZone> = OnceLock::new();
    LOCAL.get_or_init(|| {
        // Go: TZ unset -> /etc/localtime; TZ="" -> UTC; TZ=name -> that zone (UTC if unknown).
        match std::env::var("TZ") {
            Ok(name) if name.is_empty() || name == "UTC" => jiff::tz::TimeZone::UTC,
            Ok(name) => load_named(name.trim_start_matches(':')).unwrap_or(jiff::tz::TimeZone::UTC),
            Err(_) => jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC),
        }
    })
}

/// An IANA zone by its exact (case-sensitive, as on Go's file system) name.
fn load_named(name: &str) -> Option<jiff::tz::TimeZone> {
    if name.is_empty() || name.starts_with('/') || name.contains("..") || name.contains('\\') {
        return None;
    }
    let tz = jiff::tz::db().get(name).ok()?;
    (tz.iana_name() == Some(name)).then_some(tz)
}

impl Zone {
    /// Go's `time.LoadLocation`: `""` and `"UTC"` are UTC, `"Local"` the local zone, anything
    /// else an IANA name; `None` when there is no such zone.
    pub fn load(name: &str) -> Option<Zone> {
        match name {
            "" | "UTC" => Some(Zone::Utc),
            "Local" => Some(Zone::Local),
            _ => load_named(name).map(Zone::Named),
        }
    }

    /// The offset (seconds east of UTC) and abbreviation in force at a Unix second.
    pub fn lookup(&self, unix: i64) -> (i32, String) {
        let tz = match self {
            Zone::Utc => return (0, "UTC".to_string()),
            Zone::Fixed { name, offset } => return (*offset, name.clone()),
            Zone::Local => local_zone(),
            Zone::Named(tz) => tz,
        };
        let min = jiff::Timestamp::MIN.as_second();
        let max = jiff::Timestamp::MAX.as_second();
        let Ok(ts) = jiff::Timestamp::from_second(unix.clamp(min, max)) else {
            return (0, "UTC".to_string());
        };
        let info = tz.to_offset_info(ts);
        (info.offset().seconds(), info.abbreviation().to_string())
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (month 1-12).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let (m, d) = (i64::from(m), i64::from(d));
    let y = if m <= 2 { y.wrapping_sub(1) } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era.wrapping_mul(146_097).wrapping_add(doe - 719_468)
}

/// The date (year, month 1-12, day 1-31) of a day count since 1970-01-01.
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z.wrapping_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = (yoe + era.wrapping_mul(400)).wrapping_add(i64::from(m <= 2));
    (y, m, d)
}

/// Whether a year is a leap year.
pub fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

/// The number of days in a month.
pub fn days_in(m: u32, y: i64) -> u32 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The calendar fields of a time in its zone.
#[derive(Debug, Clone)]
pub struct Civil {
    /// Year.
    pub year: i64,
    /// Month, 1-12.
    pub month: u32,
    /// Day of the month, 1-31.
    pub day: u32,
    /// Hour, 0-23.
    pub hour: u32,
    /// Minute.
    pub minute: u32,
    /// Second.
    pub second: u32,
    /// Nanosecond.
    pub nanosecond: u32,
    /// Day of the week, 0 = Sunday.
    pub weekday: u32,
    /// Day of the year, 1-366.
    pub yearday: u32,
    /// Offset from UTC in seconds.
    pub offset: i32,
    /// Zone abbreviation (may be empty for a fixed zone).
    pub zone: String,
}

/// Go's process-relative monotonic clock origin.
fn process_start() -> std::time::Instant {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    *START.get_or_init(std::time::Instant::now)
}

/// A Go `time.Time`.
#[derive(Debug, Clone)]
pub struct GoTime {
    /// Seconds since the Unix epoch.
    pub unix: i64,
    /// Nanoseconds within the second, 0..1e9.
    pub nsec: u32,
    /// The location.
    pub zone: Zone,
    /// The monotonic reading (nanoseconds since process start) that `time.Now` attaches.
    pub mono: Option<i64>,
}

impl GoTime {
    /// Go's `time.Now()` (in the local zone, with a monotonic reading).
    pub fn now() -> GoTime {
        let start = process_start();
        let d = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        GoTime {
            unix: d.as_secs() as i64,
            nsec: d.subsec_nanos(),
            zone: Zone::Local,
            mono: Some(start.elapsed().as_nanos() as i64),
        }
    }

    /// Go's `time.Unix(sec, 0)` (local zone).
    pub fn from_unix(sec: i64) -> GoTime {
        GoTime {
            unix: sec,
            nsec: 0,
            zone: Zone::Local,
            mono: None,
        }
    }

    /// Go's zero `time.Time{}`: January 1, year 1, 00:00:00 UTC.
    pub fn zero() -> GoTime {
        GoTime {
            unix: -62_135_596_800,
            nsec: 0,
            zone: Zone::Utc,
            mono: None,
        }
    }

    /// Go's `time.Date(...)` in `zone`, for in-range fields: the civil time is resolved with
    /// Go's rule for gaps and overlaps (look up the offset at the naive instant, then again
    /// at the corrected one if that falls into another period).
    pub fn from_civil(c: &Civil, zone: Zone) -> GoTime {
        let days = days_from_civil(c.year, c.month, c.day);
        let naive = days
            .wrapping_mul(86_400)
            .wrapping_add(i64::from(c.hour * 3600 + c.minute * 60 + c.second));
        let (mut offset, _) = zone.lookup(naive);
        if offset != 0 {
            let utc = naive.wrapping_sub(i64::from(offset));
            let (o2, _) = zone.lookup(utc);
            if o2 != offset {
                offset = o2;
            }
        }
        GoTime {
            unix: naive.wrapping_sub(i64::from(offset)),
            nsec: c.nanosecond,
            zone,
            mono: None,
        }
    }

    /// The calendar fields in the time's zone.
    pub fn civil(&self) -> Civil {
        let (offset, zone) = self.zone.lookup(self.unix);
        let local = self.unix.wrapping_add(i64::from(offset));
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: secs / 3600,
            minute: secs / 60 % 60,
            second: secs % 60,
            nanosecond: self.nsec,
            weekday: (days.wrapping_add(4)).rem_euclid(7) as u32,
            yearday: (days - days_from_civil(year, 1, 1) + 1) as u32,
            offset,
            zone,
        }
    }

    /// The same instant in another zone (Go's `t.In(loc)`; keeps the monotonic reading).
    pub fn in_zone(&self, zone: Zone) -> GoTime {
        GoTime { zone, ..self.clone() }
    }

    /// Go's `t.Add(d)`.
    pub fn add(&self, d: i64) -> GoTime {
        let total = i128::from(self.nsec) + i128::from(d.rem_euclid(duration::SECOND));
        let carry = (total / i128::from(duration::SECOND)) as i64;
        GoTime {
            unix: self
                .unix
                .wrapping_add(d.div_euclid(duration::SECOND))
                .wrapping_add(carry),
            nsec: (total % i128::from(duration::SECOND)) as u32,
            zone: self.zone.clone(),
            mono: self.mono.map(|m| m.wrapping_add(d)),
        }
    }

    /// Nanoseconds from `other` to `self` (Go's `t.Sub(u)`, saturating), using monotonic readings
    /// when both have one.
    pub fn sub(&self, other: &GoTime) -> i64 {
        if let (Some(a), Some(b)) = (self.mono, other.mono) {
            return a.saturating_sub(b);
        }
        let ns = (i128::from(self.unix) - i128::from(other.unix)) * 1_000_000_000
            + (i128::from(self.nsec) - i128::from(other.nsec));
        ns.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// Go's `t.Format(layout)`.
    pub fn format(&self, layout: &str) -> String {
        layout::format(&self.civil(), layout)
    }

    /// Go's `t.String()`: `2006-01-02 15:04:05.999999999 -0700 MST`, plus ` m=±s.nnnnnnnnn`
    /// when the time carries a monotonic reading.
    pub fn go_string(&self) -> String {
        let mut s = self.format("2006-01-02 15:04:05.999999999 -0700 MST");
        if let Some(m) = self.mono {
            let sign = if m < 0 { '-' } else { '+' };
            let a = m.unsigned_abs();
            s.push_str(&format!(
                " m={sign}{}.{:09}",
                a / 1_000_000_000,
                a % 1_000_000_000
            ));
        }
        s
    }
}

/// Go's `time.Month` as a template sees it: prints its English name, compares as an int.
#[derive(Debug)]
struct NamedInt {
    type_name: &'static str,
    value: i64,
    name: &'static str,
}

impl Object for NamedInt {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed(self.type_name)
    }
    fn kind(&self) -> ObjectKind {
        ObjectKind::Struct
    }
    fn method_arity(&self, name: &str) -> Option<usize> {
        (name == "String").then_some(0)
    }
    fn call_method(&self, _name: &str, _args: &[Value]) -> Result<Value, String> {
        Ok(Value::str(self.name))
    }
    fn string(&self) -> Option<String> {
        Some(self.name.to_string())
    }
    fn basic(&self) -> Option<Value> {
        Some(Value::int(self.value))
    }
    fn to_data(&self) -> Option<Value> {
        Some(Value::int(self.value))
    }
}

impl GoTime {
    /// This time as a template value.
    pub fn into_value(self) -> Value {
        Value::Object(Arc::new(self))
    }

    /// The [`GoTime`] inside a template value, if it is one.
    pub fn from_value(v: &Value) -> Option<&GoTime> {
        match v {
            Value::Object(o) => o.as_any().and_then(|a| a.downcast_ref::<GoTime>()),
            _ => None,
        }
    }
}

const METHODS: &[(&str, usize)] = &[
    ("Year", 0),
    ("Month", 0),
    ("Day", 0),
    ("Hour", 0),
    ("Minute", 0),
    ("Second", 0),
    ("Nanosecond", 0),
    ("YearDay", 0),
    ("Weekday", 0),
    ("Unix", 0),
    ("UnixMilli", 0),
    ("UnixMicro", 0),
    ("UnixNano", 0),
    ("IsZero", 0),
    ("UTC", 0),
    ("Local", 0),
    ("String", 0),
    ("Format", 1),
];

impl Object for GoTime {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("time.Time")
    }
    fn kind(&self) -> ObjectKind {
        ObjectKind::Struct
    }
    fn method_arity(&self, name: &str) -> Option<usize> {
        METHODS.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
    }
    fn call_method(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        let c = self.civil();
        let i64v = |n: i64| Value::Int(n, crate::value::IntType::Int64);
        Ok(match name {
            "Year" => Value::int(c.year),
            "Month" => Value::Object(Arc::new(NamedInt {
                type_name: "time.Month",
                value: i64::from(c.month),
                name: layout::LONG_MONTHS[(c.month as usize + 11) % 12],
            })),
            "Day" => Value::int(i64::from(c.day)),
            "Hour" => Value::int(i64::from(c.hour)),
            "Minute" => Value::int(i64::from(c.minute)),
            "Second" => Value::int(i64::from(c.second)),
            "Nanosecond" => Value::int(i64::from(c.nanosecond)),
            "YearDay" => Value::int(i64::from(c.yearday)),
            "Weekday" => Value::Object(Arc::new(NamedInt {
                type_name: "time.Weekday",
                value: i64::from(c.weekday),
                name: layout::LONG_DAYS[c.weekday as usize % 7],
            })),
            "Unix" => i64v(self.unix),
            "UnixMilli" => i64v(
                self.unix
                    .wrapping_mul(1000)
                    .wrapping_add(i64::from(self.nsec / 1_000_000)),
            ),
            "UnixMicro" => i64v(
                self.unix
                    .wrapping_mul(1_000_000)
                    .wrapping_add(i64::from(self.nsec / 1000)),
            ),
            "UnixNano" => i64v(
                self.unix
                    .wrapping_mul(1_000_000_000)
                    .wrapping_add(i64::from(self.nsec)),
            ),
            "IsZero" => Value::Bool(self.unix == GoTime::zero().unix && self.nsec == 0),
            "UTC" => GoTime {
                mono: None,
                ..self.in_zone(Zone::Utc)
            }
            .into_value(),
            "Local" => GoTime {
                mono: None,
                ..self.in_zone(Zone::Local)
            }
            .into_value(),
            "String" => Value::str(self.go_string()),
            "Format" => Value::str(self.format(args.first().and_then(Value::as_str).unwrap_or(""))),
            _ => return Err(format!("no method {name}")),
        })
    }
    fn string(&self) -> Option<String> {
        Some(self.go_string())
    }
    fn to_data(&self) -> Option<Value> {
        // encoding/json: MarshalJSON is RFC 3339 with nanoseconds.
        Some(Value::str(self.format("2006-01-02T15:04:05.999999999Z07:00")))
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trips() {
        for days in [-719_468i64, -1, 0, 1, 10_957, 2_932_896, -2_932_897] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days, "{days}");
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(GoTime::zero().go_string(), "0001-01-01 00:00:00 +0000 UTC");
    }

    #[test]
    fn named_zones_print_their_abbreviation() {
        let Some(z) = Zone::load("America/New_York") else {
            return; // no zoneinfo on this machine
        };
        let t = GoTime::from_unix(1_700_000_000).in_zone(z);
        assert_eq!(t.go_string(), "2023-11-14 17:13:20 -0500 EST");
        assert!(Zone::load("america/new_york").is_none());
    }
}
