//! The open value model as the injection engine will use it: host structs with fields and
//! zero-argument methods, nil-safe getters on typed nil pointers, protobuf-style enums, and
//! host functions overriding sprig's.

use std::borrow::Cow;
use std::collections::BTreeMap;

use gotemplate::{ArgType, Func, FuncMap, Object, ObjectKind, Template, Value, sprig};

/// `*v1alpha1.Tracing`, possibly nil, with a nil-safe `GetTlsSettings`.
#[derive(Debug)]
struct Tracing(Option<String>);

impl Object for Tracing {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("*v1alpha1.Tracing")
    }
    fn is_nil(&self) -> bool {
        self.0.is_none()
    }
    fn has_field(&self, name: &str) -> bool {
        name == "TlsSettings"
    }
    fn field(&self, name: &str) -> Option<Value> {
        (name == "TlsSettings").then(|| Value::str(self.0.clone().unwrap_or_default()))
    }
    fn method_arity(&self, name: &str) -> Option<usize> {
        (name == "GetTlsSettings").then_some(0)
    }
    fn call_method(&self, _: &str, _: &[Value]) -> Result<Value, String> {
        // Like protobuf getters: safe on nil, returning the zero value.
        Ok(Value::str(self.0.clone().unwrap_or_default()))
    }
}

/// A protobuf enum (`int32` kind) with a `String` method.
#[derive(Debug)]
struct Mode(i64);

impl Object for Mode {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("v1alpha1.ProxyConfig_InboundInterceptionMode")
    }
    fn kind(&self) -> ObjectKind {
        ObjectKind::Struct
    }
    fn method_arity(&self, name: &str) -> Option<usize> {
        (name == "String").then_some(0)
    }
    fn call_method(&self, _: &str, _: &[Value]) -> Result<Value, String> {
        Ok(Value::str(self.string().unwrap_or_default()))
    }
    fn string(&self) -> Option<String> {
        Some(
            ["REDIRECT", "TPROXY", "NONE"]
                .get(self.0 as usize)
                .unwrap_or(&"?")
                .to_string(),
        )
    }
    fn basic(&self) -> Option<Value> {
        Some(Value::Int(self.0, gotemplate::IntType::Int32))
    }
}

/// `*v1alpha1.ProxyConfig`.
#[derive(Debug)]
struct ProxyConfig {
    tracing: Option<String>,
    mode: i64,
}

impl Object for ProxyConfig {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("*v1alpha1.ProxyConfig")
    }
    fn has_field(&self, name: &str) -> bool {
        matches!(name, "Tracing" | "InterceptionMode")
    }
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "InterceptionMode" => Some(Value::object(Mode(self.mode))),
            "Tracing" => Some(Value::object(Tracing(self.tracing.clone()))),
            _ => None,
        }
    }
    fn method_arity(&self, name: &str) -> Option<usize> {
        (name == "GetTracing").then_some(0)
    }
    fn call_method(&self, _: &str, _: &[Value]) -> Result<Value, String> {
        Ok(Value::object(Tracing(self.tracing.clone())))
    }
}

fn data(tracing: Option<&str>) -> Value {
    let mut m = BTreeMap::new();
    m.insert(
        "ProxyConfig".to_string(),
        Value::object(ProxyConfig {
            tracing: tracing.map(str::to_string),
            mode: 0,
        }),
    );
    m.insert(
        "Annotations".to_string(),
        Value::string_map(BTreeMap::from([("a".to_string(), Value::str("1"))])),
    );
    Value::map(m)
}

fn render(text: &str, data: &Value) -> Result<String, String> {
    Template::new("t")
        .funcs(&sprig::funcs())
        .parse(text)
        .map_err(|e| e.to_string())?
        .execute(data)
        .map_err(|e| e.to_string())
}

#[test]
fn fields_methods_and_nil_safe_getters() {
    let d = data(None);
    assert_eq!(
        render("[{{ .ProxyConfig.GetTracing.GetTlsSettings }}]", &d).as_deref(),
        Ok("[]")
    );
    assert_eq!(
        render("{{ .ProxyConfig.Tracing }}", &d).as_deref(),
        Ok("<nil>"),
        "a typed nil pointer prints <nil>"
    );
    assert_eq!(
        render("{{ .ProxyConfig.Tracing.TlsSettings }}", &d),
        Err("template: t:1:15: executing \"t\" at <.ProxyConfig.Tracing.TlsSettings>: nil pointer evaluating *v1alpha1.Tracing.TlsSettings".to_string())
    );
    assert_eq!(
        render("{{ .ProxyConfig.Nope }}", &d),
        Err("template: t:1:15: executing \"t\" at <.ProxyConfig.Nope>: can't evaluate field Nope in type *v1alpha1.ProxyConfig".to_string())
    );
    let d = data(Some("ca.pem"));
    assert_eq!(
        render("{{ .ProxyConfig.GetTracing.GetTlsSettings }}", &d).as_deref(),
        Ok("ca.pem")
    );
}

