//! TensorBoard event files: every metric of every step as a scalar summary, readable by
//! `tensorboard --logdir runs/`.
//!
//! An event file is a sequence of TFRecords, each
//! `u64 length (LE) | u32 masked CRC32C of the length | data | u32 masked CRC32C of the data`,
//! whose data is one `tensorboard.Event` protobuf. The subset written here (field numbers of
//! tensorboard's `compat/proto/event.proto` and `summary.proto`):
//!
//! ```text
//! Event      { double wall_time = 1; int64 step = 2;
//!              oneof what { string file_version = 3; Summary summary = 5; SessionLog session_log = 7; } }
//! Summary    { repeated Value value = 1; }
//! Value      { string tag = 1; float simple_value = 2; }
//! SessionLog { SessionStatus status = 1; }   // START = 1
//! ```
//!
//! A file starts with a `file_version = "brain.Event:2"` event. A resumed run appends a new
//! file whose first event after that is `SessionLog START` at the first step it will write
//! again: TensorBoard then drops the steps from there on that the earlier file holds (they were
//! logged after the checkpoint the run resumed from), so every curve reads as one run. The name
//! of a new file sorts after the run's earlier ones (TensorBoard reads a directory's files in
//! name order).
//!
//! [`read_events`] and [`read_scalars`] read such files back (the tests compare them with
//! `metrics.jsonl`).

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};
use crate::metrics::Metrics;

/// The `file_version` of the first event of every file.
pub const FILE_VERSION: &str = "brain.Event:2";

/// The prefix of event file names (TensorBoard recognizes files by it).
pub const FILE_PREFIX: &str = "events.out.tfevents.";

/// Protobuf wire types.
const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const FIXED32: u8 = 5;

/// `SessionLog.SessionStatus.START`.
const SESSION_START: u64 = 1;

/// What one event carries (the subset of `Event.what` this module writes and reads).
#[derive(Debug, Clone, PartialEq)]
pub enum EventBody {
    /// The version line of a file's first event.
    FileVersion(String),
    /// Scalar summaries: (tag, value).
    Scalars(Vec<(String, f32)>),
    /// `SessionLog { status: START }`: a (re)start at this event's step.
    SessionStart,
    /// Anything else (read only).
    Other,
}

/// One event of an event file.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Seconds since the Unix epoch.
    pub wall_time: f64,
    /// The training step.
    pub step: i64,
    /// What the event carries.
    pub body: EventBody,
}

