//! One markdown table per workload of the `bench-compare` section, with the targets.

use std::fmt::Write as _;

use serde_json::Value;

use super::report::{Targets, cases, cell, med, num, ratio, ratio_cell, side, stats};

/// The numpy peak table; returns the median peak in FLOP/s.
pub(crate) fn gemm(s: &mut String, doc: &Value) -> Option<f64> {
    let case = cases(doc, "gemm").into_iter().next()?;
    let numpy = side(case, "numpy")?;
    let peak = stats(numpy, "value");
    let sizes: Vec<String> = numpy["runs"]
        .as_array()
        .and_then(|r| r.first())
        .and_then(|r| r["per_size"].as_object())
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "### Machine limit: f32 GEMM (numpy / OpenBLAS)\n\n| n×n×n | GFLOP/s |\n|---|---|"
    );
    for n in &sizes {
        let _ = writeln!(
            s,
            "| {n} | {} |",
            cell(stats(numpy, &format!("per_size/{n}")))
        );
    }
    let _ = writeln!(
        s,
        "| **peak** (best size per round) | **{}** |\n",
        cell(peak)
    );
    peak.map(|p| p.0 * 1e9)
}

pub(crate) fn train(s: &mut String, doc: &Value, peak: Option<f64>, t: &mut Targets) {
    let list = cases(doc, "train");
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "### Train step: forward + backward + AdamW, tokens/s\n\n\
         Random init, f32; per-token log-probs (LM head on positions 0..T−2, log-softmax, gather), \
         mean NLL, backward, AdamW (lr 1e-4, wd 0.01). PyTorch: transformers' model class for \
         the same `config.json`, SDPA attention, `torch.optim.AdamW` (default foreach).\n\n\
         | config | params | rlvr-rs | PyTorch eager | ratio | target | |\n|---|---|---|---|---|---|---|"
    );
    for case in &list {
        let rs = side(case, "rlvr-rs");
        let py = side(case, "PyTorch eager");
        let params = rs
            .and_then(|r| r["runs"][0]["params"].as_f64())
            .map_or("–".into(), |p| format!("{:.1} M", p / 1e6));
        let r = ratio(
            med(case, "rlvr-rs", "value"),
            med(case, "PyTorch eager", "value"),
        );
        let name = case["name"].as_str().unwrap_or("");
        let _ = writeln!(
            s,
            "| {name} | {params} | {} | {} | {} | ≥ 1.0× | {} |",
            cell(rs.and_then(|x| stats(x, "value"))),
            cell(py.and_then(|x| stats(x, "value"))),
            ratio_cell(r),
            t.check(format!("train {name} ≥ 1.0×"), r.map(|r| r >= 1.0))
        );
    }
    // MFU on the larger config (d512l8 when run, else the last one).
    let larger = list
        .iter()
        .find(|c| c["name"].as_str().is_some_and(|n| n.starts_with("d512l8")))
        .or(list.last());
    let _ = writeln!(
        s,
        "\nModel FLOPs utilization: training FLOPs (`CausalLm::flops_per_token`: 6 · matmul weights \
         + 12 · L · H · head_dim · T per token) × tokens/s ÷ the GEMM peak above.\n\n\
         | config | GFLOP/token | rlvr-rs GFLOP/s | MFU rlvr-rs | PyTorch GFLOP/s | MFU PyTorch | target | |\n\
         |---|---|---|---|---|---|---|---|"
    );
    for case in &list {
        let fpt = med(case, "rlvr-rs", "flops_per_token");
        let rs = med(case, "rlvr-rs", "flops_per_s");
        let py = fpt
            .zip(med(case, "PyTorch eager", "value"))
            .map(|(f, v)| f * v);
        let mfu = |x: Option<f64>| ratio(x, peak);
        let pct = |x: Option<f64>| x.map_or("–".into(), |x| format!("{:.1} %", 100.0 * x));
        let is_larger = larger.is_some_and(|l| std::ptr::eq(*l, *case));
        let name = case["name"].as_str().unwrap_or("");
        let (target, status) = if is_larger {
            (
                "≥ 30 %",
                t.check(format!("MFU {name} ≥ 30 %"), mfu(rs).map(|m| m >= 0.3)),
            )
        } else {
            ("", "")
        };
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} | {} | {} | {target} | {status} |",
            fpt.map_or("–".into(), |f| format!("{:.4}", f / 1e9)),
            rs.map_or("–".into(), |x| num(x / 1e9)),
            pct(mfu(rs)),
            py.map_or("–".into(), |x| num(x / 1e9)),
            pct(mfu(py)),
        );
    }
    let _ = writeln!(s);
    tch_backend(s, &list);
}

