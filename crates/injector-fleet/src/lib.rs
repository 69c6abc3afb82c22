//! The injector across a whole cluster: what a configuration change would do to every
//! workload before it is rolled out (`preview`), which running pods carry a sidecar the current
//! configuration would no longer inject (`outdated`), and the paced restart that brings them up to
//! date.
//!
//! Everything here is pure: it works on objects as JSON values (read from a `kubectl get -A -o
//! yaml` snapshot or from the API server by the CLI) and on the engine's [`CompiledConfig`]s, so that
//! the same code answers offline and live, and is tested without a cluster.
//!
//! * [`snapshot`]: sorting a cluster's objects into workloads, pods, their owners, namespaces
//!   and PodDisruptionBudgets;
//! * [`pod_of`]: the pod a workload's controller creates;
//! * [`pod_diff`]: what differs between two injected pods, field by field;
//! * [`pod_validation`]: the API server's checks that a bad template can break;
//! * [`grouping`]: workloads that change the same way, as one group;
//! * [`preview`]: current against proposed, per workload;
//! * [`api_defaults`]: the fields the API server adds to a pod, so that a stored pod compares
//!   with a freshly rendered one;
//! * [`outdated`]: stale sidecars, grouped by the owner to restart;
//! * [`rollout`]: the restart patch, PodDisruptionBudget checks, rollout completion and pacing.
//!
//! [`CompiledConfig`]: injector_engine::CompiledConfig

pub mod api_defaults;
pub mod grouping;
pub mod outdated;
pub mod pod_diff;
pub mod pod_of;
pub mod pod_validation;
pub mod preview;
pub mod rollout;
pub mod snapshot;
