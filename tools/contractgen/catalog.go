package main

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"cuelang.org/go/cue"
)

// persistedDocuments are the evidence store's documents; their schemas are published
// under contracts/repository and checked on every read.
var persistedDocuments = []string{"RepositoryDocument", "ArtifactDocument", "Manifest"}

// formatDocuments are native formats Flameox defines itself; their schemas are published
// under contracts/formats.
var formatDocuments = []string{"BenchmarkSamplesDocument", "KernelValidationDocument"}

// toolFiles are the schema paths of one tool under contracts/.
type toolFiles struct {
	// Input is the input schema tools/list publishes and the runtime validates with.
	Input string
	// Output is the compact output schema tools/list publishes.
	Output string
	// Result is the rich output schema: every envelope field described, rows typed where
	// the operation declares its row definitions. Published under contracts/ and shown by
	// flameox mcp inspect --tool.
	Result string
}

// writeTool renders a tool's schemas into files and returns their paths.
func writeTool(files map[string][]byte, name string, in, out, result schema) toolFiles {
	p := toolFiles{Input: "tools/" + name + ".input.json", Output: "tools/" + name + ".output.json", Result: "tools/" + name + ".result.json"}
	files[p.Input], files[p.Output], files[p.Result] = marshalSchema(in), marshalSchema(out), marshalSchema(result)
	return p
}

// captureProvider is one entry of the CUE captureProviders list.
type captureProvider struct {
	Kind            string            `json:"kind"`
	Definition      string            `json:"definition"`
	Outputs         map[string]string `json:"outputs"`
	ReturncodeScope string            `json:"returncode_scope"`
	// VerdictReturncodes are exit statuses that report a verdict, not a failed run.
	VerdictReturncodes []int64 `json:"verdict_returncodes"`
	Released           bool    `json:"released"`
}

// captureFormats are the formats a capture tool's inputs can have: the outputs of its
// providers and of the direct provider (the workload's console), in the catalog's order
// of providers and sorted roles, each once. A capture's inputs are only what its
// providers write, so a format the operation reads but no provider writes (a file the
// caller passes to the analysis tool) is not among them.
func captureFormats(kinds []string, providers []captureProvider) []string {
	var formats []string
	for _, p := range providers {
		if p.Kind != "direct" && !slices.Contains(kinds, p.Kind) {
			continue
		}
		for _, role := range slices.Sorted(maps.Keys(p.Outputs)) {
			formats = append(formats, p.Outputs[role])
		}
	}
	return formats
}

// captureProviders decodes the CUE capture provider registry.
func (m *model) captureProviders() ([]captureProvider, error) {
	var providers []captureProvider
	if err := m.root.LookupPath(cue.ParsePath("captureProviders")).Decode(&providers); err != nil {
		return nil, err
	}
	return providers, nil
}

// releasedProviders lists the operation's capture providers this build implements.
func releasedProviders(op operation, providers []captureProvider) []string {
	var out []string
	for _, k := range op.CaptureProviders {
		for _, p := range providers {
			if p.Kind == k && p.Released {
				out = append(out, k)
			}
		}
	}
	return out
}

// captureInputSchema composes a capture tool's input: target, the union of its released
// providers, preserve, limits, page_size, experiment when the operation accepts one, and
// the operation's fields at top level.
func (m *model) captureInputSchema(op operation, kinds []string, providers []captureProvider) (schema, sourceCap, error) {
	var c sourceCap
	s, err := m.defSchema("CaptureArguments")
	if err != nil {
		return nil, c, err
	}
	props := s["properties"].(schema)
	var arms []any
	for _, k := range kinds {
		for _, p := range providers {
			if p.Kind == k {
				ps, err := m.defSchema(p.Definition)
				if err != nil {
					return nil, c, err
				}
				if d, ok := ps["description"].(string); ok {
					ps["description"] = providerDescription(p.Definition, d)
				}
				arms = append(arms, ps)
			}
		}
	}
	desc := props["provider"].(schema)["description"]
	if len(arms) == 1 {
		// A lone provider keeps its own description: it says how the workload is run.
		p := arms[0].(schema)
		if _, ok := p["description"]; !ok {
			p["description"] = desc
		}
		props["provider"] = p
	} else {
		props["provider"] = schema{"description": desc, "anyOf": arms}
	}
	if op.Experiment {
		e, err := m.defSchema("ExperimentArgument")
		if err != nil {
			return nil, c, err
		}
		exp := e["properties"].(schema)["experiment"].(schema)
		c = captureSourceCap(op, kinds, providers)
		if c.Blocks < 1 {
			return nil, c, fmt.Errorf("%s declares an experiment, but two cases of one block produce %d sources and at most %d fit",
				op.Name, 2*c.ArtifactsPerExecution, c.Sources)
		}
		if err := describeBlocks(exp, c); err != nil {
			return nil, c, fmt.Errorf("%s: %w", op.Name, err)
		}
		props["experiment"] = exp
	}
	fields, err := m.valueSchema(op.fields)
	if err != nil {
		return nil, c, err
	}
	if fp, ok := fields["properties"].(schema); ok {
		for k, v := range fp {
			if _, dup := props[k]; dup {
				return nil, c, fmt.Errorf("field %q collides with a capture transport field", k)
			}
			props[k] = v
		}
	}
	s["required"] = toAny(append(toStrings(s["required"]), toStrings(fields["required"])...))
	untitled(s)
	in, err := m.compactInput(s)
	return in, c, err
}

