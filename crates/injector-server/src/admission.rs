//! AdmissionReview decoding and response building (`admission.k8s.io/v1` and `v1beta1`).
//!
//! Pure and I/O-free. The pod stays raw JSON ([`serde_json::Value`]): decoding it into typed
//! structs would silently drop fields newer than our types. Every decoding problem becomes an
//! [`DecodeError`] whose text is sent back as `allowed: false` with `status.message`, as Istio
//! does; a decoding problem is never an HTTP error and never a panic.

mod without_managed_fields;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use without_managed_fields::WithoutManagedFields;

/// `admission.k8s.io/v1`.
pub const V1: &str = "admission.k8s.io/v1";
/// `admission.k8s.io/v1beta1`.
pub const V1BETA1: &str = "admission.k8s.io/v1beta1";
/// The only kind we accept.
pub const KIND: &str = "AdmissionReview";

/// The AdmissionReview API version, echoed in the response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReviewVersion {
    /// `admission.k8s.io/v1`.
    V1,
    /// `admission.k8s.io/v1beta1`.
    V1Beta1,
}

impl ReviewVersion {
    /// The `apiVersion` string.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewVersion::V1 => V1,
            ReviewVersion::V1Beta1 => V1BETA1,
        }
    }
}

/// A decoded admission request: the fields the server and the injector need.
#[derive(Debug, Clone, PartialEq)]
pub struct AdmissionRequest {
    /// Version of the review, used for the response.
    pub version: ReviewVersion,
    /// `request.uid`, echoed in `response.uid`.
    pub uid: String,
    /// `request.namespace` (may be empty).
    pub namespace: String,
    /// `request.name` (usually empty for pods created with `generateName`).
    pub name: String,
    /// `request.operation` (`CREATE`, …).
    pub operation: String,
    /// `request.dryRun`.
    pub dry_run: bool,
    /// `request.object`: the pod, as raw JSON.
    pub object: Value,
}

impl AdmissionRequest {
    /// A log-friendly pod name: `metadata.name`, else `<generateName>*****`, else `request.name`.
    pub fn pod_name(&self) -> String {
        let meta = self.object.get("metadata");
        let get = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str).unwrap_or("");
        match (get("name"), get("generateName")) {
            (name, _) if !name.is_empty() => name.to_owned(),
            (_, generate) if !generate.is_empty() => format!("{generate}*****"),
            _ => self.name.clone(),
        }
    }
}

/// Why a body could not be turned into an [`AdmissionRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The version, when the envelope was understood far enough to know it.
    pub version: Option<ReviewVersion>,
    /// `request.uid`, when known.
    pub uid: Option<String>,
    /// The message sent back in `status.message`.
    pub message: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DecodeError {}

#[derive(Deserialize)]
struct RawReview {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    /// Kept as text and decoded once into [`RawRequest`], after the envelope's checks.
    #[serde(default)]
    request: Option<Box<serde_json::value::RawValue>>,
}

/// The whole review in one pass (see [`decode_strict`]), its object decoded as `O`.
#[derive(Deserialize)]
struct WholeReview<O> {
    #[serde(rename = "apiVersion", default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default = "none")]
    request: Option<RawRequest<O>>,
}

/// `None`, whatever `T` is (serde's `default` would ask `T: Default` of the object's type).
fn none<T>() -> Option<T> {
    None
}

#[derive(Deserialize)]
struct RawRequest<O> {
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    kind: Option<RawGvk>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    operation: Option<String>,
    #[serde(rename = "dryRun", default)]
    dry_run: Option<bool>,
    #[serde(default = "none")]
    object: Option<O>,
}

impl From<WithoutManagedFields> for Value {
    fn from(object: WithoutManagedFields) -> Value {
        object.0
    }
}

#[derive(Deserialize)]
struct RawGvk {
    #[serde(default)]
    kind: Option<String>,
}

/// Decodes an AdmissionReview body.
///
/// Accepts `admission.k8s.io/v1` and `v1beta1` with kind `AdmissionReview`. Requires `request`
/// with a `uid` and an `object` that is a JSON object and, when it says so, a `Pod`.
///
/// When decoding fails, the error still carries `request.uid` and the review's version if
/// they can be read before the fault (invalid JSON or UTF-8 further on, a field of the wrong
/// type), so that the denial reaches the API server under the request's `uid`.
pub fn decode(body: &[u8]) -> Result<AdmissionRequest, DecodeError> {
    decode_as::<Value>(body)
}

