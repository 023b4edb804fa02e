//! `cargo xtask plexrl`: a cluster-multiplexing simulator after PlexRL (Zhang et al., "PlexRL:
//! Cluster-Level Orchestration of Serviceized LLM Execution for RLVR", arXiv 2605.20863;
//! methods-extra §22). A systems study, not a training method: it replays measured per-phase
//! timelines of real runs (`metrics.jsonl`) as jobs on shared slots and compares dedicated
//! allocation with multiplexing policies.
//!
//! Files: `timeline.rs` (metrics → phases), `modelling.rs` ([PROPOSED] long tail, added idle),
//! `job.rs` (the job/phase model), `placement.rs` (affinity), `scheduler.rs` (the discrete-event
//! simulation), `policy.rs` (the policies), `cost.rs` (accounting), `report.rs` (tables, JSON).

mod cost;
mod job;
mod modelling;
mod placement;
mod policy;
mod report;
mod scheduler;
mod timeline;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use job::JobSpec;
use modelling::PhaseModel;
use policy::Policy;
use report::Scenario;

const USAGE: &str = "\
Usage: cargo xtask plexrl [--job SPEC]... [--slots N] [--policy P[,P..]] [--switch-s S]
                          [--long-tail] [--idle-share F[,F..]] [--per-job] [--json FILE]

Replays measured RLVR step timelines as jobs on N shared GPU slots and compares dedicated
allocation with multiplexing (PlexRL, arXiv 2605.20863; docs/results.md, \"PlexRL\").

  --job SPEC        PATH[,repeat=R][,scale=X][,offset=S][,memory=M][,name=NAME]; PATH is a run
                    directory (metrics.jsonl, config.toml) or a metrics.jsonl, or fixture:NAME for
                    xtask/fixtures/plexrl/NAME. repeat: the timeline back to back R times (1);
                    scale: factor on every duration (1); offset: start time in s (0); memory:
                    share of a slot's memory the model takes (0.5). Default mix: default-arith,
                    cepo-arith, and both again offset by 0.3 s and 0.5 s.
  --slots N         shared slots (default: half the jobs, rounded up)
  --policy LIST     dedicated, fifo, sff, anti (default: all)
  --switch-s S      slot seconds per switch between jobs (default 0)
  --long-tail       [PROPOSED] count the long tail of each rollout (1 - mean/max length of its
                    wall time, when responses hit max_new_tokens) as free slot time
  --idle-share LIST [PROPOSED] pad every step with host idle up to each share (one scenario each)
  --per-job         per-job rows in the report
  --json FILE       also write the report as JSON
";

/// The default job mix (the committed fixtures).
const DEFAULT_JOBS: [&str; 4] = [
    "fixture:default-arith",
    "fixture:cepo-arith",
    "fixture:default-arith,offset=0.3,name=default-arith-2",
    "fixture:cepo-arith,offset=0.5,name=cepo-arith-2",
];

/// The parsed command line.
#[derive(Debug)]
struct Options {
    jobs: Vec<(PathBuf, JobSpec)>,
    slots: Option<usize>,
    policies: Vec<Policy>,
    switch_s: f64,
    long_tail: bool,
    idle_shares: Vec<Option<f64>>,
    per_job: bool,
    json: Option<PathBuf>,
}

/// Runs `cargo xtask plexrl ARGS`.
pub(crate) fn run(args: &[String]) -> Result<()> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{USAGE}");
        return Ok(());
    }
    let o = parse_args(args)?;
    let mut timelines = Vec::new();
    for (path, _) in &o.jobs {
        if timelines.iter().any(|(p, _)| p == path) {
            continue;
        }
        let t = timeline::read(path)?;
        timelines.push((path.clone(), t));
    }
    let shares: Vec<report::Shares> = timelines.iter().map(|(_, t)| report::shares(t)).collect();
    println!(
        "# PlexRL simulation\n\n## Timelines (measured shares of time/step_s)\n\n{}",
        report::shares_table(&shares)
    );
    let slots = o.slots.unwrap_or(o.jobs.len().div_ceil(2)).max(1);
    let mut scenarios = Vec::new();
    for &idle_share in &o.idle_shares {
        let model = PhaseModel {
            long_tail: o.long_tail,
            idle_share,
        };
        let jobs: Vec<job::Job> = o
            .jobs
            .iter()
            .map(|(path, spec)| {
                let t = &timelines.iter().find(|(p, _)| p == path).expect("read").1;
                job::build(t, spec, &model)
            })
            .collect();
        let mut results = Vec::new();
        for &p in &o.policies {
            let costs = policy::evaluate(&jobs, slots, p, o.switch_s)
                .with_context(|| format!("policy `{}`", p.name()))?;
            results.push((p.name().to_string(), costs));
        }
        let scenario = Scenario {
            idle_share,
            long_tail: o.long_tail,
            switch_s: o.switch_s,
            jobs: jobs.iter().map(|j| j.name.clone()).collect(),
            results,
        };
        println!(
            "## Scenario\n\n{}",
            report::scenario_table(&scenario, o.per_job)
        );
        scenarios.push(scenario);
    }
    if let Some(path) = &o.json {
        let text = serde_json::to_string_pretty(&report::to_json(&shares, &scenarios))?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("could not write {}", path.display()))?;
    }
    Ok(())
}

