package worker

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/control"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/memstore"
)

var errBucketDown = errors.New("injected: connection refused")

// downStore fails every request while down is set (the S3 server gone).
type downStore struct {
	store.Store
	down atomic.Bool
}

func (d *downStore) fail() error {
	if d.down.Load() {
		return errBucketDown
	}
	return nil
}

func (d *downStore) Get(ctx context.Context, key string) (*store.Object, error) {
	if err := d.fail(); err != nil {
		return nil, err
	}
	return d.Store.Get(ctx, key)
}

func (d *downStore) GetVersion(ctx context.Context, key, versionID string) (*store.Object, error) {
	if err := d.fail(); err != nil {
		return nil, err
	}
	return d.Store.GetVersion(ctx, key, versionID)
}

func (d *downStore) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	if err := d.fail(); err != nil {
		return store.PutResult{}, err
	}
	return d.Store.Put(ctx, key, body, cond)
}

func (d *downStore) Delete(ctx context.Context, key string, cond store.Condition) error {
	if err := d.fail(); err != nil {
		return err
	}
	return d.Store.Delete(ctx, key, cond)
}

func (d *downStore) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	if err := d.fail(); err != nil {
		return store.ListPage{}, err
	}
	return d.Store.List(ctx, p)
}

func (d *downStore) ListVersions(ctx context.Context, key string) ([]store.Version, error) {
	if err := d.fail(); err != nil {
		return nil, err
	}
	return d.Store.ListVersions(ctx, key)
}

// downSetup is a bundle on a fake clock whose store can be taken down.
func downSetup(t *testing.T) (*bundle, *downStore) {
	t.Helper()
	ctx := context.Background()
	fake := newFakeClock()
	ds := &downStore{Store: memstore.New(memstore.WithClock(fake))} // the queue's clock, see setup
	_, err := queue.Init(ctx, ds, 1)
	require.NoError(t, err)
	bd := &bundle{s: ds, fake: fake}
	bd.clock = bd.fake
	bd.q, err = queue.Open(ctx, ds, queue.Options{Logger: testLogger(t), Clock: bd.fake})
	require.NoError(t, err)
	return bd, ds
}

// waitReady waits until the worker's readiness is want with a reason
// starting with prefix, and returns it.
func waitReady(t *testing.T, w *Worker, want bool, prefix string) Readiness {
	t.Helper()
	var last Readiness
	testutil.Eventually(t, func() bool {
		last = w.Readiness()
		return last.Ready == want && strings.HasPrefix(last.Reason, prefix)
	}, "readiness %v %q (last: %+v)", want, prefix, &last)
	return last
}

// A worker is not ready before it registers, ready while it claims, not
// ready while the bucket cannot be reached (at once when a poll fails,
// and once no heartbeat has landed for ReadyBound), ready again once it
// can, and not ready from the start of its shutdown on.
func TestReadyLifecycle(t *testing.T) {
	t.Parallel()
	bd, ds := downSetup(t)
	o := bd.opts(t)
	o.PollMax = 5 * time.Millisecond
	w := New(bd.q, o)
	blk := newBlocker(true)
	w.Handle("block", blk.handle)

	ok, reason := w.Ready()
	require.False(t, ok)
	require.Equal(t, "starting: not registered yet", reason)

	r := start(t, w)
	waitReady(t, w, true, "claiming")

	ds.down.Store(true)
	got := waitReady(t, w, false, "poll failing: ")
	require.Contains(t, got.Reason, errBucketDown.Error())
	require.Equal(t, bd.fake.Now(), got.Since, "since the first failed poll")

	beat := time.Unix(0, w.lastBeat.Load())
	bd.fake.Advance(w.ReadyBound())
	got = waitReady(t, w, false, "bucket unreachable: no heartbeat has landed for ")
	require.Equal(t, beat.UnixNano(), got.Since.UnixNano(), "since the last heartbeat that landed")
	testutil.Eventually(t, func() bool { return strings.Contains(w.Readiness().Reason, errBucketDown.Error()) }, "the heartbeat's error in the reason")

	ds.down.Store(false)
	waitReady(t, w, true, "claiming")

	task := bd.submit(t, "block", `{}`, timeout(time.Hour))
	blk.waitStarted(t)
	r.cancel()
	got = waitReady(t, w, false, "shutting down: 1 running tasks")
	require.Equal(t, bd.fake.Now(), got.Since)
	close(blk.release)
	require.NoError(t, r.stop(t))
	bd.waitStatus(t, task.ID, queue.StatusCompleted)
	ok, reason = w.Ready()
	require.False(t, ok)
	require.Equal(t, "stopped", reason)
}

// A worker that cannot register never becomes ready.
func TestReadyRegistrationFails(t *testing.T) {
	t.Parallel()
	bd, ds := downSetup(t)
	w := New(bd.q, bd.opts(t))
	w.Handle("echo", echoHandler)
	ds.down.Store(true)
	require.ErrorIs(t, w.Run(context.Background()), errBucketDown)
	ok, reason := w.Ready()
	require.False(t, ok)
	require.Equal(t, "stopped", reason)
}

// A worker with every served type paused is ready (deliberately idle);
// one with some of its types paused still claims the others.
func TestReadyPaused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		pause  []string // "" pauses the whole queue
		prefix string
	}{
		{name: "queue", pause: []string{""}, prefix: "paused: not claiming any task (the whole queue is paused: maintenance)"},
		{name: "every type", pause: []string{"a", "b"}, prefix: "paused: not claiming a: maintenance, b: maintenance"},
		{name: "one type", pause: []string{"a"}, prefix: "claiming"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			bd, _ := downSetup(t)
			for _, typ := range tc.pause {
				_, err := control.Pause(ctx, bd.q, typ, "maintenance")
				require.NoError(t, err)
			}
			o := bd.opts(t)
			o.ControlRefresh = time.Nanosecond
			w := New(bd.q, o)
			w.Handle("a", echoHandler)
			w.Handle("b", echoHandler)
			// The switches are read once a listing finds something to
			// claim.
			bd.submit(t, "a", `{}`)
			bd.submit(t, "b", `{}`)
			r := start(t, w)
			waitReady(t, w, true, tc.prefix)
			require.NoError(t, r.stop(t))
		})
	}
}
