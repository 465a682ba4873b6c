package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/robfig/cron/v3"

	"github.com/qo-queue/qo/store"
)

// MissedPolicy says what a scheduler does with due times it finds more
// than ScheduleGrace in the past (the schedulers were down).
type MissedPolicy string

// Missed-run policies. Either way a schedule never submits more than one
// task per scheduler pass, however long the downtime.
const (
	// MissedCatchUp submits one task for the latest missed due time.
	MissedCatchUp MissedPolicy = "catch-up"
	// MissedSkip submits nothing for missed due times; the next on-time one
	// runs as usual.
	MissedSkip MissedPolicy = "skip"
)

// ScheduleGrace is how late a due time may be handled and still count as
// on time rather than missed.
const ScheduleGrace = 2 * time.Minute

// maxDueScan bounds the due times walked over after a long downtime
// (a year of a once-a-minute schedule).
const maxDueScan = 600_000

// ScheduleTask is the task a schedule submits at every due time.
type ScheduleTask struct {
	Type           string          `json:"task_type"`
	Input          json.RawMessage `json:"input"`
	Priority       Priority        `json:"priority"`
	TimeoutSeconds int             `json:"timeout_seconds"` // 0: the submit default
	MaxRetries     *int            `json:"max_retries"`     // nil: the submit default
	// ExpiresAfterSeconds, when > 0, makes each run expire that long after
	// its due time if no worker started it.
	ExpiresAfterSeconds int `json:"expires_after_seconds"`
}

// ScheduleSpec is what `qo schedule create` asks for.
type ScheduleSpec struct {
	Name     string // [A-Za-z0-9_.:-]{1,64}; the key schedules/{name}.json
	Cron     string // 5 fields (minute hour day-of-month month day-of-week) or @hourly, @daily...
	Timezone string // IANA name; "" is UTC
	Missed   MissedPolicy
	Disabled bool // create it disabled
	Task     ScheduleTask
}

// Schedule is a cron schedule stored at schedules/{name}.json (see doc.go,
// "Schedules"). It is compared-and-swapped, never deleted: delete writes a
// tombstone.
type Schedule struct {
	Format   int          `json:"format"`
	Name     string       `json:"name"`
	Cron     string       `json:"cron"`
	Timezone string       `json:"timezone"`
	Missed   MissedPolicy `json:"missed"`
	Enabled  bool         `json:"enabled"`
	Task     ScheduleTask `json:"task"`

	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// LastDue is the latest due time handled (run or skipped); due times
	// after it are still to come. Enabling resets it to now.
	LastDue *time.Time `json:"last_due"`
	// LastTaskID is the task submitted for LastDue (or by trigger).
	LastTaskID      string     `json:"last_task_id"`
	LastSubmittedAt *time.Time `json:"last_submitted_at"`
	// Skipped counts due times that did not run (missed while no scheduler
	// ran, or superseded by a later due time in the same pass).
	Skipped int64 `json:"skipped"`
	Deleted bool  `json:"deleted"`
	Rev     int64 `json:"rev"`
	// Actor names who made this version when an operator did (create,
	// enable, disable, trigger, delete: see WithActor); absent on the
	// scheduler's own writes.
	Actor string `json:"actor,omitempty"`

	spec cron.Schedule
	loc  *time.Location
	etag string
}

var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func parseCron(expr, tz string) (cron.Schedule, *time.Location, error) {
	expr = strings.TrimSpace(expr)
	if strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		return nil, nil, invalidInput("cron %q: give the time zone separately (--tz Europe/Berlin), not inside the expression", expr)
	}
	if strings.HasPrefix(expr, "@every") {
		return nil, nil, invalidInput("cron %q: @every is not supported; write it as cron fields (every 5 minutes: */5 * * * *)", expr)
	}
	spec, err := cronParser.Parse(expr)
	if err != nil {
		return nil, nil, invalidInput("cron %q: %v (want 5 fields: minute hour day-of-month month day-of-week, e.g. \"30 2 * * 1-5\", or @hourly, @daily, @weekly, @monthly)", expr, err)
	}
	if tz == "" {
		tz = "UTC"
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, nil, invalidInput("time zone %q: %v (want an IANA name such as Europe/Berlin or UTC)", tz, err)
	}
	return spec, loc, nil
}

