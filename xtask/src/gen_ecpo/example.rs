//! One ECPO ranking task: an intent of two attributes, a closed roster of candidates and the
//! numbered evidence spans about them; the graded relevance of each candidate and the ideal
//! Top-K answer with its certificates (`"KA13 MO2;"`).

use std::collections::HashSet;

use crate::gen_data::SplitMix64;

/// The attribute letters an intent and a span draw from.
pub const ATTRIBUTES: [char; 6] = ['R', 'G', 'B', 'S', 'T', 'W'];
/// How many candidates a ranking lists at most (the task's `k`).
pub const K: usize = 2;
/// Roster sizes drawn from, uniformly.
pub const ROSTER_SIZES: [usize; 2] = [3, 4];
/// Span counts drawn from, uniformly.
pub const SPAN_COUNTS: [usize; 2] = [4, 5];
/// The longest prompt the bundled model's 64-position context leaves room for.
pub const MAX_PROMPT_CHARS: usize = 46;

/// One evidence span: its subject (a roster candidate) has the attribute.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Span {
    /// The candidate's two-capital ID.
    pub subject: String,
    /// One of [`ATTRIBUTES`].
    pub attribute: char,
}

/// One listed candidate of an answer and the span numbers (1-based) it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The candidate's ID.
    pub id: String,
    /// The cited spans, in the order written.
    pub cited: Vec<usize>,
}

/// One ranking task.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Example {
    /// The two distinct intent attributes, in the order the prompt writes them.
    pub intent: [char; 2],
    /// The spans; span `j` (1-based) is at index `j - 1`.
    pub spans: Vec<Span>,
}

impl Example {
    /// The prompt, `"R B? 1 KA R. 2 MO B. 3 KA B. 4 LU R. 5 ZE G."`.
    pub fn prompt(&self) -> String {
        let mut out = format!("{} {}?", self.intent[0], self.intent[1]);
        for (i, s) in self.spans.iter().enumerate() {
            out += &format!(" {} {} {}.", i + 1, s.subject, s.attribute);
        }
        out
    }

    /// The candidates (every span's subject), in order of first mention.
    pub fn roster(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for s in &self.spans {
            if !out.contains(&s.subject.as_str()) {
                out.push(&s.subject);
            }
        }
        out
    }

    /// The numbers (1-based, increasing) of `candidate`'s spans, or only those whose attribute
    /// is in the intent when `intent_only`.
    pub fn spans_of(&self, candidate: &str, intent_only: bool) -> Vec<usize> {
        (1..=self.spans.len())
            .filter(|&j| {
                let s = &self.spans[j - 1];
                s.subject == candidate && (!intent_only || self.intent.contains(&s.attribute))
            })
            .collect()
    }

    /// `candidate`'s complete certificate: the numbers of all its spans with an intent
    /// attribute, increasing.
    pub fn certificate(&self, candidate: &str) -> Vec<usize> {
        self.spans_of(candidate, true)
    }

    /// `candidate`'s graded relevance: how many intent attributes some span gives it (0–2; the
    /// spans have no duplicate `(subject, attribute)`, so it is the certificate's length).
    pub fn relevance(&self, candidate: &str) -> usize {
        self.certificate(candidate).len()
    }

    /// Candidates of relevance 0 (only non-intent attributes), in roster order.
    pub fn hard_negatives(&self) -> Vec<&str> {
        self.roster()
            .into_iter()
            .filter(|c| self.relevance(c) == 0)
            .collect()
    }

    /// The ideal ranking: the candidates of relevance ≥ 1 by relevance, descending, ties broken
    /// by the smaller first span, cut to [`K`].
    pub fn ideal_ranking(&self) -> Vec<&str> {
        // The roster is in order of first span, and the sort is stable.
        let mut ranked: Vec<&str> = self
            .roster()
            .into_iter()
            .filter(|c| self.relevance(c) > 0)
            .collect();
        ranked.sort_by_key(|c| std::cmp::Reverse(self.relevance(c)));
        ranked.truncate(K);
        ranked
    }

    /// The ideal answer's items: the ideal ranking, each with its complete certificate.
    pub fn ideal_items(&self) -> Vec<Item> {
        self.ideal_ranking()
            .into_iter()
            .map(|c| Item {
                id: c.to_string(),
                cited: self.certificate(c),
            })
            .collect()
    }

