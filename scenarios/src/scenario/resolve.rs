//! From a scenario as written to one the runner executes: every default filled in per recipe,
//! every name and number checked. A problem is reported with the dotted path of the field it is
//! about, which the parser turns into a line and column.

use serde::Serialize;
use zkh_sim::fault::{Fault, FaultPlan, NodeRef, ServerRef};

use super::{is_a_minute, ScenarioFile, ShardedApp};
use crate::registry::simulated::{registered, unknown_recipe, ScenarioRecipe};

/// A scenario ready to run: every knob has its value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Resolved {
    /// The scenario's name (its file's stem).
    pub name: String,
    /// The recipe: a registered one (built in, or of a user's binary), with its workload.
    pub recipe: ScenarioRecipe,
    /// Its variant.
    pub variant: String,
    /// Servers.
    pub servers: u32,
    /// Client processes.
    pub clients: u32,
    /// Session timeout.
    pub session_timeout_ms: u64,
    /// Whether the resource is fenced.
    pub fenced: bool,
    /// How the clients end a session they cannot reconnect.
    pub local_expiry: zkh_sim::local_expiry::LocalExpiry,
    /// How often the leader deletes empty containers.
    #[serde(skip_serializing_if = "is_a_minute")]
    pub container_check_interval_ms: u64,
    /// The lock's initial stock.
    pub initial_units: i64,
    /// The lock's critical section.
    pub critical_ms: u64,
    /// The elected leader's job period.
    pub job_interval_ms: u64,
    /// The election's reconcile interval (0: none).
    #[serde(skip_serializing_if = "is_ten_minutes")]
    pub reconcile_interval_ms: u64,
    /// The sharded job's items per cycle.
    pub items: u32,
    /// The sharded job's cron period.
    pub cycle_interval_ms: u64,
    /// The sharded job's judged cycles start this long after the heal...
    pub settle_ms: u64,
    /// ...or this long after the start.
    pub judged_from_ms: Option<u64>,
    /// The fault phase.
    pub fault_ms: u64,
    /// The liveness phase.
    pub liveness_ms: u64,
    /// The bound of "leader elected".
    pub leader_within_ms: u64,
    /// The faults.
    pub faults: zkh_sim::fault::FaultPlan,
    /// The properties judged.
    pub properties: Vec<String>,
    /// The property a positive control expects violated, if this is one.
    pub expect_violation: Option<String>,
    /// The seeds within which a control must be caught.
    pub within_seeds: u64,
    /// The seeds a sweep runs, if the file pins them.
    pub seeds: Vec<u64>,
    /// The `sometimes` companions a sweep must see happen (`expect.reached`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reached: Vec<String>,
    /// A registered recipe's own knobs, as the file wrote them (`[workload.config]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<toml::Table>,
}

/// The properties the host judges of any recipe whose clients declare their knowledge of their
/// ephemeral nodes (`custom::host`): a client that believes a node its own at the end, and its
/// session does not own it; an ephemeral at rest that no live client knows of.
pub(crate) const HOST_JUDGED: [&str; 2] = ["claims are owned", "no orphaned ephemerals"];

/// A problem with a field: its dotted path and what is wrong.
pub type Problem = (String, String);

impl Resolved {
    /// Whether this scenario is a positive control.
    pub fn is_control(&self) -> bool {
        self.expect_violation.is_some()
    }

    /// What the scenario expects, in words: `pass`, or `violation <property>`.
    pub fn expected(&self) -> String {
        match &self.expect_violation {
            Some(property) => format!("violation {property}"),
            None => "pass".to_owned(),
        }
    }

    /// The seeds a sweep of `range` runs: those the file pins, else a control's
    /// `within_seeds` seeds from the range's start (however long the range), else the range.
    pub fn sweep_seeds(&self, range: std::ops::Range<u64>) -> Vec<u64> {
        if !self.seeds.is_empty() {
            self.seeds.clone()
        } else if self.is_control() {
            (range.start..range.start.saturating_add(self.within_seeds)).collect()
        } else {
            range.collect()
        }
    }
}

pub(crate) fn check(
    ok: bool,
    path: impl Into<String>,
    message: impl Into<String>,
) -> Result<(), Problem> {
    if ok {
        Ok(())
    } else {
        Err((path.into(), message.into()))
    }
}