/// The libtorch side of the train step (`--tch`), when it ran: burn's two CPU backends against
/// PyTorch on the same workload.
fn tch_backend(s: &mut String, list: &[&Value]) {
    if !list.iter().any(|c| side(c, "rlvr-rs tch").is_some()) {
        return;
    }
    let _ = writeln!(
        s,
        "The same train step on burn's libtorch backend (`--tch`: `bench_worker` built with \
         `--features tch` against the reference venv's torch, `train-step --backend tch`), tokens/s:\n\n\
         | config | rlvr-rs flex | rlvr-rs tch | PyTorch eager | flex ÷ PyTorch | tch ÷ PyTorch |\n\
         |---|---|---|---|---|---|"
    );
    for case in list {
        let py = med(case, "PyTorch eager", "value");
        let value = |label| side(case, label).and_then(|x| stats(x, "value"));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            case["name"].as_str().unwrap_or(""),
            cell(value("rlvr-rs")),
            cell(value("rlvr-rs tch")),
            cell(value("PyTorch eager")),
            ratio_cell(ratio(med(case, "rlvr-rs", "value"), py)),
            ratio_cell(ratio(med(case, "rlvr-rs tch", "value"), py)),
        );
    }
    let _ = writeln!(s);
}

pub(crate) fn generate(s: &mut String, doc: &Value, t: &mut Targets) {
    let list = cases(doc, "generate");
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "### Generation: batched sampling with a KV cache, new tokens/s\n\n\
         Prompts of 32 ids, temperature 1, no top-k/top-p, no stop tokens (every row generates \
         the full length); one untimed 8-token run first.\n\n\
         | model, batch | rlvr-rs | transformers `generate` | PyTorch loop + `DynamicCache` | ratio vs generate | ratio vs loop | target | |\n\
         |---|---|---|---|---|---|---|---|"
    );
    for case in &list {
        let cellof = |l: &str| cell(side(case, l).and_then(|x| stats(x, "value")));
        let rs = med(case, "rlvr-rs", "value");
        let r_gen = ratio(rs, med(case, "transformers generate", "value"));
        let r_loop = ratio(rs, med(case, "PyTorch loop + DynamicCache", "value"));
        let name = case["name"].as_str().unwrap_or("");
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} | {} | {} | ≥ 1.5× generate | {} |",
            cellof("rlvr-rs"),
            cellof("transformers generate"),
            cellof("PyTorch loop + DynamicCache"),
            ratio_cell(r_gen),
            ratio_cell(r_loop),
            t.check(format!("generate {name} ≥ 1.5×"), r_gen.map(|r| r >= 1.5))
        );
    }
    let _ = writeln!(s);
}

pub(crate) fn optim(s: &mut String, doc: &Value, t: &mut Targets) {
    let list = cases(doc, "optim");
    if list.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "### Optimizer step: Muon and Pion, ms per step\n\n\
         One step on one `[rows, cols]` matrix with warm momentum (momentum, 5 Newton–Schulz steps, \
         weight decay, update), rlvr-optim defaults; the PyTorch version \
         (`benches/compare/optim.py`) does the same operations, including the flush of entries \
         below 1e-8 after Pion's contracting steps.\n\n\
         | optimizer, shape | rlvr-rs ms | PyTorch ms | ratio (PyTorch ms / rlvr-rs ms) | target | |\n\
         |---|---|---|---|---|---|"
    );
    for case in &list {
        let r = ratio(
            med(case, "PyTorch", "step_ms"),
            med(case, "rlvr-rs", "step_ms"),
        );
        let name = case["name"].as_str().unwrap_or("");
        let _ = writeln!(
            s,
            "| {name} | {} | {} | {} | ≥ 1.0× | {} |",
            cell(side(case, "rlvr-rs").and_then(|x| stats(x, "step_ms"))),
            cell(side(case, "PyTorch").and_then(|x| stats(x, "step_ms"))),
            ratio_cell(r),
            t.check(format!("{name} ≥ 1.0×"), r.map(|r| r >= 1.0))
        );
    }
    let _ = writeln!(
        s,
        "\n| shape | Pion/Muon rlvr-rs | Pion/Muon PyTorch | target | |\n|---|---|---|---|---|"
    );
    for muon in list
        .iter()
        .filter(|c| c["name"].as_str().is_some_and(|n| n.starts_with("muon ")))
    {
        let shape = muon["name"]
            .as_str()
            .unwrap_or("")
            .trim_start_matches("muon ");
        let Some(pion) = list
            .iter()
            .find(|c| c["name"].as_str() == Some(&format!("pion {shape}")))
        else {
            continue;
        };
        let r = |l: &str| ratio(med(pion, l, "step_ms"), med(muon, l, "step_ms"));
        let rs = r("rlvr-rs");
        let _ = writeln!(
            s,
            "| {shape} | {} | {} | ≤ 1.1 | {} |",
            rs.map_or("–".into(), |x| format!("{x:.2}")),
            r("PyTorch").map_or("–".into(), |x| format!("{x:.2}")),
            t.check(format!("Pion/Muon {shape} ≤ 1.1"), rs.map(|x| x <= 1.1))
        );
    }
    let _ = writeln!(s);
}

