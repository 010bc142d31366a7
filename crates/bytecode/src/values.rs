//! Value numbering as MLIR's reader does it, so that the numbers it trusts
//! are checked first. An isolated-from-above region opens a scope; every
//! region in a scope reserves the value slots it declares, which its block
//! arguments and op results fill in order; an operand names a slot of the
//! current scope, possibly before its definition (graph regions).
//!
//! MLIR allocates what a region declares before reading it, and applies an
//! index-pair use-list order without bounds checks. So here a region must
//! define exactly the values it declares (the writer's invariant), and a
//! use-list order may only name uses the value has.

use std::collections::BTreeMap;

use super::error::{BytecodeError, Result};

/// A value (block argument or op result), numbered in definition order.
pub type ValueId = usize;

/// The value scopes of an IR walk, and the uses and use-list orders seen.
#[derive(Debug, Default)]
pub struct Values {
    scopes: Vec<Scope>,
    /// Number of uses of each value.
    uses: Vec<u64>,
    orders: Vec<Order>,
}

#[derive(Debug, Default)]
struct Scope {
    regions: Vec<RegionSlots>,
    /// Slots an operand or a definition touched, by slot index.
    slots: BTreeMap<u64, Slot>,
}

#[derive(Debug)]
struct RegionSlots {
    start: u64,
    declared: u64,
    defined: u64,
    /// Absolute offset of the declared count.
    offset: usize,
}

#[derive(Debug)]
enum Slot {
    /// Used before any definition; the first use's offset, for messages.
    Pending {
        uses: u64,
        offset: usize,
    },
    Defined(ValueId),
}

/// A use-list order read for a value: `indices` is a permutation of its uses,
/// or `(src, dst)` pairs when `pairs`.
#[derive(Debug)]
pub struct Order {
    pub value: ValueId,
    pub pairs: bool,
    pub indices: Vec<u64>,
    pub offset: usize,
}

impl Values {
    /// Opens the scope of an isolated-from-above op's regions.
    pub fn open_scope(&mut self) {
        self.scopes.push(Scope::default());
    }

    /// Closes the innermost scope (its regions are closed already).
    pub fn close_scope(&mut self) {
        self.scopes.pop();
    }

    fn scope(&mut self) -> &mut Scope {
        if self.scopes.is_empty() {
            self.open_scope();
        }
        let last = self.scopes.len() - 1;
        &mut self.scopes[last]
    }

    /// Reserves the `declared` slots of a region (the count read at `offset`).
    pub fn open_region(&mut self, declared: u64, offset: usize) {
        let scope = self.scope();
        let start = scope
            .regions
            .last()
            .map_or(0, |r| r.start.saturating_add(r.declared));
        scope.regions.push(RegionSlots {
            start,
            declared,
            defined: 0,
            offset,
        });
    }

    /// Releases the innermost region's slots: it must have defined exactly
    /// what it declared, and every slot of it that was used must be defined.
    pub fn close_region(&mut self) -> Result<()> {
        let scope = self.scope();
        let Some(region) = scope.regions.pop() else {
            return Ok(());
        };
        if region.defined != region.declared {
            return Err(BytecodeError::Malformed {
                offset: region.offset,
                message: format!(
                    "region declares {} values but defines {}",
                    region.declared, region.defined
                ),
            });
        }
        let released = scope.slots.split_off(&region.start);
        if let Some((slot, Slot::Pending { offset, .. })) = released
            .into_iter()
            .find(|(_, s)| matches!(s, Slot::Pending { .. }))
        {
            return Err(BytecodeError::Malformed {
                offset,
                message: format!("operand names value {slot}, which is never defined"),
            });
        }
        Ok(())
    }

