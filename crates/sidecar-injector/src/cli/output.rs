//! Writing `inject`'s result (`-o FILE`) without ever harming what the user already had.
//!
//! The output is produced document by document and written as it comes, but it is put in place
//! only once the whole stream has been injected ([`Output::commit`]); on any error before that,
//! dropping the [`Output`] leaves the destination exactly as it was.
//!
//! * A regular file (or a path that does not exist yet) is replaced atomically: the result goes
//!   to a temporary file in the same directory, created by `tempfile` with an unpredictable name
//!   and `O_EXCL` (so a planted file or symlink is never opened), synced, given the target's
//!   permission bits and owner, then renamed over the target. A new file gets the permissions
//!   the umask allows (`0666 & !umask`), as the shell's `>` would give it.
//! * A symlink is followed: its final target is replaced as above and the link itself is kept.
//! * Anything else — a FIFO, a character device, a socket, `/dev/stdout`, `-` (standard output)
//!   — cannot be replaced and is written in place: the result is spooled to an anonymous
//!   temporary file (or memory, when no temporary directory is writable) and copied to the
//!   destination at the end, so a failing stream still writes nothing there.

use std::{
    fs::{self, File, OpenOptions, Permissions},
    io::{self, BufWriter, Seek, Write},
    os::unix::fs::{MetadataExt, PermissionsExt},
    path::{Path, PathBuf},
};

use anyhow::{Context, Result, bail};
use tempfile::NamedTempFile;

/// Symlinks followed before giving up (Linux's own limit is 40).
const MAX_SYMLINK_HOPS: usize = 40;

/// Where the output goes, once [`Output::commit`] is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Standard output (`-o -`, or no `-o`).
    Stdout,
    /// A regular file (existing or new) at this path, symlinks resolved, replaced by renaming.
    Replace {
        /// The file the rename replaces (a symlink's final target).
        path: PathBuf,
        /// The existing file's mode and owner, kept on the new file; `None` for a new file.
        existing: Option<(u32, u32, u32)>,
    },
    /// A FIFO, device or other non-regular file, opened and written directly at the end.
    InPlace(PathBuf),
}

impl Target {
    /// Decides how `path` is written: `-` is standard output; symlinks are followed.
    pub fn of(path: &Path) -> Result<Self> {
        if path.as_os_str() == "-" {
            return Ok(Self::Stdout);
        }
        let (resolved, through_special) = resolve_symlinks(path)?;
        if through_special {
            // `/proc/self/fd/1` may "link" to `pipe:[…]`: only the kernel can follow it.
            return Ok(Self::InPlace(path.to_path_buf()));
        }
        match fs::metadata(&resolved) {
            Ok(metadata) if metadata.is_dir() => bail!("{}: is a directory", path.display()),
            Ok(metadata) if metadata.is_file() => Ok(Self::Replace {
                path: resolved,
                existing: Some((
                    metadata.permissions().mode() & 0o7777,
                    metadata.uid(),
                    metadata.gid(),
                )),
            }),
            Ok(_) => Ok(Self::InPlace(path.to_path_buf())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Self::Replace {
                path: resolved,
                existing: None,
            }),
            Err(e) => Err(e).with_context(|| format!("cannot inspect {}", path.display())),
        }
    }
}

/// `/dev/stdout` and friends resolve (through `/proc/self/fd/N`) to whatever the descriptor is,
/// possibly a regular file the shell opened: renaming over it would detach the shell's file, so
/// these are always written in place.
fn is_special_tree(path: &Path) -> bool {
    path.starts_with("/dev") || path.starts_with("/proc")
}

/// Follows symlinks from `path` to the path that is not one (which may not exist: a dangling
/// link's target is where the new file is created), and says whether the way passed through
/// `/dev` or `/proc`.
fn resolve_symlinks(path: &Path) -> Result<(PathBuf, bool)> {
    let mut current = path.to_path_buf();
    let mut through_special = false;
    for _ in 0..MAX_SYMLINK_HOPS {
        through_special |= is_special_tree(&current);
        match fs::symlink_metadata(&current) {
            Ok(metadata) if metadata.file_type().is_symlink() => {
                let link = fs::read_link(&current)
                    .with_context(|| format!("cannot read the symlink {}", current.display()))?;
                current = match current.parent() {
                    Some(parent) if link.is_relative() => parent.join(link),
                    _ => link,
                };
            }
            _ => return Ok((current, through_special)),
        }
    }
    bail!(
        "{}: more than {MAX_SYMLINK_HOPS} levels of symbolic links",
        path.display()
    )
}

