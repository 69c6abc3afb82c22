//! What `preview` and `outdated` share: where the objects come from (a snapshot or manifests
//! given with `-f`, or the live cluster), the current configuration (files, the cluster's
//! ConfigMaps, or the embedded default), and the webhooks that decide which pods the injector
//! sees (given, the cluster's, or Istio's chart).

use std::{
    collections::{BTreeMap, BTreeSet},
    io::Write,
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};
use clap::Args;
use injector_core::{
    explain::{ConfigOrigin, Webhooks},
    gate::{NamespaceFacts, WebhookConfiguration},
};
use injector_engine::{CompiledConfig, Options, cache::RenderCache};
use injector_fleet::snapshot::Sorted;
use injector_kube::fleet as live;
use serde_json::Value;

use super::{
    input,
    object_stream::{self, Spooled},
    output::Output,
    progress::Progress,
    settings,
};

/// Where the cluster's objects come from.
#[derive(Debug, Clone, Args)]
pub struct SourceArgs {
    /// A `kubectl get -A -o yaml` snapshot (a `List`) or manifests (multi-document YAML, `-` for
    /// stdin), repeatable; Namespace objects in it give the namespaces' labels. Without it, the
    /// cluster is read (--kubeconfig).
    #[arg(short = 'f', long = "filename", value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Kubeconfig file for the live cluster (default: KUBECONFIG, ~/.kube/config, in-cluster).
    #[arg(long, value_name = "FILE", env = "KUBECONFIG", hide_env_values = true)]
    pub kubeconfig: Option<PathBuf>,
    /// Kubeconfig context.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// The injector's revision: the templates' `.Revision`, Istio's chart webhooks assumed
    /// offline, and the names of the cluster's webhook configuration and ConfigMaps.
    #[arg(long, default_value = "default", value_name = "REVISION")]
    pub revision: String,
    /// Offline: the MutatingWebhookConfiguration(s) the cluster has (`none`: assume the injector
    /// is called for every pod); default: Istio's chart webhooks for --revision. Live: the names
    /// of ours (repeatable); default: istio-sidecar-injector[-REV] and every one labelled
    /// istio.io/rev=REV.
    #[arg(long = "webhook", value_name = "FILE|NAME|none")]
    pub webhooks: Vec<String>,
    /// Live: namespace of the injector's ConfigMaps.
    #[arg(long, default_value = "istio-system", value_name = "NS")]
    pub config_namespace: String,
    /// Live: the injector ConfigMap (default: istio-sidecar-injector[-REV]).
    #[arg(long, value_name = "NAME")]
    pub injector_configmap: Option<String>,
    /// Live: the mesh ConfigMap (default: istio[-REV]; optional).
    #[arg(long, value_name = "NAME")]
    pub mesh_configmap: Option<String>,
    /// Whether the proxy is injected as a native sidecar (as `serve --native-sidecars`).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "true|false")]
    pub native_sidecars: bool,
}

/// The current configuration, when not the cluster's (or the embedded default offline).
#[derive(Debug, Clone, Args)]
pub struct CurrentArgs {
    /// The current injector ConfigMap or its `config` (default: the cluster's ConfigMap live, the
    /// embedded configuration offline).
    #[arg(long, value_name = "FILE")]
    pub current_injector_config: Option<PathBuf>,
    /// The current values (default: those of the current injector ConfigMap, else embedded).
    #[arg(long, value_name = "FILE")]
    pub current_values: Option<PathBuf>,
    /// The current mesh config (default: the cluster's mesh ConfigMap live, else Istio's defaults).
    #[arg(long, value_name = "FILE")]
    pub current_mesh: Option<PathBuf>,
}

/// A configuration file's name (for messages) and text.
#[derive(Debug, Clone)]
pub struct NamedText {
    /// The file, or `configmap/NS/NAME (data.KEY)`.
    pub name: String,
    /// Its text.
    pub text: String,
}

/// The three texts of a configuration (`None`: the embedded default).
#[derive(Debug, Clone, Default)]
pub struct ConfigTexts {
    /// The injector configuration.
    pub config: Option<NamedText>,
    /// The values.
    pub values: Option<NamedText>,
    /// The mesh config.
    pub mesh: Option<NamedText>,
}

