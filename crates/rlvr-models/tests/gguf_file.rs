//! GGUF container parsing on small synthetic files: header, every metadata type, tensor infos,
//! alignment, tensor data; and the typed errors for bad magic, truncation, unknown types.

use rlvr_models::Error;
use rlvr_models::gguf::{GgmlType, GgufFile, MetadataValue};

/// A minimal GGUF v3 writer, following the layout in ggml's `docs/gguf.md`.
#[derive(Default)]
struct Writer {
    kv: Vec<u8>,
    n_kv: u64,
    infos: Vec<u8>,
    n_tensors: u64,
    data: Vec<u8>,
    alignment: usize,
}

fn string(out: &mut Vec<u8>, s: &str) {
    out.extend((s.len() as u64).to_le_bytes());
    out.extend(s.as_bytes());
}

impl Writer {
    fn new() -> Self {
        Self {
            alignment: 32,
            ..Self::default()
        }
    }

    /// A metadata entry with raw type id and value bytes.
    fn kv(&mut self, key: &str, ty: u32, value: &[u8]) -> &mut Self {
        string(&mut self.kv, key);
        self.kv.extend(ty.to_le_bytes());
        self.kv.extend(value);
        self.n_kv += 1;
        self
    }

    fn kv_str(&mut self, key: &str, s: &str) -> &mut Self {
        let mut v = Vec::new();
        string(&mut v, s);
        self.kv(key, 8, &v)
    }

