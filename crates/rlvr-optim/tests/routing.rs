//! Parameter routing on a stand-in decoder with HF parameter names, the config registry, and
//! the check that the routed hybrid applies exactly the optimizer each parameter was routed to.

mod common;

use burn::module::Param;
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::{Device, Tensor};
use common::{HEADS, KV_HEADS, TinyDecoder, VOCAB, max_abs_diff, parameters, tokens, values};
use rlvr_optim::{
    AdamwConfig, HeadAxis, HeadSplit, OptimizerConfig, PerHeadConfig, PionConfig, RoutingConfig,
    Target,
};

fn device() -> Device {
    let device = Device::flex().autodiff();
    device.seed(11);
    device
}

fn target_of(optim: &rlvr_optim::RlvrOptimizer, path: &str) -> Target {
    optim
        .routes()
        .iter()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("no route for {path}"))
        .target
}

#[test]
fn default_routing_sends_hidden_matrices_to_the_matrix_optimizer() {
    let model = TinyDecoder::new(2, &device());
    let optim = OptimizerConfig::Muon(Default::default())
        .init(&model)
        .unwrap();
    let routes = optim.routes();
    // 2 layers × (7 weights + 3 biases + 2 gammas) + embed + norm + lm_head.
    assert_eq!(routes.len(), 2 * 12 + 3);
    for r in routes {
        let hidden = r.path.contains("_proj.weight");
        let expected = if hidden {
            Target::Matrix(None)
        } else {
            Target::Adamw
        };
        assert_eq!(r.target, expected, "{}", r.path);
        if r.dims.len() != 2 {
            assert_eq!(
                r.target,
                Target::Adamw,
                "1-D {} must not reach Muon",
                r.path
            );
        }
    }
    assert_eq!(target_of(&optim, "embed_tokens.weight"), Target::Adamw);
    assert_eq!(target_of(&optim, "lm_head.weight"), Target::Adamw);
    assert_eq!(
        target_of(&optim, "layers.1.self_attn.q_proj.bias"),
        Target::Adamw
    );
    assert_eq!(
        target_of(&optim, "layers.0.input_layernorm.gamma"),
        Target::Adamw
    );
    assert_eq!(
        target_of(&optim, "layers.1.mlp.down_proj.weight"),
        Target::Matrix(None)
    );
}

#[test]
fn per_head_routing_splits_attention_projections() {
    let model = TinyDecoder::new(1, &device());
    let config = OptimizerConfig::Pion(Default::default()).with_attention_heads(HEADS, KV_HEADS);
    let optim = config.init(&model).unwrap();
    let split = |heads, axis| Target::Matrix(Some(HeadSplit { heads, axis }));
    let p = |name: &str| format!("layers.0.{name}.weight");
    assert_eq!(
        target_of(&optim, &p("self_attn.q_proj")),
        split(HEADS, HeadAxis::Cols)
    );
    assert_eq!(
        target_of(&optim, &p("self_attn.k_proj")),
        split(KV_HEADS, HeadAxis::Cols)
    );
    assert_eq!(
        target_of(&optim, &p("self_attn.v_proj")),
        split(KV_HEADS, HeadAxis::Cols)
    );
    assert_eq!(
        target_of(&optim, &p("self_attn.o_proj")),
        split(HEADS, HeadAxis::Rows)
    );
    assert_eq!(target_of(&optim, &p("mlp.gate_proj")), Target::Matrix(None));
    assert_eq!(
        target_of(&optim, "layers.0.self_attn.q_proj.bias"),
        Target::Adamw
    );
}

#[test]
fn non_dividing_head_count_falls_back_to_the_whole_matrix() {
    let model = TinyDecoder::new(1, &device());
    // 16 query features are not divisible by 3 heads.
    let optim = OptimizerConfig::Pion(Default::default())
        .with_attention_heads(3, 3)
        .init(&model)
        .unwrap();
    assert_eq!(
        target_of(&optim, "layers.0.self_attn.q_proj.weight"),
        Target::Matrix(None)
    );
}

#[test]
fn routing_patterns_are_overridable() {
    let model = TinyDecoder::new(1, &device());
    let config = OptimizerConfig::Muon(rlvr_optim::MuonConfig {
        routing: RoutingConfig {
            adamw_patterns: vec!["embed".into(), "lm_head".into(), "mlp".into()],
            matrix_patterns: vec!["lm_head".into()],
            per_head: None,
        },
        ..Default::default()
    });
    let optim = config.init(&model).unwrap();
    assert_eq!(target_of(&optim, "lm_head.weight"), Target::Matrix(None));
    assert_eq!(
        target_of(&optim, "layers.0.mlp.up_proj.weight"),
        Target::Adamw
    );
    assert_eq!(target_of(&optim, "embed_tokens.weight"), Target::Adamw);
    // No pattern can send a 1-D parameter to Muon.
    let everything = OptimizerConfig::Muon(rlvr_optim::MuonConfig {
        routing: RoutingConfig {
            matrix_patterns: vec![String::new()],
            ..Default::default()
        },
        ..Default::default()
    });
    let optim = everything.init(&model).unwrap();
    assert_eq!(target_of(&optim, "norm.gamma"), Target::Adamw);
    assert_eq!(
        target_of(&optim, "embed_tokens.weight"),
        Target::Matrix(None)
    );
}

fn grad_of<const D: usize>(param: &Param<Tensor<D>>, grads: &GradientsParams) -> Tensor<D> {
    grads.get::<D>(param.id).expect("parameter has a gradient")
}

