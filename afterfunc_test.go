package jsonrpc

import (
	"testing"
	"time"
)

// TestAfterFunc: f runs once the connection has ended, after Done; stop
// before the end prevents it and reports true; AfterFunc on an ended Peer
// runs f at once.
func TestAfterFunc(t *testing.T) {
	a, _ := newPair(t, nil, nil, nil, nil)
	ran := make(chan bool, 1)
	afterDone := func() {
		select {
		case <-a.Done():
			ran <- true
		default:
			ran <- false
		}
	}
	stopped := make(chan struct{}, 1)
	stop := a.AfterFunc(func() { stopped <- struct{}{} })
	if !stop() {
		t.Fatal("stop before the end reported false")
	}
	if stop() {
		t.Fatal("a second stop reported true")
	}
	stop2 := a.AfterFunc(afterDone)
	a.Close()
	select {
	case wasDone := <-ran:
		if !wasDone {
			t.Error("f ran before Done was closed")
		}
	case <-time.After(wait):
		t.Fatal("f did not run after the end")
	}
	if stop2() {
		t.Error("stop after f ran reported true")
	}
	select {
	case <-stopped:
		t.Error("a stopped f ran")
	default:
	}
	late := make(chan struct{})
	a.AfterFunc(func() { close(late) })
	select {
	case <-late:
	case <-time.After(wait):
		t.Fatal("AfterFunc on an ended Peer did not run f")
	}
}

// TestGroupRemoveForgetsMember: adding a Peer to a Group and removing it,
// over and over, leaves no end hook behind (they would pile up for a
// long-lived connection that joins and leaves topics).
func TestGroupRemoveForgetsMember(t *testing.T) {
	a, _ := newPair(t, nil, nil, nil, nil)
	var g Group
	for range 1000 {
		g.Add(a)
		g.Remove(a)
	}
	a.mu.Lock()
	n := len(a.endHooks)
	a.mu.Unlock()
	if n != 0 {
		t.Errorf("%d end hooks left after 1000 Add/Remove", n)
	}
	g.Add(a)
	a.Close()
	deadline := time.Now().Add(wait)
	for g.Len() != 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if g.Len() != 0 {
		t.Error("a Peer whose connection ended is still a member")
	}
}
