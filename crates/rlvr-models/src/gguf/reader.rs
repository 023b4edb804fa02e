//! GGUF file reader (versions 2 and 3): header, metadata key/values, tensor infos, alignment,
//! and tensor data dequantized to f32.
//!
//! Layout (little-endian), from ggml's `docs/gguf.md`: magic `GGUF`, `u32` version, `u64`
//! tensor count, `u64` metadata count; metadata as (string key, `u32` type, value); tensor
//! infos as (string name, `u32` n_dims, `u64` dims[n_dims] innermost first, `u32` ggml type,
//! `u64` offset); then padding to `general.alignment` (default 32); then the data section, in
//! which each tensor starts at its offset. A string is a `u64` length plus UTF-8 bytes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::gguf::dequant::{GgmlType, dequantize};
use crate::gguf::value::MetadataValue;

/// Alignment of the data section when `general.alignment` is absent.
pub const DEFAULT_ALIGNMENT: u64 = 32;

/// Where and how one tensor is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorInfo {
    /// The llama.cpp tensor name, e.g. `blk.0.attn_q.weight`.
    pub name: String,
    /// ggml dimensions, innermost (contiguous) first: `[ne0, ne1, ...]`.
    pub dims: Vec<u64>,
    /// Storage type.
    pub ggml_type: GgmlType,
    /// Offset of the data from the start of the data section.
    pub offset: u64,
}

impl TensorInfo {
    /// Row-major shape (the ggml dims reversed): a ggml `[in, out]` matrix is `[out, in]`,
    /// which is the Hugging Face layout of a linear weight.
    pub fn shape(&self) -> Vec<usize> {
        self.dims.iter().rev().map(|&d| d as usize).collect()
    }

    /// Number of elements.
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }
}

/// A parsed GGUF file, with its bytes in memory.
#[derive(Debug)]
pub struct GgufFile {
    path: PathBuf,
    version: u32,
    metadata: BTreeMap<String, MetadataValue>,
    tensors: Vec<TensorInfo>,
    data_start: usize,
    bytes: Vec<u8>,
}

impl GgufFile {
    /// Reads and parses a GGUF file.
    ///
    /// # Errors
    /// [`Error::Io`]; [`Error::GgufBadMagic`]; [`Error::GgufTruncated`] when the file ends inside
    /// the header, the metadata, the tensor infos or a tensor's data; [`Error::GgufUnknownType`]
    /// for an undefined metadata or tensor type id; [`Error::Gguf`] for an unsupported version,
    /// invalid UTF-8, a duplicate tensor or a bad alignment.
    pub fn open(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::from_bytes(bytes, path)
    }

    /// Parses GGUF `bytes`; `path` is used in error messages only.
    ///
    /// # Errors
    /// As [`GgufFile::open`], without [`Error::Io`].
    pub fn from_bytes(bytes: Vec<u8>, path: impl Into<PathBuf>) -> Result<Self> {
        let path = path.into();
        let mut cur = Cursor {
            bytes: &bytes,
            pos: 0,
            path: &path,
        };
        let magic = cur.take(4.min(bytes.len()), "magic")?;
        if magic != b"GGUF" {
            return Err(Error::GgufBadMagic {
                path: path.clone(),
                found: magic.to_vec(),
            });
        }
        let version = cur.u32("version")?;
        if !(2..=3).contains(&version) {
            return Err(Error::Gguf {
                path: path.clone(),
                message: format!("GGUF version {version} is not supported (supported: 2, 3)"),
            });
        }
        let n_tensors = cur.u64("tensor count")?;
        let n_kv = cur.u64("metadata count")?;
        let mut metadata = BTreeMap::new();
        for i in 0..n_kv {
            let key = cur.string(&format!("metadata key {i}"))?;
            let what = format!("metadata `{key}`");
            let ty = cur.u32(&what)?;
            let value = cur.value(ty, &what, 0)?;
            metadata.insert(key, value);
        }
        let mut tensors: Vec<TensorInfo> = Vec::new();
        for i in 0..n_tensors {
            let name = cur.string(&format!("name of tensor {i}"))?;
            let what = format!("info of tensor `{name}`");
            let n_dims = cur.u32(&what)?;
            if n_dims > 4 {
                return Err(cur.invalid(format!(
                    "tensor `{name}` has {n_dims} dimensions (at most 4)"
                )));
            }
            let dims = (0..n_dims)
                .map(|_| cur.u64(&what))
                .collect::<Result<Vec<_>>>()?;
            let type_id = cur.u32(&what)?;
            let ggml_type = GgmlType::from_id(type_id).ok_or_else(|| Error::GgufUnknownType {
                path: path.clone(),
                what: format!("tensor `{name}`"),
                type_id,
            })?;
            let offset = cur.u64(&what)?;
            tensors.push(TensorInfo {
                name,
                dims,
                ggml_type,
                offset,
            });
        }
        let alignment = match metadata.get("general.alignment") {
            None => DEFAULT_ALIGNMENT,
            Some(v) => match v.as_u64() {
                Some(a) if a > 0 && a.is_power_of_two() => a,
                _ => {
                    return Err(cur.invalid(format!(
                        "metadata `general.alignment` = {v:?} is not a positive power of two"
                    )));
                }
            },
        };
        let data_start = (cur.pos as u64).div_ceil(alignment) * alignment;
        let file = Self {
            path,
            version,
            metadata,
            tensors,
            data_start: data_start as usize,
            bytes,
        };
        file.check_tensors()?;
        Ok(file)
    }

