//! Host objects: Go types the templates see, backed by JSON.
//!
//! - [`gostruct`]: a struct or pointer described by a static schema (fields, `json` tags,
//!   getters), converting fields lazily and caching them;
//! - [`kube`]: schemas of the Kubernetes types (`PodSpec`, `Container`, `ObjectMeta`, …);
//! - [`k8sjson`]: Go's `encoding/json` of any Kubernetes or Gateway API struct, for
//!   `structToJSON`, from a generated table of their fields (`k8s_types.tsv`);
//! - [`mesh`]: schemas of Istio's mesh API (`ProxyConfig`, `MeshConfig`, `Tracing`, …);
//! - [`proto`]: protobuf enums, durations and wrappers;
//! - [`protojson`]: protobuf JSON of a message by its schema;
//! - [`reads`]: which parts of the pod a render read (the render cache's key).
//!
//! Two hidden zero-argument methods, whose names a template cannot spell (they start with a
//! NUL byte), let Istio's functions see the data behind an object without downcasting:
//! [`GO_JSON_METHOD`] (what Go's `encoding/json` writes, for `structToJSON` and `toYaml`) and
//! [`RAW_JSON_METHOD`] (the backing JSON) and [`PROTO_JSON_METHOD`] (for `protoToJSON`).

pub mod gostruct;
pub mod k8sjson;
pub mod kube;
pub mod mesh;
pub mod proto;
pub mod protojson;
pub mod reads;

/// Hidden method: the object as Go's `encoding/json` writes it (a JSON string).
pub const GO_JSON_METHOD: &str = "\u{0}gojson";

/// Hidden method: the JSON backing the object (protobuf JSON for mesh types).
pub const RAW_JSON_METHOD: &str = "\u{0}raw";

/// Hidden method of protobuf messages: Istio's `protoToJSON` (for a ProxyConfig, without the
/// fields equal to their defaults).
pub const PROTO_JSON_METHOD: &str = "\u{0}protojson";
