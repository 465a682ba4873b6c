package queue

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/qo-queue/qo/store"
)

// ListQuery selects tasks for List.
type ListQuery struct {
	Shard  string // "" = all shards
	Status Status // "" = every status but archived
	Type   string // "" = every type
	Limit  int    // tasks per page; <= 0: 100; at most 1000
	Cursor string // "" for the first page; TaskPage.Cursor for the next
	// MaxScan bounds the objects examined by one call (<= 0: 1000), so a
	// selective filter over millions of tasks returns a short page with a
	// cursor instead of reading everything.
	MaxScan int
}

// TaskPage is one page of List. An empty Cursor means the listing is done;
// a page may hold fewer than Limit tasks and still have a Cursor.
type TaskPage struct {
	Tasks     []*Task          `json:"tasks"`
	Cursor    string           `json:"next_cursor"`
	Malformed []MalformedError `json:"-"`
	// Stale lists index entries that did not match their task (the task
	// moved on, or the entry is a leftover); they were skipped.
	Stale []string `json:"stale_index_entries,omitempty"`
}

// Default and maximum page sizes of List.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
	defaultMaxScan   = 1000
)

// listCursor is the decoded form of the opaque cursor.
type listCursor struct {
	V      int    `json:"v"`
	Mode   string `json:"m"`           // "ready", "leases" or "tasks"
	Shard  string `json:"s,omitempty"` // tasks mode: the shard being scanned
	After  string `json:"a,omitempty"` // resume after this key
	Filter string `json:"f"`           // the query's shard/status/type, to refuse a cursor reused with other filters
}

func encodeCursor(c listCursor) string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(s string) (listCursor, error) {
	var c listCursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.V != 1 {
		return c, invalidInput("cursor %q is not a cursor from this qo (pass next_cursor back unchanged)", truncate(s, 40))
	}
	return c, nil
}

// List returns one page of tasks. Pending and running tasks come from the
// ready and lease indexes (each entry confirmed by a GET of its task; stale
// entries are reported in Stale and skipped; a pending task whose entry is
// missing shows up once Sweep has repaired it). Every other query scans
// tasks/{shard}/ in key order, shard after shard, reading each task. The
// cursor is opaque: it encodes the position (index or shard + key).
func (q *Queue) List(ctx context.Context, qry ListQuery) (TaskPage, error) {
	var page TaskPage
	if qry.Status != "" && !qry.Status.Valid() {
		_, err := ParseStatus(string(qry.Status))
		return page, fmt.Errorf("list: %w", err)
	}
	if qry.Type != "" {
		if err := ValidateType(qry.Type); err != nil {
			return page, fmt.Errorf("list: %w", err)
		}
	}
	if qry.Shard != "" && !q.ValidShard(qry.Shard) {
		return page, fmt.Errorf("list: %w", invalidInput("shard %q is not one of this queue's shards (%s..%s)", qry.Shard, q.shards[0], q.shards[len(q.shards)-1]))
	}
	if qry.Limit <= 0 {
		qry.Limit = DefaultListLimit
	}
	if qry.Limit > MaxListLimit {
		qry.Limit = MaxListLimit
	}
	if qry.MaxScan <= 0 {
		qry.MaxScan = defaultMaxScan
	}
	if qry.MaxScan < qry.Limit {
		qry.MaxScan = qry.Limit
	}
	filter := qry.Shard + "|" + string(qry.Status) + "|" + qry.Type
	mode := "tasks"
	switch qry.Status {
	case StatusPending:
		mode = "ready"
	case StatusRunning:
		mode = "leases"
	}
	cur := listCursor{V: 1, Mode: mode, Filter: filter}
	if qry.Cursor != "" {
		c, err := decodeCursor(qry.Cursor)
		if err != nil {
			return page, fmt.Errorf("list: %w", err)
		}
		if c.Mode != mode || c.Filter != filter {
			return page, fmt.Errorf("list: %w", invalidInput("cursor was made for another query (shard/status/type changed); start again without --cursor"))
		}
		cur = c
	}
	var err error
	if mode == "tasks" {
		page, err = q.listScan(ctx, qry, cur)
	} else {
		page, err = q.listIndex(ctx, qry, cur)
	}
	if err != nil {
		return TaskPage{}, fmt.Errorf("list: %w", err)
	}
	if page.Tasks == nil {
		page.Tasks = []*Task{}
	}
	return page, nil
}

type fetched struct {
	key  string // task key
	from string // index key it came from ("" for scans)
	t    *Task
	err  error
}

// fetchAll GETs tasks in parallel, keeping order.
func (q *Queue) fetchAll(ctx context.Context, items []fetched) {
	forEach(len(items), sweepParallelism, func(i int) {
		obj, err := q.s.Get(ctx, items[i].key)
		if err != nil {
			items[i].err = err
			return
		}
		items[i].t, items[i].err = DecodeTask(items[i].key, obj.Body)
	})
}

// absorb moves a fetched item into the page; returns false on a hard error.
func (page *TaskPage) absorb(f fetched) error {
	var m *MalformedError
	switch {
	case f.err == nil:
		return nil
	case errors.Is(f.err, store.ErrNotFound):
		if f.from != "" {
			page.Stale = append(page.Stale, f.from)
		}
		return nil
	case errors.As(f.err, &m):
		page.Malformed = append(page.Malformed, *m)
		return nil
	}
	return f.err
}

