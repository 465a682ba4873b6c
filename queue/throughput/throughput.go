package throughput

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Queue is what the rollup needs of a queue: *queue.Queue is one.
type Queue interface {
	Store() store.Store
}

// maxObject bounds an hour of the rollup: its open minutes keep a count
// per worker, so it grows with the fleet.
const maxObject = 8 << 20

// Keep is how long the rollup keeps an hour: at most
// Keep/hour + 1 objects (169) exist at a time.
const Keep = 7 * 24 * time.Hour

// Key is the key of the hour object holding the minute at.
func Key(at time.Time) string {
	return queue.ThroughputPrefix + at.UTC().Format("2006-01-02T15") + ".json"
}

// ParseKey returns the hour an hour object's key names.
func ParseKey(key string) (time.Time, error) {
	s, ok := strings.CutPrefix(key, queue.ThroughputPrefix)
	if !ok || !strings.HasSuffix(s, ".json") {
		return time.Time{}, fmt.Errorf("%q is not a throughput rollup key (%s{YYYY-MM-DDTHH}.json)", key, queue.ThroughputPrefix)
	}
	t, err := time.Parse("2006-01-02T15", strings.TrimSuffix(s, ".json"))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a throughput rollup key: %w", key, err)
	}
	return t, nil
}

// Hour is one hour object of the rollup.
type Hour struct {
	Format int       `json:"format"`
	Hour   time.Time `json:"hour"`
	// Minutes are the minutes with finishes, oldest first.
	Minutes []Minute `json:"minutes"`
}

// Minute is one minute of the rollup: its totals and, while
// workers may still report it (queue.DefaultRecentMinutes + 1 after its start),
// each worker's own counts, so that reading a worker again never counts
// its finishes twice. Once closed only the totals are kept.
type Minute struct {
	queue.MinuteCount
	Workers map[string]queue.MinuteCount `json:"workers,omitempty"`
}

// Fold adds worker id's count of one minute (m.Start, a minute of this
// hour) to the hour: a worker's count of a minute only grows, so the
// larger of the kept and the new one is right. It reports whether the hour
// changed. A minute that is closed is left as it is.
func (h *Hour) Fold(id string, m queue.MinuteCount) bool {
	m.Start = m.Start.UTC().Truncate(time.Minute)
	if m.Completed == 0 && m.Failed == 0 {
		return false
	}
	i := sort.Search(len(h.Minutes), func(i int) bool { return !h.Minutes[i].Start.Before(m.Start) })
	if i == len(h.Minutes) || !h.Minutes[i].Start.Equal(m.Start) {
		h.Minutes = append(h.Minutes, Minute{})
		copy(h.Minutes[i+1:], h.Minutes[i:])
		h.Minutes[i] = Minute{MinuteCount: queue.MinuteCount{Start: m.Start}, Workers: map[string]queue.MinuteCount{}}
	}
	tm := &h.Minutes[i]
	if tm.Workers == nil {
		return false // closed
	}
	old := tm.Workers[id]
	cur := queue.MinuteCount{Start: m.Start, Completed: max(old.Completed, m.Completed), Failed: max(old.Failed, m.Failed)}
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
func (h *Hour) Close(before time.Time) bool {
	changed := false
	for i := range h.Minutes {
		if h.Minutes[i].Workers != nil && h.Minutes[i].Start.Before(before) {
			h.Minutes[i].Workers = nil
			changed = true
		}
	}
	return changed
}

// OpenFor is how long after its start a minute stays open: the
// queue.DefaultRecentMinutes a heartbeat carries it, and one more.
const OpenFor = (queue.DefaultRecentMinutes + 1) * time.Minute

// Decode decodes an hour object.
func Decode(key string, body []byte) (*Hour, error) {
	var h Hour
	if err := json.Unmarshal(body, &h); err != nil {
		return nil, &queue.MalformedError{Key: key, Err: err}
	}
	if h.Format != queue.FormatVersion {
		return nil, &queue.MalformedError{Key: key, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", h.Format, queue.FormatVersion)}
	}
	if want, err := ParseKey(key); err == nil && !h.Hour.Equal(want) {
		return nil, &queue.MalformedError{Key: key, Err: fmt.Errorf("object says hour %s", h.Hour.Format(time.RFC3339))}
	}
	return &h, nil
}

// Load reads the hour object of the hour holding at; a
// missing one is an empty hour.
func Load(ctx context.Context, q Queue, at time.Time) (*Hour, error) {
	key := Key(at)
	obj, err := queue.GetLimited(ctx, q.Store(), key, maxObject)
	if errors.Is(err, store.ErrNotFound) {
		return &Hour{Format: queue.FormatVersion, Hour: at.UTC().Truncate(time.Hour)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read throughput rollup %s: %w", key, err)
	}
	return Decode(key, obj.Body)
}

// Save writes an hour object (1 PUT). Only the leading
// monitor writes them; two monitors that both believe they lead fold the
// same registry, so the last write loses nothing the next check does not
// fold again.
func Save(ctx context.Context, q Queue, h *Hour) error {
	h.Format = queue.FormatVersion
	body, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("save throughput rollup: %w", err)
	}
	key := Key(h.Hour)
	if _, err := q.Store().Put(ctx, key, body, store.Condition{}); err != nil {
		return fmt.Errorf("save throughput rollup %s: %w", key, err)
	}
	return nil
}

// List lists the hour objects of the hours from since on (one
// LIST: at most Keep/hour + 1 objects exist).
func List(ctx context.Context, q Queue, since time.Time) ([]store.ObjectInfo, error) {
	var out []store.ObjectInfo
	token := ""
	after := ""
	if !since.IsZero() {
		after = Key(since.Add(-time.Hour))
	}
	for {
		page, err := q.Store().List(ctx, store.ListParams{Prefix: queue.ThroughputPrefix, StartAfter: after, Token: token})
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

// Read reads one hour object by key.
func Read(ctx context.Context, q Queue, key string) (*Hour, error) {
	obj, err := queue.GetLimited(ctx, q.Store(), key, maxObject)
	if err != nil {
		return nil, fmt.Errorf("read throughput rollup %s: %w", key, err)
	}
	return Decode(key, obj.Body)
}

// Prune deletes the hour objects older than Keep
// before now (one LIST; DELETEs are free).
func Prune(ctx context.Context, q Queue, now time.Time) (int, error) {
	objs, err := List(ctx, q, time.Time{})
	if err != nil {
		return 0, err
	}
	cut := now.Add(-Keep).UTC().Truncate(time.Hour)
	n := 0
	for _, o := range objs {
		hour, err := ParseKey(o.Key)
		if err != nil || !hour.Before(cut) {
			continue
		}
		if err := q.Store().Delete(ctx, o.Key, store.Condition{}); err != nil {
			return n, fmt.Errorf("prune throughput rollup: %w", err)
		}
		n++
	}
	return n, nil
}
