//! Which attributes, types and strings are alive once locations are gone.
//!
//! Known references come from everything we decode. Bytes we cannot decode
//! (property blobs, custom entries of unknown dialects, dialect versions) may
//! hold further references; the writer emits a reference as a shortest-form
//! varint, `i` or `(i << 1) | 1` for an optional attribute, so an entity can only
//! hide at positions where such a varint starts ("candidates").
//!
//! Searching candidates alone is sound but weak. The upstream writer numbers an
//! attribute, type or string only when it writes a reference to it
//! ("accounting"): an entity without any known reference must therefore be
//! referenced from some candidate position, each position holding one
//! reference. Those "forced" entities are matched to positions (bipartite
//! matching); a position every complete matching needs cannot hold anything
//! else. An entity is possibly referenced when one of its candidates can be left
//! free by some complete matching. When the forced entities cannot all be
//! matched, the invariant does not hold for this payload and accounting is off.
//!
//! Locations and strings are never forced: stripping itself leaves them
//! without references, and a stripped payload must analyse the same way again
//! (which `strip_locations` checks). Forced entities get their matched
//! position; other entities are checked position by position, with the
//! expensive "can this position be freed" answers cached.

use std::collections::{HashMap, VecDeque};

use super::attrs::Slot;
use super::varint;

/// An attribute, type or string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Ent {
    /// Attribute index.
    Attr(usize),
    /// Type index.
    Type(usize),
    /// String index.
    Str(usize),
}

impl std::fmt::Display for Ent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ent::Attr(i) => write!(f, "attribute #{i}"),
            Ent::Type(i) => write!(f, "type #{i}"),
            Ent::Str(i) => write!(f, "string #{i}"),
        }
    }
}

/// Where undecodable bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Label {
    /// A property blob.
    Props(usize),
    /// An attribute entry we cannot decode.
    Attr(usize),
    /// A type entry we cannot decode.
    Type(usize),
    /// A dialect's version blob.
    DialectVersion(usize),
}

impl std::fmt::Display for Label {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Label::Props(i) => write!(f, "property blob #{i}"),
            Label::Attr(i) => write!(f, "undecodable attribute #{i}"),
            Label::Type(i) => write!(f, "undecodable type #{i}"),
            Label::DialectVersion(i) => write!(f, "the version of dialect #{i}"),
        }
    }
}

/// Undecodable bytes.
#[derive(Debug, Clone)]
pub struct Region<'a> {
    /// Where they come from.
    pub label: Label,
    /// Absolute offset of the first byte.
    pub start: usize,
    /// The bytes.
    pub bytes: &'a [u8],
}

/// A place where a reference may hide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    /// Region index.
    pub region: usize,
    /// Offset inside the region.
    pub offset: usize,
    /// Value of the shortest-form varint starting there.
    pub value: u64,
}

/// Why an entity is alive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// Used directly by the IR, dialect or resource sections.
    Root(String),
    /// Possibly referenced from undecodable bytes.
    Possible(String),
    /// Referenced by another live entity.
    Via(Ent, Slot),
}

/// Whether the writer's invariant could be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Accounting {
    /// Used: forced entities were matched to positions.
    Used {
        /// Number of forced entities.
        forced: usize,
    },
    /// Not needed: there are no undecodable bytes.
    NotNeeded,
    /// Disabled by the caller.
    Disabled,
    /// The invariant does not hold; only candidates were used.
    Violated(String),
}

/// The reference graph handed to [`analyse`].
#[derive(Debug, Clone, Default)]
pub struct Graph<'a> {
    /// Number of attributes.
    pub num_attrs: usize,
    /// Number of types.
    pub num_types: usize,
    /// Number of strings.
    pub num_strings: usize,
    /// Decoded references of each attribute and type entry.
    pub edges: HashMap<Ent, Vec<(Ent, Slot)>>,
    /// Number of known references to each entity (from anywhere).
    pub known_refs: HashMap<Ent, usize>,
    /// Entities used directly by the IR, dialect or resource sections.
    pub roots: Vec<(Ent, String)>,
    /// Entities that are never forced.
    pub exempt: Vec<Ent>,
    /// Undecodable bytes.
    pub regions: Vec<Region<'a>>,
}

/// The result of [`analyse`].
#[derive(Debug, Clone)]
pub struct Liveness {
    /// Live entities with the reason they are alive.
    pub live: HashMap<Ent, Why>,
    /// Entities alive through decoded references alone (no possible ones).
    pub known_live: std::collections::HashSet<Ent>,
    /// How accounting went.
    pub accounting: Accounting,
}

