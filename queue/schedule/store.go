package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// Create stores a new schedule. Its first due time is the first
// one after now. A live schedule of that name is queue.ErrConflict.
func Create(ctx context.Context, q Queue, spec Spec) (*Schedule, error) {
	s, err := spec.validate()
	if err != nil {
		return nil, fmt.Errorf("create schedule: %w", err)
	}
	cond := store.CreateOnly
	old, err := get(ctx, q, spec.Name)
	switch {
	case err == nil && !old.Deleted:
		return nil, fmt.Errorf("create schedule %q: %w (it exists; delete it first or pick another name)", spec.Name, queue.ErrConflict)
	case err == nil:
		cond = store.IfMatch(old.etag) // over a tombstone, never re-create a deleted key
		s.Rev = old.Rev
	case !errors.Is(err, queue.ErrNotFound):
		return nil, fmt.Errorf("create schedule: %w", err)
	}
	now := q.Now()
	s.CreatedAt, s.UpdatedAt = now, now
	s.LastDue = timePtr(now)
	if err := put(ctx, q, s, cond); err != nil {
		if errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("create schedule %q: %w (created concurrently by someone else)", spec.Name, queue.ErrConflict)
		}
		return nil, fmt.Errorf("create schedule %q: %w", spec.Name, err)
	}
	return s, nil
}

func put(ctx context.Context, q Queue, s *Schedule, cond store.Condition) error {
	s.Rev++
	s.Actor = queue.ActorFrom(ctx)
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	res, err := q.Store().Put(ctx, queue.ScheduleKey(s.Name), body, cond)
	if err != nil {
		s.Rev--
		return err
	}
	s.etag = res.ETag
	return nil
}

