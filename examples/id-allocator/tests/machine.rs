//! The allocator written once for both engines (`machine::AllocatorWorkload`): the model
//! checker explores it from `cargo test` (normal build) and from the crate's own binary, the
//! simulator runs it from `cargo test` (simulated build); the correct allocator passes both, and
//! each known-bad variant is caught by both.

use zkh_example_id_allocator::machine::{AllocatorWorkload, Variant};

fn workload(variant: Variant) -> AllocatorWorkload {
    AllocatorWorkload { variant }
}

#[cfg(not(madsim))]
mod model {
    use super::*;
    use zkh_scenarios::custom::{model, MachineRecipe};

    #[test]
    fn the_correct_allocator_passes_every_interleaving_under_a_lost_reply_and_an_expiry() {
        model(workload(Variant::Correct))
            .clients(2)
            .faults("drop-reply=1,expire=1")
            .check()
            .assert_pass();
    }

    /// A failing `assert_pass` writes the counterexample's steps under `target/zkh/model/` and
    /// names the file and the command that runs the test again.
    #[test]
    fn a_failing_check_writes_its_counterexample_and_names_the_command() {
        let verdict = model(workload(Variant::Unversioned))
            .clients(2)
            .faults("none")
            .check();
        let panic = std::panic::catch_unwind(|| verdict.assert_pass()).expect_err("it fails");
        let message = (panic.downcast_ref::<String>()).expect("a formatted message");
        let test = "model::a_failing_check_writes_its_counterexample_and_names_the_command";
        assert!(
            message.contains(&format!(
                "rerun: cargo test -p zkh-example-id-allocator -- --exact {test} --include-ignored"
            )),
            "{message}"
        );
        let file = (message.split("its steps: ").nth(1))
            .and_then(|rest| rest.split(';').next())
            .unwrap_or_else(|| panic!("names its file: {message}"));
        let steps = std::fs::read_to_string(file).expect("the counterexample was written");
        assert!(
            steps.starts_with("ids unique violated, 2 clients, faults none"),
            "{steps}"
        );
        assert!(steps.contains("\n   1. "), "its steps, numbered: {steps}");
    }

    #[test]
    fn each_known_bad_variant_is_caught() {
        model(workload(Variant::Unversioned))
            .clients(2)
            .faults("none")
            .check()
            .assert_caught("ids unique");
        model(workload(Variant::LossAsSuccess))
            .clients(2)
            .faults("drop-request=1")
            .check()
            .assert_caught("ids unique");
    }

    #[test]
    fn the_crates_own_binary_checks_it_by_name() {
        let check = |args: &[&str]| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_id-allocator"))
                .args(
                    [
                        &["check", "id-allocator-machine", "--clients", "2"][..],
                        args,
                    ]
                    .concat(),
                )
                .output()
                .expect("the binary runs");
            let said = String::from_utf8_lossy(&out.stdout).into_owned();
            (out.status.code(), said)
        };
        let (code, said) = check(&["--faults", "drop-reply=1"]);
        assert_eq!(code, Some(0), "{said}");
        assert!(said.contains("no violation"), "{said}");
        let (code, said) = check(&["--variant", "unversioned", "--faults", "none"]);
        assert_eq!(code, Some(1), "{said}");
        assert!(said.contains("VIOLATION of ids unique"), "{said}");
    }

    /// Each control's declared check catches it, breaking the declared property in the declared
    /// steps; a check that does not catch it says which does.
    #[test]
    fn each_declared_known_bad_check_catches_its_variant_and_a_miss_names_it() {
        let check = |args: Vec<&str>| {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_id-allocator"))
                .args(args)
                .output()
                .expect("the binary runs");
            let said = String::from_utf8_lossy(&out.stdout).into_owned();
            (out.status.code(), said)
        };
        let entries = AllocatorWorkload::known_bad();
        assert_eq!(entries.len(), AllocatorWorkload::VARIANTS.len() - 1);
        for entry in entries {
            let mut args = vec!["check", entry.recipe, "--variant", entry.variant];
            args.extend_from_slice(entry.options);
            let (code, said) = check(args);
            assert_eq!(code, Some(1), "{said}");
            let violated = format!("VIOLATION of {}", entry.property);
            let steps = format!("counterexample, {} steps", entry.steps);
            assert!(said.contains(&violated) && said.contains(&steps), "{said}");
            let one_client = ["--clients", "1", "--faults", "none"];
            let mut missed = vec!["check", entry.recipe, "--variant", entry.variant];
            missed.extend_from_slice(&one_client);
            let (code, said) = check(missed);
            assert_eq!(code, Some(0), "{said}");
            assert!(
                said.contains("this check did not show its bug") && said.contains(&entry.command()),
                "{said}"
            );
        }
    }
}

#[cfg(madsim)]
mod simulated {
    use super::*;
    use zkh_scenarios::custom::{sim, Machined};

    type Allocator = Machined<AllocatorWorkload>;

    #[test]
    fn the_correct_allocator_passes_lost_replies_on_the_simulated_ensemble() {
        sim::<Allocator>("correct")
            .scenario("scenarios/machine-lost-replies.toml")
            .seeds(0..30)
            .run()
            .assert_pass();
    }

    #[test]
    fn each_known_bad_variant_is_caught_on_the_simulated_ensemble() {
        sim::<Allocator>("unversioned")
            .scenario("scenarios/control-machine-unversioned.toml")
            .seeds(0..5)
            .run()
            .assert_caught("ids unique");
        sim::<Allocator>("loss-as-success")
            .scenario("scenarios/control-machine-loss-as-success.toml")
            .seeds(0..5)
            .run()
            .assert_caught("ids unique");
    }

    #[test]
    fn the_same_workload_value_runs_in_both_engines() {
        // The simulator builds each client's workload from the variant's name, as the model
        // checker's command line does: both give the value the tests above check.
        use zkh_scenarios::custom::MachineRecipe;
        assert_eq!(
            AllocatorWorkload::of_variant("loss-as-success"),
            workload(Variant::LossAsSuccess)
        );
    }
}
