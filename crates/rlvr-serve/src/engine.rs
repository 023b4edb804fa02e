//! The engine: one thread that owns the model and runs continuous batching.
//!
//! Requests arrive over a channel. Between two decode steps the engine admits queued requests
//! (one batch row per choice, while the batch has room), prefills them with
//! [`DecodeBatch::prefill`], samples one token for every row on the host, sends it to the
//! request's event channel, drops the rows that finished (or whose client went away), and runs
//! one [`DecodeBatch::step`] for the rest. A weight swap waits until the batch is empty (no new
//! request is admitted meanwhile), so every response comes from one weights version.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rlvr_models::{
    CausalLm, DecodeBatch, FinishReason, Sampler, Tokenizer, log_softmax_at, row_seed,
};
use tokio::sync::{mpsc as tmpsc, oneshot};

/// How one request is sampled; every choice uses the same settings and its own RNG.
#[derive(Debug, Clone)]
pub struct SamplingParams {
    /// Temperature, top-k, top-p.
    pub sampler: Sampler,
    /// A choice ends with [`FinishReason::Length`] after this many tokens.
    pub max_tokens: usize,
    /// A choice ends with [`FinishReason::Stop`] once its text contains one of these.
    pub stop: Vec<String>,
    /// Choice `i` draws from `StdRng::seed_from_u64(row_seed(seed, i))`, as
    /// [`rlvr_models::generate`] does for prompt `i`.
    pub seed: u64,
    /// Alternatives reported per position (0: none).
    pub top_logprobs: usize,
    /// EOS tokens do not end a choice.
    pub ignore_eos: bool,
}

/// What the engine tells a request's handler, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The request was admitted into the batch under this weights version.
    Started {
        /// The weights version that produces every token of the request.
        weights_version: u64,
    },
    /// Choice `choice` sampled `token`.
    Token {
        /// Choice index (`0..n`).
        choice: usize,
        /// The sampled id.
        token: u32,
        /// `log softmax(logits)[token]` at temperature 1, without top-k/top-p (what a
        /// teacher-forced [`rlvr_models::token_logprobs`] pass gives).
        logprob: f32,
        /// The `top_logprobs` most likely ids and their log-probs, most likely first.
        top: Vec<(u32, f32)>,
    },
    /// Choice `choice` ended.
    Finished {
        /// Choice index.
        choice: usize,
        /// Stop token or stop string (`Stop`), or `max_tokens` reached (`Length`).
        reason: FinishReason,
    },
}

/// A generation request for the engine.
#[derive(Debug)]
pub struct GenerationRequest {
    /// Prompt token ids (non-empty, each `< vocab_size`).
    pub prompt: Vec<u32>,
    /// Number of choices (batch rows).
    pub n: usize,
    /// Sampling settings.
    pub params: SamplingParams,
    /// Where the events go; once the receiver is dropped the request's rows leave the batch.
    pub events: tmpsc::UnboundedSender<Event>,
}

/// Settings of the engine loop.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Most rows decoded together.
    pub max_batch: usize,
    /// Ids that end a choice (the tokenizer's EOS ids).
    pub stop_token_ids: Vec<u32>,
    /// Left-padding id for prefill.
    pub pad_token_id: u32,
}

/// A point-in-time view of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineStats {
    /// Rows in the decode batch.
    pub active_rows: usize,
    /// Requests waiting for room in the batch.
    pub queued_requests: usize,
    /// Version of the weights being served (starts at 0, +1 per swap).
    pub weights_version: u64,
    /// Tokens sampled since the engine started (all requests, all choices).
    pub generated_tokens: u64,
    /// Most rows ever decoded together (at most `max_batch`, unless one request asked for
    /// more choices than that and ran alone).
    pub peak_batch_rows: usize,
    /// Rows held in the KV cache (equal to `active_rows` between steps; 0 when idle).
    pub kv_cache_rows: usize,
    /// Cached positions per row, padding included (0 when idle).
    pub kv_cache_len: usize,
}

