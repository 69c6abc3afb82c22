//! A watch of one kind of object, reduced to "the objects as they are now": after the first
//! complete list and after every change, the callback gets every object by name. Errors (an
//! unreachable API server, a forbidden list) are reported and the watch retries with backoff;
//! what was last seen stays as it was meanwhile.

use std::collections::BTreeMap;
use std::fmt::Debug;

use futures::StreamExt as _;
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Resource, ResourceExt as _};
use serde::de::DeserializeOwned;

/// Objects by name.
pub type Objects<K> = BTreeMap<String, K>;

/// Starts watching `api` with `config` (label or field selectors); `what` names it in errors.
pub fn spawn<K>(
    api: Api<K>,
    config: watcher::Config,
    what: String,
    mut on_change: impl FnMut(&Objects<K>) + Send + 'static,
    on_error: impl Fn(String) + Send + 'static,
) where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        let mut objects = Objects::new();
        let mut pending = Objects::new();
        let mut listed = false;
        while let Some(event) = stream.next().await {
            match event {
                Ok(Event::Init) => pending.clear(),
                Ok(Event::InitApply(object)) => {
                    pending.insert(object.name_any(), object);
                }
                Ok(Event::InitDone) => {
                    objects = std::mem::take(&mut pending);
                    listed = true;
                    on_change(&objects);
                }
                Ok(Event::Apply(object)) => {
                    objects.insert(object.name_any(), object);
                    if listed {
                        on_change(&objects);
                    }
                }
                Ok(Event::Delete(object)) => {
                    objects.remove(&object.name_any());
                    if listed {
                        on_change(&objects);
                    }
                }
                Err(error) => on_error(format!("watching {what}: {error}")),
            }
        }
    });
}
