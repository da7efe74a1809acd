//! Output files that are whole or absent: `write_atomic` for one file, `OutputSet` for the set
//! of files one run writes into a directory.
//!
//! A reader (a person, a script, the next `rocelab` run) must never see a half-written file or
//! one run's `summary.json` beside another run's `timeseries.csv`. One file: write a temporary
//! name beside it, fsync, rename over it, fsync the directory. A set: write every file into a
//! temporary directory beside the target, fsync them, then swap the directory in — on Linux with
//! one `renameat2(RENAME_EXCHANGE)`, so a kill at any instant leaves the old set or the new one;
//! elsewhere (or on a file system that refuses the exchange) with two renames, the old set kept
//! under a backup name in between, which the next `OutputSet::create` puts back if a kill came
//! between the two.
//!
//! Two environment variables exist for the kill tests only (`crates/rocelab-cli/tests/
//! conventions.rs`): `ROCELAB_TEST_OUTPUT_PAUSE=before-swap|after-swap|between-renames` makes
//! `commit` stop there (so the test can SIGKILL it), `ROCELAB_TEST_NO_EXCHANGE` forces the
//! two-rename path.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Tells temporary names of one process apart (threads of a sweep write at once).
static SEQ: AtomicU64 = AtomicU64::new(0);

/// A sibling of `path` named `.{file name}.{tag}.{pid}.{n}`: same directory (so the rename stays
/// on one file system), hidden, and unique to this process and call.
fn sibling(path: &Path, tag: &str) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    let n = SEQ.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.{tag}.{}.{n}", std::process::id()))
}

