package queue_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/queue"
)

// validTask returns a task that satisfies the invariants of status st.
func validTask(st queue.Status) *queue.Task {
	id := uuid.MustParse("3f2a1b4c-5d6e-4f70-8192-a3b4c5d6e7f8")
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	t := &queue.Task{
		Format: 1, ID: id, Type: "t", Shard: "3", Status: st, AvailableAt: now,
		Input: json.RawMessage(`{}`), TimeoutSeconds: 30, MaxRetries: 3, RetryPolicy: queue.DefaultRetryPolicy,
		CreatedAt: now, UpdatedAt: now, Rev: 5, RequestID: "r", LastEvent: "x", Attempt: 1,
		Priority: queue.PriorityNormal,
		// Every status may have a parent; a waiting task needs one that has
		// not ended.
		Parents:         []queue.Parent{{ID: uuid.MustParse("0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")}},
		OnParentFailure: queue.ParentFailureCancel,
	}
	exp := now.Add(time.Minute)
	switch st {
	case queue.StatusRunning:
		t.WorkerID, t.LeaseID, t.LeaseExpiresAt = "w", "0b6a3a55-4c1e-4f65-a7c0-6f2f5d3c9e10", &exp
	case queue.StatusCompleted, queue.StatusArchived:
		t.CompletedAt = &now
	case queue.StatusFailed:
		t.CompletedAt, t.LastError = &now, "boom"
	case queue.StatusCancelled:
		t.CompletedAt, t.CancelRequested, t.CancelRequestedAt = &now, true, &now
	case queue.StatusExpired:
		t.CompletedAt, t.ExpiresAt = &now, &now
	}
	return t
}

// TestTransitionTable checks every (from, event, to) triple: exactly the
// table's rows pass the validator.
func TestTransitionTable(t *testing.T) {
	t.Parallel()
	froms := append([]queue.Status{""}, queue.Statuses...)
	allowed := 0
	for _, from := range froms {
		for _, ev := range queue.Events {
			for _, to := range queue.Statuses {
				next := validTask(to)
				next.LastEvent = ev
				next.RequestID = "new"
				var prev *queue.Task
				if from == "" {
					next.Rev, next.Attempt = 1, 0
				} else {
					prev = validTask(from)
					next.Rev = prev.Rev + 1
					if ev == queue.EventClaimed {
						next.Attempt = prev.Attempt + 1
					}
					if ev == queue.EventArchived && to == queue.StatusArchived {
						next.ArchivedFrom = from
					}
				}
				err := queue.ValidateTransition(prev, next)
				if queue.Allowed(from, ev, to) {
					allowed++
					require.NoError(t, err, "%q -%s-> %s", from, ev, to)
					continue
				}
				require.ErrorIs(t, err, queue.ErrInvalidTransition, "%q -%s-> %s", from, ev, to)
				var te *queue.TransitionError
				require.ErrorAs(t, err, &te)
				require.Equal(t, from, te.From)
				require.Equal(t, to, te.To)
				require.Contains(t, err.Error(), string(to))
			}
		}
	}
	require.Equal(t, len(queue.Transitions()), allowed)
}

