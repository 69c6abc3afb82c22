//! sprig's environment and random functions: `env`, `expandenv`, `uuidv4`, `rand*`, `hello`;
//! and `getHostByName`, which always fails with a clear error (no network traffic, by design).

use std::hash::{BuildHasher, Hasher};

use super::util::int_arg as int;
use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::Value;

/// A non-cryptographic random u64 from the standard library's per-process random hasher keys.
fn rand_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    h.finish()
}

fn rand_string(n: i64, alphabet: &[u8]) -> String {
    (0..n.clamp(0, 1 << 20))
        .map(|_| alphabet[(rand_u64() % alphabet.len() as u64) as usize] as char)
        .collect()
}

/// A random RFC 4122 version 4 UUID.
pub fn uuidv4() -> String {
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&rand_u64().to_le_bytes());
    b[8..].copy_from_slice(&rand_u64().to_le_bytes());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn expand_env(s: &str) -> String {
    // os.ExpandEnv: $var and ${var}.
    let mut out = String::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'$' && i + 1 < b.len() {
            let rest = &s[i + 1..];
            if let Some(r) = rest.strip_prefix('{')
                && let Some(end) = r.find('}')
            {
                out.push_str(&std::env::var(&r[..end]).unwrap_or_default());
                i += end + 3;
                continue;
            }
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push_str(&std::env::var(&name).unwrap_or_default());
                i += 1 + name.len();
                continue;
            }
        }
        let c = s[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// Registers the environment, random and stub functions.
pub fn register(m: &mut FuncMap) {
    m.insert("hello", Func::new(&[], |_| Ok(Value::str("Hello!"))));
    m.insert(
        "env",
        Func::new(&[Str], |a| {
            Ok(Value::str(
                std::env::var(a[0].as_str().unwrap_or("")).unwrap_or_default(),
            ))
        }),
    );
    m.insert(
        "expandenv",
        Func::new(&[Str], |a| {
            Ok(Value::str(expand_env(a[0].as_str().unwrap_or(""))))
        }),
    );
    m.insert("uuidv4", Func::new(&[], |_| Ok(Value::str(uuidv4()))));
    m.insert(
        "randAlphaNum",
        Func::new(&[Int], |a| Ok(Value::str(rand_string(int(&a[0]), ALNUM)))),
    );
    m.insert(
        "randAlpha",
        Func::new(&[Int], |a| Ok(Value::str(rand_string(int(&a[0]), &ALNUM[..52])))),
    );
    m.insert(
        "randNumeric",
        Func::new(&[Int], |a| Ok(Value::str(rand_string(int(&a[0]), &ALNUM[52..])))),
    );
    m.insert(
        "randAscii",
        Func::new(&[Int], |a| {
            let printable: Vec<u8> = (32u8..127).collect();
            Ok(Value::str(rand_string(int(&a[0]), &printable)))
        }),
    );
    m.insert(
        "randInt",
        Func::new(&[Int, Int], |a| {
            let (lo, hi) = (int(&a[0]), int(&a[1]));
            if hi <= lo {
                return Err("invalid argument to Intn".into());
            }
            let span = (hi - lo) as u64;
            Ok(Value::int(lo + (rand_u64() % span) as i64))
        }),
    );
    m.insert(
        "shuffle",
        Func::new(&[Str], |a| {
            let mut c: Vec<char> = a[0].as_str().unwrap_or("").chars().collect();
            for i in (1..c.len()).rev() {
                let j = (rand_u64() % (i as u64 + 1)) as usize;
                c.swap(i, j);
            }
            Ok(Value::str(c.into_iter().collect::<std::string::String>()))
        }),
    );
}

/// The error of `getHostByName`, which this crate refuses by design.
pub const GET_HOST_BY_NAME_ERROR: &str = "getHostByName is disabled: gotemplate never resolves \
     host names or sends any other network traffic (templates render offline and reproducibly)";

/// Registers `getHostByName`, which always fails: sprig's version does a DNS lookup, and
/// rendering must not touch the network. It is declared so that templates naming it parse as
/// in Go.
pub fn register_get_host_by_name(m: &mut FuncMap) {
    m.insert(
        "getHostByName",
        Func::new(&[Str], |_| Err(GET_HOST_BY_NAME_ERROR.to_string())),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn get_host_by_name_refuses_the_network() {
        let m = {
            let mut m = FuncMap::new();
            register_get_host_by_name(&mut m);
            m
        };
        assert!(m.contains("getHostByName"));
        assert!(GET_HOST_BY_NAME_ERROR.contains("never resolves host names"));
    }

    #[test]
    fn uuid_has_v4_shape() {
        let u = uuidv4();
        assert_eq!(u.len(), 36);
        assert_eq!(u.as_bytes()[14], b'4');
        assert!(matches!(u.as_bytes()[19], b'8' | b'9' | b'a' | b'b'));
    }

    #[test]
    fn random_strings_have_requested_length() {
        assert_eq!(rand_string(12, ALNUM).len(), 12);
        assert!(rand_string(20, &ALNUM[52..]).bytes().all(|b| b.is_ascii_digit()));
    }
}
