//! PostgreSQL's array bounds (`array_lower`, `array_upper`, `generate_subscripts`) and
//! `information_schema._pg_expandarray`.
//!
//! Arrays start at subscript 1, except `int2vector` and `oidvector` (`pg_index.indkey`,
//! `pg_proc.proargtypes`), which start at 0; a column remembers its type in its field
//! metadata, so the bounds follow it.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int32Builder, ListArray, StructArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use repr::pg_type::is_zero_based_vector;

use super::{any_arity, int_arg};

pub(super) fn functions() -> Vec<ScalarUDF> {
    vec![
        ScalarUDF::from(ArrayBounds::new("array_lower", Bound::Lower)),
        ScalarUDF::from(ArrayBounds::new("array_upper", Bound::Upper)),
        ScalarUDF::from(ArrayBounds::new("__subscripts", Bound::Subscripts)),
        ScalarUDF::from(ExpandArray {
            signature: any_arity(&[1], Volatility::Immutable),
        }),
    ]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Bound {
    Lower,
    Upper,
    /// Every subscript, as a list (what `generate_subscripts` unnests).
    Subscripts,
}

/// `array_lower(a, dim)`, `array_upper(a, dim)` and `__subscripts(a, dim)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayBounds {
    name: &'static str,
    bound: Bound,
    signature: Signature,
}

impl ArrayBounds {
    fn new(name: &'static str, bound: Bound) -> Self {
        Self {
            name,
            bound,
            signature: any_arity(&[2], Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ArrayBounds {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(match self.bound {
            Bound::Subscripts => {
                DataType::List(Arc::new(Field::new("item", DataType::Int32, true)))
            }
            _ => DataType::Int32,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows.max(1);
        let first = is_zero_based_vector(&args.arg_fields[0]);
        let lower = if first { 0 } else { 1 };
        let arrays = args.args[0].to_array(rows)?;
        let dims = args.args[1].to_array(rows)?;
        let mut results = Vec::with_capacity(rows);
        for row in 0..arrays.len() {
            let length = list_length(&arrays, row)?;
            let dim = int_arg(&ScalarValue::try_from_array(&dims, row)?);
            let length = match (length, dim) {
                (Some(n), Some(1)) if n > 0 => Some(n as i32),
                _ => None,
            };
            results.push(match self.bound {
                Bound::Lower => ScalarValue::Int32(length.map(|_| lower)),
                Bound::Upper => ScalarValue::Int32(length.map(|n| lower + n - 1)),
                Bound::Subscripts => {
                    let values: Vec<ScalarValue> = (0..length.unwrap_or(0))
                        .map(|i| ScalarValue::Int32(Some(lower + i)))
                        .collect();
                    ScalarValue::List(ScalarValue::new_list_nullable(&values, &DataType::Int32))
                }
            });
        }
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        if all_scalar {
            return Ok(ColumnarValue::Scalar(results.swap_remove(0)));
        }
        if results.is_empty() {
            let empty = datafusion::arrow::array::new_empty_array(&self.return_type(&[])?);
            return Ok(ColumnarValue::Array(empty));
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(results)?))
    }
}

/// The number of elements of the list at `row` (`None` for NULL or a non-list).
fn list_length(array: &ArrayRef, row: usize) -> Result<Option<usize>> {
    if array.is_null(row) {
        return Ok(None);
    }
    Ok(match array.data_type() {
        DataType::List(_) => Some(array.as_list::<i32>().value(row).len()),
        DataType::LargeList(_) => Some(array.as_list::<i64>().value(row).len()),
        DataType::FixedSizeList(_, n) => Some(*n as usize),
        DataType::Null => None,
        other => {
            return Err(DataFusionError::Execution(format!(
                "function array bounds does not exist for type {other}"
            )))
        }
    })
}

/// `_pg_expandarray(a)`: the list of `(x, n)` pairs, each element with its 1-based position.
/// `information_schema._pg_expandarray(a)` is rewritten to unnest this.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ExpandArray {
    signature: Signature,
}

fn pair_fields(element: &DataType) -> Fields {
    Fields::from(vec![
        Field::new("x", element.clone(), true),
        Field::new("n", DataType::Int32, true),
    ])
}

fn element_type(list: &DataType) -> Result<DataType> {
    match list {
        DataType::List(item) | DataType::LargeList(item) => Ok(item.data_type().clone()),
        other => Err(DataFusionError::Plan(format!(
            "function _pg_expandarray({other}) does not exist"
        ))),
    }
}

impl ScalarUDFImpl for ExpandArray {
    fn name(&self) -> &str {
        "_pg_expandarray"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let element = element_type(&args[0])?;
        Ok(DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(pair_fields(&element)),
            true,
        ))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows.max(1);
        let input = args.args[0].to_array(rows)?;
        let list = input.as_list::<i32>();
        let element = element_type(input.data_type())?;
        let mut positions = Int32Builder::new();
        let mut offsets = vec![0i32];
        let mut elements: Vec<ArrayRef> = Vec::new();
        for row in 0..list.len() {
            let values = if list.is_null(row) {
                datafusion::arrow::array::new_empty_array(&element)
            } else {
                list.value(row)
            };
            for i in 0..values.len() {
                positions.append_value(i as i32 + 1);
            }
            offsets.push(offsets[offsets.len() - 1] + values.len() as i32);
            elements.push(values);
        }
        let elements = match elements.is_empty() {
            true => datafusion::arrow::array::new_empty_array(&element),
            false => {
                let parts: Vec<&dyn Array> = elements.iter().map(|a| a.as_ref()).collect();
                datafusion::arrow::compute::concat(&parts)?
            }
        };
        let pairs = StructArray::try_new(
            pair_fields(&element),
            vec![elements, Arc::new(positions.finish())],
            None,
        )?;
        let item: FieldRef = Arc::new(Field::new("item", pairs.data_type().clone(), true));
        let result = ListArray::try_new(
            item,
            OffsetBuffer::new(offsets.into()),
            Arc::new(pairs),
            list.nulls().cloned(),
        )?;
        Ok(ColumnarValue::Array(Arc::new(result)))
    }
}
