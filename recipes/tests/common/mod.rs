//! Helpers shared by the tests that talk to a real server.
#![allow(dead_code, missing_docs)]

/// The test server's address, or `None` (with a note) when the tests run without one. In CI
/// (`CI` set) a missing server is an error: there the tests run under `scripts/with-zookeeper`.
pub fn server() -> Option<String> {
    match std::env::var("ZK_CONNECT") {
        Ok(connect) => Some(connect),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "ZK_CONNECT is not set: in CI tests run under scripts/with-zookeeper"
            );
            eprintln!("skipped: ZK_CONNECT is not set (run under scripts/with-zookeeper)");
            None
        }
    }
}
