//! The self-signed CA kept in files (`serve --write-ca FILE`): the certificate in `FILE`, its
//! private key in `FILE.key`.
//!
//! **Writing** never opens an existing path: each file is written to a new temporary file in
//! the same directory (`tempfile`: an unpredictable name, created exclusively, so a planted
//! file or symlink is never opened), with its mode set at creation (`0600` for the key, `0644`
//! for the certificate, less the umask), synced, then renamed over the final name — a symlink
//! there is replaced, never written through.
//!
//! **Reading** an existing CA for reuse trusts the key only if it is a regular file (not a
//! symlink), owned by the user the injector runs as, readable by that user alone, and the
//! public half of the certificate's key; anything else is refused with an error naming the file
//! and the fix, and nothing is overwritten. A certificate that expires within the reuse margin
//! is replaced by a new CA.

use std::fs::{File, Permissions};
use std::io::{self, Read as _, Write as _};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject as _;

/// Mode of the key file.
const KEY_MODE: u32 = 0o600;
/// Mode of the certificate file (public).
const CERT_MODE: u32 = 0o644;

/// Why the CA files cannot be used or written.
#[derive(Debug, thiserror::Error)]
pub enum CaFileError {
    /// A read or write failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The key is a symbolic link.
    #[error(
        "{0}: is a symbolic link; the CA key is only read from a regular file. Fix: replace it with the key file itself, or delete it and the certificate to generate a new CA"
    )]
    KeySymlink(PathBuf),
    /// The key is not a regular file.
    #[error("{0}: not a regular file")]
    KeyNotAFile(PathBuf),
    /// The key is owned by someone else.
    #[error(
        "{path}: owned by uid {owner}, not by the injector's user (uid {us}): someone else may have written or read it. Fix: delete it and the certificate to generate a new CA, or chown it"
    )]
    KeyOwner {
        /// The key file.
        path: PathBuf,
        /// Its owner.
        owner: u32,
        /// The injector's effective uid.
        us: u32,
    },
    /// The key can be read (or written) by the group or others.
    #[error(
        "{path}: mode {mode:04o} lets others than its owner read or change the CA key. Fix: chmod 600 {path}, or delete it and the certificate to generate a new CA (anyone who could read it may have a copy)"
    )]
    KeyMode {
        /// The key file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The certificate does not parse.
    #[error(
        "{path}: not a PEM certificate ({why}). Fix: point --write-ca at the CA certificate, or delete {path} and its .key to generate a new CA"
    )]
    BadCertificate {
        /// The certificate file.
        path: PathBuf,
        /// The parser's complaint.
        why: String,
    },
    /// The key does not parse.
    #[error("{path}: not a PEM private key ({why}). Fix: delete it and the certificate to generate a new CA")]
    BadKey {
        /// The key file.
        path: PathBuf,
        /// The parser's complaint.
        why: String,
    },
    /// The key is not the certificate's.
    #[error(
        "{key}: not the private key of the certificate {cert}. Fix: put the matching pair back, or delete both files to generate a new CA"
    )]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
}

/// A CA read from its files.
#[derive(Clone)]
pub struct StoredCa {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PEM.
    pub key_pem: String,
    /// The certificate's notAfter, Unix seconds.
    pub not_after: i64,
}

impl std::fmt::Debug for StoredCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredCa")
            .field("not_after", &self.not_after)
            .finish_non_exhaustive()
    }
}

/// Where the key of the CA certificate at `cert` is kept: `cert` with `.key` appended.
pub fn key_path(cert: &Path) -> PathBuf {
    let mut name = cert.as_os_str().to_owned();
    name.push(".key");
    PathBuf::from(name)
}

/// The CA at `cert` (and its key) when it is valid until `reuse_until` (Unix seconds) and its
/// key is safe to use; `None` when there is nothing to reuse (no certificate, no key, or a
/// certificate that expires before `reuse_until`), so a new CA is to be written.
pub fn read(cert: &Path, reuse_until: i64) -> Result<Option<StoredCa>, CaFileError> {
    let io_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CaFileError::Io { path, source }
    };
    let cert_pem = match std::fs::read_to_string(cert) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_error(cert)(e)),
    };
    let bad_cert = |why: String| CaFileError::BadCertificate {
        path: cert.to_path_buf(),
        why,
    };
    let der = CertificateDer::from_pem_slice(cert_pem.as_bytes()).map_err(|e| bad_cert(e.to_string()))?;
    let (_, parsed) =
        x509_parser::parse_x509_certificate(der.as_ref()).map_err(|e| bad_cert(e.to_string()))?;
    let not_after = parsed.validity().not_after.timestamp();
    if not_after < reuse_until {
        tracing::warn!(ca_file = %cert.display(), "the CA expires within the reuse margin: writing a new one");
        return Ok(None);
    }
    let key = key_path(cert);
    let Some(key_pem) = read_private_key(&key)? else {
        tracing::warn!(ca_file = %cert.display(), key_file = %key.display(),
            "the CA certificate has no key beside it: writing a new CA");
        return Ok(None);
    };
    let pair = rcgen::KeyPair::from_pem(&key_pem).map_err(|e| CaFileError::BadKey {
        path: key.clone(),
        why: e.to_string(),
    })?;
    if pair.public_key_raw() != parsed.public_key().subject_public_key.data.as_ref() {
        return Err(CaFileError::Mismatch {
            cert: cert.to_path_buf(),
            key,
        });
    }
    Ok(Some(StoredCa {
        cert_pem,
        key_pem,
        not_after,
    }))
}