// Next returns the first due time strictly after t, in UTC (zero when the
// expression never matches again).
func (s *Schedule) Next(t time.Time) time.Time {
	if s.spec == nil {
		return time.Time{}
	}
	return s.spec.Next(t.In(s.loc)).UTC()
}

// NextDue is the next due time this schedule will run (zero when disabled).
func (s *Schedule) NextDue() time.Time {
	if !s.Enabled || s.Deleted {
		return time.Time{}
	}
	return s.Next(s.baseline())
}

func (s *Schedule) baseline() time.Time {
	if s.LastDue != nil {
		return *s.LastDue
	}
	return s.CreatedAt
}

// ScheduleRunKey is the idempotency key of the run for one due time, so
// any number of schedulers submit it once.
func ScheduleRunKey(name string, due time.Time) string {
	return "schedule:" + name + ":" + due.UTC().Format(time.RFC3339)
}

// ValidateScheduleName checks a schedule name: 1..64 characters from
// [A-Za-z0-9_.:-], not only dots.
func ValidateScheduleName(s string) error { return validateName("schedule name", s, 64) }

func (spec ScheduleSpec) validate() (*Schedule, error) {
	if err := ValidateScheduleName(spec.Name); err != nil {
		return nil, err
	}
	if err := ValidateType(spec.Task.Type); err != nil {
		return nil, err
	}
	missed := spec.Missed
	switch missed {
	case "":
		missed = MissedCatchUp
	case MissedCatchUp, MissedSkip:
	default:
		return nil, invalidInput("missed-run policy %q (want %s or %s)", missed, MissedCatchUp, MissedSkip)
	}
	cronSpec, loc, err := parseCron(spec.Cron, spec.Timezone)
	if err != nil {
		return nil, err
	}
	task := spec.Task
	if task.Priority, err = ParsePriority(string(task.Priority)); err != nil {
		return nil, err
	}
	if isJSONNull(task.Input) {
		task.Input = nil
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, task.Input); err != nil {
			return nil, invalidInput("input is not valid JSON: %v", err)
		}
		task.Input = buf.Bytes()
		if len(task.Input) > MaxInlinePayload {
			return nil, invalidInput("input is %d bytes, over the %d bytes a schedule holds: store the data elsewhere (e.g. the bucket) and put a reference in the input", len(task.Input), MaxInlinePayload)
		}
	}
	switch {
	case task.TimeoutSeconds < 0:
		return nil, invalidInput("timeout %ds is negative", task.TimeoutSeconds)
	case task.MaxRetries != nil && *task.MaxRetries < 0:
		return nil, invalidInput("max retries %d is negative", *task.MaxRetries)
	case task.ExpiresAfterSeconds < 0:
		return nil, invalidInput("expiry %ds is negative", task.ExpiresAfterSeconds)
	}
	return &Schedule{
		Format: FormatVersion, Name: spec.Name, Cron: strings.TrimSpace(spec.Cron), Timezone: loc.String(),
		Missed: missed, Enabled: !spec.Disabled, Task: task, spec: cronSpec, loc: loc,
	}, nil
}

func decodeSchedule(key string, body []byte, etag string) (*Schedule, error) {
	var s Schedule
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, &MalformedError{Key: key, Err: err}
	}
	if s.Format != FormatVersion {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", s.Format, FormatVersion)}
	}
	if ScheduleKey(s.Name) != key {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("object names schedule %q", s.Name)}
	}
	if s.Deleted {
		s.etag = etag
		return &s, nil
	}
	checked, err := ScheduleSpec{Name: s.Name, Cron: s.Cron, Timezone: s.Timezone, Missed: s.Missed, Task: s.Task}.validate()
	if err != nil {
		return nil, &MalformedError{Key: key, Err: errors.New(err.Error())}
	}
	s.spec, s.loc, s.etag = checked.spec, checked.loc, etag
	return &s, nil
}

