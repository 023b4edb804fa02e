//! Loads a HF model directory and saves it again with `save_pretrained` (a check that the
//! output opens in `transformers`): `cargo run -p rlvr-models --example resave -- IN_DIR OUT_DIR`.

use std::path::PathBuf;

use burn::tensor::Device;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1).map(PathBuf::from);
    let (Some(input), Some(output)) = (args.next(), args.next()) else {
        return Err("usage: resave IN_DIR OUT_DIR".into());
    };
    let (model, config) = rlvr_models::load_pretrained(&input, &Device::flex())?;
    rlvr_models::save_pretrained(&model, &config, &output)?;
    println!(
        "saved {} parameters to {}",
        model.num_params(),
        output.display()
    );
    Ok(())
}