    /// Checks that names are unique and every tensor's data lies inside the file.
    fn check_tensors(&self) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        for t in &self.tensors {
            if !seen.insert(t.name.as_str()) {
                return Err(self.error(format!("tensor `{}` appears twice", t.name)));
            }
            let Some(size) = t.ggml_type.byte_size(t.n_elements()) else {
                if t.ggml_type.block_layout().is_some() {
                    return Err(self.error(format!(
                        "tensor `{}`: {} elements are not a whole number of {} blocks",
                        t.name,
                        t.n_elements(),
                        t.ggml_type.name()
                    )));
                }
                continue; // IQ formats: size unknown here, checked if ever read
            };
            let start = self.data_start as u64 + t.offset;
            if start.saturating_add(size) > self.bytes.len() as u64 {
                return Err(Error::GgufTruncated {
                    path: self.path.clone(),
                    what: format!("data of tensor `{}`", t.name),
                    offset: start,
                    needed: size,
                    len: self.bytes.len() as u64,
                });
            }
        }
        Ok(())
    }

    fn error(&self, message: String) -> Error {
        Error::Gguf {
            path: self.path.clone(),
            message,
        }
    }

    /// The file this was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// GGUF format version (2 or 3).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// All metadata, by key.
    pub fn metadata(&self) -> &BTreeMap<String, MetadataValue> {
        &self.metadata
    }

    /// One metadata value, if present.
    pub fn get(&self, key: &str) -> Option<&MetadataValue> {
        self.metadata.get(key)
    }

    /// A metadata value that must be present.
    ///
    /// # Errors
    /// [`Error::Gguf`] naming the missing key.
    pub fn require(&self, key: &str) -> Result<&MetadataValue> {
        self.get(key)
            .ok_or_else(|| self.error(format!("missing metadata key `{key}`")))
    }

    /// A required non-negative integer metadata value.
    ///
    /// # Errors
    /// [`Error::Gguf`] naming the key when it is missing or not an integer.
    pub fn require_u64(&self, key: &str) -> Result<u64> {
        let v = self.require(key)?;
        v.as_u64().ok_or_else(|| {
            self.error(format!(
                "metadata `{key}` = {v:?} is not a non-negative integer"
            ))
        })
    }

    /// An optional string metadata value (`None` when absent).
    ///
    /// # Errors
    /// [`Error::Gguf`] naming the key when it is present but not a string.
    pub fn get_str(&self, key: &str) -> Result<Option<&str>> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| self.error(format!("metadata `{key}` = {v:?} is not a string"))),
        }
    }

    /// Tensor infos, in file order.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    /// The info of tensor `name`, if present.
    pub fn tensor_info(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The raw stored bytes of tensor `name`.
    ///
    /// # Errors
    /// [`Error::Gguf`] when there is no such tensor, [`Error::GgufUnsupportedType`] when its size
    /// is unknown (IQ formats).
    pub fn tensor_bytes(&self, name: &str) -> Result<&[u8]> {
        let t = self
            .tensor_info(name)
            .ok_or_else(|| self.error(format!("no tensor `{name}`")))?;
        let size = t
            .ggml_type
            .byte_size(t.n_elements())
            .ok_or_else(|| self.unsupported(t))?;
        let start = self.data_start + t.offset as usize;
        Ok(&self.bytes[start..start + size as usize]) // bounds checked in `check_tensors`
    }

    /// Tensor `name` dequantized to f32, in row-major order of [`TensorInfo::shape`].
    ///
    /// # Errors
    /// [`Error::Gguf`] when there is no such tensor, [`Error::GgufUnsupportedType`] when its
    /// type cannot be dequantized.
    pub fn tensor_f32(&self, name: &str) -> Result<Vec<f32>> {
        let bytes = self.tensor_bytes(name)?;
        let t = self.tensor_info(name).expect("found by tensor_bytes");
        dequantize(t.ggml_type, bytes).ok_or_else(|| self.unsupported(t))
    }

    fn unsupported(&self, t: &TensorInfo) -> Error {
        Error::GgufUnsupportedType {
            path: self.path.clone(),
            tensor: t.name.clone(),
            type_name: t.ggml_type.name(),
        }
    }
}

