//! # gotemplate: Go's `text/template`, exact to Go, with sprig
//!
//! Every Istio installation keeps its sidecar injection templates as Go `text/template` text
//! with [sprig](https://masterminds.github.io/sprig/) functions, and many teams customise them.
//! A drop-in injector must render those templates exactly as Go does: the same bytes, the same
//! errors. No Rust crate does that, so this crate re-implements the engine. It has no I/O and
//! does not depend on anything Kubernetes- or Istio-specific.
//!
//! ## Design
//!
//! The crate mirrors Go's package layout so a reader of Go's source finds the counterpart:
//!
//! | Go | here | job |
//! | --- | --- | --- |
//! | `parse/lex.go` | [`lex`] | state machine emitting items |
//! | `parse/node.go`, `parse/parse.go` | [`parse`] | nodes and the recursive-descent parser |
//! | `exec.go` | `exec` (private) | the walker over nodes |
//! | `funcs.go` | [`funcs`] | the function registry and the built-ins |
//! | `fmt` | [`fmt`] | `Sprint`/`Sprintf` for the verbs templates use |
//! | `reflect.Value` | [`value`] | the open value model |
//! | `time` | [`gotime`] | `time.Time` printing, Go layouts (format and parse), durations, zones |
//! | sprig | [`sprig`] | sprig v3 functions, one module per family |
//!
//! **Values.** Go executes templates on `reflect.Value`s; we have an enum of the kinds
//! templates care about ([`Value`]) plus a trait for host objects ([`Object`]): structs and
//! pointers with fields, zero-argument methods (`.String`, nil-safe getters), typed nil, and
//! their own printing. JSON and YAML data become values the way Go's `encoding/json` decodes
//! into `interface{}` (numbers are `float64`). Strings, lists, maps and objects are shared
//! through `Arc`, so values are cheap to clone and templates render concurrently.
//!
//! **Maps are references.** As in Go, sprig's `set`, `unset` and `merge` change a map in place
//! and every holder sees it; [`Map`] keeps its entries behind a lock for that. A host that hands
//! the same data to many executions gives each its own [`Value::unshared`] copy, so that one's
//! writes do not reach the others.
//!
//! **Two kinds of nothing.** Go distinguishes an invalid `reflect.Value` (a missing map key;
//! prints `<no value>`, field access yields nothing) from a nil `interface{}` stored in a
//! container (a JSON `null`; field access is an error). [`Value::Missing`] and [`Value::Nil`]
//! model the two, and the executor converts between them where Go does (pipelines unwrap
//! interfaces; `interface{}` parameters receive nil).
//!
//! **Functions carry Go signatures.** A [`Func`] declares parameter types ([`ArgType`]), so
//! the executor reproduces Go's argument handling: constants are converted to the parameter type,
//! a `float64` from JSON passed to an `int` parameter fails with Go's message, argument counts are
//! checked with Go's wording. Hosts register functions in a [`FuncMap`]; later maps override
//! earlier ones, which is how Istio's own functions override sprig's.
//!
//! **Errors are values.** Go panics and recovers; we return `Result`s. Error texts are Go's,
//! including location (`template: t:1:3: executing "t" at <.x>: ...`).
//!
//! **Hostile input.** Nothing panics on any input, and recursion is bounded: parenthesised and
//! control-structure nesting is limited to [`parse::MAX_DEPTH`] (Go allows deeper nesting), and
//! execution nesting (template calls plus control structures) to [`MAX_EXEC_DEPTH`] (Go limits
//! template calls only, at 100000). [`Template::max_steps`] bounds loops and template calls,
//! and [`ExecOptions::deadline`] stops an execution in time, each with an error of its own
//! [`ExecErrorKind`]; sprig's allocating functions (`repeat`, `indent`, `seq`, `until`) refuse
//! absurd sizes, and `printf` refuses widths beyond Go's 1e6 limit. The lexer and parser are
//! fuzzed (`fuzz/`) and property-tested.
//!
//! **Known differences from Go** (all deliberate or rare): the nesting limits above;
//! `getHostByName` always fails because rendering never touches the network, and DSA keys are
//! not generated (see [`sprig`]);
//! Go's `reflect`-level details that no template can observe through JSON data are approximated
//! for host objects, which describe themselves through [`Object`].
//!
//! **Proof.** `tests/oracle.rs` renders a corpus of about 1570 cases and compares output and
//! error text byte for byte with what Go 1.26 + sprig v3.3.0 produced (`tests/oracle/`, generated
//! by `tools/template-oracle/`): 1364 match here, none fail; the 206 Istio cases are rendered by
//! the injection engine's tests. The crate README has the benchmark figures.
//!
//! ## Example
//!
//! ```
//! use gotemplate::{Template, Value, sprig};
//! let data = Value::from_json(&serde_json::json!({"name": "istio", "port": 15001}));
//! let t = Template::new("t")
//!     .funcs(&sprig::funcs())
//!     .parse("{{ .name | upper | quote }}:{{ .port }}")
//!     .unwrap();
//! assert_eq!(t.execute(&data).unwrap(), "\"ISTIO\":15001");
//! ```

pub mod fmt;
pub mod funcs;
pub mod gotime;
pub mod lex;
pub mod parse;
pub mod sprig;
pub mod value;

mod exec;
mod template;
mod watch;

pub use exec::MAX_EXEC_DEPTH;
pub use funcs::{ArgType, Func, FuncMap};
pub use parse::ParseError;
pub use template::{Error, ExecError, ExecErrorKind, ExecOptions, Template};
pub use value::{ElemType, IntType, List, Map, MapRead, MapWatch, Object, ObjectKind, UintType, Value};
pub use watch::Watch;
