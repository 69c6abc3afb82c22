//! Kubernetes times (`metav1.Time`) as the Go struct round trip prints them.
//!
//! `metav1.Time` decodes with `time.Parse(time.RFC3339, …)`, which accepts fractional seconds and
//! any UTC offset, and encodes as RFC 3339 in UTC with whole seconds; the zero time encodes as
//! `null`. So `"2026-07-01T12:00:00.5+02:00"` comes back as `"2026-07-01T10:00:00Z"`, as
//! `kubectl get -o yaml` piped through `istioctl kube-inject` shows.
//!
//! Parsing follows Go's RFC 3339 fast path: `YYYY-MM-DDTHH:MM:SS[.digits](Z|±HH:MM)`, an upper-case
//! `T` and `Z`, a day valid for its month, hours 0–23, minutes and seconds 0–59. The calendar
//! arithmetic is `jiff`'s.

use jiff::{civil, tz::Offset};

/// Go's `time.RFC3339` layout, as its parse errors name it.
const RFC3339: &str = "2006-01-02T15:04:05Z07:00";

/// The text `json.Marshal` writes for the `metav1.Time` that `json.Unmarshal` reads from `text`:
/// `Some("YYYY-MM-DDTHH:MM:SSZ")`, or `None` for the zero time (written as `null`). An error
/// says why `text` is not an RFC 3339 time.
pub fn round_trip(text: &str) -> Result<Option<String>, String> {
    let invalid = || format!("parsing time {text:?} as {RFC3339:?}: not an RFC 3339 date and time");
    let parts = split(text).ok_or_else(invalid)?;
    let date = civil::Date::new(parts.year, parts.month, parts.day).map_err(|_| invalid())?;
    let local =
        date.to_datetime(civil::Time::new(parts.hour, parts.minute, parts.second, 0).map_err(|_| invalid())?);
    let offset = Offset::from_seconds(parts.offset_seconds).map_err(|_| invalid())?;
    let instant = offset
        .to_timestamp(local)
        .map_err(|e| format!("parsing time {text:?}: {e}"))?;
    let utc = Offset::UTC.to_datetime(instant);
    if utc == civil::date(1, 1, 1).at(0, 0, 0, 0) && !parts.has_nanos {
        return Ok(None);
    }
    Ok(Some(format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        utc.year(),
        utc.month(),
        utc.day(),
        utc.hour(),
        utc.minute(),
        utc.second()
    )))
}

/// The fields of an RFC 3339 text, before calendar checks.
struct Parts {
    year: i16,
    month: i8,
    day: i8,
    hour: i8,
    minute: i8,
    second: i8,
    /// Whether a fraction with a non-zero digit was written (the time is then not Go's zero).
    has_nanos: bool,
    offset_seconds: i32,
}

fn split(text: &str) -> Option<Parts> {
    let bytes = text.as_bytes();
    let head = bytes.get(..19)?;
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if separators.iter().any(|(at, byte)| head[*at] != *byte) {
        return None;
    }
    let number = |from: usize, to: usize| -> Option<i32> {
        let digits = head.get(from..to)?;
        digits
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| digits.iter().fold(0, |n, d| n * 10 + i32::from(d - b'0')))
    };
    let small = |from: usize, to: usize| number(from, to).and_then(|n| i8::try_from(n).ok());
    let mut rest = &bytes[19..];
    let mut has_nanos = false;
    if rest.first() == Some(&b'.') && rest.get(1).is_some_and(u8::is_ascii_digit) {
        let digits = rest[1..].iter().take_while(|b| b.is_ascii_digit()).count();
        // Go reads nine digits of nanoseconds and ignores the rest.
        has_nanos = rest[1..=digits].iter().take(9).any(|d| *d != b'0');
        rest = &rest[1 + digits..];
    }
    let offset_seconds = match rest {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let two = |a: u8, b: u8| -> Option<i32> {
                (a.is_ascii_digit() && b.is_ascii_digit())
                    .then(|| i32::from(a - b'0') * 10 + i32::from(b - b'0'))
            };
            let hours = two(*h1, *h2).filter(|h| *h <= 23)?;
            let minutes = two(*m1, *m2).filter(|m| *m <= 59)?;
            let seconds = (hours * 60 + minutes) * 60;
            if *sign == b'-' { -seconds } else { seconds }
        }
        _ => return None,
    };
    Some(Parts {
        year: number(0, 4).and_then(|n| i16::try_from(n).ok())?,
        month: small(5, 7).filter(|m| (1..=12).contains(m))?,
        day: small(8, 10)?,
        hour: small(11, 13).filter(|h| *h <= 23)?,
        minute: small(14, 16).filter(|m| *m <= 59)?,
        second: small(17, 19).filter(|s| *s <= 59)?,
        has_nanos,
        offset_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(text: &str) -> Option<String> {
        round_trip(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn times_come_back_in_utc_with_whole_seconds() {
        for (written, printed_as) in [
            ("2026-07-01T12:00:00.5+02:00", "2026-07-01T10:00:00Z"),
            ("2026-07-01T10:00:00Z", "2026-07-01T10:00:00Z"),
            ("2026-07-01T10:00:00.999999999999Z", "2026-07-01T10:00:00Z"),
            ("2026-12-31T23:30:00-01:00", "2027-01-01T00:30:00Z"),
            ("2024-02-29T00:15:00+00:30", "2024-02-28T23:45:00Z"),
            ("0001-01-01T00:00:00.000000001Z", "0001-01-01T00:00:00Z"),
        ] {
            assert_eq!(printed(written).as_deref(), Some(printed_as), "{written}");
        }
    }

    #[test]
    fn the_zero_time_is_null() {
        assert_eq!(printed("0001-01-01T00:00:00Z"), None);
        assert_eq!(printed("0001-01-01T02:00:00+02:00"), None);
        assert_eq!(
            printed("0001-01-01T00:00:00.0000000001Z"),
            None,
            "a tenth digit is ignored"
        );
    }

    #[test]
    fn what_go_rejects_is_an_error_naming_the_text() {
        for text in [
            "",
            "yesterday",
            "2026-07-01",
            "2026-07-01 10:00:00Z",
            "2026-07-01t10:00:00z",
            "2026-02-30T10:00:00Z",
            "2026-13-01T10:00:00Z",
            "2026-07-01T24:00:00Z",
            "2026-07-01T10:00:60Z",
            "2026-07-01T10:00:00",
            "2026-07-01T10:00:00+0200",
            "2026-07-01T10:00:00+24:00",
            "2026-07-01T10:00:00.Z",
        ] {
            let error = round_trip(text).expect_err(text);
            assert!(error.contains(&format!("{text:?}")), "{text}: {error}");
        }
    }
}
