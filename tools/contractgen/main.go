// Command contractgen turns the CUE contracts in cue/contracts into the checked-in
// contract files (contracts/: one JSON Schema per tool input and output, and the tool
// catalog) and the generated Go package (generated/contracts: types, enums with their
// value lists, kind-discriminated unions and the operation registry).
//
// It is run by `make generate`; its output is deterministic so that CI can fail when the
// checked-in files are stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"
)

func main() {
	pkg := flag.String("pkg", "./cue/contracts", "CUE package holding the contracts")
	contractsDir := flag.String("contracts", "contracts", "output directory for JSON contracts")
	goDir := flag.String("go", "generated/contracts", "output directory for generated Go")
	flag.Parse()
	if err := run(*pkg, *contractsDir, *goDir); err != nil {
		fmt.Fprintln(os.Stderr, "contractgen:", err)
		os.Exit(1)
	}
}

func run(pkg, contractsDir, goDir string) error {
	insts := load.Instances([]string{pkg}, nil)
	if len(insts) != 1 {
		return fmt.Errorf("expected one CUE instance, got %d", len(insts))
	}
	if insts[0].Err != nil {
		return insts[0].Err
	}
	root := cuecontext.New().BuildInstance(insts[0])
	if err := root.Err(); err != nil {
		return err
	}
	m := &model{root: root}
	if err := m.loadRegistry(); err != nil {
		return err
	}
	files, err := m.contractFiles()
	if err != nil {
		return err
	}
	gofiles, err := m.goFiles()
	if err != nil {
		return err
	}
	if gofiles["catalog_gen.go"], err = catalogGo(files["catalog.json"]); err != nil {
		return err
	}
	if err := writeTree(contractsDir, files, []string{".json"}); err != nil {
		return err
	}
	return writeTree(goDir, gofiles, []string{"_gen.go"})
}

// writeTree replaces the generated files under dir (those with one of the suffixes) with files.
func writeTree(dir string, files map[string][]byte, suffixes []string) error {
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		for _, s := range suffixes {
			if len(p) > len(s) && p[len(p)-len(s):] == s {
				return os.Remove(p)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// model is the loaded CUE contract package.
type model struct {
	root cue.Value
	ops  []operation
	// defNames maps the rendering of a definition, without descriptions, to its name.
	defNames map[string]string
}

// operation is one entry of the CUE operation registry.
type operation struct {
	Name             string
	Toolset          string
	Title            string
	Description      string
	Formats          []string
	MinSources       int
	MaxSources       int
	FieldsDef        string // name of the fields definition, without '#'
	CaptureProviders []string
	Experiment       bool
	Released         bool
	Limitations      []string
	// FormatLimitations are the limitations of an input of each format.
	FormatLimitations map[string][]string
	// Rows names the row definitions of the paged table, without '#'.
	Rows   []string
	fields cue.Value
}

func (m *model) loadRegistry() error {
	list, err := m.root.LookupPath(cue.ParsePath("operations")).List()
	if err != nil {
		return err
	}
	for list.Next() {
		v := list.Value()
		var op operation
		if err := v.Decode(&struct {
			Name             *string              `json:"name"`
			Toolset          *string              `json:"toolset"`
			Title            *string              `json:"title"`
			Description      *string              `json:"description"`
			Formats          *[]string            `json:"formats"`
			MinSources       *int                 `json:"min_sources"`
			MaxSources       *int                 `json:"max_sources"`
			CaptureProviders *[]string            `json:"capture_providers"`
			Experiment       *bool                `json:"experiment"`
			Released         *bool                `json:"released"`
			Limitations      *[]string            `json:"limitations"`
			FormatLims       *map[string][]string `json:"format_limitations"`
			Rows             *[]string            `json:"rows"`
		}{&op.Name, &op.Toolset, &op.Title, &op.Description, &op.Formats, &op.MinSources, &op.MaxSources,
			&op.CaptureProviders, &op.Experiment, &op.Released, &op.Limitations, &op.FormatLimitations, &op.Rows}); err != nil {
			return fmt.Errorf("operation %d: %w", len(m.ops), err)
		}
		op.fields = v.LookupPath(cue.MakePath(cue.Str("fields").Required()))
		op.FieldsDef = defReference(op.fields)
		if op.FieldsDef == "" {
			return fmt.Errorf("operation %s: fields must reference a definition", op.Name)
		}
		for _, r := range op.Rows {
			if d := m.def(r); !d.Exists() || d.Err() != nil {
				return fmt.Errorf("operation %s: rows names #%s, which is not a valid definition", op.Name, r)
			}
		}
		m.ops = append(m.ops, op)
	}
	known := m.formatNames()
	for _, op := range m.ops {
		for f := range op.FormatLimitations {
			if _, ok := slices.BinarySearch(known, f); !ok {
				return fmt.Errorf("operation %s: format_limitations names %s, which no operation reads", op.Name, f)
			}
		}
	}
	if err := m.checkCaptureFormats(); err != nil {
		return err
	}
	return m.checkToolsets()
}

// formatNames is the union of the formats the operations list, sorted: the values of
// #Format (the Go constants), which the CUE declares only as a spelling so that a
// format is named where an operation lists it and nowhere else.
func (m *model) formatNames() []string {
	var all []string
	for _, op := range m.ops {
		all = append(all, op.Formats...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// checkCaptureFormats fails when a capture provider writes a format no operation reads.
func (m *model) checkCaptureFormats() error {
	providers, err := m.captureProviders()
	if err != nil {
		return err
	}
	known := m.formatNames()
	for _, p := range providers {
		for role, f := range p.Outputs {
			if _, ok := slices.BinarySearch(known, f); !ok {
				return fmt.Errorf("capture provider %s: output %s is format %s, which no operation reads", p.Kind, role, f)
			}
		}
	}
	return nil
}

// checkToolsets fails when a toolset other than evidence (the lifecycle tools') holds no
// released operation: --toolsets would accept a name that loads nothing.
func (m *model) checkToolsets() error {
	names, ok := enumValues(m.def("Toolset"))
	if !ok {
		return fmt.Errorf("#Toolset is not a string enum")
	}
	for _, n := range names {
		if n == "evidence" {
			continue
		}
		used := false
		for _, op := range m.ops {
			used = used || (op.Released && op.Toolset == n)
		}
		if !used {
			return fmt.Errorf("toolset %s holds no released operation", n)
		}
	}
	return nil
}

// def returns the definition #name.
func (m *model) def(name string) cue.Value {
	return m.root.LookupPath(cue.ParsePath("#" + name))
}

// defReference returns the name (without '#') of the top-level definition v refers to,
// looking through the unification of a field constraint with its value.
func defReference(v cue.Value) string {
	if _, p := v.ReferencePath(); len(p.Selectors()) == 1 && p.Selectors()[0].IsDefinition() {
		return p.Selectors()[0].String()[1:]
	}
	if op, args := v.Expr(); op == cue.AndOp {
		for _, a := range args {
			if n := defReference(a); n != "" {
				return n
			}
		}
	}
	return ""
}
