//! Adapters in PEFT's on-disk layout: `adapter_config.json` + `adapter_model.safetensors`, as
//! `peft.PeftModel.from_pretrained(base, dir)` reads them and `save_pretrained` writes them.
//!
//! Tensor names: `base_model.model.<module>.lora_A.weight` (`[r, in]`) and `.lora_B.weight`
//! (`[out, r]`), `<module>` the HF module path (`model.layers.0.self_attn.q_proj`).

use std::path::Path;

use burn::tensor::{Tensor, TensorData};
use safetensors::SafeTensors;
use serde_json::{Value, json};

use super::{ALL_LINEAR, LoraConfig};
use crate::checkpoint::{replace_dir, transposed, view_to_f32, write_safetensors};
use crate::error::{Error, Result};
use crate::model::CausalLm;

/// File name of PEFT's adapter config.
pub const ADAPTER_CONFIG_FILE: &str = "adapter_config.json";
/// File name of PEFT's adapter weights.
pub const ADAPTER_WEIGHTS_FILE: &str = "adapter_model.safetensors";

const PREFIX: &str = "base_model.model.";

/// Writes the adapters of `model` to `dir` in PEFT's layout (f32 tensors), atomically.
/// `base_model` goes to `base_model_name_or_path` (where the base weights are).
///
/// # Errors
/// [`Error::InvalidConfig`] if the model has no adapters; [`Error::Io`] /
/// [`Error::Safetensors`] when writing fails.
pub fn save_adapter(
    model: &CausalLm,
    config: &LoraConfig,
    base_model: Option<&str>,
    dir: &Path,
) -> Result<()> {
    let mut tensors = Vec::new();
    for (i, layer) in model.model.layers.iter().enumerate() {
        for (name, proj) in layer.projections() {
            let Some(lora) = &proj.lora else { continue };
            let module = format!("{PREFIX}model.layers.{i}.{name}");
            for (suffix, param) in [("lora_A", &lora.lora_a), ("lora_B", &lora.lora_b)] {
                let [rows, cols] = param.shape().dims::<2>();
                let data = param
                    .val()
                    .into_data()
                    .convert::<f32>()
                    .try_into_vec::<f32>()
                    .expect("f32 data");
                // burn's [in, r] / [r, out] → PEFT's [r, in] / [out, r].
                tensors.push((
                    format!("{module}.{suffix}.weight"),
                    vec![cols, rows],
                    transposed(&data, rows, cols),
                ));
            }
        }
    }
    if tensors.is_empty() {
        return Err(Error::config(
            "target_modules",
            "the model has no LoRA adapters to save",
        ));
    }
    let adapter_config = json!({
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model,
        "r": config.rank,
        "lora_alpha": config.alpha,
        "lora_dropout": config.dropout,
        "target_modules": config.target_modules,
        "use_rslora": config.use_rslora,
        "bias": "none",
        "fan_in_fan_out": false,
        "inference_mode": true,
        "init_lora_weights": true,
        "modules_to_save": null,
        "layers_to_transform": null,
        "rank_pattern": {},
        "alpha_pattern": {},
        "use_dora": false,
    });
    replace_dir(dir, |tmp| {
        write_safetensors(&tensors, &tmp.join(ADAPTER_WEIGHTS_FILE))?;
        let path = tmp.join(ADAPTER_CONFIG_FILE);
        let text = serde_json::to_string_pretty(&adapter_config).expect("JSON value");
        std::fs::write(&path, text + "\n").map_err(|e| Error::io(&path, e))?;
        Ok(|file: &str| file != ADAPTER_CONFIG_FILE && file != ADAPTER_WEIGHTS_FILE)
    })
}