/// [`decode`] for an injector that ignores the object's `metadata.managedFields` (see
/// [`crate::ServeOptions::ignore_managed_fields`]): they are read over, their JSON checked,
/// and left out of [`AdmissionRequest::object`]. Every other member decodes as [`decode`]
/// decodes it, and so do the errors.
pub fn decode_ignoring_managed_fields(body: &[u8]) -> Result<AdmissionRequest, DecodeError> {
    decode_as::<WithoutManagedFields>(body)
}

/// [`decode`] with the object decoded as `O`.
fn decode_as<O>(body: &[u8]) -> Result<AdmissionRequest, DecodeError>
where
    O: for<'de> Deserialize<'de> + Into<Value>,
{
    decode_strict::<O>(body).map_err(|mut error| {
        if error.uid.is_none() || error.version.is_none() {
            let ids = crate::review_ids::read_review_ids(body);
            if error.uid.is_none() {
                error.uid = ids.uid;
            }
            if error.version.is_none() {
                error.version = match ids.api_version.as_deref() {
                    Some(V1) => Some(ReviewVersion::V1),
                    Some(V1BETA1) => Some(ReviewVersion::V1Beta1),
                    _ => None,
                };
            }
        }
        error
    })
}

/// [`decode`] without the lenient second reading of the ids.
///
/// A well-formed review is read in one pass. Only when that fails is it read again in two (the
/// envelope first, keeping `request` as text), so that the error says which part is wrong and
/// the envelope's own faults (version, kind) are told before the request's.
fn decode_strict<O>(body: &[u8]) -> Result<AdmissionRequest, DecodeError>
where
    O: for<'de> Deserialize<'de> + Into<Value>,
{
    // The body's UTF-8 checked once, whole (ASCII a word at a time), rather than string by string.
    let whole = std::str::from_utf8(body)
        .ok()
        .and_then(|text| serde_json::from_str::<WholeReview<O>>(text).ok());
    if let Some(review) = whole {
        return check(review.api_version, review.kind, || Ok(review.request));
    }
    let raw: RawReview = serde_json::from_slice(body).map_err(|e| DecodeError {
        version: None,
        uid: None,
        message: format!("could not decode AdmissionReview: invalid JSON: {e}"),
    })?;
    check(raw.api_version, raw.kind, || match raw.request {
        // A JSON `null` request decodes as `None` too.
        None => Ok(None),
        Some(request) => serde_json::from_str::<RawRequest<O>>(request.get())
            .map(Some)
            .map_err(|e| format!("could not decode AdmissionReview.request: {e}")),
    })
}

