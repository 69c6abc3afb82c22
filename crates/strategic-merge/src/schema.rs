//! The patch-metadata table: which fields exist, what Go type they have and which
//! `patchStrategy` / `patchMergeKey` tags they carry.
//!
//! Go's `PatchMetaFromStruct` walks the Go types by reflection. We walk a static type graph
//! generated from the same Go types (`pod_types.rs`, produced by `tools/smp-oracle schema`), and
//! answer the same two questions with the same errors: [`Schema::lookup_struct`] (Go's
//! `LookupPatchMetadataForStruct`) and [`Schema::lookup_slice`] (`LookupPatchMetadataForSlice`).

use crate::error::MergeError;
use crate::pod_types;

/// How the merge treats values of a Go type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GoKind {
    /// A struct: its JSON object keys are the fields.
    Struct,
    /// A `map[string]T`: any key, values of type `elem`.
    Map,
    /// A slice or array of `elem`.
    Slice,
    /// Everything else (strings, numbers, booleans).
    Scalar,
}

/// One Go type of the generated graph.
#[derive(Debug)]
pub(crate) struct TypeDef {
    /// Go type name (`reflect.Type.Name()`), used in error messages.
    pub(crate) name: &'static str,
    /// Go kind name (`reflect.Kind.String()`), used in error messages.
    pub(crate) go_kind: &'static str,
    /// Merge-relevant classification.
    pub(crate) kind: GoKind,
    /// Map value or slice element type (`u16::MAX` if none).
    pub(crate) elem: u16,
    /// JSON fields of a struct, in declaration order (embedded structs inlined).
    pub(crate) fields: &'static [FieldDef],
}

/// One JSON field of a struct.
#[derive(Debug)]
pub(crate) struct FieldDef {
    /// JSON name.
    pub(crate) json: &'static str,
    /// Whether the Go field is a pointer (changes what the slice lookup accepts).
    pub(crate) pointer: bool,
    /// Field type (pointers already followed).
    pub(crate) ty: u16,
    /// Raw `patchStrategy` tag (comma separated), empty if none.
    pub(crate) strategy: &'static str,
    /// Raw `patchMergeKey` tag, empty if none.
    pub(crate) merge_key: &'static str,
}

/// A position in a Go type graph: the type whose fields the keys of the current JSON object are.
///
/// Obtain one with [`Schema::pod`] (what Istio uses), [`Schema::pod_spec`],
/// [`Schema::pod_template_spec`] or [`Schema::container`], or descend with [`Schema::field`].
#[derive(Clone, Copy)]
pub struct Schema {
    types: &'static [TypeDef],
    ty: u16,
}

/// Go's `foldFunc(name)(name, key)` for an ASCII field name: ASCII case-insensitive, and the
/// key may spell `s`/`k` as U+017F (long s) / U+212A (Kelvin sign), which Unicode folds to them.
fn json_fold_eq(name: &str, key: &str) -> bool {
    let mut key = key.chars();
    for n in name.bytes() {
        let Some(k) = key.next() else { return false };
        let ok = match k {
            '\u{17F}' => n.eq_ignore_ascii_case(&b's'),
            '\u{212A}' => n.eq_ignore_ascii_case(&b'k'),
            k if k.is_ascii() => n.eq_ignore_ascii_case(&(k as u8)),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    key.next().is_none()
}

impl std::fmt::Debug for Schema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Schema({})", self.type_name())
    }
}

/// Patch metadata of one field: its strategies and merge key (both possibly empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchMeta {
    /// The raw `patchStrategy` tag, e.g. `"merge,retainKeys"`; empty when absent.
    pub strategy: &'static str,
    /// The `patchMergeKey` tag, e.g. `"name"`; empty when absent.
    pub merge_key: &'static str,
}

impl PatchMeta {
    /// The strategies as Go's `strings.Split(tag, ",")` returns them.
    pub fn strategies(&self) -> impl Iterator<Item = &'static str> {
        self.strategy.split(',')
    }
}