/// The hybrid's update of each parameter equals a direct step of the optimizer it was routed
/// to: proves that routing paths match the paths burn's `ModuleOptimizer` sees, and that no
/// 1-D parameter reached Pion (Pion panics on rank ≠ 2).
#[test]
fn hybrid_step_applies_the_routed_optimizer() {
    let device = device();
    let model = TinyDecoder::new(1, &device);
    let pion = PionConfig::default();
    let config = OptimizerConfig::Pion(pion.clone()).with_attention_heads(HEADS, KV_HEADS);
    let mut optim = config.init(&model).unwrap();
    let lr = 0.01;

    let target = Tensor::<3>::zeros([2, 5, VOCAB], &device);
    let loss = model.loss(tokens(2, 5, 0, &device), target);
    let grads = GradientsParams::from_grads(loss.backward(), &model);

    let attn = &model.layers[0].self_attn;
    let q_grad = grad_of(&attn.q_proj.weight, &grads).inner();
    let up_grad = grad_of(&model.layers[0].mlp.up_proj.weight, &grads).inner();
    let emb_grad = grad_of(&model.embed_tokens.weight, &grads).inner();
    let bias_grad = grad_of(attn.k_proj.bias.as_ref().unwrap(), &grads).inner();
    let q0 = attn.q_proj.weight.val().inner();
    let up0 = model.layers[0].mlp.up_proj.weight.val().inner();
    let emb0 = model.embed_tokens.weight.val().inner();
    let bias0 = attn.k_proj.bias.as_ref().unwrap().val().inner();
    let before = parameters(&model);

    let stepped = optim.step(lr, model, grads);

    let q_heads = HeadSplit {
        heads: HEADS,
        axis: HeadAxis::Cols,
    };
    let (q_want, _) = pion
        .build(Some(q_heads))
        .unwrap()
        .step(lr, q0, q_grad, None);
    let (up_want, _) = pion.build(None).unwrap().step(lr, up0, up_grad, None);
    let adamw = AdamwConfig::default().build().unwrap();
    let (emb_want, _) = adamw.step(lr, emb0, emb_grad, None);
    let (bias_want, _) = adamw.step(lr, bias0, bias_grad, None);

    let attn = &stepped.layers[0].self_attn;
    let checks = [
        ("q_proj", values(attn.q_proj.weight.val()), values(q_want)),
        (
            "up_proj",
            values(stepped.layers[0].mlp.up_proj.weight.val()),
            values(up_want),
        ),
        (
            "embed",
            values(stepped.embed_tokens.weight.val()),
            values(emb_want),
        ),
    ];
    for (name, got, want) in checks {
        assert!(max_abs_diff(&got, &want) < 1e-7, "{name}");
    }
    let bias = values(attn.k_proj.bias.as_ref().unwrap().val());
    assert!(
        max_abs_diff(&bias, &values(bias_want)) < 1e-7,
        "k_proj.bias"
    );
    // Every parameter got a gradient and moved.
    let after = parameters(&stepped);
    assert_eq!(after.len(), 12 + 3);
    for ((path, old), (_, new)) in before.iter().zip(&after) {
        assert!(max_abs_diff(old, new) > 0.0, "{path} did not move");
    }
}

#[test]
fn config_reads_from_toml_with_defaults() {
    let config: OptimizerConfig = toml::from_str(
        r#"
        kind = "pion"
        promotion_steps = 1
        scale = { rule = "max_dim", factor = 2.0 }
        [adamw]
        weight_decay = 0.0
        [routing.per_head]
        num_heads = 4
        num_kv_heads = 2
        "#,
    )
    .unwrap();
    let expected = OptimizerConfig::Pion(PionConfig {
        promotion_steps: 1,
        scale: rlvr_optim::UpdateScale::MaxDim { factor: 2.0 },
        adamw: AdamwConfig {
            weight_decay: 0.0,
            ..Default::default()
        },
        routing: RoutingConfig {
            per_head: Some(PerHeadConfig::new(4, 2)),
            ..Default::default()
        },
        ..Default::default()
    });
    assert_eq!(config, expected);

    let adamw: OptimizerConfig = toml::from_str(r#"kind = "adamw""#).unwrap();
    assert_eq!(adamw, OptimizerConfig::Adamw(AdamwConfig::default()));
    // Round trip.
    let text = toml::to_string(&expected).unwrap();
    assert_eq!(toml::from_str::<OptimizerConfig>(&text).unwrap(), expected);
}

#[test]
fn bad_configs_are_typed_errors_naming_the_field() {
    let unknown = toml::from_str::<OptimizerConfig>("kind = \"muon\"\nmomentun = 0.9").unwrap_err();
    assert!(unknown.to_string().contains("momentun"), "{unknown}");

    let model = TinyDecoder::new(1, &device());
    let cases = [
        (
            "kind = \"pion\"\npromotion_steps = 6",
            "pion.promotion_steps",
        ),
        ("kind = \"muon\"\nmomentum = 1.0", "muon.momentum"),
        ("kind = \"pion\"\nns_steps = 0", "pion.ns_steps"),
        ("kind = \"adamw\"\nbeta2 = 1.5", "adamw.beta2"),
        ("kind = \"muon\"\n[adamw]\nepsilon = 0.0", "adamw.epsilon"),
        (
            "kind = \"pion\"\n[routing.per_head]\nnum_kv_heads = 2",
            "routing.per_head.num_heads",
        ),
        (
            "kind = \"muon\"\nscale = { rule = \"max_dim\", factor = -1.0 }",
            "muon.scale.factor",
        ),
    ];
    for (text, field) in cases {
        let config: OptimizerConfig = toml::from_str(text).unwrap();
        let err = config.init(&model).err().expect(text).to_string();
        assert!(err.contains(field), "{text}: {err}");
    }
}