/// The checks of a decoded envelope, in order: version, kind, request (decoded by `request`
/// only once the envelope is known good), uid, the request's kind and its object.
fn check<O: Into<Value>>(
    api_version: Option<String>,
    kind: Option<String>,
    request: impl FnOnce() -> Result<Option<RawRequest<O>>, String>,
) -> Result<AdmissionRequest, DecodeError> {
    let fail = |version, uid, message: String| DecodeError {
        version,
        uid,
        message,
    };
    let api_version = api_version.unwrap_or_default();
    let kind = kind.unwrap_or_default();
    let version = match api_version.as_str() {
        V1 => ReviewVersion::V1,
        V1BETA1 => ReviewVersion::V1Beta1,
        "" => {
            return Err(fail(
                None,
                None,
                "could not decode AdmissionReview: apiVersion is missing; \
                 expected admission.k8s.io/v1 or admission.k8s.io/v1beta1"
                    .to_owned(),
            ));
        }
        other => {
            return Err(fail(
                None,
                None,
                format!(
                    "unsupported type: apiVersion {other:?} is not supported; \
                     expected admission.k8s.io/v1 or admission.k8s.io/v1beta1"
                ),
            ));
        }
    };
    if kind != KIND {
        return Err(fail(
            Some(version),
            None,
            format!("unsupported type: kind {kind:?} in {api_version}; expected \"AdmissionReview\""),
        ));
    }
    let Some(req) = request().map_err(|message| fail(Some(version), None, message))? else {
        return Err(fail(
            Some(version),
            None,
            "AdmissionReview has no request: nothing to admit".to_owned(),
        ));
    };
    let uid = req.uid.unwrap_or_default();
    let with_uid = |message: String| fail(Some(version), Some(uid.clone()), message);
    if let Some(k) = req.kind.and_then(|g| g.kind)
        && k != "Pod"
    {
        return Err(with_uid(format!(
            "request is for a {k}, not a Pod: the sidecar injector only handles pods; \
             check the rules of the MutatingWebhookConfiguration"
        )));
    }
    let object = match req.object.map(Into::into) {
        Some(o @ Value::Object(_)) => o,
        Some(Value::Null) | None => {
            return Err(with_uid(
                "AdmissionReview.request.object is missing: no pod to inject".to_owned(),
            ));
        }
        Some(_) => {
            return Err(with_uid(
                "AdmissionReview.request.object is not a JSON object: expected a Pod".to_owned(),
            ));
        }
    };
    if let Some(k) = object.get("kind").and_then(Value::as_str)
        && k != "Pod"
    {
        return Err(with_uid(format!(
            "request.object is a {k}, not a Pod: the sidecar injector only handles pods"
        )));
    }
    Ok(AdmissionRequest {
        version,
        uid: uid.clone(),
        namespace: req.namespace.unwrap_or_default(),
        name: req.name.unwrap_or_default(),
        operation: req.operation.unwrap_or_default(),
        dry_run: req.dry_run.unwrap_or(false),
        object,
    })
}

/// What the response says, independent of the wire format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// `allowed: true`, no patch.
    Allow,
    /// `allowed: true` with a JSON Patch (raw RFC 6902 JSON bytes; base64-encoded on the wire).
    Patch(Vec<u8>),
    /// `allowed: false` with `status.message`.
    Deny(String),
}

/// What a response says beside its verdict: `auditAnnotations` and `warnings`, written after
/// Istio's fields in the order of the API's AdmissionResponse, and only when there are any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Notes {
    /// `auditAnnotations`, in order. The API server records each in the audit log as
    /// `<webhook name>/<key>`, so a key holds no `/`.
    pub audit: Vec<(&'static str, String)>,
    /// `warnings`: kubectl prints each as `Warning: …`.
    pub warnings: Vec<String>,
}

/// At most this many warnings are sent: the API server keeps about 4 KiB of them in all.
pub const MAX_WARNINGS: usize = 4;
/// At most this many characters of a warning or an audit annotation's value are sent (the API
/// server cuts a warning at 256); the rest is replaced by `…`.
pub const MAX_NOTE_CHARS: usize = 240;

