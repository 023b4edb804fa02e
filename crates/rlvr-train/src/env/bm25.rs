//! Okapi BM25 over a small in-memory corpus: the ranking behind the search environment's tool
//! (`env/search.rs`). Robertson and Zaragoza, "The Probabilistic Relevance Framework: BM25 and
//! Beyond" (2009), eq. 3.15 with Lucene's non-negative IDF:
//!
//! ```text
//! score(q, d) = Σ_{t ∈ q} idf(t) · tf(t, d)·(k1 + 1) / (tf(t, d) + k1·(1 − b + b·|d|/avgdl))
//! idf(t)      = ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))
//! ```
//!
//! A query term counts once per occurrence in the query. Terms are the lower-cased runs of
//! alphanumeric characters. Documents that share no term with the query are never returned;
//! equal scores rank by corpus order. Checked against `scripts/reference_bm25.py`.

use std::collections::HashMap;

/// BM25's term-frequency saturation `k1` (the common default).
pub const K1: f64 = 1.2;
/// BM25's length normalization `b` (the common default).
pub const B: f64 = 0.75;

/// The lower-cased alphanumeric runs of `text`, in order.
pub fn terms(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// An inverted index of a corpus, ready to rank queries.
#[derive(Debug, Clone)]
pub struct Bm25Index {
    /// The documents' text, in corpus order.
    docs: Vec<String>,
    /// Each document's length in terms.
    lengths: Vec<usize>,
    /// term → (document, term frequency) for every document holding it, in corpus order.
    postings: HashMap<String, Vec<(usize, usize)>>,
    avg_len: f64,
}

impl Bm25Index {
    /// Indexes `docs` (in the order given, which breaks ties).
    pub fn new(docs: Vec<String>) -> Self {
        let mut postings: HashMap<String, Vec<(usize, usize)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(docs.len());
        for (i, doc) in docs.iter().enumerate() {
            let ts = terms(doc);
            lengths.push(ts.len());
            let mut tf: HashMap<String, usize> = HashMap::new();
            for t in ts {
                *tf.entry(t).or_default() += 1;
            }
            for (t, n) in tf {
                postings.entry(t).or_default().push((i, n));
            }
        }
        for list in postings.values_mut() {
            list.sort_unstable();
        }
        let total: usize = lengths.iter().sum();
        let avg_len = total as f64 / docs.len().max(1) as f64;
        Self {
            docs,
            lengths,
            postings,
            avg_len,
        }
    }

    /// The number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether the corpus is empty.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Document `i`'s text.
    pub fn doc(&self, i: usize) -> &str {
        &self.docs[i]
    }

    /// `idf(t)` of a term (0 for a term no document holds).
    pub fn idf(&self, term: &str) -> f64 {
        let n = self.postings.get(term).map_or(0, Vec::len) as f64;
        if n == 0.0 {
            return 0.0;
        }
        let docs = self.docs.len() as f64;
        (1.0 + (docs - n + 0.5) / (n + 0.5)).ln()
    }

    /// Every document with a positive score for `query`, as (document, score), best first
    /// (equal scores in corpus order).
    pub fn rank(&self, query: &str) -> Vec<(usize, f64)> {
        let mut scores: HashMap<usize, f64> = HashMap::new();
        for t in terms(query) {
            let Some(list) = self.postings.get(&t) else {
                continue;
            };
            let idf = self.idf(&t);
            for &(d, tf) in list {
                let tf = tf as f64;
                let norm = K1 * (1.0 - B + B * self.lengths[d] as f64 / self.avg_len);
                *scores.entry(d).or_default() += idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut ranked: Vec<(usize, f64)> = scores.into_iter().filter(|(_, s)| *s > 0.0).collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked
    }

    /// The best `k` documents for `query` (fewer when fewer match).
    pub fn top(&self, query: &str, k: usize) -> Vec<usize> {
        self.rank(query)
            .into_iter()
            .take(k)
            .map(|(d, _)| d)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three documents by hand: N = 3, avgdl = 3; "cat" is in two documents
    /// (idf = ln(1 + 1.5/2.5) = ln 1.6), "dog" in one (idf = ln(1 + 2.5/1.5) = ln(8/3)).
    #[test]
    fn scores_by_hand() {
        let index = Bm25Index::new(vec![
            "the cat sat".into(),
            "Cat, cat; dog!".into(),
            "a bird flew".into(),
        ]);
        assert!((index.idf("cat") - 1.6f64.ln()).abs() < 1e-12);
        assert_eq!(index.idf("fish"), 0.0);
        // Doc 0: tf 1, |d| = 3 = avgdl → idf · 2.2 / 2.2 = idf.
        // Doc 1: tf("cat") = 2 → idf · 2 · 2.2 / (2 + 1.2) and dog: idf(dog) · 1.
        let ranked = index.rank("cat dog");
        let cat = 1.6f64.ln();
        let dog = (8.0f64 / 3.0).ln();
        assert_eq!(ranked.len(), 2);
        assert_eq!(ranked[0].0, 1);
        assert!((ranked[0].1 - (cat * 4.4 / 3.2 + dog)).abs() < 1e-12);
        assert!((ranked[1].1 - cat).abs() < 1e-12);
        assert_eq!(index.top("bird", 5), vec![2]);
        assert!(index.top("fish", 5).is_empty());
    }
}
