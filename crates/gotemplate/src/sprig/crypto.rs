//! sprig's password and secret functions (`crypto.go`): `derivePassword` (the Master Password
//! algorithm), `bcrypt`, `htpasswd`, `randBytes`, `encryptAES` and `decryptAES`.
//!
//! Randomness (salts, IVs, `randBytes`) comes from the operating system's secure generator.
//! `decryptAES` reproduces the runtime panics Go's version hits on malformed input as errors
//! with Go's texts. The hash sums (`sha1sum`, ...) live in [`super::encoding`]; certificate
//! and key generation (`genCA`, `genPrivateKey`, ...) are not implemented yet.

use base64::Engine;
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

/// bcrypt's input limit (`golang.org/x/crypto/bcrypt` refuses longer passwords).
const BCRYPT_MAX_PASSWORD: usize = 72;

/// sprig's `bcrypt`: a `$2a$10$...` hash with a random salt, or sprig's failure text.
pub fn bcrypt_hash(password: &str) -> String {
    if password.len() > BCRYPT_MAX_PASSWORD {
        return "failed to encrypt string with bcrypt: bcrypt: password length exceeds 72 bytes".into();
    }
    match bcrypt::hash_with_result(password, 10) {
        Ok(h) => h.format_for_version(bcrypt::Version::TwoA),
        Err(e) => format!("failed to encrypt string with bcrypt: {e}"),
    }
}

/// sprig's `htpasswd`: `user:<bcrypt hash>`, refusing a user name with a colon.
pub fn htpasswd(user: &str, password: &str) -> String {
    if user.contains(':') {
        return format!("invalid username: {user}");
    }
    format!("{user}:{}", bcrypt_hash(password))
}

/// `n` bytes from the operating system's secure generator.
fn random_bytes(n: usize) -> Result<Vec<u8>, String> {
    let mut b = vec![0u8; n];
    getrandom::fill(&mut b).map_err(|e| e.to_string())?;
    Ok(b)
}

/// The upper bound on `randBytes` (Go would try to allocate anything; we refuse absurd sizes).
const MAX_RAND_BYTES: i64 = 1 << 24;

/// sprig's `randBytes`: base64 of `count` secure random bytes.
fn rand_bytes(count: i64) -> Result<String, String> {
    if count < 0 {
        return Err("runtime error: makeslice: len out of range".into());
    }
    if count > MAX_RAND_BYTES {
        return Err(format!(
            "randBytes: {count} bytes is more than the limit of {MAX_RAND_BYTES}"
        ));
    }
    Ok(base64::engine::general_purpose::STANDARD.encode(random_bytes(count as usize)?))
}

/// sprig's key derivation for `encryptAES`/`decryptAES`: the password's bytes, truncated or
/// zero-padded to 32 (AES-256).
fn aes_key(password: &str) -> [u8; 32] {
    let mut key = [0u8; 32];
    let n = password.len().min(32);
    key[..n].copy_from_slice(&password.as_bytes()[..n]);
    key
}

const AES_BLOCK: usize = 16;

/// sprig's `encryptAES`: AES-256-CBC with PKCS#7 padding, a random IV prepended, base64.
pub fn encrypt_aes(password: &str, plaintext: &str) -> Result<String, String> {
    use aes::cipher::{BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
    if plaintext.is_empty() {
        return Ok(String::new());
    }
    let iv = random_bytes(AES_BLOCK)?;
    let enc =
        cbc::Encryptor::<aes::Aes256>::new_from_slices(&aes_key(password), &iv).map_err(|e| e.to_string())?;
    let mut out = iv;
    out.extend(enc.encrypt_padded_vec_mut::<Pkcs7>(plaintext.as_bytes()));
    Ok(base64::engine::general_purpose::STANDARD.encode(out))
}

/// sprig's `decryptAES`, including the failures Go's version panics with on malformed input.
pub fn decrypt_aes(password: &str, crypt64: &str) -> Result<String, String> {
    use aes::cipher::{BlockDecryptMut, KeyIvInit, block_padding::NoPadding};
    if crypt64.is_empty() {
        return Ok(String::new());
    }
    let crypt = base64::engine::general_purpose::STANDARD
        .decode(crypt64)
        .map_err(|_| super::encoding::b64_error(crypt64))?;
    if crypt.len() < AES_BLOCK {
        // Go slices crypt[:16] of a buffer with capacity DecodedLen(len(s)).
        let cap = crypt64.len() / 4 * 3;
        if cap < AES_BLOCK {
            return Err(format!(
                "runtime error: slice bounds out of range [:{AES_BLOCK}] with capacity {cap}"
            ));
        }
    }
    let (iv, body) = crypt.split_at(AES_BLOCK.min(crypt.len()));
    if iv.len() < AES_BLOCK || body.len() % AES_BLOCK != 0 {
        return Err("crypto/cipher: input not full blocks".into());
    }
    let dec =
        cbc::Decryptor::<aes::Aes256>::new_from_slices(&aes_key(password), iv).map_err(|e| e.to_string())?;
    let plain = dec
        .decrypt_padded_vec_mut::<NoPadding>(body)
        .map_err(|e| e.to_string())?;
    let Some(&pad) = plain.last() else {
        return Err("runtime error: index out of range [-1]".into());
    };
    let end = plain.len() as i64 - i64::from(pad);
    if end < 0 {
        return Err(format!("runtime error: slice bounds out of range [:{end}]"));
    }
    Ok(String::from_utf8_lossy(&plain[..end as usize]).into_owned())
}

/// Registers `derivePassword`, `bcrypt`, `htpasswd`, `randBytes`, `encryptAES`, `decryptAES`.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "bcrypt",
        Func::new(&[Str], |a| {
            Ok(Value::str(bcrypt_hash(a[0].as_str().unwrap_or(""))))
        }),
    );
    m.insert(
        "htpasswd",
        Func::new(&[Str, Str], |a| {
            Ok(Value::str(htpasswd(
                a[0].as_str().unwrap_or(""),
                a[1].as_str().unwrap_or(""),
            )))
        }),
    );
    m.insert(
        "randBytes",
        Func::new(&[Int], |a| {
            let n = match a[0] {
                Value::Int(n, _) => n,
                _ => 0,
            };
            Ok(Value::str(rand_bytes(n)?))
        }),
    );
    m.insert(
        "encryptAES",
        Func::new(&[Str, Str], |a| {
            Ok(Value::str(encrypt_aes(
                a[0].as_str().unwrap_or(""),
                a[1].as_str().unwrap_or(""),
            )?))
        }),
    );
    m.insert(
        "decryptAES",
        Func::new(&[Str, Str], |a| {
            Ok(Value::str(decrypt_aes(
                a[0].as_str().unwrap_or(""),
                a[1].as_str().unwrap_or(""),
            )?))
        }),
    );
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
    fn aes_round_trips_and_bcrypt_verifies() {
        let c = encrypt_aes("key", "secret text, longer than one block").unwrap_or_default();
        assert_eq!(
            decrypt_aes("key", &c).as_deref(),
            Ok("secret text, longer than one block")
        );
        assert_eq!(
            decrypt_aes("key", "YQ==").err().as_deref(),
            Some("runtime error: slice bounds out of range [:16] with capacity 3")
        );
        let h = bcrypt_hash("pw");
        assert!(h.starts_with("$2a$10$") && h.len() == 60, "{h}");
        assert_eq!(bcrypt::verify("pw", &h).ok(), Some(true));
        assert_eq!(htpasswd("a:b", "pw"), "invalid username: a:b");
        assert_eq!(rand_bytes(12).map(|s| s.len()), Ok(16));
    }

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
