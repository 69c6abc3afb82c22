//! sprig's `semver` and `semverCompare`, following `Masterminds/semver` v3: loose version
//! parsing (`v` prefix, missing minor/patch), and constraints with `=`, `!=`, `>`, `<`, `>=`,
//! `<=`, `~`, `^`, wildcards, hyphen ranges, `,`/space (and) and `||` (or). A version with a
//! prerelease only satisfies constraints that carry a prerelease themselves.

use std::borrow::Cow;
use std::cmp::Ordering;

use crate::funcs::{ArgType::*, Func, FuncMap};
use crate::value::{ObjectKind, UintType, Value};

/// A parsed semantic version (an `*semver.Version` host object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    major: u64,
    minor: u64,
    patch: u64,
    pre: String,
    meta: String,
    original: String,
}

fn ident_ok(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

impl Version {
    /// `semver.NewVersion`.
    pub fn parse(s: &str) -> Result<Version, String> {
        let err = || "Invalid Semantic Version".to_string();
        let body = s.strip_prefix('v').unwrap_or(s);
        let (body, meta) = match body.split_once('+') {
            Some((b, m)) => {
                if !ident_ok(m) {
                    return Err(err());
                }
                (b, m.to_string())
            }
            None => (body, String::new()),
        };
        let (core, pre) = match body.split_once('-') {
            Some((c, p)) => {
                if !ident_ok(p) {
                    return Err(err());
                }
                (c, p.to_string())
            }
            None => (body, String::new()),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.is_empty() || parts.len() > 3 {
            return Err(err());
        }
        let mut nums = [0u64; 3];
        for (i, p) in parts.iter().enumerate() {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err());
            }
            nums[i] = p.parse().map_err(|_| err())?;
        }
        Ok(Version {
            major: nums[0],
            minor: nums[1],
            patch: nums[2],
            pre,
            meta,
            original: s.to_string(),
        })
    }

    fn canonical(&self) -> String {
        let mut s = format!("{}.{}.{}", self.major, self.minor, self.patch);
        if !self.pre.is_empty() {
            s.push('-');
            s.push_str(&self.pre);
        }
        if !self.meta.is_empty() {
            s.push('+');
            s.push_str(&self.meta);
        }
        s
    }

    /// `Version.Compare` (metadata ignored).
    pub fn compare(&self, o: &Version) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(o.major, o.minor, o.patch))
            .then_with(|| compare_pre(&self.pre, &o.pre))
    }
}

fn compare_pre(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    let pa: Vec<&str> = a.split('.').collect();
    let pb: Vec<&str> = b.split('.').collect();
    for (x, y) in pa.iter().zip(&pb) {
        let o = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(i), Ok(j)) => i.cmp(&j),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            _ => x.cmp(y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    pa.len().cmp(&pb.len())
}

impl crate::value::Object for Version {
    fn type_name(&self) -> Cow<'_, str> {
        Cow::Borrowed("*semver.Version")
    }
    fn kind(&self) -> ObjectKind {
        ObjectKind::Pointer
    }
    fn method_arity(&self, name: &str) -> Option<usize> {
        match name {
            "Major" | "Minor" | "Patch" | "Prerelease" | "Metadata" | "Original" | "String" => Some(0),
            "Compare" | "LessThan" | "GreaterThan" | "Equal" => Some(1),
            _ => None,
        }
    }
    fn call_method(&self, name: &str, args: &[Value]) -> Result<Value, String> {
        let other = || -> Result<Version, String> {
            match args.first() {
                Some(Value::Object(o)) => o
                    .string()
                    .map(|s| Version::parse(&s))
                    .unwrap_or_else(|| Err("not a version".into())),
                _ => Err("not a version".into()),
            }
        };
        Ok(match name {
            "Major" => Value::Uint(self.major, UintType::Uint64),
            "Minor" => Value::Uint(self.minor, UintType::Uint64),
            "Patch" => Value::Uint(self.patch, UintType::Uint64),
            "Prerelease" => Value::str(self.pre.as_str()),
            "Metadata" => Value::str(self.meta.as_str()),
            "Original" => Value::str(self.original.as_str()),
            "String" => Value::str(self.canonical()),
            "Compare" => Value::int(match self.compare(&other()?) {
                Ordering::Less => -1,
                Ordering::Equal => 0,
                Ordering::Greater => 1,
            }),
            "LessThan" => Value::Bool(self.compare(&other()?) == Ordering::Less),
            "GreaterThan" => Value::Bool(self.compare(&other()?) == Ordering::Greater),
            "Equal" => Value::Bool(self.compare(&other()?) == Ordering::Equal),
            _ => return Err(format!("no method {name}")),
        })
    }
    fn string(&self) -> Option<String> {
        Some(self.canonical())
    }
}

#[derive(Debug)]
struct Term {
    op: String,
    con: Version,
    major_dirty: bool,
    minor_dirty: bool,
    patch_dirty: bool,
}

