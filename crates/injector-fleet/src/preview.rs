//! `preview`: the current and a proposed configuration side by side, on every workload.
//!
//! For each workload: would its pods be injected under each (the API server's webhooks, the
//! namespace's labels and the injector's policy, exactly as `explain` decides), does the
//! proposal render and give a pod the API server accepts, and what differs in the injected pod.
//! Workloads that change the same way form one group. The engine is pure, so workloads are
//! previewed in parallel.

use std::collections::BTreeMap;

use injector_core::{
    explain::{ConfigOrigin, Context as ExplainContext, Webhooks, explain},
    gate::NamespaceFacts,
};
use injector_engine::{CompiledConfig, Outcome, Request, cache::RenderCache};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;

use crate::{
    grouping::{Group, Grouper, Names},
    pod_diff::{PodDiff, diff_pods},
    pod_of::{namespace_of, owner_of, pod_of},
    pod_validation,
    snapshot::{ObjectKey, Workload},
};

/// What the decision reads besides the workload.
#[derive(Clone, Copy)]
pub struct Cluster<'a> {
    /// Namespaces by name (a namespace not here has no labels but its name).
    pub namespaces: &'a BTreeMap<String, NamespaceFacts>,
    /// The webhooks the API server has.
    pub webhooks: Webhooks<'a>,
}

/// One configuration: the engine with its templates, and the decision's settings.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    /// The injector.
    pub injector: &'a CompiledConfig,
    /// Renders shared by the workloads whose templates read the same of them (`None`: every
    /// workload is rendered on its own).
    pub renders: Option<&'a RenderCache>,
    /// Where its configuration came from (for the decision's wording).
    pub origin: &'a ConfigOrigin,
}

/// What one configuration does to a workload's pod.
pub enum Rendering {
    /// Not injected, and why.
    NotInjected(String),
    /// Injected into this pod.
    Injected(Value),
    /// The injection fails with this message (the API server would refuse the pod).
    Failed(String),
}

/// The verdict on one workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "change", rename_all = "camelCase")]
pub enum Verdict {
    /// The proposal fails to inject a pod that injects today: the pod could not be created.
    #[serde(rename_all = "camelCase")]
    Breaks {
        /// The engine's message (with the template and line, for a template error).
        error: String,
    },
    /// The proposal renders a pod the API server would refuse.
    #[serde(rename_all = "camelCase")]
    Invalid {
        /// The validation errors, each naming its field.
        problems: Vec<String>,
    },
    /// Fails under both configurations (not caused by the proposal).
    #[serde(rename_all = "camelCase")]
    StillFailing {
        /// The proposal's message.
        error: String,
    },
    /// Fails today, injects under the proposal.
    #[serde(rename_all = "camelCase")]
    Fixed {
        /// Today's message.
        error: String,
    },
    /// Not injected today, injected under the proposal.
    #[serde(rename_all = "camelCase")]
    NowInjected {
        /// Why it was not injected.
        was: String,
    },
    /// Injected today, not under the proposal.
    #[serde(rename_all = "camelCase")]
    NoLongerInjected {
        /// Why not.
        reason: String,
    },
    /// Injected under both, differently.
    #[serde(rename_all = "camelCase")]
    Changed {
        /// What differs, from current to proposed.
        diff: PodDiff,
    },
    /// Injected under both, identically.
    Unchanged,
    /// Injected under neither.
    #[serde(rename_all = "camelCase")]
    NotInjected {
        /// Why not (under the proposal).
        reason: String,
    },
}

impl Verdict {
    /// Whether the proposal breaks the workload (its pods could not be created).
    pub fn breaks(&self) -> bool {
        matches!(self, Verdict::Breaks { .. } | Verdict::Invalid { .. })
    }

    /// Order of the groups in a report: breakage first, unchanged last.
    fn rank(&self) -> u8 {
        match self {
            Verdict::Breaks { .. } => 0,
            Verdict::Invalid { .. } => 1,
            Verdict::NoLongerInjected { .. } => 2,
            Verdict::NowInjected { .. } => 3,
            Verdict::Changed { .. } => 4,
            Verdict::Fixed { .. } => 5,
            Verdict::StillFailing { .. } => 6,
            Verdict::Unchanged => 7,
            Verdict::NotInjected { .. } => 8,
        }
    }