fn parse_args(args: &[String]) -> Result<Options> {
    let mut o = Options {
        jobs: Vec::new(),
        slots: None,
        policies: Policy::ALL.to_vec(),
        switch_s: 0.0,
        long_tail: false,
        idle_shares: vec![None],
        per_job: false,
        json: None,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .with_context(|| format!("{arg} needs a value\n\n{USAGE}"))
        };
        match arg.as_str() {
            "--job" => o.jobs.push(parse_job(&value()?)?),
            "--slots" => {
                let v = value()?;
                let n: usize = v
                    .parse()
                    .with_context(|| format!("--slots {v}: not a count"))?;
                if n == 0 {
                    bail!("--slots must be at least 1");
                }
                o.slots = Some(n);
            }
            "--policy" => {
                o.policies = value()?
                    .split(',')
                    .map(|p| {
                        Policy::parse(p).with_context(|| {
                            format!("--policy: unknown `{p}` (dedicated, fifo, sff, anti)")
                        })
                    })
                    .collect::<Result<_>>()?;
            }
            "--switch-s" => {
                let v = value()?;
                o.switch_s = v
                    .parse()
                    .ok()
                    .filter(|s: &f64| s.is_finite() && *s >= 0.0)
                    .with_context(|| format!("--switch-s {v}: not a number of seconds >= 0"))?;
            }
            "--long-tail" => o.long_tail = true,
            "--idle-share" => {
                o.idle_shares = value()?
                    .split(',')
                    .map(|f| {
                        f.parse()
                            .ok()
                            .filter(|x: &f64| (0.0..1.0).contains(x))
                            .map(Some)
                            .with_context(|| format!("--idle-share: `{f}` is not in [0, 1)"))
                    })
                    .collect::<Result<_>>()?;
            }
            "--per-job" => o.per_job = true,
            "--json" => o.json = Some(PathBuf::from(value()?)),
            other => bail!("unknown argument `{other}`\n\n{USAGE}"),
        }
    }
    if o.jobs.is_empty() {
        for spec in DEFAULT_JOBS {
            o.jobs.push(parse_job(spec)?);
        }
    }
    Ok(o)
}

/// `PATH[,key=value..]` (see USAGE).
fn parse_job(text: &str) -> Result<(PathBuf, JobSpec)> {
    let mut parts = text.split(',');
    let path = parts.next().unwrap_or_default();
    let path = match path.strip_prefix("fixture:") {
        Some(name) => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/plexrl")
            .join(name),
        None => PathBuf::from(path),
    };
    let mut spec = JobSpec::default();
    for part in parts {
        let (key, value) = part
            .split_once('=')
            .with_context(|| format!("--job {text}: `{part}` is not key=value"))?;
        let number = || -> Result<f64> {
            value
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .with_context(|| format!("--job {text}: {key} = `{value}` is not a number >= 0"))
        };
        match key {
            "repeat" => {
                spec.repeat = value
                    .parse()
                    .ok()
                    .filter(|&r| r > 0)
                    .with_context(|| format!("--job {text}: repeat must be a count >= 1"))?;
            }
            "scale" => spec.scale = number()?,
            "offset" => spec.offset_s = number()?,
            "memory" => spec.memory = number()?,
            "name" => spec.name = Some(value.to_string()),
            _ => bail!("--job {text}: unknown key `{key}` (repeat, scale, offset, memory, name)"),
        }
    }
    Ok((path, spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plexrl_job_spec_parses_and_refuses() {
        let (path, spec) =
            parse_job("runs/x,repeat=3,scale=0.5,offset=2,memory=0.25,name=y").unwrap();
        assert_eq!(path, PathBuf::from("runs/x"));
        assert_eq!(
            spec,
            JobSpec {
                name: Some("y".into()),
                repeat: 3,
                scale: 0.5,
                offset_s: 2.0,
                memory: 0.25
            }
        );
        let err = parse_job("runs/x,speed=2").unwrap_err().to_string();
        assert!(err.contains("unknown key `speed`"), "{err}");
        assert!(parse_job("runs/x,repeat=0").is_err());
        let (fixture, _) = parse_job("fixture:default-arith").unwrap();
        assert!(fixture.join("metrics.jsonl").is_file());
    }
}
