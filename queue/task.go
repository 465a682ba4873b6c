package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// FormatVersion is the on-bucket format written into every object qo owns
// ("format": 1). Readers refuse objects with another version (they are
// reported as *MalformedError), so a future format can never be misread.
const FormatVersion = 1

// LayoutVersion is the key layout this qo reads and writes, recorded as
// "format" in queue.json (see doc.go, "Key layout"). Buckets of an older
// layout are refused with ErrLayoutOutdated until `qo migrate` converts them.
const LayoutVersion = 5

// Status is the lifecycle state of a task. See doc.go for the diagram.
type Status string

// Task statuses.
const (
	StatusWaiting   Status = "waiting"   // waits for its parents (see doc.go, "Dependencies"); never claimed
	StatusPending   Status = "pending"   // claimable once available_at <= now
	StatusRunning   Status = "running"   // leased by one worker until lease_expires_at
	StatusCompleted Status = "completed" // terminal: succeeded
	StatusFailed    Status = "failed"    // terminal: dead letter (permanent error or retries exhausted)
	StatusCancelled Status = "cancelled" // terminal: cancelled by an operator
	StatusExpired   Status = "expired"   // terminal: not started before expires_at
	StatusArchived  Status = "archived"  // terminal, hidden from default listings
)

// Statuses lists every status in lifecycle order.
var Statuses = []Status{StatusWaiting, StatusPending, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled, StatusExpired, StatusArchived}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	for _, v := range Statuses {
		if s == v {
			return true
		}
	}
	return false
}

// Terminal reports whether no worker will ever run the task again without
// an operator's replay.
func (s Status) Terminal() bool {
	switch s {
	case StatusCompleted, StatusFailed, StatusCancelled, StatusExpired, StatusArchived:
		return true
	}
	return false
}

// ParseStatus parses a status name, with a clear ErrInvalidInput otherwise.
func ParseStatus(s string) (Status, error) {
	st := Status(s)
	if !st.Valid() {
		return "", invalidInput("unknown status %q (want one of %s)", s, joinNames(Statuses))
	}
	return st, nil
}

// RetryPolicy shapes the exponential backoff between attempts.
type RetryPolicy struct {
	InitialIntervalMS int64   `json:"initial_interval_ms"` // first retry delay; default 1000
	MaxIntervalMS     int64   `json:"max_interval_ms"`     // cap; default 60000
	Multiplier        float64 `json:"multiplier"`          // growth per retry; default 2
	JitterPercent     float64 `json:"jitter_percent"`      // 0.25 = ±25%; default 0.25
}

// DefaultRetryPolicy is used when a submit does not name one: 1 s, 2 s, 4 s,
// ... capped at 60 s, each ±25%.
var DefaultRetryPolicy = RetryPolicy{InitialIntervalMS: 1000, MaxIntervalMS: 60000, Multiplier: 2, JitterPercent: 0.25}

// Submit defaults.
const (
	DefaultTimeout    = 300 * time.Second
	DefaultMaxRetries = 3
)

// Validate checks the policy's ranges.
func (p RetryPolicy) Validate() error {
	switch {
	case p.InitialIntervalMS < 0:
		return invalidInput("retry policy: initial_interval_ms %d is negative", p.InitialIntervalMS)
	case p.MaxIntervalMS < p.InitialIntervalMS:
		return invalidInput("retry policy: max_interval_ms %d is below initial_interval_ms %d", p.MaxIntervalMS, p.InitialIntervalMS)
	case p.Multiplier < 1 || math.IsInf(p.Multiplier, 0) || math.IsNaN(p.Multiplier):
		return invalidInput("retry policy: multiplier %v must be a finite number >= 1", p.Multiplier)
	case p.JitterPercent < 0 || p.JitterPercent > 1 || math.IsNaN(p.JitterPercent):
		return invalidInput("retry policy: jitter_percent %v must be within 0..1 (0.25 = ±25%%)", p.JitterPercent)
	}
	return nil
}

// Backoff returns the delay before retry number retryCount (1 for the first
// retry; smaller values count as 1): initial * multiplier^(retryCount-1),
// capped at max, then spread by ±jitter and clamped to [0, max]. rnd may be
// nil (no jitter).
func (p RetryPolicy) Backoff(retryCount int, rnd *rand.Rand) time.Duration {
	if retryCount < 1 {
		retryCount = 1
	}
	d := float64(p.InitialIntervalMS) * math.Pow(p.Multiplier, float64(retryCount-1))
	maxMS := float64(p.MaxIntervalMS)
	if d > maxMS || math.IsInf(d, 0) || math.IsNaN(d) {
		d = maxMS
	}
	if rnd != nil && p.JitterPercent > 0 {
		d += d * p.JitterPercent * (2*rnd.Float64() - 1)
	}
	if d > maxMS {
		d = maxMS
	}
	if d < 0 {
		d = 0
	}
	return time.Duration(d * float64(time.Millisecond))
}

