package testutil

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

// recorder is a testing.TB that records the failure of a helper. Its
// Fatalf ends the goroutine, as the real one does, and Errorf does not;
// any other method panics.
type recorder struct {
	testing.TB
	failure string
	failed  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.failure = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed, r.failure = true, fmt.Sprintf(format, args...)
}

// run runs wait with a recorder on a goroutine of its own.
func run(wait func(testing.TB)) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		wait(r)
	}()
	<-done
	return r
}

func TestUntil(t *testing.T) {
	t.Parallel()
	short := Poll{Limit: 20 * time.Millisecond, Every: time.Millisecond}
	// roomy holds a condition met on its fifth call whatever the load on
	// the machine; short only ever times out.
	roomy := Poll{Limit: time.Minute, Every: time.Millisecond}
	tests := []struct {
		name      string
		holdsFrom int // the call from which cond holds; 0: never
		poll      Poll
		calls     int    // want this many calls (0: at least one)
		failure   string // want this failure ("": none)
	}{
		{name: "holds at once", holdsFrom: 1, calls: 1},
		{name: "holds on the fifth call", holdsFrom: 5, calls: 5},
		{name: "holds on the fifth call within the limit", holdsFrom: 5, poll: roomy, calls: 5},
		{name: "never holds", poll: short, failure: "gave up after 20ms waiting for task t1 to be done"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			cond := func() bool {
				calls++
				return tc.holdsFrom > 0 && calls >= tc.holdsFrom
			}
			r := run(func(tb testing.TB) { tc.poll.Until(tb, cond, "task %s to be %s", "t1", "done") })
			if tc.calls > 0 && calls != tc.calls {
				t.Errorf("cond called %d times, want %d", calls, tc.calls)
			}
			if calls == 0 {
				t.Error("cond never called")
			}
			if r.failed != (tc.failure != "") || r.failure != tc.failure {
				t.Errorf("failure %q (failed: %v), want %q", r.failure, r.failed, tc.failure)
			}
		})
	}
}

// The lazy argument shows the count at the end: more than one call.
func TestUntilFormatsAtTheEnd(t *testing.T) {
	t.Parallel()
	calls := 0
	r := run(func(tb testing.TB) {
		Poll{Limit: 10 * time.Millisecond, Every: time.Millisecond}.Until(tb, func() bool { calls++; return false },
			"a miracle after %s calls", Lazy(func() string { return fmt.Sprint(calls) }))
	})
	want := fmt.Sprintf("gave up after 10ms waiting for a miracle after %d calls", calls)
	if calls < 2 || r.failure != want {
		t.Errorf("after %d calls, failure %q, want %q", calls, r.failure, want)
	}
}

func TestEventually(t *testing.T) {
	t.Parallel()
	calls := 0
	r := run(func(tb testing.TB) { Eventually(tb, func() bool { calls++; return calls == 3 }, "the third call") })
	if r.failed || calls != 3 {
		t.Errorf("failed %v (%s) after %d calls, want success after 3", r.failed, r.failure, calls)
	}
}

func TestGrow(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	pause := ms
	var got []time.Duration
	for range 6 {
		got = append(got, pause)
		pause = grow(pause, 10*ms)
	}
	want := []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 10 * ms, 10 * ms}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("pauses %v, want %v", got, want)
	}
}
