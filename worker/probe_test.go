package worker

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/internal/testutil"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/doctor"
	"github.com/qo-queue/qo/store/storetest"
)

// ignoresConditions is a server that accepts conditional writes it should
// refuse (s3rver, rclone serve s3 and fauxqs do).
type ignoresConditions struct {
	store.Store
	ifNoneMatch, ifMatch bool
}

func (s ignoresConditions) Put(ctx context.Context, key string, body []byte, cond store.Condition) (store.PutResult, error) {
	if s.ifNoneMatch {
		cond.IfNoneMatch = false
	}
	if s.ifMatch {
		cond.IfMatch = ""
	}
	return s.Store.Put(ctx, key, body, cond)
}

// A worker refuses to start on a server that ignores conditional writes:
// it claims nothing and does not register.
func TestRunRefusesAServerIgnoringConditions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		wrap   ignoresConditions
		detail string
	}{
		{"If-None-Match", ignoresConditions{ifNoneMatch: true}, "ignored If-None-Match"},
		{"If-Match", ignoresConditions{ifMatch: true}, "ignores If-Match"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bd := setup(t, storetest.Backends()[0], setupOpts{})
			task := bd.submit(t, "echo", `1`)
			tc.wrap.Store = bd.s
			opts := bd.opts(t)
			w := New(bd.over(t, tc.wrap), opts)
			RegisterBuiltins(w)
			r := start(t, w)
			testutil.Eventually(t, r.finished, "the worker to refuse to start")
			err := r.stop(t)
			require.ErrorIs(t, err, doctor.ErrUnsafe)
			require.ErrorContains(t, err, tc.detail)
			require.ErrorContains(t, err, "docs/providers.md")
			require.False(t, bd.registered(t, opts.ID))
			require.Equal(t, queue.StatusPending, bd.get(t, task.ID).Status, "nothing claimed")
		})
	}
}

// Workers starting at once all pass the probe, and it writes the probe
// key once.
func TestRunProbesOnce(t *testing.T) {
	t.Parallel()
	storetest.ForEach(t, func(t *testing.T, b storetest.Backend) {
		bd := setup(t, b, setupOpts{})
		var (
			ws []*Worker
			rs []*running
		)
		for range 4 {
			w := New(bd.q, bd.opts(t))
			RegisterBuiltins(w)
			ws, rs = append(ws, w), append(rs, start(t, w))
		}
		for _, w := range ws {
			bd.waitRegistered(t, w.ID())
		}
		for _, r := range rs {
			require.NoError(t, r.stop(t))
		}
		vs, err := bd.s.ListVersions(context.Background(), queue.ProbeKey)
		require.NoError(t, err)
		require.Len(t, vs, 1, "the probe key gains no version after the first probe (queue.Init's)")
	})
}

// tearsTasks answers every read of a task object with store.ErrTornRead,
// as s3store does when a server keeps pairing bodies with other versions'
// ETags.
type tearsTasks struct{ store.Store }

func (s tearsTasks) Get(ctx context.Context, key string) (*store.Object, error) {
	if strings.HasPrefix(key, queue.TasksPrefix) {
		return nil, fmt.Errorf("get %s: %w", key, store.ErrTornRead)
	}
	return s.Store.Get(ctx, key)
}

// A claim that fails on a torn read is skipped like a lost race, but the
// operator hears of it: the server is at fault, not another worker.
func TestTornReadClaimWarns(t *testing.T) {
	t.Parallel()
	bd := setup(t, storetest.Backends()[0], setupOpts{})
	task := bd.submit(t, "echo", `1`)
	logs := &testutil.Buffer{}
	opts := bd.opts(t)
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	w := New(bd.over(t, tearsTasks{bd.s}), opts)
	RegisterBuiltins(w)
	r := start(t, w)
	testutil.Eventually(t, func() bool { return strings.Contains(logs.String(), "torn read") }, "a warning about the torn read")
	require.NoError(t, r.stop(t))
	require.Contains(t, logs.String(), "level=WARN")
	require.Contains(t, logs.String(), task.ID.String())
	require.Equal(t, queue.StatusPending, bd.get(t, task.ID).Status, "nothing claimed")
}
