package main

import (
	"cuelang.org/go/cue"
)

// contractFiles renders contracts/: the tool catalog and one input and output schema per
// tool. Only released operations become tools.
func (m *model) contractFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	var annotations map[string]any
	if err := m.root.LookupPath(cue.ParsePath("toolAnnotations.analysis")).Decode(&annotations); err != nil {
		return nil, err
	}
	var server map[string]any
	if err := m.root.LookupPath(cue.ParsePath("server")).Decode(&server); err != nil {
		return nil, err
	}
	var tools, ops []any
	for _, op := range m.ops {
		ops = append(ops, map[string]any{
			"operation":            op.Name,
			"description":          op.Description,
			"accepted_formats":     op.Formats,
			"minimum_sources":      op.MinSources,
			"maximum_sources":      op.MaxSources,
			"fields_definition":    op.FieldsDef,
			"capture_providers":    op.CaptureProviders,
			"experiment_supported": op.Experiment,
			"released":             op.Released,
			"limitations":          op.Limitations,
		})
		if !op.Released {
			continue
		}
		in, err := m.toolInputSchema(op)
		if err != nil {
			return nil, err
		}
		out, err := m.toolOutputSchema(op)
		if err != nil {
			return nil, err
		}
		inPath := "tools/" + op.Name + ".input.json"
		outPath := "tools/" + op.Name + ".output.json"
		files[inPath] = marshalSchema(in)
		files[outPath] = marshalSchema(out)
		tools = append(tools, map[string]any{
			"name":          op.Name,
			"title":         op.Name,
			"description":   op.Description,
			"family":        "analysis",
			"operation":     op.Name,
			"annotations":   annotations,
			"input_schema":  inPath,
			"output_schema": outPath,
		})
	}
	files["catalog.json"] = marshalSchema(map[string]any{
		"server":     server,
		"tools":      tools,
		"operations": ops,
	})
	return files, nil
}