    /// A short name of the verdict (`breaks`, `changed`, …), as in the JSON.
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Breaks { .. } => "breaks",
            Verdict::Invalid { .. } => "invalid",
            Verdict::StillFailing { .. } => "stillFailing",
            Verdict::Fixed { .. } => "fixed",
            Verdict::NowInjected { .. } => "nowInjected",
            Verdict::NoLongerInjected { .. } => "noLongerInjected",
            Verdict::Changed { .. } => "changed",
            Verdict::Unchanged => "unchanged",
            Verdict::NotInjected { .. } => "notInjected",
        }
    }
}

/// How many workloads got each verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    /// Every workload previewed.
    pub workloads: usize,
    /// [`Verdict::Breaks`] and [`Verdict::Invalid`].
    pub broken: usize,
    /// [`Verdict::NoLongerInjected`].
    pub no_longer_injected: usize,
    /// [`Verdict::NowInjected`].
    pub now_injected: usize,
    /// [`Verdict::Changed`].
    pub changed: usize,
    /// [`Verdict::Fixed`].
    pub fixed: usize,
    /// [`Verdict::StillFailing`].
    pub still_failing: usize,
    /// [`Verdict::Unchanged`].
    pub unchanged: usize,
    /// [`Verdict::NotInjected`].
    pub not_injected: usize,
}

/// The whole preview.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Counts per verdict.
    pub counts: Counts,
    /// Workloads grouped by verdict (and diff), breakage first.
    pub groups: Vec<Group<Verdict>>,
}

impl Report {
    /// Whether the proposal breaks any workload.
    pub fn breaks(&self) -> bool {
        self.counts.broken > 0
    }
}

/// Renders `workload` under one configuration.
pub fn render(workload: &Workload, cluster: Cluster<'_>, side: Side<'_>) -> Rendering {
    render_as(workload, owner_of(workload), cluster, side)
}

/// [`render`], with the owner the templates name given (`outdated` renders a ReplicaSet's
/// template for pods whose owner, to Istio, is the Deployment).
pub fn render_as(
    workload: &Workload,
    owner: injector_engine::prepare::owner::Owner,
    cluster: Cluster<'_>,
    side: Side<'_>,
) -> Rendering {
    let namespace_name = namespace_of(workload);
    let namespace = cluster.namespaces.get(&namespace_name).cloned();
    let explanation = explain(
        &workload.template,
        ExplainContext {
            namespace: namespace.as_ref(),
            webhooks: cluster.webhooks,
            config: side.injector.config(),
            origin: side.origin,
        },
    );
    if !explanation.injected {
        return Rendering::NotInjected(explanation.reason);
    }
    let pod = pod_of(workload);
    let request = Request {
        pod: Some(&pod),
        namespace: Some(&namespace_name),
        owner: Some(owner),
        ..Request::default()
    };
    let injected = match side.renders {
        Some(renders) => renders.inject(side.injector, &request),
        None => side.injector.inject(&request),
    };
    match injected {
        Ok(Outcome::Injected { pod, .. }) => Rendering::Injected(pod),
        Ok(Outcome::Skipped { decision }) => {
            Rendering::NotInjected(format!("skipped by the injector ({})", decision.rule.id()))
        }
        Err(error) => Rendering::Failed(error.0),
    }
}

/// The verdict from the two renderings.
pub fn verdict(current: Rendering, proposed: Rendering) -> Verdict {
    use Rendering::{Failed, Injected, NotInjected};
    match (current, proposed) {
        (Failed(_), Failed(error)) => Verdict::StillFailing { error },
        (_, Failed(error)) => Verdict::Breaks { error },
        (current, Injected(pod)) => {
            let problems = pod_validation::problems(&pod);
            let was_invalid = match &current {
                Injected(before) => pod_validation::problems(before) == problems,
                _ => false,
            };
            match current {
                _ if !problems.is_empty() && was_invalid => Verdict::StillFailing {
                    error: problems.join("; "),
                },
                _ if !problems.is_empty() => Verdict::Invalid { problems },
                Failed(error) => Verdict::Fixed { error },
                NotInjected(was) => Verdict::NowInjected { was },
                Injected(before) => {
                    let diff = diff_pods(&before, &pod);
                    if diff.is_empty() {
                        Verdict::Unchanged
                    } else {
                        Verdict::Changed { diff }
                    }
                }
            }
        }
        (Injected(_), NotInjected(reason)) => Verdict::NoLongerInjected { reason },
        (_, NotInjected(reason)) => Verdict::NotInjected { reason },
    }
}

/// Previews every workload, in parallel, and groups the verdicts.
pub fn preview(
    workloads: &[Workload],
    cluster: Cluster<'_>,
    current: Side<'_>,
    proposed: Side<'_>,
) -> Report {
    let mut previewer = Previewer::new(cluster, current, proposed, Names::All);
    previewer.add(workloads);
    previewer.finish()
}

