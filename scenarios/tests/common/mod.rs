//! What the simulated build's command-line tests share: running `zkharness` as a user would,
//! from the crate's folder, with no `RUST_LOG` unless a test sets one.

use std::process::Command;

/// Runs `zkharness args` with `env` set; returns its exit code, stdout and stderr.
pub fn zkharness_with_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_zkharness"))
        .args(args)
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("zkharness runs");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8(output.stdout).expect("utf-8"),
        String::from_utf8(output.stderr).expect("utf-8"),
    )
}

/// Runs `zkharness args`; returns its exit code, stdout and stderr.
pub fn zkharness(args: &[&str]) -> (i32, String, String) {
    zkharness_with_env(args, &[])
}

/// Asserts that every server PID a real-ensemble command named on stderr ("pids [a, b, c]")
/// is gone once it ended.
#[allow(dead_code)] // used by the real-ensemble tests of the normal build only
pub fn assert_servers_stopped(stderr: &str, command: &str) {
    let pids = stderr
        .split("pids [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("the servers' pids are named");
    for pid in pids.split(", ") {
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "server pid {pid} still runs after {command} ended"
        );
    }
}