impl Notes {
    /// Notes whose texts are bounded, as they come from what tenants wrote: at most
    /// [`MAX_WARNINGS`] distinct warnings, each text at most [`MAX_NOTE_CHARS`] characters, control
    /// characters made spaces.
    pub fn bounded(audit: Vec<(&'static str, String)>, warnings: &[String]) -> Self {
        let mut kept: Vec<String> = Vec::new();
        for warning in warnings {
            let warning = bounded_text(warning);
            if kept.len() < MAX_WARNINGS && !warning.is_empty() && !kept.contains(&warning) {
                kept.push(warning);
            }
        }
        Self {
            audit: audit
                .into_iter()
                .map(|(key, value)| (key, bounded_text(&value)))
                .collect(),
            warnings: kept,
        }
    }

    fn is_empty(&self) -> bool {
        self.audit.is_empty() && self.warnings.is_empty()
    }
}

/// `text` with control characters as spaces, cut to [`MAX_NOTE_CHARS`] characters.
fn bounded_text(text: &str) -> String {
    let cut = text.chars().nth(MAX_NOTE_CHARS).is_some();
    let keep = if cut { MAX_NOTE_CHARS - 1 } else { MAX_NOTE_CHARS };
    let mut out: String = text
        .chars()
        .take(keep)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if cut {
        out.push('…');
    }
    out
}

/// [`Notes`] as JSON members (`,"auditAnnotations":{…},"warnings":[…]`), empty when there are none.
fn notes_json(notes: &Notes) -> String {
    let mut out = String::new();
    if !notes.audit.is_empty() {
        let audit: serde_json::Map<String, Value> = notes
            .audit
            .iter()
            .map(|(key, value)| ((*key).to_owned(), Value::String(value.clone())))
            .collect();
        out.push_str(r#","auditAnnotations":"#);
        out.push_str(&Value::Object(audit).to_string());
    }
    if !notes.warnings.is_empty() {
        out.push_str(r#","warnings":"#);
        out.push_str(&serde_json::to_string(&notes.warnings).unwrap_or_else(|_| "[]".to_owned()));
    }
    out
}

#[derive(Serialize)]
struct ReviewOut<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
struct ResponseOut<'a> {
    uid: &'a str,
    allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<StatusOut<'a>>,
}

#[derive(Serialize)]
struct StatusOut<'a> {
    metadata: Empty,
    message: &'a str,
}

#[derive(Serialize)]
struct Empty {}

/// Builds the response AdmissionReview, in Istio's key order:
/// `kind, apiVersion, response{uid, allowed, status, patch, patchType}`.
///
/// `version` is the request's; when it is unknown (the body did not decode) the response uses
/// `admission.k8s.io/v1`.
#[cfg(test)]
pub fn encode_response(version: Option<ReviewVersion>, uid: &str, verdict: &Verdict) -> Vec<u8> {
    encode_response_with(version, uid, verdict, &Notes::default())
}

/// The response AdmissionReview with `auditAnnotations` and `warnings` after Istio's fields
/// (none: the same bytes as `encode_response`).
pub fn encode_response_with(
    version: Option<ReviewVersion>,
    uid: &str,
    verdict: &Verdict,
    notes: &Notes,
) -> Vec<u8> {
    let version = version.unwrap_or(ReviewVersion::V1);
    let (allowed, status) = match verdict {
        Verdict::Allow => (true, None),
        Verdict::Patch(patch) => return encode_patched(version, uid, patch, notes),
        Verdict::Deny(message) => (
            false,
            Some(StatusOut {
                metadata: Empty {},
                message,
            }),
        ),
    };
    let review = ReviewOut {
        kind: KIND,
        api_version: version.as_str(),
        response: ResponseOut { uid, allowed, status },
    };
    let mut out = serde_json::to_vec(&review).unwrap_or_else(|_| SERIALIZATION_FAILED.to_vec());
    if !notes.is_empty() && out.ends_with(b"}}") {
        // Within `response`, after its last member.
        out.truncate(out.len() - 2);
        out.extend_from_slice(notes_json(notes).as_bytes());
        out.extend_from_slice(b"}}");
    }
    out
}

/// Serializing the plain response structs cannot fail; should it, a fixed denial rather than a
/// panic.
const SERIALIZATION_FAILED: &[u8] =
    br#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"","allowed":false}}"#;

/// The response with a patch, written directly in the same key order: base64 text never needs
/// JSON escaping, and serde would check an Istio-sized patch's ~8 KB of it byte by byte (a
/// third of the response's cost).
fn encode_patched(version: ReviewVersion, uid: &str, patch: &[u8], notes: &Notes) -> Vec<u8> {
    let Ok(uid) = serde_json::to_string(uid) else {
        return SERIALIZATION_FAILED.to_vec();
    };
    // The fixed text around the uid and the patch, with room to spare: running out at the last
    // push would copy the whole response once more.
    const FRAME: usize = 256;
    let mut out = String::with_capacity(FRAME + uid.len() + patch.len().div_ceil(3) * 4);
    out.push_str(r#"{"kind":""#);
    out.push_str(KIND);
    out.push_str(r#"","apiVersion":""#);
    out.push_str(version.as_str());
    out.push_str(r#"","response":{"uid":"#);
    out.push_str(&uid);
    out.push_str(r#","allowed":true,"patch":""#);
    base64_simd::STANDARD.encode_append(patch, &mut out);
    out.push_str(r#"","patchType":"JSONPatch""#);
    if !notes.is_empty() {
        out.push_str(&notes_json(notes));
    }
    out.push_str("}}");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::*;
    use serde_json::json;

    fn review(version: &str, request: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({"apiVersion": version, "kind": "AdmissionReview", "request": request}))
            .unwrap_or_default()
    }

    fn pod_request() -> Value {
        json!({
            "uid": "u-1", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "namespace": "ns", "operation": "CREATE", "dryRun": true,
            "object": {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-"}, "spec": {}}
        })
    }

    #[test]
    fn ignoring_managed_fields_leaves_them_out_and_decodes_the_rest_alike() {
        let mut request = pod_request();
        request["object"]["metadata"]["managedFields"] =
            json!([{"manager": "kube-controller-manager", "fieldsV1": {"f:metadata": {}}}]);
        request["object"]["metadata"]["labels"] = json!({"app": "web"});
        let body = review(V1, request);
        let kept = decode(&body).expect("decodes");
        let ignored = decode_ignoring_managed_fields(&body).expect("decodes");
        let mut expected = kept.clone();
        expected.object["metadata"]
            .as_object_mut()
            .expect("metadata")
            .shift_remove("managedFields");
        assert!(kept.object["metadata"].get("managedFields").is_some());
        assert_eq!(ignored, expected);

        // The same errors, for the envelope, the request and the object alike.
        let broken = [
            b"{not json".to_vec(),
            review("admission.k8s.io/v2", pod_request()),
            review(V1, json!({"uid": "u-4", "dryRun": "yes"})),
            review(V1, json!({"uid": "u-5", "object": "a pod"})),
            review(V1, json!({"uid": "u-6", "object": {"kind": "Secret"}})),
            review(
                V1,
                json!({"uid": "u-7", "object": {"metadata": {"managedFields": 1}, "spec": 2}}),
            )[..60]
                .to_vec(),
        ];
        for body in broken {
            assert!(decode(&body).is_err());
            assert_eq!(
                decode_ignoring_managed_fields(&body).err(),
                decode(&body).err(),
                "{}",
                String::from_utf8_lossy(&body)
            );
        }
    }

    #[test]
    fn decodes_v1_and_v1beta1() {
        for (v, want) in [(V1, ReviewVersion::V1), (V1BETA1, ReviewVersion::V1Beta1)] {
            let req = decode(&review(v, pod_request())).expect("decodes");
            assert_eq!(req.version, want);
            assert_eq!(req.uid, "u-1");
            assert_eq!(req.namespace, "ns");
            assert_eq!(req.operation, "CREATE");
            assert!(req.dry_run);
            assert_eq!(req.pod_name(), "web-*****");
        }
    }

    #[test]
    fn keeps_unknown_pod_fields() {
        let mut r = pod_request();
        r["object"]["spec"]["futureField"] = json!({"x": 1});
        let req = decode(&review(V1, r)).expect("decodes");
        assert_eq!(req.object["spec"]["futureField"]["x"], 1);
    }

    #[test]
    fn a_review_that_does_not_decode_keeps_its_uid_and_version() {
        // Invalid JSON after the uid.
        let body = br#"{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u-2","object":{"spec":{,}}}}"#;
        let err = decode(body).expect_err("fails");
        assert!(err.message.contains("invalid JSON"), "{}", err.message);
        assert_eq!(err.uid.as_deref(), Some("u-2"));
        assert_eq!(err.version, Some(ReviewVersion::V1Beta1));
        // Invalid UTF-8 in the pod.
        let mut body = br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-3","object":{"metadata":{"name":""#.to_vec();
        body.extend_from_slice(&[0xc3, 0x28]);
        body.extend_from_slice(br#""}}}}"#);
        let err = decode(&body).expect_err("fails");
        assert_eq!(err.uid.as_deref(), Some("u-3"));
        assert_eq!(err.version, Some(ReviewVersion::V1));
        // A request field of the wrong type.
        let err = decode(&review(V1, json!({"uid": "u-4", "dryRun": "yes"}))).expect_err("fails");
        assert!(err.message.contains("AdmissionReview.request"), "{}", err.message);
        assert_eq!(err.uid.as_deref(), Some("u-4"));
        // An unsupported version is not made up.
        let err = decode(&review("admission.k8s.io/v2", pod_request())).expect_err("fails");
        assert_eq!((err.version, err.uid.as_deref()), (None, Some("u-1")));
    }

    #[test]
    fn malformed_json_is_a_decode_error() {
        let err = decode(b"{not json").expect_err("fails");
        assert!(err.message.contains("invalid JSON"), "{}", err.message);
        assert_eq!(err.version, None);
    }

    #[test]
    fn wrong_api_version_and_kind() {
        let err = decode(&review("admission.k8s.io/v2", pod_request())).expect_err("fails");
        assert!(err.message.contains("admission.k8s.io/v2"), "{}", err.message);
        let body = serde_json::to_vec(&json!({"apiVersion": V1, "kind": "Pod"})).unwrap_or_default();
        let err = decode(&body).expect_err("fails");
        assert!(err.message.contains("\"Pod\""), "{}", err.message);
        assert_eq!(err.version, Some(ReviewVersion::V1));
        let err = decode(b"{}").expect_err("fails");
        assert!(err.message.contains("apiVersion is missing"), "{}", err.message);
        // The envelope's fault is told first even when the request is broken too (the one-pass
        // reading fails, and the two-pass reading checks the envelope before the request).
        let body = review("admission.k8s.io/v2", json!({"uid": 7}));
        let err = decode(&body).expect_err("fails");
        assert!(err.message.contains("admission.k8s.io/v2"), "{}", err.message);
        let body = serde_json::to_vec(&json!({"apiVersion": V1, "kind": "Pod", "request": "text"}))
            .unwrap_or_default();
        let err = decode(&body).expect_err("fails");
        assert!(err.message.contains("\"Pod\""), "{}", err.message);
    }

    #[test]
    fn missing_request_is_a_decode_error_not_a_panic() {
        let body = serde_json::to_vec(&json!({"apiVersion": V1BETA1, "kind": KIND})).unwrap_or_default();
        let err = decode(&body).expect_err("fails");
        assert!(err.message.contains("no request"));
        assert_eq!(err.version, Some(ReviewVersion::V1Beta1));
        let body = review(V1, Value::Null);
        let err = decode(&body).expect_err("fails");
        assert!(err.message.contains("no request"), "{}", err.message);
        let err = decode(&review(V1, json!("text"))).expect_err("fails");
        assert!(
            err.message
                .starts_with("could not decode AdmissionReview.request: invalid type: string"),
            "{}",
            err.message
        );
        let err = decode(&review(V1, json!({"uid": 7}))).expect_err("fails");
        assert!(
            err.message.contains("invalid type: integer `7`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn non_pods_are_rejected() {
        let mut r = pod_request();
        r["kind"]["kind"] = json!("Deployment");
        let err = decode(&review(V1, r)).expect_err("fails");
        assert!(err.message.contains("Deployment"));
        assert_eq!(err.uid.as_deref(), Some("u-1"));
        let mut r = pod_request();
        r["object"] = json!("text");
        assert!(decode(&review(V1, r)).is_err());
        let mut r = pod_request();
        r["object"] = Value::Null;
        assert!(
            decode(&review(V1, r))
                .expect_err("fails")
                .message
                .contains("missing")
        );
        let mut r = pod_request();
        r["object"]["kind"] = json!("Service");
        assert!(decode(&review(V1, r)).is_err());
        let mut r = pod_request();
        r["uid"] = json!(5);
        assert!(decode(&review(V1, r)).is_err());
    }

    #[test]
    fn response_key_order_and_status_shape() {
        let out = encode_response(Some(ReviewVersion::V1Beta1), "u", &Verdict::Deny("bad".into()));
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1beta1","response":{"uid":"u","allowed":false,"status":{"metadata":{},"message":"bad"}}}"#
        );
        let out = encode_response(None, "", &Verdict::Allow);
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"","allowed":true}}"#
        );
    }

    #[test]
    fn patched_response_is_the_json_of_its_fields_in_order() {
        let patch = br#"[{"op":"add","path":"/spec/containers/-","value":{"name":"istio-proxy"}}]"#;
        for (uid, patch) in [
            ("u", &patch[..]),
            ("q\"u\\o\u{1}t\u{e9}", &patch[..1]),
            ("", &[][..]),
        ] {
            let expected = json!({
                "kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1beta1",
                "response": {
                    "uid": uid, "allowed": true,
                    "patch": base64::engine::general_purpose::STANDARD.encode(patch),
                    "patchType": "JSONPatch"
                }
            });
            let out = encode_response(Some(ReviewVersion::V1Beta1), uid, &Verdict::Patch(patch.to_vec()));
            assert_eq!(String::from_utf8_lossy(&out), expected.to_string(), "uid {uid:?}");
        }
    }

    #[test]
    fn patch_base64_matches_the_standard_encoding_at_every_length() {
        // Istio-sized patches run the SIMD blocks, short ones and the last 0-2 bytes the tail.
        let bytes: Vec<u8> = (0..7000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in (0..100).chain([1023, 1024, 1025, 6061, 7000]) {
            let patch = &bytes[..len];
            let out = encode_response(Some(ReviewVersion::V1), "u", &Verdict::Patch(patch.to_vec()));
            let review: Value = serde_json::from_slice(&out).expect("the response is JSON");
            assert_eq!(
                review["response"]["patch"].as_str(),
                Some(base64::engine::general_purpose::STANDARD.encode(patch).as_str()),
                "patch of {len} bytes"
            );
        }
    }

    #[test]
    fn notes_follow_istio_fields_in_the_api_order() {
        let notes = Notes::bounded(
            vec![("decision", "injected".into()), ("revision", "canary".into())],
            &["mind \"this\"\n".into()],
        );
        let out = encode_response_with(
            Some(ReviewVersion::V1),
            "u",
            &Verdict::Patch(b"[]".to_vec()),
            &notes,
        );
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u","allowed":true,"patch":"W10=","patchType":"JSONPatch","auditAnnotations":{"decision":"injected","revision":"canary"},"warnings":["mind \"this\" "]}}"#
        );
        let out = encode_response_with(None, "u", &Verdict::Deny("bad".into()), &notes);
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u","allowed":false,"status":{"metadata":{},"message":"bad"},"auditAnnotations":{"decision":"injected","revision":"canary"},"warnings":["mind \"this\" "]}}"#
        );
        let audit_only = Notes::bounded(vec![("decision", "skipped".into())], &[]);
        let out = encode_response_with(None, "u", &Verdict::Allow, &audit_only);
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u","allowed":true,"auditAnnotations":{"decision":"skipped"}}}"#
        );
        // Without notes, Istio's bytes.
        for verdict in [
            Verdict::Allow,
            Verdict::Deny("x".into()),
            Verdict::Patch(b"[]".to_vec()),
        ] {
            assert_eq!(
                encode_response_with(None, "u", &verdict, &Notes::default()),
                encode_response(None, "u", &verdict)
            );
        }
    }

    #[test]
    fn notes_are_bounded() {
        let long = "é".repeat(10_000);
        let many: Vec<String> = (0..100)
            .map(|i| format!("warning {i}"))
            .chain([long.clone()])
            .collect();
        let notes = Notes::bounded(vec![("reason", long.clone())], &many);
        assert_eq!(notes.warnings.len(), MAX_WARNINGS);
        assert_eq!(notes.audit[0].1.chars().count(), MAX_NOTE_CHARS);
        assert!(notes.audit[0].1.ends_with('…'));
        let notes = Notes::bounded(Vec::new(), &[long, "same".into(), "same".into(), String::new()]);
        assert_eq!(notes.warnings.len(), 2, "{:?}", notes.warnings);
        let exact = "x".repeat(MAX_NOTE_CHARS);
        assert_eq!(
            Notes::bounded(Vec::new(), std::slice::from_ref(&exact)).warnings,
            [exact]
        );
    }

    #[test]
    fn patch_is_base64() {
        let out = encode_response(Some(ReviewVersion::V1), "u", &Verdict::Patch(b"[]".to_vec()));
        assert_eq!(
            String::from_utf8_lossy(&out),
            r#"{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","response":{"uid":"u","allowed":true,"patch":"W10=","patchType":"JSONPatch"}}"#
        );
    }

    #[test]
    fn pod_name_fallbacks() {
        let mut req = decode(&review(V1, pod_request())).expect("decodes");
        req.object["metadata"]["name"] = json!("web-1");
        assert_eq!(req.pod_name(), "web-1");
        req.object["metadata"] = json!({});
        req.name = "n".into();
        assert_eq!(req.pod_name(), "n");
    }
}
