//! Criterion benchmarks on Istio's `sidecar` injection template
//! (`manifests/charts/istio-control/istio-discovery/files/injection-template.yaml` under the
//! shared directory, `$SIDECAR_INJECTOR_SHARED`, default `<repo>/../shared`).
//!
//! - `parse/istio-sidecar`: parsing the template with sprig and Istio's function names.
//! - `render/istio-sidecar`: executing the parsed template for a typical pod (Istio's "hello"
//!   deployment with default values). Istio's own functions (`annotation`, `valueOrDefault`,
//!   `isset`, `toJSON`, `protoToJSON`, ...) belong to the injection engine, which does not exist
//!   yet; this benchmark registers simplified stand-ins for them, and the data is plain JSON
//!   maps rather than host objects, so it measures the engine (walk, fields, sprig, printing)
//!   on the real template's shape, not Istio's exact output.
//!
//! Each benchmark runs twice: with wall-clock time (criterion's default) and with the thread's
//! CPU time (`CLOCK_THREAD_CPUTIME_ID`), because on a shared, loaded machine
//! wall-clock figures include time spent waiting for a CPU.

// criterion_group! generates undocumented items.
#![allow(missing_docs)]

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use gotemplate::{ArgType, Func, FuncMap, Object, Template, Value, sprig};

/// A protobuf enum as the injection engine will expose it: prints and `.String`s its name.
#[derive(Debug)]
struct Enum(&'static str);

impl Object for Enum {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("v1alpha1.ProxyConfig_InboundInterceptionMode")
    }
    fn method_arity(&self, name: &str) -> Option<usize> {
        (name == "String").then_some(0)
    }
    fn call_method(&self, _name: &str, _args: &[Value]) -> Result<Value, String> {
        Ok(Value::str(self.0))
    }
    fn string(&self) -> Option<String> {
        Some(self.0.to_string())
    }
}

