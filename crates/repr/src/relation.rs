use arrow::datatypes::SchemaRef;

/// The shape of a relation: its Arrow schema and, when it has one, its primary key.
#[derive(Clone, Debug)]
pub struct RelationDesc {
    /// Column names, types and nullability.
    pub schema: SchemaRef,
    /// Column positions of the primary key, in key order.
    pub primary_key: Option<Vec<usize>>,
}

impl RelationDesc {
    /// A relation without a primary key.
    pub fn new(schema: SchemaRef) -> Self {
        Self {
            schema,
            primary_key: None,
        }
    }

    /// Whether rows are unique by a declared key.
    pub fn has_primary_key(&self) -> bool {
        self.primary_key.is_some()
    }

    /// Names of the primary key columns, in key order.
    pub fn primary_key_names(&self) -> Vec<String> {
        self.primary_key
            .iter()
            .flatten()
            .map(|&i| self.schema.field(i).name().clone())
            .collect()
    }
}