/// The directory holding `path` ("." for a bare name).
fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes a rename durable: the directory entry itself is flushed (ext4 and XFS otherwise may
/// lose it on power failure). Best effort where directories cannot be opened (not Unix).
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        std::fs::File::open(dir)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Writes `bytes` to `path` through a temporary file, fsync and a rename, creating the parent
/// directories: an interrupted run leaves the old file or the new one, never a part.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = parent_of(path);
    std::fs::create_dir_all(dir)?;
    let tmp = sibling(path, "tmp");
    let res = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        sync_dir(dir)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// The set of files one run writes into a directory, swapped in whole by `commit`.
///
/// ```no_run
/// # fn main() -> std::io::Result<()> {
/// let mut set = rocelab_model::atomic::OutputSet::create("rocelab-out".as_ref())?;
/// set.write("summary.json", b"{}\n")?;
/// set.write("flows.csv", b"flow,src,dst\n")?;
/// set.commit()?; // rocelab-out/ now holds exactly these two files
/// # Ok(()) }
/// ```
///
/// Dropped without `commit` (an error half-way), the temporary directory is removed and the
/// old set stays as it was.
///
/// The target directory is replaced only when it is empty, holds a set written this way (its
/// `.rocelab-output` marker lists the files), or holds nothing but names this set writes or
/// `also_replaces` names: never a directory of someone's other files (`--out .`).
#[derive(Debug)]
pub struct OutputSet {
    target: PathBuf,
    staging: PathBuf,
    committed: bool,
    /// Top-level names written, and other names an old set may hold.
    names: std::collections::BTreeSet<String>,
}

/// The marker of a directory written as a set (its content: the files, one a line).
pub const MARKER: &str = ".rocelab-output";

impl OutputSet {
    /// Starts a set for `target` (a directory, created on commit). Puts back an old set that a
    /// kill left under its backup name, and removes temporary directories that killed runs left.
    pub fn create(target: &Path) -> io::Result<OutputSet> {
        // A symbolic link to a directory (`rocelab-out -> /scratch/run7`): the set replaces the
        // directory it points to, and the link stays.
        let resolved;
        let target = if std::fs::symlink_metadata(target).is_ok_and(|m| m.file_type().is_symlink()) {
            resolved = std::fs::canonicalize(target)?;
            resolved.as_path()
        } else {
            target
        };
        let dir = parent_of(target);
        std::fs::create_dir_all(dir)?;
        recover(target)?;
        let staging = sibling(target, "new");
        std::fs::create_dir(&staging)?;
        Ok(OutputSet { target: target.to_path_buf(), staging, committed: false, names: Default::default() })
    }

    /// Names (files or directories) that an older set in the target, written before sets had
    /// a marker, may hold: the target is replaced if it holds only these and the set's own.
    pub fn also_replaces(&mut self, names: &[&str]) {
        self.names.extend(names.iter().map(|n| n.to_string()));
    }

    /// The directory the set is being written into, for writers that need a path.
    pub fn staging(&self) -> &Path {
        &self.staging
    }

    /// Writes `rel` (a path relative to the set, sub-directories allowed) and fsyncs it.
    pub fn write(&mut self, rel: impl AsRef<Path>, bytes: &[u8]) -> io::Result<()> {
        let rel = rel.as_ref();
        if rel.is_absolute() || rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{}: a file of an output set is named relative to it", rel.display()),
            ));
        }
        if let Some(std::path::Component::Normal(first)) = rel.components().next() {
            self.names.insert(first.to_string_lossy().into_owned());
        }
        let path = self.staging.join(rel);
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)?;
        }
        let mut f = std::fs::File::create(&path)?;
        f.write_all(bytes)?;
        f.sync_all()
    }

    /// Swaps the new set in for the old one (if any) and removes the old one.
    pub fn commit(mut self) -> io::Result<()> {
        let mut list = String::new();
        for n in &self.names {
            if self.staging.join(n).exists() {
                list.push_str(n);
                list.push('\n');
            }
        }
        std::fs::write(self.staging.join(MARKER), list)?;
        sync_tree(&self.staging)?;
        test_hook("before-swap");
        let dir = parent_of(&self.target).to_path_buf();
        let target_is_dir = std::fs::symlink_metadata(&self.target).map(|m| m.is_dir()).unwrap_or(false);
        if !target_is_dir {
            if self.target.exists() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!("{} exists and is not a directory", self.target.display()),
                ));
            }
            std::fs::rename(&self.staging, &self.target)?;
            self.committed = true;
            return sync_dir(&dir);
        }
        self.check_replaceable()?;
        if exchange(&self.staging, &self.target)? {
            // The old set now sits at the staging name.
            self.committed = true;
            sync_dir(&dir)?;
            test_hook("after-swap");
            let _ = std::fs::remove_dir_all(&self.staging);
            return Ok(());
        }
        // Two renames: the old set moves to its backup name, then the new one takes its place.
        // A kill in between leaves the target absent and the backup whole; `recover` puts it back.
        let backup = backup_of(&self.target);
        let _ = std::fs::remove_dir_all(&backup);
        std::fs::rename(&self.target, &backup)?;
        sync_dir(&dir)?;
        test_hook("between-renames");
        std::fs::rename(&self.staging, &self.target)?;
        self.committed = true;
        sync_dir(&dir)?;
        test_hook("after-swap");
        let _ = std::fs::remove_dir_all(&backup);
        Ok(())
    }
}