// Task is one unit of work: a single JSON object at tasks/{shard}/{id}.json
// for its whole life. Every field is documented in doc.go ("Task object").
type Task struct {
	Format int       `json:"format"`
	ID     uuid.UUID `json:"id"`
	Type   string    `json:"task_type"`
	Shard  string    `json:"shard"`
	Status Status    `json:"status"`

	AvailableAt    time.Time  `json:"available_at"`
	LeaseExpiresAt *time.Time `json:"lease_expires_at"`

	Input  json.RawMessage `json:"input"`
	Output json.RawMessage `json:"output"`

	TimeoutSeconds int         `json:"timeout_seconds"`
	MaxRetries     int         `json:"max_retries"`
	RetryCount     int         `json:"retry_count"`
	RetryPolicy    RetryPolicy `json:"retry_policy"`
	// SnoozeCount is how often its handlers snoozed the task (see doc.go,
	// "Snooze"); absent when 0.
	SnoozeCount int `json:"snooze_count,omitempty"`

	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at"`

	WorkerID  string `json:"worker_id"`
	LeaseID   string `json:"lease_id"`
	Attempt   int    `json:"attempt"`
	LastError string `json:"last_error"`

	Rev       int64  `json:"rev"`
	RequestID string `json:"request_id"`
	LastEvent string `json:"last_event"`

	CancelRequested   bool       `json:"cancel_requested"`
	CancelRequestedAt *time.Time `json:"cancel_requested_at"`
	CancelReason      string     `json:"cancel_reason"`

	// Actor names who made this version when an operator action did
	// (cancel, replay, archive, requeue): e.g. "alice@ops-1, qo cancel"
	// (see doc.go, "Task object"). Absent on every other write.
	Actor string `json:"actor,omitempty"`

	IdempotencyKey string `json:"idempotency_key"`
	// Unique is the window its idempotency key holds for (see doc.go,
	// "Uniqueness windows"); absent for a key held for good.
	Unique *UniqueWindow `json:"unique,omitempty"`

	Priority Priority `json:"priority"`
	// TaskKey is the task's key (see doc.go, "Task keys"): workers
	// take a type's ready tasks round-robin over keys, and a per-key
	// limit holds for each key. Absent when none.
	TaskKey   string     `json:"key,omitempty"`
	ExpiresAt *time.Time `json:"expires_at"`
	InputRef  *DataRef   `json:"input_ref"`
	OutputRef *DataRef   `json:"output_ref"`

	// Dependencies (see doc.go, "Dependencies"): absent on tasks without.
	Parents         []Parent      `json:"parents,omitempty"`
	Children        []uuid.UUID   `json:"children,omitempty"`
	OnParentFailure ParentFailure `json:"on_parent_failure,omitempty"`
	// InputFrom names values of the parents' outputs the handler gets
	// in its input (see doc.go, "Workflows"); FromParents holds those
	// recorded so far, by input field.
	InputFrom   map[string]InputSource     `json:"input_from,omitempty"`
	FromParents map[string]json.RawMessage `json:"from_parents,omitempty"`
	// Workflow is the workflow and step this task is, if any.
	Workflow *WorkflowRef `json:"workflow,omitempty"`

	// ArchivedFrom is the status an archived task ended in (completed,
	// failed, cancelled or expired), set by Archive; absent on objects
	// archived before it existed (see ArchivedEnd).
	ArchivedFrom Status `json:"archived_from,omitempty"`

	// Progress is the latest progress its handler reported, filled in by
	// readers of a running task from its holder's registry entry
	// (registry.WithProgress). It is never stored: EncodeTask leaves it out
	// and DecodeTask ignores it (see doc.go, "Progress").
	Progress *Progress `json:"progress,omitempty"`
	// Metadata is the task's string headers, set at submit and never
	// changed (see doc.go, "Task metadata"); absent when empty.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// UniqueWindow is how long a task's idempotency key stays bound to it:
// while the task is active, or until Until.
type UniqueWindow struct {
	WhileActive bool       `json:"while_active,omitempty"`
	Until       *time.Time `json:"until,omitempty"`
}

// Timeout returns the lease duration of one attempt.
func (t *Task) Timeout() time.Duration { return time.Duration(t.TimeoutSeconds) * time.Second }

// Key returns the task object's key.
func (t *Task) Key() string { return taskKeyFor(t.Shard, t.ID) }

// Clone returns a deep copy.
func (t *Task) Clone() *Task {
	c := *t
	c.LeaseExpiresAt = cloneTime(t.LeaseExpiresAt)
	c.CompletedAt = cloneTime(t.CompletedAt)
	c.CancelRequestedAt = cloneTime(t.CancelRequestedAt)
	c.ExpiresAt = cloneTime(t.ExpiresAt)
	if t.Unique != nil {
		c.Unique = &UniqueWindow{WhileActive: t.Unique.WhileActive, Until: cloneTime(t.Unique.Until)}
	}
	if t.InputRef != nil {
		r := *t.InputRef
		c.InputRef = &r
	}
	if t.OutputRef != nil {
		r := *t.OutputRef
		c.OutputRef = &r
	}
	if t.Input != nil {
		c.Input = append(json.RawMessage(nil), t.Input...)
	}
	if t.Output != nil {
		c.Output = append(json.RawMessage(nil), t.Output...)
	}
	if t.Parents != nil {
		c.Parents = append([]Parent(nil), t.Parents...)
	}
	if t.Children != nil {
		c.Children = append([]uuid.UUID(nil), t.Children...)
	}
	c.InputFrom = maps.Clone(t.InputFrom)
	c.FromParents = maps.Clone(t.FromParents)
	c.Metadata = maps.Clone(t.Metadata)
	if t.Workflow != nil {
		w := *t.Workflow
		c.Workflow = &w
	}
	if t.Progress != nil {
		p := *t.Progress
		c.Progress = &p
	}
	return &c
}

func cloneTime(p *time.Time) *time.Time {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func timePtr(t time.Time) *time.Time { return &t }

// EncodeTask renders t in the on-bucket format.
func EncodeTask(t *Task) ([]byte, error) {
	if t.Progress != nil {
		c := *t
		c.Progress = nil
		t = &c
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("encode task %s: %w", t.ID, err)
	}
	return b, nil
}

// DecodeTask parses an on-bucket task object found at key ("" skips the
// key check). Anything qo cannot trust (bad JSON, wrong field types, an
// unknown format version, an unknown status, an id or shard that does not
// match the key) is a *MalformedError.
func DecodeTask(key string, body []byte) (*Task, error) {
	var t Task
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, &MalformedError{Key: key, Err: err}
	}
	t.Progress = nil // never stored: see EncodeTask
	if t.Format != FormatVersion {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("unknown format version %d (this qo reads format %d)", t.Format, FormatVersion)}
	}
	if t.ID == uuid.Nil {
		return nil, &MalformedError{Key: key, Err: errors.New("missing id")}
	}
	if !t.Status.Valid() {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("unknown status %q", t.Status)}
	}
	if err := ValidateType(t.Type); err != nil {
		// A bad name in the bucket is the object's fault, not the caller's:
		// keep the message, drop ErrInvalidInput.
		return nil, &MalformedError{Key: key, Err: errors.New(err.Error())}
	}
	// The holder and the lease become parts of the lease-index key and of
	// log and terminal lines: a name that could step out of its key
	// ("w/../queue.json") or carry control characters is the object's
	// fault.
	if t.WorkerID != "" {
		if err := ValidateWorkerID(t.WorkerID); err != nil {
			return nil, &MalformedError{Key: key, Err: errors.New(err.Error())}
		}
	}
	if t.LeaseID != "" {
		if err := ValidateLeaseID(t.LeaseID); err != nil {
			return nil, &MalformedError{Key: key, Err: errors.New(err.Error())}
		}
	}
	if err := ValidateMetadata(t.Metadata); err != nil {
		return nil, &MalformedError{Key: key, Err: errors.New(err.Error())}
	}
	if t.Priority == "" {
		t.Priority = PriorityNormal // written before priorities existed
	}
	if !t.Priority.Valid() {
		return nil, &MalformedError{Key: key, Err: fmt.Errorf("unknown priority %q", t.Priority)}
	}
	if t.TaskKey != "" {
		// It becomes a field of the ready entry's name.
		if err := ValidateTaskKey(t.TaskKey); err != nil {
			return nil, &MalformedError{Key: key, Err: errors.New(err.Error())}
		}
	}
	if key != "" {
		shard, id, ok := parseTaskKey(key)
		if !ok {
			return nil, &MalformedError{Key: key, Err: errors.New("not a task key")}
		}
		if id != t.ID || shard != t.Shard {
			return nil, &MalformedError{Key: key, Err: fmt.Errorf("object says id %s shard %q, key says id %s shard %q", t.ID, t.Shard, id, shard)}
		}
	}
	if isJSONNull(t.Output) {
		t.Output = nil
	}
	if isJSONNull(t.Input) {
		t.Input = nil
	}
	return &t, nil
}

