//! One random case, generated entirely from its seed: a schema, initial rows, the views, and
//! a stream of transactions. Generating it up front keeps it a pure function of the seed, so
//! a failing seed replays exactly.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::expr::Kind;
use super::model::{Column, SqlType, Table};
use super::query::{random_query, ViewQuery};
use super::schema::random_schema;
use super::writes::{initial_inserts, random_write, Write};

/// How a transaction ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// A single statement outside a transaction block.
    Autocommit,
    /// `BEGIN; …; COMMIT`.
    Commit,
    /// `BEGIN; …; ROLLBACK`: nothing changes.
    Rollback,
}

/// One transaction: its statements and how it ends.
#[derive(Debug, Clone)]
pub struct Transaction {
    /// The writes, in order; later ones see the effect of earlier ones.
    pub writes: Vec<Write>,
    /// How it ends.
    pub ending: Ending,
    /// Whether its statements go through the extended protocol (else the simple one).
    pub is_extended: bool,
}

/// Sizes of a case.
#[derive(Debug, Clone, Copy)]
pub struct CaseSize {
    /// Views created per case.
    pub views: usize,
    /// Transactions applied after the views exist.
    pub transactions: usize,
}

impl Default for CaseSize {
    /// Three views and 24 transactions: 200 cases take about two minutes in a debug build.
    fn default() -> Self {
        CaseSize {
            views: 3,
            transactions: 24,
        }
    }
}

/// A generated case.
#[derive(Debug, Clone)]
pub struct Case {
    /// The seed everything below came from.
    pub seed: u64,
    /// The tables, empty (the initial state).
    pub tables: Vec<Table>,
    /// The first rows, inserted before the views are created (or after, when
    /// `is_views_first`).
    pub initial: Vec<Write>,
    /// Whether the views are created over empty tables, so they learn everything
    /// incrementally (else they start from a snapshot of the initial rows).
    pub is_views_first: bool,
    /// The view queries; view `i` is named `v{i}`.
    pub views: Vec<ViewQuery>,
    /// The transactions applied after the views exist.
    pub transactions: Vec<Transaction>,
}

impl Case {
    /// The case of `seed`.
    pub fn generate(seed: u64, size: CaseSize) -> Case {
        let mut rng = StdRng::seed_from_u64(seed);
        let tables = random_schema(&mut rng);
        let is_views_first = rng.random_bool(0.3);
        let mut model = tables.clone();
        let initial = initial_inserts(&mut rng, &model);
        for write in &initial {
            write.apply(&mut model);
        }
        let mut views: Vec<ViewQuery> = Vec::with_capacity(size.views);
        let mut relations = model.clone();
        for i in 0..size.views {
            let view = random_query(&mut rng, &relations);
            if rng.random_bool(0.5) {
                relations.extend(view_as_relation(&format!("v{i}"), &view));
            }
            views.push(view);
        }
        let transactions = (0..size.transactions)
            .map(|_| random_transaction(&mut rng, &mut model))
            .collect();
        Case {
            seed,
            tables,
            initial,
            is_views_first,
            views,
            transactions,
        }
    }
}

/// View `name` as a relation later views may read (views on views), when it has an integer
/// column to join on. Its floating-point columns are left out: nothing compares them exactly.
fn view_as_relation(name: &str, view: &ViewQuery) -> Option<Table> {
    let columns: Vec<Column> = view
        .outputs
        .iter()
        .enumerate()
        .filter_map(|(i, kind)| {
            let ty = match (*kind)? {
                Kind::Int => SqlType::BigInt,
                Kind::Numeric => SqlType::Numeric,
                Kind::Text => SqlType::Text,
                Kind::Bool => SqlType::Bool,
                Kind::Timestamp => SqlType::Timestamp,
                Kind::Float => SqlType::Double,
            };
            Some(Column {
                name: format!("o{i}"),
                ty,
                nullable: true,
            })
        })
        .collect();
    columns.iter().any(|c| c.ty.is_integer()).then(|| Table {
        name: name.to_string(),
        columns,
        primary_key: None,
        rows: Vec::new(),
    })
}

/// A transaction over `model`, which it updates unless it rolls back.
fn random_transaction(rng: &mut StdRng, model: &mut Vec<Table>) -> Transaction {
    let ending = match rng.random_range(0..10) {
        0..=3 => Ending::Autocommit,
        4..=8 => Ending::Commit,
        _ => Ending::Rollback,
    };
    let count = match ending {
        Ending::Autocommit => 1,
        _ => rng.random_range(1..=4),
    };
    let mut staged = model.clone();
    let writes = (0..count)
        .map(|_| {
            let write = random_write(rng, &staged);
            write.apply(&mut staged);
            write
        })
        .collect();
    if ending != Ending::Rollback {
        *model = staged;
    }
    Transaction {
        writes,
        ending,
        is_extended: rng.random_bool(0.3),
    }
}
