//! `GRANT` and `REVOKE` of privileges on relations, schemas and the database, and
//! `ALTER … OWNER TO`, read here in PostgreSQL's grammar (sqlparser reads other databases'
//! forms too, and not `ALTER MATERIALIZED VIEW` or sources).

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::Token;

use super::{ObjectKind, Statement};
use crate::names::{fold_ident, object_ref, ObjectRef};
use crate::SqlError;

/// A role as GRANT, REVOKE and OWNER TO name one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoleSpec {
    /// A role by name.
    Name(String),
    /// `PUBLIC`: every role.
    Public,
    /// `CURRENT_USER` / `CURRENT_ROLE`.
    CurrentUser,
    /// `SESSION_USER`.
    SessionUser,
}

/// What a GRANT or REVOKE is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrivilegeTarget {
    /// `[TABLE] name, …`: tables, views, materialized views, sources.
    Relations(Vec<ObjectRef>),
    /// `ALL TABLES IN SCHEMA name, …`: every relation in them.
    AllRelationsInSchemas(Vec<String>),
    /// `SCHEMA name, …`.
    Schemas(Vec<String>),
    /// `DATABASE name, …`.
    Databases(Vec<String>),
}

/// Whether privileges are granted or revoked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PrivilegeAction {
    /// `GRANT`, with or without `WITH GRANT OPTION`.
    Grant {
        /// `WITH GRANT OPTION`.
        with_grant_option: bool,
    },
    /// `REVOKE`.
    Revoke {
        /// `GRANT OPTION FOR`: only the right to grant on is taken.
        grant_option_only: bool,
        /// `CASCADE`.
        cascade: bool,
    },
}

/// `GRANT privileges ON target TO roles` or `REVOKE privileges ON target FROM roles`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrivilegeChange {
    /// Grant or revoke.
    pub action: PrivilegeAction,
    /// The privileges by upper-case name (`SELECT`, `TEMP`); `None`: `ALL [PRIVILEGES]`.
    pub privileges: Option<Vec<String>>,
    /// What they are on.
    pub target: PrivilegeTarget,
    /// The roles granted to or revoked from.
    pub grantees: Vec<RoleSpec>,
    /// `GRANTED BY role`.
    pub granted_by: Option<RoleSpec>,
}

impl PrivilegeChange {
    /// The command tag: `GRANT` or `REVOKE`.
    pub fn tag(&self) -> &'static str {
        match self.action {
            PrivilegeAction::Grant { .. } => "GRANT",
            PrivilegeAction::Revoke { .. } => "REVOKE",
        }
    }
}

/// `GRANT role TO role` or `REVOKE role FROM role`: membership in roles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleMembershipChange {
    /// `GRANT` (else `REVOKE`).
    pub grant: bool,
    /// `GRANT … WITH ADMIN OPTION`, or `REVOKE ADMIN OPTION FOR …` (which takes only the
    /// right to grant the role on, leaving the membership).
    pub admin_option: bool,
    /// The roles granted or revoked.
    pub roles: Vec<String>,
    /// The roles that become or stop being their members.
    pub members: Vec<RoleSpec>,
    /// `GRANTED BY role`.
    pub granted_by: Option<RoleSpec>,
}

impl RoleMembershipChange {
    /// The command tag: `GRANT ROLE` or `REVOKE ROLE`, as PostgreSQL 15 answers.
    pub fn tag(&self) -> &'static str {
        if self.grant {
            "GRANT ROLE"
        } else {
            "REVOKE ROLE"
        }
    }
}

/// `ALTER TABLE | VIEW | MATERIALIZED VIEW | SOURCE | SINK | SUBSCRIPTION | SCHEMA name
/// OWNER TO role`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterOwner {
    /// The kind of object the statement names.
    pub kind: ObjectKind,
    /// The object.
    pub name: ObjectRef,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// The new owner.
    pub new_owner: RoleSpec,
}

