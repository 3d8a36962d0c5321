//! Logs: `RUST_LOG` turns them on, and each line carries the simulated time of its run.
//!
//! `RUST_LOG` takes a level (`debug`) or comma-separated `target=level` directives
//! (`zkh_sim::history=debug,warn`), the common part of `env_logger`'s syntax (no regular
//! expressions). Lines go to standard error, so a command's own output and `--json` stay clean.
//! Unset, nothing is installed and a run pays nothing for logging.
//!
//! What logs: every history event at `DEBUG` (target `zkh_sim::history`), inside a `run` span
//! that names the seed, so the lines of a sweep's parallel seeds can be told apart.

use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// Installs the log subscriber if `RUST_LOG` is set; an unreadable `RUST_LOG` is an error that
/// quotes it.
pub fn init() -> Result<(), String> {
    let Some(directives) = std::env::var_os("RUST_LOG") else {
        return Ok(());
    };
    let directives = directives
        .into_string()
        .map_err(|raw| format!("RUST_LOG={raw:?}: not UTF-8"))?;
    if directives.trim().is_empty() {
        return Ok(());
    }
    let filter: Targets = directives.parse().map_err(|error| {
        format!(
            "RUST_LOG={directives:?}: {error} (expected a level such as `debug`, or \
             `target=level` directives separated by commas)"
        )
    })?;
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false);
    #[cfg(madsim)]
    let layer = layer.with_timer(zkh_sim::log::SimTime);
    tracing_subscriber::registry()
        .with(layer.with_filter(filter))
        .try_init()
        .map_err(|error| format!("installing the log subscriber: {error}"))
}
