//! The durable catalog: items, the id counter, the timestamp high-water mark, settings and
//! roles ([`crate::roles`]), in one redb database.
//!
//! Items keep the SQL that created them, not plans: the coordinator re-plans on boot. Every
//! write commits with `Durability::Immediate`, so a returned `Ok` survives a crash.
//!
//! An I/O error (a full disk) leaves redb refusing every later transaction until the database
//! is opened again; the catalog opens it again before its next transaction, so definitions
//! work again as soon as there is space, without a restart.
//!
//! DDL inside a transaction block is applied at once, beside the steps that undo it
//! ([`Catalog::apply_in_block`]); ROLLBACK applies those steps, COMMIT forgets them, and a
//! block still open when the process stopped is undone when the catalog is opened again.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

use redb::{
    Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable, TableDefinition,
    WriteTransaction,
};
use repr::{GlobalId, ItemKind, Ownership, Timestamp};
use serde::{Deserialize, Serialize};

use crate::StorageError;

/// Items by id, as JSON.
const ITEMS: TableDefinition<u64, &[u8]> = TableDefinition::new("items");
/// Counters: the next id, the timestamp high-water mark.
const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
/// The catalog changes of open transaction blocks, by block: the steps that undo them, as JSON.
const UNCOMMITTED: TableDefinition<u64, &[u8]> = TableDefinition::new("uncommitted");
/// Free-form settings.
const SETTINGS: TableDefinition<&str, &str> = TableDefinition::new("settings");

const NEXT_ID: &str = "next_id";
const TIMESTAMP_HIGH_WATER: &str = "timestamp_high_water";
/// The first id `allocate_id` hands out.
const FIRST_ID: u64 = 1;

/// The schema of items stored before items carried one.
fn default_schema() -> String {
    "public".to_string()
}

/// One object in the catalog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogItem {
    /// Its identity, from [`Catalog::allocate_id`].
    pub id: GlobalId,
    /// Its name within its schema (for a schema item, the schema's name).
    pub name: String,
    /// The schema it belongs to (empty for a schema item).
    #[serde(default = "default_schema")]
    pub schema: String,
    /// What sort of object it is.
    pub kind: ItemKind,
    /// The statement that created it; re-planned on boot.
    pub create_sql: String,
    /// The items it reads from (dropping one of them must drop this one too).
    pub depends_on: Vec<GlobalId>,
    /// Its owner and access privileges (items from before privileges belong to the
    /// bootstrap superuser).
    #[serde(default)]
    pub ownership: Ownership,
    /// Why its dataflow is stopped, if it is (a materialized view that needed more memory
    /// than its budget): a restart does not build it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// One change to the catalog; a slice of them is applied atomically by [`Catalog::apply`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CatalogOp {
    /// Insert or replace the item with this id.
    Put(CatalogItem),
    /// Remove the item with this id; it must exist.
    Delete(GlobalId),
}

/// The durable catalog. Shareable between threads; redb serializes writers.
pub struct Catalog {
    path: PathBuf,
    /// The database (`None` only while it is opened again after an I/O error).
    db: RwLock<Option<Box<Database>>>,
    /// Whether a transaction met an I/O error, so redb must be opened again.
    broken: AtomicBool,
}

impl std::fmt::Debug for Catalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Catalog").finish_non_exhaustive()
    }
}

impl Catalog {
    /// Opens the catalog at `path`, creating the file and its tables if missing, and undoes
    /// the changes of every transaction block that was open when it was last used.
    pub fn open(path: &Path) -> Result<Catalog, StorageError> {
        let catalog = Catalog {
            path: path.to_path_buf(),
            db: RwLock::new(Some(Box::new(Database::create(path)?))),
            broken: AtomicBool::new(false),
        };
        let undone = catalog.write(|txn| {
            txn.open_table(ITEMS)?;
            txn.open_table(COUNTERS)?;
            txn.open_table(SETTINGS)?;
            txn.open_table(crate::roles::ROLES)?;
            let blocks: Vec<u64> = {
                let uncommitted = txn.open_table(UNCOMMITTED)?;
                let keys = uncommitted
                    .iter()?
                    .map(|entry| entry.map(|(k, _)| k.value()));
                keys.collect::<Result<_, _>>()?
            };
            for block in &blocks {
                undo_steps(txn, *block, 0)?;
            }
            Ok(blocks.len())
        })?;
        if undone > 0 {
            tracing::info!(
                blocks = undone,
                "undid the definitions of transaction blocks left open at the last stop"
            );
        }
        Ok(catalog)
    }

