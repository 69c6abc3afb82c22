//! sprig's encoding and hashing functions (`crypto.go`, `strings.go`): `b64enc`, `b64dec`,
//! `b32enc`, `b32dec`, `sha1sum`, `sha256sum`, `sha512sum`, `adler32sum`.

use base64::Engine as _;
use sha1::Digest as _;

use super::util::str_arg as s;
use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const B32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// Go's `base32.StdEncoding.EncodeToString`.
pub fn b32enc(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let n = u64::from_be_bytes([0, 0, 0, buf[0], buf[1], buf[2], buf[3], buf[4]]);
        let chars = match chunk.len() {
            1 => 2,
            2 => 4,
            3 => 5,
            4 => 7,
            _ => 8,
        };
        for i in 0..8 {
            if i < chars {
                let idx = ((n >> (35 - i * 5)) & 31) as usize;
                out.push(B32[idx] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Go's `base32.StdEncoding.DecodeString`, with Go's error text.
pub fn b32dec(s: &str) -> Result<Vec<u8>, String> {
    let bytes: Vec<u8> = s.bytes().filter(|&b| b != b'\n' && b != b'\r').collect();
    if !bytes.len().is_multiple_of(8) {
        return Err(format!(
            "illegal base32 data at input byte {}",
            bytes.len() / 8 * 8
        ));
    }
    let mut out = vec![];
    for (ci, chunk) in bytes.chunks(8).enumerate() {
        let mut n: u64 = 0;
        let mut count = 0;
        for (i, &b) in chunk.iter().enumerate() {
            if b == b'=' {
                if chunk[i..].iter().any(|&c| c != b'=') || !matches!(i, 2 | 4 | 5 | 7) {
                    return Err(format!("illegal base32 data at input byte {}", ci * 8 + i));
                }
                break;
            }
            let Some(v) = B32.iter().position(|&c| c == b) else {
                return Err(format!("illegal base32 data at input byte {}", ci * 8 + i));
            };
            n |= (v as u64) << (35 - i * 5);
            count += 1;
        }
        let nbytes = match count {
            8 => 5,
            7 => 4,
            5 => 3,
            4 => 2,
            2 => 1,
            _ => 0,
        };
        let be = n.to_be_bytes();
        out.extend_from_slice(&be[3..3 + nbytes]);
    }
    Ok(out)
}

/// Go's `base64.CorruptInputError` text for an undecodable string (shared with `decryptAES`).
pub(crate) fn b64_error(s: &str) -> String {
    // Find the first offending byte like Go does (approximation: first invalid character or
    // the start of the last incomplete quantum).
    let bytes = s.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let ok = b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=';
        if !ok && b != b'\n' && b != b'\r' {
            return format!("illegal base64 data at input byte {i}");
        }
    }
    if let Some(i) = s.find('=') {
        let pad_ok = (i % 4 == 2 && s[i..] == *"==") || (i % 4 == 3 && s[i..] == *"=");
        if !pad_ok {
            return format!(
                "illegal base64 data at input byte {}",
                if i % 4 < 2 { i } else { i + 1 }
            );
        }
    }
    format!("illegal base64 data at input byte {}", bytes.len() / 4 * 4)
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for &x in data {
        a = (a + u32::from(x)) % 65521;
        b = (b + a) % 65521;
    }
    (b << 16) | a
}

/// Registers the encoding and hashing functions.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "b64enc",
        Func::new(&[Str], |a| {
            Ok(Value::str(
                base64::engine::general_purpose::STANDARD.encode(s(&a[0])),
            ))
        }),
    );
    m.insert(
        "b64dec",
        Func::new(&[Str], |a| {
            Ok(Value::str(
                match base64::engine::general_purpose::STANDARD.decode(s(&a[0])) {
                    Ok(d) => String::from_utf8_lossy(&d).into_owned(),
                    Err(_) => b64_error(s(&a[0])),
                },
            ))
        }),
    );
    m.insert(
        "b32enc",
        Func::new(&[Str], |a| Ok(Value::str(b32enc(s(&a[0]).as_bytes())))),
    );
    m.insert(
        "b32dec",
        Func::new(&[Str], |a| {
            Ok(Value::str(match b32dec(s(&a[0])) {
                Ok(d) => String::from_utf8_lossy(&d).into_owned(),
                Err(e) => e,
            }))
        }),
    );
    m.insert(
        "sha1sum",
        Func::new(&[Str], |a| {
            Ok(Value::str(hex(&sha1::Sha1::digest(s(&a[0]).as_bytes()))))
        }),
    );
    m.insert(
        "sha256sum",
        Func::new(&[Str], |a| {
            Ok(Value::str(hex(&sha2::Sha256::digest(s(&a[0]).as_bytes()))))
        }),
    );
    m.insert(
        "sha512sum",
        Func::new(&[Str], |a| {
            Ok(Value::str(hex(&sha2::Sha512::digest(s(&a[0]).as_bytes()))))
        }),
    );
    m.insert(
        "adler32sum",
        Func::new(&[Str], |a| {
            Ok(Value::str(adler32(s(&a[0]).as_bytes()).to_string()))
        }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base32_round_trips() {
        assert_eq!(b32enc(b"foobar"), "MZXW6YTBOI======");
        assert_eq!(b32dec("MZXW6YTBOI======").as_deref(), Ok(&b"foobar"[..]));
        assert_eq!(adler32(b"Wikipedia"), 300286872);
    }
}