func isJSONNull(m json.RawMessage) bool {
	return m == nil || bytes.Equal(bytes.TrimSpace(m), []byte("null"))
}

// Config is the queue-wide configuration, written once by Init at
// "queue.json" and read by every component on Open.
type Config struct {
	Format     int       `json:"format"`
	ShardChars int       `json:"shard_chars"` // hex chars of the id used as shard: 1 (16 shards) or 2 (256)
	CreatedAt  time.Time `json:"created_at"`
	// TasksRetentionDays, when > 0, is how long finished tasks are kept
	// (see doc.go, "Retention"); writers then tag every task version.
	TasksRetentionDays int `json:"tasks_retention_days,omitempty"`
	// MaxPayloadBytes, when > 0, bounds a task's input and its output,
	// each (0: DefaultMaxPayloadBytes). See doc.go, "Size limits".
	MaxPayloadBytes int64 `json:"max_payload_bytes,omitempty"`
}

func decodeConfig(body []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(body, &c); err != nil {
		return Config{}, &MalformedError{Key: ConfigKey, Err: err}
	}
	if c.Format < 1 || c.Format > LayoutVersion {
		return Config{}, &MalformedError{Key: ConfigKey, Err: fmt.Errorf("unknown format version %d (this qo reads format %d; a newer qo wrote it: upgrade qo)", c.Format, LayoutVersion)}
	}
	if c.ShardChars != 1 && c.ShardChars != 2 {
		return Config{}, &MalformedError{Key: ConfigKey, Err: fmt.Errorf("shard_chars %d (want 1 or 2)", c.ShardChars)}
	}
	if c.MaxPayloadBytes < 0 {
		return Config{}, &MalformedError{Key: ConfigKey, Err: fmt.Errorf("max_payload_bytes %d is negative (0: the default of %d)", c.MaxPayloadBytes, DefaultMaxPayloadBytes)}
	}
	return c, nil
}