/// The masked CRC32C of TFRecords: the CRC rotated right by 15 bits plus a constant.
pub fn masked_crc32c(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

/// Frames `data` as one TFRecord.
pub fn frame_record(data: &[u8]) -> Vec<u8> {
    let len = (data.len() as u64).to_le_bytes();
    let mut out = Vec::with_capacity(data.len() + 16);
    out.extend_from_slice(&len);
    out.extend_from_slice(&masked_crc32c(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked_crc32c(data).to_le_bytes());
    out
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_key(out: &mut Vec<u8>, field: u32, wire: u8) {
    put_varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn put_bytes(out: &mut Vec<u8>, field: u32, bytes: &[u8]) {
    put_key(out, field, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// The protobuf bytes of an event (proto3: fields at their default value are left out).
pub fn encode_event(event: &Event) -> Vec<u8> {
    let mut out = Vec::new();
    if event.wall_time != 0.0 {
        put_key(&mut out, 1, FIXED64);
        out.extend_from_slice(&event.wall_time.to_le_bytes());
    }
    if event.step != 0 {
        put_key(&mut out, 2, VARINT);
        // int64 is encoded as its two's-complement u64.
        put_varint(&mut out, event.step as u64);
    }
    match &event.body {
        EventBody::FileVersion(v) => put_bytes(&mut out, 3, v.as_bytes()),
        EventBody::Scalars(values) => {
            let mut summary = Vec::new();
            for (tag, v) in values {
                let mut value = Vec::with_capacity(tag.len() + 8);
                put_bytes(&mut value, 1, tag.as_bytes());
                put_key(&mut value, 2, FIXED32);
                value.extend_from_slice(&v.to_le_bytes());
                put_bytes(&mut summary, 1, &value);
            }
            put_bytes(&mut out, 5, &summary);
        }
        EventBody::SessionStart => {
            let mut log = Vec::new();
            put_key(&mut log, 1, VARINT);
            put_varint(&mut log, SESSION_START);
            put_bytes(&mut out, 7, &log);
        }
        EventBody::Other => {}
    }
    out
}

/// Appends events to a new file in a run's `tb/` directory, flushing after each step.
pub struct EventWriter {
    path: PathBuf,
    file: BufWriter<File>,
}

impl EventWriter {
    /// Creates `dir/events.out.tfevents.<time>.<host>` and writes its version event. `<time>` is
    /// the current Unix time, or one second past the newest file already in `dir` when that is
    /// later, so that the new file sorts last. With `restart_at = Some(step)` (a resumed run
    /// whose next logged step is `step`), a `SessionLog START` at `step` follows, so that
    /// TensorBoard drops what earlier files logged from `step` on.
    pub fn create(dir: &Path, restart_at: Option<usize>) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let newest = std::fs::read_dir(dir)
            .map_err(|e| Error::io(dir, e))?
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_prefix(FILE_PREFIX)?
                    .split('.')
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .max();
        let now = unix_now();
        let secs = newest.map_or(now as u64, |n| (now as u64).max(n + 1));
        let path = dir.join(format!("{FILE_PREFIX}{secs:010}.{}", host_name()));
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        let mut writer = Self {
            path,
            file: BufWriter::new(file),
        };
        writer.write_event(&Event {
            wall_time: now,
            step: 0,
            body: EventBody::FileVersion(FILE_VERSION.into()),
        })?;
        if let Some(step) = restart_at {
            writer.write_event(&Event {
                wall_time: now,
                step: step as i64,
                body: EventBody::SessionStart,
            })?;
        }
        writer.flush()?;
        Ok(writer)
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes one event with every metric of `step` as a scalar (f32, as TensorBoard stores
    /// them; NaN stays NaN) and flushes, so a killed run loses nothing already logged.
    pub fn write_scalars(&mut self, step: usize, metrics: &Metrics) -> Result<()> {
        let values = metrics
            .iter()
            .map(|(k, v)| (k.clone(), *v as f32))
            .collect();
        self.write_event(&Event {
            wall_time: unix_now(),
            step: step as i64,
            body: EventBody::Scalars(values),
        })?;
        self.flush()
    }

    fn write_event(&mut self, event: &Event) -> Result<()> {
        self.file
            .write_all(&frame_record(&encode_event(event)))
            .map_err(|e| Error::io(&self.path, e))
    }

    fn flush(&mut self) -> Result<()> {
        self.file.flush().map_err(|e| Error::io(&self.path, e))
    }
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// The host name for file names (letters, digits, `-` and `_` only; `localhost` if unknown).
fn host_name() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let name: String = raw
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        .collect();
    if name.is_empty() {
        "localhost".into()
    } else {
        name
    }
}

/// Reads every event of one file, checking both CRCs of every record.
///
/// # Errors
/// [`Error::EventFile`] naming the file and the byte offset of a truncated or corrupt record.
pub fn read_events(path: &Path) -> Result<Vec<Event>> {
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let bad = |offset: usize, message: &str| Error::EventFile {
        path: path.to_path_buf(),
        offset,
        message: message.to_string(),
    };
    let mut events = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let header = bytes
            .get(at..at + 12)
            .ok_or_else(|| bad(at, "truncated record header"))?;
        let len_bytes = &header[..8];
        if masked_crc32c(len_bytes) != u32::from_le_bytes(header[8..12].try_into().unwrap()) {
            return Err(bad(at, "length CRC mismatch"));
        }
        let len = usize::try_from(u64::from_le_bytes(len_bytes.try_into().unwrap()))
            .map_err(|_| bad(at, "record length out of range"))?;
        let data = bytes
            .get(at + 12..at + 12 + len)
            .ok_or_else(|| bad(at, "truncated record data"))?;
        let crc = bytes
            .get(at + 12 + len..at + 16 + len)
            .ok_or_else(|| bad(at, "truncated record data CRC"))?;
        if masked_crc32c(data) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(bad(at, "data CRC mismatch"));
        }
        events.push(decode_event(data).map_err(|m| bad(at, &m))?);
        at += 16 + len;
    }
    Ok(events)
}

/// Every scalar of every event file in `dir`, by tag and step, as TensorBoard shows them: files
/// in name order, a `SessionLog START` at step s drops the values at steps ≥ s read so far, and
/// a later value of a (tag, step) replaces an earlier one.
pub fn read_scalars(dir: &Path) -> Result<BTreeMap<String, BTreeMap<i64, f32>>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(FILE_PREFIX))
        })
        .collect();
    files.sort();
    let mut out: BTreeMap<String, BTreeMap<i64, f32>> = BTreeMap::new();
    for file in files {
        for event in read_events(&file)? {
            match event.body {
                EventBody::SessionStart => {
                    for series in out.values_mut() {
                        series.retain(|&step, _| step < event.step);
                    }
                }
                EventBody::Scalars(values) => {
                    for (tag, v) in values {
                        out.entry(tag).or_default().insert(event.step, v);
                    }
                }
                EventBody::FileVersion(_) | EventBody::Other => {}
            }
        }
    }
    Ok(out)
}

/// A protobuf field as read: (field number, value).
enum Field<'a> {
    Varint(u64),
    Fixed64([u8; 8]),
    Fixed32([u8; 4]),
    Bytes(&'a [u8]),
}

/// Splits a protobuf message into its fields.
fn fields(mut buf: &[u8]) -> std::result::Result<Vec<(u64, Field<'_>)>, String> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let key = take_varint(&mut buf)?;
        let field = match (key & 7) as u8 {
            VARINT => Field::Varint(take_varint(&mut buf)?),
            FIXED64 => Field::Fixed64(take::<8>(&mut buf)?),
            FIXED32 => Field::Fixed32(take::<4>(&mut buf)?),
            LEN => {
                let len = usize::try_from(take_varint(&mut buf)?)
                    .map_err(|_| "field length out of range".to_string())?;
                if len > buf.len() {
                    return Err(format!("field {} overruns its message", key >> 3));
                }
                let (bytes, rest) = buf.split_at(len);
                buf = rest;
                Field::Bytes(bytes)
            }
            wire => return Err(format!("unsupported protobuf wire type {wire}")),
        };
        out.push((key >> 3, field));
    }
    Ok(out)
}

