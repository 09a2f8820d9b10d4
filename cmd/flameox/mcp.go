package main

import (
	"context"
	"encoding/json"
	"os"
	"sort"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	gen "github.com/flameox/flameox/generated/contracts"
	"github.com/flameox/flameox/internal/ahead"
	"github.com/flameox/flameox/internal/failure"
	"github.com/flameox/flameox/runtime"
)

func newServeCommand() *cobra.Command {
	var limits, sets string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Flameox tools over MCP on stdio",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			defer collectAsServer()()
			// An unknown toolset fails before anything is served.
			sel, f := resolveToolsets(sets, c.Flags().Changed("toolsets"), os.Getenv(toolsetsVariable))
			if f != nil {
				return f
			}
			// A session analyzes and captures again and again: once one analysis has used
			// a worker, the next worker starts ahead of need, and once a capture has run,
			// the next capture's helper (decision 0067, second and fifth addenda).
			rt, err := newRuntime([]byte(limits), runtime.WithSpareWorker(), runtime.WithSpareCaptureHelper())
			if err != nil {
				return err
			}
			defer rt.Close() // the session scratch and the spares disappear with the server
			ctx, stop := ahead.NotifyContext(c.Context())
			defer stop()
			s := newServer(rt, sel)
			s.AddReceivingMiddleware(cancelOnShutdown(ctx))
			err = s.Run(ctx, &lineTransport{in: c.InOrStdin(), out: c.OutOrStdout()})
			if ctx.Err() != nil {
				// A shutdown signal: every in-flight call was cancelled and has unwound.
				return nil
			}
			return err
		},
	}
	cmd.Flags().StringVar(&limits, "limits", "", "RequestLimits JSON: startup ceilings for this server")
	cmd.Flags().StringVar(&sets, "toolsets", "", toolsetsUsage())
	_ = cmd.RegisterFlagCompletionFunc("toolsets", completeWords(toolsetNames))
	return cmd
}

// shutdownSignals end a command that runs work: in-flight work is cancelled, which kills
// its workloads and removes its scratch, before the process exits. Capture, analyze and
// mcp serve set them up through ahead.NotifyContext, which initialization prepared.
var shutdownSignals = ahead.ShutdownSignals

// cancelOnShutdown cancels every in-flight request when shutdown is done. The SDK runs
// handlers on contexts detached from the one Server.Run was given, and closing the session
// waits for them; without this a shutdown would wait for the longest running capture.
func cancelOnShutdown(shutdown context.Context) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(shutdown, cancel)()
			return next(ctx, method, req)
		}
	}
}

// newServer projects the tools of the selected toolsets onto an MCP server. Tools are
// registered with the low-level AddTool so the SDK never validates: the runtime does,
// against the same schema bytes that tools/list publishes. They are registered with
// stand-in schemas (registeredInput): given a json.RawMessage, AddTool decodes each
// schema whole only to check its type, 15 ms and 7 MB for the catalog at every server
// start (issue 36); publishTools puts each tool's exact schemas into the tools/list
// answer, so its bytes are those of Tool.Input and OutputSchema, computed ahead of the
// first list.
func newServer(rt *runtime.Runtime, sel toolsets) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: gen.ServerName, Version: runtime.Version}, &mcp.ServerOptions{
		Instructions: sel.instructions(),
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SetCacheable: func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
			if _, ok := req.(*mcp.ListToolsRequest); ok {
				c.TTLMs = gen.CatalogTTLMillis
				c.CacheScope = gen.CatalogScope
			}
		},
	})
	tools := sel.tools(rt)
	// The first tools/list carries every served tool's published schemas: they are read
	// and written on a goroutine of their own while the server registers its tools and
	// the client initializes (each is computed once; the list waits for any not done).
	go func() {
		for _, t := range tools {
			t.Input()
			t.OutputSchema()
		}
	}()
	served := map[string]servedTool{}
	var names []string
	for i, t := range tools {
		s.AddTool(registeredTool(t), handler(rt, t.Name))
		served[t.Name] = servedTool{rank: i, tool: t}
		names = append(names, t.Name)
	}
	s.AddReceivingMiddleware(publishTools(served), unknownTool(rt, sel, served, names))
	return s
}

