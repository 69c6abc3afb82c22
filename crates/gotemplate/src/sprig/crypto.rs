//! sprig's password and secret functions (`crypto.go`): `derivePassword` (the Master Password
//! algorithm).
//!
//! The hash sums (`sha1sum`, ...) live in [`super::encoding`].

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

/// The Master Password seed sprig prefixes to both the scrypt salt and the HMAC message.
const MASTER_PASSWORD_SEED: &[u8] = b"com.lyndir.masterpassword";

/// The password templates of each password type, in sprig's order.
fn password_templates(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "maximum" => &["anoxxxxxxxxxxxxxxxxx", "axxxxxxxxxxxxxxxxxno"],
        "long" => &[
            "CvcvnoCvcvCvcv",
            "CvcvCvcvnoCvcv",
            "CvcvCvcvCvcvno",
            "CvccnoCvcvCvcv",
            "CvccCvcvnoCvcv",
            "CvccCvcvCvcvno",
            "CvcvnoCvccCvcv",
            "CvcvCvccnoCvcv",
            "CvcvCvccCvcvno",
            "CvcvnoCvcvCvcc",
            "CvcvCvcvnoCvcc",
            "CvcvCvcvCvccno",
            "CvccnoCvccCvcv",
            "CvccCvccnoCvcv",
            "CvccCvccCvcvno",
            "CvcvnoCvccCvcc",
            "CvcvCvccnoCvcc",
            "CvcvCvccCvccno",
            "CvccnoCvcvCvcc",
            "CvccCvcvnoCvcc",
            "CvccCvcvCvccno",
        ],
        "medium" => &["CvcnoCvc", "CvcCvcno"],
        "short" => &["Cvcn"],
        "basic" => &["aaanaaan", "aannaaan", "aaannaaa"],
        "pin" => &["nnnn"],
        _ => return None,
    })
}

/// The characters a template letter stands for.
fn template_characters(class: u8) -> &'static [u8] {
    match class {
        b'V' => b"AEIOU",
        b'C' => b"BCDFGHJKLMNPQRSTVWXYZ",
        b'v' => b"aeiou",
        b'c' => b"bcdfghjklmnpqrstvwxyz",
        b'A' => b"AEIOUBCDFGHJKLMNPQRSTVWXYZ",
        b'a' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz",
        b'n' => b"0123456789",
        b'o' => b"@&%?,=[]_:-+*$#!'^~;()/.",
        b'x' => b"AEIOUaeiouBCDFGHJKLMNPQRSTVWXYZbcdfghjklmnpqrstvwxyz0123456789!@#$%^&*()",
        _ => b"",
    }
}

/// The seed with a big-endian 32-bit length and the text appended, as sprig builds its
/// salt (with the user) and HMAC message (with the site). Go's `uint32(len(s))` wraps.
fn seeded(text: &str) -> Vec<u8> {
    let mut b = Vec::with_capacity(MASTER_PASSWORD_SEED.len() + 4 + text.len() + 4);
    b.extend_from_slice(MASTER_PASSWORD_SEED);
    b.extend_from_slice(&(text.len() as u32).to_be_bytes());
    b.extend_from_slice(text.as_bytes());
    b
}

/// sprig's `derivePassword counter passwordType password user site`: scrypt (N=32768, r=8,
/// p=2, 64 bytes) of the master password salted with the user, then HMAC-SHA256 of the site
/// and counter; the first byte picks the template, the following bytes its characters.
/// Failures are returned as the result text, as sprig does.
pub fn derive_password(counter: u32, kind: &str, password: &str, user: &str, site: &str) -> String {
    let Some(templates) = password_templates(kind) else {
        return format!("cannot find password template {kind}");
    };
    let params = match scrypt::Params::new(15, 8, 2, 64) {
        Ok(p) => p,
        Err(e) => return format!("failed to derive password: {e}"),
    };
    let mut key = [0u8; 64];
    if let Err(e) = scrypt::scrypt(password.as_bytes(), &seeded(user), &params, &mut key) {
        return format!("failed to derive password: {e}");
    }
    let mut message = seeded(site);
    message.extend_from_slice(&counter.to_be_bytes());
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key) else {
        return "failed to derive password: bad key".into();
    };
    mac.update(&message);
    let seed = mac.finalize().into_bytes();
    let template = templates[usize::from(seed[0]) % templates.len()];
    template
        .bytes()
        .enumerate()
        .map(|(i, class)| {
            let chars = template_characters(class);
            // Templates are at most 20 long, the seed 32 bytes: the index is in range.
            let pick = seed.get(i + 1).copied().unwrap_or(0);
            chars
                .get(usize::from(pick) % chars.len().max(1))
                .copied()
                .unwrap_or(b'?') as char
        })
        .collect()
}

/// Registers `derivePassword`.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "derivePassword",
        Func::new(&[Uint32, Str, Str, Str, Str], |a| {
            let counter = match a[0] {
                Value::Uint(n, _) => n as u32,
                _ => 0,
            };
            let s = |i: usize| a[i].as_str().unwrap_or("");
            Ok(Value::str(derive_password(counter, s(1), s(2), s(3), s(4))))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_type_is_reported_as_text() {
        assert_eq!(
            derive_password(1, "huge", "p", "u", "s"),
            "cannot find password template huge"
        );
    }

    #[test]
    fn every_template_class_has_characters() {
        for kind in ["maximum", "long", "medium", "short", "basic", "pin"] {
            for t in password_templates(kind).unwrap_or(&[]) {
                assert!(t.bytes().all(|c| !template_characters(c).is_empty()), "{t}");
            }
        }
    }
}