fn take_varint(buf: &mut &[u8]) -> std::result::Result<u64, String> {
    let mut v = 0u64;
    for (i, &b) in buf.iter().enumerate().take(10) {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *buf = &buf[i + 1..];
            return Ok(v);
        }
    }
    Err("truncated varint".into())
}

fn take<const N: usize>(buf: &mut &[u8]) -> std::result::Result<[u8; N], String> {
    if buf.len() < N {
        return Err("truncated fixed-width field".into());
    }
    let (head, rest) = buf.split_at(N);
    *buf = rest;
    Ok(head.try_into().expect("split at N"))
}

fn utf8(bytes: &[u8]) -> std::result::Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a string field is not UTF-8".to_string())
}

fn decode_event(data: &[u8]) -> std::result::Result<Event, String> {
    let mut event = Event {
        wall_time: 0.0,
        step: 0,
        body: EventBody::Other,
    };
    for (number, field) in fields(data)? {
        match (number, field) {
            (1, Field::Fixed64(b)) => event.wall_time = f64::from_le_bytes(b),
            (2, Field::Varint(v)) => event.step = v as i64,
            (3, Field::Bytes(b)) => event.body = EventBody::FileVersion(utf8(b)?),
            (5, Field::Bytes(b)) => event.body = EventBody::Scalars(decode_summary(b)?),
            (7, Field::Bytes(b)) => {
                let start = fields(b)?
                    .iter()
                    .any(|(n, f)| *n == 1 && matches!(f, Field::Varint(SESSION_START)));
                if start {
                    event.body = EventBody::SessionStart;
                }
            }
            _ => {}
        }
    }
    Ok(event)
}

