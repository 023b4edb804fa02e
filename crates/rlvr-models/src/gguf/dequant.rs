//! ggml tensor types and their dequantization to f32 (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K).
//!
//! Block layouts follow ggml's `ggml-common.h` and the reference dequantizers of
//! `ggml-quants.c` (`dequantize_row_*`). All multi-byte fields are little-endian.

use burn::tensor::{bf16, f16};

/// A ggml tensor type, by its GGUF type id (`ggml_type` in `ggml.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlType {
    /// 0: f32.
    F32,
    /// 1: IEEE half.
    F16,
    /// 2: 32-element blocks, f16 scale, 4-bit values offset by 8.
    Q4_0,
    /// 3: 32-element blocks, f16 scale and f16 minimum, 4-bit values.
    Q4_1,
    /// 6: 32-element blocks, 5-bit values (not dequantized here).
    Q5_0,
    /// 7: 32-element blocks, 5-bit values with minimum (not dequantized here).
    Q5_1,
    /// 8: 32-element blocks, f16 scale, int8 values.
    Q8_0,
    /// 9: 32-element blocks, int8 values with sum (not dequantized here).
    Q8_1,
    /// 10: 256-element super-blocks, 2-bit (not dequantized here).
    Q2K,
    /// 11: 256-element super-blocks, 3-bit (not dequantized here).
    Q3K,
    /// 12: 256-element super-blocks of eight 32-element sub-blocks, 6-bit scales and minimums,
    /// 4-bit values.
    Q4K,
    /// 13: 256-element super-blocks, 5-bit (not dequantized here).
    Q5K,
    /// 14: 256-element super-blocks of sixteen 16-element sub-blocks, int8 scales, 6-bit values.
    Q6K,
    /// 15: 256-element super-blocks, 8-bit, used for dot products (not dequantized here).
    Q8K,
    /// 16–23, 29: the importance-matrix "IQ" formats (not dequantized here); the id is kept.
    Iq(u32),
    /// 24: int8.
    I8,
    /// 25: int16.
    I16,
    /// 26: int32.
    I32,
    /// 27: int64.
    I64,
    /// 28: f64.
    F64,
    /// 30: bfloat16.
    Bf16,
}

