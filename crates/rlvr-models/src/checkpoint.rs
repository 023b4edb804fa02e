//! Hugging Face model directories in and out: `config.json` + `model.safetensors` (or a sharded
//! `model.safetensors.index.json`), HF tensor names and layouts, f32/f16/bf16/f64 weights.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::tensor::{Device, Tensor, TensorData, bf16, f16};
use safetensors::{Dtype, SafeTensors};

use crate::config::ModelConfig;
use crate::error::{Error, Result};
use crate::model::CausalLm;
use crate::projection::Projection;
use crate::weights::{Init, WeightSource};

/// File name of a single-file checkpoint.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// File name of the index of a sharded checkpoint.
pub const WEIGHTS_INDEX_FILE: &str = "model.safetensors.index.json";
/// File name of the model config.
pub const CONFIG_FILE: &str = "config.json";

/// Loads `config.json` and the safetensors weights of a HF model directory onto `device`.
///
/// Weights in f16/bf16/f64 are converted to f32. With `tie_word_embeddings` a stored
/// `lm_head.weight` is ignored (HF writes none). A tensor the config does not account for is an
/// error, as is a missing one or one with the wrong shape: each names the tensor.
///
/// # Errors
/// [`Error::Io`], [`Error::Json`], [`Error::UnknownArchitecture`], [`Error::InvalidConfig`],
/// [`Error::MissingTensor`], [`Error::ShapeMismatch`], [`Error::UnexpectedTensor`],
/// [`Error::UnsupportedDtype`], [`Error::Safetensors`].
pub fn load_pretrained(dir: &Path, device: &Device) -> Result<(CausalLm, ModelConfig)> {
    let config = ModelConfig::from_file(dir.join(CONFIG_FILE))?;
    let mut source = SafetensorsSource::open(dir, device.clone())?;
    let model = CausalLm::load(&config, &mut source)?;
    source.check_all_used(&config)?;
    Ok((model, config))
}

/// Writes `model` as a HF directory: `model.safetensors` (f32, HF names and `[out, in]`
/// layouts, metadata `format = pt`) and `config.json` (with `tie_word_embeddings` and the dtype
/// fields set to match what is written). Other files already in `dir` (tokenizer files, ...)
/// are kept.
///
/// The save is atomic: everything is written into a fresh directory next to `dir`, which then
/// replaces `dir` by rename, so a crash leaves either the old or the new checkpoint.
///
/// # Errors
/// [`Error::Io`] when a file cannot be written, [`Error::Safetensors`] on serialisation.
pub fn save_pretrained(model: &CausalLm, config: &ModelConfig, dir: &Path) -> Result<()> {
    replace_dir(dir, |tmp| {
        write_weights(model, &tmp.join(WEIGHTS_FILE))?;
        let mut config = config.clone();
        config.tie_word_embeddings = model.lm_head.is_none();
        let mut has_dtype = false;
        for key in ["torch_dtype", "dtype"] {
            if let Some(v) = config.extra.get_mut(key) {
                *v = serde_json::Value::from("float32");
                has_dtype = true;
            }
        }
        if !has_dtype {
            config.extra.insert("torch_dtype".into(), "float32".into());
        }
        config.save(tmp.join(CONFIG_FILE))?;
        // Keep the files we do not rewrite (tokenizer, generation config, ...).
        Ok(|file: &str| {
            let stale = [WEIGHTS_FILE, CONFIG_FILE, WEIGHTS_INDEX_FILE].contains(&file)
                || file.starts_with("model-") && file.ends_with(".safetensors");
            !stale
        })
    })
}

/// Replaces directory `dir` atomically: `write` fills a fresh directory next to it and returns
/// which files of the old `dir` (by name) to carry over; the fresh directory then replaces `dir`
/// by rename, so a crash leaves either the old or the new contents.
pub(crate) fn replace_dir<K: Fn(&str) -> bool>(
    dir: &Path,
    write: impl FnOnce(&Path) -> Result<K>,
) -> Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::create_dir(&tmp).map_err(|e| Error::io(&tmp, e))?;
    let keep = write(&tmp)?;
    if dir.exists() {
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let file = entry.file_name();
            if keep(&file.to_string_lossy()) && entry.path().is_file() {
                std::fs::copy(entry.path(), tmp.join(&file))
                    .map_err(|e| Error::io(entry.path(), e))?;
            }
        }
        let old = parent.join(format!(".{name}.old-{}", std::process::id()));
        std::fs::rename(dir, &old).map_err(|e| Error::io(dir, e))?;
        std::fs::rename(&tmp, dir).map_err(|e| Error::io(dir, e))?;
        std::fs::remove_dir_all(&old).map_err(|e| Error::io(&old, e))?;
    } else {
        std::fs::rename(&tmp, dir).map_err(|e| Error::io(dir, e))?;
    }
    Ok(())
}

/// One parameter of a model under its HF name and in HF shape, whose row-major f32 data is
/// made only when asked for ([`HfTensor::data`]): a checkpoint writer then holds one tensor's
/// copy at a time instead of the whole model's.
pub(crate) struct HfTensor<'a> {
    name: String,
    shape: Vec<usize>,
    make: Box<dyn Fn() -> Vec<f32> + 'a>,
}