fn parse_term(t: &str) -> Option<Term> {
    let t = t.trim();
    let ops = ["!=", ">=", "=>", "<=", "=<", "~>", ">", "<", "=", "~", "^"];
    let (op, rest) = ops
        .iter()
        .find_map(|o| t.strip_prefix(o).map(|r| (*o, r)))
        .unwrap_or(("", t));
    let rest = rest.trim();
    let body = rest.strip_prefix('v').unwrap_or(rest);
    let (core, suffix) = match body.find(['-', '+']) {
        Some(i) => (&body[..i], &body[i..]),
        None => (body, ""),
    };
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let wild = |p: &str| matches!(p, "x" | "X" | "*");
    let mut nums = vec![];
    let mut dirty = [false; 3];
    for (i, d) in dirty.iter_mut().enumerate() {
        match parts.get(i) {
            None => {
                *d = true;
                nums.push("0");
            }
            Some(p) if wild(p) => {
                *d = true;
                nums.push("0");
            }
            Some(p) if p.bytes().all(|b| b.is_ascii_digit()) => nums.push(p),
            Some(_) => return None,
        }
    }
    let con = Version::parse(&format!("{}{}", nums.join("."), suffix)).ok()?;
    let op = match op {
        "=>" => ">=",
        "=<" => "<=",
        "~>" => "~",
        o => o,
    };
    Some(Term {
        op: op.to_string(),
        con,
        major_dirty: dirty[0],
        minor_dirty: dirty[0] || dirty[1],
        patch_dirty: dirty[0] || dirty[1] || dirty[2],
    })
}

fn tilde(v: &Version, c: &Term) -> bool {
    if v.compare(&c.con) == Ordering::Less {
        return false;
    }
    if c.major_dirty {
        return true;
    }
    if c.con.major == 0 && c.con.minor == 0 && c.con.patch == 0 && !c.minor_dirty && !c.patch_dirty {
        return true;
    }
    if v.major != c.con.major {
        return false;
    }
    if v.minor != c.con.minor && !c.minor_dirty {
        return false;
    }
    true
}

fn check(v: &Version, c: &Term) -> bool {
    if !v.pre.is_empty() && c.con.pre.is_empty() {
        return false;
    }
    let dirty = c.patch_dirty;
    let cmp = v.compare(&c.con);
    match c.op.as_str() {
        "" | "=" => {
            if dirty {
                tilde(v, c)
            } else {
                cmp == Ordering::Equal
            }
        }
        "!=" => {
            if dirty {
                !tilde(v, c)
            } else {
                cmp != Ordering::Equal
            }
        }
        ">" => {
            if !dirty {
                return cmp == Ordering::Greater;
            }
            if c.major_dirty {
                return false;
            }
            if v.major != c.con.major {
                return v.major > c.con.major;
            }
            if c.minor_dirty {
                return false;
            }
            v.minor > c.con.minor
        }
        "<" => cmp == Ordering::Less,
        ">=" => cmp != Ordering::Less,
        "<=" => {
            if !dirty {
                return cmp != Ordering::Greater;
            }
            if c.major_dirty {
                return true;
            }
            if v.major != c.con.major {
                return v.major < c.con.major;
            }
            if c.minor_dirty {
                return true;
            }
            v.minor <= c.con.minor
        }
        "~" => tilde(v, c),
        "^" => {
            if cmp == Ordering::Less {
                return false;
            }
            if c.major_dirty {
                return true;
            }
            if c.con.major > 0 || c.minor_dirty {
                return v.major == c.con.major;
            }
            if c.con.minor > 0 || c.patch_dirty {
                return v.major == 0 && v.minor == c.con.minor;
            }
            v.major == 0 && v.minor == 0 && v.patch == c.con.patch
        }
        _ => false,
    }
}

/// `semver.NewConstraint(c).Check(v)`.
pub fn semver_compare(constraint: &str, version: &str) -> Result<bool, String> {
    let improper = || format!("improper constraint: {constraint}");
    let mut groups: Vec<Vec<Term>> = vec![];
    for group in constraint.split("||") {
        let mut terms = vec![];
        let mut tokens: Vec<String> = vec![];
        for part in group.split(',') {
            // Hyphen ranges: "a - b".
            if let Some((a, b)) = part.split_once(" - ") {
                tokens.push(format!(">={}", a.trim()));
                tokens.push(format!("<={}", b.trim()));
                continue;
            }
            // Space-separated terms; an operator may be followed by spaces.
            let mut pending = String::new();
            for w in part.split_whitespace() {
                pending.push_str(w);
                if w.chars().all(|c| "<>=!~^".contains(c)) {
                    continue;
                }
                tokens.push(std::mem::take(&mut pending));
            }
            if !pending.is_empty() {
                tokens.push(pending);
            }
        }
        if tokens.is_empty() {
            return Err(improper());
        }
        for t in tokens {
            terms.push(parse_term(&t).ok_or_else(improper)?);
        }
        groups.push(terms);
    }
    let v = Version::parse(version)?;
    Ok(groups.iter().any(|g| g.iter().all(|t| check(&v, t))))
}

/// Registers `semver` and `semverCompare`.
pub fn register(m: &mut FuncMap) {
    m.insert(
        "semver",
        Func::new(&[Str], |a| {
            Ok(Value::object(Version::parse(a[0].as_str().unwrap_or(""))?))
        }),
    );
    m.insert(
        "semverCompare",
        Func::new(&[Str, Str], |a| {
            semver_compare(a[0].as_str().unwrap_or(""), a[1].as_str().unwrap_or("")).map(Value::Bool)
        }),
    );
}
