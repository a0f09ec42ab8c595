use arrow::error::ArrowError;

/// What can go wrong while converting between rows and Arrow columns.
#[derive(Debug, thiserror::Error)]
pub enum ReprError {
    /// Arrow refused a conversion (unsupported type, mismatched columns).
    #[error("row conversion failed: {0}")]
    Arrow(#[from] ArrowError),
    /// A column's type has no row encoding.
    #[error("type {0} cannot be stored in a row")]
    UnsupportedType(String),
}
