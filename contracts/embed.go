// Package contracts embeds the generated contract files: the tool catalog and one JSON
// Schema per tool input and output. The JSON files are generated from cue/contracts by
// `make generate` and reviewed in every diff; this file is the only hand-written one.
package contracts

import "embed"

// FS holds catalog.json and tools/*.json.
//
//go:embed catalog.json tools
var FS embed.FS
