//! Dequantization of each supported ggml block format against hand-built blocks (expected values
//! derived in comments from the block layouts of ggml's `ggml-common.h`) and against random
//! blocks dequantized by llama.cpp's `gguf` Python package (`scripts/make_gguf_fixtures.py`).

use rlvr_models::gguf::{GgmlType, dequantize};

fn f16_bytes(bits: u16) -> [u8; 2] {
    bits.to_le_bytes()
}

#[test]
fn f32_f16_bf16_scalars() {
    let mut b = Vec::new();
    b.extend(1.5f32.to_le_bytes());
    b.extend((-2.0f32).to_le_bytes());
    assert_eq!(dequantize(GgmlType::F32, &b).unwrap(), vec![1.5, -2.0]);
    // IEEE half: 0x3C00 = 1.0; 0xC000 = -2.0; 0x3555 = (1 + 0x155/1024)·2^-2 = 0.333251953125;
    // 0x7BFF = 65504 (largest finite); 0x0001 = 2^-24 (smallest subnormal).
    let b: Vec<u8> = [0x3C00u16, 0xC000, 0x3555, 0x7BFF, 0x0001]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(
        dequantize(GgmlType::F16, &b).unwrap(),
        vec![1.0, -2.0, 0.333_251_95, 65504.0, 2f32.powi(-24)]
    );
    // bfloat16 = the top 16 bits of an f32: 0x3FC0 → 0x3FC00000 = 1.5; 0xC040 → -3.0.
    let b: Vec<u8> = [0x3FC0u16, 0xC040]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(dequantize(GgmlType::Bf16, &b).unwrap(), vec![1.5, -3.0]);
}

#[test]
fn q8_0_block() {
    // block_q8_0 { f16 d; i8 qs[32] }, y = d·q. d = 0x3800 = 0.5, q_i = 4i − 64 (−64..60).
    let mut b = f16_bytes(0x3800).to_vec();
    b.extend((0..32).map(|i| (4 * i - 64) as i8 as u8));
    let y = dequantize(GgmlType::Q8_0, &b).unwrap();
    let expected: Vec<f32> = (0..32).map(|i| 0.5 * (4 * i - 64) as f32).collect();
    assert_eq!(y, expected);
    assert_eq!((y[0], y[31]), (-32.0, 30.0));
}

#[test]
fn q4_0_block() {
    // block_q4_0 { f16 d; u8 qs[16] }: element j (< 16) is the low nibble of qs[j], element
    // j + 16 the high nibble; y = d·(nibble − 8). d = 0x4000 = 2.0; qs[j] = j | (15 − j) << 4,
    // so y[j] = 2(j − 8) and y[j + 16] = 2(15 − j − 8) = 2(7 − j).
    let mut b = f16_bytes(0x4000).to_vec();
    b.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    let y = dequantize(GgmlType::Q4_0, &b).unwrap();
    for j in 0..16 {
        assert_eq!(y[j], 2.0 * (j as f32 - 8.0), "y[{j}]");
        assert_eq!(y[j + 16], 2.0 * (7.0 - j as f32), "y[{}]", j + 16);
    }
    assert_eq!((y[0], y[15], y[16], y[31]), (-16.0, 14.0, 14.0, -16.0));
}

#[test]
fn q4_1_block() {
    // block_q4_1 { f16 d; f16 m; u8 qs[16] }: y = d·nibble + m, low nibbles first.
    // d = 0x3400 = 0.25, m = 0xBC00 = −1; qs[j] = j | (15 − j) << 4.
    let mut b = f16_bytes(0x3400).to_vec();
    b.extend(f16_bytes(0xBC00));
    b.extend((0..16u8).map(|j| j | ((15 - j) << 4)));
    let y = dequantize(GgmlType::Q4_1, &b).unwrap();
    for j in 0..16 {
        assert_eq!(y[j], 0.25 * j as f32 - 1.0);
        assert_eq!(y[j + 16], 0.25 * (15 - j) as f32 - 1.0);
    }
    assert_eq!((y[0], y[15], y[16]), (-1.0, 2.75, 2.75));
}

#[test]
fn q4_k_block() {
    // block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] } (256 values, 8 sub-blocks of 32).
    // Sub-block s has a 6-bit scale sc[s] and minimum m[s]; y = d·sc[s]·q − dmin·m[s].
    // Packing (ggml `get_scale_min_k4`): for s < 4, sc[s] = scales[s] & 63, m[s] = scales[s+4] & 63;
    // for s ≥ 4, sc[s] = (scales[s+4] & 15) | (scales[s−4] >> 6) << 4 and
    //            m[s]  = (scales[s+4] >> 4) | (scales[s]   >> 6) << 4.
    // Chosen sc = [1, 2, 3, 63, 17, 5, 33, 0], m = [0, 1, 2, 3, 4, 20, 40, 63]; packed by hand:
    //   scales[0] = 1 | (17>>4)<<6 = 65     scales[4] = 0 | (4>>4)<<6  = 0     scales[8]  = 1 | 4<<4  = 65
    //   scales[1] = 2 | (5>>4)<<6  = 2      scales[5] = 1 | (20>>4)<<6 = 65    scales[9]  = 5 | 4<<4  = 69
    //   scales[2] = 3 | (33>>4)<<6 = 131    scales[6] = 2 | (40>>4)<<6 = 130   scales[10] = 1 | 8<<4  = 129
    //   scales[3] = 63 | (0>>4)<<6 = 63     scales[7] = 3 | (63>>4)<<6 = 195   scales[11] = 0 | 15<<4 = 240
    // Values: 64-value chunk c uses qs[32c..32c+32]: low nibbles are sub-block 2c, high nibbles
    // sub-block 2c+1. qs[32c + l] = (l % 16) | (15 − l % 16) << 4. d = 1.0, dmin = 0.5.
    let sc = [1.0f32, 2.0, 3.0, 63.0, 17.0, 5.0, 33.0, 0.0];
    let m = [0.0f32, 1.0, 2.0, 3.0, 4.0, 20.0, 40.0, 63.0];
    let mut b = f16_bytes(0x3C00).to_vec();
    b.extend(f16_bytes(0x3800));
    b.extend([65u8, 2, 131, 63, 0, 65, 130, 195, 65, 69, 129, 240]);
    b.extend((0..128u32).map(|k| ((k % 16) | ((15 - k % 16) << 4)) as u8));
    assert_eq!(b.len(), 144);
    let y = dequantize(GgmlType::Q4K, &b).unwrap();
    assert_eq!(y.len(), 256);
    for c in 0..4 {
        for l in 0..32 {
            let lo = (l % 16) as f32;
            let hi = (15 - l % 16) as f32;
            assert_eq!(
                y[64 * c + l],
                sc[2 * c] * lo - 0.5 * m[2 * c],
                "y[{}]",
                64 * c + l
            );
            assert_eq!(y[64 * c + 32 + l], sc[2 * c + 1] * hi - 0.5 * m[2 * c + 1]);
        }
    }
    // Spot values: y[33] (sub-block 1, high nibble of qs[1] = 14) = 2·14 − 0.5·1 = 27.5;
    // y[197] (sub-block 6, low nibble of qs[101] = 5) = 33·5 − 0.5·40 = 145;
    // y[255] (sub-block 7, scale 0) = −0.5·63 = −31.5.
    assert_eq!((y[33], y[197], y[255]), (27.5, 145.0, -31.5));
}

