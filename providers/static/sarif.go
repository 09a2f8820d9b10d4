package static

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/flameox/flameox/providers"
)

const (
	// maxSarifBytes bounds a SARIF log (after decompression).
	maxSarifBytes = 64 << 20
	// maxMessageBytes bounds a candidate's message.
	maxMessageBytes = 1024
	// maxBaseDepth bounds a chain of originalUriBaseIds.
	maxBaseDepth = 8
)

// The SARIF levels by severity.
var levelRank = map[string]int{"error": 0, "warning": 1, "note": 2, "none": 3}

var kinds = map[string]bool{"fail": true, "pass": true, "open": true, "review": true, "informational": true, "notApplicable": true}

var baselineStates = map[string]bool{"new": true, "unchanged": true, "updated": true, "absent": true}

// run is what one run says about its results: the analyzer, its rules, the URI base ids,
// the artifacts a location may name by index, and how the analyzer's execution ended.
type run struct {
	name, version string
	rules         []rule
	ruleByID      map[string]int
	bases         map[string]artifactLocation
	artifacts     []artifactLocation
	resultCount   int64
	invocations   []invocation
}

type rule struct {
	id, name, level string
	messages        map[string]string
}

type artifactLocation struct {
	URI       *string `json:"uri"`
	URIBaseID *string `json:"uriBaseId"`
	Index     *int64  `json:"index"`
}

type invocation struct {
	ExitCode            *int64 `json:"exitCode"`
	ExecutionSuccessful *bool  `json:"executionSuccessful"`
	Notifications       []struct {
		Level   string `json:"level"`
		Message struct {
			Text string `json:"text"`
		} `json:"message"`
	} `json:"toolExecutionNotifications"`
}

// logMeta is what the first pass learns: the version and every run's metadata.
type logMeta struct {
	version *string
	runs    []*run
}

func newWalker(ctx context.Context, r io.Reader, index int) *walker {
	return &walker{ctx: ctx, dec: jsontext.NewDecoder(bufio.NewReaderSize(r, 64<<10)), index: index}
}

// readMeta is the first pass: it reads the root object and of every run everything
// but its results, which it only counts.
func readMeta(ctx context.Context, r io.Reader, index int) (*logMeta, error) {
	w := newWalker(ctx, r, index)
	m := &logMeta{}
	err := w.object("the root", func(name string) error {
		switch name {
		case "version":
			v, err := w.value()
			if err != nil {
				return err
			}
			var s string
			if json.Unmarshal(v, &s) != nil {
				s = string(v)
			}
			m.version = &s
			return nil
		case "runs":
			return w.array("runs", func(i int) error {
				ru, err := readRun(w, i)
				if err != nil {
					return err
				}
				m.runs = append(m.runs, ru)
				return nil
			})
		}
		return w.skip()
	})
	if err != nil {
		return nil, err
	}
	if err := w.end(); err != nil {
		return nil, err
	}
	if m.version == nil || *m.version != "2.1.0" {
		return nil, &providers.UnsupportedError{Source: index,
			Message: fmt.Sprintf("source %d is not a SARIF 2.1.0 log: its version is %s", index, describeVersion(m.version)),
			Details: map[string]any{"accepted_versions": []string{"2.1.0"}}}
	}
	return m, nil
}

func describeVersion(v *string) string {
	if v == nil {
		return "absent"
	}
	s := *v
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Sprintf("%q", s)
}

func readRun(w *walker, i int) (*run, error) {
	if w.dec.PeekKind() != '{' {
		return nil, w.malformed(fmt.Sprintf("run %d is not an object", i))
	}
	ru := &run{ruleByID: map[string]int{}, bases: map[string]artifactLocation{}}
	where := func(what string) string { return fmt.Sprintf("run %d's %s", i, what) }
	err := w.object(where("value"), func(name string) error {
		switch name {
		case "tool":
			return readTool(w, ru, where)
		case "originalUriBaseIds":
			return w.object(where("originalUriBaseIds"), func(id string) error {
				v, err := w.value()
				if err != nil {
					return err
				}
				var loc artifactLocation
				if json.Unmarshal(v, &loc) != nil {
					return w.malformed(where("originalUriBaseIds entry " + quote(id) + " is not an artifact location"))
				}
				ru.bases[id] = loc
				return nil
			})
		case "artifacts":
			return w.array(where("artifacts"), func(int) error {
				v, err := w.value()
				if err != nil {
					return err
				}
				var a struct {
					Location artifactLocation `json:"location"`
				}
				// An artifact the reader cannot use only leaves a location naming it unresolved.
				_ = json.Unmarshal(v, &a)
				ru.artifacts = append(ru.artifacts, a.Location)
				return nil
			})
		case "invocations":
			return w.array(where("invocations"), func(int) error {
				v, err := w.value()
				if err != nil {
					return err
				}
				var inv invocation
				if json.Unmarshal(v, &inv) != nil {
					return w.malformed(where("invocation is not an invocation object"))
				}
				ru.invocations = append(ru.invocations, inv)
				return nil
			})
		case "results":
			return w.array(where("results"), func(int) error {
				ru.resultCount++
				return w.skip()
			})
		}
		return w.skip()
	})
	return ru, err
}