impl AlterOwner {
    /// The command tag (`ALTER TABLE`, `ALTER MATERIALIZED VIEW` …).
    pub fn tag(&self) -> &'static str {
        match self.kind {
            ObjectKind::Table => "ALTER TABLE",
            ObjectKind::View => "ALTER VIEW",
            ObjectKind::MaterializedView => "ALTER MATERIALIZED VIEW",
            ObjectKind::Index => "ALTER INDEX",
            ObjectKind::Schema => "ALTER SCHEMA",
            ObjectKind::Source => "ALTER SOURCE",
            ObjectKind::Sink => "ALTER SINK",
            ObjectKind::Subscription => "ALTER SUBSCRIPTION",
        }
    }
}

/// `GRANT …`, `REVOKE …`, `ALTER DEFAULT PRIVILEGES …` and `ALTER … OWNER TO …`; `None`,
/// with nothing consumed, for any other statement.
pub(crate) fn parse_privilege_statement(
    parser: &mut Parser,
) -> Result<Option<Statement>, SqlError> {
    if parser.parse_keyword(Keyword::GRANT) {
        return parse_change(parser, true).map(Some);
    }
    if parser.parse_keyword(Keyword::REVOKE) {
        return parse_change(parser, false).map(Some);
    }
    if parser.parse_keywords(&[Keyword::ALTER, Keyword::DEFAULT, Keyword::PRIVILEGES]) {
        return super::default_privileges::parse(parser).map(Some);
    }
    parse_alter_owner(parser)
}

fn parse_change(parser: &mut Parser, grant: bool) -> Result<Statement, SqlError> {
    if !grant && parser.parse_keywords(&[Keyword::ADMIN, Keyword::OPTION, Keyword::FOR]) {
        return parse_membership_change(parser, false, true);
    }
    let grant_option_only =
        !grant && parser.parse_keywords(&[Keyword::GRANT, Keyword::OPTION, Keyword::FOR]);
    if !grant_option_only && !names_privileges(parser) {
        return parse_membership_change(parser, grant, false);
    }
    let privileges = parse_privileges(parser)?;
    parser.expect_keyword_is(Keyword::ON)?;
    let target = parse_target(parser)?;
    parser.expect_keyword_is(if grant { Keyword::TO } else { Keyword::FROM })?;
    let grantees = parse_comma_separated(parser, parse_role_spec)?;
    let with_grant_option =
        grant && parser.parse_keywords(&[Keyword::WITH, Keyword::GRANT, Keyword::OPTION]);
    let granted_by = parse_granted_by(parser)?;
    let cascade = !grant && parser.parse_keyword(Keyword::CASCADE);
    if !grant && !cascade {
        let _ = parser.parse_keyword(Keyword::RESTRICT);
    }
    let action = if grant {
        PrivilegeAction::Grant { with_grant_option }
    } else {
        PrivilegeAction::Revoke {
            grant_option_only,
            cascade,
        }
    };
    Ok(Statement::Privileges(PrivilegeChange {
        action,
        privileges,
        target,
        grantees,
        granted_by,
    }))
}

/// Whether the GRANT or REVOKE ahead is of privileges (`… ON …`) rather than of roles
/// (`GRANT role TO role`): an `ON` comes before the `TO` or `FROM`.
fn names_privileges(parser: &Parser) -> bool {
    for n in 0.. {
        match parser.peek_nth_token(n).token {
            Token::Word(word) if word.keyword == Keyword::ON => return true,
            Token::Word(word) if matches!(word.keyword, Keyword::TO | Keyword::FROM) => {
                return false
            }
            Token::SemiColon | Token::EOF => return true,
            _ => {}
        }
    }
    true
}

