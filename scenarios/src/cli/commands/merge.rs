//! `zkharness merge SUMMARY...`: the shards of one sweep, run on several machines, merged into
//! the summary a single machine's sweep writes.
//!
//! `sweep --shard I/N` runs slice I of N (seeds whose number is I modulo N; the positive
//! controls and pinned scenarios whose place in the list is) and keeps, in its summary, what
//! judging needs beyond the verdicts: each seed's trace hash, which `sometimes` companions
//! happened, each failure's exit code. `merge` checks that the shards belong together (the same
//! commit, seeds, variant and scenario files, every slice 0..N exactly once), adds each
//! scenario's tallies up, and judges and writes the result through the sweep's own
//! `summary::finish`: the same table, `summary.json`, `junit.xml` and `summary.md`, the same
//! verdicts and exit code, and the same combined trace hashes as the unsharded sweep (the
//! per-seed traces are combined in seed order). What differs is only measured: `jobs` is the
//! shards' threads added up, `wall_s` the slowest shard's, `seeds_per_sec` from the shards'
//! run times; a failure's report path is where its shard wrote it.
//!
//! The scenario files are read again (a control's `within_seeds`, the companions a pass must
//! reach): run `merge` where the sweep ran, on the commit that ran it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::report::{commit, exit, SweepSummary, SWEEP_FORMAT};
use crate::scenario;

use super::report::typed;
use super::summary::{finish, Destination, Tally};
use super::MergeArgs;

/// One shard's summary, read and placed.
struct Shard {
    file: PathBuf,
    index: u64,
    count: u64,
    summary: SweepSummary,
}

fn read(file: &Path) -> Result<Shard, String> {
    let shown = file.display();
    let text = std::fs::read_to_string(file)
        .map_err(|error| format!("{shown}: cannot read the file: {error}"))?;
    let summary: SweepSummary = typed(file, &text, "sweep summary")?;
    if summary.format != SWEEP_FORMAT {
        return Err(format!(
            "{shown}: format {:?} is not a sweep summary ({SWEEP_FORMAT})",
            summary.format
        ));
    }
    let Some(shard) = &summary.shard else {
        return Err(format!(
            "{shown}: not a shard's summary (no \"shard\" field): merge takes the summaries of \
             `sweep --shard I/N`, one per slice"
        ));
    };
    let parsed = shard
        .split_once('/')
        .and_then(|(index, count)| Some((index.parse::<u64>().ok()?, count.parse::<u64>().ok()?)));
    let Some((index, count)) = parsed.filter(|(index, count)| index < count) else {
        return Err(format!("{shown}: shard {shard:?} is not I/N with I < N"));
    };
    Ok(Shard {
        file: file.to_owned(),
        index,
        count,
        summary,
    })
}

/// Refuses shards that are not the slices of one sweep.
fn check_together(shards: &[Shard]) -> Result<(), String> {
    let first = &shards[0];
    let shown = first.file.display();
    for shard in &shards[1..] {
        let other = shard.file.display();
        let (a, b) = (&first.summary, &shard.summary);
        if shard.count != first.count {
            return Err(format!(
                "{other} is shard {}/{} and {shown} is shard {}/{}: slices of different splits",
                shard.index, shard.count, first.index, first.count
            ));
        }
        let variant = |s: &SweepSummary| s.variant.clone().unwrap_or_default();
        for (field, left, right) in [
            ("commit", a.commit.clone(), b.commit.clone()),
            ("seeds", a.seeds.clone(), b.seeds.clone()),
            ("variant", variant(a), variant(b)),
        ] {
            if left != right {
                return Err(format!(
                    "{other}: {field} {right:?}, where {shown} has {left:?}: not shards of one sweep"
                ));
            }
        }
        let paths = |s: &SweepSummary| -> Vec<String> {
            s.scenarios.iter().map(|c| c.path.clone()).collect()
        };
        if paths(a) != paths(b) {
            return Err(format!(
                "{other} ran other scenario files than {shown} ({} against {}): not shards of one sweep",
                b.scenarios.len(),
                a.scenarios.len()
            ));
        }
    }
    let mut seen = BTreeSet::new();
    for shard in shards {
        if !seen.insert(shard.index) {
            return Err(format!(
                "{}: shard {}/{} is given twice",
                shard.file.display(),
                shard.index,
                shard.count
            ));
        }
    }
    let missing: Vec<String> = (0..first.count)
        .filter(|index| !seen.contains(index))
        .map(|index| format!("{index}/{}", first.count))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "shards {} are missing: a merge needs every slice",
            missing.join(", ")
        ));
    }
    if first.summary.commit != commit() {
        return Err(format!(
            "the shards ran at commit {}, and this zkharness is commit {}: merge with the binary \
             that swept them (it judges them again)",
            first.summary.commit,
            commit()
        ));
    }
    Ok(())
}