/// A preview built batch by batch, as the workloads are read: what it holds is the counts and
/// one group per distinct verdict (with the names [`Names`] keeps), whatever the number of
/// workloads.
pub struct Previewer<'a> {
    cluster: Cluster<'a>,
    current: Side<'a>,
    proposed: Side<'a>,
    tally: Tally,
}

impl<'a> Previewer<'a> {
    /// An empty preview of `current` against `proposed`; each group keeps `names`.
    pub fn new(cluster: Cluster<'a>, current: Side<'a>, proposed: Side<'a>, names: Names) -> Self {
        Self {
            cluster,
            current,
            proposed,
            tally: Tally::new(names),
        }
    }

    /// Previews `workloads` in parallel (the engine is pure) and adds their verdicts in order.
    pub fn add(&mut self, workloads: &[Workload]) {
        let (cluster, current, proposed) = (self.cluster, self.current, self.proposed);
        let verdicts: Vec<(String, Verdict)> = workloads
            .par_iter()
            .map(|workload| {
                let before = render(workload, cluster, current);
                let after = render(workload, cluster, proposed);
                let verdict = verdict(before, after);
                (group_key(&verdict), verdict)
            })
            .collect();
        for (workload, (key, verdict)) in workloads.iter().zip(verdicts) {
            self.tally.add(key, workload.key.clone(), verdict);
        }
    }

    /// How many workloads were previewed so far.
    pub fn previewed(&self) -> usize {
        self.tally.counts.workloads
    }

    /// The report.
    pub fn finish(self) -> Report {
        self.tally.finish()
    }
}

/// Counts and groups of verdicts, added one at a time.
struct Tally {
    counts: Counts,
    groups: Grouper<Verdict, String>,
}

impl Tally {
    fn new(names: Names) -> Self {
        Self {
            counts: Counts::default(),
            groups: Grouper::new(names),
        }
    }

    fn add(&mut self, key: String, name: ObjectKey, verdict: Verdict) {
        let counts = &mut self.counts;
        counts.workloads += 1;
        let slot = match verdict {
            Verdict::Breaks { .. } | Verdict::Invalid { .. } => &mut counts.broken,
            Verdict::NoLongerInjected { .. } => &mut counts.no_longer_injected,
            Verdict::NowInjected { .. } => &mut counts.now_injected,
            Verdict::Changed { .. } => &mut counts.changed,
            Verdict::Fixed { .. } => &mut counts.fixed,
            Verdict::StillFailing { .. } => &mut counts.still_failing,
            Verdict::Unchanged => &mut counts.unchanged,
            Verdict::NotInjected { .. } => &mut counts.not_injected,
        };
        *slot += 1;
        self.groups.add(key, name, verdict);
    }

    /// Groups ordered breakage first, in the order first seen within a verdict.
    fn finish(self) -> Report {
        let mut groups = self.groups.finish();
        groups.sort_by_key(|group| group.shared.rank());
        Report {
            counts: self.counts,
            groups,
        }
    }
}

/// What workloads in one group share: the verdict, diff and all.
fn group_key(verdict: &Verdict) -> String {
    serde_json::to_string(verdict).unwrap_or_default()
}

/// Counts and groups verdicts.
pub fn report(verdicts: Vec<(ObjectKey, Verdict)>) -> Report {
    let mut tally = Tally::new(Names::All);
    for (name, verdict) in verdicts {
        tally.add(group_key(&verdict), name, verdict);
    }
    tally.finish()
}

#[cfg(test)]
mod tests {
    use injector_core::{config::InjectorConfig, decision::Policy};
    use injector_engine::{Options, mesh::default_mesh_config};
    use serde_json::json;

    use super::*;
    use crate::snapshot::Snapshot;

    fn injector(template: &str) -> CompiledConfig {
        let mut config = InjectorConfig::default();
        config.templates.insert("sidecar".to_owned(), template.to_owned());
        CompiledConfig::new(config, json!({}), default_mesh_config(), Options::default()).expect("parses")
    }

    const PROXY: &str =
        "spec:\n  containers:\n  - name: istio-proxy\n    image: proxy:{{ .Values.tag | default \"1\" }}\n";