#[test]
fn q6_k_block() {
    // block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d } (256 values). Value
    // 128n + 32g + l (half n, group g < 4, l < 32) is q − 32 with q's low 4 bits from
    // ql[64n + l] (g = 0: low nibble, g = 2: high nibble) or ql[64n + 32 + l] (g = 1 low,
    // g = 3 high), and its top 2 bits from bits 2g..2g+2 of qh[32n + l]; its scale is
    // scales[8n + 2g + l/16]; y = d·scale·(q − 32).
    // Chosen: ql[k] = k % 16 | (15 − k % 16) << 4, qh[k] = 0b11_10_01_00 (bits: g0=0, g1=1,
    // g2=2, g3=3), scales[s] = s − 8 (−8..7), d = 0x3800 = 0.5.
    let mut b: Vec<u8> = (0..128u32)
        .map(|k| ((k % 16) | ((15 - k % 16) << 4)) as u8)
        .collect();
    b.extend(std::iter::repeat_n(0b1110_0100u8, 64));
    b.extend((0..16i8).map(|s| (s - 8) as u8));
    b.extend(f16_bytes(0x3800));
    assert_eq!(b.len(), 210);
    let y = dequantize(GgmlType::Q6K, &b).unwrap();
    for n in 0..2 {
        for g in 0..4 {
            for l in 0..32 {
                let nib = if g < 2 {
                    (l % 16) as i32
                } else {
                    15 - (l % 16) as i32
                };
                let q = nib + 16 * g as i32 - 32;
                let scale = (8 * n + 2 * g + l / 16) as f32 - 8.0;
                let i = 128 * n + 32 * g + l;
                assert_eq!(y[i], 0.5 * scale * q as f32, "y[{i}]");
            }
        }
    }
    // Spot values: y[0]: q = 0 + 0 − 32, scale −8 → 0.5·(−8)·(−32) = 128.
    // y[255]: n=1, g=3, l=31: nibble 15 − 15 = 0, high bits 3 → q = 48 − 32 = 16,
    // scale index 8 + 6 + 1 = 15 → 7; 0.5·7·16 = 56.
    assert_eq!((y[0], y[255]), (128.0, 56.0));
}

#[test]
fn random_blocks_match_gguf_py() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/gguf/blocks.json"
    );
    let fixture: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let types = [
        ("F16", GgmlType::F16),
        ("BF16", GgmlType::Bf16),
        ("Q8_0", GgmlType::Q8_0),
        ("Q4_0", GgmlType::Q4_0),
        ("Q4_1", GgmlType::Q4_1),
        ("Q4_K", GgmlType::Q4K),
        ("Q6_K", GgmlType::Q6K),
    ];
    assert_eq!(fixture.len(), types.len());
    for (name, ty) in types {
        let case = &fixture[name];
        let hex = case["hex"].as_str().unwrap();
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect();
        let expected: Vec<f32> = case["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap() as f32)
            .collect();
        let y = dequantize(ty, &bytes).unwrap();
        assert_eq!(y.len(), expected.len(), "{name}");
        for (i, (a, e)) in y.iter().zip(&expected).enumerate() {
            // gguf-py computes in f32 numpy with a different operation order: allow 1 ulp-ish.
            assert!(
                (a - e).abs() <= 1e-6 * e.abs().max(1.0),
                "{name}[{i}]: {a} vs {e}"
            );
        }
    }
}

#[test]
fn unsupported_types_and_partial_blocks_give_none() {
    assert_eq!(dequantize(GgmlType::Q5K, &[0; 176]), None);
    assert_eq!(dequantize(GgmlType::Q8_0, &[0; 33]), None);
    assert!(!GgmlType::Q5_0.is_supported());
    assert_eq!(GgmlType::from_id(12), Some(GgmlType::Q4K));
    assert_eq!(GgmlType::from_id(4), None); // Q4_2, removed from ggml
    assert_eq!(GgmlType::from_id(31), None);
    assert_eq!(GgmlType::Q4K.byte_size(512), Some(288));
    assert_eq!(GgmlType::Q4K.byte_size(100), None);
}
