package jsonrpc

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// A Mux describes its methods from what it was given: Register and
// RegisterNotification keep the Go types of params and result; Describe
// adds what only the user knows (a summary, the errors a method returns);
// DescribeCall and DescribeNotification type a method registered with
// Handle; DescribeSent and DescribeTopic declare what this side sends. None of it is consulted on
// the way of a request: a Mux that is never asked pays only the memory of
// its descriptions, kept beside its handlers.

// MethodInfo describes one method: one the Mux serves (Mux.Methods) or one
// this side sends as a notification (Mux.Sent).
type MethodInfo struct {
	// Name is the method's name.
	Name string
	// Params is the Go type that params decode into (as Typed decodes
	// them), or nil if the method is untyped: registered with Handle and
	// not given types by DescribeCall or DescribeNotification. Untyped
	// methods are described as such and never guessed at.
	Params reflect.Type
	// Result is the Go type of the result, or nil for a notification and
	// for an untyped method.
	Result reflect.Type
	// Notification is true for a method registered with
	// RegisterNotification or described by DescribeNotification, and for
	// every method DescribeSent declares: it expects no reply.
	Notification bool
	Description
}

// Description is what a user adds to a method's description (Mux.Describe,
// DescribeCall, DescribeNotification, DescribeSent) or a topic's
// (DescribeTopic). Its zero value adds nothing.
type Description struct {
	// Summary is a short line saying what the method does.
	Summary string
	// Doc is the longer description (CommonMark, as OpenRPC reads it).
	Doc string
	// Errors are the errors the method may return, beyond the standard
	// ones every method may get.
	Errors []ErrorInfo
	// Deprecated marks a method that clients should stop using.
	Deprecated bool
}

// ErrorInfo describes an error a method may return.
type ErrorInfo struct {
	// Code is the error's code.
	Code int64
	// Message is the error's message, as the method sends it.
	Message string
	// Data is the Go type of the error's data, or nil for none.
	Data reflect.Type
}

// TopicInfo describes a topic whose messages this side sends (as
// topic.message notifications, see package topic).
type TopicInfo struct {
	// Name is the topic's name.
	Name string
	// Message is the Go type of the topic's messages (Message.Data).
	Message reflect.Type
	Description
}

// describer is a Mux's record of its descriptions, guarded by the Mux's
// mutex; nothing on the way of a request reads it.
type describer struct {
	methods map[string]*MethodInfo
	sent    map[string]*MethodInfo
	topics  map[string]*TopicInfo
}

// typed registers h for method, as Handle does, with its types.
func (m *Mux) typed(method string, h Handler, params, result reflect.Type, notification bool) {
	m.Handle(method, h)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.Add(1)
	info := m.info(method)
	info.Params, info.Result, info.Notification = params, result, notification
}

// info returns method's record, made on first use; m.mu is held.
func (m *Mux) info(method string) *MethodInfo {
	if m.desc.methods == nil {
		m.desc.methods = make(map[string]*MethodInfo)
	}
	info := m.desc.methods[method]
	if info == nil {
		info = &MethodInfo{Name: method}
		m.desc.methods[method] = info
	}
	return info
}

// registered returns the record of method, which must be registered; m.mu
// is held.
func (m *Mux) registered(method, by string) *MethodInfo {
	if _, ok := m.methods[method]; !ok {
		panic(fmt.Sprintf("jsonrpc: %s of %q, a method not registered", by, method))
	}
	return m.info(method)
}

// Describe sets the description of method, which must be registered
// already (it panics otherwise, as Handle does on a programmer's mistake).
func (m *Mux) Describe(method string, d Description) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.Add(1)
	m.registered(method, "Describe").Description = d
}

// DescribeCall gives method, a call registered with Handle, its types:
// params decoded as P, result R; and sets its description to d. It panics
// if method is not registered or has types already (Register gave them).
func DescribeCall[P, R any](m *Mux, method string, d Description) {
	m.describeTypes(method, reflect.TypeFor[P](), reflect.TypeFor[R](), false, d)
}