    fn snapshot() -> Snapshot {
        let deployment = |name: &str, ns: &str, annotations: Value| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
                "spec": {"template": {"metadata": {"labels": {"app": name}, "annotations": annotations},
                                      "spec": {"containers": [{"name": "app", "image": "app"}]}}}})
        };
        let namespace = |name: &str, labels: Value| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}});
        Snapshot::from_objects(
            [
                deployment("web", "shop", json!({})),
                deployment("api", "shop", json!({})),
                deployment("batch", "shop", json!({"class": "batch"})),
                deployment("legacy", "old", json!({})),
                namespace("shop", json!({"istio-injection": "enabled"})),
                namespace("old", json!({})),
            ]
            .into_iter()
            .map(|o| (String::new(), o)),
        )
        .expect("sorts")
    }

    fn run(current: &CompiledConfig, proposed: &CompiledConfig) -> Report {
        let snapshot = snapshot();
        let origin = ConfigOrigin::File;
        preview(
            &snapshot.workloads,
            Cluster {
                namespaces: &snapshot.namespaces,
                webhooks: Webhooks::IstioChart { revision: "default" },
            },
            Side {
                injector: current,
                renders: None,
                origin: &origin,
            },
            Side {
                injector: proposed,
                renders: None,
                origin: &origin,
            },
        )
    }

    #[test]
    fn an_image_bump_changes_every_injected_workload_in_one_group() {
        let report = run(
            &injector(PROXY),
            &injector(&PROXY.replace("default \"1\"", "default \"2\"")),
        );
        assert!(!report.breaks());
        assert_eq!(report.counts.changed, 3);
        assert_eq!(report.counts.not_injected, 1);
        assert_eq!(report.groups.len(), 2);
        let Verdict::Changed { diff } = &report.groups[0].shared else {
            panic!("{:?}", report.groups[0]);
        };
        assert!(diff.is_image_only(), "{diff:?}");
        assert_eq!(report.groups[0].count, 3);
        assert_eq!(
            report.groups[1].workloads,
            [ObjectKey::new("Deployment", "old", "legacy")]
        );
    }

    #[test]
    fn a_template_that_fails_for_one_class_breaks_exactly_those() {
        let breaking = format!(
            "{PROXY}{{{{ if eq (index .ObjectMeta.Annotations \"class\") \"batch\" }}}}{{{{ fail \"no batch\" }}}}{{{{ end }}}}\n"
        );
        let report = run(&injector(PROXY), &injector(&breaking));
        assert!(report.breaks());
        assert_eq!(report.counts.broken, 1);
        let Verdict::Breaks { error } = &report.groups[0].shared else {
            panic!("{:?}", report.groups[0]);
        };
        assert!(error.contains("no batch"), "{error}");
        assert!(error.contains("inject:5:"), "names the template's line: {error}");
        assert_eq!(
            report.groups[0].workloads,
            [ObjectKey::new("Deployment", "shop", "batch")]
        );
        assert_eq!(report.counts.unchanged, 2);
    }

    #[test]
    fn a_pod_the_api_server_would_refuse_breaks_it() {
        let unmounted = "spec:\n  containers:\n  - name: istio-proxy\n    image: proxy\n    volumeMounts:\n    - {name: missing, mountPath: /etc/x}\n";
        let report = run(&injector(PROXY), &injector(unmounted));
        assert!(report.breaks());
        let Verdict::Invalid { problems } = &report.groups[0].shared else {
            panic!("{:?}", report.groups[0]);
        };
        assert_eq!(
            problems,
            &["spec.containers[1].volumeMounts[0].name: Not found: \"missing\""]
        );
    }

    #[test]
    fn decision_changes_are_reported() {
        let current = injector(PROXY);
        let mut config = InjectorConfig::default();
        config.injection.policy = Policy::Disabled;
        config.templates.insert("sidecar".to_owned(), PROXY.to_owned());
        let disabled = CompiledConfig::new(config, json!({}), default_mesh_config(), Options::default())
            .expect("parses");
        let report = run(&current, &disabled);
        assert_eq!(report.counts.no_longer_injected, 3);
        assert!(!report.breaks());
        let back = run(&disabled, &current);
        assert_eq!(back.counts.now_injected, 3);
    }

    #[test]
    fn verdicts_of_failures() {
        let failed = || Rendering::Failed("boom".to_owned());
        assert_eq!(
            verdict(failed(), failed()),
            Verdict::StillFailing { error: "boom".into() }
        );
        assert!(matches!(
            verdict(
                failed(),
                Rendering::Injected(json!({"spec": {"containers": [{"name": "a", "image": "a"}]}}))
            ),
            Verdict::Fixed { .. }
        ));
        assert!(verdict(Rendering::NotInjected("no".into()), failed()).breaks());
    }
}