/// Reads a PEFT LoRA adapter directory and attaches it to `model` (freezing the base), returning
/// the model and the adapter's config.
///
/// Supported: `peft_type = "LORA"`, one rank and alpha for all modules, `bias = "none"`,
/// `target_modules` a list of names (or `"all-linear"`), `use_rslora`; f32/f16/bf16 tensors.
/// Anything else (DoRA, `modules_to_save`, rank or alpha patterns, regex targets, trained
/// biases, `fan_in_fan_out`) is refused with the field named, never silently ignored.
///
/// # Errors
/// [`Error::Adapter`] naming the file and what is wrong; [`Error::Io`], [`Error::Json`],
/// [`Error::Safetensors`] for unreadable files.
pub fn load_adapter(model: CausalLm, dir: &Path) -> Result<(CausalLm, LoraConfig)> {
    let config_path = dir.join(ADAPTER_CONFIG_FILE);
    let text = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
    let raw: Value = serde_json::from_str(&text).map_err(|source| Error::Json {
        path: config_path.clone(),
        source,
    })?;
    let config = parse_config(&raw).map_err(|message| Error::Adapter {
        path: config_path.clone(),
        message,
    })?;

    let weights_path = dir.join(ADAPTER_WEIGHTS_FILE);
    let bytes = std::fs::read(&weights_path).map_err(|e| Error::io(&weights_path, e))?;
    let st_err = |e: safetensors::SafeTensorError| Error::Safetensors {
        path: weights_path.clone(),
        message: e.to_string(),
    };
    let st = SafeTensors::deserialize(&bytes).map_err(st_err)?;
    let adapter_err = |message: String| Error::Adapter {
        path: weights_path.clone(),
        message,
    };
    // Every module with an adapter in the file, and that the file holds nothing else.
    let mut modules = std::collections::BTreeSet::new();
    for name in st.names() {
        let module = name
            .strip_prefix(PREFIX)
            .and_then(|n| {
                n.strip_suffix(".lora_A.weight")
                    .or_else(|| n.strip_suffix(".lora_B.weight"))
            })
            .ok_or_else(|| {
                adapter_err(format!(
                    "unexpected tensor `{name}` (expected `{PREFIX}<module>.lora_A.weight` or \
                     `.lora_B.weight`)"
                ))
            })?;
        modules.insert(module.to_owned());
    }
    let device = model.device();
    let mut used = std::collections::BTreeSet::new();
    let factor = |module: &str, which: &str, shape: [usize; 2]| -> Result<Tensor<2>> {
        let name = format!("{PREFIX}{module}.{which}.weight");
        let view = st.tensor(&name).map_err(|_| {
            adapter_err(format!(
                "missing tensor `{name}`: `target_modules` selects `{module}`"
            ))
        })?;
        if view.shape() != shape {
            return Err(Error::ShapeMismatch {
                name,
                expected: shape.to_vec(),
                found: view.shape().to_vec(),
            });
        }
        // PEFT's [r, in] / [out, r] → burn's [in, r] / [r, out].
        let values = transposed(&view_to_f32(&view, &name)?, shape[0], shape[1]);
        Ok(Tensor::from_data(
            TensorData::new(values, [shape[1], shape[0]]),
            &device,
        ))
    };
    let model = model.attach(&config, |module, d_in, d_out| {
        used.insert(module.to_owned());
        let a = factor(module, "lora_A", [config.rank, d_in])?;
        let b = factor(module, "lora_B", [d_out, config.rank])?;
        Ok((a, b))
    })?;
    if let Some(extra) = modules.difference(&used).next() {
        return Err(adapter_err(format!(
            "tensors for `{extra}`, which `target_modules` of {ADAPTER_CONFIG_FILE} does not \
             select (or the model does not have)"
        )));
    }
    Ok((model, config))
}

/// PEFT's adapter config → [`LoraConfig`], refusing what the adapter format here does not carry.
fn parse_config(raw: &Value) -> std::result::Result<LoraConfig, String> {
    let field = |key: &str| raw.get(key).filter(|v| !v.is_null());
    let peft_type = field("peft_type").and_then(Value::as_str).unwrap_or("");
    if peft_type != "LORA" {
        return Err(format!(
            "`peft_type` is {peft_type:?}; only \"LORA\" is supported"
        ));
    }
    let rank = field("r")
        .and_then(Value::as_u64)
        .ok_or("`r` is missing or not a positive integer")? as usize;
    let alpha = field("lora_alpha")
        .and_then(Value::as_f64)
        .ok_or("`lora_alpha` is missing or not a number")?;
    let dropout = field("lora_dropout").and_then(Value::as_f64).unwrap_or(0.0);
    let target_modules = match field("target_modules") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or("`target_modules` must hold strings")?,
        Some(Value::String(s)) if s == ALL_LINEAR => vec![s.clone()],
        Some(Value::String(s)) => {
            return Err(format!(
                "`target_modules` is the regular expression {s:?}; only a list of module \
                 names or \"{ALL_LINEAR}\" is supported"
            ));
        }
        _ => return Err("`target_modules` is missing".into()),
    };
    let use_rslora = field("use_rslora")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let refuse = |key: &str, ok: &dyn Fn(&Value) -> bool| match field(key) {
        Some(v) if !ok(v) => Err(format!("`{key}` = {v} is not supported")),
        _ => Ok(()),
    };
    refuse("bias", &|v| v == "none")?;
    refuse("use_dora", &|v| v == false)?;
    refuse("fan_in_fan_out", &|v| v == false)?;
    refuse("modules_to_save", &|v| {
        v.as_array().is_some_and(Vec::is_empty)
    })?;
    refuse("layers_to_transform", &|_| false)?;
    refuse("rank_pattern", &|v| {
        v.as_object().is_some_and(|o| o.is_empty())
    })?;
    refuse("alpha_pattern", &|v| {
        v.as_object().is_some_and(|o| o.is_empty())
    })?;
    let config = LoraConfig {
        rank,
        alpha,
        dropout,
        target_modules,
        use_rslora,
    };
    config.validate().map_err(|e| e.to_string())?;
    Ok(config)
}