    /// Numbers `count` new values; with `in_slots`, they also fill the next
    /// slots of the innermost region (MLIR leaves op results out of the slots
    /// of a region that declares no values, such as the top level).
    pub fn define(&mut self, count: u64, in_slots: bool, offset: usize) -> Result<ValueId> {
        let first = self.uses.len();
        let n = usize::try_from(count).unwrap_or(usize::MAX);
        self.uses.resize(first.saturating_add(n), 0);
        if !in_slots {
            return Ok(first);
        }
        let scope = self.scopes.last_mut();
        let Some(region) = scope.and_then(|s| s.regions.last_mut()) else {
            return Err(BytecodeError::Malformed {
                offset,
                message: "values defined outside of any region".into(),
            });
        };
        let end = region.defined.saturating_add(count);
        if end > region.declared {
            return Err(BytecodeError::Malformed {
                offset,
                message: format!(
                    "defining {count} more values exceeds the {} the region declares",
                    region.declared
                ),
            });
        }
        let base = region.start + region.defined;
        region.defined = end;
        let slots = &mut self.scopes.last_mut().expect("checked above").slots;
        for i in 0..count {
            let value = first + i as usize;
            if let Some(Slot::Pending { uses, .. }) = slots.insert(base + i, Slot::Defined(value)) {
                self.uses[value] = uses;
            }
        }
        Ok(first)
    }

    /// Numbers an op's results: MLIR puts them in slots only when the region
    /// declares values (the top level declares none).
    pub fn define_results(&mut self, count: u64, offset: usize) -> Result<ValueId> {
        let in_slots = self
            .scopes
            .last()
            .and_then(|s| s.regions.last())
            .is_some_and(|r| r.declared != 0);
        self.define(count, in_slots && count > 0, offset)
    }

    /// Records an operand naming slot `index` of the current scope.
    pub fn use_slot(&mut self, index: u64, offset: usize) -> Result<()> {
        let scope = self.scope();
        let len = scope
            .regions
            .last()
            .map_or(0, |r| r.start.saturating_add(r.declared));
        if index >= len {
            return Err(BytecodeError::InvalidIndex {
                what: "value",
                index,
                count: usize::try_from(len).unwrap_or(usize::MAX),
                offset,
            });
        }
        match scope
            .slots
            .entry(index)
            .or_insert(Slot::Pending { uses: 0, offset })
        {
            Slot::Pending { uses, .. } => *uses += 1,
            Slot::Defined(value) => {
                let value = *value;
                self.uses[value] += 1;
            }
        }
        Ok(())
    }

    /// Records a use-list order, checked by [`Values::finish`].
    pub fn order(&mut self, order: Order) {
        self.orders.push(order);
    }

    /// Checks every use-list order against the final number of uses. MLIR
    /// ignores orders of values with fewer than two uses.
    pub fn finish(&self) -> Result<()> {
        for order in &self.orders {
            let uses = self.uses.get(order.value).copied().unwrap_or(0);
            if uses < 2 || !order.pairs {
                continue;
            }
            let bad =
                order.indices.len() % 2 == 1 || order.indices.iter().step_by(2).any(|&i| i >= uses);
            if bad {
                return Err(BytecodeError::Malformed {
                    offset: order.offset,
                    message: format!(
                        "use-list order {:?} does not permute the {uses} uses of its value",
                        order.indices
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_uses_count_for_the_later_definition() {
        let mut v = Values::default();
        v.open_scope();
        v.open_region(2, 0);
        v.use_slot(1, 10).unwrap();
        v.use_slot(1, 11).unwrap();
        v.define(1, true, 12).unwrap();
        let b = v.define(1, true, 13).unwrap();
        assert_eq!(v.uses[b], 2);
        v.order(Order {
            value: b,
            pairs: true,
            indices: vec![0, 1, 2, 0],
            offset: 14,
        });
        assert!(v.finish().unwrap_err().to_string().contains("offset 0xe"));
        v.close_region().unwrap();
    }

    #[test]
    fn declared_counts_must_match_and_uses_resolve() {
        let mut v = Values::default();
        v.open_region(3, 5);
        v.define(2, true, 6).unwrap();
        let err = v.close_region().unwrap_err().to_string();
        assert!(err.contains("declares 3 values but defines 2"), "{err}");

        v.open_region(1, 0);
        v.use_slot(0, 9).unwrap();
        assert!(v.use_slot(1, 9).is_err());
        v.define(0, true, 1).unwrap();
        assert!(v.close_region().is_err());
    }
}
