package queue

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/store"
)

// ListQuery selects tasks for List.
type ListQuery struct {
	Shard  string // "" = all shards
	Status Status // "" = every status but archived
	Type   string // "" = every type
	Limit  int    // tasks per page; <= 0: 100; at most 1000
	Cursor string // "" for the first page; TaskPage.Cursor for the next
	// Since bounds the listings that are not served by an index (every
	// status but pending, running and failed, or no status): only tasks
	// created at or after it are listed (zero: DefaultListWindow ago).
	Since time.Time
	// MaxScan bounds the keys one call looks at (<= 0: 10,000), so a
	// selective filter over a large window returns a short page with a
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
	// moved on, or the entry is a leftover); they were skipped, and deleted
	// when older than IndexGrace.
	Stale []string `json:"stale_index_entries,omitempty"`
	// Since is the start of the creation window of a window listing (zero
	// for index listings).
	Since time.Time `json:"since,omitzero"`
	// etags holds the ETag each listed task was read with, so a bulk
	// action can write it conditionally without reading it again.
	etags map[uuid.UUID]string
}

// keep adds f's task to the page, with the ETag it was read with.
func (p *TaskPage) keep(f fetched) {
	p.Tasks = append(p.Tasks, f.t)
	if p.etags == nil {
		p.etags = map[uuid.UUID]string{}
	}
	p.etags[f.t.ID] = f.etag
}

// Default and maximum page sizes of List, and the default window.
const (
	DefaultListLimit  = 100
	MaxListLimit      = 1000
	defaultMaxScan    = 10000
	DefaultListWindow = 24 * time.Hour
)

