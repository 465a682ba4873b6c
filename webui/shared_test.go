package webui

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/qo-queue/qo/inspect"
	"github.com/qo-queue/qo/queue"
)

var update = flag.Bool("update", false, "rewrite src/transitions.json, src/constants.json and testdata/*.json")

// requireFile compares a generated file with the checked-in one (or
// rewrites it with -update).
func requireFile(t *testing.T, path string, v any) {
	t.Helper()
	want, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	want = append(want, '\n')
	if *update {
		require.NoError(t, os.WriteFile(path, want, 0o644))
		return
	}
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got), "%s is stale: run go test ./webui -update, then scripts/build-webui.sh", path)
}

// TestTransitionTable keeps the page's copy of the lifecycle table equal to
// the Go one.
func TestTransitionTable(t *testing.T) {
	t.Parallel()
	requireFile(t, filepath.Join("src", "transitions.json"), queue.Transitions())
}

// opCase is one shared case: an operator action on a task at a time, and
// what queue.ApplyOperator makes of it.
type opCase struct {
	Name      string      `json:"name"`
	Op        string      `json:"op"`
	Reason    string      `json:"reason"`
	Actor     string      `json:"actor"`
	Now       time.Time   `json:"now"`
	RequestID string      `json:"request_id"`
	Base      *queue.Task `json:"base"`
	Want      *queue.Task `json:"want"`  // nil: no write
	Error     string      `json:"error"` // "" or "invalid_transition"
	// The index entries the action writes before the task and deletes
	// after it (queue.IndexChanges).
	IndexPut    []string `json:"index_put,omitempty"`
	IndexDelete []string `json:"index_delete,omitempty"`
}

// fixture returns a valid task in status st.
func fixture(st queue.Status, now time.Time) *queue.Task {
	id := uuid.MustParse("0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b")
	created := now.Add(-time.Hour)
	t := &queue.Task{
		Format: queue.FormatVersion, ID: id, Type: "send_email", Shard: "0", Status: st,
		AvailableAt: created, Input: json.RawMessage(`{"to":"a@example.com"}`),
		TimeoutSeconds: 60, MaxRetries: 3, RetryPolicy: queue.DefaultRetryPolicy,
		CreatedAt: created, UpdatedAt: now.Add(-time.Minute), Rev: 4, RequestID: "prev-request", Attempt: 2,
		Priority: queue.PriorityNormal,
	}
	lease := now.Add(30 * time.Second)
	done := now.Add(-time.Minute)
	switch st {
	case queue.StatusPending:
		t.LastEvent, t.RetryCount, t.AvailableAt, t.LastError = queue.EventRetried, 1, now.Add(10*time.Second), "smtp timeout"
	case queue.StatusRunning:
		t.LastEvent, t.WorkerID, t.LeaseID, t.LeaseExpiresAt = queue.EventClaimed, "w1", "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f", &lease
	case queue.StatusCompleted:
		t.LastEvent, t.WorkerID, t.CompletedAt, t.Output = queue.EventSucceeded, "w1", &done, json.RawMessage(`{"id":"m-1"}`)
	case queue.StatusFailed:
		t.LastEvent, t.WorkerID, t.CompletedAt, t.LastError, t.RetryCount = queue.EventFailed, "w1", &done, "smtp: 550", 3
	case queue.StatusCancelled:
		t.LastEvent, t.CompletedAt, t.CancelRequested, t.CancelRequestedAt, t.CancelReason = queue.EventCancelled, &done, true, &done, "not needed"
	case queue.StatusExpired:
		t.LastEvent, t.Attempt, t.CompletedAt, t.ExpiresAt = queue.EventExpired, 0, &done, &done
	case queue.StatusArchived:
		t.LastEvent, t.WorkerID, t.CompletedAt, t.Output = queue.EventArchived, "w1", &done, json.RawMessage(`{"id":"m-1"}`)
	case queue.StatusWaiting:
		t.LastEvent, t.Attempt = queue.EventEnqueued, 0
		t.Parents, t.OnParentFailure = []queue.Parent{{ID: parentID}}, queue.ParentFailureCancel
	}
	return t
}

