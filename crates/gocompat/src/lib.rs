//! Small pieces of Go's standard library, exact where Istio's output or error texts depend on
//! them, with no dependencies of their own: every crate that needs one calls it here.
//!
//! * [`duration`]: `time.ParseDuration` and `Duration.String()`, with Go's error texts.
//! * [`strconv`]: `strconv.Quote` and its relatives (`%q`), with `unicode.IsPrint`.
//! * [`fmt`]: `fmt`'s `%v` of a float64.

pub mod duration;
pub mod fmt;
pub mod strconv;
