//! [`InstanceContext`]: an instance's context as one step under its row lock works on it. The
//! row lock reads no context (`LockedInstance`); this reads it from the row the first time
//! something reads or joins it, parses it once, and writes it back only if an output joined it.
//! A map's items make the context large (100 000 ids are ~600 KiB) while most of its steps — an
//! item ending, the next ones taken — need none of it: reading it on every step made each step's
//! cost, and the admin's memory while a map ran, grow with the number of items.

use serde_json::{Map, Value};

use crate::store::{InstanceTx, StoreError};
use crate::workflow::{context_map, join_output};

/// An instance's context within one step, read on first use.
#[derive(Default)]
pub(super) struct InstanceContext {
    map: Option<Map<String, Value>>,
    changed: bool,
}

impl InstanceContext {
    /// Not read yet.
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// The context, read from the locked row on first use ([`context_map`]: a stored value that
    /// is not an object reads as an empty one).
    pub(super) async fn map<'a>(
        &'a mut self,
        tx: &mut dyn InstanceTx,
    ) -> Result<&'a mut Map<String, Value>, StoreError> {
        if self.map.is_none() {
            self.map = Some(context_map(&tx.context().await?));
        }
        Ok(self.map.get_or_insert_with(Map::new))
    }

    /// [`join_output`] into it; whether the output joined (false: the context would pass its
    /// limit).
    pub(super) async fn join(
        &mut self,
        tx: &mut dyn InstanceTx,
        node: &str,
        value: Value,
    ) -> Result<bool, StoreError> {
        let joined = join_output(self.map(tx).await?, node, value);
        self.changed |= joined;
        Ok(joined)
    }

    /// Writes it to the row if an output joined it.
    pub(super) async fn write(self, tx: &mut dyn InstanceTx) -> Result<(), StoreError> {
        match self.map {
            Some(map) if self.changed => tx.set_context(&Value::Object(map).to_string()).await,
            _ => Ok(()),
        }
    }
}