/// Reads a private key that only its owner — the injector's user — can read; `None` when
/// there is no file.
fn read_private_key(path: &Path) -> Result<Option<String>, CaFileError> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(CaFileError::KeySymlink(path.to_path_buf())),
        Err(e) => {
            return Err(CaFileError::Io {
                path: path.to_path_buf(),
                source: e.into(),
            });
        }
    };
    let mut file = File::from(fd);
    let io_error = |source| CaFileError::Io {
        path: path.to_path_buf(),
        source,
    };
    // The checks are of the file opened, not of the path (which could change in between).
    let metadata = file.metadata().map_err(io_error)?;
    if !metadata.is_file() {
        return Err(CaFileError::KeyNotAFile(path.to_path_buf()));
    }
    let us = rustix::process::geteuid().as_raw();
    if metadata.uid() != us {
        return Err(CaFileError::KeyOwner {
            path: path.to_path_buf(),
            owner: metadata.uid(),
            us,
        });
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(CaFileError::KeyMode {
            path: path.to_path_buf(),
            mode,
        });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(io_error)?;
    Ok(Some(text))
}

/// Writes the CA: `cert_pem` to `cert` and `key_pem` to its [key path](key_path), each
/// through a new temporary file renamed into place (both are fully written before either is
/// renamed).
pub fn write(cert: &Path, cert_pem: &str, key_pem: &str) -> Result<(), CaFileError> {
    let key = key_path(cert);
    let key_file = staged(&key, key_pem.as_bytes(), KEY_MODE)?;
    let cert_file = staged(cert, cert_pem.as_bytes(), CERT_MODE)?;
    persist(key_file, &key)?;
    persist(cert_file, cert)?;
    if let Some(dir) = directory_of(cert).and_then(|d| File::open(d).ok()) {
        // Make the renames durable; a filesystem that cannot sync a directory loses nothing.
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The directory a file at `path` lives in (`.` for a bare name).
fn directory_of(path: &Path) -> Option<&Path> {
    match path.parent() {
        Some(dir) if dir.as_os_str().is_empty() => Some(Path::new(".")),
        other => other,
    }
}

/// A new temporary file beside `target` holding `contents`, created with `mode`, synced.
fn staged(target: &Path, contents: &[u8], mode: u32) -> Result<tempfile::NamedTempFile, CaFileError> {
    let io_error = |source| CaFileError::Io {
        path: target.to_path_buf(),
        source,
    };
    let dir = directory_of(target).ok_or_else(|| io_error(io::Error::other("has no directory")))?;
    let prefix = format!(
        ".{}.",
        target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    );
    let mut file = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(dir)
        .map_err(io_error)?;
    file.write_all(contents).map_err(io_error)?;
    file.as_file().sync_all().map_err(io_error)?;
    Ok(file)
}

fn persist(file: tempfile::NamedTempFile, target: &Path) -> Result<(), CaFileError> {
    file.persist(target).map(drop).map_err(|e| CaFileError::Io {
        path: target.to_path_buf(),
        source: e.error,
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn ca() -> injector_pki::CaMaterial {
        let now = time::OffsetDateTime::now_utc();
        injector_pki::generate_ca("test CA", now, now + time::Duration::days(365)).expect("a CA")
    }

    fn mode(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).expect("exists").mode() & 0o7777
    }

    fn set_mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, Permissions::from_mode(mode)).expect("chmod");
    }

    #[test]
    fn a_written_ca_is_read_back_with_its_key_owner_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cert = dir.path().join("ca.pem");
        let material = ca();
        write(&cert, &material.cert_pem, &material.key_pem).expect("written");
        assert_eq!(mode(&key_path(&cert)), 0o600);
        assert_eq!(mode(&cert) & 0o600, 0o600);
        let stored = read(&cert, NOW).expect("readable").expect("reused");
        assert_eq!(stored.cert_pem, material.cert_pem);
        assert_eq!(stored.key_pem, material.key_pem);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("listed")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
        assert!(
            read(&dir.path().join("none.pem"), NOW)
                .expect("nothing")
                .is_none()
        );
    }

    #[test]
    fn planted_temporary_files_and_symlinks_are_never_written_through() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cert = dir.path().join("ca.pem");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "the victim's content").expect("victim");
        set_mode(&victim, 0o640);
        // The names the injector used to write through, planted: a 0644 file and a symlink.
        let planted = dir.path().join("ca.pem.tmp");
        std::fs::write(&planted, "").expect("planted");
        set_mode(&planted, 0o644);
        symlink(&victim, dir.path().join("ca.pem.key.tmp")).expect("symlink");
        // And a symlink at the key's own name.
        symlink(&victim, key_path(&cert)).expect("symlink");
        let material = ca();
        write(&cert, &material.cert_pem, &material.key_pem).expect("written");
        assert_eq!(
            std::fs::read_to_string(&victim).expect("victim"),
            "the victim's content"
        );
        assert_eq!(mode(&victim), 0o640, "the victim's mode untouched");
        let key = key_path(&cert);
        assert!(
            std::fs::symlink_metadata(&key).expect("key").is_file(),
            "the link was replaced"
        );
        assert_eq!(mode(&key), 0o600);
        assert_eq!(std::fs::read_to_string(&key).expect("key"), material.key_pem);
        assert_eq!(std::fs::read_to_string(&planted).expect("planted"), "");
    }

    #[test]
    fn a_key_others_can_read_is_refused_naming_the_file_and_the_fix() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cert = dir.path().join("ca.pem");
        let material = ca();
        write(&cert, &material.cert_pem, &material.key_pem).expect("written");
        let key = key_path(&cert);
        for bad in [0o644, 0o640, 0o604, 0o620] {
            set_mode(&key, bad);
            let error = read(&cert, NOW).expect_err("refused").to_string();
            assert!(error.contains(&key.display().to_string()), "{error}");
            assert!(error.contains(&format!("mode {bad:04o}")), "{error}");
            assert!(error.contains("chmod 600"), "{error}");
        }
        set_mode(&key, 0o400);
        assert!(read(&cert, NOW).expect("owner-only").is_some());
    }

    #[test]
    fn a_key_that_is_a_symlink_or_someone_elses_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cert = dir.path().join("ca.pem");
        let material = ca();
        write(&cert, &material.cert_pem, &material.key_pem).expect("written");
        let key = key_path(&cert);
        let real = dir.path().join("real.key");
        std::fs::rename(&key, &real).expect("moved");
        symlink(&real, &key).expect("symlink");
        assert!(matches!(read(&cert, NOW), Err(CaFileError::KeySymlink(_))));
        std::fs::remove_file(&key).expect("unlinked");
        std::fs::rename(&real, &key).expect("moved back");
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::chown(&key, Some(65534), None).expect("chown");
            let error = read(&cert, NOW).expect_err("refused");
            assert!(
                matches!(
                    error,
                    CaFileError::KeyOwner {
                        owner: 65534,
                        us: 0,
                        ..
                    }
                ),
                "{error}"
            );
        }
    }

    #[test]
    fn a_key_that_is_not_the_certificates_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cert = dir.path().join("ca.pem");
        let (a, b) = (ca(), ca());
        write(&cert, &a.cert_pem, &b.key_pem).expect("written");
        let error = read(&cert, NOW).expect_err("refused").to_string();
        assert!(
            error.contains("not the private key of the certificate"),
            "{error}"
        );
        assert!(error.contains(&cert.display().to_string()), "{error}");
    }

    #[test]
    fn an_expiring_or_keyless_ca_is_replaced_and_a_garbled_one_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cert = dir.path().join("ca.pem");
        let material = ca();
        write(&cert, &material.cert_pem, &material.key_pem).expect("written");
        let far_future = NOW * 2;
        assert!(
            read(&cert, far_future).expect("fine").is_none(),
            "expires too soon: replace"
        );
        std::fs::remove_file(key_path(&cert)).expect("removed");
        assert!(read(&cert, NOW).expect("fine").is_none(), "no key: replace");
        std::fs::write(&cert, "garbage").expect("garbled");
        let error = read(&cert, NOW).expect_err("refused").to_string();
        assert!(error.contains("not a PEM certificate"), "{error}");
    }
}
