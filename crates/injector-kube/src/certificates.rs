//! Certificates in cluster mode: the CA Secret (created empty by the chart or the manifests; the
//! first replica to see it empty fills it with a new CA, with optimistic concurrency), each
//! replica's serving certificate, and — leader only — the CA rotation steps and the caBundle of
//! every webhook of ours.
//!
//! The injector never creates a Secret: `create` cannot be limited to one name, and with it a
//! compromised injector could mint any Secret of its namespace (a ServiceAccount token, a mesh
//! CA). It reads, follows and updates its one Secret by name.
//!
//! [`Reconciler::step`] is called with what the watches last saw whenever something changes
//! (and every `resync` for the time-based steps). It never blocks an admission: serving goes on
//! with the certificate in service whatever the API server does.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, Client};
use time::OffsetDateTime;

use injector_pki::{self as pki, CaMaterial};
use injector_server::CertStore;

use crate::ca_set::{CaSet, RotationPolicy, bundle_fingerprints};
use crate::status::{Shared, WebhookStatus};
use crate::webhooks::{FIELD_MANAGER, ca_bundle_patch, every_webhook_trusts, stale_webhooks};

/// Where the serving certificate comes from in cluster mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CertificateMode {
    /// A CA of our own in the Secret `secret`, created if absent and rotated.
    SelfManaged {
        /// The CA Secret's name (in the injector's namespace).
        secret: String,
        /// CA validity and overlap.
        policy: RotationPolicy,
        /// Validity of each replica's serving certificate (renewed with a third left).
        leaf_validity: Duration,
        /// How long a CA must have been in every webhook's caBundle before it is served: the
        /// API server's own informer needs a moment to see a new caBundle.
        settle: Duration,
    },
    /// A Secret written by cert-manager or another tool: `tls.crt`, `tls.key` and `ca.crt`
    /// (the caBundle). We only serve and watch it.
    External {
        /// The Secret's name.
        secret: String,
    },
}

impl CertificateMode {
    /// The Secret's name.
    pub fn secret(&self) -> &str {
        match self {
            CertificateMode::SelfManaged { secret, .. } | CertificateMode::External { secret } => secret,
        }
    }
}

/// What the Secret watch has seen.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed<T> {
    /// Not listed yet.
    Unknown,
    /// Listed, absent.
    Absent,
    /// Present.
    Present(T),
}

/// The serving certificate in service.
#[derive(Debug, Clone)]
struct Serving {
    ca_fingerprint: String,
    issued: OffsetDateTime,
    not_after: OffsetDateTime,
    /// For external mode: the Secret's resourceVersion it came from.
    source_version: Option<String>,
}

/// Per-replica certificate state and the writes it makes.
pub struct Reconciler {
    secrets: Api<Secret>,
    mwcs: Api<MutatingWebhookConfiguration>,
    namespace: String,
    mode: CertificateMode,
    names: Vec<String>,
    certs: CertStore,
    shared: Shared,
    serving: Option<Serving>,
    trusted_since: HashMap<String, Instant>,
    reported_error: Option<String>,
}

