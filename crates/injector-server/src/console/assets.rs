//! The console's page, script and style, embedded in the binary (no CDN: it works air-gapped).
//! The script builds every element with `textContent`, never HTML from data, and draws the
//! charts itself on canvas.

/// The page; `{{TOKEN}}` is replaced by the per-process token.
const PAGE: &str = include_str!("assets/console.html");

/// The script.
pub(crate) const SCRIPT: &str = include_str!("assets/console.js");

/// The style sheet.
pub(crate) const STYLE: &str = include_str!("assets/console.css");

/// The page with `token` embedded (a hex string: nothing to escape).
pub(crate) fn page(token: &str) -> String {
    PAGE.replace("{{TOKEN}}", token)
}
