//! Names Kubernetes generates into pods, which the injector recognises.

/// How ServiceAccount admission names the projected token volume it adds to every pod that
/// mounts a token: this prefix (`ServiceAccountVolumeName` and a dash) and
/// [`TOKEN_VOLUME_SUFFIX_LEN`] characters of [`RANDOM_SUFFIX_ALPHABET`], so every pod of a
/// Deployment has a volume (and volume mounts) of its own name.
pub const TOKEN_VOLUME_PREFIX: &str = "kube-api-access-";

/// How many random characters follow [`TOKEN_VOLUME_PREFIX`].
pub const TOKEN_VOLUME_SUFFIX_LEN: usize = 5;

/// The characters Kubernetes draws random name suffixes from (`k8s.io/apimachinery`'s
/// `rand.String`: no vowels, no `0`, `1` or `3`).
pub const RANDOM_SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