// untitled drops an input schema's root title and description: tools/list carries the
// tool's title and description beside the schema, so the schema does not repeat them.
func untitled(s schema) {
	delete(s, "title")
	delete(s, "description")
}

// maxCaptureSources bounds the sources one capture may produce, whatever the operation
// accepts; the runtime's admission check uses the same bound.
const maxCaptureSources = 32

// sourceCap is how many experiment blocks fit a capture tool's source cap: sources =
// cases x blocks x artifacts per execution must stay within min(32, operation max_sources).
type sourceCap struct {
	// Sources is the cap, min(32, operation max_sources).
	Sources int
	// ArtifactsPerExecution is the largest number of outputs among the tool's providers
	// (direct yields stdout and stderr: 2).
	ArtifactsPerExecution int
	// Blocks is the most blocks two cases fit.
	Blocks int
}

func captureSourceCap(op operation, kinds []string, providers []captureProvider) sourceCap {
	c := sourceCap{Sources: min(maxCaptureSources, op.MaxSources), ArtifactsPerExecution: 1}
	for _, k := range kinds {
		for _, p := range providers {
			if p.Kind == k {
				c.ArtifactsPerExecution = max(c.ArtifactsPerExecution, len(p.Outputs))
			}
		}
	}
	c.Blocks = c.Sources / (2 * c.ArtifactsPerExecution)
	return c
}

// describeBlocks keeps the experiment's declared blocks range (1-100, as the seed says)
// and states the tool's source arithmetic beside it (the tool description says how many
// blocks two cases fit): admission answers LIMIT_EXCEEDED with the arithmetic when cases
// x blocks x artifacts exceed the cap.
func describeBlocks(exp schema, c sourceCap) error {
	arms, _ := exp["anyOf"].([]any)
	for _, a := range arms {
		arm, _ := a.(schema)
		if arm["type"] != "object" {
			continue
		}
		blocks, _ := arm["properties"].(schema)["blocks"].(schema)
		if blocks == nil {
			break
		}
		if cur, err := strconv.Atoi(fmt.Sprint(blocks["maximum"])); err != nil || cur < c.Blocks {
			return fmt.Errorf("experiment.blocks maximum %v is below the source cap's %d blocks", blocks["maximum"], c.Blocks)
		}
		blocks["description"] = fmt.Sprintf("cases x blocks x %d <= %d sources, else LIMIT_EXCEEDED.", c.ArtifactsPerExecution, c.Sources)
		return nil
	}
	return fmt.Errorf("experiment has no object arm with blocks")
}

// captureDescription is a capture tool's description. Only a tool whose operation accepts
// an experiment mentions one, with how many blocks fit its source cap with two cases.
func captureDescription(op operation, c sourceCap) string {
	what := strings.ToLower(op.Description[:1]) + op.Description[1:]
	const tail = " No shell; next_page never reruns the workload."
	if !op.Experiment {
		return "Run the target once under a compatible collector, then " + what + tail
	}
	per := "1 artifact"
	if c.ArtifactsPerExecution > 1 {
		per = fmt.Sprintf("%d artifacts", c.ArtifactsPerExecution)
	}
	return "Run the target once or as a paired experiment under a compatible collector, then " + what +
		fmt.Sprintf(" Each run yields %s; a capture holds at most %d sources, so two cases fit at most %d blocks.", per, c.Sources, c.Blocks) +
		tail
}

// captureTitle is the title of an operation's capture tool: "Rank CPU hotspots" becomes
// "Capture and rank CPU hotspots". A leading word in capitals (an acronym) keeps its case.
func captureTitle(title string) string {
	r := []rune(title)
	if len(r) > 1 && unicode.IsUpper(r[0]) && !unicode.IsUpper(r[1]) {
		r[0] = unicode.ToLower(r[0])
	}
	return "Capture and " + string(r)
}