var parentID = uuid.MustParse("0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f0001")

// TestOperatorCases writes (and checks) the cases the JavaScript rules are
// tested on: every action on every status, the answers from the Go rules.
func TestOperatorCases(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 5, 6, 7, 8, 9, 123e6, time.UTC)
	var cases []opCase
	for _, op := range []string{queue.OpReplay, queue.OpArchive, queue.OpCancel} {
		for _, st := range queue.Statuses {
			bases := map[string]*queue.Task{string(st): fixture(st, now)}
			if st == queue.StatusRunning {
				cr := fixture(st, now)
				cr.CancelRequested, cr.CancelRequestedAt, cr.CancelReason, cr.LastEvent = true, &now, "stop", queue.EventCancelRequested
				bases["running, cancel requested"] = cr
			}
			if st == queue.StatusCancelled {
				// Cancelled because its parent failed: a replay waits for
				// the parent again; another parent completed stays so.
				pc := fixture(st, now)
				pc.Parents = []queue.Parent{{ID: parentID, Done: queue.StatusFailed}, {ID: uuid.MustParse("0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f0002"), Done: queue.StatusCompleted}}
				pc.OnParentFailure, pc.CancelReason = queue.ParentFailureCancel, "parent "+parentID.String()+" failed"
				bases["cancelled by its parent"] = pc
			}
			if st == queue.StatusFailed {
				skew := fixture(st, now)
				skew.UpdatedAt = now.Add(time.Second) // the clock moved back
				bases["failed, updated in the future"] = skew
				// A replay resets the snoozes with the retries; a key's
				// window never changes.
				sz := fixture(st, now)
				sz.SnoozeCount, sz.LastError = queue.MaxSnoozes, queue.ErrSnoozeLimit.Error()
				until := now.Add(time.Hour)
				sz.IdempotencyKey, sz.Unique = "k", &queue.UniqueWindow{Until: &until}
				bases["failed, snoozed to the limit, unique for a while"] = sz
				// A task key puts the ready entry in its key's section.
				keyed := fixture(st, now)
				keyed.TaskKey = "customer-42"
				bases["failed, with a task key"] = keyed
				// Priorities move the ready key; an expiry still ahead stays.
				for _, p := range []queue.Priority{queue.PriorityHigh, queue.PriorityLow} {
					pt := fixture(st, now)
					pt.Priority = p
					later := now.Add(time.Hour)
					pt.ExpiresAt = &later
					bases["failed, priority "+string(p)+", expiry ahead"] = pt
				}
			}
			if st == queue.StatusCompleted {
				big := fixture(st, now)
				big.Output, big.OutputRef = nil, &queue.DataRef{Key: "data/0/" + big.ID.String() + "/output.json", VersionID: "v1", Bytes: 300000, SHA256: strings.Repeat("ab", 32)}
				bases["completed, output offloaded"] = big
			}
			if st == queue.StatusPending {
				low := fixture(st, now)
				low.Priority = queue.PriorityLow
				bases["pending, priority low"] = low
			}
			for name, base := range bases {
				c := opCase{Name: op + " " + name, Op: op, Reason: "from the web UI", Actor: "web UI, S3 keys AKIA…MPLE", Now: now, RequestID: "req-" + op, Base: base}
				if st == queue.StatusCancelled {
					base.Actor = "alice@ops-1, qo cancel" // an earlier operator's: replaced, never kept
				}
				next, err := queue.ApplyOperator(base, op, c.Reason, c.Actor, now, c.RequestID)
				switch {
				case err != nil:
					require.ErrorIs(t, err, queue.ErrInvalidTransition)
					c.Error = "invalid_transition"
				default:
					c.Want = next
					if next != nil {
						c.IndexPut, c.IndexDelete = queue.IndexChanges(base, next)
					}
				}
				cases = append(cases, c)
			}
		}
	}
	sortCases(cases)
	requireFile(t, filepath.Join("testdata", "cases.json"), cases)
}

func sortCases(cs []opCase) {
	for i := 1; i < len(cs); i++ {
		for j := i; j > 0 && cs[j].Name < cs[j-1].Name; j-- {
			cs[j], cs[j-1] = cs[j-1], cs[j]
		}
	}
}

