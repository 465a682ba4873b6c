package queue

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Key layout (see doc.go for what each object means).
const (
	ConfigKey           = "queue.json"
	TasksPrefix         = "tasks/"
	ReadyPrefix         = "ready/"
	LeasesPrefix        = "leases/"
	WaitingPrefix       = "waiting/"
	EdgesPrefix         = "edges/"
	DeadPrefix          = "dead/"
	WorkersPrefix       = "workers/"
	ShardLeasePrefix    = "shard-leases/"
	MonitorPrefix       = "monitor/"
	MonitorLeaderKey    = "monitor/leader.json"
	SweepStateKey       = "monitor/sweep.json"
	ThroughputPrefix    = "monitor/throughput/"
	ProbeKey            = "monitor/probe.json" // see doc.go, "Server probes"
	ControlKey          = "control.json"
	SchedulesPrefix     = "schedules/"
	DataPrefix          = "data/"
	IdempotencyPrefix   = "idempotency/"
	WorkflowsPrefix     = "workflows/"
	WorkflowNamesPrefix = "workflow-names/"
)

// Keys lists every key and key prefix (those end in "/") of the layout:
// everything the queue's clients (workers, the monitor, the CLI, the web
// UI) read and write, and nothing else in the bucket, such as the web UI's
// own files under ui/. Credentials minted for the web UI are scoped to
// these keys; doc.go's key layout table lists the same ones.
func Keys() []string {
	return []string{
		ConfigKey, TasksPrefix, ReadyPrefix, LeasesPrefix, WaitingPrefix, EdgesPrefix, DeadPrefix, DataPrefix,
		ControlKey, SchedulesPrefix, WorkersPrefix, ShardLeasePrefix, MonitorPrefix,
		IdempotencyPrefix, WorkflowsPrefix, WorkflowNamesPrefix,
	}
}

// IdempotencyKey is the key of the marker that binds an idempotency key
// to the task it made: "idempotency/{h[:2]}/{h}.json", h the hex SHA-256
// of type NUL key (the first two characters spread the markers over 256
// prefixes).
func IdempotencyKey(taskType, key string) string {
	sum := sha256.Sum256([]byte(taskType + "\x00" + key))
	h := hex.EncodeToString(sum[:])
	return IdempotencyPrefix + h[:2] + "/" + h + ".json"
}

// msDigits is the fixed width of the millisecond timestamps in index keys:
// 13 digits cover 1970..2286, so lexicographic order is time order.
const msDigits = 13

const maxMS = 9999999999999

// newID is the id of a task created at now (Options.NewID, or NewIDAt).
func (q *Queue) newID(now time.Time) uuid.UUID {
	if q.idSource != nil {
		return q.idSource(now)
	}
	return NewIDAt(now)
}

// NewID returns a fresh task id: a UUIDv7, whose first 48 bits are the
// Unix time in milliseconds, so ids (and task keys within a shard) sort by
// creation time and "tasks created after T" is a bounded listing.
func NewID() uuid.UUID { return uuid.Must(uuid.NewV7()) }

// NewIDAt returns a UUIDv7 for creation time t (random otherwise), for
// tools that write tasks with a past creation time (imports, benchmarks).
func NewIDAt(t time.Time) uuid.UUID { return stampV7(uuid.New(), t) }

// stampV7 turns random bits into a UUIDv7 of time t.
func stampV7(id uuid.UUID, t time.Time) uuid.UUID {
	ms := uint64(max(t.UnixMilli(), 0))
	for i := 0; i < 6; i++ {
		id[i] = byte(ms >> (40 - 8*i))
	}
	id[6] = 0x70 | id[6]&0x0f
	id[8] = 0x80 | id[8]&0x3f
	return id
}

// IDTime is the creation time a time-ordered (v7) id carries; ok is false
// for other ids (random v4 ids and idempotency-derived v5 ids of layout 1).
func IDTime(id uuid.UUID) (time.Time, bool) {
	if id.Version() != 7 {
		return time.Time{}, false
	}
	sec, nsec := id.Time().UnixTime()
	return time.Unix(sec, nsec).UTC().Truncate(time.Millisecond), true
}