impl std::fmt::Debug for Reconciler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconciler")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl Reconciler {
    /// A reconciler for the injector in `namespace`, serving `names`.
    pub fn new(
        client: Client,
        namespace: &str,
        mode: CertificateMode,
        names: Vec<String>,
        certs: CertStore,
        shared: Shared,
    ) -> Self {
        Reconciler {
            secrets: Api::namespaced(client.clone(), namespace),
            mwcs: Api::all(client),
            namespace: namespace.to_owned(),
            mode,
            names,
            certs,
            shared,
            serving: None,
            trusted_since: HashMap::new(),
            reported_error: None,
        }
    }

    fn secret_label(&self) -> String {
        format!("Secret {}/{}", self.namespace, self.mode.secret())
    }

    /// One pass: make sure the Secret exists, serve the right certificate, and (leader) take
    /// the next rotation step and patch stale caBundles.
    pub async fn step(
        &mut self,
        secret: &Observed<Secret>,
        webhooks: Option<&[MutatingWebhookConfiguration]>,
        leader: bool,
    ) {
        let secret = match secret {
            Observed::Unknown => return,
            Observed::Absent => {
                self.absent();
                return;
            }
            Observed::Present(secret) => secret,
        };
        let data: BTreeMap<String, Vec<u8>> = secret
            .data
            .clone()
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        match self.mode.clone() {
            CertificateMode::SelfManaged {
                policy,
                leaf_validity,
                settle,
                ..
            } => {
                if data.values().all(Vec::is_empty) {
                    self.fill(secret, &policy).await;
                    return;
                }
                let set = match CaSet::from_secret_data(&data) {
                    Ok(set) => set,
                    Err(error) => {
                        let empty_it = injector_core::shell::command([
                            "kubectl",
                            "-n",
                            &self.namespace,
                            "patch",
                            "secret",
                            self.mode.secret(),
                            "--type=json",
                            "-p",
                            r#"[{"op":"remove","path":"/data"}]"#,
                        ]);
                        self.report(Some(format!(
                            "{} is not a usable CA: {error}; it is left as it is (fix it, or empty it to have a new CA generated: \
                             `{empty_it}`)",
                            self.secret_label(),
                        )));
                        return;
                    }
                };
                self.report(None);
                let bundle = set.bundle_pem();
                self.observe_webhooks(webhooks, bundle.as_bytes(), &set);
                let trusted = |fp: &str| self.trusted_for(fp, settle, webhooks);
                let signing = set.signing_ca(trusted).clone();
                self.serve_from(
                    &signing.material,
                    &signing.fingerprint,
                    signing.not_after,
                    leaf_validity,
                );
                if leader {
                    let now = OffsetDateTime::now_utc();
                    let trusted = |fp: &str| self.trusted_for(fp, settle, webhooks);
                    match set.plan(now, &policy, trusted) {
                        Ok(Some((next, why))) => self.write_rotation(secret, &next, why).await,
                        Ok(None) => {}
                        Err(error) => tracing::error!(%error, "cannot generate the next CA"),
                    }
                    self.patch_bundles(webhooks, bundle.as_bytes()).await;
                }
            }
            CertificateMode::External { .. } => {
                let (Some(cert), Some(key)) = (data.get("tls.crt"), data.get("tls.key")) else {
                    self.report(Some(format!(
                        "{} has no data.tls.crt and data.tls.key",
                        self.secret_label()
                    )));
                    return;
                };
                let version = secret.metadata.resource_version.clone();
                if self.serving.as_ref().and_then(|s| s.source_version.clone()) != version
                    || self.serving.is_none()
                {
                    match self.certs.install_pem(cert, key) {
                        Ok(info) => {
                            tracing::info!(secret = %self.secret_label(), subject = %info.subject, serial = %info.serial,
                                not_after = %rfc3339(info.not_after), "serving certificate loaded from the Secret");
                            let now = OffsetDateTime::now_utc();
                            self.serving = Some(Serving {
                                ca_fingerprint: String::new(),
                                issued: now,
                                not_after: OffsetDateTime::from_unix_timestamp(info.not_after).unwrap_or(now),
                                source_version: version,
                            });
                        }
                        Err(error) => {
                            self.report(Some(format!(
                                "{}: {error}; keeping the certificate in service",
                                self.secret_label()
                            )));
                            return;
                        }
                    }
                }
                let Some(ca) = data.get("ca.crt").filter(|c| !c.is_empty()) else {
                    self.report(Some(format!(
                        "{} has no data.ca.crt, so the webhooks' caBundle cannot be set from it",
                        self.secret_label()
                    )));
                    return;
                };
                self.report(None);
                let ca = ca.clone();
                self.observe_external(webhooks, &ca);
                if leader {
                    self.patch_bundles(webhooks, &ca).await;
                }
            }
        }
    }

    /// The Secret does not exist. It is never created here (see the module's doc): say what
    /// creates it. The certificate in service, if any, keeps serving.
    fn absent(&mut self) {
        let error = match &self.mode {
            CertificateMode::SelfManaged { secret, .. } => format!(
                "{} does not exist: the chart and deploy/manifests create it empty and the injector fills it \
                 (this ServiceAccount may update it, not create it); create it with \
                 `{}`",
                self.secret_label(),
                injector_core::shell::command([
                    "kubectl",
                    "-n",
                    &self.namespace,
                    "create",
                    "secret",
                    "generic",
                    secret
                ])
            ),
            CertificateMode::External { .. } => format!(
                "{} does not exist yet (external certificates: cert-manager or another tool writes it)",
                self.secret_label()
            ),
        };
        self.report(Some(error));
    }

    /// The Secret exists and is empty: fill it with a new CA, as an update with the Secret's
    /// resourceVersion (a replica racing us may win; its CA is then the one, the watch brings
    /// it).
    async fn fill(&mut self, secret: &Secret, policy: &RotationPolicy) {
        let set = match CaSet::generate(OffsetDateTime::now_utc(), policy) {
            Ok(set) => set,
            Err(error) => {
                tracing::error!(%error, "cannot generate a CA");
                return;
            }
        };
        let mut filled = secret.clone();
        filled.data = Some(to_bytes(set.to_secret_data()));
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        match self.secrets.replace(self.mode.secret(), &params, &filled).await {
            Ok(_) => {
                tracing::info!(secret = %self.secret_label(), ca_sha256 = %set.current.fingerprint,
                    not_after = %rfc3339(set.current.not_after), "CA created in the empty Secret")
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                tracing::info!(secret = %self.secret_label(), "another replica filled the CA Secret first; using it");
            }
            Err(error) => self.report(Some(format!("cannot fill {}: {error}", self.secret_label()))),
        }
    }

    fn report(&mut self, error: Option<String>) {
        if error != self.reported_error {
            match &error {
                Some(e) => {
                    tracing::error!(error = %e, "certificates");
                    self.certs.report_error(e.clone());
                }
                None if self.reported_error.is_some() => {
                    tracing::info!(secret = %self.secret_label(), "the Secret is usable again")
                }
                None => {}
            }
            self.reported_error = error.clone();
        }
        self.shared.update(|s| s.secret_error = error);
    }

    /// Whether every webhook has trusted `fingerprint` for at least `settle`.
    fn trusted_for(
        &self,
        fingerprint: &str,
        settle: Duration,
        webhooks: Option<&[MutatingWebhookConfiguration]>,
    ) -> bool {
        webhooks.is_some_and(|w| every_webhook_trusts(w, fingerprint))
            && self
                .trusted_since
                .get(fingerprint)
                .is_some_and(|since| since.elapsed() >= settle)
    }

    fn observe_webhooks(
        &mut self,
        webhooks: Option<&[MutatingWebhookConfiguration]>,
        bundle: &[u8],
        set: &CaSet,
    ) {
        let Some(webhooks) = webhooks else { return };
        let fingerprints = bundle_fingerprints(bundle);
        self.trusted_since.retain(|fp, _| fingerprints.contains(fp));
        for fp in &fingerprints {
            if every_webhook_trusts(webhooks, fp) {
                self.trusted_since.entry(fp.clone()).or_insert_with(Instant::now);
            } else {
                self.trusted_since.remove(fp);
            }
        }
        let statuses = webhook_statuses(webhooks, bundle);
        self.shared.update(|s| {
            s.bundle = fingerprints;
            s.webhooks = statuses;
        });
        self.shared.ca_expiry(set.current.not_after);
    }

    fn observe_external(&mut self, webhooks: Option<&[MutatingWebhookConfiguration]>, bundle: &[u8]) {
        let statuses = webhooks.map(|w| webhook_statuses(w, bundle)).unwrap_or_default();
        let fingerprints = bundle_fingerprints(bundle);
        self.shared.update(|s| {
            s.bundle = fingerprints;
            s.webhooks = statuses;
        });
    }

    /// Issues a serving certificate from `ca` when the CA changed or a third of the
    /// certificate's validity is left.
    fn serve_from(&mut self, ca: &CaMaterial, fingerprint: &str, ca_not_after: i64, validity: Duration) {
        let now = OffsetDateTime::now_utc();
        let due = match &self.serving {
            None => true,
            Some(s) if s.ca_fingerprint != fingerprint => true,
            Some(s) => (s.not_after - now) < (s.not_after - s.issued) / 3,
        };
        if !due {
            return;
        }
        let not_after = now + validity;
        match pki::issue_leaf(ca, &self.names, now - time::Duration::minutes(5), not_after)
            .map_err(|e| e.to_string())
            .and_then(|leaf| {
                self.certs
                    .install_pem(leaf.chain_pem.as_bytes(), leaf.key_pem.as_bytes())
                    .map(|i| (leaf, i))
                    .map_err(|e| e.to_string())
            }) {
            Ok((leaf, info)) => {
                let switched = self
                    .serving
                    .as_ref()
                    .is_some_and(|s| s.ca_fingerprint != fingerprint);
                tracing::info!(ca_sha256 = %fingerprint, serial = %info.serial, names = ?self.names,
                    not_after = %rfc3339(leaf.not_after), ca_not_after = %rfc3339(ca_not_after),
                    "{}", if switched { "serving certificate issued by the new CA" } else { "serving certificate issued" });
                self.serving = Some(Serving {
                    ca_fingerprint: fingerprint.to_owned(),
                    issued: now,
                    not_after: OffsetDateTime::from_unix_timestamp(leaf.not_after).unwrap_or(not_after),
                    source_version: None,
                });
                let fp = fingerprint.to_owned();
                self.shared.update(|s| s.serving_ca = Some(fp));
            }
            Err(error) => {
                tracing::error!(%error, "cannot issue the serving certificate; keeping the one in service")
            }
        }
    }

    /// Writes a rotation step with the Secret's resourceVersion: if another writer got there
    /// first, the API server refuses it and the next pass starts from what they wrote.
    async fn write_rotation(&mut self, secret: &Secret, next: &CaSet, why: &str) {
        let mut updated = secret.clone();
        updated.data = Some(to_bytes(next.to_secret_data()));
        let params = PostParams {
            field_manager: Some(FIELD_MANAGER.to_owned()),
            ..PostParams::default()
        };
        match self.secrets.replace(self.mode.secret(), &params, &updated).await {
            Ok(_) => {
                self.shared.rotated();
                tracing::info!(secret = %self.secret_label(), current = %next.current.fingerprint,
                    next = next.next.as_ref().map(|n| n.fingerprint.as_str()), "CA rotation: {why}");
            }
            Err(kube::Error::Api(e)) if e.code == 409 => {
                tracing::info!(secret = %self.secret_label(), "the CA Secret changed meanwhile; starting again from it");
            }
            Err(error) => {
                tracing::error!(secret = %self.secret_label(), %error, "cannot write the CA rotation step")
            }
        }
    }

    async fn patch_bundles(&mut self, webhooks: Option<&[MutatingWebhookConfiguration]>, bundle: &[u8]) {
        let Some(webhooks) = webhooks else { return };
        let params = PatchParams::apply(FIELD_MANAGER).force();
        let mut last_error = None;
        for mwc in webhooks {
            let Some(patch) = ca_bundle_patch(mwc, bundle) else {
                continue;
            };
            let name = mwc.metadata.name.clone().unwrap_or_default();
            let stale = stale_webhooks(mwc, bundle);
            match self.mwcs.patch(&name, &params, &Patch::Apply(&patch)).await {
                Ok(_) => {
                    self.shared.patched(true);
                    tracing::info!(mutatingwebhookconfiguration = %name, webhooks = ?stale, "caBundle patched");
                }
                Err(error) => {
                    self.shared.patched(false);
                    let e = format!("patching the caBundle of MutatingWebhookConfiguration {name}: {error}");
                    tracing::error!(error = %e, "caBundle");
                    last_error = Some(e);
                }
            }
        }
        self.shared.update(|s| s.last_patch_error = last_error);
    }
}