/// The engine is gone (its thread ended or panicked).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the inference engine has stopped")]
pub struct EngineStopped;

enum Command {
    Generate(GenerationRequest),
    Swap {
        model: Box<CausalLm>,
        reply: oneshot::Sender<u64>,
    },
}

#[derive(Debug, Default)]
struct SharedStats {
    active_rows: AtomicUsize,
    queued_requests: AtomicUsize,
    weights_version: AtomicU64,
    generated_tokens: AtomicU64,
    peak_batch_rows: AtomicUsize,
    kv_cache_rows: AtomicUsize,
    kv_cache_len: AtomicUsize,
}

/// A cloneable handle to the engine thread. The thread ends once every handle is dropped and
/// the batch has drained.
#[derive(Clone)]
pub struct EngineHandle {
    commands: mpsc::Sender<Command>,
    stats: Arc<SharedStats>,
}

impl std::fmt::Debug for EngineHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineHandle")
            .field("stats", &self.stats())
            .finish()
    }
}

impl EngineHandle {
    /// Starts the engine thread on `model` (call `.valid()` on a training model first).
    pub fn spawn(model: CausalLm, tokenizer: Arc<Tokenizer>, config: EngineConfig) -> Self {
        let (tx, rx) = mpsc::channel();
        let stats = Arc::new(SharedStats::default());
        let engine = Engine {
            model,
            tokenizer,
            config,
            commands: rx,
            stats: stats.clone(),
            queue: VecDeque::new(),
            swaps: VecDeque::new(),
            rows: Vec::new(),
            batch: None,
            logits: Vec::new(),
            version: 0,
            generated: 0,
        };
        std::thread::Builder::new()
            .name("rlvr-serve-engine".into())
            .spawn(move || engine.run())
            .expect("spawn the engine thread");
        Self {
            commands: tx,
            stats,
        }
    }

    /// Queues a request.
    ///
    /// # Errors
    /// [`EngineStopped`] when the engine thread is gone.
    pub fn submit(&self, request: GenerationRequest) -> Result<(), EngineStopped> {
        self.stats.queued_requests.fetch_add(1, Ordering::SeqCst);
        self.commands
            .send(Command::Generate(request))
            .map_err(|_| EngineStopped)
    }

    /// Swaps in `model` once the current batch has drained and returns the new weights version.
    ///
    /// # Errors
    /// [`EngineStopped`] when the engine thread is gone.
    pub async fn swap_weights(&self, model: CausalLm) -> Result<u64, EngineStopped> {
        let (reply, answer) = oneshot::channel();
        self.commands
            .send(Command::Swap {
                model: Box::new(model),
                reply,
            })
            .map_err(|_| EngineStopped)?;
        answer.await.map_err(|_| EngineStopped)
    }

    /// Current row count, queue length, weights version, peak batch and KV cache size.
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            active_rows: self.stats.active_rows.load(Ordering::SeqCst),
            queued_requests: self.stats.queued_requests.load(Ordering::SeqCst),
            weights_version: self.stats.weights_version.load(Ordering::SeqCst),
            generated_tokens: self.stats.generated_tokens.load(Ordering::SeqCst),
            peak_batch_rows: self.stats.peak_batch_rows.load(Ordering::SeqCst),
            kv_cache_rows: self.stats.kv_cache_rows.load(Ordering::SeqCst),
            kv_cache_len: self.stats.kv_cache_len.load(Ordering::SeqCst),
        }
    }
}

/// A queued or running request, shared by its rows.
struct Job {
    params: SamplingParams,
    events: tmpsc::UnboundedSender<Event>,
}

/// One choice of one request, decoding in the batch.
struct Row {
    job: Arc<Job>,
    choice: usize,
    rng: StdRng,
    tokens: Vec<u32>,
}

