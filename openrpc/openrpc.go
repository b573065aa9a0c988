package openrpc

import (
	"fmt"
	"strconv"

	"github.com/peerwire/jsonrpc"
	"github.com/peerwire/jsonrpc/schema"
)

// Version is the OpenRPC version the documents follow.
const Version = "1.3.2"

// Info is what a document says of the server besides its methods.
type Info struct {
	// Title is the server's name; required by OpenRPC: default "JSON-RPC
	// server".
	Title string
	// Version is the version of the server's API; default "0.0.0".
	Version string
	// Description says what the server is for; default none.
	Description string
	// Servers are where the server is reached; default none.
	Servers []Server
}

// Server is one place the server is reached.
type Server struct {
	// Name names the place.
	Name string
	// URL is the place's URL, such as wss://example.com/rpc.
	URL string
}

// Document is an OpenRPC document: its members, which marshal with
// encoding/json (keys sorted).
type Document = map[string]any

// New returns the OpenRPC document of m: the methods it serves, the
// notifications and topics it declares it sends, and info. It fails if a
// method's types have no JSON form (a channel, a function).
func New(m *jsonrpc.Mux, info Info) (Document, error) {
	return build(m, info, false)
}

// build makes m's document; lenient, it describes a method, notification
// or topic whose types have no JSON form as untyped (x-untyped, with
// x-undescribable) instead of failing: what rpc.discover serves when such
// a method is registered after Serve (TestReviewDiscoverSurvivesLateRegister).
func build(m *jsonrpc.Mux, info Info, lenient bool) (Document, error) {
	g := &schema.Generator{RefPrefix: "#/components/schemas/"}
	var methods, sent, topics []any
	for _, mi := range m.Methods() {
		mo, err := method(g, mi)
		if err != nil && lenient {
			mi.Params, mi.Result = nil, nil
			mo, err = method(g, mi)
			mo["x-undescribable"] = true
		}
		if err != nil {
			return nil, err
		}
		methods = append(methods, mo)
	}
	for _, mi := range m.Sent() {
		mo, err := sentMethod(g, mi)
		if err != nil && lenient {
			mo, err = map[string]any{"name": mi.Name, "params": []any{}, "x-params": schema.Schema{}, "x-untyped": true, "x-undescribable": true}, nil
			words(mo, mi.Description)
		}
		if err != nil {
			return nil, err
		}
		sent = append(sent, mo)
	}
	for _, ti := range m.Topics() {
		s, err := g.Schema(ti.Message)
		to := map[string]any{"name": ti.Name, "notification": "topic.message", "message": s}
		if err != nil && lenient {
			to["message"], to["x-untyped"], to["x-undescribable"], err = schema.Schema{}, true, true, nil
		}
		if err != nil {
			return nil, fmt.Errorf("openrpc: topic %q: %w", ti.Name, err)
		}
		words(to, ti.Description)
		topics = append(topics, to)
	}
	doc := Document{"openrpc": Version, "info": infoObject(info), "methods": list(methods)}
	if len(info.Servers) > 0 {
		var servers []any
		for _, s := range info.Servers {
			servers = append(servers, map[string]any{"name": s.Name, "url": s.URL})
		}
		doc["servers"] = servers
	}
	if defs := g.Defs(); len(defs) > 0 {
		doc["components"] = map[string]any{"schemas": defs}
	}
	if sent != nil {
		doc["x-notifications"] = sent
	}
	if topics != nil {
		doc["x-topics"] = topics
	}
	return doc, nil
}

func list(l []any) []any {
	if l == nil {
		return []any{}
	}
	return l
}

func infoObject(info Info) map[string]any {
	o := map[string]any{"title": info.Title, "version": info.Version}
	if info.Title == "" {
		o["title"] = "JSON-RPC server"
	}
	if info.Version == "" {
		o["version"] = "0.0.0"
	}
	if info.Description != "" {
		o["description"] = info.Description
	}
	return o
}

// method makes the method object of mi.
func method(g *schema.Generator, mi jsonrpc.MethodInfo) (map[string]any, error) {
	mo := map[string]any{"name": mi.Name}
	words(mo, mi.Description)
	if mi.Deprecated {
		mo["deprecated"] = true
	}
	if len(mi.Errors) > 0 {
		var errs []any
		data := map[string]any{}
		for _, e := range mi.Errors {
			errs = append(errs, map[string]any{"code": e.Code, "message": e.Message})
			if e.Data != nil {
				s, err := g.Schema(e.Data)
				if err != nil {
					return nil, fmt.Errorf("openrpc: %s: error %d: %w", mi.Name, e.Code, err)
				}
				data[strconv.FormatInt(e.Code, 10)] = s
			}
		}
		mo["errors"] = errs
		if len(data) > 0 {
			mo["x-error-data"] = data // an error object takes no extension
		}
	}
	if mi.Params == nil {
		mo["x-untyped"] = true
		mo["params"] = []any{}
		mo["x-params"] = schema.Schema{}
		mo["result"] = map[string]any{"name": "result", "schema": schema.Schema{}}
		return mo, nil
	}
	mp, err := g.Params(mi.Params)
	if err != nil {
		return nil, fmt.Errorf("openrpc: %s: params: %w", mi.Name, err)
	}
	params := []any{}
	for _, p := range mp.List {
		params = append(params, map[string]any{"name": p.Name, "schema": p.Schema, "required": p.Required})
	}
	mo["params"] = params
	if mp.Structure == "" {
		mo["x-params"] = mp.Schema
	} else {
		mo["paramStructure"] = mp.Structure
	}
	if !mi.Notification {
		s, err := g.Schema(mi.Result)
		if err != nil {
			return nil, fmt.Errorf("openrpc: %s: result: %w", mi.Name, err)
		}
		mo["result"] = map[string]any{"name": "result", "schema": s}
	}
	return mo, nil
}

// sentMethod makes the method object of a notification this side sends:
// its params are what Peer.Notify marshals, the Go value as it is, so
// x-params is the schema of P, and params lists a struct's members by name.
func sentMethod(g *schema.Generator, mi jsonrpc.MethodInfo) (map[string]any, error) {
	mo := map[string]any{"name": mi.Name}
	words(mo, mi.Description)
	if mi.Deprecated {
		mo["deprecated"] = true
	}
	s, err := g.Schema(mi.Params)
	if err != nil {
		return nil, fmt.Errorf("openrpc: %s: params: %w", mi.Name, err)
	}
	mo["x-params"] = s
	params := []any{}
	if mp, err := g.Params(mi.Params); err == nil && (mp.Structure == "by-name" || mp.Structure == "either") {
		for _, p := range mp.List {
			params = append(params, map[string]any{"name": p.Name, "schema": p.Schema, "required": p.Required})
		}
		mo["paramStructure"] = "by-name"
	}
	mo["params"] = params
	return mo, nil
}

// words adds a description's summary and text to an object.
func words(o map[string]any, d jsonrpc.Description) {
	if d.Summary != "" {
		o["summary"] = d.Summary
	}
	if d.Doc != "" {
		o["description"] = d.Doc
	}
}
