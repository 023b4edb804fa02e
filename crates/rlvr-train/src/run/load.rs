//! The data of a run: both splits read with the config's layout and field mapping
//! (`[data]`), and every record's reference checked against the verifier before the warm
//! start, so a missing or unreadable gold answer (or, under `[stages.scrl]`, a missing chain of
//! subproblems) is an error naming its file and line or row when the run starts, not a reward of
//! 0 at some later step.

use rlvr_verifiers::Verifier;

use crate::config::RunConfig;
use crate::data::{self, Dataset, Example, Fields, Rows};
use crate::error::{Error, Result};
use crate::verify::{kind_of, reference_of};

/// Reads `data.train` and `data.eval`, keeps `data.train_rows` / `data.eval_rows` of them and
/// checks every kept record; the held-out set is then cut to `data.eval_limit`.
///
/// # Errors
/// What [`data::load`] and [`check`] return, and [`Error::Config`] for a row slice that keeps
/// nothing.
pub fn load_data(config: &RunConfig) -> Result<(Vec<Example>, Vec<Example>)> {
    let d = &config.data;
    let fields = Fields::new(d, kind_of(&config.verifier));
    let train = rows_of(
        data::load(&d.train, &d.train_split, &fields)?,
        "train_rows",
        &d.train_rows,
    )?;
    let eval = rows_of(
        data::load(&d.eval, &d.eval_split, &fields)?,
        "eval_rows",
        &d.eval_rows,
    )?;
    let verifier = config.verifier.build()?;
    check(config, verifier.as_ref(), &train)?;
    check(config, verifier.as_ref(), &eval)?;
    if let Some(scrl) = &config.stages.scrl {
        train.check(|ex| {
            data::subproblems::subproblems_of(scrl, ex)
                .map(drop)
                .map_err(|e| format!("example `{}`: {e}", ex.id))
        })?;
    }
    let mut eval = eval.examples;
    if d.eval_limit > 0 {
        eval.truncate(d.eval_limit);
    }
    Ok((train.examples, eval))
}

/// The records `rows` (the value of `data.<key>`) of `dataset`.
fn rows_of(dataset: Dataset, key: &str, rows: &str) -> Result<Dataset> {
    let rows = Rows::parse(rows).map_err(|e| Error::Config(format!("data.{key} = {e}")))?;
    if rows.is_all() {
        return Ok(dataset);
    }
    let bad = |e: String| Error::Config(format!("data.{key} = {e}"));
    Ok(Dataset {
        examples: rows.select(dataset.examples).map_err(bad)?,
        origins: rows.select(dataset.origins).map_err(bad)?,
    })
}

/// Reads and checks one dataset given on the command line (`rlvr eval --data`, `rlvr diagnose
/// --data`), a file or an HF-layout directory whose `split` files are read, with the config's
/// field mapping; cut to its first `limit` examples when `limit > 0`.
///
/// # Errors
/// What [`data::load`] and [`check`] return.
pub fn load_split(
    config: &RunConfig,
    path: &std::path::Path,
    split: &str,
    limit: usize,
) -> Result<Vec<Example>> {
    let fields = Fields::new(&config.data, kind_of(&config.verifier));
    let dataset = data::load(path, split, &fields)?;
    check(config, config.verifier.build()?.as_ref(), &dataset)?;
    let mut examples = dataset.examples;
    if limit > 0 {
        examples.truncate(limit);
    }
    Ok(examples)
}

/// Checks that the verifier can use every record of `dataset`: its reference can be built
/// ([`reference_of`]) and the verifier accepts it ([`Verifier::check_reference`]).
///
/// # Errors
/// [`Error::BadLine`] / [`Error::BadRow`] naming the first record that fails, and how many
/// more do.
pub fn check(config: &RunConfig, verifier: &dyn Verifier, dataset: &Dataset) -> Result<()> {
    dataset.check(|ex| {
        let reference = reference_of(&config.verifier, ex).map_err(|e| match e {
            Error::Config(message) => message,
            other => other.to_string(),
        })?;
        verifier
            .check_reference(&reference)
            .map_err(|e| format!("example `{}`: {e}", ex.id))
    })
}
