//! `sidecar-injector template render`: renders one Go `text/template` file with data from a
//! JSON or YAML file, or with the data an injection gives a pod, exactly as Go would.
//!
//! The functions are, by default, the ones the injector runs templates with: Go's built-ins,
//! sprig, and Istio's injection functions (`annotation`, `isset`, `toYaml`, `fromJSON`, `omit`,
//! `strdict`, `toJSON`, `directory`, `appendMultusNetwork`, `env`, ...), which replace sprig's
//! `indent`, `contains`, `omit`, `toYaml` and `env` as they do in Istio. This is the default
//! because the templates people render are injection templates, and a template rendered here
//! must behave as it will in the injector; `--funcs sprig` gives Go's built-ins and sprig alone,
//! for plain sprig templates. `--pod` renders with the data the injector would give that pod
//! (Istio's `SidecarTemplateData`: `.ObjectMeta`, `.Spec`, `.ProxyConfig`, `.Values`, ...).
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
use clap::{Args, Subcommand, ValueEnum};

use super::settings::{self, SettingsArgs};

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
    /// Render a Go text/template file (Go built-ins, sprig and Istio's injection functions) and
    /// print the result.
    Render(RenderArgs),
}

/// Arguments of `template render`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    sidecar-injector template render --template page.tmpl --data data.yaml\n  \
    sidecar-injector template render --template injection-template.yaml --pod pod.yaml --values values.json\n  \
    sidecar-injector template render --template plain.tmpl --data data.json --funcs sprig")]
pub struct RenderArgs {
    /// The template file.
    #[arg(long, value_name = "FILE")]
    pub template: PathBuf,
    /// The data (JSON or YAML); `-` reads stdin. Without it (and without --pod), the data is nil.
    #[arg(long, value_name = "FILE", conflicts_with = "pod")]
    pub data: Option<PathBuf>,
    /// A Pod (YAML or JSON; `-` reads stdin): render with the data the injector gives this pod
    /// (`.ObjectMeta`, `.Spec`, `.ProxyConfig`, `.MeshConfig`, `.Values`, `.Revision`, ...), from
    /// --values and --mesh (the embedded defaults when not given).
    #[arg(long, value_name = "POD.yaml")]
    pub pod: Option<PathBuf>,
    /// Which functions the template may call.
    #[arg(long, value_enum, default_value_t = Funcs::Istio)]
    pub funcs: Funcs,
    /// The configuration files, for --pod.
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// `.Revision`, for --pod.
    #[arg(long, default_value = "default", requires = "pod")]
    pub revision: String,
    /// `.NativeSidecars`, for --pod.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "true|false", requires = "pod")]
    pub native_sidecars: bool,
}

/// The function map of `template render`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Funcs {
    /// What the injector runs templates with: Go's built-ins, sprig, Istio's injection functions.
    Istio,
    /// Go's built-ins and sprig only, exactly as Go's sprig.
    Sprig,
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
    let data = match (&args.data, &args.pod) {
        (Some(p), _) => decode_data(&read_data(p)?)?,
        (None, Some(pod)) => pod_data(args, pod)?,
        (None, None) => gotemplate::Value::Nil,
    };
    let name = args
        .template
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let funcs = match args.funcs {
        Funcs::Istio => injector_engine::render::istio_funcs(),
        Funcs::Sprig => gotemplate::sprig::funcs(),
    };
    let template = match gotemplate::Template::new(name).funcs(&funcs).parse(&text) {
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

/// The data the injector gives `pod` with the configured values and mesh config.
fn pod_data(args: &RenderArgs, pod: &Path) -> anyhow::Result<gotemplate::Value> {
    let loaded = settings::load(&args.settings)?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    let options = injector_engine::Options {
        revision: args.revision.clone(),
        native_sidecars: args.native_sidecars,
        ..injector_engine::Options::default()
    };
    let injector = injector_engine::CompiledConfig::new(loaded.config, loaded.values, loaded.mesh, options)
        .map_err(|e| anyhow::anyhow!("injector configuration: {e}"))?;
    let object = super::input::single_object(pod)?;
    let kind = object
        .value
        .get("kind")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    if kind != "Pod" {
        anyhow::bail!("{}: --pod takes a Pod, got kind {kind:?}", object.describe());
    }
    injector
        .template_data_for(&object.value)
        .map_err(|e| anyhow::anyhow!("{}: {}", object.describe(), e.0))
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
