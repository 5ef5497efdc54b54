//! Many rows in one PostgreSQL statement: rows of [`Arg`]s (as `commit.rs` builds them for
//! one row at a time) bound column by column as arrays, which `unnest` turns back into
//! rows; and [`Writes`], several such inserts and updates in one statement
//! (data-modifying `WITH` parts), so that they cost one round trip.

use sqlx::PgConnection;
use sqlx::postgres::{PgArguments, PgRow, Postgres};
use sqlx::query::Query;

use super::StoreError;
use super::commit::{Arg, Table};

/// `unnest($first::type[], …) AS v(columns)` of `rows`: one array per column, of its
/// arguments' type.
pub(super) fn unnest(rows: &[Vec<Arg>], columns: &[&str], first: usize) -> String {
    format!("{} AS v({})", arrays(rows, first), columns.join(", "))
}

/// `unnest($first::type[], $first+1::type[], …)` of `rows` (not empty).
pub(super) fn arrays(rows: &[Vec<Arg>], first: usize) -> String {
    let types: Vec<String> = rows[0]
        .iter()
        .enumerate()
        .map(|(i, arg)| {
            let kind = match arg {
                Arg::Text(_) => "text",
                Arg::Int(_) => "bigint",
                Arg::Real(_) => "double precision",
                Arg::Bool(_) => "boolean",
            };
            format!("${}::{kind}[]", first + i)
        })
        .collect();
    format!("unnest({})", types.join(", "))
}

/// A statement of dynamic text (built from the rows' shapes, never from their values).
pub(super) fn query(sql: &str) -> Query<'_, Postgres, PgArguments> {
    sqlx::query(sqlx::AssertSqlSafe(sql))
}

/// `query` with `rows` (of equal shape, as one argument builder makes them) bound column
/// by column, each as an array of its arguments' type.
pub(super) fn bind_columns<'q>(
    mut query: Query<'q, Postgres, PgArguments>,
    rows: Vec<Vec<Arg>>,
) -> Result<Query<'q, Postgres, PgArguments>, StoreError> {
    let width = rows.first().map_or(0, Vec::len);
    let mut columns: Vec<Vec<Arg>> = (0..width).map(|_| Vec::with_capacity(rows.len())).collect();
    for row in rows {
        if row.len() != width {
            return Err(uneven());
        }
        for (column, arg) in columns.iter_mut().zip(row) {
            column.push(arg);
        }
    }
    for column in columns {
        query = match column[0] {
            Arg::Text(_) => query.bind(typed(column, Arg::text)?),
            Arg::Int(_) => query.bind(typed(column, Arg::int)?),
            Arg::Real(_) => query.bind(typed(column, Arg::real)?),
            Arg::Bool(_) => query.bind(typed(column, Arg::boolean)?),
        };
    }
    Ok(query)
}

/// A column's arguments as values of the first one's type.
fn typed<T>(column: Vec<Arg>, value: fn(Arg) -> Result<T, Arg>) -> Result<Vec<T>, StoreError> {
    column
        .into_iter()
        .map(|arg| value(arg).map_err(|_| uneven()))
        .collect()
}

fn uneven() -> StoreError {
    StoreError::Corrupt("a batch's rows differ in shape".into())
}

/// Writes of many rows in one statement: `WITH w0 AS (…), w1 AS (…) SELECT …`. Every part
/// runs to completion, on the snapshot the statement started with (a part does not see
/// another's rows); the statement returns the rows of the parts added with a tag
/// ([`Writes::returning`]).
pub(super) struct Writes {
    parts: Vec<String>,
    /// The parts whose `(session_id, id)` rows come back, with their tags.
    returned: Vec<(&'static str, usize)>,
    rows: Vec<Vec<Vec<Arg>>>,
    /// The number of the next placeholder.
    next: usize,
}

impl Writes {
    /// No parts yet.
    pub(super) fn new() -> Writes {
        Writes {
            parts: Vec::new(),
            returned: Vec::new(),
            rows: Vec::new(),
            next: 1,
        }
    }

    /// Adds the part that `sql` writes from the arrays of `rows` (it is given
    /// `unnest($a::type[], …)`); nothing without rows.
    pub(super) fn add(&mut self, rows: Vec<Vec<Arg>>, sql: impl FnOnce(&str) -> String) {
        if rows.is_empty() {
            return;
        }
        let first = self.next;
        self.next += rows[0].len();
        self.parts.push(sql(&arrays(&rows, first)));
        self.rows.push(rows);
    }

    /// Adds the insert of `rows` into `table`.
    pub(super) fn insert(&mut self, table: &Table, rows: Vec<Vec<Arg>>) {
        self.add(rows, |arrays| {
            format!(
                "INSERT INTO {} ({}) SELECT * FROM {arrays}",
                table.name, table.columns
            )
        });
    }

    /// Adds a part that returns `(session_id, id)` rows, which come back tagged `tag`.
    pub(super) fn returning(
        &mut self,
        tag: &'static str,
        rows: Vec<Vec<Arg>>,
        sql: impl FnOnce(&str) -> String,
    ) {
        let parts = self.parts.len();
        self.add(rows, sql);
        if self.parts.len() > parts {
            self.returned.push((tag, parts));
        }
    }

    /// Runs the parts as one statement on `conn` (none without parts); the rows of the
    /// parts added by [`Writes::returning`], as `(tag, session_id, id)`.
    pub(super) async fn run(
        self,
        conn: &mut PgConnection,
    ) -> Result<Vec<(String, String, i64)>, StoreError> {
        if self.parts.is_empty() {
            return Ok(Vec::new());
        }
        let with: Vec<String> = self
            .parts
            .iter()
            .enumerate()
            .map(|(i, part)| format!("w{i} AS ({part})"))
            .collect();
        let selects: Vec<String> = self
            .returned
            .iter()
            .map(|(tag, i)| format!("SELECT '{tag}'::text, session_id::text, id FROM w{i}"))
            .collect();
        let select = if selects.is_empty() {
            "SELECT NULL::text, NULL::text, NULL::bigint WHERE FALSE".to_owned()
        } else {
            selects.join(" UNION ALL ")
        };
        let sql = format!("WITH {} {select}", with.join(", "));
        let mut statement = query(&sql);
        for rows in self.rows {
            statement = bind_columns(statement, rows)?;
        }
        Ok(statement
            .try_map(|row: PgRow| <(String, String, i64) as sqlx::FromRow<_>>::from_row(&row))
            .fetch_all(&mut *conn)
            .await?)
    }
}
