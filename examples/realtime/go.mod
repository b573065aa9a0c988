module github.com/peerwire/jsonrpc/examples/realtime

go 1.26.0

require (
	github.com/peerwire/jsonrpc v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/go-json-experiment/json v1.27.2 // indirect
	golang.org/x/sync v0.25.0 // indirect
)

replace github.com/peerwire/jsonrpc => ../..
