//! Running the host's tools (`ethtool`, `mlnx_qos`, `rdma`, `nvidia-smi`): argument vectors, never a
//! shell; a timeout that kills a hung tool; output capped at [`MAX_TEXT_BYTES`].
//!
//! A tool never outlives rocelab: on Linux each runs in its own process group with
//! `PR_SET_PDEATHSIG` = `SIGKILL` (the kernel kills it when the thread that started it ends,
//! which is also what happens to every thread when the exporter gets `SIGTERM`), and a timeout
//! kills the whole group, so a tool's own children go too.

use crate::util::MAX_TEXT_BYTES;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("cannot start {0}: {1}")]
    Spawn(String, std::io::Error),
    #[error("{0} timed out after {1:?} and was killed")]
    Timeout(String, Duration),
    #[error("{0} exited with {1}: {2}")]
    Failed(String, String, String),
    #[error("{0} printed more than {MAX_TEXT_BYTES} bytes")]
    TooLarge(String),
}

/// The tools `collect` and the exporter use, resolved once; `None` = not installed, or not
/// to be run when `disabled`.
#[derive(Clone, Debug, Default)]
pub struct Tools {
    pub ethtool: Option<PathBuf>,
    pub mlnx_qos: Option<PathBuf>,
    pub rdma: Option<PathBuf>,
    /// `nvidia-smi` (GPU ↔ NIC PCIe topology, `topo -m`).
    pub nvidia_smi: Option<PathBuf>,
    /// Set by `--no-tools`: none is run, whether installed or not, and the notes say so.
    pub disabled: bool,
}

impl Tools {
    /// Looks the tools up in `PATH` (and the sbin directories, where they usually live).
    pub fn discover() -> Self {
        Tools {
            ethtool: find_in_path("ethtool"),
            mlnx_qos: find_in_path("mlnx_qos"),
            rdma: find_in_path("rdma"),
            nvidia_smi: find_in_path("nvidia-smi"),
            disabled: false,
        }
    }

    /// No tools run: sysfs only (`--no-tools`, tests).
    pub fn none() -> Self {
        Tools { disabled: true, ..Tools::default() }
    }

    /// What to say about a tool that gave nothing: not run on purpose, or not installed.
    pub fn absent_note(&self, name: &str) -> String {
        if self.disabled {
            format!("{name} not run (--no-tools): its output is missing from this snapshot")
        } else {
            format!("{name} not installed: its output is missing from this snapshot")
        }
    }
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0).unwrap_or(false)
}

pub fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    for extra in ["/usr/sbin", "/sbin", "/usr/bin", "/bin"] {
        let e = PathBuf::from(extra);
        if !dirs.contains(&e) {
            dirs.push(e);
        }
    }
    dirs.into_iter().map(|d| d.join(name)).find(|p| is_executable(p))
}

/// Runs `program args...` with no shell, no stdin, and a deadline. Returns stdout.
pub fn run(program: &Path, args: &[String], timeout: Duration) -> Result<String, ToolError> {
    let label = format!(
        "{} {}",
        program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        args.join(" ")
    );
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).env("LC_ALL", "C");
    die_with_parent(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| ToolError::Spawn(label.clone(), e))?;
    // Drain both pipes on threads so a chatty tool cannot block on a full pipe.
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out_t = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let r = (&mut out).take(MAX_TEXT_BYTES + 1).read_to_end(&mut buf);
        // Keep draining past the cap so the child can exit.
        let _ = std::io::copy(&mut out, &mut std::io::sink());
        r.map(|_| buf)
    });
    let err_t = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = (&mut err).take(64 * 1024).read_to_end(&mut buf);
        let _ = std::io::copy(&mut err, &mut std::io::sink());
        buf
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() >= timeout => {
                kill_group(&child);
                let _ = child.kill();
                let _ = child.wait();
                // The reader threads end when the pipes close; a grandchild holding them open
                // must not hold us past the deadline, so they are not joined here.
                drop((out_t, err_t));
                return Err(ToolError::Timeout(label, timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(ToolError::Spawn(label, e)),
        }
    };
    let stdout = out_t.join().ok().and_then(|r| r.ok()).unwrap_or_default();
    let stderr = err_t.join().unwrap_or_default();
    if stdout.len() as u64 > MAX_TEXT_BYTES {
        return Err(ToolError::TooLarge(label));
    }
    if !status.success() {
        let msg = String::from_utf8_lossy(&stderr).lines().next().unwrap_or("").trim().to_string();
        return Err(ToolError::Failed(label, status.to_string(), msg));
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// Linux: the child gets its own process group and `SIGKILL` when its parent thread ends.
#[cfg(target_os = "linux")]
fn die_with_parent(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child before exec and calls only
    // async-signal-safe functions (setpgid, prctl, getppid).
    let parent = std::process::id() as libc::pid_t;
    unsafe {
        cmd.pre_exec(move || {
            libc::setpgid(0, 0);
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The parent may have died before prctl took effect.
            if libc::getppid() != parent {
                return Err(std::io::Error::other("parent exited"));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn die_with_parent(_cmd: &mut Command) {}

/// Kills the child's process group (its own children too), where groups are set.
fn kill_group(child: &std::process::Child) {
    #[cfg(target_os = "linux")]
    {
        if let Ok(pid) = libc::pid_t::try_from(child.id()) {
            // SAFETY: a plain syscall on a process group this process created.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = child;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_and_times_out() {
        let sh = find_in_path("sh").expect("sh");
        let out = run(&sh, &["-c".into(), "echo hi".into()], Duration::from_secs(5)).unwrap();
        assert_eq!(out, "hi\n");
        let e = run(&sh, &["-c".into(), "sleep 5".into()], Duration::from_millis(100)).unwrap_err();
        assert!(matches!(e, ToolError::Timeout(..)), "{e}");
        let e = run(&sh, &["-c".into(), "echo no >&2; exit 3".into()], Duration::from_secs(5)).unwrap_err();
        assert!(e.to_string().contains("no"), "{e}");
    }

    /// A timeout kills the tool's children too (its process group): a shell that started a
    /// `sleep` leaves no `sleep` behind.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_timeout_kills_the_tool_and_its_children() {
        let sh = find_in_path("sh").expect("sh");
        let pidfile = std::env::temp_dir().join(format!("rocelab-tools-pid-{}", std::process::id()));
        let script = format!("sleep 30 & echo $! > '{}'; wait", pidfile.display());
        let e = run(&sh, &["-c".into(), script], Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, ToolError::Timeout(..)), "{e}");
        let pid = std::fs::read_to_string(&pidfile).unwrap().trim().to_string();
        let _ = std::fs::remove_file(&pidfile);
        let proc = std::path::PathBuf::from(format!("/proc/{pid}"));
        // Killed at once; reaped by init shortly after (a zombie still has /proc/<pid>/stat
        // with state Z).
        let gone = (0..100).any(|_| {
            let alive = std::fs::read_to_string(proc.join("stat"))
                .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
                .unwrap_or(false);
            if alive {
                std::thread::sleep(Duration::from_millis(20));
            }
            !alive
        });
        assert!(gone, "sleep {pid} survived its tool's timeout");
    }
}