// idFloor is the smallest v7 id string of millisecond t: every id created
// at t or later sorts after it (as a key), every earlier one before.
func idFloor(t time.Time) string {
	ms := t.UnixMilli()
	if ms < 0 {
		ms = 0
	}
	h := fmt.Sprintf("%012x", ms)
	return h[:8] + "-" + h[8:12] + "-7000-8000-000000000000"
}

// ShardOf returns the shard of a task id for a queue of shardChars hex
// characters: the LAST shardChars characters of a time-ordered (v7) id,
// which are random, and the first ones of any other id (random v4 ids and
// the v5 ids layout 1 derived from idempotency keys, whose leading
// characters are as random). So new tasks spread evenly over the shards at
// every instant, and ids written under layout 1 keep their shard (and key).
func ShardOf(id uuid.UUID, shardChars int) string {
	s := id.String()
	if id.Version() == 7 {
		return s[len(s)-shardChars:]
	}
	return s[:shardChars]
}

// shardMatches reports whether shard is the shard of id.
func shardMatches(id uuid.UUID, shard string) bool {
	n := len(shard)
	return (n == 1 || n == 2) && ShardOf(id, n) == shard
}

// DataKey is where an offloaded payload of a task lives:
// "data/{shard}/{id}/{what}.json" ("input", or an attempt's output, see
// OutputKey).
func DataKey(shard string, id uuid.UUID, what string) string {
	return DataPrefix + shard + "/" + id.String() + "/" + what + ".json"
}

// OutputKey is where the offloaded output of the attempt holding leaseID
// lives: "data/{shard}/{id}/output-{lease_id}.json". Each attempt writes
// its own object, so an attempt that lost its lease never replaces the
// output of the one that completed the task.
func OutputKey(shard string, id uuid.UUID, leaseID string) string {
	return DataKey(shard, id, "output-"+leaseID)
}

// ScheduleKey is the key of a cron schedule.
func ScheduleKey(name string) string { return SchedulesPrefix + name + ".json" }

// ShardLeaseKey is the named-lease key that grants ownership of a shard.
func ShardLeaseKey(shard string) string { return ShardLeasePrefix + shard + ".json" }

// WorkerKey is the registry key of a worker.
func WorkerKey(id string) string { return WorkersPrefix + id + ".json" }

func taskKeyFor(shard string, id uuid.UUID) string {
	return TasksPrefix + shard + "/" + id.String() + ".json"
}

// parseTaskKey splits "tasks/{shard}/{id}.json".
func parseTaskKey(key string) (shard string, id uuid.UUID, ok bool) {
	rest, found := strings.CutPrefix(key, TasksPrefix)
	if !found {
		return "", uuid.Nil, false
	}
	shard, file, found := strings.Cut(rest, "/")
	if !found || !isHex(shard) {
		return "", uuid.Nil, false
	}
	name, found := strings.CutSuffix(file, ".json")
	if !found || len(name) != 36 {
		return "", uuid.Nil, false
	}
	id, err := uuid.Parse(name)
	if err != nil || id.String() != name || !shardMatches(id, shard) {
		return "", uuid.Nil, false
	}
	return shard, id, true
}

func isHex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// unixMS renders t as the fixed-width millisecond stamp of index keys,
// clamped to the representable range.
func unixMS(t time.Time) string { return padMS(t.UnixMilli()) }

// invMS renders maxMS minus t's milliseconds: keys using it sort newest first.
func invMS(t time.Time) string { return padMS(maxMS - t.UnixMilli()) }

func padMS(ms int64) string {
	ms = max(0, min(ms, maxMS))
	s := strconv.FormatInt(ms, 10)
	if len(s) < msDigits {
		s = strings.Repeat("0", msDigits-len(s)) + s
	}
	return s
}

