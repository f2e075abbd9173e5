//! `exaviz serve` and the inputs it answers for: `grpc://HOST:PORT/STORE`, and
//! `ssh://HOST/PATH`, which starts the server on HOST over SSH. No sshd runs here, so the SSH
//! command is replaced by a local transport (`EXAVIZ_SSH`): a script that takes the arguments
//! `ssh` would and runs the remote command on this machine, over the same standard input and
//! output as SSH would carry.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const EXE: &str = env!("CARGO_BIN_EXE_exaviz");

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("exaviz-serve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A small store in `dir`.
fn store(dir: &Path) -> PathBuf {
    let path = dir.join("s.exaviz");
    let out = exaviz(&["convert", "gen:fd4?ranks=16&messages=20000", path.to_str().unwrap()], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    path
}

fn exaviz(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(EXE);
    c.args(args).env_remove("XDG_RUNTIME_DIR");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().expect("exaviz runs")
}

/// The local transport in place of `ssh`: skips ssh's options and the host, then runs the
/// command after `--` with a shell, as sshd would.
fn fake_ssh(dir: &Path) -> PathBuf {
    let path = dir.join("ssh");
    std::fs::write(
        &path,
        "#!/bin/sh\n\
         while [ $# -gt 0 ]; do\n\
           case \"$1\" in -o|-e|-p) shift 2;; --) shift; break;; *) shift;; esac\n\
         done\n\
         exec sh -c \"$*\"\n",
    )
    .unwrap();
    let status = Command::new("chmod").args(["+x", path.to_str().unwrap()]).status().unwrap();
    assert!(status.success());
    path
}

/// `exaviz info` and `exaviz render` of `ssh://localhost/PATH` print and draw what they do of
/// the local store.
#[test]
fn a_store_opens_over_ssh_as_it_does_locally() {
    let dir = scratch("ssh");
    let path = store(&dir);
    let ssh = fake_ssh(&dir);
    let env = [("EXAVIZ_SSH", ssh.to_str().unwrap()), ("EXAVIZ_REMOTE", EXE)];
    let url = format!("ssh://localhost{}", path.display());
    let (local, remote) = (exaviz(&["info", path.to_str().unwrap()], &[]), exaviz(&["info", &url], &env));
    assert!(remote.status.success(), "{}", String::from_utf8_lossy(&remote.stderr));
    assert_eq!(String::from_utf8_lossy(&local.stdout), String::from_utf8_lossy(&remote.stdout));
    let pictures: Vec<Vec<u8>> = [path.to_str().unwrap(), url.as_str()]
        .iter()
        .enumerate()
        .map(|(k, input)| {
            let png = dir.join(format!("{k}.png"));
            let out =
                exaviz(&["render", input, "--view", "timeline", "--backend", "cpu", "-o", png.to_str().unwrap()], &env);
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            std::fs::read(png).unwrap()
        })
        .collect();
    assert!(pictures[0] == pictures[1], "the timeline over ssh differs from the local one");
    // A path that is not a store, and a host the transport cannot reach: one line each.
    let out = exaviz(&["info", &format!("ssh://localhost{}/nothing.exaviz", dir.display())], &env);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.trim().lines().count() == 1, "{e}");
    let out = exaviz(&["info", "ssh://localhost/x.exaviz"], &[("EXAVIZ_SSH", "/nonexistent/ssh")]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("ssh") && e.trim().lines().count() == 1, "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `exaviz view ssh://localhost/PATH` opens a window under Xvfb and presents frames of the store.
#[test]
fn the_window_shows_a_store_opened_over_ssh() {
    let dir = scratch("view");
    let path = store(&dir);
    let ssh = fake_ssh(&dir);
    let script =
        format!("\"{EXE}\" view 'ssh://localhost{}' --view timeline --size 480x360 --frames 5", path.display());
    let out = Command::new("xvfb-run")
        .args(["-a", "-s", "-screen 0 800x480x24", "sh", "-c", &script])
        .env("XDG_RUNTIME_DIR", &dir)
        .env("EXAVIZ_SSH", &ssh)
        .env("EXAVIZ_REMOTE", EXE)
        .output()
        .expect("xvfb-run starts (apt-get install xvfb xauth)");
    let log = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && log.contains("presented 5 frames"), "{log}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A server started by `exaviz serve` answers for its folder and refuses paths outside it, in
/// one line, and keeps answering.
#[test]
fn exaviz_serve_answers_its_folder_and_refuses_others() {
    let dir = scratch("tcp");
    let served = dir.join("served");
    std::fs::create_dir_all(&served).unwrap();
    let path = store(&served);
    let _outside = store(&dir);
    let mut server = Command::new(EXE)
        .args(["serve", served.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.split_whitespace().find(|w| w.starts_with("127.0.0.1:")).unwrap_or_else(|| panic!("{line}"));
    let ok = exaviz(&["info", &format!("grpc://{addr}/s.exaviz")], &[]);
    let local = exaviz(&["info", path.to_str().unwrap()], &[]);
    assert_eq!(String::from_utf8_lossy(&ok.stdout), String::from_utf8_lossy(&local.stdout));
    for bad in ["../s.exaviz", &format!("/{}", dir.join("s.exaviz").display()), "/etc"] {
        let out = exaviz(&["info", &format!("grpc://{addr}/{bad}")], &[]);
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && e.contains("not below a folder this server serves"), "{bad}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "{e}");
    }
    let again = exaviz(&["info", &format!("grpc://{addr}/s.exaviz")], &[]);
    assert!(again.status.success());
    server.kill().unwrap();
    server.wait().unwrap();
    // The server gone: one line.
    let out = exaviz(&["info", &format!("grpc://{addr}/s.exaviz")], &[]);
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && e.contains("cannot reach the server") && e.trim().lines().count() == 1, "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
