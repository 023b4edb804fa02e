//! The policy's answer: a Top-K list of candidate IDs, each with the spans it cites.
//!
//! Grammar (the bundled task's compact form of the paper's JSON list with `doc_id:span`
//! certificates): items separated by single spaces and ended by `;`, each item a candidate ID
//! (capitals) followed at once by the numbers of the cited spans, one digit each:
//! `KA13 MO2;` lists KA citing spans 1 and 3, then MO citing span 2. Text after the first `;`
//! is not read.

/// One listed candidate and its certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// The candidate's ID as written.
    pub id: String,
    /// The cited spans, 1-based, in the order written.
    pub cited: Vec<usize>,
}

/// Why an answer is refused whole (the hard gate: reward 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Malformed {
    /// No `;` ends the list.
    Unterminated,
    /// An item is not an ID followed by one or more span digits.
    BadItem(String),
    /// The list is empty.
    Empty,
    /// Fewer items than `min(k, relevant candidates)`: a short list of safe items would
    /// otherwise earn most of the reward (see [`parse_ranking`]).
    TooShort {
        /// Items listed.
        listed: usize,
        /// Items required.
        required: usize,
    },
    /// More items than `k`.
    TooLong {
        /// Items listed.
        listed: usize,
        /// The task's `k`.
        k: usize,
    },
    /// A candidate is listed twice.
    Repeated(String),
    /// A span is cited twice by one item.
    RepeatedCitation(String),
    /// An ID that is not on the roster (a hallucinated candidate).
    NotOnRoster(String),
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Malformed::Unterminated => write!(f, "no `;` ends the list"),
            Malformed::BadItem(s) => write!(f, "item {s:?} is not an ID followed by span digits"),
            Malformed::Empty => write!(f, "the list is empty"),
            Malformed::TooShort { listed, required } => {
                write!(f, "{listed} items listed, {required} required")
            }
            Malformed::TooLong { listed, k } => write!(f, "{listed} items listed, k = {k}"),
            Malformed::Repeated(id) => write!(f, "candidate {id} listed twice"),
            Malformed::RepeatedCitation(id) => write!(f, "{id} cites a span twice"),
            Malformed::NotOnRoster(id) => write!(f, "{id} is not on the roster"),
        }
    }
}

/// Reads `response` into at least `required` and at most `k` items of candidates on `roster`.
///
/// `required` is `min(k, relevant candidates)` (**\[PROPOSED]**): without it a policy that
/// copies one ID reliably and the others poorly learns to list one safe candidate, which passes
/// the gate and earns its NDCG and validity (measured on the bundled task: every held-out answer
/// one item after 100 steps, certified accuracy 0).
///
/// # Errors
/// [`Malformed`] for anything the grammar or the roster refuses.
pub fn parse_ranking(
    response: &str,
    k: usize,
    required: usize,
    roster: &[&str],
) -> Result<Vec<Item>, Malformed> {
    let (list, _) = response
        .trim_start()
        .split_once(';')
        .ok_or(Malformed::Unterminated)?;
    if list.trim().is_empty() {
        return Err(Malformed::Empty);
    }
    let mut items: Vec<Item> = Vec::new();
    for word in list.split(' ') {
        let digits_at = word
            .find(|c: char| c.is_ascii_digit())
            .ok_or_else(|| Malformed::BadItem(word.to_string()))?;
        let (id, digits) = word.split_at(digits_at);
        if id.is_empty()
            || !id.chars().all(|c| c.is_ascii_uppercase())
            || !digits.chars().all(|c| c.is_ascii_digit())
        {
            return Err(Malformed::BadItem(word.to_string()));
        }
        let cited: Vec<usize> = digits.bytes().map(|b| usize::from(b - b'0')).collect();
        if cited
            .iter()
            .enumerate()
            .any(|(i, j)| cited[..i].contains(j))
        {
            return Err(Malformed::RepeatedCitation(id.to_string()));
        }
        if items.iter().any(|it| it.id == id) {
            return Err(Malformed::Repeated(id.to_string()));
        }
        if !roster.contains(&id) {
            return Err(Malformed::NotOnRoster(id.to_string()));
        }
        items.push(Item {
            id: id.to_string(),
            cited,
        });
    }
    if items.len() > k {
        return Err(Malformed::TooLong {
            listed: items.len(),
            k,
        });
    }
    if items.len() < required {
        return Err(Malformed::TooShort {
            listed: items.len(),
            required,
        });
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROSTER: [&str; 4] = ["KA", "MO", "LU", "ZE"];

    #[test]
    fn a_well_formed_list_is_read_in_order() {
        let items = parse_ranking("KA13 MO2;", 2, 2, &ROSTER).unwrap();
        assert_eq!(
            items,
            vec![
                Item {
                    id: "KA".into(),
                    cited: vec![1, 3]
                },
                Item {
                    id: "MO".into(),
                    cited: vec![2]
                },
            ]
        );
        assert_eq!(
            parse_ranking("LU4; trailing", 2, 1, &ROSTER).unwrap().len(),
            1
        );
    }

    #[test]
    fn the_gate_refuses_what_the_grammar_or_roster_does_not_allow() {
        for (response, want) in [
            ("KA13 MO2", Malformed::Unterminated),
            (";", Malformed::Empty),
            ("KA MO2;", Malformed::BadItem("KA".into())),
            ("KA1  MO2;", Malformed::BadItem(String::new())),
            ("ka1;", Malformed::BadItem("ka1".into())),
            ("KA1X;", Malformed::BadItem("KA1X".into())),
            ("KA1 MO2 LU4;", Malformed::TooLong { listed: 3, k: 2 }),
            ("KA1 KA3;", Malformed::Repeated("KA".into())),
            ("KA11;", Malformed::RepeatedCitation("KA".into())),
            ("QQ1;", Malformed::NotOnRoster("QQ".into())),
            (
                "KA13;",
                Malformed::TooShort {
                    listed: 1,
                    required: 2,
                },
            ),
        ] {
            assert_eq!(
                parse_ranking(response, 2, 2, &ROSTER),
                Err(want),
                "{response}"
            );
        }
    }
}
