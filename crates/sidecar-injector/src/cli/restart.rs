//! `outdated --restart`: the paced restart. The pure parts (the patch, the PodDisruptionBudget
//! check, rollout progress, the pacing) are `injector_fleet::rollout`; this drives them with
//! the cluster's requests and prints one line per step, with the seconds since the start.

use std::time::{Duration, Instant};

use anyhow::Result;
use injector_core::{shell, terminal};
use injector_fleet::{
    outdated::Report,
    rollout::{Pacer, Progress, blocking_budget, progress, restart_patch},
    snapshot::ObjectKey,
};
use injector_kube::fleet as live;
use serde_json::Value;

/// How to restart.
pub struct Plan {
    /// Owners at once.
    pub max_concurrent: usize,
    /// Wait for each rollout to be available.
    pub wait: bool,
    /// How long one rollout may take.
    pub timeout: Duration,
    /// Print only.
    pub dry_run: bool,
}

/// Restarts the restartable owners of `report`; returns whether every one was restarted (and
/// rolled out, when waiting).
pub async fn run(client: &kube::Client, report: &Report, plan: &Plan) -> Result<bool> {
    let start = Instant::now();
    let say = |line: String| {
        println!(
            "[{:>6.1}s] {}",
            start.elapsed().as_secs_f64(),
            terminal::escape(&line)
        )
    };
    println!();
    let mut complete = true;
    for owner in report.owners.iter().filter(|o| !o.remedy.restartable) {
        say(format!(
            "not restarting {}: {}",
            owner.owner,
            owner.remedy.note.as_deref().unwrap_or("not a rollout")
        ));
    }
    let owners: Vec<ObjectKey> = report
        .owners
        .iter()
        .filter(|o| o.remedy.restartable)
        .map(|o| o.owner.clone())
        .collect();
    if owners.is_empty() {
        say("nothing to restart".to_owned());
        return Ok(complete);
    }
    say(format!(
        "{}restarting {} owner{}, {} at a time{}",
        if plan.dry_run { "dry run: " } else { "" },
        owners.len(),
        if owners.len() == 1 { "" } else { "s" },
        plan.max_concurrent.max(1),
        if plan.wait {
            format!(", waiting up to {:?} for each rollout", plan.timeout)
        } else {
            ", not waiting (--wait=false)".to_owned()
        }
    ));
    let budgets = live::list(client, &live::WORKLOADS[8])
        .await
        .map_err(|e| anyhow::anyhow!(e))?;
    let mut pacer = Pacer::new(owners, plan.max_concurrent);
    let mut started_at: Vec<(ObjectKey, Instant)> = Vec::new();
    let (mut restarted, mut blocked, mut failed) = (0, 0, 0);
    loop {
        for owner in pacer.start() {
            let Some(resource) = live::workload_resource(&owner.kind) else {
                pacer.finish(&owner);
                continue;
            };
            let object = live::get(client, &resource, &owner.namespace, &owner.name)
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
            let Some(object) = object else {
                say(format!("skipping {owner}: it no longer exists"));
                pacer.finish(&owner);
                continue;
            };
            let labels = template_labels(&object);
            if let Some(reason) = blocking_budget(&budgets, &owner.namespace, &labels) {
                say(format!(
                    "skipping {owner}: {reason}; restart it once the budget allows a disruption"
                ));
                blocked += 1;
                complete = false;
                pacer.finish(&owner);
                continue;
            }
            if plan.dry_run {
                say(format!(
                    "would restart {owner}: {}",
                    shell::command([
                        "kubectl",
                        "rollout",
                        "restart",
                        &owner.kubectl_name(),
                        "-n",
                        &owner.namespace
                    ])
                ));
                pacer.finish(&owner);
                continue;
            }
            let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
            match live::patch(
                client,
                &resource,
                &owner.namespace,
                &owner.name,
                &restart_patch(&now),
            )
            .await
            {
                Ok(()) => {
                    restarted += 1;
                    say(format!(
                        "restarted {owner} (kubectl.kubernetes.io/restartedAt={now})"
                    ));
                    if plan.wait {
                        started_at.push((owner.clone(), Instant::now()));
                    } else {
                        pacer.finish(&owner);
                    }
                }
                Err(error) => {
                    say(format!("failed to restart {owner}: {error}"));
                    failed += 1;
                    complete = false;
                    pacer.finish(&owner);
                }
            }
        }
        if pacer.is_done() {
            break;
        }
        if pacer.in_flight().is_empty() {
            continue;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut timed_out = false;
        for owner in pacer.in_flight().to_vec() {
            let Some(resource) = live::workload_resource(&owner.kind) else {
                continue;
            };
            let state = match live::get(client, &resource, &owner.namespace, &owner.name).await {
                Ok(Some(object)) => progress(&object),
                Ok(None) => Progress::Failed("it was deleted".to_owned()),
                Err(error) => Progress::Waiting(error.to_string()),
            };
            let since = started_at
                .iter()
                .find(|(o, _)| *o == owner)
                .map_or(Duration::ZERO, |(_, t)| t.elapsed());
            match state {
                Progress::Complete => {
                    say(format!("{owner} rolled out in {:.1} s", since.as_secs_f64()));
                    pacer.finish(&owner);
                }
                Progress::Failed(reason) => {
                    say(format!("{owner} failed to roll out: {reason}"));
                    failed += 1;
                    complete = false;
                    pacer.finish(&owner);
                }
                Progress::Waiting(reason) if since >= plan.timeout => {
                    say(format!(
                        "{owner} not rolled out after {:?}: {reason}",
                        plan.timeout
                    ));
                    failed += 1;
                    complete = false;
                    timed_out = true;
                    pacer.finish(&owner);
                }
                Progress::Waiting(_) => {}
            }
        }
        if timed_out {
            let left = pacer.abandon();
            if !left.is_empty() {
                complete = false;
                say(format!(
                    "stopping: a rollout did not finish in time; not started: {}",
                    left.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            for owner in pacer.in_flight().to_vec() {
                say(format!("not waiting any more for {owner}"));
                pacer.finish(&owner);
            }
        }
    }
    say(format!(
        "done: {restarted} restarted, {blocked} held back by a PodDisruptionBudget, {failed} failed or not rolled out in time"
    ));
    Ok(complete)
}

fn template_labels(object: &Value) -> injector_core::selector::Labels {
    object
        .pointer("/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}