impl ConfigTexts {
    /// Where the injector configuration comes from, in words.
    pub fn describe(&self) -> String {
        self.config
            .as_ref()
            .map_or_else(|| "the embedded configuration".to_owned(), |c| c.name.clone())
    }
}

/// Reads a file as a [`NamedText`].
pub fn read_named(path: &Path) -> Result<NamedText> {
    let source = input::read_source(path)?;
    Ok(NamedText {
        name: source.name,
        text: source.text,
    })
}

fn read_optional(path: Option<&PathBuf>) -> Result<Option<NamedText>> {
    path.map(|p| read_named(p)).transpose()
}

/// The byte budget of each side's render cache: the distinct renders a fleet repeats are few and
/// recur close together (the replicas and revisions of one workload), so a small cache keeps
/// them while the tool's memory stays flat however many workloads there are.
const RENDER_CACHE_BYTES: usize = 4 << 20;

/// A loaded configuration: the injector and where its configuration came from.
pub struct LoadedSide {
    /// The engine.
    pub injector: CompiledConfig,
    /// Renders shared between the workloads whose templates read the same of them.
    pub renders: RenderCache,
    /// For the decision's wording.
    pub origin: ConfigOrigin,
    /// Where it came from, for the report.
    pub description: String,
    /// What the loader noticed.
    pub warnings: Vec<String>,
}

/// Builds the injector from `texts`; errors name the file and field.
pub fn load_side(
    texts: &ConfigTexts,
    source: &SourceArgs,
    templates: &[(String, NamedText)],
) -> Result<LoadedSide> {
    fn pair(text: &Option<NamedText>) -> settings::Text<'_> {
        text.as_ref().map(|t| (t.name.as_str(), t.text.as_str()))
    }
    let mut loaded = settings::from_texts(pair(&texts.config), pair(&texts.values), pair(&texts.mesh))
        .map_err(|e| anyhow::anyhow!(e))?;
    for (name, template) in templates {
        loaded
            .config
            .templates
            .insert(name.clone(), template.text.clone());
    }
    let options = Options {
        revision: source.revision.clone(),
        native_sidecars: source.native_sidecars,
        ..Options::default()
    };
    let description = texts.describe();
    let injector = CompiledConfig::new(loaded.config, loaded.values, loaded.mesh, options).map_err(|e| {
        let file = templates
            .iter()
            .find(|(name, _)| *name == e.name)
            .map_or(description.clone(), |(_, t)| t.name.clone());
        anyhow::anyhow!("{file}: {e}")
    })?;
    let origin = match &texts.config {
        Some(text) if text.name.starts_with("configmap/") => ConfigOrigin::ConfigMap(text.name.clone()),
        Some(_) => ConfigOrigin::File,
        None => ConfigOrigin::IstioDefaults,
    };
    Ok(LoadedSide {
        injector,
        renders: RenderCache::new(RENDER_CACHE_BYTES),
        origin,
        description,
        warnings: loaded.warnings,
    })
}

/// Whether a text is a ConfigMap carrying `data.values` (then it gives the values too).
pub fn carries_values(text: &str) -> bool {
    let Ok(documents) = injector_core::yaml::parse_documents(text) else {
        return false;
    };
    documents.iter().any(|(_, document)| {
        document.get("kind").and_then(Value::as_str) == Some("ConfigMap")
            && document.pointer("/data/values").is_some_and(Value::is_string)
    })
}

/// Where the objects come from.
enum Objects {
    /// `-f` files (standard input and pipes spooled), read item by item on each pass.
    Files(Vec<Spooled>),
    /// The cluster, read page by page on each pass.
    Live(kube::Client),
}

/// Everything read before the objects, and where the objects are read from.
pub struct Cluster {
    /// Namespaces by name, for their labels.
    pub namespaces: BTreeMap<String, NamespaceFacts>,
    /// The webhook configurations (`None`: see `assume_called`).
    pub webhooks: Option<Vec<WebhookConfiguration>>,
    /// `--webhook none`: the injector is assumed to be called for every pod.
    pub assume_called: bool,
    /// The current configuration's texts.
    pub current: ConfigTexts,
    /// Notes for the user (assumptions made), before and after the namespaces note.
    notes: (Vec<String>, Vec<String>),
    /// The live client, when live.
    pub client: Option<kube::Client>,
}

