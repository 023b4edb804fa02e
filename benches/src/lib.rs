//! Shared helpers for the criterion benchmarks under `benches/benches/`.