/// Checks a workload's ensemble: 1, 3 or 5 servers, 1 to 16 clients, a session timeout the
/// servers grant.
pub(crate) fn check_ensemble(
    servers: u32,
    clients: u32,
    session_timeout_ms: u64,
) -> Result<(), Problem> {
    check(
        matches!(servers, 1 | 3 | 5),
        "workload.servers",
        format!("expected 1, 3 or 5 servers, found {servers}"),
    )?;
    check(
        (1..=16).contains(&clients),
        "workload.clients",
        format!("expected 1 to 16 clients, found {clients}"),
    )?;
    check(
        (1000..=40_000).contains(&session_timeout_ms),
        "workload.session_timeout_ms",
        format!(
            "expected 1000 to 40000 ms (the servers' minSessionTimeout and maxSessionTimeout), found {session_timeout_ms}"
        ),
    )
}

/// Resolves `file`, named `name`.
pub(super) fn resolve(name: &str, file: &ScenarioFile) -> Result<Resolved, Problem> {
    let w = &file.workload;
    let (recipe, variant) = scenario_recipe(w)?;
    check_ensemble(w.servers, w.clients, w.session_timeout_ms)?;
    let reads = recipe.registration.tables();
    let tables = [
        ("stock", w.stock.is_some()),
        ("leader_job", w.leader_job.is_some()),
        ("sharded", w.sharded.is_some()),
        ("config", w.config.is_some()),
    ];
    for (table, present) in tables {
        check(
            !present || reads.contains(&table),
            format!("workload.{table}"),
            format!(
                "the {} reads no [workload.{table}] ({})",
                w.recipe,
                match reads {
                    [] => "it has no knobs".to_owned(),
                    [only] => format!("its knobs are in [workload.{only}]"),
                    many => format!("it reads [workload.{}]", many.join("], [workload.")),
                }
            ),
        )?;
    }
    let stock = w.stock.clone().unwrap_or_default();
    let leader_job = w.leader_job.clone().unwrap_or_default();
    let sharded = w.sharded.clone().unwrap_or_default();
    let items = sharded.items.unwrap_or(8);
    check(
        (1..=64).contains(&items),
        "workload.sharded.items",
        format!("expected 1 to 64 items, found {items}"),
    )?;
    let lengths = [
        (sharded.cycle_interval_ms, true, "sharded.cycle_interval_ms"),
        (sharded.settle_ms, false, "sharded.settle_ms"),
        (sharded.judged_from_ms, false, "sharded.judged_from_ms"),
        (leader_job.interval_ms, true, "leader_job.interval_ms"),
        (stock.critical_ms, false, "stock.critical_ms"),
        (
            Some(w.container_check_interval_ms),
            true,
            "container_check_interval_ms",
        ),
    ];
    for (value_ms, positive, path) in lengths {
        if let Some(value_ms) = value_ms {
            check_length(value_ms, positive, format!("workload.{path}"))?;
        }
    }
    let reconcile_ms = leader_job.reconcile_interval_ms;
    check(
        reconcile_ms.is_none_or(|ms| ms % 60_000 == 0 && ms <= LONGEST_RUN_MS),
        "workload.leader_job.reconcile_interval_ms",
        format!(
            "expected whole minutes (Elastic-Job's reconcileIntervalMinutes) up to \
             {LONGEST_RUN_MS} ms, or 0, found {}",
            reconcile_ms.unwrap_or_default()
        ),
    )?;
    check(
        reconcile_ms.is_none() || recipe.registration.name() == crate::builtins::ELECTION,
        "workload.leader_job.reconcile_interval_ms",
        format!(
            "only the election runs Elastic-Job's reconcile service, not the {}",
            recipe.registration.name()
        ),
    )?;
    check(
        stock.initial_units.is_none_or(|units| units >= 0),
        "workload.stock.initial_units",
        format!(
            "expected 0 or more units, found {}",
            stock.initial_units.unwrap_or_default()
        ),
    )?;
    let defaults = recipe.registration.phases();
    let fault_ms = file.phases.fault_ms.unwrap_or(20_000);
    let liveness_ms = file.phases.liveness_ms.unwrap_or(defaults.liveness_ms);
    check(
        defaults.leader_within_ms.is_some() || file.phases.leader_within_ms.is_none(),
        "phases.leader_within_ms",
        format!(
            "the bound of \"leader elected\", which the {} does not judge (it judges its own \
             properties)",
            w.recipe
        ),
    )?;
    let leader_within_ms = (file.phases.leader_within_ms)
        .or(defaults.leader_within_ms)
        .unwrap_or(liveness_ms);
    check_phases(fault_ms, liveness_ms)?;
    check(
        leader_within_ms <= liveness_ms,
        "phases.leader_within_ms",
        format!("expected at most the liveness phase ({liveness_ms} ms), found {leader_within_ms}"),
    )?;
    check_faults(&file.faults, w.clients, w.servers, fault_ms)?;
    if reads.contains(&"sharded") {
        check_judged_cycles(&sharded, fault_ms, liveness_ms)?;
    }
    // The recipe's own properties, and the two the host judges of every recipe whose clients
    // say what they know of their nodes (`ClientCtx::knows`; a machine recipe's driver does):
    // judged by default, so that a recipe that declares its knowledge is never silently
    // unjudged.
    let mut judged: Vec<&str> = (recipe.workload.properties().into_iter())
        .filter(|property| property.class != zkh_model::properties::Class::Sometimes)
        .map(|property| property.name)
        .collect();
    for host in HOST_JUDGED {
        if !judged.contains(&host) {
            judged.push(host);
        }
    }
    let known = |name: &str, path: String| {
        check(
            judged.contains(&name),
            path,
            format!(
                "the {} judges no property {name:?} (it judges: {})",
                w.recipe,
                judged.join(", ")
            ),
        )
    };
    for (index, property) in file.properties.iter().enumerate() {
        known(property, format!("properties[{index}]"))?;
    }
    let properties: Vec<String> = if file.properties.is_empty() {
        judged.iter().map(|p| (*p).to_owned()).collect()
    } else {
        file.properties.clone()
    };
    let expect = &file.expect;
    check(
        expect.outcome.is_none() || expect.violation.is_none(),
        "expect.violation",
        "a scenario expects either outcome = \"pass\" or a violation, not both",
    )?;
    if let Some(property) = &expect.violation {
        known(property, "expect.violation".to_owned())?;
        check(
            properties.contains(property),
            "expect.violation",
            format!("{property:?} is not among the properties the scenario judges"),
        )?;
    }
    check(
        expect.within_seeds.is_none() || expect.violation.is_some(),
        "expect.within_seeds",
        "within_seeds is for a positive control (expect.violation)",
    )?;
    for (index, name) in expect.reached.iter().enumerate() {
        check(
            !name.trim().is_empty(),
            format!("expect.reached[{index}]"),
            "expected the name of one of the recipe's sometimes companions",
        )?;
    }
    check(
        expect.reached.is_empty() || expect.violation.is_none(),
        "expect.reached",
        "reached is for a scenario that expects a pass (a positive control's violation shows \
         what it reached)",
    )?;
    let within_seeds = expect.within_seeds.unwrap_or(10);
    check(
        (1..=100_000).contains(&within_seeds),
        "expect.within_seeds",
        format!("expected 1 to 100000 seeds, found {within_seeds}"),
    )?;
    let local_expiry =
        (w.local_expiry).unwrap_or_else(|| recipe.registration.local_expiry(&variant));
    Ok(Resolved {
        name: name.to_owned(),
        recipe,
        variant,
        servers: w.servers,
        clients: w.clients,
        session_timeout_ms: w.session_timeout_ms,
        fenced: w.fenced,
        local_expiry,
        container_check_interval_ms: w.container_check_interval_ms,
        initial_units: stock.initial_units.unwrap_or(100_000),
        critical_ms: stock.critical_ms.unwrap_or(50),
        job_interval_ms: leader_job.interval_ms.unwrap_or(500),
        reconcile_interval_ms: (leader_job.reconcile_interval_ms)
            .unwrap_or(zkh_recipes::election::RECONCILE_INTERVAL_MS),
        items,
        cycle_interval_ms: sharded.cycle_interval_ms.unwrap_or(10_000),
        settle_ms: sharded.settle_ms.unwrap_or(10_000),
        judged_from_ms: sharded.judged_from_ms,
        fault_ms,
        liveness_ms,
        leader_within_ms,
        faults: file.faults.clone(),
        properties,
        expect_violation: expect.violation.clone(),
        within_seeds,
        seeds: file.seeds.clone(),
        reached: expect.reached.clone(),
        config: w.config.clone(),
    })
}

