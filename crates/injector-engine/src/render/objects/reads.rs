//! Which parts of the pod a render read: the key of the render cache.
//!
//! Every read of the pod's JSON by the template data goes through a
//! [`JsonRef`](super::gostruct::JsonRef). While [`record`] runs a closure (the renders of one
//! injection), each of those reads of the recorded document is logged as one of three
//! observations:
//!
//! - [`Read::Whole`]: the node at a path was read as a value (a string, a map, a JSON dump): its
//!   whole subtree is an input;
//! - [`Read::Member`]: whether an object has a (non-null) member, which is what navigating to a
//!   struct field decides;
//! - [`Read::Length`]: how many items an array has, which is what ranging over a list decides
//!   (the items' contents are their own reads);
//! - [`Read::Entry`]: one key of a `map[string]string` (labels, annotations) looked up, present
//!   or not: the template maps tell their reads by key ([`gotemplate::MapWatch`]), so a pod's own
//!   name label does not split the renders of templates that never look it up. Ranging over the
//!   map, its length or a dump of it is a [`Read::Whole`].
//!
//! Two pods for which every observation is the same render identically: the templates saw the
//! same thing. That is the whole soundness argument, and it holds because the recorder sits
//! below every accessor (`JsonRef::get`, `key`, `items`), not beside them.
//!
//! The log is thread-local: rendering is synchronous on the calling thread, and the template
//! data converts pod fields lazily, only while a template executes.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

use serde_json::Value as Json;

use crate::member::Members;

/// One step of a path into a JSON document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Seg {
    /// An object member.
    Key(&'static str),
    /// An array item.
    Index(usize),
}

/// A path from the document's root.
pub type Path = Arc<[Seg]>;

/// One observation a render made of the recorded document.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Read {
    /// The whole node at the path (`null` when the path does not resolve).
    Whole(Path),
    /// Whether the object at the path has the member, not null.
    Member(Path, &'static str),
    /// The length of the array at the path (0 when it is not an array).
    Length(Path),
    /// One member of the object at the path, looked up by key: its value, or its absence.
    Entry(Path, Arc<str>),
}

/// What one [`Read`] saw: the value a second pod must show to share the render.
#[derive(Clone, Debug)]
pub enum Seen {
    /// The node, as read.
    Whole(Json),
    /// Whether the member was there.
    Member(bool),
    /// The array's length.
    Length(usize),
    /// The member (`None`: absent; a JSON `null` member is not absent).
    Entry(Option<Json>),
}

/// The node at `path` in `root`, `null` when the path does not resolve (what `JsonRef::get`
/// hands a reader).
pub fn resolve<'a>(root: &'a Json, path: &[Seg]) -> &'a Json {
    let mut node = root;
    for seg in path {
        node = match seg {
            Seg::Key(k) => node.member(k),
            Seg::Index(i) => node.get(*i),
        }
        .unwrap_or(&Json::Null);
    }
    node
}

impl Read {
    /// What this observation sees in `root`.
    pub fn observe(&self, root: &Json) -> Seen {
        match self {
            Read::Whole(path) => Seen::Whole(resolve(root, path).clone()),
            Read::Member(path, key) => Seen::Member(!matches!(
                resolve(root, path).member(key),
                None | Some(Json::Null)
            )),
            Read::Length(path) => Seen::Length(resolve(root, path).as_array().map_or(0, Vec::len)),
            Read::Entry(path, key) => Seen::Entry(resolve(root, path).member(key).cloned()),
        }
    }

    /// Whether `root` shows what `seen` recorded.
    pub fn sees_same(&self, root: &Json, seen: &Seen) -> bool {
        match (self, seen) {
            (Read::Whole(path), Seen::Whole(value)) => identical(resolve(root, path), value),
            (Read::Entry(path, key), Seen::Entry(value)) => match (resolve(root, path).member(key), value) {
                (Some(a), Some(b)) => identical(a, b),
                (None, None) => true,
                _ => false,
            },
            (Read::Member(..) | Read::Length(_), Seen::Member(_) | Seen::Length(_)) => {
                match (self.observe(root), seen) {
                    (Seen::Member(a), Seen::Member(b)) => a == *b,
                    (Seen::Length(a), Seen::Length(b)) => a == *b,
                    _ => false,
                }
            }
            _ => false,
        }
    }

    fn path(&self) -> &[Seg] {
        match self {
            Read::Whole(path) | Read::Member(path, _) | Read::Length(path) | Read::Entry(path, _) => path,
        }
    }
}