/// The rest of `GRANT role, … TO role, … [WITH ADMIN OPTION] [GRANTED BY role]` or `REVOKE
/// [ADMIN OPTION FOR] role, … FROM role, … [GRANTED BY role] [CASCADE | RESTRICT]`.
fn parse_membership_change(
    parser: &mut Parser,
    grant: bool,
    admin_option_only: bool,
) -> Result<Statement, SqlError> {
    let roles = parse_comma_separated(parser, parse_plain_name)?;
    parser.expect_keyword_is(if grant { Keyword::TO } else { Keyword::FROM })?;
    let members = parse_comma_separated(parser, parse_role_spec)?;
    let admin_option =
        grant && parser.parse_keywords(&[Keyword::WITH, Keyword::ADMIN, Keyword::OPTION]);
    let granted_by = parse_granted_by(parser)?;
    if !grant && !parser.parse_keyword(Keyword::CASCADE) {
        let _ = parser.parse_keyword(Keyword::RESTRICT);
    }
    Ok(Statement::RoleMembership(RoleMembershipChange {
        grant,
        admin_option: admin_option || admin_option_only,
        roles,
        members,
        granted_by,
    }))
}

/// `GRANTED BY role`, if it follows.
fn parse_granted_by(parser: &mut Parser) -> Result<Option<RoleSpec>, SqlError> {
    if parser.parse_keywords(&[Keyword::GRANTED, Keyword::BY]) {
        Ok(Some(parse_role_spec(parser)?))
    } else {
        Ok(None)
    }
}

/// `ALL [PRIVILEGES]` (`None`) or a list of privilege names.
pub(super) fn parse_privileges(parser: &mut Parser) -> Result<Option<Vec<String>>, SqlError> {
    if parser.parse_keyword(Keyword::ALL) {
        let _ = parser.parse_keyword(Keyword::PRIVILEGES);
        return Ok(None);
    }
    let names = parse_comma_separated(parser, |parser| {
        let token = parser.next_token();
        let Token::Word(word) = &token.token else {
            return Err(SqlError::Syntax(format!(
                "syntax error at or near \"{}\"",
                token.token
            )));
        };
        if parser.consume_token(&Token::LParen) {
            return Err(SqlError::Unsupported("column privileges".into()));
        }
        Ok(word.value.to_ascii_uppercase())
    })?;
    Ok(Some(names))
}

fn parse_target(parser: &mut Parser) -> Result<PrivilegeTarget, SqlError> {
    if parser.parse_keywords(&[Keyword::ALL, Keyword::TABLES, Keyword::IN, Keyword::SCHEMA]) {
        return Ok(PrivilegeTarget::AllRelationsInSchemas(
            parse_comma_separated(parser, parse_plain_name)?,
        ));
    }
    if parser.parse_keyword(Keyword::SCHEMA) {
        return Ok(PrivilegeTarget::Schemas(parse_comma_separated(
            parser,
            parse_plain_name,
        )?));
    }
    if parser.parse_keyword(Keyword::DATABASE) {
        return Ok(PrivilegeTarget::Databases(parse_comma_separated(
            parser,
            parse_plain_name,
        )?));
    }
    for (keyword, what) in [
        (Keyword::SEQUENCE, "sequences"),
        (Keyword::FUNCTION, "functions"),
        (Keyword::PROCEDURE, "procedures"),
        (Keyword::TYPE, "types"),
        (Keyword::DOMAIN, "domains"),
        (Keyword::TABLESPACE, "tablespaces"),
        (Keyword::LANGUAGE, "languages"),
        (Keyword::FOREIGN, "foreign data wrappers and servers"),
    ] {
        if parser.parse_keyword(keyword) {
            return Err(SqlError::Unsupported(format!("privileges on {what}")));
        }
    }
    if parser.parse_keywords(&[Keyword::ALL]) {
        return Err(SqlError::Unsupported(
            "privileges on all sequences, functions or routines in a schema".into(),
        ));
    }
    let _ = parser.parse_keyword(Keyword::TABLE);
    let names = parse_comma_separated(parser, |parser| {
        object_ref(&parser.parse_object_name(false)?)
    })?;
    Ok(PrivilegeTarget::Relations(names))
}