    /// Hands out a fresh id. Ids start at 1 and are never reused, even across restarts and
    /// after the item is dropped.
    pub fn allocate_id(&self) -> Result<GlobalId, StorageError> {
        self.write(|txn| {
            let mut counters = txn.open_table(COUNTERS)?;
            let id = counters.get(NEXT_ID)?.map_or(FIRST_ID, |v| v.value());
            counters.insert(NEXT_ID, id + 1)?;
            Ok(GlobalId(id))
        })
    }

    /// Applies `ops` in order in one transaction: all of them become durable, or none.
    ///
    /// Fails (changing nothing) if a `Put` names an id `allocate_id` never handed out or a
    /// `Delete` names a missing item.
    pub fn apply(&self, ops: &[CatalogOp]) -> Result<(), StorageError> {
        self.write(|txn| apply_ops(txn, ops, MissingItem::Fails))
    }

    /// Applies `ops` as [`Self::apply`] does, as the next step of transaction block `block`,
    /// and records in the same transaction `undo`, the ops that take the step back.
    pub fn apply_in_block(
        &self,
        block: u64,
        ops: &[CatalogOp],
        undo: Vec<CatalogOp>,
    ) -> Result<(), StorageError> {
        self.write(|txn| {
            apply_ops(txn, ops, MissingItem::Fails)?;
            let mut steps = read_steps(txn, block)?;
            steps.push(undo);
            write_steps(txn, block, &steps)
        })
    }

    /// Takes back the steps of transaction block `block` after its first `keep`, the last
    /// first; the block is forgotten when none remains.
    pub fn undo_block(&self, block: u64, keep: usize) -> Result<(), StorageError> {
        self.write(|txn| undo_steps(txn, block, keep))
    }

    /// Makes the steps of transaction block `block` final.
    pub fn commit_block(&self, block: u64) -> Result<(), StorageError> {
        self.write(|txn| {
            txn.open_table(UNCOMMITTED)?.remove(block)?;
            Ok(())
        })
    }

    /// Every item, ordered by id.
    pub fn items(&self) -> Result<Vec<CatalogItem>, StorageError> {
        self.read(|txn| {
            let items = txn.open_table(ITEMS)?;
            let mut out = Vec::new();
            for entry in items.iter()? {
                let (key, value) = entry?;
                let id = GlobalId(key.value());
                let item = serde_json::from_slice(value.value())
                    .map_err(|source| StorageError::CorruptCatalogItem { id, source })?;
                out.push(item);
            }
            Ok(out)
        })
    }

    /// The highest time the timestamp oracle has handed out (0 on a fresh catalog).
    pub fn timestamp_high_water(&self) -> Result<Timestamp, StorageError> {
        self.read(|txn| {
            let counters = txn.open_table(COUNTERS)?;
            let high_water = counters.get(TIMESTAMP_HIGH_WATER)?.map_or(0, |v| v.value());
            Ok(high_water)
        })
    }

    /// Raises the timestamp high-water mark to `time` if it is lower; never lowers it, so times
    /// never go backwards across restarts. Returns the stored mark.
    pub fn advance_timestamp_high_water(&self, time: Timestamp) -> Result<Timestamp, StorageError> {
        self.write(|txn| {
            let mut counters = txn.open_table(COUNTERS)?;
            let current = counters.get(TIMESTAMP_HIGH_WATER)?.map_or(0, |v| v.value());
            let high_water = current.max(time);
            if high_water != current {
                counters.insert(TIMESTAMP_HIGH_WATER, high_water)?;
            }
            Ok(high_water)
        })
    }

    /// The value of a setting, if it was ever set.
    pub fn get_setting(&self, key: &str) -> Result<Option<String>, StorageError> {
        self.read(|txn| {
            let settings = txn.open_table(SETTINGS)?;
            let value = settings.get(key)?.map(|v| v.value().to_string());
            Ok(value)
        })
    }

    /// Stores a setting durably, replacing any earlier value.
    pub fn set_setting(&self, key: &str, value: &str) -> Result<(), StorageError> {
        self.write(|txn| {
            txn.open_table(SETTINGS)?.insert(key, value)?;
            Ok(())
        })
    }

    /// Deletes a setting (a missing key is not an error).
    pub fn delete_setting(&self, key: &str) -> Result<(), StorageError> {
        self.write(|txn| {
            txn.open_table(SETTINGS)?.remove(key)?;
            Ok(())
        })
    }

