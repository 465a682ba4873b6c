//go:build unix

package e2e

// The page builds S3 keys only from validated parts: a workflow record
// whose step names a task id that is a path ("0/../queue.json"), with
// task objects planted where the browser would resolve such ids, makes
// "Cancel the rest" send nothing outside the task and index keys.

import (
	"context"
	"encoding/json"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// requestLog records the S3 requests the page sends (method and key, as
// the browser sent them: after it resolved the path).
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) since(n int) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs[n:]...)
}

func (l *requestLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// recordS3 logs every request the page sends to bucket (path style).
func recordS3(t *testing.T, ctx context.Context, bucket string) *requestLog {
	t.Helper()
	l := &requestLog{}
	chromedp.ListenTarget(ctx, func(ev any) {
		e, ok := ev.(*network.EventRequestWillBeSent)
		if !ok || e.Request.Method == "OPTIONS" {
			return
		}
		u, err := url.Parse(e.Request.URL)
		if err != nil {
			return
		}
		key, ok := strings.CutPrefix(u.Path, "/"+bucket+"/")
		if !ok {
			if u.Path == "/"+bucket || !strings.Contains(u.Path, bucket) {
				return
			}
			key = "(outside the bucket) " + u.Path
		}
		if u.RawQuery != "" && key == "" {
			return // a LIST: its prefix is a parameter, not a path
		}
		l.mu.Lock()
		l.reqs = append(l.reqs, e.Request.Method+" "+key)
		l.mu.Unlock()
	})
	require.NoError(t, chromedp.Run(ctx, network.Enable()))
	return l
}

// broadLink is link with the bucket's own keys instead of the scoped
// credentials qo ui serve minted: keys typed into the page, which may
// reach every key of the bucket (and other buckets).
func broadLink(t *testing.T, e *wkEnv, link string) string {
	t.Helper()
	base, frag, ok := strings.Cut(link, "#")
	require.True(t, ok, link)
	v, err := url.ParseQuery(frag)
	require.NoError(t, err)
	for _, kv := range e.env {
		if k, val, _ := strings.Cut(kv, "="); k == "AWS_ACCESS_KEY_ID" {
			v.Set("ak", val)
		} else if k == "AWS_SECRET_ACCESS_KEY" {
			v.Set("sk", val)
		}
	}
	v.Del("st")
	v.Del("exp")
	return base + "#" + v.Encode()
}

var taskKeyRE = regexp.MustCompile(`^tasks/[0-9a-f]{1,2}/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.json$`)

// qoKey reports whether key is a task object or an index entry that
// parses, or a workflow record or name (what "Cancel the rest" reads).
func qoKey(key string) bool {
	switch {
	case strings.HasPrefix(key, queue.TasksPrefix):
		return taskKeyRE.MatchString(key)
	case strings.HasPrefix(key, queue.ReadyPrefix):
		_, err := queue.ParseReadyKey(key)
		return err == nil
	case strings.HasPrefix(key, queue.LeasesPrefix):
		_, err := queue.ParseLeaseKey(key)
		return err == nil
	case strings.HasPrefix(key, queue.DeadPrefix):
		_, err := queue.ParseDeadKey(key)
		return err == nil
	case strings.HasPrefix(key, queue.WaitingPrefix):
		_, _, err := queue.ParseWaitingKey(key)
		return err == nil
	case strings.HasPrefix(key, queue.WorkflowsPrefix), strings.HasPrefix(key, queue.WorkflowNamesPrefix):
		return !strings.Contains(key, "..")
	}
	return false
}

func TestWebUIRefusesKeysFromPlantedIDs(t *testing.T) {
	t.Parallel()
	ctx := browser(t)
	e := wkSetup(t)
	bg := context.Background()
	name := "planted-" + uuid.NewString()[:6]
	spec, err := queue.DecodeWorkflow([]byte(`{"name": "`+name+`", "steps": [
		{"name": "extract", "type": "extract"},
		{"name": "load", "type": "load", "after": ["extract"]}
	]}`), queue.SubmitDefaults{})
	require.NoError(t, err)
	wf, _, err := e.q.Workflows().Submit(bg, spec)
	require.NoError(t, err)

	// The record gains two steps whose task ids are paths: the one of
	// the report, and one that climbs to the bucket's root.
	recKey := e.q.Workflows().Key(wf.ID)
	obj, err := e.s.Get(bg, recKey)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(obj.Body, &rec))
	planted := map[string]string{"evil": "0/../queue.json", "evil-root": "0/../../../queue.json"}
	steps := rec["steps"].([]any)
	for step, id := range planted {
		steps = append(steps, map[string]any{"name": step, "task_type": "x", "task_id": id})
	}
	rec["steps"] = steps
	body, err := json.Marshal(rec)
	require.NoError(t, err)
	_, err = e.s.Put(bg, recKey, body, store.Condition{})
	require.NoError(t, err)
	// Where a browser resolves tasks/0/{id}.json of those ids, a pending
	// task that says it is that id: a page that builds keys from them
	// reads it, cancels it, and deletes its ready entry, which resolves
	// to queue.json.
	now := time.Now().UTC().Format(time.RFC3339Nano)
	for _, id := range planted {
		resolved := map[string]string{"0/../queue.json": "tasks/0/queue.json.json", "0/../../../queue.json": "queue.json.json"}[id]
		task, err := json.Marshal(map[string]any{
			"format": queue.FormatVersion, "id": id, "shard": "0", "task_type": "x", "status": "pending", "priority": "normal",
			"available_at": now, "created_at": now, "updated_at": now, "rev": 1, "request_id": "planted", "attempt": 0,
			"timeout_seconds": 60, "max_retries": 0, "worker_id": "", "lease_id": "", "lease_expires_at": nil,
		})
		require.NoError(t, err)
		_, err = e.s.Put(bg, resolved, task, store.Condition{})
		require.NoError(t, err)
	}

	log := recordS3(t, ctx, e.s.Bucket())
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Navigate(broadLink(t, e, uiLink(t, e))+"&view=workflow&workflow="+name),
		poll(`document.querySelector('#wf-graph g.step[data-step="extract"]')?.dataset.status === 'pending'`),
		noAutoRefresh(),
	))
	before := log.len()
	require.NoError(t, chromedp.Run(ctx,
		chromedp.Click("#wf-cancel", chromedp.ByQuery),
		poll(`/cancelled \d+ step/.test(document.querySelector('#status').textContent) || document.querySelector('#status').classList.contains('error')`),
	))
	sent := log.since(before)
	_, err = e.s.Get(bg, queue.ConfigKey)
	require.NoError(t, err, "queue.json is still there (the page sent %q)", sent)
	require.NotEmpty(t, sent, "the cancel sent requests")
	for _, r := range sent {
		_, key, _ := strings.Cut(r, " ")
		require.True(t, qoKey(key), "the page sent %s, a key outside the task objects and their indexes (all it sent: %q)", r, sent)
	}
	// The planted steps are reported, not read.
	for step := range planted {
		require.Contains(t, text(ctx, t, `#wf-steps`), step)
	}
	require.Contains(t, text(ctx, t, `#wf-steps`), "is not a task id: the step is skipped")
	require.Equal(t, "cancelled 2 steps of workflow "+name, text(ctx, t, "#status"))
	for _, s := range wf.Steps {
		task, err := e.q.Get(bg, s.TaskID)
		require.NoError(t, err)
		require.Equal(t, queue.StatusCancelled, task.Status, s.Name)
	}
	for _, key := range []string{"tasks/0/queue.json.json", "queue.json.json"} {
		obj, err := e.s.Get(bg, key)
		require.NoError(t, err)
		require.Contains(t, string(obj.Body), `"status":"pending"`, "the planted object at %s was not written", key)
	}
}
