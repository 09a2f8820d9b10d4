package preview

import (
	"encoding/binary"
	"errors"
	"strings"

	"github.com/flameox/flameox/providers"
	"github.com/flameox/flameox/providers/internal/sqlitefile"
)

// The SQLite header view (coverage.py data, Nsight Systems exports): the database
// header's fields (https://sqlite.org/fileformat.html, section 1.3) and, from the schema
// of the file opened as every SQLite input is (read only, immutable, checked: decision
// 0033), its tables with their row counts, at most maxHeaderItems of them.

var sqliteEncodings = map[uint32]string{1: "UTF-8", 2: "UTF-16le", 3: "UTF-16be"}

func sqliteHeader(h *header) error {
	if len(h.head) < 100 {
		return unrecognized("the file is shorter than SQLite's 100-byte header")
	}
	be := binary.BigEndian
	b := h.head[:100]
	pageSize := uint32(be.Uint16(b[16:]))
	if pageSize == 1 {
		pageSize = 65536
	}
	h.field("page_size", pageSize)
	h.field("write_version", b[18])
	h.field("read_version", b[19])
	h.field("page_count", be.Uint32(b[28:]))
	h.field("freelist_page_count", be.Uint32(b[36:]))
	h.field("schema_cookie", be.Uint32(b[40:]))
	h.field("schema_format", be.Uint32(b[44:]))
	enc := sqliteEncodings[be.Uint32(b[56:])]
	if enc == "" {
		enc = "unset"
	}
	h.field("text_encoding", enc)
	h.field("user_version", int64(int32(be.Uint32(b[60:]))))
	h.field("application_id", int64(int32(be.Uint32(b[68:]))))
	h.field("sqlite_version_number", be.Uint32(b[96:]))

	db, err := sqlitefile.Open(h.ctx, h.src.Path)
	if err != nil {
		var ce *sqlitefile.CorruptError
		var xe *sqlitefile.ComputedError
		switch {
		case errors.As(err, &ce):
			return unrecognized("%s", ce.Error())
		case errors.As(err, &xe):
			return unrecognized("%s; such a table is not read", xe.Error())
		case h.ctx.Err() != nil:
			return h.ctx.Err()
		}
		return &providers.DecodeError{Source: h.index, Message: "the SQLite file could not be opened", Err: err}
	}
	defer db.Close()
	rows, err := db.QueryContext(h.ctx, `SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name LIMIT ?`, maxHeaderItems+1)
	if err != nil {
		return sqliteFailure(h, err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return sqliteFailure(h, err)
		}
		tables = append(tables, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sqliteFailure(h, err)
	}
	var count int64
	if err := db.QueryRowContext(h.ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&count); err != nil {
		return sqliteFailure(h, err)
	}
	h.field("table_count", count)
	for _, t := range tables[:min(len(tables), maxHeaderItems)] {
		var n int64
		q := `SELECT count(*) FROM "` + strings.ReplaceAll(t, `"`, `""`) + `"`
		if err := db.QueryRowContext(h.ctx, q).Scan(&n); err != nil {
			return sqliteFailure(h, err)
		}
		h.item("tables", func(o *object) {
			o.val("name", t)
			o.int("row_count", n)
		})
	}
	return nil
}

func sqliteFailure(h *header, err error) error {
	if h.ctx.Err() != nil {
		return h.ctx.Err()
	}
	return &providers.DecodeError{Source: h.index, Message: "the SQLite file's schema could not be read", Err: err}
}