/// The recipe `workload` names and its variant, checked, with the workload its registration
/// makes of them and of `[workload.config]`. A recipe with no variant called `correct` runs its
/// first (correct) one when the file names none.
fn scenario_recipe(workload: &super::WorkloadSpec) -> Result<(ScenarioRecipe, String), Problem> {
    let Some(registration) = registered(&workload.recipe) else {
        return Err((
            "workload.recipe".to_owned(),
            unknown_recipe(&workload.recipe),
        ));
    };
    let variants = registration.variants();
    let named = match workload.variant.as_str() {
        "correct" if !variants.contains(&"correct") => variants[0],
        named => named,
    };
    let Some(variant) = variants.iter().find(|v| **v == named) else {
        return Err((
            "workload.variant".to_owned(),
            format!(
                "unknown variant {:?} (known: {})",
                workload.variant,
                variants.join(", ")
            ),
        ));
    };
    let config = (registration.tables().contains(&"config"))
        .then_some(workload.config.as_ref())
        .flatten();
    let workload = registration.workload(config)?;
    let recipe = ScenarioRecipe {
        registration,
        workload,
    };
    Ok((recipe, (*variant).to_owned()))
}

fn is_ten_minutes(ms: &u64) -> bool {
    *ms == zkh_recipes::election::RECONCILE_INTERVAL_MS
}