fn shared() -> PathBuf {
    std::env::var_os("SIDECAR_INJECTOR_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

fn s(v: &Value) -> String {
    gotemplate::fmt::sprint(std::slice::from_ref(v))
}

/// Simplified stand-ins for Istio's template functions (timing only).
fn istio_standins() -> FuncMap {
    use ArgType::*;
    let mut m = sprig::funcs();
    m.insert(
        "annotation",
        Func::new(&[Any, Str, Any], |a| {
            let ann = match &a[0] {
                Value::Map(m) => m.get("Annotations"),
                _ => None,
            };
            let key = a[1].as_str().unwrap_or("");
            if let Some(Value::Map(ann)) = ann
                && let Some(v) = ann.get(key)
            {
                return Ok(v);
            }
            Ok(Value::str(s(&a[2])))
        }),
    );
    m.insert(
        "valueOrDefault",
        Func::new(&[Any, Any], |a| {
            Ok(match &a[0] {
                Value::Nil | Value::Missing => a[1].clone(),
                Value::String(x) if x.is_empty() => a[1].clone(),
                v => v.clone(),
            })
        }),
    );
    m.insert(
        "isset",
        Func::new(&[Any, Str], |a| {
            Ok(Value::Bool(match &a[0] {
                Value::Map(m) => m.contains_key(a[1].as_str().unwrap_or("")),
                _ => false,
            }))
        }),
    );
    for name in ["toJSON", "structToJSON", "protoToJSON", "toJsonMap"] {
        m.insert(
            name,
            Func::variadic(&[], Any, |a| {
                let v = a.first().cloned().unwrap_or(Value::Nil);
                Ok(Value::str(
                    sprig::util::to_json(
                        &v,
                        sprig::util::JsonOpts {
                            escape_html: true,
                            pretty: false,
                        },
                    )
                    .unwrap_or_default(),
                ))
            }),
        );
    }
    m.insert(
        "excludeInboundPort",
        Func::new(&[Any, Str], |a| {
            let port = s(&a[0]);
            let list = a[1].as_str().unwrap_or("");
            Ok(Value::str(if list.is_empty() {
                port
            } else {
                format!("{list},{port}")
            }))
        }),
    );
    m.insert("includeInboundPorts", Func::new(&[Any], |_| Ok(Value::str("80"))));
    m.insert("applicationPorts", Func::new(&[Any], |_| Ok(Value::str("80"))));
    m.insert("kubevirtInterfaces", Func::new(&[Str], |a| Ok(a[0].clone())));
    m.insert("excludeInterfaces", Func::new(&[Str], |a| Ok(a[0].clone())));
    m.insert(
        "fromJSON",
        Func::new(&[Str], |a| {
            Ok(sprig::util::from_json(a[0].as_str().unwrap_or("")).unwrap_or(Value::str("{}")))
        }),
    );
    m.insert("toYaml", Func::new(&[Any], |a| Ok(Value::str(s(&a[0]) + "\n"))));
    m.insert(
        "indent",
        Func::new(&[Int, Str], |a| {
            let n = match a[0] {
                Value::Int(n, _) => n.max(0) as usize,
                _ => 0,
            };
            let pad = " ".repeat(n);
            Ok(Value::str(
                a[1].as_str().unwrap_or("").replace('\n', &format!("\n{pad}")),
            ))
        }),
    );
    m.insert("directory", Func::new(&[Str], |a| Ok(a[0].clone())));
    m.insert(
        "contains",
        Func::new(&[Str, Str], |a| {
            Ok(Value::Bool(
                a[1].as_str().unwrap_or("").contains(a[0].as_str().unwrap_or("")),
            ))
        }),
    );
    m.insert(
        "toLower",
        Func::new(&[Str], |a| {
            Ok(Value::str(a[0].as_str().unwrap_or("").to_lowercase()))
        }),
    );
    m.insert(
        "appendMultusNetwork",
        Func::new(&[Str, Str], |a| Ok(a[1].clone())),
    );
    m.insert("env", Func::new(&[Str, Str], |a| Ok(a[1].clone())));
    m.insert("omit", Func::variadic(&[Any], Str, |a| Ok(a[0].clone())));
    m.insert(
        "strdict",
        Func::variadic(&[], Str, |_| Ok(Value::string_map(BTreeMap::new()))),
    );
    m.insert(
        "mergeMaps",
        Func::variadic(&[], Any, |a| Ok(a.first().cloned().unwrap_or(Value::Nil))),
    );
    m.insert("omitNil", Func::new(&[Any], |a| Ok(a[0].clone())));
    m.insert(
        "otelResourceAttributes",
        Func::variadic(&[], Any, |_| Ok(Value::str(""))),
    );
    m.insert("formatDuration", Func::new(&[Any], |_| Ok(Value::str("0s"))));
    m
}

fn read_json(path: PathBuf) -> serde_json::Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or(serde_json::Value::Null)
}

fn pod_data() -> Value {
    let values = read_json(shared().join("istio/derived/values/default.json"));
    let data = serde_json::json!({
        "TypeMeta": {"Kind": "Pod", "APIVersion": "v1"},
        "DeploymentMeta": {"Name": "hello", "Namespace": "default"},
        "ObjectMeta": {
            "Name": "hello-fake-abcde", "Namespace": "default",
            "Labels": {"app": "hello", "tier": "backend", "track": "stable", "pod-template-hash": "fake"},
            "Annotations": {}
        },
        "Spec": {
            "Containers": [{"Name": "hello", "Image": "fake.docker.io/google-samples/hello-go-gke:1.0",
                            "Ports": [{"Name": "http", "ContainerPort": 80}]}],
            "InitContainers": [], "Volumes": [], "HostNetwork": false,
            "ImagePullSecrets": []
        },
        "ProxyImage": "docker.io/istio/proxyv2:latest",
        "ProxyConfig": {"InterceptionMode": "REDIRECT", "ProxyMetadata": {}, "DiscoveryAddress": "istiod.istio-system.svc:15012",
                        "Concurrency": 2},
        "MeshConfig": {"TrustDomain": "cluster.local", "DefaultConfig": {}, "ExtensionProviders": []},
        "Values": values,
        "Revision": "default",
        "ProxyUID": 1337, "ProxyGID": 1337,
        "NativeSidecars": false,
        "CompliancePolicy": "",
        "EstimatedConcurrency": 2,
        "InboundTrafficPolicyMode": "",
        "Annotations": {}
    });
    let v = Value::from_json(&data);
    // The interception mode is an enum with a String method, as in Istio's ProxyConfig.
    if let Value::Map(m) = &v
        && let Some(Value::Map(pc)) = m.get("ProxyConfig")
    {
        pc.insert("InterceptionMode".into(), Value::object(Enum("REDIRECT")));
    }
    v
}

/// The calling thread's CPU time in nanoseconds (`CLOCK_THREAD_CPUTIME_ID`).
fn thread_cpu_ns() -> u64 {
    cpu_time::ThreadTime::now()
        .as_duration()
        .as_nanos()
        .try_into()
        .unwrap_or(u64::MAX)
}

/// Criterion measurement of thread CPU time.
struct CpuTime;

struct NsFormatter;

impl ValueFormatter for NsFormatter {
    fn scale_values(&self, typical: f64, values: &mut [f64]) -> &'static str {
        let (div, unit) = if typical < 1e3 {
            (1.0, "ns")
        } else if typical < 1e6 {
            (1e3, "µs")
        } else {
            (1e6, "ms")
        };
        for v in values {
            *v /= div;
        }
        unit
    }
    fn scale_throughputs(&self, _: f64, _: &Throughput, _: &mut [f64]) -> &'static str {
        "elem/s"
    }
    fn scale_for_machines(&self, _: &mut [f64]) -> &'static str {
        "ns"
    }
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, i: u64) -> u64 {
        thread_cpu_ns().saturating_sub(i)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &NsFormatter
    }
}

fn bench_cpu(c: &mut Criterion<CpuTime>) {
    bench_with(c, "cpu");
}

fn bench(c: &mut Criterion) {
    bench_with(c, "wall");
}

fn bench_with<M: Measurement + 'static>(c: &mut Criterion<M>, clock: &str) {
    let path =
        shared().join("istio/manifests/charts/istio-control/istio-discovery/files/injection-template.yaml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        eprintln!("{} not found; set SIDECAR_INJECTOR_SHARED", path.display());
        return;
    };
    let funcs = Arc::new(istio_standins());
    c.bench_function(&format!("parse/istio-sidecar/{clock}"), |b| {
        b.iter(|| {
            Template::new("inject")
                .shared_funcs(funcs.clone())
                .parse(&text)
                .map(|_| ())
        })
    });
    let Ok(t) = Template::new("inject").shared_funcs(funcs.clone()).parse(&text) else {
        eprintln!("the template does not parse");
        return;
    };
    let data = pod_data();
    let mut out = String::new();
    if let Err(e) = t.execute_to(&mut out, &data) {
        eprintln!("render/istio-sidecar: the stand-in data stops execution early: {e}");
    }
    eprintln!("render/istio-sidecar output: {} bytes", out.len());
    c.bench_function(&format!("render/istio-sidecar/{clock}"), |b| {
        b.iter(|| {
            let mut out = String::with_capacity(16 * 1024);
            let _ = t.execute_to(&mut out, &data);
            out
        })
    });
}

criterion_group!(benches, bench);
criterion_group! {
    name = cpu;
    config = Criterion::default().with_measurement(CpuTime);
    targets = bench_cpu
}
criterion_main!(benches, cpu);
