package webui

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/qo-queue/qo/inspect"
	"github.com/qo-queue/qo/monitor"
	"github.com/qo-queue/qo/monitor/view"
	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/throughput"
	"github.com/qo-queue/qo/store"
)

// readModelCases are the read model's figures the page computes itself
// when it reads the bucket directly, as the Go read model (inspect)
// computes them: test/readmodel.test.js checks src/queue.js and
// src/fleet.js against testdata/readmodel.json, which this test keeps
// equal to what the Go code answers.
type readModelCases struct {
	Health   []healthCase   `json:"health"`
	Unserved []unservedCase `json:"unserved"`
	Rate     []rateCase     `json:"rate"`
	// Throughput: the rollup's hour objects and the live heartbeats
	// merged into the windows of inspect.ThroughputOf.
	Throughput []throughputCase `json:"throughput"`
	// Holds: a worker's shares of the fleet-wide limits as text
	// (view.HoldsText).
	Holds []holdsCase `json:"holds"`
}

type holdsCase struct {
	Holds map[string]int `json:"holds"`
	Want  string         `json:"want"`
}

type throughputCase struct {
	Name    string              `json:"name"`
	Hours   []*throughput.Hour  `json:"hours"`
	Workers []*queue.WorkerInfo `json:"workers"`
	Now     time.Time           `json:"now"`
	Want    inspect.Throughput  `json:"want"`
}

type healthCase struct {
	LastHeartbeat    time.Time     `json:"last_heartbeat"`
	DeadAfterSeconds int           `json:"dead_after_seconds"`
	Now              time.Time     `json:"now"`
	State            monitor.State `json:"state"`
}

type unservedCase struct {
	Name    string                          `json:"name"`
	ByType  map[string]map[queue.Status]int `json:"by_type"`
	Workers []*queue.WorkerInfo             `json:"workers"`
	Control queue.Control                   `json:"control"`
	Now     time.Time                       `json:"now"`
	Want    []view.Unserved                 `json:"want"`
}

// rateCase is a series of registry reads and the rate after each.
type rateCase struct {
	Name  string     `json:"name"`
	Reads []rateRead `json:"reads"`
}

type rateRead struct {
	Now     time.Time           `json:"now"`
	Workers []*queue.WorkerInfo `json:"workers"`
	Want    *view.Rate          `json:"want"`
}

