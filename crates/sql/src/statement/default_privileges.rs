//! `ALTER DEFAULT PRIVILEGES`: the privileges objects get when a role creates them, read in
//! PostgreSQL 15's grammar.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::Token;

use super::privileges::{
    parse_comma_separated, parse_plain_name, parse_privileges, parse_role_spec, PrivilegeAction,
    RoleSpec,
};
use super::Statement;
use crate::SqlError;

/// The kind of object default privileges are for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefaultObjects {
    /// `ON TABLES`: tables, views, materialized views and sources.
    Tables,
    /// `ON SCHEMAS`.
    Schemas,
}

/// `ALTER DEFAULT PRIVILEGES [FOR ROLE r, …] [IN SCHEMA s, …] GRANT … ON TABLES | SCHEMAS TO
/// …` or `… REVOKE … FROM …`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefaultPrivilegesChange {
    /// `FOR ROLE r, …`: whose new objects it is about (none: the current role's).
    pub for_roles: Vec<RoleSpec>,
    /// `IN SCHEMA s, …`: objects created in these schemas (none: in any schema).
    pub schemas: Vec<String>,
    /// What kind of objects.
    pub objects: DefaultObjects,
    /// Grant or revoke.
    pub action: PrivilegeAction,
    /// The privileges by upper-case name; `None`: `ALL [PRIVILEGES]`.
    pub privileges: Option<Vec<String>>,
    /// The roles granted to or revoked from.
    pub grantees: Vec<RoleSpec>,
}

/// The rest of the statement after `ALTER DEFAULT PRIVILEGES`.
pub(super) fn parse(parser: &mut Parser) -> Result<Statement, SqlError> {
    let mut for_roles = Vec::new();
    let mut schemas = Vec::new();
    loop {
        if parser.parse_keyword(Keyword::FOR) {
            if !parser.parse_keyword(Keyword::ROLE) {
                parser.expect_keyword_is(Keyword::USER)?;
            }
            for_roles.extend(parse_comma_separated(parser, parse_role_spec)?);
        } else if parser.parse_keywords(&[Keyword::IN, Keyword::SCHEMA]) {
            schemas.extend(parse_comma_separated(parser, parse_plain_name)?);
        } else {
            break;
        }
    }
    let grant = parser.parse_keyword(Keyword::GRANT);
    if !grant {
        parser.expect_keyword_is(Keyword::REVOKE)?;
    }
    let grant_option_only =
        !grant && parser.parse_keywords(&[Keyword::GRANT, Keyword::OPTION, Keyword::FOR]);
    let privileges = parse_privileges(parser)?;
    parser.expect_keyword_is(Keyword::ON)?;
    let objects = parse_objects(parser)?;
    parser.expect_keyword_is(if grant { Keyword::TO } else { Keyword::FROM })?;
    let grantees = parse_comma_separated(parser, parse_role_spec)?;
    let action = if grant {
        PrivilegeAction::Grant {
            with_grant_option: parser.parse_keywords(&[
                Keyword::WITH,
                Keyword::GRANT,
                Keyword::OPTION,
            ]),
        }
    } else {
        let cascade = parser.parse_keyword(Keyword::CASCADE);
        if !cascade {
            let _ = parser.parse_keyword(Keyword::RESTRICT);
        }
        PrivilegeAction::Revoke {
            grant_option_only,
            cascade,
        }
    };
    Ok(Statement::DefaultPrivileges(DefaultPrivilegesChange {
        for_roles,
        schemas,
        objects,
        action,
        privileges,
        grantees,
    }))
}

/// `TABLES` or `SCHEMAS` (other kinds of object Fluxion does not have: 0A000).
fn parse_objects(parser: &mut Parser) -> Result<DefaultObjects, SqlError> {
    let token = parser.next_token();
    let word = match &token.token {
        Token::Word(word) => word.value.to_ascii_uppercase(),
        other => {
            return Err(SqlError::Syntax(format!(
                "syntax error at or near \"{other}\""
            )))
        }
    };
    match word.as_str() {
        "TABLES" => Ok(DefaultObjects::Tables),
        "SCHEMAS" => Ok(DefaultObjects::Schemas),
        "SEQUENCES" | "FUNCTIONS" | "ROUTINES" | "TYPES" => Err(SqlError::Unsupported(format!(
            "default privileges on {}",
            word.to_ascii_lowercase()
        ))),
        _ => Err(SqlError::Syntax(format!(
            "syntax error at or near \"{word}\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse;

    fn one(sql: &str) -> Statement {
        parse(sql).expect(sql).pop().expect("a statement")
    }

    #[test]
    fn default_privileges_are_read_with_their_roles_and_schemas() {
        let Statement::DefaultPrivileges(change) = one(
            "ALTER DEFAULT PRIVILEGES FOR ROLE loader, CURRENT_USER IN SCHEMA public, \"Sales\" \
             GRANT SELECT, INSERT ON TABLES TO metabase WITH GRANT OPTION",
        ) else {
            panic!("not a default privileges change");
        };
        assert_eq!(
            change.for_roles,
            [RoleSpec::Name("loader".into()), RoleSpec::CurrentUser]
        );
        assert_eq!(change.schemas, ["public", "Sales"]);
        assert_eq!(change.objects, DefaultObjects::Tables);
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
        let Statement::DefaultPrivileges(change) =
            one("ALTER DEFAULT PRIVILEGES REVOKE GRANT OPTION FOR ALL ON SCHEMAS FROM PUBLIC")
        else {
            panic!("not a default privileges change");
        };
        assert!(change.for_roles.is_empty() && change.schemas.is_empty());
        assert_eq!(change.objects, DefaultObjects::Schemas);
        assert_eq!(change.privileges, None);
        assert_eq!(change.grantees, [RoleSpec::Public]);
        assert!(matches!(
            parse("ALTER DEFAULT PRIVILEGES GRANT USAGE ON SEQUENCES TO bi"),
            Err(SqlError::Unsupported(_))
        ));
    }
}