/// An output being written; nothing reaches the destination until [`Output::commit`].
pub struct Output {
    target: Target,
    /// The user's name for the destination, for messages.
    name: String,
    sink: Sink,
}

enum Sink {
    /// The temporary file that replaces the target.
    Temporary(BufWriter<NamedTempFile>),
    /// An anonymous spool, copied to the destination at the end.
    Spool(BufWriter<File>),
    /// Memory, when no temporary file could be made for a spool.
    Memory(Vec<u8>),
}

impl Output {
    /// Prepares to write to `path` (`None` or `-`: standard output).
    pub fn open(path: Option<&Path>) -> Result<Self> {
        let (target, name) = match path {
            None => (Target::Stdout, "standard output".to_owned()),
            Some(path) => (Target::of(path)?, path.display().to_string()),
        };
        let sink = match &target {
            Target::Replace { path, existing } => Sink::Temporary(BufWriter::new(temporary_beside(
                path,
                existing.map(|(mode, _, _)| mode),
            )?)),
            Target::Stdout | Target::InPlace(_) => match tempfile::tempfile() {
                Ok(file) => Sink::Spool(BufWriter::new(file)),
                Err(_) => Sink::Memory(Vec::new()),
            },
        };
        Ok(Self { target, name, sink })
    }

    /// Appends to the output.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        let written = match &mut self.sink {
            Sink::Temporary(writer) => writer.write_all(bytes),
            Sink::Spool(writer) => writer.write_all(bytes),
            Sink::Memory(buffer) => {
                buffer.extend_from_slice(bytes);
                Ok(())
            }
        };
        written.with_context(|| format!("cannot write the output for {}", self.name))
    }

    /// Puts the output in place: renames the temporary file over the target, or copies the spool
    /// to standard output or the non-regular file.
    pub fn commit(self) -> Result<()> {
        let name = self.name;
        match (self.sink, self.target) {
            (Sink::Temporary(writer), Target::Replace { path, existing }) => {
                let temporary = writer
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("cannot write the output for {name}"))?;
                if let Some((mode, uid, gid)) = existing {
                    keep_mode_and_owner(temporary.as_file(), mode, uid, gid)
                        .with_context(|| format!("cannot keep the permissions of {name}"))?;
                }
                temporary
                    .as_file()
                    .sync_all()
                    .with_context(|| format!("cannot write the output for {name}"))?;
                temporary
                    .persist(&path)
                    .map_err(|e| e.error)
                    .with_context(|| format!("cannot replace {}", path.display()))?;
                sync_directory(&path);
                Ok(())
            }
            (sink, target) => {
                let mut destination: Box<dyn Write> = match &target {
                    Target::InPlace(path) => Box::new(
                        OpenOptions::new()
                            .write(true)
                            .open(path)
                            .with_context(|| format!("cannot open {name} for writing"))?,
                    ),
                    _ => Box::new(io::stdout().lock()),
                };
                let copied = match sink {
                    Sink::Spool(writer) => {
                        let mut file = writer.into_inner().map_err(|e| e.into_error())?;
                        file.rewind()?;
                        io::copy(&mut file, &mut destination).map(|_| ())
                    }
                    Sink::Memory(buffer) => destination.write_all(&buffer),
                    Sink::Temporary(_) => Ok(()),
                };
                copied
                    .and_then(|()| destination.flush())
                    .with_context(|| format!("cannot write to {name}"))
            }
        }
    }
}

/// A new exclusive temporary file in `target`'s directory: `0600` until it is complete when it
/// replaces an existing file (whose mode it then takes), else the umask default.
fn temporary_beside(target: &Path, existing_mode: Option<u32>) -> Result<NamedTempFile> {
    let directory = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "output".to_owned());
    let mode = if existing_mode.is_some() { 0o600 } else { 0o666 };
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(directory)
        .with_context(|| format!("cannot create a temporary file in {}", directory.display()))
}

