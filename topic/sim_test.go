package topic_test

// TestTopicSim is a seeded, randomized simulation of topics under faults,
// the sibling of the root package's TestSim: each run draws from its seed
// a whole plan (sim_plan_test.go), executes it step by step in a
// testing/synctest bubble (sim_run_test.go, sim_store_test.go) and holds
// it to invariants after every step (sim_check_test.go).
//
// A plan is a Hub on in-memory logs (tsimStore, whose logs can start a new
// epoch under the Hub, as a JetStream stream deleted and made again), 1-4
// topics, 1-4 clients with a Follower each over a jsonrpc.Pipe, and 30-150
// steps: publish, subscribe, unsubscribe (a quarter of them overlapping
// the next step), drop a connection from either side, reconnect (a
// Resubscribe, failing which the connection is dropped, as a ws.Client's
// OnConnect), a new epoch, a client that blocks while a burst is
// published (dropped as a slow consumer when its queue fills), time
// passing (histories age out, quiet topics are released), and Allow
// refusing a topic or letting it through again. Bounds are often small:
// MaxQueue 2-16, MaxReplyMessages 1-8 (paged catch-ups), a history of a
// few messages, MaxAge 1-30 s, MaxConnTopics and MaxTopics below the
// topics' number, Follower.MaxBuffered 1-8.
//
// Running it:
//
//	go test -race -run TestTopicSim ./topic                            # about 10 s, fresh seeds
//	go test -race -run TestTopicSim ./topic -topicsim.duration=10m     # longer
//	go test -race -run TestTopicSim ./topic -topicsim.seed=N -v        # replay seed N, with its summary
//	go test -race -run TestTopicSim ./topic -topicsim.seed=N -topicsim.plan -v # and its plan, step by step
//
// (The package comes before the -topicsim flags: go test passes what
// follows a flag it does not know to the test binary.)
//
// A failing run reports its seed and the line that replays it: the same
// plan, though not necessarily the same goroutine schedule. A run that
// hangs is ended by synctest's deadlock panic, under the subtest that
// names the seed.

import (
	"flag"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var (
	tsimSeed     = flag.Uint64("topicsim.seed", 0, "replay this seed only")
	tsimRuns     = flag.Int("topicsim.runs", 0, "stop after this many runs (0: as many as -topicsim.duration allows)")
	tsimDuration = flag.Duration("topicsim.duration", 10*time.Second, "start no run after this much time (-short: a tenth)")
	tsimMaxFail  = flag.Int("topicsim.maxfail", 5, "stop after this many failed runs")
	tsimShowPlan = flag.Bool("topicsim.plan", false, "log each run's plan, step by step (with -topicsim.seed)")
)

func TestTopicSim(t *testing.T) {
	if *tsimSeed != 0 {
		tsimOne(t, *tsimSeed)
		return
	}
	budget := *tsimDuration
	if testing.Short() {
		budget /= 10
	}
	base := uint64(time.Now().UnixNano()) &^ 0xffff
	t.Logf("seeds from %d", base)
	start := time.Now()
	runs, failed := 0, 0
	for seed := base; time.Since(start) < budget && (*tsimRuns == 0 || runs < *tsimRuns); seed++ {
		runs++
		if !tsimOne(t, seed) {
			failed++
		}
		if failed >= *tsimMaxFail {
			t.Logf("stopping after %d failed runs", failed)
			break
		}
	}
	t.Logf("%d runs in %v, %d failed; in all: %v", runs, time.Since(start).Round(time.Millisecond), failed, tsimTotals)
}

// tsimTotals sums the runs' counts, for TestTopicSim's last line.
var tsimTotals = map[string]int{}

// tsimOne runs seed as a subtest and reports whether it passed.
func tsimOne(t *testing.T, seed uint64) bool {
	plan := tsimGenerate(seed)
	return t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
		if *tsimShowPlan {
			t.Log(plan.describe())
		}
		var w *tsimWorld
		synctest.Test(t, func(*testing.T) {
			w = newTsimWorld(plan)
			w.run()
		})
		t.Logf("%v: %s", plan, w.summary())
		for k, v := range w.stats {
			tsimTotals[k] += v
		}
		if len(w.violations) > 0 {
			t.Fatalf("seed %d:\n\t%s\nreplay: go test -race -run TestTopicSim ./topic -topicsim.seed=%d -topicsim.plan -v",
				seed, strings.Join(w.violations, "\n\t"), seed)
		}
	})
}