    /// Every setting whose key starts with `prefix`, in key order.
    pub fn settings_with_prefix(
        &self,
        prefix: &str,
    ) -> Result<Vec<(String, String)>, StorageError> {
        self.read(|txn| {
            let settings = txn.open_table(SETTINGS)?;
            let mut found = Vec::new();
            for entry in settings.range(prefix..)? {
                let (key, value) = entry?;
                if !key.value().starts_with(prefix) {
                    break;
                }
                found.push((key.value().to_string(), value.value().to_string()));
            }
            Ok(found)
        })
    }

    /// Runs `body` in a write transaction and commits it durably if it succeeds; a failed body
    /// aborts the transaction (dropping it rolls back).
    pub(crate) fn write<T>(
        &self,
        body: impl FnOnce(&WriteTransaction) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        self.with_database(|db| {
            let mut txn = db.begin_write()?;
            txn.set_durability(Durability::Immediate)?;
            let out = body(&txn)?;
            txn.commit()?;
            Ok(out)
        })
    }

    /// Runs `body` in a read transaction.
    pub(crate) fn read<T>(
        &self,
        body: impl FnOnce(&ReadTransaction) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        self.with_database(|db| body(&db.begin_read()?))
    }

    /// Runs `body` on the database, opened again first if an earlier transaction met an I/O
    /// error (after which redb refuses every transaction); an I/O error of `body` marks it
    /// to be opened again.
    fn with_database<T>(
        &self,
        body: impl FnOnce(&Database) -> Result<T, StorageError>,
    ) -> Result<T, StorageError> {
        if self.broken.load(Ordering::Acquire) {
            self.open_again()?;
        }
        let db = self.db.read().unwrap_or_else(|p| p.into_inner());
        let Some(database) = db.as_ref() else {
            return Err(StorageError::Catalog(redb::Error::DatabaseClosed));
        };
        let result = body(database);
        if matches!(
            &result,
            Err(StorageError::Catalog(
                redb::Error::Io(_) | redb::Error::PreviousIo
            ))
        ) {
            self.broken.store(true, Ordering::Release);
        }
        result
    }

    /// Closes the database and opens it again (redb checks it and repairs what an
    /// interrupted commit left); if that fails, the next transaction tries again.
    fn open_again(&self) -> Result<(), StorageError> {
        let mut db = self.db.write().unwrap_or_else(|p| p.into_inner());
        if !self.broken.load(Ordering::Acquire) {
            return Ok(());
        }
        // redb locks its file: the old handle is closed before the file is opened again.
        *db = None;
        *db = Some(Box::new(Database::create(&self.path)?));
        self.broken.store(false, Ordering::Release);
        tracing::info!(
            path = %self.path.display(),
            "catalog database opened again after an I/O error"
        );
        Ok(())
    }
}

/// Whether a `Delete` of a missing item fails: when undoing, a step whose item is already
/// gone (a failed CREATE removes what it recorded) has nothing left to undo.
#[derive(Clone, Copy, PartialEq, Eq)]
enum MissingItem {
    Fails,
    Skipped,
}

fn apply_ops(
    txn: &WriteTransaction,
    ops: &[CatalogOp],
    missing: MissingItem,
) -> Result<(), StorageError> {
    let next_id = txn
        .open_table(COUNTERS)?
        .get(NEXT_ID)?
        .map_or(FIRST_ID, |v| v.value());
    let mut items = txn.open_table(ITEMS)?;
    for op in ops {
        match op {
            CatalogOp::Put(item) => {
                if item.id.0 < FIRST_ID || item.id.0 >= next_id {
                    return Err(StorageError::UnallocatedId(item.id));
                }
                let json =
                    serde_json::to_vec(item).map_err(|source| StorageError::EncodeCatalogItem {
                        id: item.id,
                        source,
                    })?;
                items.insert(item.id.0, json.as_slice())?;
            }
            CatalogOp::Delete(id) => {
                if items.remove(id.0)?.is_none() && missing == MissingItem::Fails {
                    return Err(StorageError::UnknownItem(*id));
                }
            }
        }
    }
    Ok(())
}

/// The undo steps recorded for transaction block `block`, oldest first.
fn read_steps(txn: &WriteTransaction, block: u64) -> Result<Vec<Vec<CatalogOp>>, StorageError> {
    let uncommitted = txn.open_table(UNCOMMITTED)?;
    let Some(json) = uncommitted.get(block)? else {
        return Ok(Vec::new());
    };
    serde_json::from_slice(json.value())
        .map_err(|source| StorageError::CorruptUndo { block, source })
}

