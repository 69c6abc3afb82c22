//! Sprig v3 (v3.3.0) functions, one module per family, as Go's `sprig.TxtFuncMap()` provides
//! them. Behaviour follows sprig's source, including its quirks (`default` treats `0` and
//! `false` as empty, `trunc` with a negative length keeps the tail, `b64dec` returns the error
//! text as its result, non-`must` list functions fail on non-lists).
//!
//! Gaps, by design: `getHostByName` always fails (it would do a DNS lookup, and rendering
//! never touches the network); `genPrivateKey "dsa"` reports that DSA (deprecated in Go) is not
//! supported; `keys` and `values` are sorted (Go's order is random); `randInt`, `shuffle`,
//! `uuidv4` and `rand*` use a non-cryptographic source (`randBytes`, keys, salts, serials and
//! IVs use the OS's secure one); `snakecase`, `kebabcase` and `camelcase` approximate
//! `huandu/xstrings` (identical on plain identifiers, they differ on punctuation and symbols);
//! `initials`, `abbrevboth` and `wrap` work on characters where Go's libraries sometimes work on
//! bytes.

mod certs;
mod conversion;
mod crypto;
mod date;
mod defaults;
mod dicts;
mod encoding;
mod jsonerr;
mod lists;
mod misc;
mod paths;
mod regex;
pub mod semver;
mod strings;
mod url;
pub mod util;

use crate::funcs::FuncMap;

/// All sprig functions (Go's `sprig.TxtFuncMap()`).
pub fn funcs() -> FuncMap {
    let mut m = FuncMap::new();
    misc::register_get_host_by_name(&mut m);
    strings::register(&mut m);
    lists::register(&mut m);
    dicts::register(&mut m);
    defaults::register(&mut m);
    conversion::register(&mut m);
    encoding::register(&mut m);
    crypto::register(&mut m);
    certs::register(&mut m);
    date::register(&mut m);
    paths::register(&mut m);
    regex::register(&mut m);
    semver::register(&mut m);
    url::register(&mut m);
    misc::register(&mut m);
    m
}

#[cfg(test)]
mod tests {
    /// Every name in sprig v3.3.0's `genericMap`.
    const SPRIG_NAMES: &str = "hello ago date date_in_zone date_modify dateInZone dateModify duration durationRound htmlDate htmlDateInZone must_date_modify mustDateModify mustToDate now toDate unixEpoch abbrev abbrevboth trunc trim upper lower title untitle substr repeat trimall trimAll trimSuffix trimPrefix nospace initials randAlphaNum randAlpha randAscii randNumeric swapcase shuffle snakecase camelcase kebabcase wrap wrapWith contains hasPrefix hasSuffix quote squote cat indent nindent replace plural sha1sum sha256sum sha512sum adler32sum toString atoi int64 int float64 seq toDecimal split splitList splitn toStrings until untilStep add1 add sub div mod mul randInt add1f addf subf divf mulf biggest max min maxf minf ceil floor round join sortAlpha default empty coalesce all any compact mustCompact fromJson toJson toPrettyJson toRawJson mustFromJson mustToJson mustToPrettyJson mustToRawJson ternary deepCopy mustDeepCopy typeOf typeIs typeIsLike kindOf kindIs deepEqual env expandenv getHostByName base dir clean ext isAbs osBase osClean osDir osExt osIsAbs b64enc b64dec b32enc b32dec tuple list dict get set unset hasKey pluck keys pick omit merge mergeOverwrite mustMerge mustMergeOverwrite values append push mustAppend mustPush prepend mustPrepend first mustFirst rest mustRest last mustLast initial mustInitial reverse mustReverse uniq mustUniq without mustWithout has mustHas slice mustSlice concat dig chunk mustChunk bcrypt htpasswd genPrivateKey derivePassword buildCustomCert genCA genCAWithKey genSelfSignedCert genSelfSignedCertWithKey genSignedCert genSignedCertWithKey encryptAES decryptAES randBytes uuidv4 semver semverCompare fail regexMatch mustRegexMatch regexFindAll mustRegexFindAll regexFind mustRegexFind regexReplaceAll mustRegexReplaceAll regexReplaceAllLiteral mustRegexReplaceAllLiteral regexSplit mustRegexSplit regexQuoteMeta urlParse urlJoin";

    #[test]
    fn every_sprig_name_is_defined() {
        let m = super::funcs();
        for name in SPRIG_NAMES.split_whitespace() {
            assert!(m.contains(name), "{name} missing");
        }
    }
}
