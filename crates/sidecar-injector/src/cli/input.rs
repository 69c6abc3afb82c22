//! Reading the files the user names: a path, or `-` for standard input.
//!
//! Every error names the file, and for streams the document, so that a user with a 40-document
//! manifest knows where to look.

use std::{
    fs,
    io::{self, Read},
    path::Path,
};

use anyhow::{Context, Result, bail};
use injector_core::{object::ObjectRef, workload, yaml};
use serde_json::Value;

/// Text read from a file or from standard input, with the name to show in messages.
pub struct Source {
    /// The path as given, or `<stdin>`.
    pub name: String,
    /// The whole text.
    pub text: String,
}

/// Reads `path`, or standard input when `path` is `-`.
pub fn read_source(path: &Path) -> Result<Source> {
    if path.as_os_str() == "-" {
        let mut text = String::new();
        io::stdin()
            .read_to_string(&mut text)
            .context("cannot read standard input")?;
        return Ok(Source {
            name: "<stdin>".to_owned(),
            text,
        });
    }
    let name = path.display().to_string();
    let bytes = fs::read(path).with_context(|| format!("cannot read {name}"))?;
    let text = String::from_utf8(bytes).map_err(|e| anyhow::anyhow!("{name}: not UTF-8 text ({e})"))?;
    Ok(Source { name, text })
}

/// One object of a stream, with where it came from.
pub struct Located {
    /// `FILE: document N` or `FILE: document N, item M`.
    pub place: String,
    /// The object.
    pub value: Value,
}

impl Located {
    /// `FILE: document N (Kind ns/name)`, for messages about this object.
    pub fn describe(&self) -> String {
        match ObjectRef::of(&self.value) {
            Ok(reference) => format!("{} ({reference})", self.place),
            Err(_) => self.place.clone(),
        }
    }
}

/// Parses a stream into objects, expanding `kind: List`. Blank documents are dropped; an empty
/// stream is an error.
pub fn objects(source: &Source) -> Result<Vec<Located>> {
    let documents =
        yaml::parse_documents(&source.text).map_err(|e| anyhow::anyhow!("{}: {e}", source.name))?;
    if documents.is_empty() {
        bail!("{}: no YAML documents found", source.name);
    }
    Ok(workload::flatten_lists(documents)
        .into_iter()
        .map(|(place, value)| Located {
            place: format!("{}: {place}", source.name),
            value,
        })
        .collect())
}

/// Reads a file that must hold exactly one object.
pub fn single_object(path: &Path) -> Result<Located> {
    let source = read_source(path)?;
    let mut objects = objects(&source)?;
    if objects.len() > 1 {
        bail!("{}: expected one object, found {}", source.name, objects.len());
    }
    objects
        .pop()
        .with_context(|| format!("{}: no object found", source.name))
}