impl Graph<'_> {
    fn entities(&self) -> impl Iterator<Item = Ent> + '_ {
        (0..self.num_attrs)
            .map(Ent::Attr)
            .chain((0..self.num_types).map(Ent::Type))
            .chain((0..self.num_strings).map(Ent::Str))
    }

    fn describe(&self, p: &Position) -> String {
        match self.regions.get(p.region) {
            Some(r) => format!(
                "{} at byte {} (offset {:#x})",
                r.label,
                p.offset,
                r.start + p.offset
            ),
            None => "undecodable bytes".into(),
        }
    }
}

/// Positions grouped by varint value.
struct Candidates {
    positions: Vec<Position>,
    by_value: HashMap<u64, Vec<usize>>,
}

impl Candidates {
    fn new(regions: &[Region<'_>], max_value: u64) -> Self {
        let mut positions = Vec::new();
        let mut by_value: HashMap<u64, Vec<usize>> = HashMap::new();
        for (region, r) in regions.iter().enumerate() {
            for offset in 0..r.bytes.len() {
                let value = varint::decode_shortest(&r.bytes[offset..]).map(|(v, _)| v);
                if let Some(value) = value.filter(|&v| v <= max_value) {
                    by_value.entry(value).or_default().push(positions.len());
                    positions.push(Position {
                        region,
                        offset,
                        value,
                    });
                }
            }
        }
        Candidates {
            positions,
            by_value,
        }
    }

    fn of(&self, e: Ent) -> Vec<usize> {
        let values: Vec<u64> = match e {
            Ent::Attr(i) => vec![i as u64, (i as u64) << 1 | 1],
            Ent::Type(i) | Ent::Str(i) => vec![i as u64],
        };
        let mut out: Vec<usize> = values
            .iter()
            .filter_map(|v| self.by_value.get(v))
            .flatten()
            .copied()
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// A complete matching of forced entities to positions.
struct Matching {
    cands: Vec<Vec<usize>>,
    owner: Vec<Option<usize>>,
    assigned: Vec<Option<usize>>,
}

/// Finds an augmenting path from the unmatched forced entity `start`, never
/// using position `banned`, and applies it.
fn augment(
    cands: &[Vec<usize>],
    owner: &mut [Option<usize>],
    assigned: &mut [Option<usize>],
    start: usize,
    banned: Option<usize>,
) -> bool {
    let mut seen_pos = vec![false; owner.len()];
    let mut parent: Vec<Option<usize>> = vec![None; cands.len()];
    let mut seen_ent = vec![false; cands.len()];
    seen_ent[start] = true;
    let mut queue = VecDeque::from([start]);
    while let Some(u) = queue.pop_front() {
        for &p in &cands[u] {
            if Some(p) == banned || seen_pos[p] {
                continue;
            }
            seen_pos[p] = true;
            match owner[p] {
                Some(v) => {
                    if !seen_ent[v] {
                        seen_ent[v] = true;
                        parent[v] = Some(u);
                        queue.push_back(v);
                    }
                }
                None => {
                    let (mut cur, mut pos) = (u, p);
                    loop {
                        let previous = assigned[cur];
                        owner[pos] = Some(cur);
                        assigned[cur] = Some(pos);
                        match (parent[cur], previous) {
                            (Some(up), Some(prev)) if cur != start => {
                                cur = up;
                                pos = prev;
                            }
                            _ => break,
                        }
                    }
                    return true;
                }
            }
        }
    }
    false
}

impl Matching {
    /// Whether some complete matching of the forced entities leaves position
    /// `p` free.
    fn can_free(&self, p: usize) -> bool {
        let Some(g) = self.owner[p] else { return true };
        let mut owner = self.owner.clone();
        let mut assigned = self.assigned.clone();
        owner[p] = None;
        assigned[g] = None;
        augment(&self.cands, &mut owner, &mut assigned, g, Some(p))
    }
}

/// Above this many (position, forced entity) pairs the matching is skipped:
/// a payload that large falls back to candidate positions alone.
const MATCHING_BUDGET: usize = 20_000_000;

/// Computes liveness. `accounting` says whether the writer's invariant may be
/// used.
pub fn analyse(graph: &Graph<'_>, accounting: bool) -> Liveness {
    let max_value =
        (graph.num_attrs as u64) * 2 + 1 + graph.num_types as u64 + graph.num_strings as u64;
    let cands = Candidates::new(&graph.regions, max_value);

    // Forced entities and their matching.
    let exempt: std::collections::HashSet<Ent> = graph.exempt.iter().copied().collect();
    let forced: Vec<Ent> = graph
        .entities()
        .filter(|e| graph.known_refs.get(e).copied().unwrap_or(0) == 0 && !exempt.contains(e))
        .collect();
    let mut status = if graph.regions.is_empty() {
        Accounting::NotNeeded
    } else if !accounting {
        Accounting::Disabled
    } else {
        Accounting::Used {
            forced: forced.len(),
        }
    };
    let mut matching = None;
    let edges: usize = forced.len().saturating_mul(cands.positions.len());
    if matches!(status, Accounting::Used { .. }) && edges > MATCHING_BUDGET {
        status = Accounting::Violated(format!(
            "{} forced entities and {} positions exceed the matching budget",
            forced.len(),
            cands.positions.len()
        ));
    }
    if let Accounting::Used { .. } = status {
        let mut m = Matching {
            cands: forced.iter().map(|&e| cands.of(e)).collect(),
            owner: vec![None; cands.positions.len()],
            assigned: vec![None; forced.len()],
        };
        let Matching {
            cands: c,
            owner,
            assigned,
        } = &mut m;
        let unmatched = (0..forced.len()).find(|&i| !augment(c, owner, assigned, i, None));
        match unmatched {
            None => matching = Some(m),
            Some(i) => {
                status = Accounting::Violated(format!(
                    "{} has no reference that could be decoded and no free place in undecodable bytes",
                    forced[i]
                ));
            }
        }
    }
    let forced_index: HashMap<Ent, usize> =
        forced.iter().enumerate().map(|(i, &e)| (e, i)).collect();

    // Known liveness.
    let known_live = closure(
        graph,
        graph
            .roots
            .iter()
            .map(|(e, why)| (*e, Why::Root(why.clone()))),
    );

    // Possible references, for everything not already alive.
    let mut seeds: Vec<(Ent, Why)> = graph
        .roots
        .iter()
        .map(|(e, why)| (*e, Why::Root(why.clone())))
        .collect();
    let mut freeable: HashMap<usize, bool> = HashMap::new();
    for e in graph.entities() {
        if known_live.contains_key(&e) {
            continue;
        }
        // A forced entity is referenced from its own matched position.
        let own = forced_index
            .get(&e)
            .and_then(|&x| matching.as_ref()?.assigned[x]);
        let found = own.or_else(|| {
            cands.of(e).into_iter().find(|&p| match &matching {
                None => true,
                Some(m) => *freeable.entry(p).or_insert_with(|| m.can_free(p)),
            })
        });
        if let Some(p) = found {
            seeds.push((e, Why::Possible(graph.describe(&cands.positions[p]))));
        }
    }
    let live = closure(graph, seeds);
    Liveness {
        live,
        known_live: known_live.into_keys().collect(),
        accounting: status,
    }
}

fn closure(graph: &Graph<'_>, seeds: impl IntoIterator<Item = (Ent, Why)>) -> HashMap<Ent, Why> {
    let mut live: HashMap<Ent, Why> = HashMap::new();
    let mut queue = VecDeque::new();
    for (e, why) in seeds {
        if let std::collections::hash_map::Entry::Vacant(slot) = live.entry(e) {
            slot.insert(why);
            queue.push_back(e);
        }
    }
    while let Some(e) = queue.pop_front() {
        for &(t, slot) in graph.edges.get(&e).map(Vec::as_slice).unwrap_or(&[]) {
            if let std::collections::hash_map::Entry::Vacant(v) = live.entry(t) {
                v.insert(Why::Via(e, slot));
                queue.push_back(t);
            }
        }
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_entity_claims_the_only_position() {
        // attr #17 has no known reference and one candidate (0x23); string #17
        // could be 0x23 too, but that byte is the attribute's.
        let blob = [0x3b, 0x23, 0x01];
        let mut g = Graph {
            num_attrs: 20,
            num_types: 0,
            num_strings: 20,
            regions: vec![Region {
                label: Label::Props(1),
                start: 100,
                bytes: &blob,
            }],
            ..Default::default()
        };
        for i in 0..20 {
            if i != 17 {
                g.known_refs.insert(Ent::Attr(i), 1);
            }
            g.known_refs.insert(Ent::Str(i), 1);
        }
        let live = analyse(&g, true);
        assert_eq!(live.accounting, Accounting::Used { forced: 1 });
        assert!(live.live.contains_key(&Ent::Attr(17)));
        assert!(!live.live.contains_key(&Ent::Str(17)));
        // 0x3b is 29 = (14 << 1) | 1: attribute #14 (optional) or string... #29 is out of range.
        assert!(live.live.contains_key(&Ent::Attr(14)));
        let weak = analyse(&g, false);
        assert!(weak.live.contains_key(&Ent::Str(17)));
    }

    #[test]
    fn violated_invariant_turns_accounting_off() {
        let blob = [0x03];
        let g = Graph {
            num_attrs: 3,
            regions: vec![Region {
                label: Label::Props(0),
                start: 0,
                bytes: &blob,
            }],
            ..Default::default()
        };
        // attrs #0 and #2 are both forced; #0 has candidates 0x01/0x03, #2 has 0x05/0x0b.
        let live = analyse(&g, true);
        assert!(matches!(live.accounting, Accounting::Violated(_)));
    }
}
