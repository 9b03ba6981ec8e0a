"""The current schema in one place: every table, view and macro of a fresh database (the
migrations' base data and the derived tables of :mod:`advisor.derived.cube`), as SQL text.

``docs/schema.sql`` holds its output; regenerate it with ``python -m advisor.schema >
docs/schema.sql`` (a test fails while it is out of date).
"""

from __future__ import annotations

import duckdb

from advisor import store
from advisor.derived.cube import ensure_cube_schema

_HEADER = (
    "-- The schema of a fresh advisor database (generated: python -m advisor.schema > "
    "docs/schema.sql).\n"
    "-- Base data comes from advisor/sql/migrations/, derived tables from "
    "advisor/sql/ratios/cube/.\n"
)


def schema_sql() -> str:
    """The CREATE statements of a fresh, migrated database with its derived tables, by name."""
    con = duckdb.connect()
    try:
        store.migrate(con)
        ensure_cube_schema(con)
        rows = con.execute(
            "SELECT name, sql FROM ("
            " SELECT table_name AS name, sql FROM duckdb_tables() WHERE NOT temporary"
            " UNION ALL SELECT view_name, sql FROM duckdb_views() WHERE NOT internal"
            " UNION ALL SELECT sequence_name, sql FROM duckdb_sequences() WHERE NOT temporary"
            " UNION ALL SELECT function_name, 'CREATE MACRO ' || function_name || '('"
            "   || array_to_string(parameters, ', ') || ') AS ' || macro_definition || ';'"
            "   FROM duckdb_functions() WHERE function_type = 'macro' AND NOT internal"
            ") ORDER BY name"
        ).fetchall()
    finally:
        con.close()
    return _HEADER + "".join(f"\n{sql.strip()}\n" for _, sql in rows)


if __name__ == "__main__":
    print(schema_sql(), end="")
