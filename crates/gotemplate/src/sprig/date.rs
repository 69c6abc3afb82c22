//! sprig's date functions (`date.go`): `now`, `date`, `dateInZone`, `htmlDate`,
//! `htmlDateInZone`, `toDate`, `mustToDate`, `unixEpoch`, `dateModify`, `mustDateModify`, `ago`,
//! `duration`, `durationRound`, and their snake-case aliases. Times are
//! [`GoTime`](crate::gotime::GoTime) objects (`time.Time`).
//!
//! As in sprig, arguments of the wrong dynamic type are not errors: `date` formats the current
//! time when given something other than a `time.Time` or an `int`/`int32`/`int64` (Unix
//! seconds; a JSON number is a `float64`), and `duration` reads `0` unless given a string or an
//! `int64` (so `duration 90` is `0s`, `duration (int64 90)` is `1m30s`).

use super::util::str_arg as s;
use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::gotime::{GoTime, Zone, layout};
use crate::value::{IntType, Value};
use gocompat::duration::{self, HOUR, MINUTE, SECOND};

fn time_arg(v: &Value) -> GoTime {
    GoTime::from_value(v).cloned().unwrap_or_else(GoTime::zero)
}

/// sprig's `dateInZone`: the time (or Unix seconds) in a zone (UTC when the zone is unknown),
/// formatted with a Go layout.
fn date_in_zone(fmt: &str, date: &Value, zone: &str) -> String {
    let t = match date {
        Value::Int(n, IntType::Int | IntType::Int32 | IntType::Int64) => GoTime::from_unix(*n),
        v => GoTime::from_value(v).cloned().unwrap_or_else(GoTime::now),
    };
    t.in_zone(Zone::load(zone).unwrap_or(Zone::Utc)).format(fmt)
}

/// Go's `Duration.Round(m)` for a positive `m`.
fn round(d: i64, m: i64) -> i64 {
    let less_than_half = |x: i64| (x as u64).wrapping_add(x as u64) < m as u64;
    let mut r = d % m;
    if d < 0 {
        r = -r;
        if less_than_half(r) {
            return d + r;
        }
        return d.checked_sub(m - r).unwrap_or(i64::MIN);
    }
    if less_than_half(r) {
        return d - r;
    }
    d.checked_add(m - r).unwrap_or(i64::MAX)
}

/// sprig's `ago`: time since a `time.Time` or Unix seconds (`int`/`int64`), to the second.
fn ago(date: &Value) -> String {
    let t = match date {
        Value::Int(n, IntType::Int | IntType::Int64) => GoTime::from_unix(*n),
        v => GoTime::from_value(v).cloned().unwrap_or_else(GoTime::now),
    };
    duration::format(round(GoTime::now().sub(&t), SECOND))
}

/// sprig's `duration`: seconds (a decimal string or an `int64`) as a Go duration.
fn duration_of(sec: &Value) -> String {
    let n = match sec {
        Value::String(v) => v.parse::<i64>().unwrap_or(0),
        Value::Int(n, IntType::Int64) => *n,
        _ => 0,
    };
    duration::format(n.wrapping_mul(SECOND))
}

/// sprig's `durationRound`: a duration (Go syntax string, `int64` nanoseconds, or the time
/// since a `time.Time`) in its largest whole unit: `2h`, `3mo`, `1y`.
fn duration_round(v: &Value) -> String {
    let d = match v {
        Value::String(s) => duration::parse(s).unwrap_or(0),
        Value::Int(n, IntType::Int64) => *n,
        v => match GoTime::from_value(v) {
            Some(t) => GoTime::now().sub(t),
            None => 0,
        },
    };
    let u = d.unsigned_abs();
    let hour = HOUR as u64;
    let units = [
        (hour * 24 * 365, "y"),
        (hour * 24 * 30, "mo"),
        (hour * 24, "d"),
        (hour, "h"),
        (MINUTE as u64, "m"),
        (SECOND as u64, "s"),
    ];
    for (size, name) in units {
        if u > size {
            return format!("{}{name}", u / size);
        }
    }
    "0s".to_string()
}

/// Registers the date functions.
pub fn register(m: &mut FuncMap) {
    m.insert("now", Func::new(&[], |_| Ok(GoTime::now().into_value())));
    m.insert(
        "date",
        Func::new(&[Str, Any], |a| {
            Ok(Value::str(date_in_zone(s(&a[0]), &a[1], "Local")))
        }),
    );
    m.insert(
        "htmlDate",
        Func::new(&[Any], |a| {
            Ok(Value::str(date_in_zone("2006-01-02", &a[0], "Local")))
        }),
    );
    m.insert(
        "htmlDateInZone",
        Func::new(&[Any, Str], |a| {
            Ok(Value::str(date_in_zone("2006-01-02", &a[0], s(&a[1]))))
        }),
    );
    for name in ["dateInZone", "date_in_zone"] {
        m.insert(
            name,
            Func::new(&[Str, Any, Str], |a| {
                Ok(Value::str(date_in_zone(s(&a[0]), &a[1], s(&a[2]))))
            }),
        );
    }
    for name in ["dateModify", "date_modify"] {
        m.insert(
            name,
            Func::new(&[Str, Time], |a| {
                let t = time_arg(&a[1]);
                Ok(match duration::parse(s(&a[0])) {
                    Ok(d) => t.add(d),
                    Err(_) => t,
                }
                .into_value())
            }),
        );
    }
    for name in ["mustDateModify", "must_date_modify"] {
        m.insert(
            name,
            Func::new(&[Str, Time], |a| {
                let d = duration::parse(s(&a[0]))?;
                Ok(time_arg(&a[1]).add(d).into_value())
            }),
        );
    }
    m.insert("ago", Func::new(&[Any], |a| Ok(Value::str(ago(&a[0])))));
    m.insert(
        "duration",
        Func::new(&[Any], |a| Ok(Value::str(duration_of(&a[0])))),
    );
    m.insert(
        "durationRound",
        Func::new(&[Any], |a| Ok(Value::str(duration_round(&a[0])))),
    );
    m.insert(
        "toDate",
        Func::new(&[Str, Str], |a| {
            Ok(layout::parse(s(&a[0]), s(&a[1]), &Zone::Local)
                .unwrap_or_else(|_| GoTime::zero())
                .into_value())
        }),
    );
    m.insert(
        "mustToDate",
        Func::new(&[Str, Str], |a| {
            Ok(layout::parse(s(&a[0]), s(&a[1]), &Zone::Local)?.into_value())
        }),
    );
    m.insert(
        "unixEpoch",
        Func::new(&[Time], |a| Ok(Value::str(time_arg(&a[0]).unix.to_string()))),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_like_go() {
        assert_eq!(round(1_499_999_999, SECOND), SECOND);
        assert_eq!(round(1_500_000_000, SECOND), 2 * SECOND);
        assert_eq!(round(-1_500_000_000, SECOND), -2 * SECOND);
        assert_eq!(round(i64::MAX, SECOND), i64::MAX);
    }

    #[test]
    fn duration_round_picks_the_largest_unit() {
        assert_eq!(duration_round(&Value::str("2h5m")), "2h");
        assert_eq!(duration_round(&Value::str("-800h")), "1mo");
        assert_eq!(duration_round(&Value::str("1s")), "0s");
        assert_eq!(duration_round(&Value::int(5)), "0s");
    }
}
