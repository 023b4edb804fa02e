//! Writes a HF directory with `save_pretrained` (to check that the output opens in
//! `transformers`). `resave IN_DIR OUT_DIR` loads and saves again; `resave --tiny OUT_DIR`
//! saves a random `ModelConfig::tiny(300, 128, 2)` model.
//!
//! `cargo run -p rlvr-models --example resave -- IN_DIR OUT_DIR`

use std::path::PathBuf;

use burn::tensor::Device;
use rlvr_models::{CausalLm, ModelConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [input, output] = args.as_slice() else {
        return Err("usage: resave (IN_DIR | --tiny) OUT_DIR".into());
    };
    let device = Device::flex();
    let (model, config) = if input == "--tiny" {
        device.seed(0);
        let config = ModelConfig::tiny(300, 128, 2);
        (CausalLm::try_new(&config, &device)?, config)
    } else {
        rlvr_models::load_pretrained(&PathBuf::from(input), &device)?
    };
    rlvr_models::save_pretrained(&model, &config, &PathBuf::from(output))?;
    println!("saved {} parameters to {output}", model.num_params());
    Ok(())
}