impl GgmlType {
    /// The type with GGUF type id `id`, or `None` for an id ggml does not define.
    pub fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => Self::F32,
            1 => Self::F16,
            2 => Self::Q4_0,
            3 => Self::Q4_1,
            6 => Self::Q5_0,
            7 => Self::Q5_1,
            8 => Self::Q8_0,
            9 => Self::Q8_1,
            10 => Self::Q2K,
            11 => Self::Q3K,
            12 => Self::Q4K,
            13 => Self::Q5K,
            14 => Self::Q6K,
            15 => Self::Q8K,
            16..=23 | 29 => Self::Iq(id),
            24 => Self::I8,
            25 => Self::I16,
            26 => Self::I32,
            27 => Self::I64,
            28 => Self::F64,
            30 => Self::Bf16,
            _ => return None,
        })
    }

    /// ggml's name of the type (`"Q4_K"`, `"BF16"`, ...).
    pub fn name(self) -> String {
        match self {
            Self::F32 => "F32".into(),
            Self::F16 => "F16".into(),
            Self::Q4_0 => "Q4_0".into(),
            Self::Q4_1 => "Q4_1".into(),
            Self::Q5_0 => "Q5_0".into(),
            Self::Q5_1 => "Q5_1".into(),
            Self::Q8_0 => "Q8_0".into(),
            Self::Q8_1 => "Q8_1".into(),
            Self::Q2K => "Q2_K".into(),
            Self::Q3K => "Q3_K".into(),
            Self::Q4K => "Q4_K".into(),
            Self::Q5K => "Q5_K".into(),
            Self::Q6K => "Q6_K".into(),
            Self::Q8K => "Q8_K".into(),
            Self::Iq(id) => format!("IQ (type id {id})"),
            Self::I8 => "I8".into(),
            Self::I16 => "I16".into(),
            Self::I32 => "I32".into(),
            Self::I64 => "I64".into(),
            Self::F64 => "F64".into(),
            Self::Bf16 => "BF16".into(),
        }
    }

    /// `(elements per block, bytes per block)` from `ggml_type_traits`, or `None` for the IQ
    /// formats (whose sizes this crate does not track).
    pub fn block_layout(self) -> Option<(usize, usize)> {
        Some(match self {
            Self::F32 | Self::I32 => (1, 4),
            Self::F16 | Self::Bf16 | Self::I16 => (1, 2),
            Self::I8 => (1, 1),
            Self::I64 | Self::F64 => (1, 8),
            Self::Q4_0 => (32, 18),
            Self::Q4_1 => (32, 20),
            Self::Q5_0 => (32, 22),
            Self::Q5_1 => (32, 24),
            Self::Q8_0 => (32, 34),
            Self::Q8_1 => (32, 36),
            Self::Q2K => (256, 84),
            Self::Q3K => (256, 110),
            Self::Q4K => (256, 144),
            Self::Q5K => (256, 176),
            Self::Q6K => (256, 210),
            Self::Q8K => (256, 292),
            Self::Iq(_) => return None,
        })
    }

    /// Bytes that `n_elements` values of this type occupy, or `None` when the size is unknown
    /// or `n_elements` is not a whole number of blocks.
    pub fn byte_size(self, n_elements: u64) -> Option<u64> {
        let (block, bytes) = self.block_layout()?;
        n_elements
            .is_multiple_of(block as u64)
            .then(|| n_elements / block as u64 * bytes as u64)
    }

    /// Whether [`dequantize`] supports this type.
    pub fn is_supported(self) -> bool {
        matches!(
            self,
            Self::F32
                | Self::F16
                | Self::Bf16
                | Self::Q8_0
                | Self::Q4_0
                | Self::Q4_1
                | Self::Q4K
                | Self::Q6K
        )
    }
}

fn f16_at(b: &[u8], i: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[i], b[i + 1]])).to_f32()
}

/// Dequantizes `data` (a whole number of blocks of type `ty`) to f32, in storage order.
///
/// Returns `None` when `ty` is not supported (see [`GgmlType::is_supported`]) or `data` is not
/// a whole number of blocks.
pub fn dequantize(ty: GgmlType, data: &[u8]) -> Option<Vec<f32>> {
    if !ty.is_supported() {
        return None;
    }
    let (block, bytes) = ty.block_layout()?;
    if !data.len().is_multiple_of(bytes) {
        return None;
    }
    let mut out = vec![0.0f32; data.len() / bytes * block];
    let blocks = data.chunks_exact(bytes).zip(out.chunks_exact_mut(block));
    match ty {
        GgmlType::F32 => {
            blocks.for_each(|(b, y)| y[0] = f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        }
        GgmlType::F16 => blocks.for_each(|(b, y)| y[0] = f16_at(b, 0)),
        GgmlType::Bf16 => blocks.for_each(|(b, y)| {
            y[0] = bf16::from_bits(u16::from_le_bytes([b[0], b[1]])).to_f32();
        }),
        GgmlType::Q8_0 => blocks.for_each(|(b, y)| block_q8_0(b, y)),
        GgmlType::Q4_0 => blocks.for_each(|(b, y)| block_q4_0(b, y)),
        GgmlType::Q4_1 => blocks.for_each(|(b, y)| block_q4_1(b, y)),
        GgmlType::Q4K => blocks.for_each(|(b, y)| block_q4_k(b, y)),
        GgmlType::Q6K => blocks.for_each(|(b, y)| block_q6_k(b, y)),
        _ => return None,
    }
    Some(out)
}

/// `block_q8_0 { f16 d; i8 qs[32]; }`: `y[i] = d · qs[i]`.
fn block_q8_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for (yi, &q) in y.iter_mut().zip(&b[2..34]) {
        *yi = d * f32::from(q as i8);
    }
}

