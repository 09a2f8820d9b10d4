package nsys

import (
	"context"
	"database/sql"
	"slices"
	"strings"
)

// listTables lists the selected tables in name order with their row counts.
func (d *db) listTables(ctx context.Context, pick func(string) bool) ([]Table, error) {
	var names []string
	for n := range d.tables {
		if pick(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var tables []Table
	for _, n := range names {
		t := Table{Name: n}
		if err := d.sql.QueryRowContext(ctx, "SELECT count(*) FROM "+quoteIdent(n)).Scan(&t.Rows); err != nil {
			return nil, d.sqlErr(ctx, err)
		}
		var def sql.NullString
		if err := d.sql.QueryRowContext(ctx, "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", n).Scan(&def); err != nil {
			return nil, d.sqlErr(ctx, err)
		}
		if !strings.Contains(strings.ToUpper(def.String), "WITHOUT ROWID") {
			cols, err := d.columnsOf(ctx, n)
			if err != nil {
				return nil, err
			}
			// The first rowid alias that no column shadows.
			for _, alias := range []string{"rowid", "_rowid_", "oid"} {
				if !slices.ContainsFunc(cols, func(c string) bool { return strings.EqualFold(c, alias) }) {
					t.order = alias
					break
				}
			}
		}
		tables = append(tables, t)
	}
	return tables, nil
}

func (d *db) columnsOf(ctx context.Context, name string) ([]string, error) {
	rows, err := d.sql.QueryContext(ctx, "SELECT * FROM "+quoteIdent(name)+" LIMIT 0")
	if err != nil {
		return nil, d.sqlErr(ctx, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, d.sqlErr(ctx, err)
	}
	return cols, nil
}

// readRows reads up to limit rows of t from its row skip into add; full is false when
// add ended the read.
func (d *db) readRows(ctx context.Context, t Table, skip, limit int64, add func(*TableRow) (bool, error)) (bool, error) {
	q := "SELECT * FROM " + quoteIdent(t.Name)
	if t.order != "" {
		q += " ORDER BY " + t.order
	}
	rows, err := d.sql.QueryContext(ctx, q+" LIMIT ? OFFSET ?", limit, skip)
	if err != nil {
		return false, d.sqlErr(ctx, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return false, d.sqlErr(ctx, err)
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	row := TableRow{Table: t.Name, Columns: cols, Values: vals}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return false, d.sqlErr(ctx, err)
		}
		if ok, err := add(&row); err != nil || !ok {
			return false, err
		}
	}
	if err := rows.Err(); err != nil {
		return false, d.sqlErr(ctx, err)
	}
	return true, nil
}

// quoteIdent quotes an SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
