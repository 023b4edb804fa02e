//! `verify_batch` with a verifier that scores chunks: chunk boundaries, input order, and the
//! per-call limit (a stuck chunk times out as a whole and does not stall the other chunks).

use std::sync::Arc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rlvr_verifiers::{Outcome, Reference, Verdict, Verifier, verify_batch};

/// Scores `"k"` as reward k/10; a chunk holding `"stuck"` never returns (sleeps an hour).
/// Records the sizes of the chunks it was given.
struct Chunker {
    size: usize,
    seen: Mutex<Vec<usize>>,
}

impl Verifier for Chunker {
    fn verify(&self, response: &str, reference: &Reference) -> Verdict {
        self.verify_chunk(&[(response.to_string(), reference.clone())])
            .remove(0)
    }

    fn chunk_size(&self) -> usize {
        self.size
    }

    fn verify_chunk(&self, items: &[(String, Reference)]) -> Vec<Verdict> {
        self.seen.lock().unwrap().push(items.len());
        if items.iter().any(|(r, _)| r == "stuck") {
            std::thread::sleep(Duration::from_secs(3600));
        }
        items
            .iter()
            .map(|(r, _)| {
                let k: f32 = r.parse().unwrap();
                Verdict::new(k / 10.0, Outcome::Partial, None, serde_json::Value::Null)
            })
            .collect()
    }

    fn name(&self) -> &'static str {
        "chunker"
    }
}

fn items(responses: &[&str]) -> Vec<(String, Reference)> {
    responses
        .iter()
        .map(|r| {
            (
                r.to_string(),
                Reference::Math {
                    answer: String::new(),
                },
            )
        })
        .collect()
}

#[test]
fn chunks_of_the_verifiers_size_in_input_order() {
    let chunker = Arc::new(Chunker {
        size: 4,
        seen: Mutex::new(Vec::new()),
    });
    let responses: Vec<String> = (0..10).map(|k| k.to_string()).collect();
    let refs: Vec<&str> = responses.iter().map(String::as_str).collect();
    let verdicts = verify_batch(
        chunker.clone() as Arc<dyn Verifier>,
        &items(&refs),
        Duration::from_secs(10),
    );
    let rewards: Vec<f32> = verdicts.iter().map(|v| v.reward).collect();
    let want: Vec<f32> = (0..10).map(|k| k as f32 / 10.0).collect();
    assert_eq!(rewards, want);
    let mut seen = chunker.seen.lock().unwrap().clone();
    seen.sort_unstable();
    assert_eq!(seen, vec![2, 4, 4], "10 items in chunks of 4");
}

#[test]
fn a_stuck_chunk_times_out_whole_and_the_rest_is_scored() {
    let chunker: Arc<dyn Verifier> = Arc::new(Chunker {
        size: 3,
        seen: Mutex::new(Vec::new()),
    });
    // Chunks: [1 2 3] [4 stuck 6] [7 8 9] [5]
    let responses = ["1", "2", "3", "4", "stuck", "6", "7", "8", "9", "5"];
    let started = Instant::now();
    let verdicts = verify_batch(chunker, &items(&responses), Duration::from_millis(500));
    assert!(started.elapsed() < Duration::from_secs(5));
    for (k, v) in verdicts.iter().enumerate() {
        if (3..6).contains(&k) {
            assert_eq!((v.reward, v.outcome), (0.0, Outcome::Timeout), "item {k}");
        } else {
            let want = responses[k].parse::<f32>().unwrap() / 10.0;
            assert_eq!(v.reward, want, "item {k}");
        }
    }
}