/// A schema's, database's or role's name: one identifier.
pub(super) fn parse_plain_name(parser: &mut Parser) -> Result<String, SqlError> {
    Ok(fold_ident(&parser.parse_identifier()?))
}

pub(super) fn parse_role_spec(parser: &mut Parser) -> Result<RoleSpec, SqlError> {
    let _ = parser.parse_keyword(Keyword::GROUP);
    if parser.parse_keyword(Keyword::PUBLIC) {
        return Ok(RoleSpec::Public);
    }
    if parser.parse_keyword(Keyword::CURRENT_USER) || parser.parse_keyword(Keyword::CURRENT_ROLE) {
        return Ok(RoleSpec::CurrentUser);
    }
    if parser.parse_keyword(Keyword::SESSION_USER) {
        return Ok(RoleSpec::SessionUser);
    }
    Ok(RoleSpec::Name(parse_plain_name(parser)?))
}

pub(super) fn parse_comma_separated<T>(
    parser: &mut Parser,
    mut item: impl FnMut(&mut Parser) -> Result<T, SqlError>,
) -> Result<Vec<T>, SqlError> {
    let mut items = vec![item(parser)?];
    while parser.consume_token(&Token::Comma) {
        items.push(item(parser)?);
    }
    Ok(items)
}

/// `ALTER kind [IF EXISTS] name OWNER TO role`; `None`, with nothing consumed, for any other
/// statement.
fn parse_alter_owner(parser: &mut Parser) -> Result<Option<Statement>, SqlError> {
    let owner_change = parser.maybe_parse(|parser| {
        parser.expect_keyword_is(Keyword::ALTER)?;
        let kind = parse_object_kind(parser)
            .ok_or_else(|| ParserError::ParserError("not an owner change".into()))?;
        let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        let name = parser.parse_object_name(false)?;
        parser.expect_keywords(&[Keyword::OWNER, Keyword::TO])?;
        Ok((kind, if_exists, name))
    })?;
    let Some((kind, if_exists, name)) = owner_change else {
        return Ok(None);
    };
    let new_owner = parse_role_spec(parser)?;
    if new_owner == RoleSpec::Public {
        return Err(SqlError::Syntax(
            "syntax error at or near \"PUBLIC\"".into(),
        ));
    }
    Ok(Some(Statement::AlterOwner(AlterOwner {
        kind,
        name: object_ref(&name)?,
        if_exists,
        new_owner,
    })))
}

