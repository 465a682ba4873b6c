package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/qo-queue/qo/queue"
	"github.com/qo-queue/qo/store"
)

// MissedPolicy says what a scheduler does with due times it finds more
// than Grace in the past (the schedulers were down).
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

// Grace is how late a due time may be handled and still count as
// on time rather than missed.
const Grace = 2 * time.Minute

// maxDueScan bounds the due times walked over after a long downtime
// (a year of a once-a-minute schedule).
const maxDueScan = 600_000

// Task is the task a schedule submits at every due time.
type Task struct {
	Type           string          `json:"task_type"`
	Input          json.RawMessage `json:"input"`
	Priority       queue.Priority  `json:"priority"`
	TimeoutSeconds int             `json:"timeout_seconds"` // 0: the submit default
	MaxRetries     *int            `json:"max_retries"`     // nil: the submit default
	// ExpiresAfterSeconds, when > 0, makes each run expire that long after
	// its due time if no worker started it.
	ExpiresAfterSeconds int `json:"expires_after_seconds"`
}

// request is the task spec of t (its expiry counting from when the task
// becomes available; a run counts it from its due time instead).
func (t Task) request() queue.SubmitRequest {
	return queue.SubmitRequest{
		Type: t.Type, Input: t.Input, Priority: t.Priority, MaxRetries: t.MaxRetries,
		Timeout:   time.Duration(t.TimeoutSeconds) * time.Second,
		ExpiresIn: time.Duration(t.ExpiresAfterSeconds) * time.Second,
	}
}

// TaskOf is the task of a schedule from a task spec's type, input,
// priority, timeout, retries and expiry (ExpiresIn, counted from each
// run's due time); durations are rounded up to whole seconds. Create
// checks it.
func TaskOf(r queue.SubmitRequest) Task {
	return Task{
		Type: r.Type, Input: r.Input, Priority: r.Priority, MaxRetries: r.MaxRetries,
		TimeoutSeconds:      ceilSeconds(r.Timeout),
		ExpiresAfterSeconds: ceilSeconds(r.ExpiresIn),
	}
}

func ceilSeconds(d time.Duration) int {
	if d <= 0 {
		return int(d / time.Second)
	}
	return int((d + time.Second - 1) / time.Second)
}

// Spec is what `qo schedule create` asks for.
type Spec struct {
	Name     string // [A-Za-z0-9_.:-]{1,64}; the key schedules/{name}.json
	Cron     string // 5 fields (minute hour day-of-month month day-of-week) or @hourly, @daily...
	Timezone string // IANA name; "" is UTC
	Missed   MissedPolicy
	Disabled bool // create it disabled
	Task     Task
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
	Task     Task         `json:"task"`

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

// RunKey is the idempotency key of the run for one due time, so
// any number of schedulers submit it once.
func RunKey(name string, due time.Time) string {
	return "schedule:" + name + ":" + due.UTC().Format(time.RFC3339)
}

func (spec Spec) validate() (*Schedule, error) {
	if err := queue.ValidateScheduleName(spec.Name); err != nil {
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
	// The rules of a task spec, as every run's submit checks them.
	if err := task.request().Validate(); err != nil {
		return nil, err
	}
	task.Priority, _ = queue.ParsePriority(string(task.Priority))
	if isJSONNull(task.Input) {
		task.Input = nil
	} else {
		var buf bytes.Buffer
		if err := json.Compact(&buf, task.Input); err != nil {
			return nil, invalidInput("input is not valid JSON: %v", err)
		}
		task.Input = buf.Bytes()
		if len(task.Input) > queue.MaxInlinePayload {
			return nil, invalidInput("input is %d bytes, over the %d bytes a schedule holds: store the data elsewhere (e.g. the bucket) and put a reference in the input", len(task.Input), queue.MaxInlinePayload)
		}
	}
	return &Schedule{
		Format: queue.FormatVersion, Name: spec.Name, Cron: strings.TrimSpace(spec.Cron), Timezone: loc.String(),
		Missed: missed, Enabled: !spec.Disabled, Task: task, spec: cronSpec, loc: loc,
	}, nil
}

func decodeSchedule(key string, body []byte, etag string) (*Schedule, error) {
	var s Schedule
	if err := json.Unmarshal(body, &s); err != nil {
		return nil, &queue.MalformedError{Key: key, Err: err}
	}
	if s.Format != queue.FormatVersion {
		return nil, &queue.MalformedError{Key: key, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", s.Format, queue.FormatVersion)}
	}
	if queue.ScheduleKey(s.Name) != key {
		return nil, &queue.MalformedError{Key: key, Err: fmt.Errorf("object names schedule %q", s.Name)}
	}
	if s.Deleted {
		s.etag = etag
		return &s, nil
	}
	checked, err := Spec{Name: s.Name, Cron: s.Cron, Timezone: s.Timezone, Missed: s.Missed, Task: s.Task}.validate()
	if err != nil {
		return nil, &queue.MalformedError{Key: key, Err: errors.New(err.Error())}
	}
	s.spec, s.loc, s.etag = checked.spec, checked.loc, etag
	return &s, nil
}

// Queue is what schedules need of a queue; *queue.Queue has it.
type Queue interface {
	Store() store.Store
	// Now is the queue's clock (the store's time).
	Now() time.Time
	Submit(ctx context.Context, req queue.SubmitRequest) (*queue.Task, bool, error)
	Logger() *slog.Logger
}

// maxObject bounds a schedule object: its task template holds an input of
// at most queue.MaxInlinePayload, and the rest takes well under 1 MiB.
const maxObject = queue.MaxInlinePayload + 1<<20

// maxRebases bounds re-applying a change over concurrent writes (as in
// queue).
const maxRebases = 8

// invalidInput is an error wrapping queue.ErrInvalidInput, as queue's own
// validation returns.
func invalidInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", queue.ErrInvalidInput, fmt.Sprintf(format, args...))
}

func isJSONNull(m json.RawMessage) bool {
	return m == nil || bytes.Equal(bytes.TrimSpace(m), []byte("null"))
}

func timePtr(t time.Time) *time.Time { return &t }
