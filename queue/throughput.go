package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/qo-queue/qo/store"
)

// The throughput rollup keeps the fleet's finishes by minute past the
// workers' lives: a worker's heartbeat carries only its own last
// DefaultRecentMinutes minutes (WorkerInfo.Recent), gone when it stops.
// The leading monitor folds every registered worker's minutes into one
// object per hour, monitor/throughput/{YYYY-MM-DDTHH}.json (UTC), at each
// worker-health check, and deletes the objects older than
// ThroughputKeep. See doc.go, "Throughput rollup".

// ThroughputPrefix holds the rollup's hour objects.
const ThroughputPrefix = MonitorPrefix + "throughput/"

// ThroughputKeep is how long the rollup keeps an hour: at most
// ThroughputKeep/hour + 1 objects (169) exist at a time.
const ThroughputKeep = 7 * 24 * time.Hour

// ThroughputKey is the key of the hour object holding the minute at.
func ThroughputKey(at time.Time) string {
	return ThroughputPrefix + at.UTC().Format("2006-01-02T15") + ".json"
}

// ParseThroughputKey returns the hour an hour object's key names.
func ParseThroughputKey(key string) (time.Time, error) {
	s, ok := strings.CutPrefix(key, ThroughputPrefix)
	if !ok || !strings.HasSuffix(s, ".json") {
		return time.Time{}, fmt.Errorf("%q is not a throughput rollup key (%s{YYYY-MM-DDTHH}.json)", key, ThroughputPrefix)
	}
	t, err := time.Parse("2006-01-02T15", strings.TrimSuffix(s, ".json"))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a throughput rollup key: %w", key, err)
	}
	return t, nil
}

// ThroughputHour is one hour object of the rollup.
type ThroughputHour struct {
	Format int       `json:"format"`
	Hour   time.Time `json:"hour"`
	// Minutes are the minutes with finishes, oldest first.
	Minutes []ThroughputMinute `json:"minutes"`
}

// ThroughputMinute is one minute of the rollup: its totals and, while
// workers may still report it (DefaultRecentMinutes + 1 after its start),
// each worker's own counts, so that reading a worker again never counts
// its finishes twice. Once closed only the totals are kept.
type ThroughputMinute struct {
	MinuteCount
	Workers map[string]MinuteCount `json:"workers,omitempty"`
}

// Fold adds worker id's count of one minute (m.Start, a minute of this
// hour) to the hour: a worker's count of a minute only grows, so the
// larger of the kept and the new one is right. It reports whether the hour
// changed. A minute that is closed is left as it is.
func (h *ThroughputHour) Fold(id string, m MinuteCount) bool {
	m.Start = m.Start.UTC().Truncate(time.Minute)
	if m.Completed == 0 && m.Failed == 0 {
		return false
	}
	i := sort.Search(len(h.Minutes), func(i int) bool { return !h.Minutes[i].Start.Before(m.Start) })
	if i == len(h.Minutes) || !h.Minutes[i].Start.Equal(m.Start) {
		h.Minutes = append(h.Minutes, ThroughputMinute{})
		copy(h.Minutes[i+1:], h.Minutes[i:])
		h.Minutes[i] = ThroughputMinute{MinuteCount: MinuteCount{Start: m.Start}, Workers: map[string]MinuteCount{}}
	}
	tm := &h.Minutes[i]
	if tm.Workers == nil {
		return false // closed
	}
	old := tm.Workers[id]
	cur := MinuteCount{Start: m.Start, Completed: max(old.Completed, m.Completed), Failed: max(old.Failed, m.Failed)}
	if cur == old {
		return false
	}
	tm.Workers[id] = cur
	tm.Completed += cur.Completed - old.Completed
	tm.Failed += cur.Failed - old.Failed
	return true
}

// Close drops the per-worker counts of the minutes that began before
// before, keeping their totals, and reports whether the hour changed.
func (h *ThroughputHour) Close(before time.Time) bool {
	changed := false
	for i := range h.Minutes {
		if h.Minutes[i].Workers != nil && h.Minutes[i].Start.Before(before) {
			h.Minutes[i].Workers = nil
			changed = true
		}
	}
	return changed
}

