// Package contracts embeds the generated contract files: the tool catalog and one JSON
// Schema per tool input and output. The JSON files are generated from cue/contracts by
// `make generate` and reviewed in every diff; this file is the only hand-written one.
package contracts

import "embed"

// FS holds catalog.json, tools/*.json, the evidence store's document schemas
// (repository/*.json) and the schemas of formats Flameox defines (formats/*.json).
//
//go:embed catalog.json openapi.json tools repository formats
var FS embed.FS