impl HfTensor<'_> {
    /// The tensor's data, row-major in HF layout (a projection's weight transposed to
    /// `[out, in]`, a LoRA adapter folded into it).
    fn data(&self) -> Vec<f32> {
        (self.make)()
    }
}

/// Every parameter of `model` under its HF name, in HF shape (`[out, in]` for projections),
/// each made on demand.
fn hf_tensor_plan(model: &CausalLm) -> Vec<HfTensor<'_>> {
    fn flat<const D: usize>(p: &Param<Tensor<D>>) -> Vec<f32> {
        p.val()
            .into_data()
            .convert::<f32>()
            .try_into_vec::<f32>()
            .expect("f32 data")
    }
    fn tensor<'a, const D: usize>(name: String, p: &'a Param<Tensor<D>>) -> HfTensor<'a> {
        HfTensor {
            name,
            shape: p.shape().dims::<D>().to_vec(),
            make: Box::new(move || flat(p)),
        }
    }
    // A LoRA adapter is folded into its weight: the directory is the full fine-tuned model.
    fn weight(name: String, l: &Projection) -> HfTensor<'_> {
        let (d_in, d_out) = l.dims();
        HfTensor {
            name,
            shape: vec![d_out, d_in],
            make: Box::new(move || {
                let data = l
                    .merged_weight() // [in, out]
                    .into_data()
                    .convert::<f32>()
                    .try_into_vec::<f32>()
                    .expect("f32 data");
                transposed(&data, d_in, d_out)
            }),
        }
    }
    let m = &model.model;
    let mut out = vec![tensor(
        "model.embed_tokens.weight".into(),
        &m.embed_tokens.weight,
    )];
    for (i, layer) in m.layers.iter().enumerate() {
        for (name, l) in layer.projections() {
            out.push(weight(format!("model.layers.{i}.{name}.weight"), l));
            if let Some(b) = &l.bias {
                out.push(tensor(format!("model.layers.{i}.{name}.bias"), b));
            }
        }
        out.push(tensor(
            format!("model.layers.{i}.input_layernorm.weight"),
            &layer.input_layernorm.weight,
        ));
        out.push(tensor(
            format!("model.layers.{i}.post_attention_layernorm.weight"),
            &layer.post_attention_layernorm.weight,
        ));
    }
    out.push(tensor("model.norm.weight".into(), &m.norm.weight));
    if let Some(head) = &model.lm_head {
        out.push(weight("lm_head.weight".into(), head));
    }
    out
}

/// Every parameter of `model` under its HF name, in HF shape (`[out, in]` for projections).
pub fn hf_tensors(model: &CausalLm) -> Vec<(String, Vec<usize>, Vec<f32>)> {
    hf_tensor_plan(model)
        .into_iter()
        .map(|t| {
            let data = t.data();
            (t.name, t.shape, data)
        })
        .collect()
}

/// Streams `model`'s weights into one safetensors file: each tensor is exported and converted
/// when the writer reaches it, so the write holds one tensor's copy at a time.
fn write_weights(model: &CausalLm, path: &Path) -> Result<()> {
    let plan = hf_tensor_plan(model);
    let views = plan.iter().map(|t| {
        (
            t.name.clone(),
            F32View {
                shape: t.shape.clone(),
                source: F32Source::Made(t),
            },
        )
    });
    serialize_f32(views, path)
}

/// Writes f32 tensors `(HF name, shape, row-major data)` as one safetensors file with the
/// `{"format": "pt"}` metadata transformers expects.
pub(crate) fn write_safetensors(
    tensors: &[(String, Vec<usize>, Vec<f32>)],
    path: &Path,
) -> Result<()> {
    let views = tensors.iter().map(|(name, shape, data)| {
        (
            name.clone(),
            F32View {
                shape: shape.clone(),
                source: F32Source::Slice(data),
            },
        )
    });
    serialize_f32(views, path)
}

/// Where an [`F32View`]'s values come from.
enum F32Source<'a> {
    /// Values already in memory.
    Slice(&'a [f32]),
    /// A model parameter, exported when the writer reaches it.
    Made(&'a HfTensor<'a>),
}

/// An f32 tensor as safetensors writes it: its little-endian bytes are made when the writer
/// asks for them (one tensor at a time) and dropped once written.
struct F32View<'a> {
    shape: Vec<usize>,
    source: F32Source<'a>,
}

impl safetensors::View for F32View<'_> {
    fn dtype(&self) -> Dtype {
        Dtype::F32
    }

    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn data(&self) -> std::borrow::Cow<'_, [u8]> {
        let le = |values: &[f32]| values.iter().flat_map(|x| x.to_le_bytes()).collect();
        std::borrow::Cow::Owned(match &self.source {
            F32Source::Slice(values) => le(values),
            F32Source::Made(t) => le(&t.data()),
        })
    }

    fn data_len(&self) -> usize {
        self.shape.iter().product::<usize>() * std::mem::size_of::<f32>()
    }
}

