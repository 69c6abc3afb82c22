//! Parsing: Go's `text/template/parse` package. [`tree::parse`] turns template text into
//! [`Tree`]s of [`node`]s; the lexer lives in [`crate::lex`].

pub mod node;
pub mod number;
pub mod strconv;
pub mod tree;

pub use node::*;
pub use tree::{MAX_DEPTH, ParseError, Tree, parse};