// keyCase is an idempotency key and the marker key queue.IdempotencyKey
// gives it, for the page's search by key.
type keyCase struct {
	Type   string `json:"type"`
	Key    string `json:"key"`
	Marker string `json:"marker"`
}

// TestIdempotencyKeys writes (and checks) the marker keys the page's
// idempotencyKey must compute, from the Go function.
func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	var cases []keyCase
	for _, c := range [][2]string{{"email", "order-42"}, {"report.monthly", "2030-01/ünïcødé key"}, {"a:b", ""}, {"x", "with\x00nul and / slash"}} {
		cases = append(cases, keyCase{Type: c[0], Key: c[1], Marker: queue.IdempotencyKey(c[0], c[1])})
	}
	requireFile(t, filepath.Join("testdata", "idempotency.json"), cases)
}

// pageConstants are the Go values the page uses, generated into
// src/constants.json: src/queue.js exports them under its own names, so no
// status list, key prefix or number of the queue is written by hand in the
// page.
type pageConstants struct {
	FormatVersion    int                    `json:"format_version"`    // queue.FormatVersion
	LayoutVersion    int                    `json:"layout_version"`    // queue.LayoutVersion
	FieldSep         string                 `json:"field_sep"`         // queue.FieldSep
	KeySectionMark   string                 `json:"key_section_mark"`  // queue.KeySectionMark
	Statuses         []queue.Status         `json:"statuses"`          // queue.Statuses
	Terminal         []queue.Status         `json:"terminal"`          // the statuses whose Terminal is true
	Counted          []queue.Status         `json:"counted"`           // queue.CountedStatuses
	Priorities       []queue.Priority       `json:"priorities"`        // queue.Priorities
	PriorityStepMS   int64                  `json:"priority_step_ms"`  // queue.PriorityStep
	ListWindowMS     int64                  `json:"list_window_ms"`    // queue.DefaultListWindow
	RecentMinutes    int                    `json:"recent_minutes"`    // queue.DefaultRecentMinutes
	DeadAfterMS      int64                  `json:"dead_after_ms"`     // queue.DefaultDeadAfter: a worker's liveness bound when it states none
	MaxClockSkewMS   int64                  `json:"max_clock_skew_ms"` // queue.MaxClockSkew: dead past the bound plus this (monitor.DeadAt)
	ThroughputPrefix string                 `json:"throughput_prefix"` // queue.ThroughputPrefix: the monitor's rollup of finishes
	DayHours         int                    `json:"day_hours"`         // inspect.DayHours: the hours last_day covers
	IndexGraceMS     int64                  `json:"index_grace_ms"`    // queue.IndexGrace
	EdgeFanIn        int                    `json:"edge_fan_in"`       // queue.EdgeFanIn: past it, parents' ends reach a child as edge objects
	Keys             map[string]string      `json:"keys"`              // the key layout's keys and prefixes
	WorkflowEnded    []queue.WorkflowStatus `json:"workflow_ended"`    // the workflow statuses whose Ended is true
	// NameMax is the longest name of each kind that becomes one key
	// segment (queue's validateName bounds); testdata/keyparts.json checks
	// the page's rules against the Go validators at these bounds.
	NameMax map[string]int `json:"name_max"`
	// Operators lists, for each action the page offers, the statuses it
	// applies to (queue.OperatorFrom, read off the transition table).
	Operators map[string][]queue.Status `json:"operators"`
}

