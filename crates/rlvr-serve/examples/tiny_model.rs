//! Writes a tiny random model directory (character tokenizer with a chat template, 2-layer
//! Qwen2) for trying the server or running `.ci/openai-conformance`:
//!
//! ```text
//! cargo run -p rlvr-serve --example tiny_model -- DIR [SEED]
//! ```

#[allow(dead_code)] // the tests use more of it
#[path = "../tests/common/fixture.rs"]
mod fixture;

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(dir) = args.next() else {
        eprintln!("usage: tiny_model DIR [SEED]");
        std::process::exit(2);
    };
    let seed = args
        .next()
        .map_or(0, |s| s.parse().expect("SEED is an integer"));
    let dir = std::path::PathBuf::from(dir);
    fixture::write_tiny_model(&dir, seed);
    println!("{}", dir.display());
}