// listCursor is the decoded form of the opaque cursor.
type listCursor struct {
	V      int    `json:"v"`
	Mode   string `json:"m"`           // "ready", "leases", "dead" or "window"
	After  string `json:"a,omitempty"` // resume after this key (index modes) or below this id (window)
	Since  int64  `json:"w,omitempty"` // window mode: start of the window (Unix ms)
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

// List returns one page of tasks, at a cost set by what it shows, never by
// the number of tasks the bucket has held:
//
//   - waiting, pending, running and failed tasks come from their indexes
//     (waiting/, ready/, leases/, dead/; dead letters newest first), each
//     entry confirmed by a GET of its task: 1 LIST per 1,000 entries passed
//     plus 1 GET per task shown (a waiting entry names no type, so with a
//     type filter every waiting task passed is read). Entries that do not
//     match their task are reported in Stale, skipped, and deleted once
//     older than IndexGrace.
//   - every other status, or none, lists the tasks CREATED since
//     qry.Since (default DefaultListWindow ago), newest first: task ids
//     are time-ordered, so each shard's listing starts at the window and
//     stops at now; 1 LIST per shard and per 1,000 tasks in the window,
//     plus 1 GET per task read. Tasks of layout 1 (random ids) carry no
//     time and are not in windows; the indexes and Get find them.
//
// The cursor is opaque: it encodes the position and the query.
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
	mode := "window"
	switch qry.Status {
	case StatusWaiting:
		mode = "waiting"
	case StatusPending:
		mode = "ready"
	case StatusRunning:
		mode = "leases"
	case StatusFailed:
		mode = "dead"
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
	if mode == "window" {
		if cur.Since == 0 {
			since := qry.Since
			if since.IsZero() {
				since = q.Now().Add(-DefaultListWindow)
			}
			cur.Since = since.UnixMilli()
		}
		page, err = q.listWindow(ctx, qry, cur)
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
	key      string // task key
	from     string // index key it came from ("" for scans)
	modified time.Time
	t        *Task
	etag     string
	err      error
}

// fetchAll GETs tasks in parallel, keeping order.
func (q *Queue) fetchAll(ctx context.Context, items []fetched) {
	forEach(len(items), sweepParallelism, func(i int) {
		obj, err := q.getLimited(ctx, items[i].key, maxTaskObject)
		if err != nil {
			items[i].err = err
			return
		}
		items[i].t, items[i].err = DecodeTask(items[i].key, obj.Body)
		items[i].etag = obj.ETag
	})
}

// absorb records on the page what went wrong fetching f: a task that is
// gone makes its index entry stale (listed, and deleted by dropStale once
// old enough), a malformed one is listed as malformed. Any other error is
// returned and ends the listing. A task read without error is left to the
// caller, which decides whether it belongs on the page.
func (q *Queue) absorb(ctx context.Context, page *TaskPage, f fetched) error {
	var m *MalformedError
	switch {
	case f.err == nil:
		return nil
	case errors.Is(f.err, store.ErrNotFound):
		if f.from != "" {
			page.Stale = append(page.Stale, f.from)
			q.dropStale(ctx, f.from, f.modified)
		}
		return nil
	case errors.As(f.err, &m):
		page.Malformed = append(page.Malformed, *m)
		return nil
	}
	return f.err
}

// indexEntry is what List needs of an index key.
type indexEntry struct {
	id         uuid.UUID
	shard, typ string
}

func parseIndexEntry(mode, key string) (indexEntry, error) {
	switch mode {
	case "ready":
		e, err := ParseReadyKey(key)
		return indexEntry{e.ID, e.Shard, e.Type}, err
	case "leases":
		e, err := ParseLeaseKey(key)
		return indexEntry{e.ID, e.Shard, e.Type}, err
	case "waiting":
		shard, id, err := ParseWaitingKey(key)
		return indexEntry{id, shard, ""}, err // the type is read off the task
	default:
		e, err := ParseDeadKey(key)
		return indexEntry{e.ID, e.Shard, e.Type}, err
	}
}

var indexRoots = map[string]string{"ready": ReadyPrefix, "leases": LeasesPrefix, "dead": DeadPrefix, "waiting": WaitingPrefix}

var indexStatus = map[string]Status{"ready": StatusPending, "leases": StatusRunning, "dead": StatusFailed, "waiting": StatusWaiting}

func (q *Queue) listIndex(ctx context.Context, qry ListQuery, cur listCursor) (TaskPage, error) {
	var page TaskPage
	prefix := indexRoots[cur.Mode]
	if qry.Shard != "" && cur.Mode != "dead" {
		prefix += qry.Shard + "/" // lease and waiting entries are partitioned by shard
	}
	after := cur.After
	// hop moves a cursor at the end of a page past the rest of the ready
	// partition (type and shard) it lies in, when that one is not wanted.
	hop := func(key string) (string, bool) { return key, false }
	if cur.Mode == "ready" {
		var types, shards []string
		if qry.Type != "" {
			types = []string{qry.Type}
		}
		if qry.Shard != "" {
			shards = []string{qry.Shard}
		}
		p := q.readyPartitions(types, shards)
		prefix = p.listPrefix()
		if after == "" {
			after = p.first()
		}
		hop = p.skip
	}
	scanned := 0
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
			e, err := parseIndexEntry(cur.Mode, o.Key)
			if err != nil {
				page.Stale = append(page.Stale, o.Key)
				continue
			}
			if len(e.shard) != q.cfg.ShardChars || (qry.Shard != "" && e.shard != qry.Shard) || (qry.Type != "" && e.typ != "" && e.typ != qry.Type) {
				continue
			}
			items = append(items, fetched{key: taskKeyFor(e.shard, e.id), from: o.Key, modified: o.LastModified})
		}
		q.fetchAll(ctx, items)
		for _, f := range items {
			if err := q.absorb(ctx, &page, f); err != nil {
				return page, err
			}
			if f.t == nil {
				continue
			}
			if f.t.Status != indexStatus[cur.Mode] || !slices.Contains(IndexKeys(f.t), f.from) {
				page.Stale = append(page.Stale, f.from)
				q.dropStale(ctx, f.from, f.modified)
				continue
			}
			if qry.Type != "" && f.t.Type != qry.Type {
				continue // a waiting entry does not name its type
			}
			page.keep(f)
		}
		after = lastKey
		whole := len(lp.Objects) == 0 || lastKey == lp.Objects[len(lp.Objects)-1].Key
		if lp.NextToken == "" && whole {
			return page, nil
		}
		if whole {
			next, end := hop(after)
			if end {
				return page, nil
			}
			after = next
		}
	}
	c := cur
	c.After = after
	page.Cursor = encodeCursor(c)
	return page, nil
}

