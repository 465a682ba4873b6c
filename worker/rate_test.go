package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store/memstore"
	"github.com/qo-queue/qo/store/storetest"
)

// A fleet-wide rate limit holds over 1 and 8 workers, measured from the
// handlers' own start times: no window of a second holds more than the
// rate plus the burst (each worker's bucket holds at least one token, so
// plus one per worker), and the start rate over the run is not above the
// limit, nor far below it, while a backlog is pending.
func TestFleetRateLimit(t *testing.T) {
	t.Parallel()
	for _, workers := range []int{1, 8} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			t.Parallel()
			const perSec, burst, tasks, measured = 40, 4, 320, 160
			ctx := context.Background()
			base := memstore.New()
			_, err := queue.Init(ctx, base, 1)
			require.NoError(t, err)
			q, err := queue.Open(ctx, base, queue.Options{Logger: testLogger(t)})
			require.NoError(t, err)
			_, err = control.SetRate(ctx, q, "rated", perSec, time.Second, burst)
			require.NoError(t, err)
			bd := &bundle{s: base, q: q}
			for i := range tasks {
				bd.submit(t, "rated", fmt.Sprint(i))
			}
			var mu sync.Mutex
			var starts []time.Time
			var done atomic.Int64
			for range workers {
				o := bd.opts(t)
				o.Concurrency = 8
				w := New(q, o)
				w.Handle("rated", func(context.Context, *queue.Task) (json.RawMessage, error) {
					mu.Lock()
					starts = append(starts, time.Now())
					mu.Unlock()
					done.Add(1)
					return nil, nil
				})
				start(t, w)
			}
			// Measured while a backlog is pending (the tail, where fewer
			// entries than workers are left, is not the limit's doing).
			testutil.Eventually(t, func() bool { return done.Load() >= measured }, "tasks to run")
			mu.Lock()
			defer mu.Unlock()
			slices.SortFunc(starts, func(a, b time.Time) int { return a.Compare(b) })
			starts = starts[:measured]
			most := 0
			for i, s := range starts {
				j, _ := slices.BinarySearchFunc(starts, s.Add(time.Second), func(a, b time.Time) int { return a.Compare(b) })
				most = max(most, j-i)
			}
			span := starts[len(starts)-1].Sub(starts[0]).Seconds()
			got := float64(len(starts)-1) / span
			per := map[int]int{}
			for _, s := range starts {
				per[int(s.Sub(starts[0]).Seconds())]++
			}
			t.Logf("per second: %v", per)
			t.Logf("%d workers: most starts in a second %d, %.1f starts/s over %.2fs", workers, most, got, span)
			require.LessOrEqual(t, most, perSec+burst+workers, "starts in a window of a second")
			// Never faster than the limit; slower only by what a busy
			// machine costs (worker/sim TestRatePrecision holds the rate
			// to 10% in simulated time, where no load can slow it).
			require.LessOrEqual(t, got, perSec*1.1, "start rate over the run")
			require.GreaterOrEqual(t, got, perSec*0.5, "start rate: the limit throttles far below itself")
		})
	}
}

// A rate limit costs nothing per task: a worker running 200 rated tasks
// reads and writes the registry and control.json a few times in all.
func TestFleetRateCostsNoRequestPerTask(t *testing.T) {
	t.Parallel()
	limitCostsNoRequestPerTask(t, "rated", func(ctx context.Context, q *queue.Queue) error {
		_, err := control.SetRate(ctx, q, "rated", 200, time.Second, 0)
		return err
	})
}

// The bucket follows the usable share: nothing while the share is
// nothing, share/60 starts a second with its part of the burst after.
func TestRateBucketFollowsShare(t *testing.T) {
	t.Parallel()
	clk := storetest.NewClock(time.Unix(1_000_000, 0))
	w := &Worker{clock: clk, types: []string{"rated"}, claiming: map[string]int{}}
	ctl := queue.Control{Limits: map[string]queue.Limit{"rated": {Rate: 10, Per: "s", Burst: 4}}}
	limits := map[string]int{}
	w.caps.bursts = w.rateLimits(ctl, limits)
	w.caps.limits = limits
	require.Equal(t, 600, limits[rateKey("rated")])
	require.False(t, w.rateAdmits("rated"), "no share yet")
	w.caps.usable = map[string]int{rateKey("rated"): 300} // half the rate: 5/s, burst 2
	require.True(t, w.rateAdmits("rated"))
	require.True(t, w.rateAdmits("rated"))
	require.False(t, w.rateAdmits("rated"), "burst spent")
	clk.Advance(200 * time.Millisecond)
	require.True(t, w.rateAdmits("rated"), "one token after 1/5 s")
	require.False(t, w.rateAdmits("rated"))
	require.True(t, w.rateAdmits("other"), "a type without a rate limit")

	// A claim that started nothing gives its token back, the saved
	// tokens staying within the bucket's burst.
	w.unclaimRated("rated")
	w.unclaimRated("rated")
	w.unclaimRated("rated")
	require.True(t, w.rateReady("rated"))
	require.True(t, w.rateAdmits("rated"))
	require.True(t, w.rateAdmits("rated"))
	require.False(t, w.rateAdmits("rated"), "no more than the burst saved")

	// A smaller share slows the bucket at once.
	w.caps.usable[rateKey("rated")] = 60 // 1/s
	require.False(t, w.rateReady("rated"))
	clk.Advance(200 * time.Millisecond)
	require.False(t, w.rateAdmits("rated"), "a fifth of a token")
	clk.Advance(800 * time.Millisecond)
	require.True(t, w.rateAdmits("rated"))
	w.caps.usable[rateKey("rated")] = 0
	clk.Advance(time.Hour)
	require.False(t, w.rateAdmits("rated"), "no share: no claim")
}

// The dispatcher learns when an empty bucket's next token is due, so a
// bucket of one token does not sit full until the next poll; a bucket
// with a token, or with no share, waits on nothing.
func TestRateWaitIsTheNextToken(t *testing.T) {
	t.Parallel()
	clk := storetest.NewClock(time.Unix(1_000_000, 0))
	w := &Worker{clock: clk, types: []string{"rated", "free"}, claiming: map[string]int{}}
	ctl := queue.Control{Limits: map[string]queue.Limit{"rated": {Rate: 20, Per: "s", Burst: 10}}}
	limits := map[string]int{}
	w.caps.bursts = w.rateLimits(ctl, limits)
	w.caps.limits = limits
	_, ok := w.rateWait()
	require.False(t, ok, "no share: no token to wait for")
	w.caps.usable = map[string]int{rateKey("rated"): 150} // an eighth: 2.5/s, one token
	_, ok = w.rateWait()
	require.False(t, ok, "a token in hand")
	require.True(t, w.rateAdmits("rated"))
	d, ok := w.rateWait()
	require.True(t, ok)
	require.Equal(t, 401*time.Millisecond, d, "the next token in 1/2.5 s (rounded up)")
	clk.Advance(300 * time.Millisecond)
	d, _ = w.rateWait()
	require.Equal(t, 101*time.Millisecond, d)
	clk.Advance(d)
	_, ok = w.rateWait()
	require.False(t, ok)
	require.True(t, w.rateAdmits("rated"), "the token is there on waking")
}
