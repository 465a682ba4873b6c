package inspect

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/queue/throughput"
)

// DayHours is how many hours LastDay covers.
const DayHours = 24

// throughputReader reads the rollup's hour objects of the last day,
// keeping each by ETag: a read lists them (1 LIST; the listing starts
// after the day's first hour, so it holds at most DayHours + 1 keys
// however long the rollup is kept) and GETs only the ones that changed
// since it last read them (the current hour, while the leader folds into
// it), so its cost does not grow with history.
type throughputReader struct {
	mu    sync.Mutex
	hours map[string]keptHour // by key
}

type keptHour struct {
	etag string
	hour *throughput.Hour
}

// read returns the hour objects of the hours from since on, and the keys
// of those that were malformed (skipped).
func (r *throughputReader) read(ctx context.Context, q *queue.Queue, since time.Time) ([]*throughput.Hour, []queue.MalformedError, error) {
	objs, err := throughput.List(ctx, q, since)
	if err != nil {
		return nil, nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hours == nil {
		r.hours = map[string]keptHour{}
	}
	listed := map[string]bool{}
	var out []*throughput.Hour
	var bad []queue.MalformedError
	for _, o := range objs {
		listed[o.Key] = true
		if k, ok := r.hours[o.Key]; ok && k.etag == o.ETag && o.ETag != "" {
			out = append(out, k.hour)
			continue
		}
		h, err := throughput.Read(ctx, q, o.Key)
		var m *queue.MalformedError
		switch {
		case errors.As(err, &m):
			bad = append(bad, *m)
			continue
		case errors.Is(err, queue.ErrNotFound):
			continue // pruned since the listing
		case err != nil:
			return nil, nil, err
		}
		r.hours[o.Key] = keptHour{etag: o.ETag, hour: h}
		out = append(out, h)
	}
	for k := range r.hours {
		if !listed[k] {
			delete(r.hours, k)
		}
	}
	return out, bad, nil
}

// Throughput is the fleet's finishes over three windows ending with the
// minute (hour) holding the time they were computed at, oldest first.
type Throughput struct {
	Recent   []queue.MinuteCount `json:"recent"`    // the last recentMinutes minutes
	LastHour []queue.MinuteCount `json:"last_hour"` // the last 60 minutes
	LastDay  []queue.MinuteCount `json:"last_day"`  // the last DayHours hours
}

// ThroughputOf merges the rollup's hour objects with the live workers'
// heartbeats (each worker's count of an open minute counted once, the
// larger of the two) into the windows ending at now.
func ThroughputOf(hours []*throughput.Hour, workers []*queue.WorkerInfo, now time.Time, recentMinutes int) Throughput {
	if recentMinutes <= 0 {
		recentMinutes = queue.DefaultRecentMinutes
	}
	minutes := merged(hours, workers)
	return Throughput{
		Recent:   series(minutes, now, time.Minute, recentMinutes),
		LastHour: series(minutes, now, time.Minute, 60),
		LastDay:  series(minutes, now, time.Hour, DayHours),
	}
}

// merged is the finishes by minute from the rollup and the live
// heartbeats: for a minute still open, each worker counts once, with the
// larger of its rolled-up and its live count; a closed minute is the
// rollup's total.
func merged(hours []*throughput.Hour, workers []*queue.WorkerInfo) map[time.Time]queue.MinuteCount {
	type wm struct {
		id string
		at time.Time
	}
	per := map[wm]queue.MinuteCount{}
	out := map[time.Time]queue.MinuteCount{}
	closed := map[time.Time]bool{}
	for _, h := range hours {
		for _, m := range h.Minutes {
			if m.Workers == nil {
				out[m.Start], closed[m.Start] = m.MinuteCount, true
				continue
			}
			for id, c := range m.Workers {
				per[wm{id, m.Start}] = c
			}
		}
	}
	for _, w := range workers {
		for _, c := range w.Recent {
			at := c.Start.UTC().Truncate(time.Minute)
			k := wm{w.ID, at}
			old := per[k]
			per[k] = queue.MinuteCount{Start: at, Completed: max(old.Completed, c.Completed), Failed: max(old.Failed, c.Failed)}
		}
	}
	for k, c := range per {
		if closed[k.at] {
			continue // a closed minute's total already counts every worker
		}
		t := out[k.at]
		t.Start = k.at
		t.Completed += c.Completed
		t.Failed += c.Failed
		out[k.at] = t
	}
	return out
}

// series returns n buckets of width step ending with the one holding now,
// oldest first, summing minutes.
func series(minutes map[time.Time]queue.MinuteCount, now time.Time, step time.Duration, n int) []queue.MinuteCount {
	first := now.UTC().Truncate(step).Add(-time.Duration(n-1) * step)
	out := make([]queue.MinuteCount, n)
	for i := range out {
		out[i].Start = first.Add(time.Duration(i) * step)
	}
	for at, c := range minutes {
		if at.Before(first) {
			continue
		}
		i := int(at.Sub(first) / step)
		if i >= n {
			continue
		}
		out[i].Completed += c.Completed
		out[i].Failed += c.Failed
	}
	return out
}