// CreateSchedule stores a new schedule. Its first due time is the first
// one after now. A live schedule of that name is ErrConflict.
func (q *Queue) CreateSchedule(ctx context.Context, spec ScheduleSpec) (*Schedule, error) {
	s, err := spec.validate()
	if err != nil {
		return nil, fmt.Errorf("create schedule: %w", err)
	}
	cond := store.CreateOnly
	old, err := q.getSchedule(ctx, spec.Name)
	switch {
	case err == nil && !old.Deleted:
		return nil, fmt.Errorf("create schedule %q: %w (it exists; delete it first or pick another name)", spec.Name, ErrConflict)
	case err == nil:
		cond = store.IfMatch(old.etag) // over a tombstone, never re-create a deleted key
		s.Rev = old.Rev
	case !errors.Is(err, ErrNotFound):
		return nil, fmt.Errorf("create schedule: %w", err)
	}
	now := q.Now()
	s.CreatedAt, s.UpdatedAt = now, now
	s.LastDue = timePtr(now)
	if err := q.putSchedule(ctx, s, cond); err != nil {
		if errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("create schedule %q: %w (created concurrently by someone else)", spec.Name, ErrConflict)
		}
		return nil, fmt.Errorf("create schedule %q: %w", spec.Name, err)
	}
	return s, nil
}

func (q *Queue) putSchedule(ctx context.Context, s *Schedule, cond store.Condition) error {
	s.Rev++
	s.Actor = ActorFrom(ctx)
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	res, err := q.s.Put(ctx, ScheduleKey(s.Name), body, cond)
	if err != nil {
		s.Rev--
		return err
	}
	s.etag = res.ETag
	return nil
}

