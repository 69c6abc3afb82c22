//! Errors, worded like the Go implementation's (`mergepatch` and `strategicpatch` packages), so
//! that an injector can report the same text Istio would.

/// Why a strategic merge patch could not be applied.
///
/// The `Display` text matches Go's error text (values inside are printed with Go's `%v`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeError {
    /// The original or the patch is not a JSON object (`mergepatch.ErrBadJSONDoc`).
    #[error("invalid JSON document")]
    BadJsonDocument,
    /// A list item lacks the list's merge key (`mergepatch.ErrNoMergeKey`).
    #[error("map: {item} does not contain declared merge key: {key}")]
    NoMergeKey {
        /// The item, Go `%v` formatted.
        item: String,
        /// The merge key.
        key: String,
    },
    /// A value has the wrong JSON type (`mergepatch.ErrBadArgType`).
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        /// Expected Go type.
        expected: &'static str,
        /// Actual Go type.
        actual: &'static str,
    },
    /// Unknown `$patch` value (`mergepatch.ErrBadPatchType`).
    #[error("unknown patch type: {directive} in map: {map}")]
    BadPatchType {
        /// The directive value, Go `%s` formatted.
        directive: String,
        /// The map holding it, Go `%v` formatted.
        map: String,
    },
    /// `$patch: merge` inside a list.
    #[error("merging lists cannot yet be specified in the patch")]
    MergeDirectiveInList,
    /// A list of objects with merge strategy but no merge key.
    #[error("cannot merge lists without merge key for {0}")]
    NoMergeKeyForList(String),
    /// A merge list holds a non-object.
    #[error("value for key {0} is not a map")]
    NotAMap(usize),
    /// Items of different JSON types in one list.
    #[error("list element types are not identical: {0}")]
    ElementTypesDiffer(String),
    /// A list whose items are lists (`mergepatch.ErrNoListOfLists`).
    #[error("lists of lists are not supported")]
    ListOfLists,
    /// Both lists are empty where Go needs an element type.
    #[error("no elements in any of the given slices")]
    NoElements,
    /// Malformed `$deleteFromPrimitiveList` (`mergepatch.ErrBadPatchFormatForPrimitiveList`).
    #[error("invalid patch format of primitive list")]
    BadPrimitiveList,
    /// Malformed `$retainKeys` or a patch key missing from it
    /// (`mergepatch.ErrBadPatchFormatForRetainKeys`).
    #[error("invalid patch format of retainKeys")]
    BadRetainKeys,
    /// Malformed `$setElementOrder` (`mergepatch.ErrBadPatchFormatForSetElementOrderList`).
    #[error("invalid patch format of setElementOrder list")]
    BadSetElementOrder,
    /// The patch list disagrees with its `$setElementOrder` list.
    #[error("The order in patch list:\n{patch}\n doesn't match $setElementOrder list:\n{order}\n")]
    OrderMismatch {
        /// The patch list, Go `%v` formatted.
        patch: String,
        /// The `$setElementOrder` list, Go `%v` formatted.
        order: String,
    },
    /// A key that is not a field of the Go type (Go's `LookupPatchMetadataForStruct`).
    #[error(
        "unable to find api field in struct {type_name} for the json field {}",
        gocompat::strconv::quote(field)
    )]
    FieldNotFound {
        /// Go type name.
        type_name: String,
        /// The JSON key.
        field: String,
    },
    /// An object merged where the Go type is not a struct.
    #[error("merging an object in json but data type is not struct, instead is: {0}")]
    NotAStruct(String),
    /// A list merged where the Go type is not a slice.
    #[error("expected slice or array type, but got: {0}")]
    NotASlice(String),
    /// A Go slice of slices.
    #[error("unexpected slice of slice")]
    SliceOfSlice,
    /// More than two strategies, or two without `retainKeys`.
    #[error("unexpected patch strategy: {0}")]
    UnexpectedPatchStrategy(String),
    /// An input on which the Go implementation panics (e.g. comparing two objects used as merge
    /// key values); the text is Go's runtime error.
    #[error("panic: {0}")]
    GoPanic(String),
    /// The documents nest deeper than [`crate::MAX_DEPTH`].
    #[error("exceeded max depth of {0}")]
    TooDeep(usize),
}