#[test]
fn enums_print_their_name_and_compare_as_ints() {
    let d = data(None);
    assert_eq!(
        render("{{ .ProxyConfig.InterceptionMode }} {{ .ProxyConfig.InterceptionMode.String }} {{ eq .ProxyConfig.InterceptionMode.String \"REDIRECT\" }} {{ eq .ProxyConfig.InterceptionMode 0 }}", &d).as_deref(),
        Ok("REDIRECT REDIRECT true true")
    );
    assert_eq!(
        render("{{ quote .ProxyConfig.InterceptionMode }}", &d).as_deref(),
        Ok("\"REDIRECT\"")
    );
    assert_eq!(
        render("{{ eq .ProxyConfig.InterceptionMode \"x\" }}", &d),
        Err("template: t:1:3: executing \"t\" at <eq .ProxyConfig.InterceptionMode \"x\">: error calling eq: incompatible types for comparison: v1alpha1.ProxyConfig_InboundInterceptionMode and string".to_string())
    );
}

#[test]
fn string_maps_index_to_empty_string() {
    let d = data(None);
    assert_eq!(
        render(
            "[{{ index .Annotations \"missing\" }}][{{ .Annotations.missing }}]",
            &d
        )
        .as_deref(),
        Ok("[][<no value>]")
    );
}

#[test]
fn host_functions_override_sprig_with_go_signatures() {
    // Istio's indent: pads every line except the first.
    let mut istio = FuncMap::new();
    istio.insert(
        "indent",
        Func::new(&[ArgType::Int, ArgType::Str], |a| {
            let n = match a[0] {
                Value::Int(n, _) => n.max(0) as usize,
                _ => 0,
            };
            let s = a[1].as_str().unwrap_or("");
            Ok(Value::str(s.replace('\n', &format!("\n{}", " ".repeat(n)))))
        }),
    );
    istio.insert("failing", Func::new(&[], |_| Err("boom".to_string())));
    let t = Template::new("t")
        .funcs(&sprig::funcs())
        .funcs(&istio)
        .parse("{{ indent 2 \"a\\nb\" }}|{{ nindent 2 \"a\" }}")
        .expect("parses");
    assert_eq!(t.execute(&Value::Nil).as_deref(), Ok("a\n  b|\n  a"));
    let t = Template::new("t")
        .funcs(&istio)
        .parse("{{ indent 2 }}")
        .expect("parses");
    assert_eq!(
        t.execute(&Value::Nil).map_err(|e| e.to_string()),
        Err(
            "template: t:1:3: executing \"t\" at <indent>: wrong number of args for indent: want 2 got 1"
                .to_string()
        )
    );
    let t = Template::new("t")
        .funcs(&istio)
        .parse("x{{ failing }}")
        .expect("parses");
    assert_eq!(
        t.execute(&Value::Nil).map_err(|e| e.to_string()),
        Err("template: t:1:4: executing \"t\" at <failing>: error calling failing: boom".to_string())
    );
}

#[test]
fn templates_render_concurrently() {
    let t = std::sync::Arc::new(
        Template::new("t")
            .funcs(&sprig::funcs())
            .parse("{{ range $i, $v := .l }}{{ $i }}={{ $v | upper }} {{ end }}")
            .expect("parses"),
    );
    let d = Value::from_json(&serde_json::json!({"l": ["a", "b"]}));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let (t, d) = (t.clone(), d.clone());
            std::thread::spawn(move || t.execute(&d).map_err(|e| e.to_string()))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().expect("thread").as_deref(), Ok("0=A 1=B "));
    }
}

/// A `map[string]string` whose reads are logged, as the injector's labels and annotations are.
fn watched(reads: &std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> Value {
    let log = reads.clone();
    let watch = gotemplate::MapWatch(std::sync::Arc::new(move |read| {
        let entry = match read {
            gotemplate::MapRead::Key(key) => format!("key {key}"),
            gotemplate::MapRead::All => "all".to_owned(),
        };
        if let Ok(mut log) = log.lock() {
            log.push(entry);
        }
    }));
    let entries = BTreeMap::from([
        ("app".to_owned(), Value::str("web")),
        ("tier".to_owned(), Value::str("db")),
    ]);
    let map = gotemplate::Map::watched(gotemplate::ElemType::String, entries, watch);
    Value::map(BTreeMap::from([(
        "labels".to_owned(),
        Value::Map(std::sync::Arc::new(map)),
    )]))
}

#[test]
fn a_watched_map_tells_lookups_by_key_and_everything_else_as_whole() {
    let reads = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let data = watched(&reads);
    let out = render(
        r#"{{ index .labels "app" }} {{ .labels.missing }} {{ if .labels.tier }}yes{{ end }}"#,
        &data,
    );
    assert_eq!(out.as_deref(), Ok("web <no value> yes"));
    let mut seen = reads.lock().unwrap().clone();
    seen.dedup();
    assert_eq!(
        seen,
        ["key app", "key missing", "key tier"],
        "lookups are told by key only"
    );
    reads.lock().unwrap().clear();
    let out = render(
        r#"{{ range $k, $v := .labels }}{{ $k }}={{ $v }},{{ end }} {{ len .labels }}"#,
        &data,
    );
    assert_eq!(out.as_deref(), Ok("app=web,tier=db, 2"));
    let seen = reads.lock().unwrap().clone();
    assert!(!seen.is_empty() && seen.iter().all(|r| r == "all"), "{seen:?}");
}