func (q *Queue) getSchedule(ctx context.Context, name string) (*Schedule, error) {
	if err := ValidateScheduleName(name); err != nil {
		return nil, err
	}
	key := ScheduleKey(name)
	obj, err := q.getLimited(ctx, key, maxScheduleObject)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("schedule %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return decodeSchedule(key, obj.Body, obj.ETag)
}

// GetSchedule returns one schedule; ErrNotFound when there is none (or it
// was deleted).
func (q *Queue) GetSchedule(ctx context.Context, name string) (*Schedule, error) {
	s, err := q.getSchedule(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("get schedule: %w", err)
	}
	if s.Deleted {
		return nil, fmt.Errorf("get schedule: schedule %q: %w (deleted)", name, ErrNotFound)
	}
	return s, nil
}

// ListSchedules returns every live schedule in name order; objects that do
// not decode are returned in malformed and skipped.
func (q *Queue) ListSchedules(ctx context.Context) (live []*Schedule, malformed []MalformedError, err error) {
	all, malformed, err := q.listSchedules(ctx, nil)
	for _, s := range all {
		if !s.Deleted {
			live = append(live, s)
		}
	}
	return live, malformed, err
}

// listSchedules reads every schedule object, reusing cached decodes whose
// ETag did not change (cache may be nil).
func (q *Queue) listSchedules(ctx context.Context, cache map[string]*Schedule) ([]*Schedule, []MalformedError, error) {
	var out []*Schedule
	var malformed []MalformedError
	token := ""
	for {
		page, err := q.s.List(ctx, store.ListParams{Prefix: SchedulesPrefix, Token: token})
		if err != nil {
			return nil, nil, fmt.Errorf("list schedules: %w", err)
		}
		for _, o := range page.Objects {
			if c, ok := cache[o.Key]; ok && o.ETag != "" && c.etag == o.ETag {
				out = append(out, c)
				continue
			}
			obj, err := q.getLimited(ctx, o.Key, maxScheduleObject)
			var m *MalformedError
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

// updateSchedule applies change with compare-and-swap, re-reading on a
// concurrent write. change returns false to write nothing.
func (q *Queue) updateSchedule(ctx context.Context, op, name string, change func(s *Schedule, now time.Time) (bool, error)) (*Schedule, error) {
	for range maxRebases {
		s, err := q.getSchedule(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		if s.Deleted {
			return nil, fmt.Errorf("%s: schedule %q: %w (deleted)", op, name, ErrNotFound)
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
		err = q.putSchedule(ctx, s, store.IfMatch(s.etag))
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, store.ErrPreconditionFailed) {
			return nil, fmt.Errorf("%s schedule %q: %w", op, name, err)
		}
	}
	return nil, fmt.Errorf("%s schedule %q: %w (it kept changing; try again)", op, name, ErrConflict)
}

// SetScheduleEnabled enables or disables a schedule. Enabling starts from
// now: due times that passed while it was disabled do not run.
func (q *Queue) SetScheduleEnabled(ctx context.Context, name string, enabled bool) (*Schedule, error) {
	op := "disable"
	if enabled {
		op = "enable"
	}
	return q.updateSchedule(ctx, op, name, func(s *Schedule, now time.Time) (bool, error) {
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

// DeleteSchedule removes a schedule (a tombstone is written in its place;
// tasks it submitted stay).
func (q *Queue) DeleteSchedule(ctx context.Context, name string) error {
	_, err := q.updateSchedule(ctx, "delete", name, func(s *Schedule, now time.Time) (bool, error) {
		s.Deleted, s.Enabled = true, false
		return true, nil
	})
	return err
}

// TriggerSchedule submits the schedule's task now, outside its due times
// (the schedule's timing is unchanged).
func (q *Queue) TriggerSchedule(ctx context.Context, name string) (*Task, error) {
	s, err := q.GetSchedule(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("trigger: %w", err)
	}
	now := q.Now()
	t, _, err := q.submitScheduled(ctx, s, "schedule:"+name+":trigger:"+now.Format(time.RFC3339Nano), now, time.Time{})
	if err != nil {
		return nil, fmt.Errorf("trigger schedule %q: %w", name, err)
	}
	_, err = q.updateSchedule(ctx, "trigger", name, func(s *Schedule, now time.Time) (bool, error) {
		s.LastTaskID, s.LastSubmittedAt = t.ID.String(), timePtr(now)
		return true, nil
	})
	if err != nil {
		q.log.Debug("trigger: recording the run failed", "schedule", name, "err", err)
	}
	return t, nil
}

func (q *Queue) submitScheduled(ctx context.Context, s *Schedule, key string, now, due time.Time) (*Task, bool, error) {
	req := SubmitRequest{
		Type: s.Task.Type, Input: s.Task.Input, Priority: s.Task.Priority,
		Timeout: time.Duration(s.Task.TimeoutSeconds) * time.Second, MaxRetries: s.Task.MaxRetries,
		IdempotencyKey: key,
	}
	if s.Task.ExpiresAfterSeconds > 0 {
		from := due
		if from.IsZero() {
			from = now
		}
		req.ExpiresAt = from.Add(time.Duration(s.Task.ExpiresAfterSeconds) * time.Second)
	}
	t, created, err := q.Submit(ctx, req)
	if errors.Is(err, ErrIdempotencyMismatch) {
		// The run of this due time was submitted before the schedule's
		// input was edited: it ran once, which is all that counts.
		return t, false, nil
	}
	return t, created, err
}

// ScheduleRun reports what a scheduler pass did for one schedule.
type ScheduleRun struct {
	Schedule string    `json:"schedule"`
	Due      time.Time `json:"due"`
	TaskID   uuid.UUID `json:"task_id"` // uuid.Nil when nothing was submitted
	Created  bool      `json:"created"` // false: another scheduler had submitted it
	Late     bool      `json:"late"`    // handled more than ScheduleGrace after Due
	Skipped  int       `json:"skipped"` // due times passed over
	Err      error     `json:"-"`
}

// Scheduler submits the tasks of due schedules. Any number of schedulers
// may run against one queue: the idempotency key of each run (schedule
// name + due time) makes every due time submit exactly one task, and the
// schedule object is compared-and-swapped. Not safe for concurrent use.
type Scheduler struct {
	q     *Queue
	cache map[string]*Schedule
}

// NewScheduler returns a scheduler for q.
func (q *Queue) NewScheduler() *Scheduler { return &Scheduler{q: q, cache: map[string]*Schedule{}} }

// Refresh re-reads the schedules (1 LIST, plus a GET per schedule that
// changed since the last refresh).
func (sc *Scheduler) Refresh(ctx context.Context) ([]MalformedError, error) {
	all, malformed, err := sc.q.listSchedules(ctx, sc.cache)
	if err != nil {
		return nil, err
	}
	sc.cache = make(map[string]*Schedule, len(all))
	for _, s := range all {
		sc.cache[ScheduleKey(s.Name)] = s
	}
	return malformed, nil
}

// NextDue is the earliest due time of the cached schedules (zero: none).
func (sc *Scheduler) NextDue() time.Time {
	var next time.Time
	for _, s := range sc.cache {
		if d := s.NextDue(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
	}
	return next
}

// RunDue handles every cached schedule with a due time <= now: it submits
// the latest due time's task (or skips it: see MissedPolicy) and records it
// in the schedule. Earlier due times of the same pass are counted as
// skipped. It costs nothing when nothing is due, and 1 GET + 2 PUT (task
// create, schedule update) plus the ready entry per due time.
func (sc *Scheduler) RunDue(ctx context.Context) []ScheduleRun {
	var runs []ScheduleRun
	keys := make([]string, 0, len(sc.cache))
	for k := range sc.cache {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		s := sc.cache[k]
		if !s.Enabled || s.Deleted {
			continue
		}
		if _, count := s.latestDue(sc.q.Now()); count == 0 {
			continue
		}
		// Something is due by the cached copy: decide on a fresh one, so a
		// schedule disabled, edited or deleted since the last refresh is
		// honoured (1 GET per due time).
		fresh, err := sc.q.getSchedule(ctx, s.Name)
		if err != nil {
			if errors.Is(err, ErrNotFound) {
				delete(sc.cache, k)
				continue
			}
			runs = append(runs, ScheduleRun{Schedule: s.Name, Err: err})
			continue
		}
		sc.cache[k] = fresh
		if !fresh.Enabled || fresh.Deleted {
			continue
		}
		now := sc.q.Now()
		due, count := fresh.latestDue(now)
		if count == 0 {
			continue
		}
		runs = append(runs, sc.runOne(ctx, fresh, due, count, now))
	}
	return runs
}

// latestDue walks the due times in (baseline, now] and returns the last
// one and how many there were.
func (s *Schedule) latestDue(now time.Time) (time.Time, int) {
	var latest time.Time
	n := 0
	for d := s.Next(s.baseline()); !d.IsZero() && !d.After(now) && n < maxDueScan; d = s.Next(d) {
		latest = d
		n++
	}
	return latest, n
}

func (sc *Scheduler) runOne(ctx context.Context, s *Schedule, due time.Time, count int, now time.Time) ScheduleRun {
	run := ScheduleRun{Schedule: s.Name, Due: due, Late: now.Sub(due) > ScheduleGrace, Skipped: count - 1}
	expired := s.Task.ExpiresAfterSeconds > 0 && !due.Add(time.Duration(s.Task.ExpiresAfterSeconds)*time.Second).After(now)
	submit := !(run.Late && s.Missed == MissedSkip) && !expired
	if !submit {
		run.Skipped = count
	} else {
		t, created, err := sc.q.submitScheduled(ctx, s, ScheduleRunKey(s.Name, due), now, due)
		if err != nil {
			run.Err = err
			return run // LastDue stays: the next pass tries again
		}
		run.TaskID, run.Created = t.ID, created
	}
	updated, err := sc.q.updateSchedule(ctx, "record run of", s.Name, func(cur *Schedule, now time.Time) (bool, error) {
		if cur.LastDue != nil && !cur.LastDue.Before(due) {
			return false, nil // another scheduler recorded it
		}
		cur.LastDue = timePtr(due)
		cur.Skipped += int64(run.Skipped)
		if submit {
			cur.LastTaskID, cur.LastSubmittedAt = run.TaskID.String(), timePtr(now)
		}
		return true, nil
	})
	if err != nil {
		run.Err = err
		return run
	}
	sc.cache[ScheduleKey(s.Name)] = updated
	return run
}