static POD: Schema = Schema {
    types: pod_types::TYPES,
    ty: pod_types::POD,
};
static POD_SPEC: Schema = Schema {
    types: pod_types::TYPES,
    ty: pod_types::POD_SPEC,
};
static POD_TEMPLATE_SPEC: Schema = Schema {
    types: pod_types::TYPES,
    ty: pod_types::POD_TEMPLATE_SPEC,
};
static CONTAINER: Schema = Schema {
    types: pod_types::TYPES,
    ty: pod_types::CONTAINER,
};

impl Schema {
    /// `corev1.Pod` (k8s.io/api v0.36.3): the schema Istio's injector patches with.
    pub fn pod() -> &'static Schema {
        &POD
    }

    /// `corev1.PodSpec`.
    pub fn pod_spec() -> &'static Schema {
        &POD_SPEC
    }

    /// `corev1.PodTemplateSpec` (metadata + spec), e.g. for workload templates.
    pub fn pod_template_spec() -> &'static Schema {
        &POD_TEMPLATE_SPEC
    }

    /// `corev1.Container`.
    pub fn container() -> &'static Schema {
        &CONTAINER
    }

    fn def(&self) -> Option<&'static TypeDef> {
        self.types.get(usize::from(self.ty))
    }

    fn at(&self, ty: u16) -> Schema {
        Schema {
            types: self.types,
            ty,
        }
    }

    /// Go type name of this position (`Pod`, `Container`, `ResourceList`, ...).
    pub fn type_name(&self) -> &'static str {
        self.def().map_or("", |d| d.name)
    }

    /// Go kind name (`reflect.Kind.String()`), what Go's `PatchMetaFromStruct.Name()` returns.
    pub fn kind_name(&self) -> &'static str {
        self.def().map_or("invalid", |d| d.go_kind)
    }

    /// Finds a struct field the way Go's forked `encoding/json` does: exact name first, then the
    /// first case-insensitive match ([`json_fold_eq`]).
    fn find_field(&self, key: &str) -> Option<&'static FieldDef> {
        let fields = self.def()?.fields;
        fields
            .iter()
            .find(|f| f.json == key)
            .or_else(|| fields.iter().find(|f| json_fold_eq(f.json, key)))
    }

    /// Go's `LookupPatchMetadataForStruct`: the schema and patch metadata of field `key`, used
    /// when both the original and the patch hold an object at `key`.
    pub fn lookup_struct(&self, key: &str) -> Result<(Schema, PatchMeta), MergeError> {
        let def = self
            .def()
            .ok_or_else(|| MergeError::NotAStruct("invalid".into()))?;
        if def.kind != GoKind::Struct {
            return Err(MergeError::NotAStruct(def.go_kind.into()));
        }
        let field = self.find_field(key).ok_or_else(|| MergeError::FieldNotFound {
            type_name: def.name.into(),
            field: key.into(),
        })?;
        Ok((
            self.at(field.ty),
            PatchMeta {
                strategy: field.strategy,
                merge_key: field.merge_key,
            },
        ))
    }

    /// Go's `LookupPatchMetadataForSlice`: the schema of the *elements* of list field `key` and
    /// the list's patch metadata.
    pub fn lookup_slice(&self, key: &str) -> Result<(Schema, PatchMeta), MergeError> {
        let (field_schema, meta) = self.lookup_struct(key)?;
        let field_def = field_schema
            .def()
            .ok_or_else(|| MergeError::NotASlice("invalid".into()))?;
        let pointer = self.find_field(key).is_some_and(|f| f.pointer);
        let elem = match field_def.kind {
            GoKind::Slice => {
                let elem = field_schema.at(field_def.elem);
                if !pointer && elem.def().is_some_and(|d| d.kind == GoKind::Slice) {
                    return Err(MergeError::SliceOfSlice);
                }
                elem
            }
            // Go follows a pointer field and uses the pointee itself as the element type.
            _ if pointer => field_schema,
            _ => return Err(MergeError::NotASlice(self.kind_name().into())),
        };
        Ok((elem, meta))
    }

    /// The schema of the value of field `key` (for a list field, of its elements), to merge a
    /// sub-document with [`crate::strategic_merge`]. `None` if the field does not exist (or
    /// this is not a struct). What [`Self::lookup_slice`], then [`Self::lookup_struct`], give,
    /// without making their errors.
    pub fn field(&self, key: &str) -> Option<Schema> {
        if !self.is_struct() {
            return None;
        }
        let field_schema = self.at(self.find_field(key)?.ty);
        match field_schema.def() {
            Some(def) if def.kind == GoKind::Slice => Some(self.at(def.elem)),
            _ => Some(field_schema),
        }
    }

    /// Whether this position is a struct (its fields can be looked up).
    pub fn is_struct(&self) -> bool {
        self.def().is_some_and(|def| def.kind == GoKind::Struct)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_is_what_the_slice_then_the_struct_lookup_give() {
        let pod = Schema::pod();
        for ty in 0..pod.types.len() {
            let schema = pod.at(u16::try_from(ty).expect("few types"));
            let names = schema.def().map_or(&[][..], |def| def.fields);
            let mut keys: Vec<String> = names.iter().map(|field| field.json.to_owned()).collect();
            keys.extend(names.iter().map(|field| field.json.to_uppercase()));
            keys.push("notAField".to_owned());
            for key in &keys {
                let looked_up = match schema.lookup_slice(key) {
                    Ok((found, _)) => Some(found.ty),
                    Err(_) => schema.lookup_struct(key).ok().map(|(found, _)| found.ty),
                };
                assert_eq!(
                    schema.field(key).map(|found| found.ty),
                    looked_up,
                    "{}.{key}",
                    schema.type_name()
                );
            }
        }
        let labels = pod.field("metadata").and_then(|meta| meta.field("labels"));
        assert!(pod.is_struct());
        assert!(
            labels.is_some_and(|labels| !labels.is_struct()),
            "a map is no struct"
        );
    }

    #[test]
    fn pod_merge_keys() {
        let pod = Schema::pod();
        let (spec, _) = pod.lookup_struct("spec").expect("spec");
        let (container, meta) = spec.lookup_slice("containers").expect("containers");
        assert_eq!(
            meta,
            PatchMeta {
                strategy: "merge",
                merge_key: "name"
            }
        );
        assert_eq!(container.type_name(), "Container");
        let (_, ports) = container.lookup_slice("ports").expect("ports");
        assert_eq!(ports.merge_key, "containerPort");
        let (_, volumes) = spec.lookup_slice("volumes").expect("volumes");
        assert_eq!(volumes.strategies().collect::<Vec<_>>(), ["merge", "retainKeys"]);
        let (_, tolerations) = spec.lookup_slice("tolerations").expect("tolerations");
        assert_eq!(
            tolerations,
            PatchMeta {
                strategy: "",
                merge_key: ""
            }
        );
        assert!(matches!(
            pod.lookup_struct("nope"),
            Err(MergeError::FieldNotFound { .. })
        ));
        // Case-insensitive fallback, like encoding/json.
        assert!(pod.lookup_struct("Spec").is_ok());
        assert!(pod.lookup_struct("\u{17F}PEC").is_ok());
        assert!(pod.lookup_struct("\u{212A}ind").is_ok());
        assert!(pod.lookup_struct("spe").is_err());
        assert!(matches!(
            spec.lookup_slice("nodeSelector"),
            Err(MergeError::NotASlice(_))
        ));
        // A pointer field looked up as a list yields the pointee, like Go.
        let (sc, _) = container.lookup_slice("securityContext").expect("pointer");
        assert_eq!(sc.type_name(), "SecurityContext");
    }
}