func readTool(w *walker, ru *run, where func(string) string) error {
	return w.object(where("tool"), func(name string) error {
		if name != "driver" {
			return w.skip()
		}
		return w.object(where("tool driver"), func(name string) error {
			switch name {
			case "name", "version", "semanticVersion":
				v, err := w.value()
				if err != nil {
					return err
				}
				var s string
				if json.Unmarshal(v, &s) != nil {
					return w.malformed(where("tool driver " + name + " is not a string"))
				}
				switch {
				case name == "name":
					ru.name = s
				case name == "version" || ru.version == "":
					ru.version = s
				}
				return nil
			case "rules":
				return w.array(where("rules"), func(int) error {
					v, err := w.value()
					if err != nil {
						return err
					}
					var d struct {
						ID     string `json:"id"`
						Name   string `json:"name"`
						Config struct {
							Level string `json:"level"`
						} `json:"defaultConfiguration"`
						Messages map[string]struct {
							Text string `json:"text"`
						} `json:"messageStrings"`
					}
					// A rule the reader cannot use keeps its place, so indices still resolve.
					_ = json.Unmarshal(v, &d)
					ru.rules = append(ru.rules, rule{id: d.ID, name: d.Name, level: d.Config.Level})
					rr := &ru.rules[len(ru.rules)-1]
					for k, m := range d.Messages {
						if rr.messages == nil {
							rr.messages = map[string]string{}
						}
						rr.messages[k] = m.Text
					}
					if _, dup := ru.ruleByID[d.ID]; !dup && d.ID != "" {
						ru.ruleByID[d.ID] = len(ru.rules) - 1
					}
					return nil
				})
			}
			return w.skip()
		})
	})
}

// sarifResult is what a candidate needs of a SARIF result. A field of the wrong JSON
// type makes the whole result invalid.
type sarifResult struct {
	RuleID    *string `json:"ruleId"`
	RuleIndex *int64  `json:"ruleIndex"`
	Rule      *struct {
		ID            *string         `json:"id"`
		Index         *int64          `json:"index"`
		ToolComponent *jsontext.Value `json:"toolComponent"`
	} `json:"rule"`
	Level   *string `json:"level"`
	Kind    *string `json:"kind"`
	Message *struct {
		Text      *string  `json:"text"`
		Markdown  *string  `json:"markdown"`
		ID        *string  `json:"id"`
		Arguments []string `json:"arguments"`
	} `json:"message"`
	Locations []struct {
		Physical *struct {
			Artifact *artifactLocation `json:"artifactLocation"`
			Region   *struct {
				StartLine   *int64 `json:"startLine"`
				StartColumn *int64 `json:"startColumn"`
				EndLine     *int64 `json:"endLine"`
				EndColumn   *int64 `json:"endColumn"`
			} `json:"region"`
		} `json:"physicalLocation"`
	} `json:"locations"`
	Suppressions []struct {
		Kind   string  `json:"kind"`
		Status *string `json:"status"`
	} `json:"suppressions"`
	BaselineState       *string           `json:"baselineState"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Fingerprints        map[string]string `json:"fingerprints"`
	CodeFlows           []jsontext.Value  `json:"codeFlows"`
	RelatedLocations    []jsontext.Value  `json:"relatedLocations"`
}

// readResults is the second pass: it hands every result of every run, as raw JSON, to
// visit with its run and position.
func readResults(ctx context.Context, r io.Reader, index int, visit func(run, result int, v jsontext.Value) error) error {
	w := newWalker(ctx, r, index)
	return w.object("the root", func(name string) error {
		if name != "runs" {
			return w.skip()
		}
		return w.array("runs", func(ri int) error {
			return w.object("run", func(name string) error {
				if name != "results" {
					return w.skip()
				}
				return w.array("results", func(i int) error {
					v, err := w.value()
					if err != nil {
						return err
					}
					return visit(ri, i, v)
				})
			})
		})
	})
}

// formatMessage fills {n} placeholders from args and reads {{ and }} as literal braces
// (SARIF 3.11.5), stopping at maxMessageBytes.
func formatMessage(s string, args []string) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() <= maxMessageBytes; {
		c := s[i]
		switch {
		case c == '{' && i+1 < len(s) && s[i+1] == '{':
			b.WriteByte('{')
			i += 2
			continue
		case c == '}' && i+1 < len(s) && s[i+1] == '}':
			b.WriteByte('}')
			i += 2
			continue
		case c == '{':
			j := i + 1
			n := 0
			for j < len(s) && s[j] >= '0' && s[j] <= '9' && j-i <= 6 {
				n = n*10 + int(s[j]-'0')
				j++
			}
			if j > i+1 && j < len(s) && s[j] == '}' && n < len(args) {
				b.WriteString(truncate(args[n], maxMessageBytes))
				i = j + 1
				continue
			}
		}
		b.WriteByte(c)
		i++
	}
	return truncate(b.String(), maxMessageBytes)
}

// truncate cuts s to at most n bytes on a rune boundary, marking the cut with "...".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func quote(s string) string { return fmt.Sprintf("%q", truncate(s, 60)) }

// firstValue is the value of the smallest key, for a deterministic fingerprint.
func firstValue(m map[string]string) *string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	v := m[keys[0]]
	return &v
}

// isSARIF reports whether a JSON head looks like a SARIF log.
func isSARIF(head []byte) bool {
	t := bytes.TrimLeft(head, " \t\r\n\ufeff")
	if !bytes.HasPrefix(t, []byte("{")) {
		return false
	}
	if i := bytes.Index(head, []byte(`"$schema"`)); i >= 0 {
		rest := head[i+len(`"$schema"`):]
		if j := bytes.IndexByte(rest, ','); j >= 0 {
			rest = rest[:j]
		}
		if bytes.Contains(bytes.ToLower(rest), []byte("sarif")) {
			return true
		}
	}
	return bytes.Contains(head, []byte(`"runs"`)) && bytes.Contains(head, []byte(`"2.1.0"`)) && bytes.Contains(head, []byte(`"version"`))
}