// lifecycleTool is one entry of the CUE lifecycleTools list.
type lifecycleTool struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Annotations string `json:"annotations"`
	Input       string `json:"input"`
	Output      string `json:"output"`
	Toolset     string `json:"toolset"`
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
		untitled(in)
		if in, err = m.compactInput(in); err != nil {
			return nil, fmt.Errorf("%s input: %w", t.Name, err)
		}
		result, err := m.defSchema(t.Output)
		if err != nil {
			return nil, fmt.Errorf("%s output: %w", t.Name, err)
		}
		rich, err := m.outputUnion(t.Name, result)
		if err != nil {
			return nil, err
		}
		compact, err := m.compactOutput(t.Output, "")
		if err != nil {
			return nil, fmt.Errorf("%s output: %w", t.Name, err)
		}
		paths := writeTool(files, t.Name, in, compact, rich)
		out = append(out, map[string]any{
			"name":          t.Name,
			"title":         t.Title,
			"description":   t.Description,
			"family":        "lifecycle",
			"toolset":       t.Toolset,
			"annotations":   annotations,
			"input_schema":  paths.Input,
			"output_schema": paths.Output,
			"result_schema": paths.Result,
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
	providers, err := m.captureProviders()
	if err != nil {
		return nil, err
	}
	var captureAnnotations map[string]any
	if err := m.root.LookupPath(cue.ParsePath("toolAnnotations.capture")).Decode(&captureAnnotations); err != nil {
		return nil, err
	}
	var tools, ops, captures []any
	for _, op := range m.ops {
		ops = append(ops, map[string]any{
			"operation":            op.Name,
			"toolset":              op.Toolset,
			"title":                op.Title,
			"description":          op.Description,
			"accepted_formats":     op.Formats,
			"minimum_sources":      op.MinSources,
			"maximum_sources":      op.MaxSources,
			"fields_definition":    op.FieldsDef,
			"capture_providers":    op.CaptureProviders,
			"experiment_supported": op.Experiment,
			"released":             op.Released,
			"limitations":          op.Limitations,
			"row_definitions":      op.Rows,
		})
		if !op.Released {
			continue
		}
		in, err := m.toolInputSchema(op)
		if err != nil {
			return nil, err
		}
		rich, err := m.toolOutputSchema(op)
		if err != nil {
			return nil, err
		}
		compact, err := m.compactOutput("AnalysisResult", op.Name)
		if err != nil {
			return nil, fmt.Errorf("%s output: %w", op.Name, err)
		}
		paths := writeTool(files, op.Name, in, compact, rich)
		tools = append(tools, map[string]any{
			"name":          op.Name,
			"title":         op.Title,
			"description":   op.Description,
			"family":        "analysis",
			"toolset":       op.Toolset,
			"operation":     op.Name,
			"annotations":   annotations,
			"input_schema":  paths.Input,
			"output_schema": paths.Output,
			"result_schema": paths.Result,
		})
		kinds := releasedProviders(op, providers)
		if len(kinds) == 0 {
			continue
		}
		name := "capture_and_" + op.Name
		cin, c, err := m.captureInputSchema(op, kinds, providers)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		cres, err := m.defSchema("CaptureResult")
		if err != nil {
			return nil, err
		}
		cres["properties"].(schema)["operation"] = schema{"const": op.Name, "description": "Operation (task name) that analysed the capture."}
		// A capture whose collector wrote nothing previews its console instead.
		if err := m.typeRows(cres, op, "CaptureConsoleRow"); err != nil {
			return nil, err
		}
		// Its inputs are what its providers write.
		if err := narrowInputFormats(cres, captureFormats(kinds, providers)); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		crich, err := m.outputUnion(name, cres)
		if err != nil {
			return nil, err
		}
		ccompact, err := m.compactOutput("CaptureResult", op.Name)
		if err != nil {
			return nil, fmt.Errorf("%s output: %w", name, err)
		}
		cpaths := writeTool(files, name, cin, ccompact, crich)
		captures = append(captures, map[string]any{
			"name":              name,
			"title":             captureTitle(op.Title),
			"description":       captureDescription(op, c),
			"family":            "capture",
			"toolset":           op.Toolset,
			"operation":         op.Name,
			"capture_providers": kinds,
			"annotations":       captureAnnotations,
			"input_schema":      cpaths.Input,
			"output_schema":     cpaths.Output,
			"result_schema":     cpaths.Result,
		})
	}
	tools = append(tools, captures...)
	lifecycle, err := m.lifecycleFiles(files)
	if err != nil {
		return nil, err
	}
	tools = append(tools, lifecycle...)
	for dir, names := range map[string][]string{"repository": persistedDocuments, "formats": formatDocuments} {
		for _, name := range names {
			s, err := m.defSchema(name)
			if err != nil {
				return nil, fmt.Errorf("#%s: %w", name, err)
			}
			s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
			s["title"] = name
			files[dir+"/"+name+".json"] = marshalSchema(s)
		}
	}
	if files["openapi.json"], err = m.openAPIFile(); err != nil {
		return nil, err
	}
	files["catalog.json"] = marshalSchema(map[string]any{
		"server":     server,
		"tools":      tools,
		"operations": ops,
	})
	return files, nil
}