/// Where the objects are read from, pass by pass.
pub struct Source {
    objects: Objects,
}

/// What a pass does with each batch of objects (place, object), the progress line, and the
/// fraction of the input read when known.
pub type BatchFn<'a> = dyn FnMut(Vec<(String, Value)>, &mut Progress, Option<f64>) -> Result<()> + 'a;

/// Objects handed to the work at once: the most held besides what the work keeps.
const BATCH: usize = 256;

impl Cluster {
    /// The webhooks the decisions assume: those read or given, none at all with `--webhook none`
    /// (every pod is assumed to reach the injector), else Istio's chart for `--revision`.
    pub fn decision_webhooks<'a>(&'a self, source: &'a SourceArgs) -> Webhooks<'a> {
        match (&self.webhooks, self.assume_called) {
            (_, true) => Webhooks::AssumeCalled,
            (Some(given), false) => Webhooks::Given(given),
            (None, false) => Webhooks::IstioChart {
                revision: &source.revision,
            },
        }
    }

    /// Whether a workload in `namespace` is decided without the namespace's labels: offline,
    /// when the input has no Namespace object for it (the report notes which).
    pub fn unlabelled(&self, namespace: &str) -> bool {
        self.client.is_none() && !self.namespaces.contains_key(namespace)
    }