/// Equality that also compares the order of object members (`serde_json`'s ignores it, but a
/// template that dumps a map as JSON shows it).
pub fn identical(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Object(a), Json::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|((ka, va), (kb, vb))| ka == kb && identical(va, vb))
        }
        (Json::Array(a), Json::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b.iter()).all(|(a, b)| identical(a, b))
        }
        _ => a == b,
    }
}

/// The distinct observations of a recording, without those a [`Read::Whole`] of an ancestor
/// (or of the same path) already covers, in sorted order.
///
/// Sorting is `O(n log n)`; each read then looks its path's prefixes up among the whole reads,
/// so the work grows with the number of reads times the square of their depth (a few segments),
/// not with the number of reads squared: a pod of many containers is many reads.
pub fn compact(mut reads: Vec<Read>) -> Vec<Read> {
    reads.sort_unstable();
    reads.dedup();
    let wholes: HashSet<Path> = reads
        .iter()
        .filter_map(|r| match r {
            Read::Whole(path) => Some(path.clone()),
            _ => None,
        })
        .collect();
    reads.retain(|read| !covered(read, &wholes));
    reads
}

/// Whether a whole read of one of `read`'s ancestors covers it: a [`Read::Whole`] is covered by a
/// strict ancestor only (itself stays), a member, length or entry of a node also by the node's
/// own whole read (they are part of its value).
fn covered(read: &Read, wholes: &HashSet<Path>) -> bool {
    let path = read.path();
    let prefixes = match read {
        Read::Whole(_) => path.len(),
        _ => path.len() + 1,
    };
    (0..prefixes).any(|len| wholes.contains(&path[..len]))
}

struct Recording {
    /// The document being recorded, by address (only reads of it are logged).
    root: *const Json,
    reads: Vec<Read>,
}

thread_local! {
    static RECORDING: RefCell<Option<Recording>> = const { RefCell::new(None) };
}

/// A watch for the template map made of the object at `path` in `root`: a lookup is a
/// [`Read::Entry`], anything else a [`Read::Whole`] of the object.
pub(super) fn map_watch(root: Arc<Json>, path: Path) -> gotemplate::MapWatch {
    gotemplate::MapWatch(Arc::new(move |read| {
        note(&root, || match read {
            gotemplate::MapRead::Key(key) => Read::Entry(path.clone(), Arc::from(key)),
            gotemplate::MapRead::All => Read::Whole(path.clone()),
        });
    }))
}

/// Logs a read of `root` when `root` is the document being recorded on this thread.
pub(super) fn note(root: &Arc<Json>, read: impl FnOnce() -> Read) {
    RECORDING.with(|recording| {
        if let Some(recording) = recording.borrow_mut().as_mut()
            && std::ptr::eq(recording.root, Arc::as_ptr(root))
        {
            recording.reads.push(read());
        }
    });
}

/// Ends the recording when dropped, so an early return or a panic in `f` leaves none behind.
struct Stop;

impl Drop for Stop {
    fn drop(&mut self) {
        RECORDING.with(|recording| recording.borrow_mut().take());
    }
}