func get(ctx context.Context, q Queue, name string) (*Schedule, error) {
	if err := queue.ValidateScheduleName(name); err != nil {
		return nil, err
	}
	key := queue.ScheduleKey(name)
	obj, err := queue.GetLimited(ctx, q.Store(), key, maxObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("schedule %q: %w", name, queue.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return decodeSchedule(key, obj.Body, obj.ETag)
}

// Get returns one schedule; queue.ErrNotFound when there is none (or it
// was deleted).
func Get(ctx context.Context, q Queue, name string) (*Schedule, error) {
	s, err := get(ctx, q, name)
	if err != nil {
		return nil, fmt.Errorf("get schedule: %w", err)
	}
	if s.Deleted {
		return nil, fmt.Errorf("get schedule: schedule %q: %w (deleted)", name, queue.ErrNotFound)
	}
	return s, nil
}

// List returns every live schedule in name order; objects that do
// not decode are returned in malformed and skipped.
func List(ctx context.Context, q Queue) (live []*Schedule, malformed []queue.MalformedError, err error) {
	all, malformed, err := list(ctx, q, nil)
	for _, s := range all {
		if !s.Deleted {
			live = append(live, s)
		}
	}
	return live, malformed, err
}

// list reads every schedule object, reusing cached decodes whose
// ETag did not change (cache may be nil).
func list(ctx context.Context, q Queue, cache map[string]*Schedule) ([]*Schedule, []queue.MalformedError, error) {
	var out []*Schedule
	var malformed []queue.MalformedError
	token := ""
	for {
		page, err := q.Store().List(ctx, store.ListParams{Prefix: queue.SchedulesPrefix, Token: token})
		if err != nil {
			return nil, nil, fmt.Errorf("list schedules: %w", err)
		}
		for _, o := range page.Objects {
			if c, ok := cache[o.Key]; ok && o.ETag != "" && c.etag == o.ETag {
				out = append(out, c)
				continue
			}
			obj, err := queue.GetLimited(ctx, q.Store(), o.Key, maxObject)
			var m *queue.MalformedError
			switch {
			case errors.Is(err, store.ErrNotFound):
				continue
			case errors.As(err, &m):
				malformed = append(malformed, *m) // over its bound
				continue
			case err != nil:
				return nil, nil, fmt.Errorf("list schedules: read %s: %w", o.Key, err)
			}
			s, err := decodeSchedule(o.Key, obj.Body, obj.ETag)
			if errors.As(err, &m) {
				malformed = append(malformed, *m)
				continue
			}
			out = append(out, s)
		}
		if page.NextToken == "" {
			break
		}
		token = page.NextToken
	}
	slices.SortFunc(out, func(a, b *Schedule) int { return strings.Compare(a.Name, b.Name) })
	return out, malformed, nil
}

// update applies change with compare-and-swap, re-reading on a
// concurrent write. change returns false to write nothing.
func update(ctx context.Context, q Queue, op, name string, change func(s *Schedule, now time.Time) (bool, error)) (*Schedule, error) {
	for range maxRebases {
		s, err := get(ctx, q, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if s.Deleted {
			return nil, fmt.Errorf("%s: schedule %q: %w (deleted)", op, name, queue.ErrNotFound)
		}
		now := q.Now()
		ok, err := change(s, now)
		if err != nil {
			return nil, fmt.Errorf("%s schedule %q: %w", op, name, err)
		}
		if !ok {
			return s, nil
		}
		s.UpdatedAt = now
		err = put(ctx, q, s, store.IfMatch(s.etag))
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("%s schedule %q: %w", op, name, err)
		}
	}
	return nil, fmt.Errorf("%s schedule %q: %w (it kept changing; try again)", op, name, queue.ErrConflict)
}

// SetEnabled enables or disables a schedule. Enabling starts from
// now: due times that passed while it was disabled do not run.
func SetEnabled(ctx context.Context, q Queue, name string, enabled bool) (*Schedule, error) {
	op := "disable"
	if enabled {
		op = "enable"
	}
	return update(ctx, q, op, name, func(s *Schedule, now time.Time) (bool, error) {
		if s.Enabled == enabled {
			return false, nil
		}
		s.Enabled = enabled
		if enabled {
			s.LastDue = timePtr(now)
		}
		return true, nil
	})
}

// Delete removes a schedule (a tombstone is written in its place;
// tasks it submitted stay).
func Delete(ctx context.Context, q Queue, name string) error {
	_, err := update(ctx, q, "delete", name, func(s *Schedule, now time.Time) (bool, error) {
		s.Deleted, s.Enabled = true, false
		return true, nil
	})
	return err
}

// Trigger submits the schedule's task now, outside its due times
// (the schedule's timing is unchanged).
func Trigger(ctx context.Context, q Queue, name string) (*queue.Task, error) {
	s, err := Get(ctx, q, name)
	if err != nil {
		return nil, fmt.Errorf("trigger: %w", err)
	}
	now := q.Now()
	t, _, err := submitRun(ctx, q, s, "schedule:"+name+":trigger:"+now.Format(time.RFC3339Nano), now, time.Time{})
	if err != nil {
		return nil, fmt.Errorf("trigger schedule %q: %w", name, err)
	}
	_, err = update(ctx, q, "trigger", name, func(s *Schedule, now time.Time) (bool, error) {
		s.LastTaskID, s.LastSubmittedAt = t.ID.String(), timePtr(now)
		return true, nil
	})
	if err != nil {
		q.Logger().Debug("trigger: recording the run failed", "schedule", name, "err", err)
	}
	return t, nil
}

func submitRun(ctx context.Context, q Queue, s *Schedule, key string, now, due time.Time) (*queue.Task, bool, error) {
	req := s.Task.request()
	req.IdempotencyKey = key
	if req.ExpiresIn > 0 {
		from := due
		if from.IsZero() {
			from = now
		}
		req.ExpiresAt, req.ExpiresIn = from.Add(req.ExpiresIn), 0
	}
	t, created, err := q.Submit(ctx, req)
	if errors.Is(err, queue.ErrIdempotencyMismatch) {
		// The run of this due time was submitted before the schedule's
		// input was edited: it ran once, which is all that counts.
		return t, false, nil
	}
	return t, created, err
}
