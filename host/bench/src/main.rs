//! `wasmgate-bench`: see `wasmgate-bench --help` and the library documentation.
#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::{CommandFactory as _, Parser as _};
use wasmgate_bench::bench::Bench;
use wasmgate_bench::cli::{Args, Scenario};
use wasmgate_bench::load::LoadReport;
use wasmgate_bench::report::{Params, ReplicaSummary, ScenarioReport, Summary};

fn main() -> ExitCode {
    let args = Args::parse();
    // Plugin flags that do not go together are invalid flags too (exit 2).
    if let Err(e) = wasmgate_bench::plugins::bindings(&args).and_then(|_| args.check_replicas()) {
        Args::command()
            .error(clap::error::ErrorKind::ArgumentConflict, e)
            .exit();
    }
    let runtime = if args.client_threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.client_threads as usize)
            .enable_all()
            .build()
    };
    let result = runtime
        .map_err(anyhow::Error::from)
        .and_then(|rt| rt.block_on(run(args)));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wasmgate-bench: error: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.several_replicas() {
        return run_replicas(args).await;
    }
    let bench = Bench::new(args.clone()).await?;
    let params = Params::new(&args, bench.ep.authority().to_owned());
    eprintln!(
        "wasmgate-bench: run {} against {} ({}, {} clients, {} B objects, {:?} + {:?} warm-up per scenario)",
        bench.run_id,
        params.server,
        params.protocol,
        args.concurrency,
        args.object_size,
        args.duration,
        args.warmup
    );
    if !params.plugin_bindings.is_empty() {
        println!(
            "plugins {}",
            wasmgate_bench::plugins::describe(&params.plugin_bindings)
        );
    }
    let mut summary = Summary::new(bench.run_id.clone(), params);
    let (mut fatal, mut unclean) = (false, false);
    for scenario in args.scenario.expand() {
        eprintln!("wasmgate-bench: {} ...", scenario.name());
        let result = match scenario {
            Scenario::Create => bench.create().await.map(ScenarioReport::Load),
            Scenario::Get => bench.get().await.map(ScenarioReport::Load),
            Scenario::Update => bench.update().await.map(ScenarioReport::Load),
            Scenario::Apply => bench.apply().await.map(ScenarioReport::Load),
            Scenario::List => bench.list().await.map(ScenarioReport::Load),
            Scenario::Watch => bench.watch().await.map(ScenarioReport::Watch),
            Scenario::Connections => bench.connections().await.map(ScenarioReport::Connections),
            Scenario::All => continue,
        };
        match result {
            Ok(r) => {
                println!("{r}");
                if let ScenarioReport::Load(l) = &r
                    && let Some(first) = &l.errors.first
                {
                    println!("        first failure: {first}");
                    unclean = true;
                }
                if let ScenarioReport::Watch(w) = &r {
                    if let Some(first) = &w.write_errors.first {
                        println!("        first write failure: {first}");
                        unclean = true;
                    }
                    if let Some(f) = &w.watcher_failure {
                        println!("        first watcher failure: {f}");
                    }
                    if !w.correct() {
                        unclean = true;
                    }
                }
                if let ScenarioReport::Connections(c) = &r
                    && !c.correct()
                {
                    if let Some(first) = &c.errors.first {
                        println!("        first failure: {first}");
                    }
                    unclean = true;
                }
                summary.add(&r)?;
            }
            Err(e) => {
                println!("{:<7} FAILED: {e:#}", scenario.name());
                summary.add_failure(scenario.name(), &e);
                fatal = true;
            }
        }
    }
    if let Err(e) = bench.clean_up().await {
        eprintln!("wasmgate-bench: cleaning up: {e:#}");
    }
    finish(&summary, fatal, unclean)
}

/// Several replicas at once (`--kubeconfig` repeated; load scenarios only, see
/// `Args::check_replicas`): each scenario runs against every replica at the same time,
/// each with --concurrency clients and its own run id; one line per replica, then their
/// aggregate; the JSON line holds the aggregate under `scenarios` and each replica's
/// results under `replicas` (issue 28).
async fn run_replicas(args: Args) -> anyhow::Result<ExitCode> {
    let mut benches = Vec::new();
    for each in args.per_replica() {
        benches.push(std::sync::Arc::new(Bench::new(each).await?));
    }
    let servers: Vec<String> = benches
        .iter()
        .map(|b| b.ep.authority().to_owned())
        .collect();
    let params = Params::new(&args, servers.join(","));
    eprintln!(
        "wasmgate-bench: runs {} against {} replicas {} ({}, {} clients each, {} B objects, {:?} + {:?} warm-up per scenario)",
        benches
            .iter()
            .map(|b| b.run_id.as_str())
            .collect::<Vec<_>>()
            .join(","),
        benches.len(),
        params.server,
        params.protocol,
        args.concurrency,
        args.object_size,
        args.duration,
        args.warmup
    );
    let run_ids: Vec<&str> = benches.iter().map(|b| b.run_id.as_str()).collect();
    let mut summary = Summary::new(run_ids.join(","), params);
    summary.replicas = benches
        .iter()
        .zip(&servers)
        .map(|(b, s)| ReplicaSummary::new(s.clone(), b.run_id.clone()))
        .collect();
    let (mut fatal, mut unclean) = (false, false);
    for scenario in args.scenario.expand() {
        eprintln!(
            "wasmgate-bench: {} on {} replicas ...",
            scenario.name(),
            benches.len()
        );
        let mut runs = tokio::task::JoinSet::new();
        for (i, b) in benches.iter().enumerate() {
            let b = b.clone();
            runs.spawn(async move {
                let r = match scenario {
                    Scenario::Create => b.create().await,
                    Scenario::Get => b.get().await,
                    Scenario::Update => b.update().await,
                    Scenario::Apply => b.apply().await,
                    Scenario::List => b.list().await,
                    other => Err(anyhow::anyhow!("{} is not a load scenario", other.name())),
                };
                (i, r)
            });
        }
        let mut results: Vec<_> = runs.join_all().await;
        results.sort_by_key(|(i, _)| *i);
        let mut reports = Vec::new();
        for (i, r) in results {
            match r {
                Ok(r) => {
                    println!("replica {} ({}): {r}", i + 1, servers[i]);
                    if let Some(first) = &r.errors.first {
                        println!("        first failure: {first}");
                        unclean = true;
                    }
                    summary.replicas[i].add(&ScenarioReport::Load(r.clone()))?;
                    reports.push(r);
                }
                Err(e) => {
                    println!(
                        "replica {} ({}): {:<7} FAILED: {e:#}",
                        i + 1,
                        servers[i],
                        scenario.name()
                    );
                    summary.add_failure(scenario.name(), &e);
                    fatal = true;
                }
            }
        }
        if reports.len() == benches.len() {
            let all = ScenarioReport::Load(LoadReport::aggregate(&reports)?);
            println!("all {} replicas: {all}", benches.len());
            summary.add(&all)?;
        }
    }
    for b in &benches {
        if let Err(e) = b.clean_up().await {
            eprintln!("wasmgate-bench: cleaning up: {e:#}");
        }
    }
    finish(&summary, fatal, unclean)
}

/// Prints the JSON line; exits 1 when a scenario could not run, 3 when requests failed or
/// a watcher or connection check came out wrong.
fn finish(summary: &Summary, fatal: bool, unclean: bool) -> anyhow::Result<ExitCode> {
    println!("{}", summary.to_line()?);
    Ok(match (fatal, unclean) {
        (true, _) => ExitCode::from(1),
        (false, true) => ExitCode::from(3),
        (false, false) => ExitCode::SUCCESS,
    })
}