struct Engine {
    model: CausalLm,
    tokenizer: Arc<Tokenizer>,
    config: EngineConfig,
    commands: mpsc::Receiver<Command>,
    stats: Arc<SharedStats>,
    queue: VecDeque<GenerationRequest>,
    swaps: VecDeque<(Box<CausalLm>, oneshot::Sender<u64>)>,
    rows: Vec<Row>,
    batch: Option<DecodeBatch>,
    /// Next-token logits of every row, row-major `[rows, V]`.
    logits: Vec<f32>,
    version: u64,
    /// Tokens sampled so far.
    generated: u64,
}

impl Engine {
    fn run(mut self) {
        loop {
            if self.rows.is_empty() && self.queue.is_empty() && self.swaps.is_empty() {
                match self.commands.recv() {
                    Ok(command) => self.accept(command),
                    Err(_) => return, // every handle dropped, nothing left to do
                }
            }
            while let Ok(command) = self.commands.try_recv() {
                self.accept(command);
            }
            if self.rows.is_empty()
                && let Some((model, reply)) = self.swaps.pop_front()
            {
                self.model = *model;
                self.version += 1;
                self.stats
                    .weights_version
                    .store(self.version, Ordering::SeqCst);
                tracing::info!(weights_version = self.version, "weights swapped");
                let _ = reply.send(self.version);
                continue;
            }
            if self.swaps.is_empty() {
                self.admit();
                let rows = self.batch.as_ref().map_or(0, DecodeBatch::len);
                self.stats.peak_batch_rows.fetch_max(rows, Ordering::SeqCst);
            }
            if !self.rows.is_empty() {
                self.sample_and_step();
            }
            self.publish();
        }
    }

    fn accept(&mut self, command: Command) {
        match command {
            Command::Generate(request) => self.queue.push_back(request),
            Command::Swap { model, reply } => self.swaps.push_back((model, reply)),
        }
    }

    fn publish(&self) {
        let (cache_rows, cache_len) = self
            .batch
            .as_ref()
            .map_or((0, 0), |b| (b.len(), b.seq_len()));
        self.stats.kv_cache_rows.store(cache_rows, Ordering::SeqCst);
        self.stats.kv_cache_len.store(cache_len, Ordering::SeqCst);
        self.stats
            .active_rows
            .store(self.rows.len(), Ordering::SeqCst);
        self.stats
            .queued_requests
            .store(self.queue.len(), Ordering::SeqCst);
        self.stats
            .generated_tokens
            .store(self.generated, Ordering::SeqCst);
    }

    /// Moves queued requests into the batch while there is room, prefilling them together.
    fn admit(&mut self) {
        self.queue.retain(|r| !r.events.is_closed());
        let mut prompts = Vec::new();
        while let Some(front) = self.queue.front() {
            // `rows` already holds the rows admitted in this round (their prompts prefill below).
            let fits = self.rows.len() + front.n <= self.config.max_batch;
            // A request larger than the whole batch still runs, alone.
            let alone = self.rows.is_empty();
            if !fits && !alone {
                break;
            }
            let request = self.queue.pop_front().expect("front exists");
            if request
                .events
                .send(Event::Started {
                    weights_version: self.version,
                })
                .is_err()
            {
                continue;
            }
            let job = Arc::new(Job {
                params: request.params,
                events: request.events,
            });
            for choice in 0..request.n {
                prompts.push(request.prompt.clone());
                self.rows.push(Row {
                    job: job.clone(),
                    choice,
                    rng: StdRng::seed_from_u64(row_seed(job.params.seed, choice as u64)),
                    tokens: Vec::new(),
                });
            }
        }
        if prompts.is_empty() {
            return;
        }
        let batch = self
            .batch
            .get_or_insert_with(|| DecodeBatch::new(self.model.num_layers()));
        let logits = batch.prefill(&self.model, &prompts, self.config.pad_token_id);
        self.logits.extend(logits);
    }