func TestTransitionRules(t *testing.T) {
	t.Parallel()
	claim := func(mod func(prev, next *queue.Task)) error {
		prev := validTask(queue.StatusPending)
		next := validTask(queue.StatusRunning)
		next.Rev, next.Attempt, next.LastEvent, next.RequestID = prev.Rev+1, prev.Attempt+1, queue.EventClaimed, "new"
		mod(prev, next)
		return queue.ValidateTransition(prev, next)
	}
	require.NoError(t, claim(func(prev, next *queue.Task) {}))
	tests := []struct {
		name string
		mod  func(prev, next *queue.Task)
		want string
	}{
		{"rev skips", func(p, n *queue.Task) { n.Rev += 1 }, "rev must go"},
		{"attempt unchanged", func(p, n *queue.Task) { n.Attempt = p.Attempt }, "attempt must be"},
		{"same request id", func(p, n *queue.Task) { n.RequestID = p.RequestID }, "fresh request_id"},
		{"input changed", func(p, n *queue.Task) { n.Input = json.RawMessage(`1`) }, "never change"},
		{"type changed", func(p, n *queue.Task) { n.Type = "u" }, "never change"},
		{"time backwards", func(p, n *queue.Task) { p.UpdatedAt = n.UpdatedAt.Add(time.Second) }, "backwards"},
		{"running without lease", func(p, n *queue.Task) { n.LeaseID = "" }, "lease_id"},
		{"running with output", func(p, n *queue.Task) { n.Output = json.RawMessage(`1`) }, "output"},
		{"bad shard", func(p, n *queue.Task) { p.Shard, n.Shard = "4", "4" }, "not the shard of id"},
		{"retries over max", func(p, n *queue.Task) { n.RetryCount = 4 }, "retry_count"},
	}
	for _, tc := range tests {
		err := claim(tc.mod)
		require.ErrorIs(t, err, queue.ErrInvalidTransition, tc.name)
		require.Contains(t, err.Error(), tc.want, tc.name)
	}
	// Per-status invariants.
	inv := []struct {
		st   queue.Status
		mod  func(*queue.Task)
		want string
	}{
		{queue.StatusPending, func(t *queue.Task) { t.WorkerID = "w" }, "pending"},
		{queue.StatusPending, func(t *queue.Task) { t.CancelRequested = true }, "cancel_requested"},
		{queue.StatusCompleted, func(t *queue.Task) { t.LastError = "x" }, "last_error"},
		{queue.StatusCompleted, func(t *queue.Task) { t.CompletedAt = nil }, "completed_at"},
		{queue.StatusFailed, func(t *queue.Task) { t.LastError = "" }, "why"},
		{queue.StatusCancelled, func(t *queue.Task) { t.CancelRequested = false }, "cancel_requested"},
		{queue.StatusArchived, func(t *queue.Task) { t.LeaseID = "l" }, "lease"},
		{queue.StatusRunning, func(t *queue.Task) { t.Attempt = 0 }, "attempt"},
	}
	for _, tc := range inv {
		task := validTask(tc.st)
		require.NoError(t, queue.CheckInvariants(task), tc.st)
		tc.mod(task)
		err := queue.CheckInvariants(task)
		require.Error(t, err, "%s %s", tc.st, tc.want)
		require.Contains(t, err.Error(), tc.want)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	p := queue.DefaultRetryPolicy
	for n, want := range map[int]time.Duration{0: time.Second, 1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 7: 60 * time.Second, 100: 60 * time.Second, 100000: 60 * time.Second} {
		require.Equal(t, want, p.Backoff(n, nil), "retry %d", n)
	}
	rnd := rand.New(rand.NewSource(7))
	var lo, hi bool
	for i := 0; i < 1000; i++ {
		d := p.Backoff(3, rnd)
		require.GreaterOrEqual(t, d, 3*time.Second)
		require.LessOrEqual(t, d, 5*time.Second)
		lo = lo || d < 3500*time.Millisecond
		hi = hi || d > 4500*time.Millisecond
		require.LessOrEqual(t, p.Backoff(20, rnd), 60*time.Second, "jitter never exceeds the cap")
	}
	require.True(t, lo && hi, "jitter spreads both ways")
	require.ErrorIs(t, queue.RetryPolicy{InitialIntervalMS: 1, MaxIntervalMS: 2, Multiplier: 0.5}.Validate(), queue.ErrInvalidInput)
	require.ErrorIs(t, queue.RetryPolicy{InitialIntervalMS: 1, MaxIntervalMS: 2, Multiplier: 2, JitterPercent: 2}.Validate(), queue.ErrInvalidInput)
}

func TestKeys(t *testing.T) {
	t.Parallel()
	task := validTask(queue.StatusPending)
	task.AvailableAt = time.UnixMilli(1_700_000_000_123).UTC()
	rk := queue.ReadyKey(task)
	require.Equal(t, "ready/t/3/1700000000123~normal~"+task.ID.String(), rk, "type, then shard: one partition per type and shard, one segment per entry")
	e, err := queue.ParseReadyKey(rk)
	require.NoError(t, err)
	require.Equal(t, queue.ReadyEntry{Key: rk, ID: task.ID, Shard: "3", Type: "t", Priority: queue.PriorityNormal,
		Rank: task.AvailableAt, AvailableAt: task.AvailableAt}, e)
	require.Equal(t, "t/3", e.Partition())
	require.Equal(t, queue.ReadyPartition("t", "3"), e.Partition())
	require.Equal(t, "ready/t/3/", queue.ReadyPartitionPrefix(e.Partition()))
	for key, want := range map[string]string{
		rk: "t/3", "ready/t/3/": "t/3", "ready/t/3": "t/3", "ready/t/~/": "t/~", "ready/t/": "", "ready/t": "", "ready/": "",
		"ready/3/1700000000123~t~normal~" + task.ID.String(): "3/1700000000123~t~normal~" + task.ID.String(),
		"leases/3/x": "", "": "",
	} {
		require.Equal(t, want, queue.ReadyKeyPartition(key), key)
	}
	// Layout-1 keys (time first), layout-2 keys (a segment per field) and
	// layout-3 keys (the shard first, the type a field) are not current
	// keys: qo migrate moves them.
	for _, legacy := range []string{"ready/1700000000123/3/t/" + task.ID.String(), "ready/1700000000123/3/t/normal/" + task.ID.String(),
		"ready/3/1700000000123/t/normal/" + task.ID.String(), "ready/3/1700000000123~t~normal/" + task.ID.String(),
		"ready/3/1700000000123~t~normal~" + task.ID.String(), "ready/3/1700000000123~t~normal~" + task.ID.String() + "~k"} {
		_, err = queue.ParseReadyKey(legacy)
		require.Error(t, err, legacy)
	}

	// Priority moves the rank, never the availability.
	for _, tc := range []struct {
		p    queue.Priority
		rank time.Duration
	}{{queue.PriorityHigh, -queue.PriorityStep}, {queue.PriorityNormal, 0}, {queue.PriorityLow, queue.PriorityStep}} {
		task.Priority = tc.p
		e, err := queue.ParseReadyKey(queue.ReadyKey(task))
		require.NoError(t, err)
		require.Equal(t, tc.p, e.Priority)
		require.Equal(t, task.AvailableAt.Add(tc.rank), e.Rank, tc.p)
		require.Equal(t, task.AvailableAt, e.AvailableAt, tc.p)
	}
	task.Priority = queue.PriorityNormal

	exp := time.UnixMilli(42).UTC()
	task.LeaseExpiresAt = &exp
	require.Empty(t, queue.LeaseKey(task), "no lease id, no lease entry")
	task.LeaseID = "0b6a3a55-4c1e-4f65-a7c0-6f2f5d3c9e11"
	require.Empty(t, queue.LeaseKey(task), "no holder, no lease entry")
	task.WorkerID = "w-1"
	lk := queue.LeaseKey(task)
	require.Equal(t, "leases/3/0000000000042~t~"+task.ID.String()+"~"+task.LeaseID+"~w-1", lk)
	_, err = queue.ParseLeaseKey("leases/3/0000000000042/t/" + task.ID.String() + "/" + task.LeaseID + "/w-1")
	require.Error(t, err, "a layout-2 lease key")
	le, err := queue.ParseLeaseKey(lk)
	require.NoError(t, err)
	require.Equal(t, queue.LeaseEntry{Key: lk, ID: task.ID, Shard: "3", Type: "t", LeaseID: task.LeaseID, WorkerID: "w-1", ExpiresAt: exp}, le)
	require.Equal(t, "tasks/3/"+task.ID.String()+".json", task.Key())

	// Dead letters: newest failure first, across shards.
	older, newer := validTask(queue.StatusFailed), validTask(queue.StatusFailed)
	older.CompletedAt, newer.CompletedAt = &exp, &task.AvailableAt
	dk := queue.DeadKey(newer)
	require.Equal(t, "dead/"+fmt.Sprintf("%013d", 9999999999999-1_700_000_000_123)+"/3/t/"+newer.ID.String(), dk)
	require.Less(t, dk, queue.DeadKey(older))
	de, err := queue.ParseDeadKey(dk)
	require.NoError(t, err)
	require.Equal(t, queue.DeadEntry{Key: dk, ID: newer.ID, Shard: "3", Type: "t", FailedAt: task.AvailableAt}, de)
	require.Empty(t, queue.DeadKey(validTask(queue.StatusCompleted)))

	// v7 ids: time-ordered, sharded by their random last characters.
	at := time.UnixMilli(1_700_000_000_123).UTC()
	id := queue.NewIDAt(at)
	got, ok := queue.IDTime(id)
	require.True(t, ok)
	require.Equal(t, at, got)
	require.Equal(t, id.String()[35:], queue.ShardOf(id, 1))
	require.Equal(t, id.String()[34:], queue.ShardOf(id, 2))
	require.Equal(t, "3f", queue.ShardOf(task.ID, 2), "other ids keep their first characters")
	require.Less(t, queue.NewIDAt(at).String(), queue.NewIDAt(at.Add(time.Millisecond)).String())
	_, ok = queue.IDTime(task.ID)
	require.False(t, ok)

	// Time order is key order.
	a := validTask(queue.StatusPending)
	a.AvailableAt = time.UnixMilli(999).UTC()
	b := validTask(queue.StatusPending)
	b.AvailableAt = time.UnixMilli(1000).UTC()
	require.Less(t, queue.ReadyKey(a), queue.ReadyKey(b))

	for _, bad := range []string{"ready/x", "ready/3/123/t/normal/" + task.ID.String(), "ready/4/1700000000123/t/normal/" + task.ID.String(),
		"ready/3/1700000000123/t!/normal/" + task.ID.String(), "ready/3/1700000000123/t/normal/nope", "leases/3/1700000000123",
		"ready/3/1700000000123/t/urgent/" + task.ID.String(), "leases/3/1700000000123/t/" + task.ID.String() + "/nope", "leases/3/1700000000123/t/" + task.ID.String() + "/" + task.LeaseID + "/bad worker",
		"dead/3/x", "dead/0000000000001/4/t/" + task.ID.String(),
		"ready/t/3/1700000000123~normal", "ready/t/3/1700000000123~normal~" + task.ID.String() + "~x~y", "ready/t/3/1700000000123~normal~" + task.ID.String() + "~x y", "ready/t/3/1700000000123~urgent~" + task.ID.String(),
		"ready/t~3/1700000000123~normal~" + task.ID.String(), "ready/t/4/1700000000123~normal~" + task.ID.String(), "ready/t!/3/1700000000123~normal~" + task.ID.String(),
		"ready/t/3/x/1700000000123~normal~" + task.ID.String(), "ready//3/1700000000123~normal~" + task.ID.String(), "ready/t/3/170000000012~normal~" + task.ID.String(),
		"ready/3/1700000000123~t~normal~" + task.ID.String(), "leases/3/1700000000123~t~" + task.ID.String() + "~" + task.LeaseID + "~bad worker"} {
		_, err1 := queue.ParseReadyKey(bad)
		_, err2 := queue.ParseLeaseKey(bad)
		_, err3 := queue.ParseDeadKey(bad)
		require.True(t, err1 != nil && err2 != nil && err3 != nil, bad)
	}

	for _, ok := range []string{"a", "send_email", "img.resize:v2-fast", strings.Repeat("x", 64)} {
		require.NoError(t, queue.ValidateType(ok))
	}
	for _, bad := range []string{"", "a b", "a/b", "é", strings.Repeat("x", 65), ".", "..", "..."} {
		require.ErrorIs(t, queue.ValidateType(bad), queue.ErrInvalidInput, bad)
	}

	_, err = queue.ParseID("nope")
	require.ErrorIs(t, err, queue.ErrInvalidInput)
	require.Contains(t, err.Error(), "not a task id")
	_, err = queue.ParseID("00000000-0000-0000-0000-000000000000")
	require.ErrorIs(t, err, queue.ErrInvalidInput)
	id, err = queue.ParseID(strings.ToUpper(task.ID.String()))
	require.NoError(t, err)
	require.Equal(t, task.ID, id)
}

func TestTaskJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, st := range queue.Statuses {
		task := validTask(st)
		task.Output = json.RawMessage(`{"x":1}`)
		body, err := queue.EncodeTask(task)
		require.NoError(t, err)
		got, err := queue.DecodeTask(task.Key(), body)
		require.NoError(t, err)
		require.Equal(t, task, got)
	}
	// The on-bucket field names are part of the format.
	body, err := queue.EncodeTask(validTask(queue.StatusRunning))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(body, &m))
	for _, f := range []string{"format", "id", "task_type", "shard", "status", "available_at", "lease_expires_at", "input", "output",
		"timeout_seconds", "max_retries", "retry_count", "retry_policy", "created_at", "updated_at", "completed_at", "worker_id",
		"lease_id", "attempt", "last_error", "rev", "request_id", "last_event", "cancel_requested", "cancel_requested_at",
		"cancel_reason", "idempotency_key", "priority", "expires_at", "input_ref", "output_ref",
		"parents", "on_parent_failure"} { // children: absent when empty, like these two on a task without parents
		require.Contains(t, m, f)
	}
	require.Len(t, m, 33, "a new field must be added to doc.go and this list")
	_, err = queue.DecodeTask("tasks/3/"+uuid.NewString()+".json", body)
	var mal *queue.MalformedError
	require.ErrorAs(t, err, &mal)
	_, err = queue.DecodeTask("", []byte(`{"format":1,"id":"`+uuid.NewString()+`","status":"weird","task_type":"t"}`))
	require.ErrorAs(t, err, &mal)
	// A bad type name in the bucket is the object's fault: malformed, never
	// the caller's invalid input (which would exit 2 and blame the user).
	_, err = queue.DecodeTask("", []byte(`{"format":1,"id":"`+uuid.NewString()+`","status":"pending","task_type":"a b"}`))
	require.ErrorAs(t, err, &mal)
	require.NotErrorIs(t, err, queue.ErrInvalidInput)
	_, err = queue.DecodeTask("", []byte(`{"format":1,"id":"`+uuid.NewString()+`","status":"pending","task_type":"t","priority":"urgent"}`))
	require.ErrorAs(t, err, &mal)
	require.Contains(t, queue.ValidateType("caf\u00e9").Error(), "contains \"\u00e9\"", "the character is named, not its first byte")
}

