//! ECPO's three coupled rewards and its metric, over a closed roster (methods-extra §20).
//!
//! The evidence store is a list of spans, span `j` (1-based) stating that a candidate (its
//! subject) has an attribute; the intent is a set of attributes. A candidate's graded
//! relevance is the number of intent attributes some span gives it (the "gold" grading the
//! spec allows in place of the paper's learned trajectory reward, **\[PROPOSED\]**).

use super::ranking::Item;

/// The evidence store and the intent of one task.
#[derive(Debug, Clone, Copy)]
pub struct Store<'a> {
    /// The intent's attributes.
    pub intent: &'a [String],
    /// `(subject, attribute)` per span, span `j` at index `j - 1`.
    pub spans: &'a [(String, String)],
    /// How many candidates the ranking lists at most.
    pub k: usize,
}

/// The terms of one ranking (each in `[0, 1]`; all 0 for a refused answer).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EcpoScore {
    /// NDCG@k with gains `2^rel − 1` and discounts `1 / log2(rank + 1)`.
    pub ndcg: f64,
    /// Valid cited spans / cited spans: a citation is valid when the span exists and its
    /// subject is the listed candidate.
    pub validity: f64,
    /// The evidence cycle: the share of listed items whose support is recovered from their
    /// cited spans alone (see [`recovered`]).
    pub cycle: f64,
    /// CertNDCG, the paper's metric: NDCG@k counting the gain of recovered items only.
    pub cert_ndcg: f64,
}

impl Store<'_> {
    /// The candidates on the roster (every span's subject), in order of first mention.
    pub fn roster(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for (subject, _) in self.spans {
            if !out.contains(&subject.as_str()) {
                out.push(subject);
            }
        }
        out
    }

    /// The intent attributes that some span gives `candidate`.
    fn support(&self, candidate: &str) -> Vec<&str> {
        self.intent
            .iter()
            .filter(|a| self.spans.iter().any(|(s, b)| s == candidate && b == *a))
            .map(String::as_str)
            .collect()
    }

    /// `candidate`'s graded relevance: how many intent attributes it has.
    pub fn relevance(&self, candidate: &str) -> usize {
        self.support(candidate).len()
    }

    /// How many items an answer must list: `min(k, candidates with relevance ≥ 1)`.
    pub fn required_items(&self) -> usize {
        let relevant = self
            .roster()
            .iter()
            .filter(|c| self.relevance(c) > 0)
            .count();
        relevant.min(self.k)
    }

    /// The best DCG@k any ranking of the roster reaches.
    pub fn ideal_dcg(&self) -> f64 {
        let mut rels: Vec<usize> = self.roster().iter().map(|c| self.relevance(c)).collect();
        rels.sort_unstable_by(|a, b| b.cmp(a));
        rels.iter()
            .take(self.k)
            .enumerate()
            .map(|(i, &r)| discounted(r, i))
            .sum()
    }

    /// The span `j` (1-based), if it exists.
    fn span(&self, j: usize) -> Option<&(String, String)> {
        j.checked_sub(1).and_then(|i| self.spans.get(i))
    }

    /// Whether `item`'s support is rebuilt from its cited spans alone, the claim (its ID)
    /// stripped: every cited span exists and names one and the same subject, that subject is
    /// the listed candidate, and the intent attributes those spans state are all the
    /// candidate's (at least one). A certificate that leaves out evidence, cites another
    /// candidate's spans, or lists a candidate with no support is not recovered.
    pub fn recovered(&self, item: &Item) -> bool {
        let mut subject: Option<&str> = None;
        let mut attested: Vec<&str> = Vec::new();
        for &j in &item.cited {
            let Some((s, a)) = self.span(j) else {
                return false;
            };
            match subject {
                Some(prev) if prev != s => return false,
                _ => subject = Some(s),
            }
            if self.intent.contains(a) && !attested.contains(&a.as_str()) {
                attested.push(a);
            }
        }
        let support = self.support(&item.id);
        subject == Some(item.id.as_str()) && !support.is_empty() && attested.len() == support.len()
    }

    /// The three rewards and CertNDCG of a parsed ranking.
    pub fn score(&self, items: &[Item]) -> EcpoScore {
        let ideal = self.ideal_dcg();
        let (mut dcg, mut cert_dcg) = (0.0, 0.0);
        let (mut cited, mut valid, mut recovered) = (0usize, 0usize, 0usize);
        for (rank, item) in items.iter().take(self.k).enumerate() {
            let gain = discounted(self.relevance(&item.id), rank);
            dcg += gain;
            if self.recovered(item) {
                recovered += 1;
                cert_dcg += gain;
            }
            cited += item.cited.len();
            valid += item
                .cited
                .iter()
                .filter(|&&j| self.span(j).is_some_and(|(s, _)| *s == item.id))
                .count();
        }
        let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        EcpoScore {
            ndcg: if ideal > 0.0 { dcg / ideal } else { 0.0 },
            validity: ratio(valid, cited),
            cycle: ratio(recovered, items.len()),
            cert_ndcg: if ideal > 0.0 { cert_dcg / ideal } else { 0.0 },
        }
    }
}

/// The gain of relevance `rel` at 0-based `rank`: `(2^rel − 1) / log2(rank + 2)`.
fn discounted(rel: usize, rank: usize) -> f64 {
    let gain = 2f64.powi(i32::try_from(rel).unwrap_or(i32::MAX)) - 1.0;
    gain / ((rank + 2) as f64).log2()
}