/// `block_q4_0 { f16 d; u8 qs[16]; }`: `y[j] = d · (lo(qs[j]) − 8)`, `y[j+16] = d · (hi(qs[j]) − 8)`.
fn block_q4_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for (j, &q) in b[2..18].iter().enumerate() {
        y[j] = d * (i32::from(q & 0x0F) - 8) as f32;
        y[j + 16] = d * (i32::from(q >> 4) - 8) as f32;
    }
}

/// `block_q4_1 { f16 d; f16 m; u8 qs[16]; }`: `y[j] = d · lo(qs[j]) + m`, `y[j+16] = d · hi(qs[j]) + m`.
fn block_q4_1(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let m = f16_at(b, 2);
    for (j, &q) in b[4..20].iter().enumerate() {
        y[j] = d * f32::from(q & 0x0F) + m;
        y[j + 16] = d * f32::from(q >> 4) + m;
    }
}

/// The 6-bit scale and minimum of sub-block `j` (0..8) from the 12 packed bytes of a Q4_K (or
/// Q5_K) super-block (`get_scale_min_k4` in ggml): sub-blocks 0–3 use the low 6 bits of bytes
/// `j` and `j+4`; sub-blocks 4–7 take 4 bits from byte `j+4` and their top 2 bits from the
/// high bits of bytes `j−4` (scale) and `j` (minimum).
fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// `block_q4_K { f16 d; f16 dmin; u8 scales[12]; u8 qs[128]; }`: each 64-value chunk `c` reads
/// 32 bytes of `qs`; its first 32 values are the low nibbles (sub-block `2c`), the next 32 the
/// high nibbles (sub-block `2c+1`); `y = d·sc·q − dmin·m`.
fn block_q4_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let dmin = f16_at(b, 2);
    let scales = &b[4..16];
    let qs = &b[16..144];
    for c in 0..4 {
        let (sc1, m1) = scale_min_k4(2 * c, scales);
        let (sc2, m2) = scale_min_k4(2 * c + 1, scales);
        let (d1, min1) = (d * f32::from(sc1), dmin * f32::from(m1));
        let (d2, min2) = (d * f32::from(sc2), dmin * f32::from(m2));
        let q = &qs[32 * c..32 * c + 32];
        let out = &mut y[64 * c..64 * c + 64];
        for l in 0..32 {
            out[l] = d1 * f32::from(q[l] & 0x0F) - min1;
            out[l + 32] = d2 * f32::from(q[l] >> 4) - min2;
        }
    }
}

/// `block_q6_K { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d; }`: each 128-value half `n`
/// reads 64 bytes of `ql`, 32 of `qh` and 8 scales; a 6-bit value is a nibble of `ql` plus two
/// bits of `qh`, minus 32; `y = d · scale · q` with one scale per 16 values.
fn block_q6_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 208);
    for n in 0..2 {
        let ql = &b[64 * n..64 * n + 64];
        let qh = &b[128 + 32 * n..128 + 32 * n + 32];
        let sc = &b[192 + 8 * n..192 + 8 * n + 8];
        let out = &mut y[128 * n..128 * n + 128];
        for l in 0..32 {
            let is = l / 16;
            let q1 = i32::from((ql[l] & 0x0F) | ((qh[l] & 3) << 4)) - 32;
            let q2 = i32::from((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            let q3 = i32::from((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            let q4 = i32::from((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            let s = |k: usize| d * f32::from(sc[is + k] as i8);
            out[l] = s(0) * q1 as f32;
            out[l + 32] = s(2) * q2 as f32;
            out[l + 64] = s(4) * q3 as f32;
            out[l + 96] = s(6) * q4 as f32;
        }
    }
}
