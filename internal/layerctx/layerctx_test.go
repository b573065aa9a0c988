package layerctx

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type key string

// TestOverLooksInTopThenUnder: a key top holds comes from top, one only
// under holds from under; neither's cancellation is carried.
func TestOverLooksInTopThenUnder(t *testing.T) {
	under := context.WithValue(context.WithValue(context.Background(), key("a"), "under-a"), key("b"), "under-b")
	top, cancel := context.WithTimeout(context.WithValue(context.Background(), key("a"), "top-a"), time.Hour)
	cancel()
	ctx := context.WithValue(Over(top, under), key("c"), "c")
	for k, want := range map[key]string{"a": "top-a", "b": "under-b", "c": "c"} {
		if got, _ := ctx.Value(k).(string); got != want {
			t.Errorf("Value(%q) = %q, want %q", k, got, want)
		}
	}
	if ctx.Value(key("none")) != nil {
		t.Error("a key neither holds has a value")
	}
	if ctx.Err() != nil || ctx.Done() != nil {
		t.Errorf("the layered context carries top's cancellation: %v", ctx.Err())
	}
	if _, ok := ctx.Deadline(); ok {
		t.Error("the layered context carries top's deadline")
	}
	if got, _ := Over(top, nil).Value(key("a")).(string); got != "top-a" {
		t.Errorf("Over(top, nil) lost top's value: %q", got)
	}
}