/// The longest run a scenario may ask for: its fault and liveness phases together.
pub(crate) const LONGEST_RUN_MS: u64 = 500_000;

/// A fault phase of at least 1 ms and the two phases together at most [`LONGEST_RUN_MS`]
/// (summed without overflow: `u64::MAX` is refused, not wrapped).
pub(crate) fn check_phases(fault_ms: u64, liveness_ms: u64) -> Result<(), Problem> {
    check(fault_ms > 0, "phases.fault_ms", "expected more than 0 ms")?;
    // Each phase alone first, so that the field named is the one too long.
    for (field, value) in [
        ("phases.fault_ms", fault_ms),
        ("phases.liveness_ms", liveness_ms),
    ] {
        check(
            value <= LONGEST_RUN_MS,
            field,
            format!("a run may last {LONGEST_RUN_MS} ms at most, found {value}"),
        )?;
    }
    check(
        fault_ms + liveness_ms <= LONGEST_RUN_MS,
        "phases.liveness_ms",
        format!(
            "the fault and liveness phases together may last {LONGEST_RUN_MS} ms at most, \
             found {fault_ms} + {liveness_ms} = {}",
            fault_ms + liveness_ms
        ),
    )
}

/// A length of time in a scenario (a pause, a partition, a delay, an interval): more than 0 ms
/// when `positive`, and never longer than the longest run.
pub(crate) fn check_length(
    value_ms: u64,
    positive: bool,
    path: impl Into<String>,
) -> Result<(), Problem> {
    check(
        (!positive || value_ms > 0) && value_ms <= LONGEST_RUN_MS,
        path,
        format!(
            "expected {} to {LONGEST_RUN_MS} ms, found {value_ms}",
            u64::from(positive)
        ),
    )
}

/// "No shard lost" judges the cycles that fire from `judged_from_ms` (or the heal plus
/// `settle_ms`) and are half a cycle old when the run ends: a scenario in which none is would
/// pass it without judging anything, so it is refused. (The instances start a few milliseconds
/// into the run; the check takes them to start at 0.)
fn check_judged_cycles(
    sharded: &ShardedApp,
    fault_ms: u64,
    liveness_ms: u64,
) -> Result<(), Problem> {
    let interval_ms = sharded.cycle_interval_ms.unwrap_or(10_000);
    let from_ms = sharded
        .judged_from_ms
        .unwrap_or(fault_ms + sharded.settle_ms.unwrap_or(10_000));
    let cycles = zkh_model::properties::judged_cycles(
        from_ms * 1000,
        (fault_ms + liveness_ms) * 1000,
        interval_ms * 1000,
    );
    check(
        !cycles.is_empty(),
        "workload.sharded.cycle_interval_ms",
        format!(
            "a cycle of {interval_ms} ms leaves no cycle to judge: \"no shard lost\" judges the \
             cycles that fire from {from_ms} ms and are half a cycle old when the run ends at {} \
             ms (a shorter cycle, or a longer liveness phase)",
            fault_ms + liveness_ms
        ),
    )
}