    /// A tensor with ggml dims (innermost first), type id and raw data.
    fn tensor(&mut self, name: &str, dims: &[u64], ty: u32, data: &[u8]) -> &mut Self {
        while !self.data.len().is_multiple_of(self.alignment) {
            self.data.push(0);
        }
        string(&mut self.infos, name);
        self.infos.extend((dims.len() as u32).to_le_bytes());
        for d in dims {
            self.infos.extend(d.to_le_bytes());
        }
        self.infos.extend(ty.to_le_bytes());
        self.infos.extend((self.data.len() as u64).to_le_bytes());
        self.data.extend(data);
        self.n_tensors += 1;
        self
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = b"GGUF".to_vec();
        out.extend(3u32.to_le_bytes());
        out.extend(self.n_tensors.to_le_bytes());
        out.extend(self.n_kv.to_le_bytes());
        out.extend(&self.kv);
        out.extend(&self.infos);
        while !out.len().is_multiple_of(self.alignment) {
            out.push(0);
        }
        out.extend(&self.data);
        out
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Every metadata type, an F32 matrix and a Q8_0 vector.
fn sample() -> Writer {
    let mut w = Writer::new();
    w.kv("u8", 0, &[200])
        .kv("i8", 1, &[0xFE])
        .kv("u16", 2, &60000u16.to_le_bytes())
        .kv("i16", 3, &(-300i16).to_le_bytes())
        .kv("u32", 4, &7u32.to_le_bytes())
        .kv("i32", 5, &(-7i32).to_le_bytes())
        .kv("f32", 6, &0.5f32.to_le_bytes())
        .kv("bool", 7, &[1])
        .kv_str("general.architecture", "llama")
        .kv("u64", 10, &(1u64 << 40).to_le_bytes())
        .kv("i64", 11, &(-5i64).to_le_bytes())
        .kv("f64", 12, &0.25f64.to_le_bytes());
    // array of 3 u32, and array of 2 strings
    let mut arr = 4u32.to_le_bytes().to_vec();
    arr.extend(3u64.to_le_bytes());
    for x in [1u32, 2, 3] {
        arr.extend(x.to_le_bytes());
    }
    w.kv("arr_u32", 9, &arr);
    let mut arr = 8u32.to_le_bytes().to_vec();
    arr.extend(2u64.to_le_bytes());
    string(&mut arr, "a b");
    string(&mut arr, "é");
    w.kv("arr_str", 9, &arr);
    // ggml dims [3, 2]: a row-major [2, 3] matrix.
    w.tensor("m", &[3, 2], 0, &f32_bytes(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    let mut q8 = 0x3C00u16.to_le_bytes().to_vec(); // d = 1
    q8.extend((0..32).map(|i| (i as i8 - 16) as u8));
    w.tensor("q", &[32], 8, &q8);
    w
}

#[test]
fn parses_metadata_tensors_and_data() {
    let file = GgufFile::from_bytes(sample().bytes(), "sample.gguf").unwrap();
    assert_eq!(file.version(), 3);
    let get = |k: &str| file.get(k).unwrap().clone();
    assert_eq!(get("u8"), MetadataValue::U8(200));
    assert_eq!(get("i8"), MetadataValue::I8(-2));
    assert_eq!(get("u16"), MetadataValue::U16(60000));
    assert_eq!(get("i16"), MetadataValue::I16(-300));
    assert_eq!(get("u32").as_u64(), Some(7));
    assert_eq!(get("i32").as_i64(), Some(-7));
    assert_eq!(get("i32").as_u64(), None);
    assert_eq!(get("f32").as_f64(), Some(0.5));
    assert_eq!(get("bool").as_bool(), Some(true));
    assert_eq!(get("u64").as_u64(), Some(1 << 40));
    assert_eq!(get("i64"), MetadataValue::I64(-5));
    assert_eq!(get("f64"), MetadataValue::F64(0.25));
    assert_eq!(file.get_str("general.architecture").unwrap(), Some("llama"));
    let arr = get("arr_u32");
    let arr: Vec<u64> = arr
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(arr, vec![1, 2, 3]);
    let strs = get("arr_str");
    let strs: Vec<&str> = strs
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(strs, vec!["a b", "é"]);

    assert_eq!(file.tensors().len(), 2);
    let m = file.tensor_info("m").unwrap();
    assert_eq!((m.shape(), m.ggml_type), (vec![2, 3], GgmlType::F32));
    assert_eq!(
        file.tensor_f32("m").unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    let q: Vec<f32> = (0..32).map(|i| (i - 16) as f32).collect();
    assert_eq!(file.tensor_f32("q").unwrap(), q);
    assert!(
        matches!(file.require("absent"), Err(Error::Gguf { message, .. }) if message.contains("`absent`"))
    );
    assert!(
        matches!(file.get_str("u8"), Err(Error::Gguf { message, .. }) if message.contains("`u8`"))
    );
}

#[test]
fn custom_alignment_is_honoured() {
    // Pad the header with a filler string so that it ends where 32- and 64-byte alignment
    // disagree: a reader that ignored `general.alignment` would read the wrong bytes.
    for filler in 0..64 {
        let mut w = Writer::new();
        w.alignment = 64;
        w.kv("general.alignment", 4, &64u32.to_le_bytes());
        w.kv_str("filler", &"x".repeat(filler));
        w.tensor("a", &[1], 0, &f32_bytes(&[7.0]));
        w.tensor("b", &[2], 0, &f32_bytes(&[8.0, 9.0]));
        let header = 24 + w.kv.len() + w.infos.len();
        if header.div_ceil(32) * 32 == header.div_ceil(64) * 64 {
            continue;
        }
        let file = GgufFile::from_bytes(w.bytes(), "aligned.gguf").unwrap();
        assert_eq!(file.tensor_info("b").unwrap().offset, 64);
        assert_eq!(file.tensor_f32("a").unwrap(), vec![7.0]);
        assert_eq!(file.tensor_f32("b").unwrap(), vec![8.0, 9.0]);
        return;
    }
    panic!("no filler length separates the alignments");
}

#[test]
fn bad_magic_is_a_typed_error() {
    let mut bytes = sample().bytes();
    bytes[..4].copy_from_slice(b"GGML");
    match GgufFile::from_bytes(bytes, "x.gguf") {
        Err(Error::GgufBadMagic { found, .. }) => assert_eq!(found, b"GGML"),
        other => panic!("expected GgufBadMagic, got {other:?}"),
    }
    assert!(matches!(
        GgufFile::from_bytes(b"GG".to_vec(), "x"),
        Err(Error::GgufBadMagic { .. })
    ));
}

#[test]
fn every_truncation_is_a_typed_error() {
    let bytes = sample().bytes();
    for len in 4..bytes.len() {
        match GgufFile::from_bytes(bytes[..len].to_vec(), "cut.gguf") {
            Err(Error::GgufTruncated { len: l, .. }) => assert_eq!(l, len as u64),
            other => panic!("cut at {len}: expected GgufTruncated, got {other:?}"),
        }
    }
    // The message names what was cut: the last tensor's data.
    let err = GgufFile::from_bytes(bytes[..bytes.len() - 1].to_vec(), "cut.gguf").unwrap_err();
    assert!(err.to_string().contains("data of tensor `q`"), "{err}");
}

#[test]
fn unknown_types_are_typed_errors() {
    let mut w = Writer::new();
    w.kv("weird", 13, &[0; 8]);
    match GgufFile::from_bytes(w.bytes(), "x.gguf") {
        Err(Error::GgufUnknownType { type_id, what, .. }) => {
            assert_eq!(type_id, 13);
            assert!(what.contains("weird"));
        }
        other => panic!("expected GgufUnknownType, got {other:?}"),
    }
    let mut w = Writer::new();
    w.tensor("t", &[4], 4, &[0; 16]); // 4 was Q4_2, removed from ggml
    match GgufFile::from_bytes(w.bytes(), "x.gguf") {
        Err(Error::GgufUnknownType { type_id, what, .. }) => {
            assert_eq!(type_id, 4);
            assert!(what.contains("`t`"));
        }
        other => panic!("expected GgufUnknownType, got {other:?}"),
    }
}

#[test]
fn known_but_unsupported_type_fails_on_read_only() {
    let mut w = Writer::new();
    w.tensor("k5", &[256], 13, &[0; 176]); // Q5_K
    let file = GgufFile::from_bytes(w.bytes(), "x.gguf").unwrap();
    match file.tensor_f32("k5") {
        Err(Error::GgufUnsupportedType {
            tensor, type_name, ..
        }) => {
            assert_eq!((tensor.as_str(), type_name.as_str()), ("k5", "Q5_K"));
        }
        other => panic!("expected GgufUnsupportedType, got {other:?}"),
    }
}

#[test]
fn structural_errors_name_the_problem() {
    let mut bytes = sample().bytes();
    bytes[4..8].copy_from_slice(&1u32.to_le_bytes());
    let err = GgufFile::from_bytes(bytes, "v1.gguf").unwrap_err();
    assert!(err.to_string().contains("version 1"), "{err}");

    let mut w = Writer::new();
    w.tensor("a", &[1], 0, &f32_bytes(&[1.0]));
    w.tensor("a", &[1], 0, &f32_bytes(&[2.0]));
    let err = GgufFile::from_bytes(w.bytes(), "dup.gguf").unwrap_err();
    assert!(err.to_string().contains("`a` appears twice"), "{err}");

    let mut w = Writer::new();
    w.tensor("q", &[33], 8, &[0; 34]); // Q8_0 needs a multiple of 32 elements
    let err = GgufFile::from_bytes(w.bytes(), "q.gguf").unwrap_err();
    assert!(
        err.to_string()
            .contains("not a whole number of Q8_0 blocks"),
        "{err}"
    );

    let mut w = Writer::new();
    w.kv("general.alignment", 4, &48u32.to_le_bytes());
    let err = GgufFile::from_bytes(w.bytes(), "align.gguf").unwrap_err();
    assert!(err.to_string().contains("general.alignment"), "{err}");

    let mut w = Writer::new();
    w.kv("b", 7, &[2]);
    let err = GgufFile::from_bytes(w.bytes(), "bool.gguf").unwrap_err();
    assert!(err.to_string().contains("bool byte 2"), "{err}");

    // A huge declared array length is rejected before allocating.
    let mut w = Writer::new();
    let mut arr = 0u32.to_le_bytes().to_vec();
    arr.extend(u64::MAX.to_le_bytes());
    w.kv("big", 9, &arr);
    assert!(matches!(
        GgufFile::from_bytes(w.bytes(), "big.gguf"),
        Err(Error::GgufTruncated { .. })
    ));
}

#[test]
fn open_reports_io_errors_with_the_path() {
    let err = GgufFile::open("/nonexistent/model.gguf").unwrap_err();
    assert!(matches!(err, Error::Io { .. }));
    assert!(err.to_string().contains("/nonexistent/model.gguf"));
}
