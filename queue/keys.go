package queue

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Key layout (see doc.go for what each object means).
const (
	ConfigKey        = "queue.json"
	TasksPrefix      = "tasks/"
	ReadyPrefix      = "ready/"
	LeasesPrefix     = "leases/"
	WorkersPrefix    = "workers/"
	ShardLeasePrefix = "shard-leases/"
	MonitorPrefix    = "monitor/"
	MonitorLeaderKey = "monitor/leader.json"
	ControlKey       = "control.json"
	SchedulesPrefix  = "schedules/"
	DataPrefix       = "data/"
)

// msDigits is the fixed width of the millisecond timestamps in index keys:
// 13 digits cover 1970..2286, so lexicographic order is time order.
const msDigits = 13

const maxMS = 9999999999999

// DataKey is where an offloaded input or output ("input" or "output") of a
// task lives: "data/{shard}/{id}/{what}.json".
func DataKey(shard string, id uuid.UUID, what string) string {
	return DataPrefix + shard + "/" + id.String() + "/" + what + ".json"
}

// ScheduleKey is the key of a cron schedule.
func ScheduleKey(name string) string { return SchedulesPrefix + name + ".json" }

// ShardLeaseKey is the named-lease key that grants ownership of a shard.
func ShardLeaseKey(shard string) string { return ShardLeasePrefix + shard + ".json" }

// WorkerKey is the registry key of a worker.
func WorkerKey(id string) string { return WorkersPrefix + id + ".json" }

// shardOf returns the first n hex characters of the id (lowercase).
func shardOf(id uuid.UUID, n int) string { return id.String()[:n] }

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
	if err != nil || !strings.HasPrefix(id.String(), shard) {
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
func unixMS(t time.Time) string {
	ms := t.UnixMilli()
	if ms < 0 {
		ms = 0
	}
	if ms > maxMS {
		ms = maxMS
	}
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

// ReadyKey is the ready-index key of a pending task:
// "ready/{rank ms}/{shard}/{type}/{priority}/{id}", where the rank is
// available_at moved by the priority (see doc.go, "Priorities").
func ReadyKey(t *Task) string {
	return readyKey(t.AvailableAt, t.Priority, t.Shard, t.Type, t.ID)
}

// rankOf is the time a ready entry sorts under.
func rankOf(availableAt time.Time, p Priority) time.Time { return availableAt.Add(p.offset()) }

func readyKey(availableAt time.Time, p Priority, shard, typ string, id uuid.UUID) string {
	if !p.Valid() {
		p = PriorityNormal
	}
	var b strings.Builder
	b.Grow(len(ReadyPrefix) + msDigits + len(shard) + len(typ) + len(p) + 36 + 4)
	b.WriteString(ReadyPrefix)
	b.WriteString(unixMS(rankOf(availableAt, p)))
	b.WriteByte('/')
	b.WriteString(shard)
	b.WriteByte('/')
	b.WriteString(typ)
	b.WriteByte('/')
	b.WriteString(string(p))
	b.WriteByte('/')
	b.WriteString(id.String())
	return b.String()
}

// ParseReadyKey decodes a ready-index key. Keys written before priorities
// existed ("ready/{ms}/{shard}/{type}/{id}") read as normal priority.
func ParseReadyKey(key string) (ReadyEntry, error) {
	rest, ok := strings.CutPrefix(key, ReadyPrefix)
	parts := strings.Split(rest, "/")
	if ok && len(parts) == 4 {
		parts = []string{parts[0], parts[1], parts[2], string(PriorityNormal), parts[3]}
	}
	if !ok || len(parts) != 5 {
		return ReadyEntry{}, fmt.Errorf("%q is not a ready index key (want ready/{ms}/{shard}/{type}/{priority}/{id})", key)
	}
	rank, ok := parseMS(parts[0])
	if !ok {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad timestamp %q", key, parts[0])
	}
	if !isHex(parts[1]) {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad shard %q", key, parts[1])
	}
	if ValidateType(parts[2]) != nil {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad task type %q", key, parts[2])
	}
	p := Priority(parts[3])
	if !p.Valid() {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad priority %q", key, parts[3])
	}
	id, err := uuid.Parse(parts[4])
	if err != nil || len(parts[4]) != 36 || !strings.HasPrefix(id.String(), parts[1]) {
		return ReadyEntry{}, fmt.Errorf("ready index key %q: bad task id %q", key, parts[4])
	}
	return ReadyEntry{Key: key, ID: id, Shard: parts[1], Type: parts[2], Priority: p, Rank: rank, AvailableAt: rank.Add(-p.offset())}, nil
}

// LeaseKey is the lease-index key of a running task:
// "leases/{lease_expires_at ms}/{shard}/{id}". Empty when the task has no lease.
func LeaseKey(t *Task) string {
	if t.LeaseExpiresAt == nil {
		return ""
	}
	return leaseKey(*t.LeaseExpiresAt, t.Shard, t.ID)
}

func leaseKey(at time.Time, shard string, id uuid.UUID) string {
	return LeasesPrefix + unixMS(at) + "/" + shard + "/" + id.String()
}

// ParseLeaseKey decodes a lease-index key.
func ParseLeaseKey(key string) (LeaseEntry, error) {
	rest, ok := strings.CutPrefix(key, LeasesPrefix)
	parts := strings.Split(rest, "/")
	if !ok || len(parts) != 3 {
		return LeaseEntry{}, fmt.Errorf("%q is not a lease index key (want leases/{ms}/{shard}/{id})", key)
	}
	at, ok := parseMS(parts[0])
	if !ok {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad timestamp %q", key, parts[0])
	}
	if !isHex(parts[1]) {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad shard %q", key, parts[1])
	}
	id, err := uuid.Parse(parts[2])
	if err != nil || len(parts[2]) != 36 || !strings.HasPrefix(id.String(), parts[1]) {
		return LeaseEntry{}, fmt.Errorf("lease index key %q: bad task id %q", key, parts[2])
	}
	return LeaseEntry{Key: key, ID: id, Shard: parts[1], ExpiresAt: at}, nil
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