/// Each scenario's tally, added up over the shards (in the order of the shards' lists).
fn tallies(shards: &[Shard]) -> Result<Vec<Tally>, String> {
    let variant = shards[0].summary.variant.clone();
    let mut tallies = Vec::new();
    for (place, listed) in shards[0].summary.scenarios.iter().enumerate() {
        let path = PathBuf::from(&listed.path);
        let loaded = scenario::load(&path).map_err(|error| {
            format!("{error} (the shards name it; run merge from the folder the sweep ran in)")
        })?;
        let loaded = match &variant {
            Some(variant) => loaded
                .with_variant(variant)
                .map_err(|message| format!("{}: {message}", path.display()))?,
            None => loaded,
        };
        if loaded.resolved.name != listed.scenario || loaded.resolved.expected() != listed.expected
        {
            return Err(format!(
                "{}: the file is now {:?} expecting {}, where the shards ran {:?} expecting {}: \
                 it changed since the sweep",
                path.display(),
                loaded.resolved.name,
                loaded.resolved.expected(),
                listed.scenario,
                listed.expected
            ));
        }
        let mut tally = Tally::new(path, loaded);
        for shard in shards {
            let part = &shard.summary.scenarios[place];
            let shown = shard.file.display();
            if part.traces.len() as u64 != part.seeds_run {
                return Err(format!(
                    "{shown}: {} ran {} seeds and keeps {} traces: a shard's summary keeps each \
                     seed's trace (written by a zkharness older than merge?)",
                    part.scenario,
                    part.seeds_run,
                    part.traces.len()
                ));
            }
            tally.seeds_run += part.seeds_run;
            if part.seeds_run > 0 {
                tally.run_seconds += part.seeds_run as f64 / part.seeds_per_sec.max(1e-9);
            }
            for seed in &part.traces {
                let trace = u64::from_str_radix(&seed.trace, 16).map_err(|_| {
                    format!(
                        "{shown}: {} seed {}: trace {:?} is not hex",
                        part.scenario, seed.seed, seed.trace
                    )
                })?;
                tally.traces.push((seed.seed, trace));
            }
            for failure in &part.failures {
                if failure.exit.is_none() {
                    return Err(format!(
                        "{shown}: {} seed {}: a failure without its exit code (written by a \
                         zkharness older than merge?)",
                        part.scenario, failure.seed
                    ));
                }
                tally.failures.push(failure.clone());
            }
            tally.caught_at.extend(&part.caught_at);
            for (companion, happened) in &part.sometimes {
                *tally.sometimes.entry(companion.clone()).or_default() |= happened;
            }
            if let Some(herd) = &part.herd {
                tally.herd = Some(tally.herd.take().unwrap_or_default().merge(herd));
            }
        }
        tallies.push(tally);
    }
    Ok(tallies)
}

fn merged(args: MergeArgs) -> Result<ExitCode, String> {
    let shards = (args.summaries.iter())
        .map(|file| read(file))
        .collect::<Result<Vec<_>, _>>()?;
    check_together(&shards)?;
    let first = &shards[0].summary;
    let (start, end) = (first.seeds.split_once(".."))
        .and_then(|(start, end)| Some((start.parse::<u64>().ok()?, end.parse::<u64>().ok()?)))
        .ok_or_else(|| {
            format!(
                "{}: seeds {:?} are not START..END",
                shards[0].file.display(),
                first.seeds
            )
        })?;
    let tallies = tallies(&shards)?;
    let jobs = shards.iter().map(|s| s.summary.jobs).sum();
    let wall_s = (shards.iter())
        .map(|s| s.summary.wall_s)
        .fold(0.0_f64, f64::max);
    say!(
        "merge: {} shards of commit {}, seeds {}..{}",
        shards.len(),
        first.commit,
        start,
        end
    );
    let destination = Destination {
        commit: first.commit.clone(),
        seeds: start..end,
        shard: None,
        variant: first.variant.clone(),
        out: args.out,
        copies: args.copies,
    };
    Ok(finish(&destination, tallies, jobs, wall_s, None))
}

/// Runs `zkharness merge`.
pub fn merge(args: MergeArgs) -> ExitCode {
    merged(args).unwrap_or_else(|message| {
        eprintln!("zkharness: {message}");
        ExitCode::from(exit::BAD_INPUT)
    })
}