func BenchmarkEncodeTask(b *testing.B) {
	task := validTask(queue.StatusRunning)
	task.Input = json.RawMessage(`{"to":"user@example.com","subject":"hello","body":"a short message body"}`)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := queue.EncodeTask(task); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTask(b *testing.B) {
	task := validTask(queue.StatusRunning)
	task.Input = json.RawMessage(`{"to":"user@example.com","subject":"hello","body":"a short message body"}`)
	body, err := queue.EncodeTask(task)
	if err != nil {
		b.Fatal(err)
	}
	key := task.Key()
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for i := 0; i < b.N; i++ {
		if _, err := queue.DecodeTask(key, body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadyKey(b *testing.B) {
	task := validTask(queue.StatusPending)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = queue.ReadyKey(task)
	}
}

func BenchmarkParseReadyKey(b *testing.B) {
	key := queue.ReadyKey(validTask(queue.StatusPending))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := queue.ParseReadyKey(key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidateTransition(b *testing.B) {
	prev := validTask(queue.StatusPending)
	next := validTask(queue.StatusRunning)
	next.Rev, next.Attempt, next.LastEvent, next.RequestID = prev.Rev+1, prev.Attempt+1, queue.EventClaimed, "new"
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := queue.ValidateTransition(prev, next); err != nil {
			b.Fatal(err)
		}
	}
}

// Every name that becomes a key segment refuses what S3 would resolve as
// a path step (".", ".."), says why and how to fix it, and accepts dots
// inside a name.
func TestValidateNamesRefuseDotSegments(t *testing.T) {
	t.Parallel()
	validators := map[string]func(string) error{
		"task type": queue.ValidateType, "worker id": queue.ValidateWorkerID, "schedule name": queue.ValidateScheduleName,
	}
	for what, validate := range validators {
		t.Run(what, func(t *testing.T) {
			t.Parallel()
			for _, bad := range []string{".", "..", "...."} {
				err := validate(bad)
				require.ErrorIs(t, err, queue.ErrInvalidInput, bad)
				require.ErrorContains(t, err, what+` "`+bad+`" is only dots`)
				require.ErrorContains(t, err, "use a name with a letter or digit")
			}
			for _, bad := range []string{"a/b", "../a", "a/..", "a b", "a\x1b"} {
				require.ErrorIs(t, validate(bad), queue.ErrInvalidInput, bad)
			}
			for _, ok := range []string{".a", "a.", "a..b", "v1.2"} {
				require.NoError(t, validate(ok), ok)
			}
		})
	}
	// A ready key with a dot segment is not one qo wrote: refused.
	id := queue.NewID()
	_, err := queue.ParseReadyKey("ready/../" + queue.ShardOf(id, 1) + "/1700000000123~normal~" + id.String())
	require.Error(t, err)
}
