//! Scalar analysis and style selection: which of plain, single-quoted,
//! double-quoted and literal styles a string may be written in
//! (`yaml_emitter_analyze_scalar` and `yaml_emitter_select_scalar_style`).

use crate::chars::{is_blank, is_blankz, is_break, is_printable, is_space, width};

/// The styles go-yaml v2 writes for the values a JSON document can hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Unquoted.
    Plain,
    /// `'…'`, with `''` for a quote.
    SingleQuoted,
    /// `"…"`, with backslash escapes.
    DoubleQuoted,
    /// A `|` block.
    Literal,
}

/// What a scalar's text allows, as computed by libyaml's analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Analysis {
    /// Contains a line break.
    pub(crate) multiline: bool,
    /// May be written plain outside flow collections.
    pub(crate) block_plain_allowed: bool,
    /// May be written single-quoted.
    pub(crate) single_quoted_allowed: bool,
    /// May be written as a block (literal) scalar.
    pub(crate) block_allowed: bool,
}

/// Analyze a scalar's bytes the way libyaml's emitter does.
pub(crate) fn analyze(value: &[u8]) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with(b"---") || value.starts_with(b"...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let mut leading_space = false;
    let mut leading_break = false;
    let mut trailing_space = false;
    let mut trailing_break = false;
    let mut break_space = false;
    let mut space_break = false;
    let mut preceded_by_whitespace = true;
    let mut previous_space = false;
    let mut previous_break = false;

    let mut i = 0;
    while i < value.len() {
        let w = width(value[i]).max(1);
        let followed_by_whitespace = i + w >= value.len() || is_blank(value, i + w);
        let c = value[i];
        if i == 0 {
            match c {
                b'#' | b',' | b'[' | b']' | b'{' | b'}' | b'&' | b'*' | b'!' | b'|' | b'>' | b'\'' | b'"'
                | b'%' | b'@' | b'`' => block_indicators = true,
                b'?' | b':' | b'-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                b':' if followed_by_whitespace => block_indicators = true,
                b'#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        // The emitter is set to unicode, so only non-printable characters
        // are special.
        if !is_printable(value, i) {
            special_characters = true;
        }
        if is_space(value, i) {
            if i == 0 {
                leading_space = true;
            }
            if i + w == value.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(value, i) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + w == value.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blankz(value, i);
        i += w;
    }

    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// The style the emitter finally uses for a scalar the encoder asked to write
/// in `requested` style. Only block context is handled: the JSON data model
/// never puts a scalar inside a flow collection (only empty collections are
/// written in flow style).
pub(crate) fn select_style(
    requested: Style,
    analysis: &Analysis,
    value_len: usize,
    simple_key: bool,
) -> Style {
    let mut style = requested;
    if simple_key && analysis.multiline {
        style = Style::DoubleQuoted;
    }
    if style == Style::Plain && (!analysis.block_plain_allowed || (value_len == 0 && simple_key)) {
        style = Style::SingleQuoted;
    }
    if style == Style::SingleQuoted && !analysis.single_quoted_allowed {
        style = Style::DoubleQuoted;
    }
    if style == Style::Literal && (!analysis.block_allowed || simple_key) {
        style = Style::DoubleQuoted;
    }
    style
}