    /// The reading's notes, then each configuration's warnings prefixed with its role
    /// (`current configuration: ...`).
    pub fn notes_with(&self, unlabelled: &BTreeSet<String>, sides: &[(&str, &LoadedSide)]) -> Vec<String> {
        let mut notes = self.notes.0.clone();
        if !unlabelled.is_empty() && !self.assume_called {
            notes.push(format!(
                "namespaces without a Namespace object in the input, taken as having no labels: {}",
                unlabelled.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        notes.extend(self.notes.1.iter().cloned());
        for (role, side) in sides {
            notes.extend(side.warnings.iter().map(|w| format!("{role} configuration: {w}")));
        }
        notes
    }
}

impl Source {
    /// Reads the objects whose kind `wanted` accepts and hands them to `each`, a batch at a time
    /// in the order read (files item by item, the cluster page by page, without `status` and
    /// `metadata.managedFields`), with where the reading stands for the progress line: the
    /// fraction of the files read, or how many objects the cluster says are left of the kind
    /// being read. Stops, writing nothing, when interrupted.
    pub fn read_objects(
        &mut self,
        runtime: &tokio::runtime::Runtime,
        wanted: &dyn Fn(&str) -> bool,
        progress: &mut Progress,
        each: &mut BatchFn<'_>,
    ) -> Result<()> {
        match &mut self.objects {
            Objects::Files(files) => {
                let total = files.len() as f64;
                for (index, file) in files.iter_mut().enumerate() {
                    let mut batch = Vec::with_capacity(BATCH);
                    let mut done = index as f64 / total;
                    object_stream::read_all(file, wanted, &mut |place, mut value, fraction| {
                        slim(&mut value);
                        batch.push((place, value));
                        done = (index as f64 + fraction) / total;
                        if batch.len() == BATCH {
                            progress.check()?;
                            each(std::mem::take(&mut batch), progress, Some(done))?;
                        }
                        Ok(())
                    })?;
                    if !batch.is_empty() {
                        progress.check()?;
                        each(batch, progress, Some(done))?;
                    }
                }
            }
            Objects::Live(client) => {
                for resource in live::WORKLOADS.iter().filter(|r| wanted(r.kind)) {
                    let mut token: Option<String> = None;
                    let mut read = 0usize;
                    loop {
                        progress.check()?;
                        let page = runtime
                            .block_on(live::list_page(client, resource, token.as_deref()))
                            .map_err(|e| anyhow::anyhow!(e))?;
                        read += page.objects.len();
                        let fraction = page
                            .remaining
                            .map(|left| read as f64 / (read as f64 + left as f64));
                        let place = format!("the cluster's {}", resource.plural);
                        let batch = page.objects.into_iter().map(|o| (place.clone(), o)).collect();
                        each(batch, progress, fraction)?;
                        token = page.next;
                        if token.is_none() {
                            break;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// Drops what no fleet tool reads of an object read from a file (a live object never has it).
fn slim(object: &mut Value) {
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
    }
}

/// The report as pretty JSON, with `extra` fields added at its top level.
pub fn report_json(report: &impl serde::Serialize, extra: Vec<(&str, Value)>) -> Result<String> {
    let mut value = serde_json::to_value(report).context("cannot encode the report")?;
    if let Some(map) = value.as_object_mut() {
        for (key, field) in extra {
            map.insert(key.to_owned(), field);
        }
    }
    let mut text = serde_json::to_string_pretty(&value).context("cannot encode the report")?;
    text.push('\n');
    Ok(text)
}

/// Where a report goes.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Write the report to FILE instead of standard output: it replaces FILE only once it is
    /// complete (an interrupted or failed run leaves FILE as it was).
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
}

/// Writes `text` whole, to `--output-file` (replaced atomically) or standard output.
pub fn write_report(text: &str, args: &ReportArgs, progress: &Progress) -> Result<()> {
    progress.check()?;
    progress.finish();
    let Some(path) = &args.output_file else {
        return print(text);
    };
    let mut output = Output::open(Some(path))?;
    output.write_all(text.as_bytes())?;
    progress.check()?;
    output.commit()
}

/// Writes `text` to standard output, whole.
pub fn print(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .context("cannot write to standard output")
}

/// Whether the objects come from the cluster.
pub fn is_live(source: &SourceArgs) -> bool {
    source.files.is_empty()
}

/// Reads the webhooks, the current configuration texts and the namespaces; the objects are read
/// afterwards, pass by pass ([`Cluster::read_objects`]).
pub fn read(
    source: &SourceArgs,
    current: &CurrentArgs,
    runtime: &tokio::runtime::Runtime,
    progress: &mut Progress,
) -> Result<(Cluster, Source)> {
    let given = ConfigTexts {
        config: read_optional(current.current_injector_config.as_ref())?,
        values: read_optional(current.current_values.as_ref())?,
        mesh: read_optional(current.current_mesh.as_ref())?,
    };
    if is_live(source) {
        return runtime.block_on(read_live(source, given));
    }
    let files = source
        .files
        .iter()
        .map(|path| Spooled::open(path))
        .collect::<Result<Vec<_>>>()?;
    let mut cluster = Cluster {
        namespaces: BTreeMap::new(),
        webhooks: None,
        assume_called: false,
        current: given,
        notes: (Vec::new(), Vec::new()),
        client: None,
    };
    let mut objects = Source {
        objects: Objects::Files(files),
    };
    let mut namespaces = BTreeMap::new();
    objects.read_objects(
        runtime,
        &|kind| kind == "Namespace",
        progress,
        &mut |batch, progress, done| {
            for (place, object) in batch {
                if let Sorted::Namespace(facts) =
                    Sorted::of(&place, object).map_err(|e| anyhow::anyhow!(e))?
                {
                    namespaces.insert(facts.name.clone(), facts);
                }
            }
            progress.update(&format!("{} namespaces read", namespaces.len()), done);
            Ok(())
        },
    )?;
    cluster.namespaces = namespaces;
    let (webhooks, assume_called) = match source.webhooks.as_slice() {
        [] => {
            cluster.notes.0.push(format!(
                "webhooks: none given, assuming Istio's chart webhooks for revision {:?} (namespace label \
                 istio-injection=enabled or istio.io/rev, pod label sidecar.istio.io/inject=true)",
                source.revision
            ));
            (None, false)
        }
        [none] if none == "none" => (None, true),
        files => {
            let mut configurations = Vec::new();
            for file in files {
                let text = input::read_source(Path::new(file))?;
                for object in input::objects(&text)? {
                    configurations.push(
                        WebhookConfiguration::from_object(&object.value)
                            .map_err(|e| anyhow::anyhow!("{}: {e}", object.describe()))?,
                    );
                }
            }
            (Some(configurations), false)
        }
    };
    cluster.webhooks = webhooks;
    cluster.assume_called = assume_called;
    if cluster.current.config.is_none() && cluster.current.values.is_none() {
        cluster
            .notes
            .1
            .push("current configuration: the embedded default (give --current-injector-config)".to_owned());
    }
    Ok((cluster, objects))
}

async fn read_live(source: &SourceArgs, mut current: ConfigTexts) -> Result<(Cluster, Source)> {
    let client = injector_kube::client::client(source.kubeconfig.as_deref(), source.context.as_deref())
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    let mut namespaces = BTreeMap::new();
    for object in live::list(&client, &live::NAMESPACES)
        .await
        .map_err(|e| anyhow::anyhow!(e))?
    {
        if let Sorted::Namespace(facts) =
            Sorted::of("the cluster's namespaces", object).map_err(|e| anyhow::anyhow!(e))?
        {
            namespaces.insert(facts.name.clone(), facts);
        }
    }

    let suffix = match source.revision.as_str() {
        "" | "default" => String::new(),
        revision => format!("-{revision}"),
    };
    let all = live::list(&client, &live::WEBHOOKS)
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    let ours: Vec<&Value> = all
        .iter()
        .filter(|mwc| {
            let name = mwc
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            if !source.webhooks.is_empty() {
                return source.webhooks.iter().any(|w| w == name);
            }
            let rev = if source.revision.is_empty() {
                "default"
            } else {
                &source.revision
            };
            name == format!("istio-sidecar-injector{suffix}")
                || mwc
                    .pointer("/metadata/labels/istio.io~1rev")
                    .and_then(Value::as_str)
                    == Some(rev)
        })
        .collect();
    if ours.is_empty() {
        let names: Vec<&str> = all
            .iter()
            .filter_map(|m| m.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        bail!(
            "no MutatingWebhookConfiguration of revision {:?} in the cluster (istio-sidecar-injector{suffix}, or labelled \
             istio.io/rev); the cluster has: [{}]; name yours with --webhook NAME",
            source.revision,
            names.join(", ")
        );
    }
    let webhooks = ours
        .iter()
        .map(|object| {
            WebhookConfiguration::from_object(object).map_err(|e| {
                anyhow::anyhow!(
                    "MutatingWebhookConfiguration {}: {e}",
                    object
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;

    let namespace = &source.config_namespace;
    let injector_cm = source
        .injector_configmap
        .clone()
        .unwrap_or_else(|| format!("istio-sidecar-injector{suffix}"));
    let mesh_cm = source
        .mesh_configmap
        .clone()
        .unwrap_or_else(|| format!("istio{suffix}"));
    let named = |cm: &str, key: &str, text: String| NamedText {
        name: format!("configmap/{namespace}/{cm} (data.{key})"),
        text,
    };
    let mut notes = Vec::new();
    if current.config.is_none() {
        let config = live::config_map_key(&client, namespace, &injector_cm, "config")
            .await
            .map_err(|e| anyhow::anyhow!(e))?
            .with_context(|| {
                format!(
                    "ConfigMap {namespace}/{injector_cm} (data.config) not found: the current configuration is read from \
                     it (name it with --injector-configmap and --config-namespace, or give --current-injector-config)"
                )
            })?;
        current.config = Some(named(&injector_cm, "config", config));
        if current.values.is_none() {
            current.values = live::config_map_key(&client, namespace, &injector_cm, "values")
                .await
                .map_err(|e| anyhow::anyhow!(e))?
                .map(|text| named(&injector_cm, "values", text));
        }
    }
    if current.mesh.is_none() {
        current.mesh = live::config_map_key(&client, namespace, &mesh_cm, "mesh")
            .await
            .map_err(|e| anyhow::anyhow!(e))?
            .map(|text| named(&mesh_cm, "mesh", text));
        if current.mesh.is_none() {
            notes.push(format!(
                "ConfigMap {namespace}/{mesh_cm} (data.mesh) not found: Istio's mesh defaults apply"
            ));
        }
    }
    let cluster = Cluster {
        namespaces,
        webhooks: Some(webhooks),
        assume_called: false,
        current,
        notes: (Vec::new(), notes),
        client: Some(client.clone()),
    };
    Ok((
        cluster,
        Source {
            objects: Objects::Live(client),
        },
    ))
}

/// A runtime for the cluster's requests.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")
}
