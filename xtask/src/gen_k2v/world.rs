//! The synthetic world of the K2V task: typed entities with made-up names and the typed
//! relations between them, drawn from a seed (the knowledge graph of methods-extra §17,
//! generated instead of extracted from a corpus).

use std::collections::HashSet;

use crate::gen_data::SplitMix64;

/// The entity types of the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityType {
    /// A person: born in one city, works in one city.
    Person,
    /// A city: in one country.
    City,
    /// A country: speaks one language.
    Country,
    /// A language.
    Language,
}

impl EntityType {
    /// The name written in `triples.jsonl`.
    pub fn name(self) -> &'static str {
        match self {
            EntityType::Person => "person",
            EntityType::City => "city",
            EntityType::Country => "country",
            EntityType::Language => "language",
        }
    }
}

/// The relations of the world, each from one entity type to another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Relation {
    /// person → city.
    BornIn,
    /// person → city.
    WorksIn,
    /// city → country.
    InCountry,
    /// country → language.
    Speaks,
}

impl Relation {
    /// The name written in `triples.jsonl`.
    pub fn name(self) -> &'static str {
        match self {
            Relation::BornIn => "born_in",
            Relation::WorksIn => "works_in",
            Relation::InCountry => "in_country",
            Relation::Speaks => "speaks",
        }
    }

    /// The fixed sentence template of a fact: `{h} BORN {t}.`; only characters of the bundled
    /// model's alphabet.
    pub fn sentence(self, head: &str, tail: &str) -> String {
        let verb = match self {
            Relation::BornIn => "BORN",
            Relation::WorksIn => "WORKS",
            Relation::InCountry => "IN",
            Relation::Speaks => "SPEAKS",
        };
        format!("{head} {verb} {tail}.")
    }
}

/// One fact: `head —relation→ tail`, by entity index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Triple {
    /// The head entity.
    pub head: usize,
    /// The relation.
    pub relation: Relation,
    /// The tail entity.
    pub tail: usize,
}

/// The world: entity names and types, and its facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct World {
    /// Entity names (distinct, three capital letters, consonant-vowel-consonant).
    pub names: Vec<String>,
    /// Entity types, by index.
    pub types: Vec<EntityType>,
    /// The facts, in generation order.
    pub triples: Vec<Triple>,
}

/// Numbers of each kind of entity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorldSize {
    /// Languages.
    pub languages: usize,
    /// Countries (each speaks a uniformly drawn language).
    pub countries: usize,
    /// Cities per country.
    pub cities_per_country: usize,
    /// Persons per city (born there; each works in a uniformly drawn city).
    pub persons_per_city: usize,
}

const CONSONANTS: &[u8] = b"BDFGKLMNPRSTVZ";
const VOWELS: &[u8] = b"AEIOU";
/// The words of the sentence templates: no name may occur inside one (`BOR` in `BORN`), so
/// that masking a name never touches a template word.
const TEMPLATE_WORDS: [&str; 4] = ["BORN", "WORKS", "IN", "SPEAKS"];

fn fresh_name(rng: &mut SplitMix64, used: &mut HashSet<String>) -> String {
    loop {
        let pick = |rng: &mut SplitMix64, set: &[u8]| set[rng.below(set.len() as u64) as usize];
        let name: String = [
            pick(rng, CONSONANTS),
            pick(rng, VOWELS),
            pick(rng, CONSONANTS),
        ]
        .iter()
        .map(|&b| char::from(b))
        .collect();
        if !TEMPLATE_WORDS.iter().any(|w| w.contains(&name)) && used.insert(name.clone()) {
            return name;
        }
    }
}

impl World {
    /// Adds the fact `head relation tail`.
    fn link(&mut self, head: usize, relation: Relation, tail: usize) {
        self.triples.push(Triple {
            head,
            relation,
            tail,
        });
    }

    /// Draws a world of `size` from `seed`.
    pub fn generate(size: WorldSize, seed: u64) -> World {
        let mut rng = SplitMix64(seed);
        let mut used = HashSet::new();
        let mut world = World {
            names: Vec::new(),
            types: Vec::new(),
            triples: Vec::new(),
        };
        let mut add = |world: &mut World, rng: &mut SplitMix64, t: EntityType| {
            world.names.push(fresh_name(rng, &mut used));
            world.types.push(t);
            world.names.len() - 1
        };
        let languages: Vec<usize> = (0..size.languages)
            .map(|_| add(&mut world, &mut rng, EntityType::Language))
            .collect();
        let mut cities = Vec::new();
        for _ in 0..size.countries {
            let country = add(&mut world, &mut rng, EntityType::Country);
            let language = languages[rng.below(languages.len() as u64) as usize];
            world.link(country, Relation::Speaks, language);
            for _ in 0..size.cities_per_country {
                let city = add(&mut world, &mut rng, EntityType::City);
                world.link(city, Relation::InCountry, country);
                cities.push(city);
            }
        }
        for &city in &cities {
            for _ in 0..size.persons_per_city {
                let person = add(&mut world, &mut rng, EntityType::Person);
                world.link(person, Relation::BornIn, city);
                let work = cities[rng.below(cities.len() as u64) as usize];
                world.link(person, Relation::WorksIn, work);
            }
        }
        world
    }

    /// The indexes of the triples touching entity `e` (as head or tail: the graph is walked in
    /// both directions).
    pub fn incident(&self, e: usize) -> Vec<usize> {
        (0..self.triples.len())
            .filter(|&i| self.triples[i].head == e || self.triples[i].tail == e)
            .collect()
    }

    /// The neighbours of `e` in either direction, sorted and without repeats.
    pub fn neighbours(&self, e: usize) -> Vec<usize> {
        let mut n: Vec<usize> = self
            .incident(e)
            .into_iter()
            .map(|i| {
                let t = self.triples[i];
                if t.head == e { t.tail } else { t.head }
            })
            .collect();
        n.sort_unstable();
        n.dedup();
        n
    }

    /// `triples.jsonl`: one `{"head", "relation", "tail", "head_type", "tail_type"}` per fact.
    pub fn to_jsonl(&self) -> String {
        self.triples
            .iter()
            .map(|t| {
                serde_json::json!({
                    "head": self.names[t.head], "relation": t.relation.name(),
                    "tail": self.names[t.tail], "head_type": self.types[t.head].name(),
                    "tail_type": self.types[t.tail].name(),
                })
                .to_string()
                    + "\n"
            })
            .collect()
    }
}
