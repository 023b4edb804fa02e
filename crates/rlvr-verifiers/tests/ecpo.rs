//! The ECPO reward against `scripts/reference_ecpo.py` (stdlib Python written from the spec,
//! `tests/fixtures/ecpo_golden.json`): every term, CertNDCG and the reward under three weight
//! settings, through the public `Verifier` API; plus its config and reference errors.

use rlvr_verifiers::{EcpoConfig, Kind, Outcome, Reference, Verifier, VerifierConfig};
use serde_json::{Value, json};

const TOL: f64 = 1e-6;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/ecpo_golden.json")).expect("fixture parses")
}

fn reference(case: &Value) -> Reference {
    Reference::from_record(Kind::Ecpo, case).expect("a fixture case is a record")
}

#[test]
fn terms_and_rewards_match_the_reference() {
    let fx = fixture();
    let weights: Vec<(f64, f64, f64)> = serde_json::from_value(fx["weights"].clone()).unwrap();
    let cases = fx["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 20);
    let (mut gated, mut passed) = (0, 0);
    for (w, &(ndcg_weight, validity_weight, cycle_weight)) in weights.iter().enumerate() {
        let verifier = EcpoConfig {
            ndcg_weight,
            validity_weight,
            cycle_weight,
        }
        .init()
        .unwrap();
        for c in cases {
            let response = c["response"].as_str().unwrap();
            let v = verifier.verify(response, &reference(c));
            let want = c["rewards"][w].as_f64().unwrap();
            assert!(
                (f64::from(v.reward) - want).abs() < TOL,
                "{response} weights {w}: reward {} want {want}",
                v.reward
            );
            assert_eq!(v.passed, c["passed"].as_bool().unwrap(), "{response}");
            let gate = c["gate"].as_bool().unwrap();
            assert_eq!(v.outcome == Outcome::Unparseable, !gate, "{response}");
            for name in ["ndcg", "validity", "cycle", "cert_ndcg"] {
                let part = v.parts.iter().find(|p| p.name == name).expect("part");
                let want = c["terms"][name].as_f64().unwrap();
                assert!(
                    (f64::from(part.reward) - want).abs() < TOL,
                    "{response}: {name} {} want {want}",
                    part.reward
                );
            }
            if w == 0 {
                gated += usize::from(!gate);
                passed += usize::from(v.passed);
            }
        }
    }
    // The fixture covers every branch: seven gate refusals, six certified ideal answers.
    assert_eq!((gated, passed), (7, 6));
}

#[test]
fn config_errors_name_the_key() {
    for (toml, key) in [
        (
            "kind = \"ecpo\"\nndcg_weight = -1.0",
            "verifier.ndcg_weight",
        ),
        (
            "kind = \"ecpo\"\nndcg_weight = 0.0\nvalidity_weight = 0.0\ncycle_weight = 0.0",
            "verifier.ndcg_weight",
        ),
        (
            "kind = \"ecpo\"\ncycle_weight = nan",
            "verifier.cycle_weight",
        ),
    ] {
        let c: VerifierConfig = toml::from_str(toml).unwrap();
        let Err(err) = c.build() else {
            panic!("{toml}: accepted");
        };
        let err = err.to_string();
        assert!(err.contains(key), "{toml}: {err}");
    }
    let err = toml::from_str::<VerifierConfig>("kind = \"ecpo\"\nlambda = 1.0")
        .unwrap_err()
        .to_string();
    assert!(err.contains("lambda"), "{err}");
}

#[test]
fn records_and_references_are_checked() {
    let good = json!({"intent": ["R"], "spans": [["KA", "R"]], "k": 2});
    let r = Reference::from_record(Kind::Ecpo, &good).unwrap();
    let v = VerifierConfig::default_for(Kind::Ecpo).build().unwrap();
    assert!(v.check_reference(&r).is_ok());
    assert!(v.verify("KA1;", &r).passed);
    for (record, needle) in [
        (json!({"spans": [["KA", "R"]], "k": 2}), "intent"),
        (json!({"intent": ["R"], "spans": [["KA"]], "k": 2}), "spans"),
        (json!({"intent": ["R"], "spans": [["KA", "R"]]}), "`k`"),
        (
            json!({"intent": ["R"], "spans": [["KA", "R"]], "k": -1}),
            "`k`",
        ),
    ] {
        let err = Reference::from_record(Kind::Ecpo, &record).unwrap_err();
        assert!(err.contains(needle), "{record}: {err}");
    }
    for (record, needle) in [
        (
            json!({"intent": ["B"], "spans": [["KA", "R"]], "k": 2}),
            "NDCG",
        ),
        (
            json!({"intent": ["R"], "spans": [["KA", "R"]], "k": 0}),
            "`k`",
        ),
        (
            json!({"intent": ["R"], "spans": [["KA", "R"], ["", "R"]], "k": 1}),
            "span 2",
        ),
    ] {
        let r = Reference::from_record(Kind::Ecpo, &record).unwrap();
        let err = v.check_reference(&r).unwrap_err();
        assert!(err.contains(needle), "{record}: {err}");
    }
}