// listWindow lists the tasks created in [since, now + MaxClockSkew], newest
// first: every shard's keys in the window (LIST only; time-ordered ids make
// the window a key range), then GETs in id order below the cursor.
func (q *Queue) listWindow(ctx context.Context, qry ListQuery, cur listCursor) (TaskPage, error) {
	page := TaskPage{Since: time.UnixMilli(cur.Since).UTC()}
	shards := q.shards
	if qry.Shard != "" {
		shards = []string{qry.Shard}
	}
	lo := idFloor(page.Since)
	hi := idFloor(q.Now().Add(MaxClockSkew + time.Millisecond))
	if cur.After != "" && cur.After < hi {
		hi = cur.After
	}
	type key struct {
		id, shard string
	}
	var keys []key
	var mu sync.Mutex
	var firstErr error
	truncated := false
	forEach(len(shards), sweepParallelism, func(i int) {
		prefix := TasksPrefix + shards[i] + "/"
		after := prefix + lo
		var mine []key
		trimmed := false
		for {
			lp, err := q.s.List(ctx, store.ListParams{Prefix: prefix, StartAfter: after, Limit: MaxListLimit})
			if err != nil {
				mu.Lock()
				firstErr = cmp.Or(firstErr, err)
				mu.Unlock()
				return
			}
			stop := lp.NextToken == ""
			for _, o := range lp.Objects {
				id := strings.TrimSuffix(strings.TrimPrefix(o.Key, prefix), ".json")
				if id >= hi {
					stop = true
					break
				}
				mine = append(mine, key{id, shards[i]})
				after = o.Key
			}
			if len(mine) > 2*qry.MaxScan {
				// Keep the newest MaxScan keys: memory stays bounded however
				// large the window; older ones come back on later pages.
				mine, trimmed = slices.Clip(mine[len(mine)-qry.MaxScan:]), true
			}
			if stop || len(lp.Objects) == 0 {
				break
			}
		}
		if len(mine) > qry.MaxScan {
			mine, trimmed = mine[len(mine)-qry.MaxScan:], true
		}
		mu.Lock()
		keys = append(keys, mine...)
		truncated = truncated || trimmed
		mu.Unlock()
	})
	if firstErr != nil {
		return page, firstErr
	}
	slices.SortFunc(keys, func(a, b key) int { return strings.Compare(b.id, a.id) })
	read := 0
	last := ""
	for read < len(keys) && len(page.Tasks) < qry.Limit {
		n := min(len(keys)-read, max(qry.Limit-len(page.Tasks), 10))
		items := make([]fetched, n)
		for j := range items {
			k := keys[read+j]
			items[j].key = TasksPrefix + k.shard + "/" + k.id + ".json"
		}
		q.fetchAll(ctx, items)
		for _, f := range items {
			if len(page.Tasks) >= qry.Limit {
				break
			}
			read++
			last = keys[read-1].id
			if err := q.absorb(ctx, &page, f); err != nil {
				return page, err
			}
			if f.t != nil && matches(f.t, qry) {
				page.keep(f)
			}
		}
	}
	if read < len(keys) || truncated {
		c := cur
		c.After = last
		if last == "" {
			c.After = hi
		}
		page.Cursor = encodeCursor(c)
	}
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
