module github.com/peerwire/jsonrpc

go 1.26.0

require (
	github.com/coder/websocket v1.8.15
	github.com/go-json-experiment/json v1.27.2
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.25.0
)

require golang.org/x/text v0.14.0 // indirect