fn write_steps(
    txn: &WriteTransaction,
    block: u64,
    steps: &[Vec<CatalogOp>],
) -> Result<(), StorageError> {
    let mut uncommitted = txn.open_table(UNCOMMITTED)?;
    if steps.is_empty() {
        uncommitted.remove(block)?;
        return Ok(());
    }
    let json =
        serde_json::to_vec(steps).map_err(|source| StorageError::EncodeUndo { block, source })?;
    uncommitted.insert(block, json.as_slice())?;
    Ok(())
}

/// Applies the undo steps of `block` after its first `keep`, the last first, and keeps the
/// rest.
fn undo_steps(txn: &WriteTransaction, block: u64, keep: usize) -> Result<(), StorageError> {
    let mut steps = read_steps(txn, block)?;
    while steps.len() > keep {
        let Some(undo) = steps.pop() else { break };
        apply_ops(txn, &undo, MissingItem::Skipped)?;
    }
    write_steps(txn, block, &steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: GlobalId, name: &str, depends_on: Vec<GlobalId>) -> CatalogItem {
        CatalogItem {
            id,
            name: name.into(),
            schema: "public".into(),
            kind: if depends_on.is_empty() {
                ItemKind::Table
            } else {
                ItemKind::MaterializedView
            },
            create_sql: format!("CREATE ... {name}"),
            depends_on,
            ownership: Ownership::default(),
            stopped: None,
        }
    }

    #[test]
    fn items_survive_reopen_in_id_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        let (t, v);
        {
            let catalog = Catalog::open(&path).unwrap();
            t = catalog.allocate_id().unwrap();
            v = catalog.allocate_id().unwrap();
            assert_eq!((t, v), (GlobalId(1), GlobalId(2)));
            // Put in reverse order: items() must still come back ordered by id.
            catalog
                .apply(&[
                    CatalogOp::Put(item(v, "v", vec![t])),
                    CatalogOp::Put(item(t, "t", vec![])),
                ])
                .unwrap();
            catalog.set_setting("cluster_size", "2").unwrap();
            assert_eq!(catalog.advance_timestamp_high_water(500).unwrap(), 500);
        }
        let catalog = Catalog::open(&path).unwrap();
        assert_eq!(
            catalog.items().unwrap(),
            vec![item(t, "t", vec![]), item(v, "v", vec![t])]
        );
        assert_eq!(
            catalog.get_setting("cluster_size").unwrap().as_deref(),
            Some("2")
        );
        assert_eq!(catalog.get_setting("missing").unwrap(), None);
        assert_eq!(catalog.timestamp_high_water().unwrap(), 500);
    }

    #[test]
    fn ids_are_never_reused_after_drop_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        let first = {
            let catalog = Catalog::open(&path).unwrap();
            let id = catalog.allocate_id().unwrap();
            catalog
                .apply(&[CatalogOp::Put(item(id, "t", vec![]))])
                .unwrap();
            catalog.apply(&[CatalogOp::Delete(id)]).unwrap();
            assert!(catalog.items().unwrap().is_empty());
            id
        };
        let catalog = Catalog::open(&path).unwrap();
        let second = catalog.allocate_id().unwrap();
        assert_eq!(first, GlobalId(1));
        assert_eq!(second, GlobalId(2));
    }

    #[test]
    fn cascade_deletes_are_atomic() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("catalog.redb")).unwrap();
        let ids: Vec<_> = (0..3).map(|_| catalog.allocate_id().unwrap()).collect();
        let items: Vec<_> = vec![
            item(ids[0], "t", vec![]),
            item(ids[1], "mv", vec![ids[0]]),
            item(ids[2], "idx", vec![ids[1]]),
        ];
        let puts: Vec<_> = items.iter().cloned().map(CatalogOp::Put).collect();
        catalog.apply(&puts).unwrap();

        // A failing op (a missing item) aborts the whole batch: nothing was deleted.
        let err = catalog
            .apply(&[
                CatalogOp::Delete(ids[2]),
                CatalogOp::Delete(ids[1]),
                CatalogOp::Delete(GlobalId(99)),
            ])
            .unwrap_err();
        assert!(
            matches!(err, StorageError::UnknownItem(GlobalId(99))),
            "{err}"
        );
        assert_eq!(catalog.items().unwrap(), items);

        catalog
            .apply(&[CatalogOp::Delete(ids[2]), CatalogOp::Delete(ids[1])])
            .unwrap();
        assert_eq!(catalog.items().unwrap(), vec![items[0].clone()]);
    }

    #[test]
    fn put_of_an_unallocated_id_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("catalog.redb")).unwrap();
        let err = catalog
            .apply(&[CatalogOp::Put(item(GlobalId(7), "t", vec![]))])
            .unwrap_err();
        assert!(
            matches!(err, StorageError::UnallocatedId(GlobalId(7))),
            "{err}"
        );
        assert!(catalog.items().unwrap().is_empty());
        // The refused id is not consumed either: allocation still starts at 1.
        assert_eq!(catalog.allocate_id().unwrap(), GlobalId(1));
    }

    #[test]
    fn timestamp_high_water_never_goes_backwards() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        {
            let catalog = Catalog::open(&path).unwrap();
            assert_eq!(catalog.timestamp_high_water().unwrap(), 0);
            catalog.advance_timestamp_high_water(1_000).unwrap();
            assert_eq!(catalog.advance_timestamp_high_water(10).unwrap(), 1_000);
        }
        let catalog = Catalog::open(&path).unwrap();
        assert_eq!(catalog.timestamp_high_water().unwrap(), 1_000);
        catalog.advance_timestamp_high_water(2_000).unwrap();
        assert_eq!(catalog.timestamp_high_water().unwrap(), 2_000);
    }

    #[test]
    fn settings_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("catalog.redb")).unwrap();
        catalog.set_setting("k", "a").unwrap();
        catalog.set_setting("k", "b").unwrap();
        assert_eq!(catalog.get_setting("k").unwrap().as_deref(), Some("b"));
    }

    #[test]
    fn a_block_is_undone_step_by_step_by_rollback() {
        let dir = tempfile::tempdir().unwrap();
        let catalog = Catalog::open(&dir.path().join("catalog.redb")).unwrap();
        let t = catalog.allocate_id().unwrap();
        catalog
            .apply(&[CatalogOp::Put(item(t, "t", vec![]))])
            .unwrap();
        let v = catalog.allocate_id().unwrap();
        // Step 1 drops t, step 2 creates v; a savepoint sits between them.
        catalog
            .apply_in_block(
                7,
                &[CatalogOp::Delete(t)],
                vec![CatalogOp::Put(item(t, "t", vec![]))],
            )
            .unwrap();
        catalog
            .apply_in_block(
                7,
                &[CatalogOp::Put(item(v, "v", vec![]))],
                vec![CatalogOp::Delete(v)],
            )
            .unwrap();
        assert_eq!(catalog.items().unwrap(), vec![item(v, "v", vec![])]);
        catalog.undo_block(7, 1).unwrap();
        assert!(catalog.items().unwrap().is_empty());
        catalog.undo_block(7, 0).unwrap();
        assert_eq!(catalog.items().unwrap(), vec![item(t, "t", vec![])]);
        // Nothing is left to undo.
        catalog.undo_block(7, 0).unwrap();
        assert_eq!(catalog.items().unwrap(), vec![item(t, "t", vec![])]);
    }

    #[test]
    fn a_committed_block_stays_and_an_open_one_is_undone_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalog.redb");
        let (committed, open) = {
            let catalog = Catalog::open(&path).unwrap();
            let committed = catalog.allocate_id().unwrap();
            let open = catalog.allocate_id().unwrap();
            for (block, id, name) in [(1, committed, "kept"), (2, open, "undone")] {
                catalog
                    .apply_in_block(
                        block,
                        &[CatalogOp::Put(item(id, name, vec![]))],
                        vec![CatalogOp::Delete(id)],
                    )
                    .unwrap();
            }
            catalog.commit_block(1).unwrap();
            (committed, open)
        };
        let catalog = Catalog::open(&path).unwrap();
        assert_eq!(
            catalog.items().unwrap(),
            vec![item(committed, "kept", vec![])]
        );
        // A failed CREATE already removed its item: undoing it finds nothing and goes on.
        catalog
            .apply_in_block(
                3,
                &[CatalogOp::Put(item(open, "again", vec![]))],
                vec![CatalogOp::Delete(open)],
            )
            .unwrap();
        catalog.apply(&[CatalogOp::Delete(open)]).unwrap();
        catalog.undo_block(3, 0).unwrap();
        assert_eq!(
            catalog.items().unwrap(),
            vec![item(committed, "kept", vec![])]
        );
    }
}