func constants() pageConstants {
	var terminal []queue.Status
	for _, s := range queue.Statuses {
		if s.Terminal() {
			terminal = append(terminal, s)
		}
	}
	var wfEnded []queue.WorkflowStatus
	for _, s := range []queue.WorkflowStatus{queue.WorkflowIncomplete, queue.WorkflowRunning, queue.WorkflowCompleted, queue.WorkflowFailed, queue.WorkflowCancelled} {
		if s.Ended() {
			wfEnded = append(wfEnded, s)
		}
	}
	ops := map[string][]queue.Status{}
	for _, op := range pageOps {
		ops[op] = queue.OperatorFrom(op)
	}
	return pageConstants{
		FormatVersion: queue.FormatVersion, LayoutVersion: queue.LayoutVersion, FieldSep: queue.FieldSep, KeySectionMark: queue.KeySectionMark,
		Statuses: queue.Statuses, Terminal: terminal, Counted: queue.CountedStatuses, Priorities: queue.Priorities,
		PriorityStepMS: queue.PriorityStep.Milliseconds(), ListWindowMS: queue.DefaultListWindow.Milliseconds(),
		RecentMinutes: queue.DefaultRecentMinutes,
		DeadAfterMS:   queue.DefaultDeadAfter.Milliseconds(), MaxClockSkewMS: queue.MaxClockSkew.Milliseconds(),
		ThroughputPrefix: queue.ThroughputPrefix, DayHours: inspect.DayHours,
		IndexGraceMS: queue.IndexGrace.Milliseconds(), EdgeFanIn: queue.EdgeFanIn,
		Keys: map[string]string{
			"config": queue.ConfigKey, "control": queue.ControlKey, "tasks": queue.TasksPrefix, "ready": queue.ReadyPrefix,
			"leases": queue.LeasesPrefix, "waiting": queue.WaitingPrefix, "dead": queue.DeadPrefix, "workers": queue.WorkersPrefix,
			"schedules": queue.SchedulesPrefix, "idempotency": queue.IdempotencyPrefix, "workflows": queue.WorkflowsPrefix,
			"workflow_names": queue.WorkflowNamesPrefix, "data": queue.DataPrefix, "edges": queue.EdgesPrefix,
		},
		WorkflowEnded: wfEnded, Operators: ops,
		NameMax: map[string]int{"task_type": 64, "worker_id": 128, "schedule_name": 64, "workflow_name": 64},
	}
}

// pageOps are the operator actions the page offers.
var pageOps = []string{queue.OpReplay, queue.OpArchive, queue.OpCancel}

// TestConstants keeps the page's copy of the queue's values equal to the
// Go ones.
func TestConstants(t *testing.T) {
	t.Parallel()
	c := constants()
	for _, op := range pageOps {
		require.NotEmpty(t, c.Operators[op], "no status allows %s", op)
	}
	for name, key := range c.Keys {
		require.Contains(t, queue.Keys(), key, "keys.%s is not in the key layout", name)
	}
	requireFile(t, filepath.Join("src", "constants.json"), c)
}

// TestNoCopiedValues fails when the page's sources write out what
// src/constants.json carries: a status list, a key prefix or the layout's
// numbers belong in the generated file, read through src/queue.js.
func TestNoCopiedValues(t *testing.T) {
	t.Parallel()
	srcs, err := filepath.Glob(filepath.Join("src", "*.js"))
	require.NoError(t, err)
	require.NotEmpty(t, srcs)
	var prefixes []string
	for _, k := range queue.Keys() {
		prefixes = append(prefixes, regexp.QuoteMeta(k))
	}
	statuses := make([]string, len(queue.Statuses))
	for i, s := range queue.Statuses {
		statuses[i] = string(s)
	}
	st := `'(?:` + strings.Join(statuses, "|") + `)'`
	for _, tc := range []struct {
		what string
		re   *regexp.Regexp
	}{
		{"a key or key prefix of the layout", regexp.MustCompile(`['\x60](?:` + strings.Join(prefixes, "|") + `)['\x60$]`)},
		{"a list of statuses", regexp.MustCompile(`\[\s*` + st + `(?:\s*,\s*` + st + `)*\s*\]`)},
		{"the priority step", regexp.MustCompile(`15 \* 60 \* 1000|\b900000\b`)},
		{"a format version", regexp.MustCompile(`format:? (?:===? )?\d`)},
	} {
		for _, path := range srcs {
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			for i, line := range strings.Split(string(b), "\n") {
				if tc.re.MatchString(line) {
					t.Errorf("%s:%d writes out %s; take it from src/constants.json (through src/queue.js): %s", path, i+1, tc.what, strings.TrimSpace(line))
				}
			}
		}
	}
}