fn decode_summary(data: &[u8]) -> std::result::Result<Vec<(String, f32)>, String> {
    let mut values = Vec::new();
    for (number, field) in fields(data)? {
        let (1, Field::Bytes(value)) = (number, field) else {
            continue;
        };
        let (mut tag, mut simple) = (None, None);
        for (n, f) in fields(value)? {
            match (n, f) {
                (1, Field::Bytes(b)) => tag = Some(utf8(b)?),
                (2, Field::Fixed32(b)) => simple = Some(f32::from_le_bytes(b)),
                _ => {}
            }
        }
        // A value of another kind (image, histogram, tensor) is skipped.
        if let (Some(tag), Some(v)) = (tag, simple) {
            values.push((tag, v));
        }
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 3720, appendix B.4 (iSCSI's CRC32C test vectors), and the common check value.
    #[test]
    fn crc32c_matches_the_rfc_3720_vectors() {
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c::crc32c(&[0u8; 32]), 0x8A91_36AA);
        assert_eq!(crc32c::crc32c(&[0xFFu8; 32]), 0x62A8_AB43);
        let ascending: Vec<u8> = (0..32).collect();
        assert_eq!(crc32c::crc32c(&ascending), 0x46DD_794E);
    }

    /// Event { wall_time: 1.5, step: 3, summary { value { tag: "a", simple_value: 2.0 } } },
    /// encoded by hand from the field numbers (and equal to what tensorboard's own
    /// `event_pb2.Event(...).SerializeToString()` gives).
    #[test]
    fn a_scalar_event_has_the_hand_encoded_bytes() {
        let event = Event {
            wall_time: 1.5,
            step: 3,
            body: EventBody::Scalars(vec![("a".into(), 2.0)]),
        };
        let expected: &[u8] = &[
            0x09, 0, 0, 0, 0, 0, 0, 0xF8,
            0x3F, // field 1, fixed64: 1.5 = 0x3FF8_0000_0000_0000
            0x10, 0x03, // field 2, varint: 3
            0x2A, 0x0A, // field 5 (summary), 10 bytes
            0x0A, 0x08, // Summary.value (field 1), 8 bytes
            0x0A, 0x01, b'a', // Value.tag (field 1): "a"
            0x15, 0, 0, 0,
            0x40, // Value.simple_value (field 2, fixed32): 2.0f32 = 0x4000_0000
        ];
        assert_eq!(encode_event(&event), expected);
        assert_eq!(decode_event(expected).unwrap(), event);
    }

    /// SessionLog START at step 5 (field 7 holding status = 1); the version event.
    #[test]
    fn session_start_and_version_events_have_the_hand_encoded_bytes() {
        let start = Event {
            wall_time: 0.0,
            step: 5,
            body: EventBody::SessionStart,
        };
        assert_eq!(encode_event(&start), [0x10, 0x05, 0x3A, 0x02, 0x08, 0x01]);
        let version = Event {
            wall_time: 2.0,
            step: 0,
            body: EventBody::FileVersion(FILE_VERSION.into()),
        };
        let mut expected = vec![0x09, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x1A, 13];
        expected.extend_from_slice(b"brain.Event:2");
        assert_eq!(encode_event(&version), expected);
    }

    /// The 23-byte event above framed as a TFRecord. The masked CRCs were computed with
    /// tensorboard's pure-Python `masked_crc32c` (tensorboard.compat.tensorflow_stub).
    #[test]
    fn a_record_has_the_reference_framing() {
        let data = encode_event(&Event {
            wall_time: 1.5,
            step: 3,
            body: EventBody::Scalars(vec![("a".into(), 2.0)]),
        });
        assert_eq!(masked_crc32c(&23u64.to_le_bytes()), 0x1EF8_CEE7);
        assert_eq!(masked_crc32c(&data), 0x9D3A_1CE8);
        let record = frame_record(&data);
        assert_eq!(
            &record[..12],
            &[23, 0, 0, 0, 0, 0, 0, 0, 0xE7, 0xCE, 0xF8, 0x1E]
        );
        assert_eq!(&record[12..35], &data[..]);
        assert_eq!(&record[35..], &[0xE8, 0x1C, 0x3A, 0x9D]);
    }

    #[test]
    fn a_resumed_file_sorts_last_and_its_restart_drops_the_later_steps() {
        let dir = tempfile::tempdir().unwrap();
        let m = |v: f64| Metrics::from([("reward/mean".to_string(), v)]);
        let mut first = EventWriter::create(dir.path(), None).unwrap();
        for step in 1..=4 {
            first.write_scalars(step, &m(step as f64)).unwrap();
        }
        // Resumed from the checkpoint of step 2: steps 3 and 4 are logged again.
        let mut second = EventWriter::create(dir.path(), Some(3)).unwrap();
        assert!(second.path() > first.path(), "the new file sorts last");
        second.write_scalars(3, &m(30.0)).unwrap();
        let back = read_scalars(dir.path()).unwrap();
        let series: Vec<(i64, f32)> = back["reward/mean"].iter().map(|(s, v)| (*s, *v)).collect();
        assert_eq!(series, [(1, 1.0), (2, 2.0), (3, 30.0)]);
        let events = read_events(second.path()).unwrap();
        assert_eq!(events[0].body, EventBody::FileVersion(FILE_VERSION.into()));
        assert_eq!(
            (events[1].step, &events[1].body),
            (3, &EventBody::SessionStart)
        );
    }

    #[test]
    fn a_corrupt_record_is_an_error_naming_file_and_offset() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("{FILE_PREFIX}1.h"));
        let mut bytes = frame_record(b"\x10\x01");
        bytes.extend(frame_record(b"\x10\x02"));
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = read_events(&path).unwrap_err().to_string();
        assert!(
            err.contains(&path.display().to_string()) && err.contains("byte 18"),
            "{err}"
        );
        assert!(err.contains("data CRC"), "{err}");
    }
}
