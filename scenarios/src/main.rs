//! `zkharness`: the command line of the ZooKeeper recipe harness. The command line itself is
//! `zkh_scenarios::cli`, so that a user's own binary (`custom_main!`) is the same program with
//! its recipes registered beside the built-ins.

/// The model checker allocates and frees a copy of whatever a step changes, millions of times
/// a second; mimalloc does that about a quarter faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    zkh_scenarios::cli::main()
}