func (q *Queue) listIndex(ctx context.Context, qry ListQuery, cur listCursor) (TaskPage, error) {
	var page TaskPage
	prefix := ReadyPrefix
	if cur.Mode == "leases" {
		prefix = LeasesPrefix
	}
	scanned := 0
	after := cur.After
	for {
		need := qry.Limit - len(page.Tasks)
		budget := qry.MaxScan - scanned
		if need <= 0 || budget <= 0 {
			break
		}
		lp, err := q.s.List(ctx, store.ListParams{Prefix: prefix, StartAfter: after, Limit: min(MaxListLimit, budget)})
		if err != nil {
			return page, err
		}
		var items []fetched
		lastKey := after
		for _, o := range lp.Objects {
			if len(items) >= need {
				break
			}
			scanned++
			lastKey = o.Key
			var shard, typ string
			var key string
			if cur.Mode == "ready" {
				e, err := ParseReadyKey(o.Key)
				if err != nil {
					page.Stale = append(page.Stale, o.Key)
					continue
				}
				shard, typ, key = e.Shard, e.Type, taskKeyFor(e.Shard, e.ID)
			} else {
				e, err := ParseLeaseKey(o.Key)
				if err != nil {
					page.Stale = append(page.Stale, o.Key)
					continue
				}
				shard, key = e.Shard, taskKeyFor(e.Shard, e.ID)
			}
			if len(shard) != q.cfg.ShardChars || (qry.Shard != "" && shard != qry.Shard) || (typ != "" && qry.Type != "" && typ != qry.Type) {
				continue
			}
			items = append(items, fetched{key: key, from: o.Key})
		}
		q.fetchAll(ctx, items)
		for _, f := range items {
			if err := page.absorb(f); err != nil {
				return page, err
			}
			if f.t == nil {
				continue
			}
			var canonical string
			if cur.Mode == "ready" && f.t.Status == StatusPending {
				canonical = ReadyKey(f.t)
			} else if cur.Mode == "leases" && f.t.Status == StatusRunning {
				canonical = LeaseKey(f.t)
			}
			if canonical != f.from {
				page.Stale = append(page.Stale, f.from)
				continue
			}
			if qry.Type != "" && f.t.Type != qry.Type {
				continue
			}
			page.Tasks = append(page.Tasks, f.t)
		}
		after = lastKey
		done := lp.NextToken == "" && (len(lp.Objects) == 0 || lastKey == lp.Objects[len(lp.Objects)-1].Key)
		if done {
			return page, nil
		}
	}
	c := cur
	c.After = after
	page.Cursor = encodeCursor(c)
	return page, nil
}

func (q *Queue) listScan(ctx context.Context, qry ListQuery, cur listCursor) (TaskPage, error) {
	var page TaskPage
	shards := q.shards
	if qry.Shard != "" {
		shards = []string{qry.Shard}
	}
	si := 0
	if cur.Shard != "" {
		for si < len(shards) && shards[si] != cur.Shard {
			si++
		}
		if si == len(shards) {
			return page, invalidInput("cursor names shard %q, not part of this query", cur.Shard)
		}
	}
	after := cur.After
	scanned := 0
	chunk := qry.Limit
	for si < len(shards) {
		need := qry.Limit - len(page.Tasks)
		budget := qry.MaxScan - scanned
		if need <= 0 || budget <= 0 {
			break
		}
		prefix := TasksPrefix + shards[si] + "/"
		if after != "" && !strings.HasPrefix(after, prefix) {
			return page, invalidInput("cursor position %q is not in shard %s", after, shards[si])
		}
		lp, err := q.s.List(ctx, store.ListParams{Prefix: prefix, StartAfter: after, Limit: min(MaxListLimit, budget, max(chunk, 10))})
		if err != nil {
			return page, err
		}
		items := make([]fetched, 0, len(lp.Objects))
		for _, o := range lp.Objects {
			items = append(items, fetched{key: o.Key})
		}
		q.fetchAll(ctx, items)
		found := 0
		stopped := false
		for i, f := range items {
			scanned++
			after = f.key
			if err := page.absorb(f); err != nil {
				return page, err
			}
			if f.t != nil && matches(f.t, qry) {
				page.Tasks = append(page.Tasks, f.t)
				found++
			}
			if len(page.Tasks) >= qry.Limit {
				stopped = i < len(items)-1 || lp.NextToken != ""
				break
			}
		}
		if len(page.Tasks) >= qry.Limit {
			if !stopped {
				// The shard ended exactly at the page boundary.
				si++
				after = ""
			}
			break
		}
		if found == 0 {
			chunk *= 4 // sparse matches: read bigger pages
		}
		if lp.NextToken == "" {
			si++
			after = ""
		}
	}
	if si >= len(shards) {
		return page, nil
	}
	c := cur
	c.Shard, c.After = shards[si], after
	page.Cursor = encodeCursor(c)
	return page, nil
}

func matches(t *Task, qry ListQuery) bool {
	if qry.Type != "" && t.Type != qry.Type {
		return false
	}
	if qry.Status == "" {
		return t.Status != StatusArchived
	}
	return t.Status == qry.Status
}