/// Runs `f`, logging its reads of `document` (compacted), or `None` when a recording was already
/// under way on this thread (nested recordings are not supported; the caller then does not
/// cache), or when the injection's deadline passed while `f` ran (its renders are of no use
/// then, and the compaction would only delay the end).
pub fn record<R>(document: &Arc<Json>, f: impl FnOnce() -> R) -> (R, Option<Vec<Read>>) {
    let started = RECORDING.with(|recording| {
        let mut recording = recording.borrow_mut();
        if recording.is_some() {
            return false;
        }
        *recording = Some(Recording {
            root: Arc::as_ptr(document),
            reads: Vec::new(),
        });
        true
    });
    if !started {
        return (f(), None);
    }
    let stop = Stop;
    let result = f();
    let reads = RECORDING.with(|recording| recording.borrow_mut().take().map(|r| r.reads));
    drop(stop);
    if crate::deadline::passed() {
        return (result, None);
    }
    (result, reads.map(compact))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(segs: &[Seg]) -> Path {
        Arc::from(segs.to_vec())
    }

    #[test]
    fn a_whole_read_covers_what_lies_below_it() {
        let labels = path(&[Seg::Key("metadata"), Seg::Key("labels")]);
        let reads = compact(vec![
            Read::Member(path(&[Seg::Key("metadata")]), "labels"),
            Read::Whole(labels.clone()),
            Read::Member(labels.clone(), "app"),
            Read::Length(labels.clone()),
            Read::Whole(path(&[Seg::Key("metadata"), Seg::Key("labels"), Seg::Key("app")])),
            Read::Whole(labels.clone()),
        ]);
        assert_eq!(
            reads,
            vec![
                Read::Whole(labels),
                Read::Member(path(&[Seg::Key("metadata")]), "labels"),
            ]
        );
    }

    /// `compact` as first written, by its definition: every read checked against every whole
    /// read (quadratic, so only a test's reference).
    fn compact_by_definition(mut reads: Vec<Read>) -> Vec<Read> {
        reads.sort();
        reads.dedup();
        let wholes: Vec<Path> = reads
            .iter()
            .filter_map(|r| match r {
                Read::Whole(path) => Some(path.clone()),
                _ => None,
            })
            .collect();
        reads.retain(|read| {
            let path = read.path();
            !wholes.iter().any(|whole| {
                let covers = path.starts_with(whole);
                match read {
                    Read::Whole(_) => covers && whole.len() < path.len(),
                    _ => covers,
                }
            })
        });
        reads
    }

    fn any_path() -> impl proptest::strategy::Strategy<Value = Path> {
        use proptest::prelude::*;
        // Few distinct segments, so that paths share prefixes and cover each other often.
        let seg = prop_oneof![
            prop::sample::select(vec!["spec", "metadata", "labels", "containers"]).prop_map(Seg::Key),
            (0usize..3).prop_map(Seg::Index),
        ];
        prop::collection::vec(seg, 0..5).prop_map(Path::from)
    }

    fn any_read() -> impl proptest::strategy::Strategy<Value = Read> {
        use proptest::prelude::*;
        let key = prop::sample::select(vec!["app", "name"]);
        prop_oneof![
            any_path().prop_map(Read::Whole),
            (any_path(), key.clone()).prop_map(|(p, k)| Read::Member(p, k)),
            any_path().prop_map(Read::Length),
            (any_path(), key).prop_map(|(p, k)| Read::Entry(p, Arc::from(k))),
        ]
    }

    proptest::proptest! {
        /// The compaction keeps exactly what its definition keeps, in the same order.
        #[test]
        fn compact_keeps_what_its_definition_keeps(
            reads in proptest::collection::vec(any_read(), 0..60)
        ) {
            proptest::prop_assert_eq!(compact(reads.clone()), compact_by_definition(reads));
        }
    }

    #[test]
    fn member_order_is_part_of_identity() {
        let a = serde_json::json!({"a": 1, "b": 2});
        let b = serde_json::json!({"b": 2, "a": 1});
        assert_eq!(a, b);
        assert!(!identical(&a, &b));
        assert!(identical(&a, &a.clone()));
    }

    #[test]
    fn observations_compare_what_a_reader_would_see() {
        let pod = serde_json::json!({"spec": {"containers": [{"name": "a"}], "x": null}});
        let length = Read::Length(path(&[Seg::Key("spec"), Seg::Key("containers")]));
        let seen = length.observe(&pod);
        assert!(length.sees_same(
            &serde_json::json!({"spec": {"containers": [{"name": "b"}]}}),
            &seen
        ));
        assert!(!length.sees_same(&serde_json::json!({"spec": {"containers": []}}), &seen));
        // A null member reads as absent.
        let member = Read::Member(path(&[Seg::Key("spec")]), "x");
        let seen = member.observe(&pod);
        assert!(member.sees_same(&serde_json::json!({"spec": {}}), &seen));
        assert!(!member.sees_same(&serde_json::json!({"spec": {"x": 1}}), &seen));
    }

    #[test]
    fn only_the_recorded_document_is_logged_and_the_recording_ends() {
        let pod = Arc::new(serde_json::json!({"a": 1}));
        let other = Arc::new(serde_json::json!({"a": 1}));
        let ((), reads) = record(&pod, || {
            note(&pod, || Read::Whole(path(&[Seg::Key("a")])));
            note(&other, || Read::Whole(path(&[])));
        });
        assert_eq!(reads, Some(vec![Read::Whole(path(&[Seg::Key("a")]))]));
        // Nothing is logged once the recording is over.
        note(&pod, || panic!("no recording is under way"));
        let (inner, outer) = record(&pod, || record(&pod, || ()).1);
        assert_eq!(inner, None, "a nested recording is refused");
        assert_eq!(outer, Some(vec![]));
    }
}