fn serialize_f32<'a>(
    views: impl Iterator<Item = (String, F32View<'a>)>,
    path: &Path,
) -> Result<()> {
    let metadata = HashMap::from([("format".to_owned(), "pt".to_owned())]);
    safetensors::serialize_to_file(views, Some(metadata), path).map_err(|e| Error::Safetensors {
        path: path.to_owned(),
        message: e.to_string(),
    })
}

/// Reads tensors by HF name from one or several safetensors files.
struct SafetensorsSource {
    device: Device,
    dir: PathBuf,
    /// Raw bytes of each file.
    files: Vec<(PathBuf, Vec<u8>)>,
    /// Tensor name → index into `files`.
    index: BTreeMap<String, usize>,
    used: HashSet<String>,
}

impl SafetensorsSource {
    fn open(dir: &Path, device: Device) -> Result<Self> {
        let single = dir.join(WEIGHTS_FILE);
        let index_path = dir.join(WEIGHTS_INDEX_FILE);
        let shard_names: Vec<String> = if single.exists() {
            vec![WEIGHTS_FILE.to_owned()]
        } else if index_path.exists() {
            let text =
                std::fs::read_to_string(&index_path).map_err(|e| Error::io(&index_path, e))?;
            #[derive(serde::Deserialize)]
            struct Index {
                weight_map: BTreeMap<String, String>,
            }
            let index: Index = serde_json::from_str(&text).map_err(|source| Error::Json {
                path: index_path.clone(),
                source,
            })?;
            let mut names: Vec<String> = index.weight_map.into_values().collect();
            names.sort();
            names.dedup();
            names
        } else {
            return Err(Error::io(
                &single,
                std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("neither {WEIGHTS_FILE} nor {WEIGHTS_INDEX_FILE} found"),
                ),
            ));
        };
        let mut files = Vec::new();
        let mut index = BTreeMap::new();
        for (i, name) in shard_names.iter().enumerate() {
            let path = dir.join(name);
            let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
            let st = SafeTensors::deserialize(&bytes).map_err(|e| Error::Safetensors {
                path: path.clone(),
                message: e.to_string(),
            })?;
            for tensor in st.names() {
                index.insert(tensor.to_owned(), i);
            }
            files.push((path, bytes));
        }
        Ok(Self {
            device,
            dir: dir.to_owned(),
            files,
            index,
            used: HashSet::new(),
        })
    }

    /// Fails on tensors nobody asked for (except a tied `lm_head.weight` and cached RoPE tables).
    fn check_all_used(&self, config: &ModelConfig) -> Result<()> {
        for name in self.index.keys() {
            let ignorable = name.ends_with("rotary_emb.inv_freq")
                || (config.tie_word_embeddings && name == "lm_head.weight");
            if !self.used.contains(name) && !ignorable {
                return Err(Error::UnexpectedTensor {
                    name: name.clone(),
                    path: self.dir.clone(),
                });
            }
        }
        Ok(())
    }
}

impl WeightSource for SafetensorsSource {
    fn tensor<const D: usize>(
        &mut self,
        name: &str,
        hf_shape: [usize; D],
        _init: Init,
        transpose: bool,
    ) -> Result<Tensor<D>> {
        let &file = self.index.get(name).ok_or_else(|| Error::MissingTensor {
            name: name.to_owned(),
            path: self.dir.clone(),
        })?;
        let (path, bytes) = &self.files[file];
        let st = SafeTensors::deserialize(bytes).map_err(|e| Error::Safetensors {
            path: path.clone(),
            message: e.to_string(),
        })?;
        let view = st.tensor(name).map_err(|e| Error::Safetensors {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if view.shape() != hf_shape {
            return Err(Error::ShapeMismatch {
                name: name.to_owned(),
                expected: hf_shape.to_vec(),
                found: view.shape().to_vec(),
            });
        }
        let mut values = view_to_f32(&view, name)?;
        let mut shape = hf_shape;
        if transpose {
            values = transposed(&values, hf_shape[0], hf_shape[D - 1]);
            shape.reverse();
        }
        self.used.insert(name.to_owned());
        Ok(Tensor::from_data(
            TensorData::new(values, shape),
            &self.device,
        ))
    }
}

/// The values of a safetensors tensor as f32 (F32, F64, BF16 and F16 are converted).
pub(crate) fn view_to_f32(
    view: &safetensors::tensor::TensorView<'_>,
    name: &str,
) -> Result<Vec<f32>> {
    let raw = view.data();
    Ok(match view.dtype() {
        Dtype::F32 => raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect(),
        Dtype::F64 => raw
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")) as f32)
            .collect(),
        Dtype::BF16 => raw
            .chunks_exact(2)
            .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        Dtype::F16 => raw
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect(),
        other => {
            return Err(Error::UnsupportedDtype {
                name: name.to_owned(),
                dtype: format!("{other:?}"),
            });
        }
    })
}

/// The transpose of a row-major `[rows, cols]` matrix, row-major `[cols, rows]`.
pub(crate) fn transposed(values: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0; values.len()];
    for r in 0..rows {
        for c in 0..cols {
            t[c * rows + r] = values[r * cols + c];
        }
    }
    t
}
