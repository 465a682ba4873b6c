package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"
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
	// searchParallelism bounds the GETs of one search that run at once.
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
//     optional), oldest first: queue.FindByIDPrefix (a full id nothing, a
//     prefix 1 LIST per shard, or 1 when it shows a random id), then 1 GET
//     per task returned; when none starts with P, the tasks whose id ENDS
//     with it (the short id lists show): queue.ResolveID, 5 LISTs.
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

func (a *api) searchIDPrefix(ctx context.Context, s string, limit int) (SearchResult, error) {
	ids, more, err := a.q.FindByIDPrefix(ctx, s, limit)
	if errors.Is(err, queue.ErrInvalidInput) {
		return SearchResult{}, badInput("id_prefix %q: want the first hex digits of a task id (dashes optional)", s)
	}
	if err != nil {
		return SearchResult{}, err
	}
	if len(ids) == 0 {
		// The short id lists show is the END of a v7 id.
		id, err := a.q.ResolveID(ctx, s)
		var amb *queue.AmbiguousIDError
		switch {
		case err == nil:
			ids = []uuid.UUID{id}
		case errors.As(err, &amb):
			ids = amb.Candidates
		case !errors.Is(err, queue.ErrNotFound):
			return SearchResult{}, err
		}
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