/// The kind of object an ALTER names, consumed; `None` (nothing consumed) for another.
fn parse_object_kind(parser: &mut Parser) -> Option<ObjectKind> {
    if parser.parse_keywords(&[Keyword::MATERIALIZED, Keyword::VIEW]) {
        return Some(ObjectKind::MaterializedView);
    }
    let kind = match &parser.peek_token().token {
        Token::Word(word) => match word.value.to_ascii_uppercase().as_str() {
            "TABLE" => ObjectKind::Table,
            "VIEW" => ObjectKind::View,
            "INDEX" => ObjectKind::Index,
            "SCHEMA" => ObjectKind::Schema,
            "SOURCE" => ObjectKind::Source,
            "SINK" => ObjectKind::Sink,
            "SUBSCRIPTION" => ObjectKind::Subscription,
            _ => return None,
        },
        _ => return None,
    };
    parser.next_token();
    Some(kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse;

    fn one(sql: &str) -> Statement {
        let mut statements = parse(sql).unwrap();
        assert_eq!(statements.len(), 1, "{sql}");
        statements.pop().unwrap()
    }

    #[test]
    fn grants_read_in_postgres_grammar() {
        let Statement::Privileges(change) =
            one("GRANT SELECT, insert ON TABLE t, s.\"V\" TO bi, PUBLIC WITH GRANT OPTION")
        else {
            panic!("not a grant");
        };
        assert_eq!(
            change.action,
            PrivilegeAction::Grant {
                with_grant_option: true
            }
        );
        assert_eq!(
            change.privileges,
            Some(vec!["SELECT".to_string(), "INSERT".to_string()])
        );
        assert_eq!(
            change.target,
            PrivilegeTarget::Relations(vec![
                ObjectRef {
                    schema: None,
                    name: "t".into()
                },
                ObjectRef::qualified("s", "V")
            ])
        );
        assert_eq!(
            change.grantees,
            vec![RoleSpec::Name("bi".into()), RoleSpec::Public]
        );
    }

    #[test]
    fn revokes_read_their_options() {
        let Statement::Privileges(change) = one(
            "REVOKE GRANT OPTION FOR ALL PRIVILEGES ON ALL TABLES IN SCHEMA public FROM CURRENT_USER CASCADE",
        ) else {
            panic!("not a revoke");
        };
        assert_eq!(
            change.action,
            PrivilegeAction::Revoke {
                grant_option_only: true,
                cascade: true
            }
        );
        assert_eq!(change.privileges, None);
        assert_eq!(
            change.target,
            PrivilegeTarget::AllRelationsInSchemas(vec!["public".into()])
        );
        assert_eq!(change.grantees, vec![RoleSpec::CurrentUser]);
    }

    #[test]
    fn owners_change_for_every_kind() {
        let Statement::AlterOwner(alter) =
            one("ALTER MATERIALIZED VIEW IF EXISTS m OWNER TO alice")
        else {
            panic!("not an owner change");
        };
        assert_eq!(alter.kind, ObjectKind::MaterializedView);
        assert!(alter.if_exists);
        assert_eq!(alter.new_owner, RoleSpec::Name("alice".into()));
        assert!(matches!(
            one("ALTER SOURCE s OWNER TO CURRENT_USER"),
            Statement::AlterOwner(AlterOwner {
                kind: ObjectKind::Source,
                ..
            })
        ));
        assert!(matches!(
            one("ALTER TABLE t RENAME TO u"),
            Statement::Rename(_)
        ));
        let statements =
            parse("SELECT 1; ALTER ROLE a PASSWORD 'x'; ALTER VIEW v RENAME TO w").unwrap();
        assert!(matches!(
            statements.as_slice(),
            [
                Statement::Select(_),
                Statement::AlterRole(_),
                Statement::Rename(_)
            ]
        ));
    }

    #[test]
    fn roles_are_granted_and_revoked_as_members() {
        let Statement::RoleMembership(change) =
            one("GRANT reader, \"Writer\" TO alice, CURRENT_USER WITH ADMIN OPTION")
        else {
            panic!("not a membership change");
        };
        assert!(change.grant && change.admin_option);
        assert_eq!(change.roles, ["reader", "Writer"]);
        assert_eq!(
            change.members,
            [RoleSpec::Name("alice".into()), RoleSpec::CurrentUser]
        );
        let Statement::RoleMembership(change) =
            one("REVOKE ADMIN OPTION FOR reader FROM GROUP alice GRANTED BY bob CASCADE")
        else {
            panic!("not a membership change");
        };
        assert!(!change.grant && change.admin_option);
        assert_eq!(change.granted_by, Some(RoleSpec::Name("bob".into())));
        let Statement::RoleMembership(change) = one("REVOKE reader FROM alice") else {
            panic!("not a membership change");
        };
        assert!(!change.grant && !change.admin_option);
        assert!(matches!(
            one("GRANT SELECT ON t TO alice"),
            Statement::Privileges(_)
        ));
    }

    #[test]
    fn what_is_not_supported_says_so() {
        assert!(matches!(
            parse("GRANT SELECT (a) ON t TO bi"),
            Err(SqlError::Unsupported(_))
        ));
        assert!(matches!(
            parse("GRANT USAGE ON SEQUENCE s TO bi"),
            Err(SqlError::Unsupported(_))
        ));
    }
}