pub(crate) fn math(s: &mut String, doc: &Value, t: &mut Targets) {
    let Some(case) = cases(doc, "math").into_iter().next() else {
        return;
    };
    let _ = writeln!(
        s,
        "### Math verification: GSM8K and MATH-500, items/s (one thread)\n\n\
         Each record's reference solution against its gold answer (should verify) and against a \
         perturbed gold (GSM8K: value + 1; MATH-500: first digit + 1, should not verify). \
         rlvr-rs: `MathVerifier::verify(solution, answer)`; math-verify: \
         `verify(parse(\"\\\\boxed{{gold}}\"), parse(solution))`, defaults. 20 GSM8K train pairs \
         warm up both, untimed.\n\n\
         | dataset | items | rlvr-rs | math-verify | ratio | target | |\n|---|---|---|---|---|---|---|"
    );
    let datasets = ["gsm8k", "math500"];
    let items = |d: &str| {
        side(case, "rlvr-rs")
            .and_then(|x| x["runs"][0]["datasets"][d]["items"].as_u64())
            .map_or("–".into(), |n| n.to_string())
    };
    for d in datasets {
        let key = format!("datasets/{d}/items_per_s");
        let r = ratio(med(case, "rlvr-rs", &key), med(case, "math-verify", &key));
        let _ = writeln!(
            s,
            "| {d} | {} | {} | {} | {} | ≥ 20× | {} |",
            items(d),
            cell(side(case, "rlvr-rs").and_then(|x| stats(x, &key))),
            cell(side(case, "math-verify").and_then(|x| stats(x, &key))),
            ratio_cell(r),
            t.check(format!("math {d} ≥ 20×"), r.map(|r| r >= 20.0))
        );
    }
    let r = ratio(
        med(case, "rlvr-rs", "value"),
        med(case, "math-verify", "value"),
    );
    let _ = writeln!(
        s,
        "| all | {} | {} | {} | {} | ≥ 20× | {} |",
        side(case, "rlvr-rs")
            .and_then(|x| x["runs"][0]["items"].as_u64())
            .map_or("–".into(), |n| n.to_string()),
        cell(side(case, "rlvr-rs").and_then(|x| stats(x, "value"))),
        cell(side(case, "math-verify").and_then(|x| stats(x, "value"))),
        ratio_cell(r),
        t.check("math all ≥ 20×".into(), r.map(|r| r >= 20.0))
    );
    let _ = writeln!(
        s,
        "\nAgreement with the expected verdicts (last round; verdicts do not vary between rounds):\n\n\
         | dataset | rlvr-rs: gold verified | rlvr-rs: perturbed rejected | math-verify: gold verified | math-verify: perturbed rejected | items where they differ | target | |\n\
         |---|---|---|---|---|---|---|---|"
    );
    let last = |l: &str| {
        side(case, l)
            .and_then(|x| x["runs"].as_array())
            .and_then(|r| r.last())
    };
    for d in datasets {
        let (Some(rs), Some(mv)) = (last("rlvr-rs"), last("math-verify")) else {
            continue;
        };
        let (a, b) = (&rs["datasets"][d], &mv["datasets"][d]);
        let frac = |x: &Value, k: &str, n: &str| {
            format!(
                "{}/{}",
                x[k].as_u64().unwrap_or(0),
                x[n].as_u64().unwrap_or(0)
            )
        };
        let correct = |x: &Value| {
            x["positives_verified"].as_u64().unwrap_or(0)
                + x["negatives_rejected"].as_u64().unwrap_or(0)
        };
        let differ = a["verdicts"]
            .as_array()
            .zip(b["verdicts"].as_array())
            .map(|(x, y)| x.iter().zip(y).filter(|(p, q)| p != q).count());
        let _ = writeln!(
            s,
            "| {d} | {} | {} | {} | {} | {} | rlvr-rs ≥ math-verify | {} |",
            frac(a, "positives_verified", "positives"),
            frac(a, "negatives_rejected", "negatives"),
            frac(b, "positives_verified", "positives"),
            frac(b, "negatives_rejected", "negatives"),
            differ.map_or("–".into(), |n| n.to_string()),
            t.check(
                format!("math {d} agreement"),
                Some(correct(a) >= correct(b))
            )
        );
    }
    let _ = writeln!(s);
}

pub(crate) fn mbpp(s: &mut String, doc: &Value, t: &mut Targets) {
    let Some(case) = cases(doc, "mbpp").into_iter().next() else {
        return;
    };
    let Some(rs) = side(case, "rlvr-rs") else {
        return;
    };
    let run0 = &rs["runs"][0];
    let secs = stats(rs, "value");
    let full = run0["programs"].as_u64() == Some(974);
    let _ = writeln!(
        s,
        "### Code verification: MBPP canonical solutions, seconds\n\n\
         Every canonical solution run against its tests in the sandbox (`verify_batch`, one worker \
         per logical CPU); sandbox start-up ({} s) not included.\n\n\
         | run | programs | passed | seconds | target | |\n|---|---|---|---|---|---|\n\
         | {} | {} | {} | {} | ≤ 30 s{} | {} |\n",
        run0["init_s"]
            .as_f64()
            .map_or("–".into(), |x| format!("{x:.2}")),
        case["name"].as_str().unwrap_or(""),
        run0["programs"],
        run0["passed"],
        cell(secs),
        if full { "" } else { " (full run only)" },
        if full {
            t.check("MBPP ≤ 30 s".into(), secs.map(|x| x.0 <= 30.0))
        } else {
            "–"
        }
    );
}
