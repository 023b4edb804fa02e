//! GGUF metadata values (`gguf_type` 0–12) and typed accessors.

/// One metadata value of a GGUF file.
#[derive(Debug, Clone, PartialEq)]
pub enum MetadataValue {
    /// Type 0.
    U8(u8),
    /// Type 1.
    I8(i8),
    /// Type 2.
    U16(u16),
    /// Type 3.
    I16(i16),
    /// Type 4.
    U32(u32),
    /// Type 5.
    I32(i32),
    /// Type 6.
    F32(f32),
    /// Type 7 (one byte, 0 or 1).
    Bool(bool),
    /// Type 8: u64 length + UTF-8 bytes.
    String(String),
    /// Type 9: element type (u32), u64 count, elements.
    Array(Vec<MetadataValue>),
    /// Type 10.
    U64(u64),
    /// Type 11.
    I64(i64),
    /// Type 12.
    F64(f64),
}

impl MetadataValue {
    /// The value as a non-negative integer (any integer type), else `None`.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Self::U8(v) => Some(v.into()),
            Self::U16(v) => Some(v.into()),
            Self::U32(v) => Some(v.into()),
            Self::U64(v) => Some(v),
            Self::I8(v) => u64::try_from(v).ok(),
            Self::I16(v) => u64::try_from(v).ok(),
            Self::I32(v) => u64::try_from(v).ok(),
            Self::I64(v) => u64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The value as a signed integer (any integer type that fits), else `None`.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Self::I8(v) => Some(v.into()),
            Self::I16(v) => Some(v.into()),
            Self::I32(v) => Some(v.into()),
            Self::I64(v) => Some(v),
            _ => self.as_u64().and_then(|v| i64::try_from(v).ok()),
        }
    }

    /// The value as a float (float or integer types), else `None`.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Self::F32(v) => Some(v.into()),
            Self::F64(v) => Some(v),
            _ => self.as_i64().map(|v| v as f64),
        }
    }

    /// The value as a bool, else `None`.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Self::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// The value as a string, else `None`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an array, else `None`.
    pub fn as_array(&self) -> Option<&[MetadataValue]> {
        match self {
            Self::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The value as JSON (arrays longer than 8 elements are summarised), for display.
    pub fn to_json_summary(&self) -> serde_json::Value {
        match self {
            Self::Array(a) if a.len() > 8 => {
                serde_json::Value::String(format!("[array of {} values]", a.len()))
            }
            Self::Array(a) => a.iter().map(Self::to_json_summary).collect(),
            Self::String(s) => s.clone().into(),
            Self::Bool(b) => (*b).into(),
            Self::F32(v) => f64::from(*v).into(),
            Self::F64(v) => (*v).into(),
            other => other
                .as_i64()
                .map(serde_json::Value::from)
                .or_else(|| other.as_u64().map(serde_json::Value::from))
                .unwrap_or(serde_json::Value::Null),
        }
    }
}