impl OutputSet {
    /// Refuses to swap out a directory that holds anything this set does not account for.
    fn check_replaceable(&self) -> io::Result<()> {
        if self.target.join(MARKER).is_file() {
            return Ok(());
        }
        for e in std::fs::read_dir(&self.target)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            // A sub-directory that is itself a set (a workload's, under `simulate --out`).
            let nested_set = e.path().join(MARKER).is_file();
            if !self.names.contains(&name) && !nested_set {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "{} holds `{name}`, which rocelab did not write there: the run replaces the whole \
                         directory, so give a new or empty one",
                        self.target.display()
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl Drop for OutputSet {
    fn drop(&mut self) {
        if !self.committed {
            let _ = std::fs::remove_dir_all(&self.staging);
        }
    }
}

/// The fixed backup name of `target`'s old set during a two-rename swap (fixed, not per
/// process, so that the next run finds it).
fn backup_of(target: &Path) -> PathBuf {
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "out".into());
    target.with_file_name(format!(".{name}.old"))
}

/// Undoes what a kill left: a backup with no target is the last whole set, put back; a backup
/// beside a target is a leftover; staging directories of dead processes are removed.
fn recover(target: &Path) -> io::Result<()> {
    let backup = backup_of(target);
    if backup.is_dir() {
        if target.exists() {
            let _ = std::fs::remove_dir_all(&backup);
        } else {
            std::fs::rename(&backup, target)?;
        }
    }
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else { return Ok(()) };
    let prefix = format!(".{name}.new.");
    let Ok(entries) = std::fs::read_dir(parent_of(target)) else { return Ok(()) };
    for e in entries.flatten() {
        let file = e.file_name().to_string_lossy().into_owned();
        let Some(pid) =
            file.strip_prefix(&prefix).and_then(|r| r.split('.').next()).and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
    Ok(())
}

/// Whether process `pid` still runs (its staging directory is then its own business).
fn alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new("/proc").join(pid.to_string()).exists()
    } else {
        true
    }
}

/// fsyncs every file under `dir`, then the directories themselves.
fn sync_tree(dir: &Path) -> io::Result<()> {
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        if e.file_type()?.is_dir() {
            sync_tree(&e.path())?;
        }
    }
    sync_dir(dir)
}

