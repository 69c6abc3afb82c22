//! `sidecar-injector template render`: renders one Go `text/template` file with data from a
//! JSON or YAML file, with Go's built-ins and sprig, exactly as Go would.
//!
//! The template is named after the file's base name (like Go's `ParseFiles`), so error
//! messages read `template: sidecar.tmpl:3:14: executing ...`. Data is decoded the way Go's
//! `encoding/json` decodes into `interface{}` (numbers become `float64`); YAML is converted to
//! JSON first. The rendered text goes to stdout with nothing added; on a parse or execution
//! error the message goes to stderr and the exit code is 1 (output written before an execution
//! error is still printed, as Go's writer would have received it).

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Subcommand};

/// `template` subcommands.
#[derive(Debug, Args)]
pub struct TemplateArgs {
    /// What to do with the template.
    #[command(subcommand)]
    pub command: TemplateCommand,
}

/// The `template` subcommands.
#[derive(Debug, Subcommand)]
pub enum TemplateCommand {
    /// Render a Go text/template file (Go built-ins and sprig available) and print the result.
    Render(RenderArgs),
}

/// Arguments of `template render`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The template file.
    #[arg(long, value_name = "FILE")]
    pub template: PathBuf,
    /// The data (JSON or YAML); `-` reads stdin. Without it, the data is nil.
    #[arg(long, value_name = "FILE")]
    pub data: Option<PathBuf>,
}

/// Runs a `template` subcommand.
pub fn run(args: TemplateArgs) -> anyhow::Result<ExitCode> {
    match args.command {
        TemplateCommand::Render(r) => render(&r),
    }
}

fn read_data(path: &Path) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("reading data from stdin")?;
        return Ok(s);
    }
    std::fs::read_to_string(path).with_context(|| format!("reading data file {}", path.display()))
}

/// Decodes JSON, or YAML converted to JSON, into a template value (numbers are `float64`).
fn decode_data(text: &str) -> anyhow::Result<gotemplate::Value> {
    if text.trim().is_empty() {
        return Ok(gotemplate::Value::Nil);
    }
    let json: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => serde_saphyr::from_str(text).context("data is neither valid JSON nor YAML")?,
    };
    Ok(gotemplate::Value::from_json(&json))
}

fn render(args: &RenderArgs) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.template)
        .with_context(|| format!("reading template file {}", args.template.display()))?;
    let data = match &args.data {
        Some(p) => decode_data(&read_data(p)?)?,
        None => gotemplate::Value::Nil,
    };
    let name = args
        .template
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let template = match gotemplate::Template::new(name)
        .funcs(&gotemplate::sprig::funcs())
        .parse(&text)
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::from(1));
        }
    };
    let mut out = String::new();
    let result = template.execute_to(&mut out, &data);
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(out.as_bytes()).context("writing output")?;
    stdout.flush().context("writing output")?;
    match result {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) => {
            eprintln!("{e}");
            Ok(ExitCode::from(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_json_and_yaml_like_go() {
        let j = decode_data(r#"{"a": 1}"#).expect("json");
        let y = decode_data("a: 1\n").expect("yaml");
        assert_eq!(j, y);
        assert_eq!(decode_data("").expect("empty"), gotemplate::Value::Nil);
    }
}