// servedTool is a tool the server serves: its place in the catalog and its runtime tool.
type servedTool struct {
	rank int
	tool *runtime.Tool
}

// registeredInput is the input schema every tool is registered with: an object, which
// AddTool accepts without decoding anything. No client sees it (publishTools).
var registeredInput = &jsonschema.Schema{Type: "object"}

// unknownTool answers a call of a tool the server does not serve with the structured
// UNKNOWN_TOOL failure, listing the served tool names (and, for a catalog tool of a
// toolset the server did not load, that toolset), instead of the SDK's protocol error: an
// agent acts on it like on any other failure.
func unknownTool(rt *runtime.Runtime, sel toolsets, tools map[string]servedTool, served []string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if call, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" {
				if _, known := tools[call.Params.Name]; !known {
					f := runtime.UnknownTool(call.Params.Name, served)
					if t, ok := rt.Tool(call.Params.Name); ok {
						f = sel.unloaded(t, served)
					}
					return toolResult(f.Envelope(), true)
				}
			}
			return next(ctx, method, req)
		}
	}
}

// publishTools completes the tools/list answer: each tool as mcpTool makes it, with its
// exact published schemas, in place of the SDK's registered one, and the tools in the catalog's order
// (analysis, capture, lifecycle, each in registry order) rather than the SDK's order by
// name. The catalog fits one tools/list page (the SDK's default page holds 1000 tools),
// so the whole list is in catalog order.
func publishTools(tools map[string]servedTool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if l, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				for i, t := range l.Tools {
					if st, ok := tools[t.Name]; ok {
						l.Tools[i] = mcpTool(st.tool)
					}
				}
				sort.SliceStable(l.Tools, func(i, j int) bool { return tools[l.Tools[i].Name].rank < tools[l.Tools[j].Name].rank })
			}
			return res, err
		}
	}
}

// mcpTool is t's MCP Tool object exactly as tools/list carries it: the registered tool
// with the published schemas (Tool.Input, with the server's ceilings, and the output
// schema).
func mcpTool(t *runtime.Tool) *mcp.Tool {
	m := registeredTool(t)
	m.InputSchema, m.OutputSchema = t.Input(), t.OutputSchema()
	return m
}

// registeredTool is t as the server registers it: name, title, description and
// annotations, with the stand-in input schema and no output schema (publishTools).
func registeredTool(t *runtime.Tool) *mcp.Tool {
	a := &mcp.ToolAnnotations{
		Title:           t.Title,
		ReadOnlyHint:    t.Annotations.ReadOnlyHint,
		IdempotentHint:  t.Annotations.IdempotentHint,
		DestructiveHint: t.Annotations.DestructiveHint,
		OpenWorldHint:   &t.Annotations.OpenWorldHint,
	}
	return &mcp.Tool{
		Name:        t.Name,
		Title:       t.Title,
		Description: t.Description,
		InputSchema: registeredInput,
		Annotations: a,
	}
}

func handler(rt *runtime.Runtime, name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if token := req.Params.GetProgressToken(); token != nil {
			ctx = runtime.WithProgress(ctx, func(done, total float64, message string) {
				// Progress is best effort; a failed notification never fails the work.
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: done, Total: total, Message: message})
			})
		}
		res, f := rt.Call(ctx, name, req.Params.Arguments)
		if f != nil {
			if f.Code == gen.FailureCodeCancelled && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if r, ok := f.Recoverable(); ok {
				// Unavailable and retryable are product states, not tool errors.
				return toolResult(r, false)
			}
			return toolResult(f.Envelope(), true)
		}
		return toolResult(res, false)
	}
}

// toolResult returns the complete JSON in one text block and the same object as
// structuredContent.
func toolResult(v any, isError bool) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(failure.Unencodable(err).Envelope())
		isError = true
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
		IsError:           isError,
	}, nil
}