/// Exchanges two directory entries in one step; `Ok(false)` where the platform or the file
/// system cannot, so the caller falls back to two renames.
fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
    if std::env::var_os("ROCELAB_TEST_NO_EXCHANGE").is_some() {
        return Ok(false);
    }
    exchange_impl(a, b)
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn exchange_impl(a: &Path, b: &Path) -> io::Result<bool> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    unsafe extern "C" {
        fn renameat2(olddirfd: i32, oldpath: *const i8, newdirfd: i32, newpath: *const i8, flags: u32) -> i32;
    }
    const AT_FDCWD: i32 = -100;
    const RENAME_EXCHANGE: u32 = 2;
    let cstr =
        |p: &Path| CString::new(p.as_os_str().as_bytes()).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e));
    let (ca, cb) = (cstr(a)?, cstr(b)?);
    // SAFETY: two valid NUL-terminated paths; renameat2(2) reads them and nothing else.
    let rc = unsafe { renameat2(AT_FDCWD, ca.as_ptr().cast(), AT_FDCWD, cb.as_ptr().cast(), RENAME_EXCHANGE) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    // EINVAL: the file system has no exchange; ENOSYS: an old kernel.
    match e.raw_os_error() {
        Some(22) | Some(38) => Ok(false),
        _ => Err(e),
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn exchange_impl(_: &Path, _: &Path) -> io::Result<bool> {
    Ok(false)
}

/// For the kill tests only: with `ROCELAB_TEST_OUTPUT_PAUSE=<point>`, the process says so on
/// stderr and sleeps at that point of `commit`, so a test can SIGKILL it there.
fn test_hook(point: &str) {
    if std::env::var("ROCELAB_TEST_OUTPUT_PAUSE").is_ok_and(|p| p == point) {
        eprintln!("rocelab-test: paused at {point}");
        std::thread::sleep(std::time::Duration::from_secs(60));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("rocelab-atomic-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        v.sort();
        v
    }

    fn write_set(out: &Path, files: &[(&str, &str)]) {
        let mut s = OutputSet::create(out).unwrap();
        for (n, t) in files {
            s.write(n, t.as_bytes()).unwrap();
        }
        s.commit().unwrap();
    }

    #[test]
    fn a_second_set_replaces_the_first_whole() {
        let d = scratch("two");
        let out = d.join("out");
        write_set(&out, &[("summary.json", "a"), ("timeseries.csv", "a")]);
        write_set(&out, &[("summary.json", "b"), ("sub/flows.csv", "b")]);
        assert_eq!(listing(&out), [MARKER, "sub", "summary.json"]);
        assert_eq!(std::fs::read_to_string(out.join("summary.json")).unwrap(), "b");
        assert_eq!(std::fs::read_to_string(out.join("sub/flows.csv")).unwrap(), "b");
        // Nothing left beside it: no staging or backup directory.
        assert_eq!(listing(&d), ["out"]);
    }

    #[test]
    fn a_set_dropped_without_commit_leaves_the_old_one() {
        let d = scratch("drop");
        let out = d.join("out");
        write_set(&out, &[("summary.json", "a")]);
        {
            let mut s = OutputSet::create(&out).unwrap();
            s.write("summary.json", b"half").unwrap();
        }
        assert_eq!(std::fs::read_to_string(out.join("summary.json")).unwrap(), "a");
        assert_eq!(listing(&d), ["out"]);
    }

    #[test]
    fn a_backup_left_by_a_kill_between_renames_is_put_back() {
        let d = scratch("recover");
        let out = d.join("out");
        write_set(&out, &[("summary.json", "a")]);
        // What a kill between the two renames leaves: the old set under its backup name.
        std::fs::rename(&out, backup_of(&out)).unwrap();
        std::fs::create_dir(d.join(".out.new.4000000000.0")).unwrap(); // a dead process's staging
        let s = OutputSet::create(&out).unwrap();
        assert_eq!(std::fs::read_to_string(out.join("summary.json")).unwrap(), "a");
        drop(s);
        assert_eq!(listing(&d), ["out"]);
    }

    #[test]
    fn a_directory_of_other_files_is_never_replaced() {
        let d = scratch("foreign");
        std::fs::write(d.join("config.txt"), "mine").unwrap();
        let mut s = OutputSet::create(&d).unwrap();
        s.write("summary.json", b"x").unwrap();
        let e = s.commit().unwrap_err();
        assert!(e.to_string().contains("`config.txt`, which rocelab did not write"), "{e}");
        assert_eq!(listing(&d), ["config.txt"]);
        // An old set without a marker, holding only names the new one accounts for, is replaced.
        let old = d.join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::write(old.join("timeseries.csv"), "old").unwrap();
        let mut s = OutputSet::create(&old).unwrap();
        s.also_replaces(&["timeseries.csv"]);
        s.write("summary.json", b"new").unwrap();
        s.commit().unwrap();
        assert_eq!(listing(&old), [MARKER, "summary.json"]);
        // A directory holding sets of its own (one per workload) is a set's to replace too.
        write_set(&old.join("all-reduce"), &[("collective.txt", "x")]);
        std::fs::remove_file(old.join(MARKER)).unwrap(); // as an older rocelab left it
        write_set(&old, &[("summary.json", "newer")]);
        assert_eq!(listing(&old), [MARKER, "summary.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_to_a_directory_stays_a_link_to_the_new_set() {
        let d = scratch("link");
        write_set(&d.join("real"), &[("a.txt", "1")]);
        std::os::unix::fs::symlink(d.join("real"), d.join("out")).unwrap();
        write_set(&d.join("out"), &[("b.txt", "2")]);
        assert!(std::fs::symlink_metadata(d.join("out")).unwrap().file_type().is_symlink());
        assert_eq!(listing(&d.join("real")), [MARKER, "b.txt"]);
        assert_eq!(listing(&d), ["out", "real"]);
    }

    #[test]
    fn names_escaping_the_set_are_refused() {
        let d = scratch("escape");
        let mut s = OutputSet::create(&d.join("out")).unwrap();
        assert!(s.write("../x", b"").is_err());
        assert!(s.write("/tmp/x", b"").is_err());
    }

    #[test]
    fn write_atomic_replaces_and_leaves_no_temporary() {
        let d = scratch("one");
        let p = d.join("deep/dir/f.txt");
        write_atomic(&p, b"1").unwrap();
        write_atomic(&p, b"22").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"22");
        assert_eq!(listing(&d.join("deep/dir")), ["f.txt"]);
    }
}
