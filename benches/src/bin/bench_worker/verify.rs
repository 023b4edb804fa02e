//! Verifier workloads: math answer checking on GSM8K / MATH-500 pairs and the canonical MBPP run.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rlvr_verifiers::{
    CodeConfig, CodeReference, MathConfig, Reference, Verifier, read_jsonl, verify_batch,
};
use serde_json::{Value, json};

/// One math item: a solution text, the gold answer it is checked against, and whether it
/// should verify (false for a perturbed gold).
#[derive(Debug, Clone)]
pub struct Pair {
    /// `gsm8k`, `math500`, or `warmup`.
    pub dataset: &'static str,
    /// The full reference solution.
    pub solution: String,
    /// The answer it is compared with.
    pub gold: String,
    /// Whether the pair should verify.
    pub expected: bool,
}

fn records(dir: &Path, name: &str, limit: usize) -> Result<Vec<Value>> {
    let path = dir.join(name);
    let mut recs = read_jsonl(&path).with_context(|| format!("reading {}", path.display()))?;
    if limit > 0 {
        recs.truncate(limit);
    }
    Ok(recs)
}

fn field(r: &Value, key: &str) -> Result<String> {
    r[key]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("record without string field `{key}`: {r}"))
}

/// Changes the first digit of an answer (`d → d+1 mod 10`), or appends `x` when it has none
/// (the conformance suite's wrong answer of the same shape).
fn perturb(answer: &str) -> String {
    match answer.char_indices().find(|(_, c)| c.is_ascii_digit()) {
        Some((k, c)) => {
            let d = (c.to_digit(10).unwrap_or(0) + 1) % 10;
            format!("{}{}{}", &answer[..k], d, &answer[k + 1..])
        }
        None => format!("{answer}x"),
    }
}

fn gsm8k_pairs(recs: &[Value], dataset: &'static str, out: &mut Vec<Pair>) -> Result<()> {
    for r in recs {
        let solution = field(r, "answer")?;
        let gold = solution
            .rsplit("####")
            .next()
            .unwrap_or_default()
            .trim()
            .to_owned();
        let wrong = match gold.replace(',', "").parse::<i64>() {
            Ok(n) => (n + 1).to_string(),
            Err(_) => perturb(&gold),
        };
        out.push(Pair {
            dataset,
            solution: solution.clone(),
            gold,
            expected: true,
        });
        if dataset != "warmup" {
            out.push(Pair {
                dataset,
                solution,
                gold: wrong,
                expected: false,
            });
        }
    }
    Ok(())
}

/// The math items: 20 GSM8K train pairs for warm-up, then for every GSM8K test and MATH-500
/// record its solution against its gold answer (should verify) and against a perturbed gold
/// (should not).
pub fn math_pairs(dir: &Path, limit: usize) -> Result<Vec<Pair>> {
    let mut pairs = Vec::new();
    gsm8k_pairs(
        &records(dir, "gsm8k_train.jsonl", 20)?,
        "warmup",
        &mut pairs,
    )?;
    gsm8k_pairs(
        &records(dir, "gsm8k_test.jsonl", limit)?,
        "gsm8k",
        &mut pairs,
    )?;
    for r in records(dir, "math500_test.jsonl", limit)? {
        let (solution, gold) = (field(&r, "solution")?, field(&r, "answer")?);
        let wrong = perturb(&gold);
        pairs.push(Pair {
            dataset: "math500",
            solution: solution.clone(),
            gold,
            expected: true,
        });
        pairs.push(Pair {
            dataset: "math500",
            solution,
            gold: wrong,
            expected: false,
        });
    }
    Ok(pairs)
}

/// The pairs as JSON lines `{"dataset", "solution", "gold", "expected"}` for the reference side.
pub fn write_pairs(dir: &Path, limit: usize, out: &Path) -> Result<Value> {
    let pairs = math_pairs(dir, limit)?;
    let text: String = pairs
        .iter()
        .map(|p| {
            json!({"dataset": p.dataset, "solution": p.solution, "gold": p.gold,
                   "expected": p.expected})
            .to_string()
                + "\n"
        })
        .collect();
    std::fs::write(out, text).with_context(|| format!("writing {}", out.display()))?;
    Ok(json!({"pairs": pairs.len(), "file": out}))
}

/// Verifies every pair once, single-threaded (warm-up pairs untimed); items/s per dataset and
/// overall, plus each verdict so that the harness can compare with math-verify item by item.
pub fn math(dir: &Path, limit: usize) -> Result<Value> {
    let pairs = math_pairs(dir, limit)?;
    let v = MathConfig::default().init()?;
    let mut per_set = serde_json::Map::new();
    let (mut total_items, mut total_s) = (0usize, 0.0f64);
    for dataset in ["warmup", "gsm8k", "math500"] {
        let items: Vec<&Pair> = pairs.iter().filter(|p| p.dataset == dataset).collect();
        let start = Instant::now();
        let verdicts: Vec<bool> = items
            .iter()
            .map(|p| {
                let reference = Reference::Math {
                    answer: p.gold.clone(),
                };
                v.verify(&p.solution, &reference).passed
            })
            .collect();
        let secs = start.elapsed().as_secs_f64();
        if dataset == "warmup" {
            continue;
        }
        total_items += items.len();
        total_s += secs;
        per_set.insert(dataset.into(), summary(&items, &verdicts, secs));
    }
    Ok(json!({
        "workload": "math",
        "value": total_items as f64 / total_s,
        "unit": "items/s",
        "threads": 1,
        "items": total_items,
        "secs": total_s,
        "datasets": per_set,
    }))
}

fn summary(items: &[&Pair], verdicts: &[bool], secs: f64) -> Value {
    let pos_ok = items
        .iter()
        .zip(verdicts)
        .filter(|(p, v)| p.expected && **v);
    let neg_ok = items
        .iter()
        .zip(verdicts)
        .filter(|(p, v)| !p.expected && !**v);
    json!({
        "items": items.len(),
        "positives": items.iter().filter(|p| p.expected).count(),
        "negatives": items.iter().filter(|p| !p.expected).count(),
        "positives_verified": pos_ok.count(),
        "negatives_rejected": neg_ok.count(),
        "secs": secs,
        "items_per_s": items.len() as f64 / secs,
        "verdicts": verdicts,
    })
}

/// Runs every canonical MBPP solution against its tests in the sandbox, on all cores
/// ([`verify_batch`]); the sandbox start-up is timed separately.
pub fn mbpp(dir: &Path, limit: usize) -> Result<Value> {
    let recs = records(dir, "mbpp.jsonl", limit)?;
    let mut items = Vec::new();
    for r in &recs {
        let reference = Reference::Code(CodeReference {
            tests: serde_json::from_value(r["test_list"].clone()).context("test_list")?,
            setup_code: r["test_setup_code"].as_str().unwrap_or("").to_owned(),
            ..CodeReference::default()
        });
        items.push((field(r, "code")?, reference));
    }
    let start = Instant::now();
    let verifier: Arc<dyn Verifier> = Arc::new(CodeConfig::default().init()?);
    let init_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let verdicts = verify_batch(verifier, &items, Duration::from_secs(60));
    let secs = start.elapsed().as_secs_f64();
    let passed = verdicts.iter().filter(|v| v.passed).count();
    Ok(json!({
        "workload": "mbpp",
        "value": secs,
        "unit": "s",
        "programs": items.len(),
        "passed": passed,
        "init_s": init_s,
        "programs_per_s": items.len() as f64 / secs,
    }))
}