pub(crate) fn check_faults(
    plan: &FaultPlan,
    clients: u32,
    servers: u32,
    fault_ms: u64,
) -> Result<(), Problem> {
    for (index, scripted) in plan.scripted.iter().enumerate() {
        let at = format!("faults.scripted[{index}]");
        check(
            scripted.at_ms < fault_ms,
            format!("{at}.at_ms"),
            format!(
                "expected a time within the fault phase (0 to {} ms), found {}: it would never fire",
                fault_ms.saturating_sub(1),
                scripted.at_ms
            ),
        )?;
        check_fault(&scripted.fault, &format!("{at}.fault"), clients, servers)?;
    }
    for (index, triggered) in plan.triggered.iter().enumerate() {
        let at = format!("faults.triggered[{index}]");
        if let Some(client) = triggered.when.client {
            check(
                client < clients,
                format!("{at}.when.client"),
                format!(
                    "expected a client from 0 to {}, found {client}",
                    clients - 1
                ),
            )?;
        }
        check(
            triggered.when.nth >= 1,
            format!("{at}.when.nth"),
            "expected 1 or more (1 = the first matching operation), found 0",
        )?;
        check(
            triggered.when.path_prefix.starts_with('/'),
            format!("{at}.when.path_prefix"),
            format!(
                "expected an absolute path prefix, found {:?}",
                triggered.when.path_prefix
            ),
        )?;
        check_fault(&triggered.fault, &format!("{at}.fault"), clients, servers)?;
    }
    if let Some(random) = &plan.random {
        let rates = [
            ("drop_request_per_s", random.drop_request_per_s),
            ("drop_reply_per_s", random.drop_reply_per_s),
            ("expire_session_per_s", random.expire_session_per_s),
            ("client_side_expiry_per_s", random.client_side_expiry_per_s),
            ("kill_leader_per_s", random.kill_leader_per_s),
            ("pause_client_per_s", random.pause_client_per_s),
            ("partition_client_per_s", random.partition_client_per_s),
        ];
        for (name, rate) in rates {
            check(
                rate.is_finite() && (0.0..=10.0).contains(&rate),
                format!("faults.random.{name}"),
                format!("expected a rate from 0 to 10 per second, found {rate}"),
            )?;
        }
        for (name, length_ms) in [
            ("pause_ms", random.pause_ms),
            ("partition_ms", random.partition_ms),
            ("restart_after_ms", random.restart_after_ms),
        ] {
            check_length(length_ms, false, format!("faults.random.{name}"))?;
        }
    }
    Ok(())
}

fn check_fault(fault: &Fault, at: &str, clients: u32, servers: u32) -> Result<(), Problem> {
    let client_ok = |client: u32| {
        check(
            client < clients,
            format!("{at}.client"),
            format!(
                "expected a client from 0 to {}, found {client}",
                clients.saturating_sub(1)
            ),
        )
    };
    let server_ok = |server: &ServerRef, path: String| match server {
        ServerRef::Id(id) => check(
            (1..=servers).contains(id),
            path,
            format!("expected a server from 1 to {servers}, found {id}"),
        ),
        _ => Ok(()),
    };
    match fault {
        Fault::DropRequest { client }
        | Fault::DropReply { client }
        | Fault::ExpireSession { client }
        | Fault::ClientSideExpiry { client }
        | Fault::CrashClient { client } => client_ok(*client),
        Fault::PauseClient {
            client,
            duration_ms,
        } => {
            check_length(*duration_ms, true, format!("{at}.duration_ms"))?;
            client_ok(*client)
        }
        Fault::DelayWatch {
            client,
            delay_ms,
            duration_ms,
        } => {
            check_length(*delay_ms, false, format!("{at}.delay_ms"))?;
            check_length(*duration_ms, true, format!("{at}.duration_ms"))?;
            client_ok(*client)
        }
        Fault::KillServer { server } | Fault::RestartServer { server } => {
            server_ok(server, format!("{at}.server"))
        }
        Fault::SlowFollower {
            server,
            delay_ms,
            duration_ms,
        } => {
            check_length(*delay_ms, false, format!("{at}.delay_ms"))?;
            check_length(*duration_ms, true, format!("{at}.duration_ms"))?;
            server_ok(server, format!("{at}.server"))
        }
        Fault::Partition {
            a, b, duration_ms, ..
        } => {
            check_length(*duration_ms, true, format!("{at}.duration_ms"))?;
            for (side, nodes) in [("a", a), ("b", b)] {
                check(
                    !nodes.is_empty(),
                    format!("{at}.{side}"),
                    "expected at least one node on each side of a partition",
                )?;
                for node in nodes {
                    match node {
                        NodeRef::Client(client) => check(
                            *client < clients,
                            format!("{at}.{side}"),
                            format!("expected clients from 0 to {}, found {client}", clients - 1),
                        )?,
                        NodeRef::Server(server) => server_ok(server, format!("{at}.{side}"))?,
                        NodeRef::AllServers => {}
                    }
                }
            }
            Ok(())
        }
        Fault::DataLoss | Fault::ReapContainers => Ok(()),
    }
}
