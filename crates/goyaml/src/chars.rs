//! Byte-level character classes of the libyaml emitter (`yamlprivateh.go`).
//!
//! Every predicate looks at the UTF-8 sequence starting at byte `i` of a
//! scalar. Reads past the end see a NUL byte, so no predicate can panic.

/// The byte at `i`, or NUL past the end.
pub(crate) fn at(b: &[u8], i: usize) -> u8 {
    b.get(i).copied().unwrap_or(0)
}

/// Length in bytes of the UTF-8 sequence whose first byte is `c` (0 for a
/// continuation byte, like libyaml's `WIDTH`).
pub(crate) fn width(c: u8) -> usize {
    if c & 0x80 == 0 {
        1
    } else if c & 0xE0 == 0xC0 {
        2
    } else if c & 0xF0 == 0xE0 {
        3
    } else if c & 0xF8 == 0xF0 {
        4
    } else {
        0
    }
}

/// ASCII space.
pub(crate) fn is_space(b: &[u8], i: usize) -> bool {
    at(b, i) == b' '
}

/// Space or tab.
pub(crate) fn is_blank(b: &[u8], i: usize) -> bool {
    matches!(at(b, i), b' ' | b'\t')
}

/// CR, LF, NEL (U+0085), LS (U+2028) or PS (U+2029).
pub(crate) fn is_break(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    c == b'\r'
        || c == b'\n'
        || (c == 0xC2 && at(b, i + 1) == 0x85)
        || (c == 0xE2 && at(b, i + 1) == 0x80 && matches!(at(b, i + 2), 0xA8 | 0xA9))
}

/// A blank, a break, or NUL (the end).
pub(crate) fn is_blankz(b: &[u8], i: usize) -> bool {
    is_blank(b, i) || is_break(b, i) || at(b, i) == 0
}

/// libyaml's notion of a printable character: LF, printable ASCII, and the
/// BMP ranges U+00A0–U+D7FF and U+E000–U+FFFD except U+FEFF. Tabs, other
/// control characters and everything outside the BMP are not printable.
pub(crate) fn is_printable(b: &[u8], i: usize) -> bool {
    let c = at(b, i);
    let c1 = at(b, i + 1);
    let c2 = at(b, i + 2);
    c == 0x0A
        || (0x20..=0x7E).contains(&c)
        || (c == 0xC2 && c1 >= 0xA0)
        || (c > 0xC2 && c < 0xED)
        || (c == 0xED && c1 < 0xA0)
        || c == 0xEE
        || (c == 0xEF && !(c1 == 0xBB && c2 == 0xBF) && !(c1 == 0xBF && (c2 == 0xBE || c2 == 0xBF)))
}

/// Whether the *whole value* starts with a byte order mark. libyaml's
/// `IS_BOM` ignores its index, and go-yaml calls it for every character of a
/// double-quoted scalar; this reproduces that.
pub(crate) fn starts_with_bom(b: &[u8]) -> bool {
    b.starts_with(&[0xEF, 0xBB, 0xBF])
}
