package httpapi

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Search limits: tasks returned by one GET /api/search, by default and at
// most.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	// searchParallelism bounds the LISTs (one per shard) and GETs of one
	// search that run at once.
	searchParallelism = 8
)

// SearchResult is the body of GET /api/search: the tasks found, and
// whether more matched than were returned.
type SearchResult struct {
	Tasks []*queue.Task `json:"tasks"`
	More  bool          `json:"more"`
}

// search finds tasks by what an operator has in hand, at a cost set by
// what it returns, never by the bucket's history (see docs/api.md):
//
//   - ?id_prefix=P: the tasks whose id starts with P (hex digits, dashes
//     optional), oldest first. A full id is 1 GET. A prefix is 1 LIST per
//     shard of the keys tasks/{shard}/{P}... (limit + 1 of them: task keys
//     are the ids, so S3 does the matching), one LIST only when the prefix
//     shows a random (not time-ordered) id, whose first characters are its
//     shard; then 1 GET per task returned.
//   - ?type=T&idempotency_key=K: the task a submit of type T with key K
//     made: 2 GET (its marker, then the task).
func (a *api) search(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	for k := range v {
		switch k {
		case "id_prefix", "type", "idempotency_key", "limit":
		default:
			return badInput("unknown query parameter %q (known: id_prefix, type, idempotency_key, limit)", k)
		}
	}
	limit := DefaultSearchLimit
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxSearchLimit {
			return badInput("limit %q: want a number from 1 to %d", s, MaxSearchLimit)
		}
		limit = n
	}
	var res SearchResult
	var err error
	switch prefix, typ, key := v.Get("id_prefix"), v.Get("type"), v.Get("idempotency_key"); {
	case prefix != "" && typ == "" && key == "":
		res, err = a.searchIDPrefix(r.Context(), prefix, limit)
	case prefix == "" && typ != "" && key != "":
		res, err = a.searchKey(r.Context(), typ, key)
	case prefix == "" && typ != "":
		return badInput("type alone: add idempotency_key, or list the type's tasks with /api/tasks?type=%s&status=pending (or running, failed)", typ)
	default:
		return badInput("give id_prefix, or type and idempotency_key")
	}
	if err != nil {
		return err
	}
	if res.Tasks == nil {
		res.Tasks = []*queue.Task{}
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// idPrefix normalizes an id prefix to the canonical form of task ids
// (lowercase, dashes after the 8th, 12th, 16th and 20th hex digit); hex
// holds its digits alone.
func idPrefix(s string) (prefix, hex string, err error) {
	hex = strings.ToLower(strings.ReplaceAll(strings.TrimSpace(s), "-", ""))
	if hex == "" || len(hex) > 32 || strings.Trim(hex, "0123456789abcdef") != "" {
		return "", "", badInput("id_prefix %q: want the first hex digits of a task id (dashes optional)", s)
	}
	var b strings.Builder
	for i := range len(hex) {
		if i == 8 || i == 12 || i == 16 || i == 20 {
			b.WriteByte('-')
		}
		b.WriteByte(hex[i])
	}
	return b.String(), hex, nil
}

func (a *api) searchIDPrefix(ctx context.Context, s string, limit int) (SearchResult, error) {
	prefix, hex, err := idPrefix(s)
	if err != nil {
		return SearchResult{}, err
	}
	if len(hex) == 32 {
		id, err := queue.ParseID(prefix)
		if err != nil {
			return SearchResult{}, err
		}
		return a.readFound(ctx, []uuid.UUID{id}, false)
	}
	shards := a.q.Shards()
	// The 13th digit is the id's version: any but 7 is a random id, whose
	// shard is its first characters (queue.ShardOf).
	if n := len(shards[0]); len(hex) >= 13 && hex[12] != '7' && len(hex) >= n {
		shards = []string{hex[:n]}
	}
	var (
		mu       sync.Mutex
		ids      []uuid.UUID
		firstErr error
	)
	run(len(shards), func(i int) {
		dir := queue.TasksPrefix + shards[i] + "/"
		page, err := a.q.Store().List(ctx, store.ListParams{Prefix: dir + prefix, Limit: limit + 1})
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			return
		}
		for _, o := range page.Objects {
			name, ok := strings.CutSuffix(strings.TrimPrefix(o.Key, dir), ".json")
			if id, err := queue.ParseID(name); ok && err == nil && queue.ShardOf(id, len(shards[i])) == shards[i] {
				ids = append(ids, id)
			}
		}
	})
	if firstErr != nil {
		return SearchResult{}, firstErr
	}
	slices.SortFunc(ids, func(x, y uuid.UUID) int { return strings.Compare(x.String(), y.String()) })
	more := len(ids) > limit
	if more {
		ids = ids[:limit]
	}
	return a.readFound(ctx, ids, more)
}

func (a *api) searchKey(ctx context.Context, typ, key string) (SearchResult, error) {
	if err := queue.ValidateType(typ); err != nil {
		return SearchResult{}, err
	}
	if len(key) > queue.MaxIdempotencyKeyLen {
		return SearchResult{}, badInput("idempotency_key is %d bytes long (at most %d)", len(key), queue.MaxIdempotencyKeyLen)
	}
	id, err := a.q.LookupKey(ctx, typ, key)
	if errors.Is(err, queue.ErrNotFound) {
		return SearchResult{}, nil
	}
	if err != nil {
		return SearchResult{}, err
	}
	return a.readFound(ctx, []uuid.UUID{id}, false)
}

// readFound reads the tasks found, in order; one that is gone (or does not
// decode) is left out.
func (a *api) readFound(ctx context.Context, ids []uuid.UUID, more bool) (SearchResult, error) {
	tasks := make([]*queue.Task, len(ids))
	errs := make([]error, len(ids))
	run(len(ids), func(i int) { tasks[i], errs[i] = a.q.Get(ctx, ids[i]) })
	res := SearchResult{More: more}
	for i, t := range tasks {
		var malformed *queue.MalformedError
		switch err := errs[i]; {
		case err == nil:
			res.Tasks = append(res.Tasks, t)
		case errors.Is(err, queue.ErrNotFound), errors.Is(err, store.ErrNotFound), errors.As(err, &malformed):
		default:
			return SearchResult{}, err
		}
	}
	return res, nil
}

// run calls fn for 0..n-1, searchParallelism at a time.
func run(n int, fn func(i int)) {
	sem := make(chan struct{}, searchParallelism)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}