/// A bounds-checked little-endian reader over the file bytes.
struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.bytes.len());
        let Some(end) = end else {
            return Err(Error::GgufTruncated {
                path: self.path.to_owned(),
                what: what.to_owned(),
                offset: self.pos as u64,
                needed: n as u64,
                len: self.bytes.len() as u64,
            });
        };
        let s = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        Ok(self.take(N, what)?.try_into().expect("N bytes"))
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array(what)?))
    }

    fn u64(&mut self, what: &str) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array(what)?))
    }

    fn invalid(&self, message: String) -> Error {
        Error::Gguf {
            path: self.path.to_owned(),
            message,
        }
    }

    fn string(&mut self, what: &str) -> Result<String> {
        let len = self.u64(what)?;
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let bytes = self.take(len, what)?;
        String::from_utf8(bytes.to_vec())
            .map_err(|_| self.invalid(format!("{what}: string is not valid UTF-8")))
    }

    /// A value of metadata type `ty`; `depth` limits nested arrays.
    fn value(&mut self, ty: u32, what: &str, depth: usize) -> Result<MetadataValue> {
        use MetadataValue as V;
        Ok(match ty {
            0 => V::U8(self.array::<1>(what)?[0]),
            1 => V::I8(i8::from_le_bytes(self.array(what)?)),
            2 => V::U16(u16::from_le_bytes(self.array(what)?)),
            3 => V::I16(i16::from_le_bytes(self.array(what)?)),
            4 => V::U32(self.u32(what)?),
            5 => V::I32(i32::from_le_bytes(self.array(what)?)),
            6 => V::F32(f32::from_le_bytes(self.array(what)?)),
            7 => match self.array::<1>(what)?[0] {
                0 => V::Bool(false),
                1 => V::Bool(true),
                b => return Err(self.invalid(format!("{what}: bool byte {b} is not 0 or 1"))),
            },
            8 => V::String(self.string(what)?),
            9 if depth < 4 => {
                let elem = self.u32(what)?;
                let n = self.u64(what)?;
                // Every element takes at least one byte: reject counts the file cannot hold
                // before allocating.
                let left = (self.bytes.len() - self.pos) as u64;
                if n > left {
                    return Err(Error::GgufTruncated {
                        path: self.path.to_owned(),
                        what: format!("{what}: array of {n} elements"),
                        offset: self.pos as u64,
                        needed: n,
                        len: self.bytes.len() as u64,
                    });
                }
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(self.value(elem, what, depth + 1)?);
                }
                V::Array(items)
            }
            9 => return Err(self.invalid(format!("{what}: arrays nested too deeply"))),
            10 => V::U64(self.u64(what)?),
            11 => V::I64(i64::from_le_bytes(self.array(what)?)),
            12 => V::F64(f64::from_le_bytes(self.array(what)?)),
            _ => {
                return Err(Error::GgufUnknownType {
                    path: self.path.to_owned(),
                    what: what.to_owned(),
                    type_id: ty,
                });
            }
        })
    }
}
