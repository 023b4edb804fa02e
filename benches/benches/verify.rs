//! rlvr-verifiers throughput: math verifications per second (GSM8K-style integers, the training
//! loop's hot path, and the 500 MATH-500 answers), and one sandboxed Python run.
//!
//! `cargo bench -p rlvr-benches --bench verify -- --warm-up-time 1 --measurement-time 3`
//!
//! The MATH-500 group reads `$RLVR_DATA_DIR/math500_test.jsonl` (default `../shared/datasets`
//! beside the checkout) and is skipped with a message when the file is absent. The full MBPP
//! canonical run is timed with the `rlvr-verify` binary instead (see the crate README).

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rlvr_verifiers::{CodeConfig, CodeReference, MathConfig, Reference, Verifier};

fn math500() -> Option<Vec<(String, Reference)>> {
    let dir = std::env::var("RLVR_DATA_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets")
        });
    let records = rlvr_verifiers::read_jsonl(&dir.join("math500_test.jsonl")).ok()?;
    records
        .iter()
        .map(|v| {
            let answer = v["answer"].as_str()?.to_string();
            // A response restating the answer in different LaTeX, so that the full pipeline
            // (normalize, parse, equivalence) runs rather than the string fast path.
            let response = format!(
                "Thus the answer is $\\boxed{{{}}}$.",
                answer.replace("\\frac", "\\dfrac").replace(' ', "")
            );
            Some((response, Reference::Math { answer }))
        })
        .collect()
}

fn bench_math(c: &mut Criterion) {
    let v = MathConfig::default().init().expect("math config");
    let mut group = c.benchmark_group("verify/math");

    let gsm: Vec<(String, Reference)> = (0..1000)
        .map(|k| {
            let n = (k * 7919) % 100_000 - 5_000;
            let response = if k % 2 == 0 {
                format!("She pays 3 * 4 = 12 dollars, so in total ... #### {n}")
            } else {
                format!("Adding up the parts gives the total. The answer is {n}.")
            };
            (
                response,
                Reference::Math {
                    answer: n.to_string(),
                },
            )
        })
        .collect();
    group.throughput(Throughput::Elements(gsm.len() as u64));
    group.bench_function("gsm8k_style_integers/1000", |b| {
        b.iter(|| {
            gsm.iter()
                .filter(|(r, g)| v.verify(black_box(r), g).passed)
                .count()
        })
    });

    match math500() {
        Some(items) => {
            group.throughput(Throughput::Elements(items.len() as u64));
            group.bench_function("math500_answers/500", |b| {
                b.iter(|| {
                    items
                        .iter()
                        .filter(|(r, g)| v.verify(black_box(r), g).passed)
                        .count()
                })
            });
        }
        None => eprintln!(
            "verify/math/math500_answers skipped: set RLVR_DATA_DIR to ../shared/datasets"
        ),
    }
    group.finish();
}

fn bench_code(c: &mut Criterion) {
    let v = CodeConfig::default().init().expect("sandbox starts");
    let reference = Reference::Code(CodeReference {
        tests: vec![
            "assert add(1, 2) == 3".into(),
            "assert add(-1, 1) == 0".into(),
        ],
        ..CodeReference::default()
    });
    let mut group = c.benchmark_group("verify/code");
    group.sample_size(20);
    group.throughput(Throughput::Elements(1));
    group.bench_function("sandboxed_run/2_asserts", |b| {
        b.iter(|| {
            v.verify(black_box("def add(a, b):\n    return a + b\n"), &reference)
                .passed
        })
    });
    group.finish();
}

criterion_group!(benches, bench_math, bench_code);
criterion_main!(benches);