    /// The ideal answer as text, `"KA13 MO2;"`.
    pub fn ideal_answer(&self) -> String {
        render(&self.ideal_items())
    }

    /// Whether the example is a usable task: a relevance-2 candidate or two of relevance ≥ 1
    /// (so the ranking has something to order), a hard negative to tempt the policy, and a
    /// prompt of at most [`MAX_PROMPT_CHARS`].
    pub fn is_valid(&self) -> bool {
        let roster = self.roster();
        let relevances: Vec<usize> = roster.iter().map(|c| self.relevance(c)).collect();
        let graded = relevances.contains(&2) || relevances.iter().filter(|&&r| r >= 1).count() >= 2;
        graded && relevances.contains(&0) && self.prompt().len() <= MAX_PROMPT_CHARS
    }

    /// Draws examples until one [`Example::is_valid`]: a roster of 3–4 fresh IDs, 4–5 spans
    /// with every candidate the subject of one at least and no repeated `(subject,
    /// attribute)`.
    pub fn draw(rng: &mut SplitMix64) -> Example {
        loop {
            let ex = draw_once(rng);
            if ex.is_valid() {
                return ex;
            }
        }
    }
}

/// Renders items as `ID` + cited digits, separated by one space, ended by `;`.
pub fn render(items: &[Item]) -> String {
    let listed: Vec<String> = items
        .iter()
        .map(|it| {
            let digits: String = it.cited.iter().map(ToString::to_string).collect();
            format!("{}{digits}", it.id)
        })
        .collect();
    listed.join(" ") + ";"
}

/// A uniformly drawn element of `xs`.
pub(crate) fn pick<T: Copy>(rng: &mut SplitMix64, xs: &[T]) -> T {
    xs[rng.below(xs.len() as u64) as usize]
}

/// A two-capital ID that is not in `taken` and not an attribute letter doubled (`"RR"`).
fn fresh_id(rng: &mut SplitMix64, taken: &[String]) -> String {
    loop {
        let a = char::from(b'A' + rng.below(26) as u8);
        let b = char::from(b'A' + rng.below(26) as u8);
        let id: String = [a, b].iter().collect();
        let doubled_attribute = a == b && ATTRIBUTES.contains(&a);
        if !doubled_attribute && !taken.contains(&id) {
            return id;
        }
    }
}

/// The chance (percent) that a span's attribute is drawn from the intent rather than from all
/// six letters: uniform draws make a relevance-2 candidate rare (291 of 2,000 tasks) and the
/// top two nearly always tied, leaving the ranking little to learn.
pub const INTENT_BIAS_PERCENT: u64 = 40;

/// One draw, not yet checked by [`Example::is_valid`].
fn draw_once(rng: &mut SplitMix64) -> Example {
    let first = pick(rng, &ATTRIBUTES);
    let others: Vec<char> = ATTRIBUTES.iter().copied().filter(|&a| a != first).collect();
    let intent = [first, pick(rng, &others)];
    let mut roster: Vec<String> = Vec::new();
    for _ in 0..pick(rng, &ROSTER_SIZES) {
        let id = fresh_id(rng, &roster);
        roster.push(id);
    }
    let n = pick(rng, &SPAN_COUNTS);
    // Every candidate once, the rest drawn, then shuffled (Fisher–Yates).
    let mut subjects: Vec<usize> = (0..roster.len()).collect();
    while subjects.len() < n {
        subjects.push(rng.below(roster.len() as u64) as usize);
    }
    for i in (1..subjects.len()).rev() {
        subjects.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut seen = HashSet::new();
    let spans = subjects
        .into_iter()
        .map(|c| {
            loop {
                // A candidate has at most 5 spans of 6 attributes, so a fresh one always exists.
                let attribute = if rng.below(100) < INTENT_BIAS_PERCENT {
                    pick(rng, &intent)
                } else {
                    pick(rng, &ATTRIBUTES)
                };
                if seen.insert((c, attribute)) {
                    break Span {
                        subject: roster[c].clone(),
                        attribute,
                    };
                }
            }
        })
        .collect();
    Example { intent, spans }
}
