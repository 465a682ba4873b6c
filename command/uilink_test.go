package command

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
	"github.com/qo-queue/qo/store/s3store"
	"github.com/qo-queue/qo/store/storetest"
)

// linkStore runs qo ui url with args and opens the bucket with the
// credentials its link carries; it returns the link's fragment too.
func linkStore(t *testing.T, s *s3store.Store, args ...string) (*s3store.Store, url.Values) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runApp(append([]string{"qo", "ui", "url", "--duration", "15m"}, args...), &out, &errb)
	require.Equal(t, 0, code, errb.String())
	_, frag, ok := strings.Cut(strings.TrimSpace(out.String()), "#")
	require.True(t, ok, out.String())
	v, err := url.ParseQuery(frag)
	require.NoError(t, err)
	require.NotEmpty(t, v.Get("st"), "the link carries STS credentials: %s", out.String())
	cfg := storetest.S3Config(t, s.Bucket())
	cfg.AccessKey, cfg.SecretKey, cfg.SessionToken = v.Get("ak"), v.Get("sk"), v.Get("st")
	scoped, err := s3store.New(t.Context(), cfg)
	require.NoError(t, err)
	return scoped, v
}

// TestLinkCredentialsMinIO: a link's credentials are read-only by default
// (the page shows the queue; a write, such as the queue.json that would
// stop every client, is refused); an --operator link may replay a task
// (what the page's actions write) and still not write queue.json,
// monitor/, workers/ or shard-leases/.
func TestLinkCredentialsMinIO(t *testing.T) {
	s := minioCLI(t)
	ctx := t.Context()
	_, err := queue.Init(ctx, s, 1)
	require.NoError(t, err)
	q, err := queue.Open(ctx, s, queue.Options{})
	require.NoError(t, err)
	e := &cliEnv{t: t, s: s, q: q}
	failed := e.fail(e.submit("report", `{"month":"bad"}`, 0).ID, "no such month")

	protected := []string{queue.ConfigKey, queue.MonitorLeaderKey, queue.WorkersPrefix + "w1.json", queue.ShardLeasePrefix + "0.json"}
	writes := func(t *testing.T, ro *s3store.Store, keys ...string) {
		t.Helper()
		for _, k := range keys {
			_, err := ro.Put(ctx, k, []byte(`{"format":99}`), store.Condition{})
			require.ErrorIs(t, err, store.ErrAccessDenied, "PUT %s", k)
			require.ErrorIs(t, ro.Delete(ctx, k, store.Condition{}), store.ErrAccessDenied, "DELETE %s", k)
		}
	}

	t.Run("read-only", func(t *testing.T) {
		ro, frag := linkStore(t, s)
		require.Equal(t, "1", frag.Get("ro"), "the page is told to hide its actions")
		obj, err := ro.Get(ctx, queue.ConfigKey)
		require.NoError(t, err, "the page reads the queue")
		require.Contains(t, string(obj.Body), `"format"`)
		_, err = ro.Get(ctx, queue.TasksPrefix+failed.Shard+"/"+failed.ID.String()+".json")
		require.NoError(t, err)
		_, err = ro.List(ctx, store.ListParams{Prefix: queue.DeadPrefix})
		require.NoError(t, err)
		writes(t, ro, append(protected, queue.TasksPrefix+failed.Shard+"/"+failed.ID.String()+".json", queue.ControlKey, queue.ReadyPrefix+"0/x")...)
		rq, err := queue.Open(ctx, ro, queue.Options{})
		require.NoError(t, err)
		_, err = rq.Replay(ctx, failed.ID)
		require.ErrorIs(t, err, store.ErrAccessDenied, "a read-only link cannot replay")
	})

	t.Run("operator", func(t *testing.T) {
		op, frag := linkStore(t, s, "--operator")
		require.Empty(t, frag.Get("ro"))
		oq, err := queue.Open(ctx, op, queue.Options{})
		require.NoError(t, err)
		got, err := oq.Replay(ctx, failed.ID)
		require.NoError(t, err, "an operator link replays")
		require.Equal(t, queue.StatusPending, got.Status)
		writes(t, op, protected...)
		_, err = op.Put(ctx, queue.ControlKey, []byte(`{"paused":true}`), store.Condition{})
		require.NoError(t, err, "pause and resume write control.json")
	})
}
