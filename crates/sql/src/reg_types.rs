//! The object-identifier types `regclass`, `regtype`, `regproc`, `regnamespace` and `regrole`
//! as the SQL front end knows them: `x::regclass` is rewritten into a call of the kind's cast
//! function, which the system catalogs provide (it looks the name up).

/// Which object-identifier type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RegKind {
    /// `regclass`: a relation.
    Class,
    /// `regtype`: a type.
    Type,
    /// `regproc`: a function.
    Proc,
    /// `regnamespace`: a schema.
    Namespace,
    /// `regrole`: a role.
    Role,
}

impl RegKind {
    /// The kind of a type name used in a cast (`regclass`, `pg_catalog.regtype`, …).
    pub fn from_type_name(name: &str) -> Option<RegKind> {
        let name = name.to_lowercase();
        Some(match name.strip_prefix("pg_catalog.").unwrap_or(&name) {
            "regclass" => RegKind::Class,
            "regtype" => RegKind::Type,
            "regproc" | "regprocedure" => RegKind::Proc,
            "regnamespace" => RegKind::Namespace,
            "regrole" => RegKind::Role,
            _ => return None,
        })
    }

    /// The Postgres type's name.
    pub fn type_name(self) -> &'static str {
        match self {
            RegKind::Class => "regclass",
            RegKind::Type => "regtype",
            RegKind::Proc => "regproc",
            RegKind::Namespace => "regnamespace",
            RegKind::Role => "regrole",
        }
    }

    /// The Postgres type's oid.
    pub fn type_oid(self) -> u32 {
        match self {
            RegKind::Class => 2205,
            RegKind::Type => 2206,
            RegKind::Proc => 24,
            RegKind::Namespace => 4089,
            RegKind::Role => 4096,
        }
    }

    /// The kind whose values carry this type oid.
    pub fn from_type_oid(oid: u32) -> Option<RegKind> {
        [
            RegKind::Class,
            RegKind::Type,
            RegKind::Proc,
            RegKind::Namespace,
            RegKind::Role,
        ]
        .into_iter()
        .find(|k| k.type_oid() == oid)
    }

    /// What the error calls an object of this kind.
    pub fn object_word(self) -> &'static str {
        match self {
            RegKind::Class => "relation",
            RegKind::Type => "type",
            RegKind::Proc => "function",
            RegKind::Namespace => "schema",
            RegKind::Role => "role",
        }
    }

    /// The name of the cast function the SQL rewrite calls (`x::regclass`).
    pub fn cast_function(self) -> String {
        format!("__to_{}", self.type_name())
    }

    /// The name of the function printing a value as its name (`x::regclass::text`).
    pub fn name_function(self) -> String {
        format!("__{}_name", self.type_name())
    }

    /// The name of the function printing an array of values as their names
    /// (`proargtypes::regtype[]`, a `text[]` of type names).
    pub fn names_function(self) -> String {
        format!("__{}_names", self.type_name())
    }
}
