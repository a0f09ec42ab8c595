//! EXPLAIN text for dataflow plans: one operator per line, inputs indented below.

use std::fmt::Write;

use crate::{Plan, SortColumn};

/// The plan as indented text.
pub fn explain(plan: &Plan) -> String {
    let mut out = String::new();
    write_plan(plan, 0, &mut out);
    out
}

/// `l1 = r1 AND l2 = r2 …` of a join's keys.
fn key_pairs(left: &[crate::ScalarExpr], right: &[crate::ScalarExpr]) -> String {
    left.iter()
        .zip(right)
        .map(|(l, r)| format!("{l} = {r}"))
        .collect::<Vec<_>>()
        .join(" AND ")
}

fn write_plan(plan: &Plan, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let columns = |plan: &Plan| {
        plan.schema()
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = match plan {
        Plan::Get { id, .. } => writeln!(out, "{pad}Get {id} [{}]", columns(plan)),
        Plan::Constant { rows, .. } => writeln!(out, "{pad}Constant ({} rows)", rows.len()),
        Plan::Map {
            predicate,
            projection,
            ..
        } => {
            let _ = match predicate {
                Some(p) => writeln!(out, "{pad}Filter {p}"),
                None => Ok(()),
            };
            let exprs = projection
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(", ");
            writeln!(out, "{pad}Map [{exprs}]")
        }
        Plan::Unnest { column, .. } => writeln!(out, "{pad}Unnest #{column}"),
        Plan::Join {
            kind,
            left_key,
            right_key,
            filter,
            ..
        } => {
            let keys = key_pairs(left_key, right_key);
            let filter = filter
                .as_ref()
                .map(|f| format!(" filter {f}"))
                .unwrap_or_default();
            writeln!(out, "{pad}Join {kind:?} on [{keys}]{filter}")
        }
        Plan::AsOfJoin {
            outer,
            left_key,
            right_key,
            left_time,
            right_time,
            matches,
            ..
        } => {
            let keys = key_pairs(left_key, right_key);
            let kind = if *outer { "Left" } else { "Inner" };
            writeln!(
                out,
                "{pad}AsOfJoin {kind} on [{keys}] closest {right_time} {matches:?} {left_time}"
            )
        }
        Plan::LookupJoin {
            kind,
            left_key,
            right_key,
            ..
        } => {
            let keys = key_pairs(left_key, right_key);
            writeln!(out, "{pad}LookupJoin {kind:?} on [{keys}]")
        }
        Plan::Reduce {
            group_len,
            aggregates,
            ..
        } => {
            let aggregates = aggregates
                .iter()
                .map(|a| {
                    let distinct = if a.distinct { "DISTINCT " } else { "" };
                    let arg = a.arg.map(|c| format!("#{c}")).unwrap_or_else(|| "*".into());
                    format!("{:?}({distinct}{arg})", a.func)
                })
                .collect::<Vec<_>>()
                .join(", ");
            writeln!(
                out,
                "{pad}Reduce group by {group_len} columns: {aggregates}"
            )
        }
        Plan::Distinct { .. } => writeln!(out, "{pad}Distinct"),
        Plan::Recursive { name, distinct, .. } => writeln!(
            out,
            "{pad}Recursive {name} (UNION{})",
            if *distinct { "" } else { " ALL" }
        ),
        Plan::RecursiveRef { name, .. } => writeln!(out, "{pad}RecursiveRef {name}"),
        Plan::Union { inputs, .. } => writeln!(out, "{pad}Union ({} inputs)", inputs.len()),
        Plan::TopK {
            group_by,
            order_by,
            offset,
            limit,
            ..
        } => writeln!(
            out,
            "{pad}TopK group by {group_by:?} order by [{}] offset {offset} limit {}",
            order_by
                .iter()
                .map(sort_column)
                .collect::<Vec<_>>()
                .join(", "),
            limit.map(|l| l.to_string()).unwrap_or_else(|| "ALL".into())
        ),
        Plan::Window {
            partition_by,
            order_by,
            functions,
            limit,
            ..
        } => writeln!(
            out,
            "{pad}Window partition by {partition_by:?} order by [{}] computing [{}]{}",
            order_by
                .iter()
                .map(sort_column)
                .collect::<Vec<_>>()
                .join(", "),
            functions
                .iter()
                .map(|f| f.expr.name().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            limit.map(|l| format!(" first {l}")).unwrap_or_default()
        ),
        Plan::EmitOnWindowClose { closing, .. } => {
            writeln!(
                out,
                "{pad}EmitOnWindowClose closing on [{}]",
                closing_list(closing)
            )
        }
        Plan::Session {
            partition,
            time,
            gap,
            bounds,
            ..
        } => writeln!(
            out,
            "{pad}Session per {partition:?} on #{time} gap {gap}us adding {bounds:?}"
        ),
        Plan::TemporalFilter { bounds, .. } => writeln!(
            out,
            "{pad}TemporalFilter [{}]",
            bounds
                .iter()
                .map(|b| format!("now() {:?} {}", b.clock, b.expr))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Plan::ForgetClosed { closing, .. } => {
            writeln!(
                out,
                "{pad}ForgetClosed closing on [{}]",
                closing_list(closing)
            )
        }
    };
    for input in plan.inputs() {
        write_plan(input, depth + 1, out);
    }
}

fn closing_list(closing: &[crate::ClosingColumn]) -> String {
    closing
        .iter()
        .map(|c| format!("#{}", c.column))
        .collect::<Vec<_>>()
        .join(", ")
}

fn sort_column(c: &SortColumn) -> String {
    format!(
        "#{} {}{}",
        c.column,
        if c.descending { "DESC" } else { "ASC" },
        if c.nulls_first { " NULLS FIRST" } else { "" }
    )
}