func TestReadModelCases(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var c readModelCases
	for _, tc := range []struct {
		age   time.Duration
		bound int
	}{{0, 0}, {15 * time.Second, 0}, {15*time.Second + time.Millisecond, 0}, {22 * time.Second, 0}, {22*time.Second + time.Millisecond, 0},
		{3 * time.Minute, 0}, {45 * time.Second, 60}, {46 * time.Second, 60}, {62 * time.Second, 60}, {63 * time.Second, 60}} {
		w := &queue.WorkerInfo{LastHeartbeat: now.Add(-tc.age), DeadAfterSeconds: tc.bound}
		c.Health = append(c.Health, healthCase{LastHeartbeat: w.LastHeartbeat, DeadAfterSeconds: tc.bound, Now: now, State: monitor.Judge(w, now)})
	}

	byType := map[string]map[queue.Status]int{
		"served": {queue.StatusPending: 2}, "nobody": {queue.StatusPending: 1}, "paused": {queue.StatusPending: 3},
		"deadonly": {queue.StatusPending: 1}, "running": {queue.StatusRunning: 1},
	}
	workers := []*queue.WorkerInfo{
		{ID: "live", LastHeartbeat: now.Add(-10 * time.Second), Types: []string{"served", "paused"}},
		{ID: "gone", LastHeartbeat: now.Add(-30 * time.Second), Types: []string{"deadonly"}},
		{ID: "patient", LastHeartbeat: now.Add(-30 * time.Second), DeadAfterSeconds: 60, Types: []string{"served"}},
	}
	for _, u := range []struct {
		name string
		ctl  queue.Control
	}{
		{"a type nobody serves, one only a dead worker served, a paused type", queue.Control{Types: map[string]queue.Pause{"paused": {}}}},
		{"the whole queue paused", queue.Control{Paused: true}},
	} {
		got := inspect.Unserved(queue.Stats{ByType: byType}, monitor.Health(workers, now), u.ctl)
		c.Unserved = append(c.Unserved, unservedCase{Name: u.name, ByType: byType, Workers: workers, Control: u.ctl, Now: now, Want: got})
	}

	// A fleet of two whose counters grow at 10 and 14.5 GET/s, heartbeating
	// every 10 s at offsets of their own, read every 4 s.
	counts := func(n int64) *store.Counts { return &store.Counts{OK: map[store.Op]int64{store.OpGet: n}} }
	var m inspect.RateMeter
	rc := rateCase{Name: "counters growing at 24.5 GET/s, heartbeats every 10 s, reads every 4 s"}
	for i := 0; i < 8; i++ {
		at := now.Add(time.Duration(i) * 4 * time.Second)
		var ws []*queue.WorkerInfo
		for _, f := range []struct {
			id     string
			perSec float64
			offset time.Duration
		}{{"a", 10, 0}, {"b", 14.5, 3 * time.Second}} {
			n := at.Sub(now.Add(f.offset)) / (10 * time.Second)
			if at.Before(now.Add(f.offset)) {
				n = -1
			}
			beat := now.Add(f.offset + n*10*time.Second)
			ws = append(ws, &queue.WorkerInfo{ID: f.id, LastHeartbeat: beat, Requests: counts(int64(f.perSec*beat.Sub(now).Seconds()) + 1000)})
		}
		rc.Reads = append(rc.Reads, rateRead{Now: at, Workers: ws, Want: m.Observe(monitor.Health(ws, at), store.AWSStandardPrices)})
	}
	c.Rate = append(c.Rate, rc)

	// A worker that stopped (its finishes only in the rollup), its
	// successor (counted in an open minute with the rollup's copy of it
	// too), closed minutes of earlier hours, and a day-old hour.
	at := time.Date(2030, 1, 1, 12, 5, 30, 0, time.UTC)
	minute := at.Truncate(time.Minute)
	open := &throughput.Hour{Format: queue.FormatVersion, Hour: at.Truncate(time.Hour)}
	open.Fold("old", queue.MinuteCount{Start: minute.Add(-2 * time.Minute), Completed: 40, Failed: 2})
	open.Fold("old", queue.MinuteCount{Start: minute, Completed: 13})
	open.Fold("new", queue.MinuteCount{Start: minute, Completed: 3})
	closed := &throughput.Hour{Format: queue.FormatVersion, Hour: at.Truncate(time.Hour).Add(-time.Hour)}
	closed.Fold("gone", queue.MinuteCount{Start: closed.Hour.Add(30 * time.Minute), Completed: 7, Failed: 1})
	closed.Close(at)
	old := &throughput.Hour{Format: queue.FormatVersion, Hour: at.Truncate(time.Hour).Add(-23 * time.Hour)}
	old.Fold("gone", queue.MinuteCount{Start: old.Hour, Completed: 100})
	old.Close(at)
	live := []*queue.WorkerInfo{{ID: "new", LastHeartbeat: at, Recent: []queue.MinuteCount{{Start: minute, Completed: 5}}}}
	hours := []*throughput.Hour{old, closed, open}
	c.Throughput = append(c.Throughput, throughputCase{Name: "a restart, closed minutes and a day-old hour", Hours: hours, Workers: live, Now: at,
		Want: inspect.ThroughputOf(hours, live, at, queue.DefaultRecentMinutes)})
	for _, holds := range []map[string]int{
		nil,
		{"b": 1},
		{"send": 2, "rate:send": 30, "key:send": 1, "keyrate:send": 6, "archive": 0, "rate:b": 12},
	} {
		c.Holds = append(c.Holds, holdsCase{Holds: holds, Want: view.HoldsText(holds)})
	}
	requireFile(t, filepath.Join("testdata", "readmodel.json"), c)
}