func parseMS(s string) (time.Time, bool) {
	if len(s) != msDigits {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms < 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

func parseInvMS(s string) (time.Time, bool) {
	t, ok := parseMS(s)
	if !ok {
		return t, false
	}
	return time.UnixMilli(maxMS - t.UnixMilli()).UTC(), true
}

// LeaseShardPrefix is the lease-index partition of one shard.
func LeaseShardPrefix(shard string) string { return LeasesPrefix + shard + "/" }

// FieldSep separates the fields of an index entry's name (see doc.go, "Key
// layout"): a character no task type, worker id or other field may hold,
// and one S3 and its SigV4 signing leave as it is.
const FieldSep = "~"

func joinFields(fields ...string) string { return strings.Join(fields, FieldSep) }

// entryFields splits the name of an index entry below "{prefix}{shard}/"
// into its shard and n fields, or n+extra (ok false when the key is not
// one).
func entryFields(key, prefix string, n int, extra ...int) (shard string, fields []string, ok bool) {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return "", nil, false
	}
	shard, name, ok := strings.Cut(rest, "/")
	if !ok || strings.Contains(name, "/") {
		return "", nil, false
	}
	fields = strings.Split(name, FieldSep)
	return shard, fields, len(fields) == n || slices.Contains(extra, len(fields)-n)
}

// LeaseKey is the lease-index key of a running task:
// "leases/{shard}/{lease_expires_at ms}~{type}~{id}~{lease_id}~{worker_id}".
// The lease id makes the key of every claim and extension unique, so two
// claimers never share an entry. Empty when the task has no lease.
func LeaseKey(t *Task) string {
	if t.LeaseExpiresAt == nil || t.LeaseID == "" || t.WorkerID == "" {
		return ""
	}
	return leaseKey(*t.LeaseExpiresAt, t.Shard, t.Type, t.ID, t.LeaseID, t.WorkerID)
}

func leaseKey(at time.Time, shard, typ string, id uuid.UUID, leaseID, worker string) string {
	return LeaseShardPrefix(shard) + joinFields(unixMS(at), typ, id.String(), leaseID, worker)
}

// ParseLeaseKey decodes a lease-index key.
func ParseLeaseKey(key string) (LeaseEntry, error) {
	shard, f, ok := entryFields(key, LeasesPrefix, 5)
	if !ok {
		return LeaseEntry{}, fmt.Errorf("%q is not a lease index key (want leases/{shard}/{ms}~{type}~{id}~{lease id}~{worker})", key)
	}
	if !isHex(shard) || len(shard) > 2 {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad shard %q", key, shard)
	}
	at, ok := parseMS(f[0])
	if !ok {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad timestamp %q", key, f[0])
	}
	if ValidateType(f[1]) != nil {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad task type %q", key, f[1])
	}
	id, err := uuid.Parse(f[2])
	if err != nil || id.String() != f[2] || !shardMatches(id, shard) {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad task id %q", key, f[2])
	}
	if ValidateLeaseID(f[3]) != nil {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad lease id %q", key, f[3])
	}
	if ValidateWorkerID(f[4]) != nil {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad worker id %q", key, f[4])
	}
	return LeaseEntry{Key: key, ID: id, Shard: shard, Type: f[1], LeaseID: f[3], WorkerID: f[4], ExpiresAt: at}, nil
}

// DeadEntry is one dead-letter index entry, decoded from its key alone.
type DeadEntry struct {
	Key      string
	ID       uuid.UUID
	Shard    string
	Type     string
	FailedAt time.Time
}

// DeadKey is the dead-letter index key of a failed task:
// "dead/{inverted completed_at ms}/{shard}/{type}/{id}" (newest failure
// first). Empty for a task that is not failed.
func DeadKey(t *Task) string {
	if t.Status != StatusFailed || t.CompletedAt == nil {
		return ""
	}
	return DeadPrefix + invMS(*t.CompletedAt) + "/" + t.Shard + "/" + t.Type + "/" + t.ID.String()
}

// ParseDeadKey decodes a dead-letter index key.
func ParseDeadKey(key string) (DeadEntry, error) {
	rest, ok := strings.CutPrefix(key, DeadPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 4 {
		return DeadEntry{}, fmt.Errorf("%q is not a dead-letter index key (want dead/{inverted ms}/{shard}/{type}/{id})", key)
	}
	at, ok := parseInvMS(parts[0])
	if !ok {
		return DeadEntry{}, fmt.Errorf("dead-letter key %q: bad timestamp %q", key, parts[0])
	}
	if !isHex(parts[1]) || len(parts[1]) > 2 {
		return DeadEntry{}, fmt.Errorf("dead-letter key %q: bad shard %q", key, parts[1])
	}
	if ValidateType(parts[2]) != nil {
		return DeadEntry{}, fmt.Errorf("dead-letter key %q: bad task type %q", key, parts[2])
	}
	id, err := uuid.Parse(parts[3])
	if err != nil || id.String() != parts[3] || !shardMatches(id, parts[1]) {
		return DeadEntry{}, fmt.Errorf("dead-letter key %q: bad task id %q", key, parts[3])
	}
	return DeadEntry{Key: key, ID: id, Shard: parts[1], Type: parts[2], FailedAt: at}, nil
}

// allShards lists every shard name for n hex characters, in key order.
func allShards(n int) []string {
	const hex = "0123456789abcdef"
	out := []string{""}
	for i := 0; i < n; i++ {
		next := make([]string, 0, len(out)*16)
		for _, p := range out {
			for j := 0; j < 16; j++ {
				next = append(next, p+string(hex[j]))
			}
		}
		out = next
	}
	return out
}

// SequentialIDs returns an id source for Options.NewID that gives the same
// ids in the same order every run (UUIDv7 of the creation time, the random
// bits drawn from seed and a counter): for tests and reproducible demos.
func SequentialIDs(seed string) func(time.Time) uuid.UUID {
	var mu sync.Mutex
	n := 0
	return func(at time.Time) uuid.UUID {
		mu.Lock()
		n++
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%d", seed, n)))
		mu.Unlock()
		var id uuid.UUID
		copy(id[:], sum[:16])
		return stampV7(id, at)
	}
}

// ShortID is the 8 characters that tell tasks apart at a glance: the
// random tail of a time-ordered (v7) id (its first characters are the
// clock, the same for every task of the same minute), the head of any
// other.
func ShortID(id uuid.UUID) string {
	s := id.String()
	if id.Version() == 7 {
		return s[len(s)-8:]
	}
	return s[:8]
}

// ParseWorkerKey returns the worker id of a registry key
// "workers/{id}.json".
func ParseWorkerKey(key string) (string, error) {
	rest, ok := strings.CutPrefix(key, WorkersPrefix)
	id, ok2 := strings.CutSuffix(rest, ".json")
	if !ok || !ok2 {
		return "", fmt.Errorf("%q is not a worker registry key (want %s{worker id}.json)", key, WorkersPrefix)
	}
	if err := ValidateWorkerID(id); err != nil {
		return "", fmt.Errorf("worker registry key %q: bad worker id %q", key, id)
	}
	return id, nil
}

// ValidateScheduleName checks a schedule name: 1..64 characters from
// [A-Za-z0-9_.:-], not only dots.
func ValidateScheduleName(s string) error { return validateName("schedule name", s, 64) }

// ParseScheduleKey returns the schedule name of a schedule key
// "schedules/{name}.json".
func ParseScheduleKey(key string) (string, error) {
	rest, ok := strings.CutPrefix(key, SchedulesPrefix)
	name, ok2 := strings.CutSuffix(rest, ".json")
	if !ok || !ok2 {
		return "", fmt.Errorf("%q is not a schedule key (want %s{name}.json)", key, SchedulesPrefix)
	}
	if err := ValidateScheduleName(name); err != nil {
		return "", fmt.Errorf("schedule key %q: bad schedule name %q", key, name)
	}
	return name, nil
}

// WaitingShardPrefix is the prefix of one shard's waiting index.
func WaitingShardPrefix(shard string) string { return WaitingPrefix + shard + "/" }

// WaitingKey is the waiting-index entry of a waiting task:
// "waiting/{shard}/{id}" (see doc.go, "Dependencies").
func WaitingKey(t *Task) string { return WaitingShardPrefix(t.Shard) + t.ID.String() }

// ParseWaitingKey returns the shard and id of a waiting-index entry.
func ParseWaitingKey(key string) (shard string, id uuid.UUID, err error) {
	rest, ok := strings.CutPrefix(key, WaitingPrefix)
	if !ok {
		return "", uuid.Nil, fmt.Errorf("%q is not a waiting entry", key)
	}
	shard, sid, ok := strings.Cut(rest, "/")
	if !ok || shard == "" || !isHex(shard) {
		return "", uuid.Nil, fmt.Errorf("%q is not a waiting entry (want waiting/{shard}/{id})", key)
	}
	id, err = uuid.Parse(sid)
	if err != nil || len(sid) != 36 || !shardMatches(id, shard) {
		return "", uuid.Nil, fmt.Errorf("%q is not a waiting entry (bad id)", key)
	}
	return shard, id, nil
}
