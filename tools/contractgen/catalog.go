package main

import (
	"fmt"

	"cuelang.org/go/cue"
)

// persistedDocuments are the evidence store's documents; their schemas are published
// under contracts/repository and checked on every read.
var persistedDocuments = []string{"RepositoryDocument", "ArtifactDocument", "Manifest"}

// lifecycleTool is one entry of the CUE lifecycleTools list.
type lifecycleTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Annotations string `json:"annotations"`
	Input       string `json:"input"`
	Output      string `json:"output"`
}

// lifecycleFiles renders the evidence tools' schemas into files and returns their catalog
// entries, in declaration order.
func (m *model) lifecycleFiles(files map[string][]byte) ([]any, error) {
	var decl []lifecycleTool
	if err := m.root.LookupPath(cue.ParsePath("lifecycleTools")).Decode(&decl); err != nil {
		return nil, err
	}
	var out []any
	for _, t := range decl {
		var annotations map[string]any
		if err := m.root.LookupPath(cue.ParsePath("toolAnnotations." + t.Annotations)).Decode(&annotations); err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		in, err := m.defSchema(t.Input)
		if err != nil {
			return nil, fmt.Errorf("%s input: %w", t.Name, err)
		}
		in["$schema"] = "https://json-schema.org/draft/2020-12/schema"
		in["title"] = t.Name
		in["description"] = t.Description
		result, err := m.defSchema(t.Output)
		if err != nil {
			return nil, fmt.Errorf("%s output: %w", t.Name, err)
		}
		out2, err := m.outputUnion(t.Name, result)
		if err != nil {
			return nil, err
		}
		inPath := "tools/" + t.Name + ".input.json"
		outPath := "tools/" + t.Name + ".output.json"
		files[inPath] = marshalSchema(in)
		files[outPath] = marshalSchema(out2)
		out = append(out, map[string]any{
			"name":          t.Name,
			"title":         t.Name,
			"description":   t.Description,
			"family":        "lifecycle",
			"annotations":   annotations,
			"input_schema":  inPath,
			"output_schema": outPath,
		})
	}
	return out, nil
}

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
	lifecycle, err := m.lifecycleFiles(files)
	if err != nil {
		return nil, err
	}
	tools = append(tools, lifecycle...)
	for _, name := range persistedDocuments {
		s, err := m.defSchema(name)
		if err != nil {
			return nil, fmt.Errorf("#%s: %w", name, err)
		}
		s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
		s["title"] = name
		files["repository/"+name+".json"] = marshalSchema(s)
	}
	files["catalog.json"] = marshalSchema(map[string]any{
		"server":     server,
		"tools":      tools,
		"operations": ops,
	})
	return files, nil
}
