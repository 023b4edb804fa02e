//! Weights stored as bf16/f16 and computed in f32: the forward pass equals the f32 model's with
//! its weights rounded on the host (round to nearest even, written out below, not burn's
//! cast), the weights take half the bytes, a LoRA model keeps its adapters in f32 over a
//! narrowed frozen base with the same adapter gradients, and saving writes f32 weights.

mod common;

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{DType, Device, Tensor, TensorData};
use common::{base, fixture, ids, logits, max_diff, randomize_b};
use rlvr_models::{
    CausalLm, LoraConfig, WeightDtype, load_pretrained, save_pretrained, store_weights_as,
    token_logprobs, weight_bytes,
};

/// f32 → bfloat16 → f32, round to nearest, ties to even: keep the top 16 bits after adding
/// 0x7FFF plus the lowest kept bit (finite inputs).
fn round_bf16(x: f32) -> f32 {
    let bits = x.to_bits();
    let rounded = bits.wrapping_add(0x7FFF + ((bits >> 16) & 1));
    f32::from_bits(rounded & 0xFFFF_0000)
}

/// The model with every frozen float weight replaced by its host-rounded bf16 value, kept as
/// f32 (trainable weights, the adapters, untouched).
fn rounded_on_host(model: CausalLm) -> CausalLm {
    struct Round;
    impl ModuleMapper for Round {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            if param.val().is_require_grad() {
                return param;
            }
            param.map(|t| {
                let (shape, device) = (t.shape(), t.device());
                let v: Vec<f32> = t
                    .into_data()
                    .try_to_vec::<f32>()
                    .unwrap()
                    .into_iter()
                    .map(round_bf16)
                    .collect();
                Tensor::from_data(TensorData::new(v, shape), &device)
            })
        }
    }
    model.map(&mut Round)
}

/// Every float parameter's dtype, in visiting order.
fn dtypes(model: &CausalLm) -> Vec<DType> {
    struct Types(Vec<DType>);
    impl ModuleVisitor for Types {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            self.0.push(param.val().dtype());
        }
    }
    let mut t = Types(Vec::new());
    model.visit(&mut t);
    t.0
}

#[test]
fn the_round_to_nearest_even_reference_is_right() {
    // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties go to the even one (1).
    assert_eq!(round_bf16(1.0 + 2f32.powi(-8)), 1.0);
    // 1 + 3·2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (even).
    assert_eq!(round_bf16(1.0 + 3.0 * 2f32.powi(-8)), 1.0 + 2f32.powi(-6));
    assert_eq!(round_bf16(1.0 + 2f32.powi(-7)), 1.0 + 2f32.powi(-7));
    assert_eq!(round_bf16(-3.0), -3.0);
}

/// A bf16-stored model computes exactly what the f32 model with host-rounded weights computes,
/// in half the bytes; its logits differ from the unrounded model's by the rounding only.
#[test]
fn bf16_storage_computes_the_f32_model_with_rounded_weights() {
    let device = Device::flex();
    let full = base(&device);
    let narrow = store_weights_as(base(&device), WeightDtype::Bf16);
    assert!(dtypes(&narrow).iter().all(|&d| d == DType::BF16));
    assert_eq!(weight_bytes(&narrow) * 2, weight_bytes(&full));
    assert_eq!(weight_bytes(&full), 4 * full.num_params());

    let reference = rounded_on_host(base(&device));
    let (got, want, unrounded) = (
        logits(&narrow, &device),
        logits(&reference, &device),
        logits(&full, &device),
    );
    assert!(max_diff(&got, &want) < 1e-5, "{}", max_diff(&got, &want));
    let rounding = max_diff(&got, &unrounded);
    assert!(rounding > 1e-5 && rounding < 0.1, "{rounding}");

    // f16 keeps 11 significant bits: closer to f32 than bf16, still not equal.
    let half = store_weights_as(base(&device), WeightDtype::F16);
    assert!(dtypes(&half).iter().all(|&d| d == DType::F16));
    let d16 = max_diff(&logits(&half, &device), &unrounded);
    assert!(d16 > 0.0 && d16 < rounding, "{d16} vs {rounding}");
}

/// Under LoRA on an autodiff device only the frozen base narrows: the adapters stay f32 and
/// train, and their gradients equal those over the host-rounded f32 base.
#[test]
fn a_lora_model_narrows_its_frozen_base_only() {
    let device = Device::flex().autodiff();
    device.seed(7);
    let lora = LoraConfig {
        rank: 2,
        alpha: 4.0,
        target_modules: vec!["self_attn.q_proj".into(), "mlp.up_proj".into()],
        ..LoraConfig::default()
    };
    // A fresh B is zero, which would zero A's gradient.
    let adapted = randomize_b(base(&device).with_lora(&lora).unwrap());
    let narrow = store_weights_as(adapted.clone(), WeightDtype::Bf16);
    let reference = rounded_on_host(adapted);
    let types = dtypes(&narrow);
    let f32_count = types.iter().filter(|&&d| d == DType::F32).count();
    assert_eq!(
        f32_count,
        2 * 2 * 2,
        "A and B of 2 projections in each of 2 layers"
    );
    assert!(types.iter().all(|&d| d == DType::F32 || d == DType::BF16));

    let mask = Tensor::<2>::ones([2, 6], &device);
    let loss = |m: &CausalLm| {
        token_logprobs(m, ids(&device), mask.clone())
            .logp
            .sum()
            .neg()
    };
    let (g_narrow, g_ref) = (loss(&narrow).backward(), loss(&reference).backward());
    let (a, b) = (
        &narrow.model.layers[1].mlp.up_proj,
        &reference.model.layers[1].mlp.up_proj,
    );
    assert!(a.weight.grad(&g_narrow).is_none(), "the base stays frozen");
    for (x, y) in [
        (
            &a.lora.as_ref().unwrap().lora_a,
            &b.lora.as_ref().unwrap().lora_a,
        ),
        (
            &a.lora.as_ref().unwrap().lora_b,
            &b.lora.as_ref().unwrap().lora_b,
        ),
    ] {
        let gx = x
            .grad(&g_narrow)
            .unwrap()
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        let gy = y
            .grad(&g_ref)
            .unwrap()
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        assert!(gx.iter().any(|&g| g != 0.0));
        assert!(max_diff(&gx, &gy) < 1e-5, "{}", max_diff(&gx, &gy));
    }
}

/// Saving a narrowed model writes f32 weights that load back as the rounded values.
#[test]
fn a_narrowed_model_saves_as_f32() {
    let device = Device::flex();
    let tmp = tempfile::tempdir().unwrap();
    let (model, config) = load_pretrained(&fixture(), &device).unwrap();
    let narrow = store_weights_as(model, WeightDtype::Bf16);
    save_pretrained(&narrow, &config, tmp.path()).unwrap();
    let (loaded, _) = load_pretrained(tmp.path(), &device).unwrap();
    assert!(dtypes(&loaded).iter().all(|&d| d == DType::F32));
    let reference = rounded_on_host(base(&device));
    let d = max_diff(&logits(&loaded, &device), &logits(&reference, &device));
    assert!(d < 1e-5, "{d}");
}
