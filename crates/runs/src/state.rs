//! The state of a run line: what a run did at an address. Stored as text in the registry and in
//! run archives (`ok`, `failed`, `conflict`), typed everywhere else.

use std::fmt;
use std::str::FromStr;

use mck_store::EntryState;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunState {
    /// The run stored (or found) an artefact there.
    Ok,
    /// The compilation failed; the failure is remembered.
    Failed,
    /// The address held another fingerprint; nothing was stored.
    Conflict,
}

/// A state name that is not one of [`RunState::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown state {0:?} (expected ok, failed or conflict)")]
pub struct UnknownState(pub String);

impl RunState {
    pub const ALL: [RunState; 3] = [RunState::Ok, RunState::Failed, RunState::Conflict];

    pub fn as_str(self) -> &'static str {
        match self {
            RunState::Ok => "ok",
            RunState::Failed => "failed",
            RunState::Conflict => "conflict",
        }
    }

    /// The state of the entry a line with an artefact references (`None` for a conflict).
    pub fn entry_state(self) -> Option<EntryState> {
        match self {
            RunState::Ok => Some(EntryState::Ok),
            RunState::Failed => Some(EntryState::Failed),
            RunState::Conflict => None,
        }
    }
}

impl From<EntryState> for RunState {
    fn from(state: EntryState) -> Self {
        match state {
            EntryState::Ok => RunState::Ok,
            EntryState::Failed => RunState::Failed,
        }
    }
}

impl FromStr for RunState {
    type Err = UnknownState;
    fn from_str(s: &str) -> Result<Self, UnknownState> {
        RunState::ALL
            .into_iter()
            .find(|state| state.as_str() == s)
            .ok_or_else(|| UnknownState(crate::address::shorten(s)))
    }
}

/// By name, so that a bad name from an archive reads as [`UnknownState`].
impl<'de> Deserialize<'de> for RunState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for RunState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl rusqlite::ToSql for RunState {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

impl rusqlite::types::FromSql for RunState {
    fn column_result(value: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        value
            .as_str()?
            .parse()
            .map_err(|e: UnknownState| rusqlite::types::FromSqlError::Other(Box::new(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for state in RunState::ALL {
            assert_eq!(state.as_str().parse::<RunState>(), Ok(state));
            let json = serde_json::to_string(&state).unwrap();
            assert_eq!(json, format!("\"{state}\""));
            assert_eq!(serde_json::from_str::<RunState>(&json).unwrap(), state);
        }
        assert_eq!("OK".parse::<RunState>(), Err(UnknownState("OK".to_owned())));
        let err = serde_json::from_str::<RunState>("\"shipped\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown state \"shipped\""),
            "{err}"
        );
    }
}