// ValidateType checks a task type name: 1..64 characters from
// [A-Za-z0-9_.:-], not only dots. Types appear in index keys, so nothing
// else is allowed.
func ValidateType(s string) error {
	return validateName("task type", s, 64)
}

// ValidateTaskKey checks a task's fairness key: 1..64 characters from
// [A-Za-z0-9_.:-], not only dots (it is the last field of its ready
// entry's name, see doc.go, "Task keys").
func ValidateTaskKey(s string) error {
	return validateName("task key", s, 64)
}

// ValidateWorkerID checks a worker id: 1..128 characters from
// [A-Za-z0-9_.:-], not only dots.
func ValidateWorkerID(s string) error {
	return validateName("worker id", s, 128)
}

// ValidateLeaseID checks a lease id: a UUID in its 36-character form, as
// a claim writes it (the lease-index key carries it).
func ValidateLeaseID(s string) error {
	if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
		return invalidInput("lease id %q is not a UUID", s)
	}
	return nil
}

// validateName checks a name that becomes one segment of object keys
// (task types, worker ids, schedule names). The character set keeps out
// '/', white space, control characters and anything an S3 client would
// have to escape; a name of dots only ("." or "..") is refused because
// S3 servers and HTTP clients resolve such path segments, so the object
// would land under another key (or none) and its index entry would never
// parse back.

func validateName(what, s string, max int) error {
	if s == "" {
		return invalidInput("%s is empty", what)
	}
	if len(s) > max {
		return invalidInput("%s %q is %d characters long (at most %d)", what, s, len(s), max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == ':', c == '-':
		default:
			r, _ := utf8.DecodeRuneInString(s[i:])
			return invalidInput("%s %q contains %q (allowed: letters, digits, _ . : -)", what, s, string(r))
		}
	}
	if strings.Trim(s, ".") == "" {
		return invalidInput("%s %q is only dots, which S3 resolves as a path step (like . and ..): use a name with a letter or digit", what, s)
	}
	return nil
}

// ParseID parses a task id, with an ErrInvalidInput that says what a task
// id looks like.
func ParseID(s string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return uuid.Nil, invalidInput("%q is not a task id (want a UUID like 0b6f4c2e-8d1a-4f7e-9c3b-2a5d6e7f8a9b)", s)
	}
	if id == uuid.Nil {
		return uuid.Nil, invalidInput("the nil UUID is not a task id")
	}
	return id, nil
}