fn webhook_statuses(webhooks: &[MutatingWebhookConfiguration], bundle: &[u8]) -> Vec<WebhookStatus> {
    webhooks
        .iter()
        .map(|m| WebhookStatus {
            name: m.metadata.name.clone().unwrap_or_default(),
            stale: stale_webhooks(m, bundle),
        })
        .collect()
}

fn to_bytes(data: BTreeMap<String, Vec<u8>>) -> BTreeMap<String, ByteString> {
    data.into_iter().map(|(k, v)| (k, ByteString(v))).collect()
}

/// Unix seconds as RFC 3339.
pub fn rfc3339(unix: i64) -> String {
    OffsetDateTime::from_unix_timestamp(unix)
        .ok()
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok())
        .unwrap_or_else(|| unix.to_string())
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;
    use http::{Request, Response};
    use http_body_util::{BodyExt as _, Full};
    use kube::client::Body;
    use serde_json::{Value, json};

    use super::*;

    /// A fake API server that answers every request with the request's own body (as an update
    /// does) and records `METHOD URI BODY`.
    fn fake_client(asked: Arc<Mutex<Vec<(String, Value)>>>) -> Client {
        let service = tower::service_fn(move |request: Request<Body>| {
            let asked = asked.clone();
            async move {
                let line = format!("{} {}", request.method(), request.uri());
                let bytes = request
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                asked.lock().expect("lock").push((line, body.clone()));
                Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(body.to_string())))
            }
        });
        Client::new(service, "default")
    }

    fn reconciler(client: Client) -> (Reconciler, Shared) {
        let shared = Shared::default();
        let mode = CertificateMode::SelfManaged {
            secret: "sidecar-injector-ca".into(),
            policy: RotationPolicy::default(),
            leaf_validity: Duration::from_secs(3600),
            settle: Duration::from_secs(1),
        };
        let reconciler = Reconciler::new(
            client,
            "istio-system",
            mode,
            vec!["istiod.istio-system.svc".into()],
            CertStore::manual(),
            shared.clone(),
        );
        (reconciler, shared)
    }

    #[tokio::test]
    async fn a_missing_secret_is_never_created_and_says_what_creates_it() {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (mut reconciler, shared) = reconciler(fake_client(asked.clone()));
        reconciler.step(&Observed::Absent, Some(&[]), true).await;
        assert!(asked.lock().expect("lock").is_empty(), "no request at all");
        let error = shared.snapshot().secret_error.unwrap_or_default();
        assert!(
            error.starts_with("Secret istio-system/sidecar-injector-ca does not exist: the chart and deploy/manifests create it empty"),
            "{error}"
        );
        assert!(
            error.contains("kubectl -n istio-system create secret generic sidecar-injector-ca"),
            "{error}"
        );
        assert_eq!(
            reconciler.certs.status().last_error,
            Some(error),
            "on /readyz's certificate too"
        );
    }

    #[tokio::test]
    async fn an_empty_secret_is_filled_by_an_update_with_its_resource_version() {
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (mut reconciler, shared) = reconciler(fake_client(asked.clone()));
        let empty: Secret = serde_json::from_value(json!({
            "metadata": {"name": "sidecar-injector-ca", "namespace": "istio-system", "resourceVersion": "7",
                         "labels": {"app.kubernetes.io/managed-by": "Helm"}},
            "type": "Opaque"}))
        .expect("secret");
        reconciler.step(&Observed::Present(empty), Some(&[]), false).await;
        let asked = asked.lock().expect("lock").clone();
        assert_eq!(asked.len(), 1, "{asked:?}");
        let (line, body) = &asked[0];
        assert!(
            line.starts_with("PUT /api/v1/namespaces/istio-system/secrets/sidecar-injector-ca?"),
            "an update, never a create: {line}"
        );
        assert_eq!(body["metadata"]["resourceVersion"], "7", "optimistic concurrency");
        assert_eq!(
            body["metadata"]["labels"]["app.kubernetes.io/managed-by"], "Helm",
            "metadata kept"
        );
        let data: BTreeMap<String, Vec<u8>> = serde_json::from_value::<Secret>(body.clone())
            .expect("secret")
            .data
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k, v.0))
            .collect();
        assert!(
            CaSet::from_secret_data(&data).is_ok(),
            "a usable CA: {:?}",
            data.keys()
        );
        assert_eq!(shared.snapshot().secret_error, None);
    }
}