/// Gives the new file the replaced one's mode and, where allowed, its owner and group (an
/// unprivileged user cannot give a file away; the file is then theirs, as with any editor).
fn keep_mode_and_owner(file: &File, mode: u32, uid: u32, gid: u32) -> io::Result<()> {
    let metadata = file.metadata()?;
    if metadata.uid() != uid || metadata.gid() != gid {
        match std::os::unix::fs::fchown(file, Some(uid), Some(gid)) {
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {}
            other => other?,
        }
    }
    file.set_permissions(Permissions::from_mode(mode))
}

/// Makes the rename durable; a directory that cannot be synced only loses durability.
fn sync_directory(path: &Path) {
    if let Some(directory) = path.parent().filter(|p| !p.as_os_str().is_empty())
        && let Ok(handle) = File::open(directory)
    {
        let _ = handle.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    #[test]
    fn targets_are_told_apart() {
        let dir = tempfile::tempdir().expect("a directory");
        let file = dir.path().join("file.yaml");
        fs::write(&file, "x").expect("written");
        fs::set_permissions(&file, Permissions::from_mode(0o640)).expect("chmod");
        assert_eq!(Target::of(Path::new("-")).expect("stdout"), Target::Stdout);
        let target = Target::of(&file).expect("a file");
        assert!(
            matches!(&target, Target::Replace { path, existing: Some((0o640, _, _)) } if *path == file),
            "{target:?}"
        );
        let link = dir.path().join("link");
        symlink("file.yaml", &link).expect("symlink");
        let chain = dir.path().join("chain");
        symlink(&link, &chain).expect("symlink");
        assert!(matches!(Target::of(&chain).expect("a link"), Target::Replace { path, .. } if path == file));
        let new = dir.path().join("new.yaml");
        assert_eq!(
            Target::of(&new).expect("a new file"),
            Target::Replace {
                path: new,
                existing: None
            }
        );
        assert_eq!(
            Target::of(Path::new("/dev/null")).expect("a device"),
            Target::InPlace("/dev/null".into())
        );
        let looped = dir.path().join("loop");
        symlink("loop", &looped).expect("symlink");
        let error = Target::of(&looped).expect_err("a loop").to_string();
        assert!(error.contains("levels of symbolic links"), "{error}");
    }

    #[test]
    fn temporary_files_are_new_unpredictable_and_beside_the_target() {
        let dir = tempfile::tempdir().expect("a directory");
        let target = dir.path().join("out.yaml");
        let first = temporary_beside(&target, Some(0o644)).expect("created");
        let second = temporary_beside(&target, Some(0o644)).expect("created");
        assert_ne!(first.path(), second.path());
        for temporary in [&first, &second] {
            let name = temporary
                .path()
                .file_name()
                .expect("a name")
                .to_string_lossy()
                .into_owned();
            assert!(name.starts_with(".out.yaml.") && name.ends_with(".tmp"), "{name}");
            assert!(!name.contains(&std::process::id().to_string()), "{name}");
            assert_eq!(temporary.path().parent(), Some(dir.path()));
            let metadata = fs::symlink_metadata(temporary.path()).expect("exists");
            assert!(metadata.is_file());
            assert_eq!(
                metadata.permissions().mode() & 0o777,
                0o600,
                "private until complete"
            );
        }
    }

    #[test]
    fn nothing_reaches_the_target_before_commit() {
        let dir = tempfile::tempdir().expect("a directory");
        let target = dir.path().join("out.yaml");
        fs::write(&target, "old").expect("written");
        let mut output = Output::open(Some(&target)).expect("opened");
        output.write_all(b"new").expect("written");
        assert_eq!(fs::read_to_string(&target).expect("read"), "old");
        drop(output);
        assert_eq!(fs::read_to_string(&target).expect("read"), "old");
        assert_eq!(
            fs::read_dir(dir.path()).expect("listed").count(),
            1,
            "the temporary file is gone"
        );
        let mut output = Output::open(Some(&target)).expect("opened");
        output.write_all(b"new").expect("written");
        output.commit().expect("committed");
        assert_eq!(fs::read_to_string(&target).expect("read"), "new");
    }
}
