package otel

import (
	"context"

	"github.com/peerwire/jsonrpc/ws"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// CountReconnects returns a ws.ClientOptions.OnState that counts the
// Client's attempts to connect again in peerwire.jsonrpc.reconnect.attempts,
// then calls next (nil: nothing more). The Client tells OnState when a
// connection ends and after each failed attempt, and makes another attempt
// after each of these (unless it is closed meanwhile): each adds one. The
// first attempt is not counted; a give-up (Closed) adds nothing.
//
//	ws.NewClient(url, ws.ClientOptions{OnState: tel.CountReconnects(nil)})
func (t *Telemetry) CountReconnects(next func(ws.State, error)) func(ws.State, error) {
	set := metric.WithAttributeSet(attribute.NewSet(attrSystem))
	return func(s ws.State, cause error) {
		if s == ws.Connecting || s == ws.Reconnecting {
			t.state.reconnects.Add(context.Background(), 1, set)
		}
		if next != nil {
			next(s, cause)
		}
	}
}