// DescribeNotification gives method, a notification registered with
// Handle, its params' type P; and sets its description to d. It panics as
// DescribeCall does.
func DescribeNotification[P any](m *Mux, method string, d Description) {
	m.describeTypes(method, reflect.TypeFor[P](), nil, true, d)
}

func (m *Mux) describeTypes(method string, params, result reflect.Type, notification bool, d Description) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.Add(1)
	info := m.registered(method, "DescribeCall")
	if info.Params != nil {
		panic(fmt.Sprintf("jsonrpc: %q has its types already", method))
	}
	info.Params, info.Result, info.Notification, info.Description = params, result, notification, d
}

// DescribeSent declares that this side sends the notification method with
// params P (a server's push), so that descriptions of m (package openrpc,
// openrpc/jsonrpc-ts) include it. It panics if method is declared twice or
// begins with "rpc.". It declares only: sending is Peer.Notify's.
func DescribeSent[P any](m *Mux, method string, d Description) {
	checkName(method)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.Add(1)
	if _, dup := m.desc.sent[method]; dup {
		panic(fmt.Sprintf("jsonrpc: sent notification %q declared twice", method))
	}
	if m.desc.sent == nil {
		m.desc.sent = make(map[string]*MethodInfo)
	}
	m.desc.sent[method] = &MethodInfo{Name: method, Params: reflect.TypeFor[P](), Notification: true, Description: d}
}

// DescribeTopic declares that this side publishes the topic name with
// messages of type T (each sent as a topic.message notification whose
// data is a T), so that descriptions of m include it. It panics if the
// topic is declared twice or name is empty.
func DescribeTopic[T any](m *Mux, name string, d Description) {
	checkName(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen.Add(1)
	if _, dup := m.desc.topics[name]; dup {
		panic(fmt.Sprintf("jsonrpc: topic %q declared twice", name))
	}
	if m.desc.topics == nil {
		m.desc.topics = make(map[string]*TopicInfo)
	}
	m.desc.topics[name] = &TopicInfo{Name: name, Message: reflect.TypeFor[T](), Description: d}
}

// checkName refuses a reserved or empty name.
func checkName(name string) {
	switch {
	case strings.HasPrefix(name, "rpc."):
		panic(fmt.Errorf("%w: %q", ErrReservedMethod, name))
	case name == "":
		panic("jsonrpc: empty method name")
	}
}

// Generation returns a number that changes whenever m does: a method
// registered, described or declared (Handle, Register, Describe,
// DescribeSent, DescribeTopic...). A description of m made after a call
// that returned g is current as long as Generation returns g, which is
// how rpc.discover (package openrpc) makes its document once, not per
// request (TestReviewDiscoverCostPerCall).
func (m *Mux) Generation() uint64 { return m.gen.Load() }

// Methods returns the description of every method m serves, sorted by
// name: typed ones with their Go types, untyped ones (registered with
// Handle, not given types by Describe) with nil Params and Result.
// rpc.discover (HandleDiscover) is not among them: it describes the rest.
func (m *Mux) Methods() []MethodInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]MethodInfo, 0, len(m.methods))
	for name := range m.methods {
		if name == MethodDiscover {
			continue
		}
		if info := m.desc.methods[name]; info != nil {
			out = append(out, *info)
		} else {
			out = append(out, MethodInfo{Name: name})
		}
	}
	slices.SortFunc(out, func(a, b MethodInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Sent returns the notifications declared with DescribeSent, sorted by name.
func (m *Mux) Sent() []MethodInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return sortedByName(m.desc.sent)
}

// Topics returns the topics declared with DescribeTopic, sorted by name.
func (m *Mux) Topics() []TopicInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return sortedByName(m.desc.topics)
}

// sortedByName returns copies of infos' values, sorted by their keys (each
// info's name).
func sortedByName[T any](infos map[string]*T) []T {
	names := slices.Sorted(maps.Keys(infos))
	out := make([]T, 0, len(names))
	for _, name := range names {
		out = append(out, *infos[name])
	}
	return out
}
