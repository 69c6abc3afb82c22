//! One-shot reads for `explain` and `doctor`: each returns its objects or a
//! [`ReadFailure`] that says what was attempted in RBAC's words (`list namespaces`,
//! `get secrets NS/NAME`) and why it failed (forbidden, unreachable, other).

use std::fmt::Debug;

use injector_doctor::{Read, ReadFailure, ReadFailureKind};
use kube::api::{Api, ListParams};
use serde::de::DeserializeOwned;

/// Turns a client error into a [`ReadFailure`] for `attempted`.
pub fn failure(attempted: impl Into<String>, error: &kube::Error) -> ReadFailure {
    let (kind, message) = match error {
        kube::Error::Api(status) if status.code == 403 => {
            (ReadFailureKind::Forbidden, status.message.clone())
        }
        kube::Error::Api(status) if status.code == 401 => (
            ReadFailureKind::Other,
            format!(
                "unauthorized: the API server rejected the credentials ({})",
                status.message
            ),
        ),
        kube::Error::Api(status) => (ReadFailureKind::Other, status.message.clone()),
        kube::Error::HyperError(_) | kube::Error::Service(_) => (ReadFailureKind::Unreachable, chain(error)),
        other => (ReadFailureKind::Other, chain(other)),
    };
    ReadFailure {
        attempted: attempted.into(),
        kind,
        message,
    }
}

/// The error with its causes, `a: b: c`.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Lists `api` with `params`; `attempted` is `list RESOURCE` (with ` NS` when namespaced).
pub async fn list<K>(api: &Api<K>, params: &ListParams, attempted: String) -> Read<Vec<K>>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug,
{
    api.list(params)
        .await
        .map(|list| list.items)
        .map_err(|e| failure(attempted, &e))
}

/// Lists `api` with `params` page by page ([`crate::fleet::PAGE_SIZE`] objects a page), keeping
/// of each object what `keep` makes of it as the page arrives (`None`: nothing): a large cluster
/// costs what is kept, not its whole list at once.
pub async fn list_paged<K, T>(
    api: &Api<K>,
    params: &ListParams,
    attempted: String,
    mut keep: impl FnMut(K) -> Option<T>,
) -> Read<Vec<T>>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug,
{
    let mut kept = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut page_params = params.clone().limit(crate::fleet::PAGE_SIZE);
        if let Some(token) = &token {
            page_params = page_params.continue_token(token);
        }
        let page = api
            .list(&page_params)
            .await
            .map_err(|e| failure(attempted.clone(), &e))?;
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        kept.extend(page.items.into_iter().filter_map(&mut keep));
        if token.is_none() {
            return Ok(kept);
        }
    }
}

/// Gets `name`; `None` when it does not exist.
pub async fn get<K>(api: &Api<K>, name: &str, attempted: String) -> Read<Option<K>>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug,
{
    api.get_opt(name).await.map_err(|e| failure(attempted, &e))
}
