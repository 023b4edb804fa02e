//! The QA synthesis of K2V (methods-extra §17, "QA synthesis"), without an LLM: traverse a
//! subgraph, write its facts with fixed templates, mask one entity's every mention → a
//! fill-in-the-blank question whose answer is the entity's name; the masked entity's graph
//! neighbours outside the question are kept as distractors (`adjacent`).

use std::collections::{HashSet, VecDeque};

use super::world::{Triple, World};
use crate::gen_data::SplitMix64;

/// What replaces the masked entity. The paper writes `{ }`; braces are not in the bundled
/// model's alphabet, so the bundled task uses `*` (a documented deviation; any string works).
pub const MASK: &str = "*";
/// The traversal's extra edges beyond the seed edge (the paper's `max_extra_edges`).
pub const MAX_EXTRA_EDGES: usize = 2;
/// Distractors wanted: the breadth-first search goes on until this many are found, where the
/// graph allows (the paper's 4).
pub const MIN_ADJACENT: usize = 4;

/// One synthesized question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The subgraph's triples (indexes into the world's), in the order they are written.
    pub edges: Vec<usize>,
    /// The masked entity.
    pub masked: usize,
    /// The question: the context with every mention of the masked entity replaced by [`MASK`].
    pub prompt: String,
    /// The masked entity's name.
    pub answer: String,
    /// Entities adjacent to the answer that the question does not show, breadth-first.
    pub adjacent: Vec<String>,
}

impl Question {
    /// The subgraph as a sorted list of triple indexes: what the train/held-out split is made
    /// by.
    pub fn edge_set(&self) -> Vec<usize> {
        let mut e = self.edges.clone();
        e.sort_unstable();
        e
    }
}

/// Traverses one subgraph (max depth 1, at most [`MAX_EXTRA_EDGES`] extra edges,
/// bidirectional, random edge sampling): a uniformly drawn seed edge, then up to
/// `MAX_EXTRA_EDGES` edges drawn without replacement from those touching either of its
/// endpoints, in either direction (as many as there are, up to the limit: max-width expansion).
pub fn traverse(world: &World, rng: &mut SplitMix64) -> Vec<usize> {
    let seed = rng.below(world.triples.len() as u64) as usize;
    let t = world.triples[seed];
    let mut pool: Vec<usize> = world
        .incident(t.head)
        .into_iter()
        .chain(world.incident(t.tail))
        .filter(|&i| i != seed)
        .collect();
    pool.sort_unstable();
    pool.dedup();
    let mut edges = vec![seed];
    while edges.len() <= MAX_EXTRA_EDGES && !pool.is_empty() {
        let k = rng.below(pool.len() as u64) as usize;
        edges.push(pool.swap_remove(k));
    }
    edges
}

/// The context of `edges`: one template sentence per fact, in order, separated by spaces.
pub fn context(world: &World, edges: &[usize]) -> String {
    edges
        .iter()
        .map(|&i| {
            let t = world.triples[i];
            t.relation
                .sentence(&world.names[t.head], &world.names[t.tail])
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Replaces every mention of `name` in `text` (case-insensitive, as a whole word: no letter or
/// digit on either side) with `mask`.
pub fn mask_mentions(text: &str, name: &str, mask: &str) -> String {
    let (lower, needle) = (text.to_lowercase(), name.to_lowercase());
    if needle.is_empty() || lower.len() != text.len() {
        return text.to_string();
    }
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let mut out = String::new();
    let mut last = 0;
    for (at, _) in lower.match_indices(&needle) {
        let end = at + needle.len();
        if at < last || word(lower[..at].chars().next_back()) || word(lower[end..].chars().next()) {
            continue;
        }
        out.push_str(&text[last..at]);
        out.push_str(mask);
        last = end;
    }
    out.push_str(&text[last..]);
    out
}

/// The entities that can fill the blank: every `x` such that each fact of `edges` with the
/// masked entity replaced by `x` is a fact of the world. The question is kept only when this
/// is the answer alone, so every answer is recoverable from the graph.
pub fn fillers(
    world: &World,
    facts: &HashSet<Triple>,
    edges: &[usize],
    masked: usize,
) -> Vec<usize> {
    let sub = |e: usize, x: usize| if e == masked { x } else { e };
    (0..world.names.len())
        .filter(|&x| {
            edges.iter().all(|&i| {
                let t = world.triples[i];
                facts.contains(&Triple {
                    head: sub(t.head, x),
                    relation: t.relation,
                    tail: sub(t.tail, x),
                })
            })
        })
        .collect()
}

/// The masked entity's distractors: breadth-first from it over the graph (both directions),
/// the entities not in the question's subgraph, until at least [`MIN_ADJACENT`] are found
/// (all of them when the graph has fewer). A node's neighbours are visited in index order.
pub fn adjacent(world: &World, masked: usize, in_context: &HashSet<usize>) -> Vec<usize> {
    let mut seen: HashSet<usize> = HashSet::from([masked]);
    let mut queue = VecDeque::from([masked]);
    let mut found = Vec::new();
    while let Some(e) = queue.pop_front() {
        for n in world.neighbours(e) {
            if seen.insert(n) {
                if !in_context.contains(&n) {
                    found.push(n);
                }
                queue.push_back(n);
            }
        }
        if found.len() >= MIN_ADJACENT {
            break;
        }
    }
    found
}

/// One question from a fresh subgraph, or `None` when no entity of it is recoverable alone.
/// The masked entity is drawn uniformly among the subgraph's entities whose blank has one
/// filler (**\[PROPOSED\]**: the paper masks any entity; an ambiguous blank would make the
/// exact-match reward punish a right alternative).
pub fn synthesize(
    world: &World,
    facts: &HashSet<Triple>,
    rng: &mut SplitMix64,
) -> Option<Question> {
    let edges = traverse(world, rng);
    let mut nodes: Vec<usize> = edges
        .iter()
        .flat_map(|&i| [world.triples[i].head, world.triples[i].tail])
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let unique: Vec<usize> = nodes
        .iter()
        .copied()
        .filter(|&n| fillers(world, facts, &edges, n) == [n])
        .collect();
    if unique.is_empty() {
        return None;
    }
    let masked = unique[rng.below(unique.len() as u64) as usize];
    let in_context: HashSet<usize> = nodes.iter().copied().collect();
    Some(Question {
        prompt: mask_mentions(&context(world, &edges), &world.names[masked], MASK),
        answer: world.names[masked].clone(),
        adjacent: adjacent(world, masked, &in_context)
            .into_iter()
            .map(|n| world.names[n].clone())
            .collect(),
        edges,
        masked,
    })
}