    /// Samples one token per row, reports it, drops finished or abandoned rows, and runs one
    /// decode step for the others.
    fn sample_and_step(&mut self) {
        let vocab = self.model.vocab_size();
        let mut keep = Vec::with_capacity(self.rows.len());
        let mut next = Vec::with_capacity(self.rows.len());
        for (slot, row) in self.rows.iter_mut().enumerate() {
            let job = &row.job;
            if job.events.is_closed() {
                continue; // the client went away: free the slot
            }
            let logits = &self.logits[slot * vocab..(slot + 1) * vocab];
            let token = job.params.sampler.sample(logits, &mut row.rng);
            let logprob = log_softmax_at(logits, token);
            let top = top_logprobs(logits, job.params.top_logprobs);
            row.tokens.push(token);
            let _ = job.events.send(Event::Token {
                choice: row.choice,
                token,
                logprob,
                top,
            });
            self.generated += 1;
            let reason = if (!job.params.ignore_eos && self.config.stop_token_ids.contains(&token))
                || hits_stop_string(&self.tokenizer, &row.tokens, &job.params.stop)
            {
                Some(FinishReason::Stop)
            } else if row.tokens.len() >= job.params.max_tokens {
                Some(FinishReason::Length)
            } else {
                None
            };
            match reason {
                Some(reason) => {
                    let _ = job.events.send(Event::Finished {
                        choice: row.choice,
                        reason,
                    });
                }
                None => {
                    keep.push(slot);
                    next.push(token);
                }
            }
        }
        let batch = self.batch.as_mut().expect("rows imply a batch");
        batch.retain(&keep);
        let mut old: Vec<Option<Row>> = std::mem::take(&mut self.rows)
            .into_iter()
            .map(Some)
            .collect();
        self.rows = keep
            .iter()
            .map(|&s| old[s].take().expect("kept once"))
            .collect();
        self.logits = if self.rows.is_empty() {
            Vec::new()
        } else {
            batch.step(&self.model, &next)
        };
    }
}

/// Whether the decoded tail of `tokens` contains a stop string (the check of
/// [`rlvr_models::generate_with_stop_strings`]: a stop string of n bytes is completed within
/// the last n tokens, plus 8 for multi-token characters).
fn hits_stop_string(tokenizer: &Tokenizer, tokens: &[u32], stops: &[String]) -> bool {
    let Some(longest) = stops.iter().map(String::len).max() else {
        return false;
    };
    let window = longest + 8;
    let tail = &tokens[tokens.len().saturating_sub(window)..];
    match tokenizer.decode_skip_special(tail) {
        Ok(text) => stops
            .iter()
            .any(|s| !s.is_empty() && text.contains(s.as_str())),
        Err(_) => false,
    }
}

/// The `k` largest log-probs of a row of logits, most likely first (ties: lower id first).
pub(crate) fn top_logprobs(logits: &[f32], k: usize) -> Vec<(u32, f32)> {
    if k == 0 {
        return Vec::new();
    }
    let mut ids: Vec<u32> = (0..logits.len() as u32).collect();
    let key = |&i: &u32| {
        let x = logits[i as usize];
        if x.is_nan() { f32::NEG_INFINITY } else { x }
    };
    let by_desc = |a: &u32, b: &u32| key(b).total_cmp(&key(a)).then(a.cmp(b));
    let k = k.min(ids.len());
    if k < ids.len() {
        ids.select_nth_unstable_by(k - 1, by_desc);
        ids.truncate(k);
    }
    ids.sort_unstable_by(by_desc);
    ids.into_iter()
        .map(|i| (i, log_softmax_at(logits, i)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_logprobs_are_sorted_and_normalised() {
        // log softmax([0, ln 3, 0]) = [ln .2, ln .6, ln .2].
        let top = top_logprobs(&[0.0, 3f32.ln(), 0.0], 2);
        assert_eq!(top.len(), 2);
        assert_eq!((top[0].0, top[1].0), (1, 0));
        assert!((top[0].1 - 0.6f32.ln()).abs() < 1e-6);
        assert!((top[1].1 - 0.2f32.ln()).abs() < 1e-6);
        assert!(top_logprobs(&[1.0], 0).is_empty());
    }
}