// ThroughputOpenFor is how long after its start a minute stays open: the
// DefaultRecentMinutes a heartbeat carries it, and one more.
const ThroughputOpenFor = (DefaultRecentMinutes + 1) * time.Minute

// DecodeThroughputHour decodes an hour object.
func DecodeThroughputHour(key string, body []byte) (*ThroughputHour, error) {
	var h ThroughputHour
	if err := json.Unmarshal(body, &h); err != nil {
		return nil, &MalformedError{Key: key, Err: err}
	}
	if h.Format != FormatVersion {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", h.Format, FormatVersion)}
	}
	if want, err := ParseThroughputKey(key); err == nil && !h.Hour.Equal(want) {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("object says hour %s", h.Hour.Format(time.RFC3339))}
	}
	return &h, nil
}

// LoadThroughputHour reads the hour object of the hour holding at; a
// missing one is an empty hour.
func (q *Queue) LoadThroughputHour(ctx context.Context, at time.Time) (*ThroughputHour, error) {
	key := ThroughputKey(at)
	obj, err := q.getLimited(ctx, key, maxRollupObject)
	if errors.Is(err, store.ErrNotFound) {
		return &ThroughputHour{Format: FormatVersion, Hour: at.UTC().Truncate(time.Hour)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read throughput rollup %s: %w", key, err)
	}
	return DecodeThroughputHour(key, obj.Body)
}

// SaveThroughputHour writes an hour object (1 PUT). Only the leading
// monitor writes them; two monitors that both believe they lead fold the
// same registry, so the last write loses nothing the next check does not
// fold again.
func (q *Queue) SaveThroughputHour(ctx context.Context, h *ThroughputHour) error {
	h.Format = FormatVersion
	body, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("save throughput rollup: %w", err)
	}
	key := ThroughputKey(h.Hour)
	if _, err := q.s.Put(ctx, key, body, store.Condition{}); err != nil {
		return fmt.Errorf("save throughput rollup %s: %w", key, err)
	}
	return nil
}

// ListThroughput lists the hour objects of the hours from since on (one
// LIST: at most ThroughputKeep/hour + 1 objects exist).
func (q *Queue) ListThroughput(ctx context.Context, since time.Time) ([]store.ObjectInfo, error) {
	var out []store.ObjectInfo
	token := ""
	after := ""
	if !since.IsZero() {
		after = ThroughputKey(since.Add(-time.Hour))
	}
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: ThroughputPrefix, StartAfter: after, Token: token})
		if err != nil {
			return nil, fmt.Errorf("list throughput rollup: %w", err)
		}
		out = append(out, page.Objects...)
		if page.NextToken == "" {
			return out, nil
		}
		token = page.NextToken
	}
}

// ReadThroughputHour reads one hour object by key.
func (q *Queue) ReadThroughputHour(ctx context.Context, key string) (*ThroughputHour, error) {
	obj, err := q.getLimited(ctx, key, maxRollupObject)
	if err != nil {
		return nil, fmt.Errorf("read throughput rollup %s: %w", key, err)
	}
	return DecodeThroughputHour(key, obj.Body)
}

// PruneThroughput deletes the hour objects older than ThroughputKeep
// before now (one LIST; DELETEs are free).
func (q *Queue) PruneThroughput(ctx context.Context, now time.Time) (int, error) {
	objs, err := q.ListThroughput(ctx, time.Time{})
	if err != nil {
		return 0, err
	}
	cut := now.Add(-ThroughputKeep).UTC().Truncate(time.Hour)
	n := 0
	for _, o := range objs {
		hour, err := ParseThroughputKey(o.Key)
		if err != nil || !hour.Before(cut) {
			continue
		}
		if err := q.s.Delete(ctx, o.Key, store.Condition{}); err != nil {
			return n, fmt.Errorf("prune throughput rollup: %w", err)
		}
		n++
	}
	return n, nil
}
