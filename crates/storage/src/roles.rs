//! Roles ([`Role`]), kept in the catalog database beside the items, by OID. Each write is
//! durable when it returns; this crate sees only password verifiers, never passwords.

use redb::{ReadableTable, TableDefinition};
use repr::Role;

use crate::{Catalog, StorageError};

/// Roles by OID, as JSON.
pub(crate) const ROLES: TableDefinition<u32, &[u8]> = TableDefinition::new("roles");

impl Catalog {
    /// Every role, by OID.
    pub fn roles(&self) -> Result<Vec<Role>, StorageError> {
        self.read(|txn| {
            let roles = txn.open_table(ROLES)?;
            let mut out = Vec::new();
            for entry in roles.iter()? {
                let (key, value) = entry?;
                let oid = key.value();
                let role = serde_json::from_slice(value.value())
                    .map_err(|source| StorageError::CorruptRole { oid, source })?;
                out.push(role);
            }
            Ok(out)
        })
    }

    /// Stores `role`, replacing the role of the same OID.
    pub fn put_role(&self, role: &Role) -> Result<(), StorageError> {
        let json = serde_json::to_vec(role).map_err(|source| StorageError::EncodeRole {
            oid: role.oid,
            source,
        })?;
        self.write(|txn| {
            txn.open_table(ROLES)?.insert(role.oid, json.as_slice())?;
            Ok(())
        })
    }

    /// Removes the role with this OID (a missing one is not an error).
    pub fn delete_role(&self, oid: u32) -> Result<(), StorageError> {
        self.write(|txn| {
            txn.open_table(ROLES)?.remove(oid)?;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(oid: u32, name: &str) -> Role {
        Role {
            can_login: true,
            password: Some("SCRAM-SHA-256$4096:c2FsdA==$a:b".into()),
            ..Role::new(oid, name)
        }
    }

    #[test]
    fn roles_survive_reopening_and_are_replaced_and_deleted_by_oid() {
        let dir = std::env::temp_dir().join(format!("fluxion-roles-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("catalog.redb");
        {
            let catalog = Catalog::open(&path).unwrap();
            assert!(catalog.roles().unwrap().is_empty());
            catalog.put_role(&role(10, "fluxion")).unwrap();
            catalog.put_role(&role(16388, "alice")).unwrap();
            catalog.put_role(&role(16388, "bob")).unwrap();
        }
        let catalog = Catalog::open(&path).unwrap();
        let names: Vec<String> = catalog
            .roles()
            .unwrap()
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["fluxion", "bob"]);
        catalog.delete_role(16388).unwrap();
        catalog.delete_role(16388).unwrap();
        assert_eq!(catalog.roles().unwrap(), [role(10, "fluxion")]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
